#!/usr/bin/env bash
# The flow log (weftd --flow-log, docs/flows.md) on 2 dual-stack nodes (vxlan), objects in etcd:
#
#   node1 (--flow-log --flow-log-rate 300)        node2 (flow log off)
#     n/a  n/b (isolated: n/only-a lets n/a in)     n/c (behind Service n/web 10.96.0.10, fd00:10:96::10)
#
#   1. allowed connections, as node 1 logs them: TCP and UDP, IPv4 and IPv6, pod to pod on one
#      node (allowed by n/only-a ingress rule 0) and across nodes (unpoliced), with both pods named
#   2. a DNATed connection to the ClusterIP (TCP v4, UDP v6) names the Service and its endpoint
#   3. a denied one (n/c -> n/b) comes from the drop log: "denied by isolation of n/b (ingress)"
#   4. DESTROY carries the bytes and packets each way: what was sent, plus headers
#   5. weft flows: --pod, --verdict, --follow (each record once), the text form
#   6. a flood of new connections over the rate: the lost counter rises, and meanwhile new
#      connections keep succeeding and /healthz answers (no stall)
#   7. node 2, off: no conntrack event socket in weftd, nf_conntrack_acct untouched, /flows 404
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
WEFT_TOOL=$WEFT_BUILD/tool/weft
require_built "$WEFT_TOOL"
# in a pod: TCP on 80 and 81 ("ok", then read to EOF: the client's bytes are counted), UDP echo
PY=$T/flow.py
cat >"$PY" <<'PYEOF'
import select, socket, sys, threading, time
def serve():
    socks = []
    for port in (80, 81):
        socks.append(socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True))
        u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        u.bind(("::", port)); socks.append(u)
    def conn(c):
        try:
            c.sendall(b"ok")
            while c.recv(65536):
                pass
        except OSError:
            pass
        c.close()
    print("ready", flush=True)
    while True:
        for s in select.select(socks, [], [])[0]:
            if s.type == socket.SOCK_STREAM:
                threading.Thread(target=conn, args=(s.accept()[0],), daemon=True).start()
            else:
                d, a = s.recvfrom(65536); s.sendto(d, a)
def fam(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET
# tcp HOST PORT [N]: "ok SPORT" once "ok" came back and N bytes were sent and the server closed
def tcp(host, port, n=0):
    try:
        s = socket.create_connection((host, port), timeout=1); s.settimeout(1)
        sport = s.getsockname()[1]
        if s.recv(2) != b"ok":
            return "fail"
        s.sendall(b"x" * n); s.shutdown(socket.SHUT_WR)
        s.settimeout(0.2)
        try:
            s.recv(1)
        except OSError:
            pass
        s.close()
        return "ok %d" % sport
    except OSError:
        return "fail"
def udp(host, port, n=1):
    s = socket.socket(fam(host), socket.SOCK_DGRAM); s.settimeout(1)
    s.connect((host, port)); sport = s.getsockname()[1]
    try:
        s.send(b"y" * n)
        return "ok %d" % sport if len(s.recv(65536)) == n else "fail"
    except OSError:
        return "fail"
# udpn HOST PORT K SIZE: K datagrams of SIZE bytes on one socket (one flow), each echo awaited:
# "ok SPORT ECHOES"
def udpn(host, port, k, size):
    s = socket.socket(fam(host), socket.SOCK_DGRAM); s.settimeout(0.5)
    s.connect((host, port)); sport, got = s.getsockname()[1], 0
    for i in range(k):
        s.send(b"w" * size)
        try:
            got += len(s.recv(65536)) == size
        except OSError:
            pass
    return "ok %d %d" % (sport, got)
# flood HOST PORT SECONDS: UDP datagrams from fresh sockets (each a conntrack NEW) for SECONDS
def flood(host, port, secs):
    n, end = 0, time.time() + secs
    while time.time() < end:
        s = socket.socket(fam(host), socket.SOCK_DGRAM); s.sendto(b"z", (host, port)); s.close(); n += 1
    return "sent %d" % n
cmd = sys.argv[1]
if cmd == "serve":
    serve()
elif cmd == "tcp":
    print(tcp(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0))
elif cmd == "udp":
    print(udp(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1))
elif cmd == "udpn":
    print(udpn(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
elif cmd == "flood":
    print(flood(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
PYEOF

CLUSTER_NETWORK6=fd00:10:244::/56
RANGES=10.96.0.0/16,fd00:10:96::/112
cluster_init 2 vxlan
# short TCP and UDP timeouts in node 1's namespace (the test's own), so DESTROY comes in seconds
ip netns exec "$(node_ns 1)" sysctl -qw net.netfilter.nf_conntrack_tcp_timeout_time_wait=1 \
	net.netfilter.nf_conntrack_tcp_timeout_close=1 net.netfilter.nf_conntrack_tcp_timeout_fin_wait=1 \
	net.netfilter.nf_conntrack_tcp_timeout_last_ack=1 net.netfilter.nf_conntrack_tcp_timeout_close_wait=1 \
	net.netfilter.nf_conntrack_udp_timeout=2 net.netfilter.nf_conntrack_udp_timeout_stream=2 2>/dev/null ||
	fail "cannot shorten conntrack timeouts in node 1's namespace"
weftd_start 1 --objects-datastore etcd --relist-interval 0 --service-cluster-ip-range "$RANGES" \
	--flow-log --flow-log-rate 300
weftd_start 2 --objects-datastore etcd --relist-interval 0 --service-cluster-ip-range "$RANGES"
weftd_wait_ready 1 2
grep -q 'Flow log: conntrack NEW and DESTROY events, at most 300 records/s' "$(node_dir 1)/weftd.log" ||
	fail "node 1: no flow log: $(grep -i flow "$(node_dir 1)/weftd.log")"

declare -A PNS PIP PIP6
PIDS=()
kill_bg() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_bg
for i in 1 2; do node_bridge_dual "$i"; done
K=0
mkpod() {
	local p=$1 node=$2 gw s6 pns ip ip6
	K=$((K + 1))
	gw=$(lease_var "$node" WEFT_SUBNET) s6=$(lease_var "$node" WEFT_SUBNET6)
	ip=$(nth_addr "$gw" $((10 + K))) ip6=$(nth_addr "$s6" $((10 + K)))
	pns=$(mk_netns "pn$p")
	PNS[$p]=$pns PIP[$p]=$ip PIP6[$p]=$ip6
	ip -n "$(node_ns "$node")" link add "vn$p" type veth peer name eth0 netns "$pns"
	ip -n "$(node_ns "$node")" link set "vn$p" master cni0 up
	ip -n "$pns" addr add "$ip/${gw#*/}" dev eth0
	ip -n "$pns" addr add "$ip6/${s6#*/}" dev eth0 nodad
	ip -n "$pns" link set eth0 up
	ip -n "$pns" route add default via "${gw%/*}"
	ip -n "$pns" -6 route add default via "$(nth_addr "$s6" 1)"
	ip netns exec "$pns" python3 "$PY" serve >"$T/serve.$p" 2>&1 &
	PIDS+=($!)
	wait_for 30 grep -q ready "$T/serve.$p" || fail "server in n/$p did not start"
	objects_put "pods/n/$p" "$(jq -nc --arg p "$p" --arg node "node$node" --arg ip "$ip" --arg ip6 "$ip6" \
		'{apiVersion:"v1",kind:"Pod",metadata:{namespace:"n",name:$p,labels:{pod:$p}},
		spec:{nodeName:$node,containers:[{name:"c"}]},status:{phase:"Running",podIP:$ip,podIPs:[{ip:$ip},{ip:$ip6}]}}')"
}
objects_put namespaces/n '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}'
mkpod a 1
mkpod b 1
mkpod c 2
objects_put services/n/web '{"apiVersion":"v1","kind":"Service","metadata":{"namespace":"n","name":"web"},
	"spec":{"ipFamilyPolicy":"RequireDualStack","ipFamilies":["IPv4","IPv6"],"clusterIP":"10.96.0.10",
	"clusterIPs":["10.96.0.10","fd00:10:96::10"],"ports":[{"name":"http","port":80,"targetPort":80},
	{"name":"dns","port":53,"protocol":"UDP","targetPort":81}]},"status":{}}'
for fam in IPv4 IPv6; do
	[ $fam = IPv4 ] && ep=${PIP[c]} || ep=${PIP6[c]}
	objects_put "endpointslices/n/web-${fam,,}" "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",
		\"metadata\":{\"namespace\":\"n\",\"name\":\"web-${fam,,}\",\"labels\":{\"kubernetes.io/service-name\":\"web\"}},
		\"addressType\":\"$fam\",\"endpoints\":[{\"addresses\":[\"$ep\"],\"nodeName\":\"node2\",\"conditions\":{\"ready\":true}}],
		\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\"},{\"name\":\"dns\",\"port\":81,\"protocol\":\"UDP\"}]}"
done
objects_put networkpolicies/n/only-a '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"n","name":"only-a"},
	"spec":{"podSelector":{"matchLabels":{"pod":"b"}},"ingress":[{"from":[{"podSelector":{"matchLabels":{"pod":"a"}}}],
	"ports":[{"port":80,"protocol":"TCP"},{"port":80,"protocol":"UDP"}]}]}}'

# inpod POD CMD ARGS...: the helper in a pod
inpod() { ip netns exec "${PNS[$1]}" python3 "$PY" "${@:2}"; }
denied() { [ "$(inpod c tcp "${PIP[b]}" 80)" = fail ]; }
svc_up() { [[ $(inpod a tcp 10.96.0.10 80) == ok* ]]; }
wait_for 15 denied || fail "n/c -> n/b:80 not denied 15 s after n/only-a"
wait_for 15 svc_up || fail "n/a -> 10.96.0.10:80 (Service n/web) never answered"
flows() { http_get 1 /flows; printf '%s\n' "$HTTP_BODY" >"$T/flows"; }
# record EVENT SRC SPORT: node 1's record of that connection (JSON), or nothing
record() { jq -c --arg ev "$1" --arg src "$2" --argjson sp "$3" 'select(.event == $ev and .src == $src and .sport == $sp)' "$T/flows"; }
# expect_new NAME PROBE-OUTPUT SRC JQ-CONDITION: the NEW record of the probe's connection satisfies it
expect_new() {
	local name=$1 out=$2 src=$3 cond=$4 rec
	[[ $out == ok* ]] || { check_fail "$name: the probe failed ($out)"; return; }
	# the event reaches weftd through the kernel and its coalescing timer: on a loaded machine,
	# not always before the next request
	has_new() { flows && rec=$(record new "$src" "${out#ok }") && [ -n "$rec" ]; }
	wait_for 10 has_new || { check_fail "$name: no NEW record for $src:${out#ok } in /flows within 10 s"; return; }
	jq -e "$cond" <<<"$rec" >/dev/null || check_fail "$name: the record does not say $cond: $rec"
	info "$name: $rec"
}

# ---- 1. allowed, pod to pod
expect_new "TCP v4 across nodes" "$(inpod a tcp "${PIP[c]}" 80)" "${PIP[a]}" \
	'.from == "n/a" and .to == "n/c" and .proto == "TCP" and .dport == 80 and .verdict == "allowed" and .why == "unpoliced" and (has("service") | not)'
expect_new "UDP v4 across nodes" "$(inpod a udp "${PIP[c]}" 81)" "${PIP[a]}" \
	'.from == "n/a" and .to == "n/c" and .proto == "UDP" and .dport == 81 and .why == "unpoliced"'
expect_new "TCP v4 on one node" "$(inpod a tcp "${PIP[b]}" 80)" "${PIP[a]}" \
	'.from == "n/a" and .to == "n/b" and .proto == "TCP" and .why == "allowed by n/only-a ingress rule 0"'
expect_new "UDP v6 on one node" "$(inpod a udp "${PIP6[b]}" 80)" "${PIP6[a]}" \
	'.from == "n/a" and .to == "n/b" and .proto == "UDP" and .dst == "'"${PIP6[b]}"'" and .why == "allowed by n/only-a ingress rule 0"'
expect_new "TCP v6 across nodes" "$(inpod a tcp "${PIP6[c]}" 81)" "${PIP6[a]}" \
	'.from == "n/a" and .to == "n/c" and .dport == 81 and .why == "unpoliced"'

# ---- 2. DNATed: the Service and the endpoint it chose
expect_new "TCP v4 to the ClusterIP" "$(inpod a tcp 10.96.0.10 80)" "${PIP[a]}" \
	'.dst == "10.96.0.10" and .service == "n/web:http" and .endpoint == "'"${PIP[c]}"':80" and .endpoint_pod == "n/c" and .from == "n/a" and .verdict == "allowed"'
expect_new "UDP v6 to the ClusterIP" "$(inpod a udp fd00:10:96::10 53)" "${PIP6[a]}" \
	'.dst == "fd00:10:96::10" and .dport == 53 and .service == "n/web:dns" and .endpoint == "['"${PIP6[c]}"']:81" and .endpoint_pod == "n/c"'

# ---- 3. denied: the drop log's record in the same stream
denied || check_fail "n/c -> n/b:80 allowed"
has_drop() {
	flows
	jq -s -e --arg src "${PIP[c]}" 'any(.[]; .event == "drop" and .src == $src and .dport == 80 and .verdict == "denied"
		and .why == "denied by isolation of n/b (ingress)" and .from == "n/c" and .to == "n/b" and .policies == ["n/only-a"])' \
		"$T/flows" >/dev/null
}
wait_for 5 has_drop || check_fail "no denied record for n/c -> n/b:80: $(jq -c 'select(.event == "drop")' "$T/flows" | tail -2)"
info "denied: $(jq -c 'select(.event == "drop")' "$T/flows" | tail -1)"

# ---- 4. DESTROY: bytes and packets each way
N=50000
out=$(inpod a tcp "${PIP[c]}" 80 $N)
[[ $out == ok* ]] || check_fail "the $N-byte connection failed"
# The kernel reaps an expired entry (and sends DESTROY) when its GC comes round, up to a minute
# apart while long-lived entries (weftd's etcd connection) keep the average timeout high; a
# ctnetlink dump reaps the expired entries it meets at once: the test dumps node 1's table.
ct_dump() { ip netns exec "$(node_ns 1)" python3 -c 'import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)  # NETLINK_NETFILTER
s.bind((0, 0))
# IPCTNL_MSG_CT_GET (subsys CTNETLINK 1 << 8 | 1), request + dump; nfgenmsg AF_UNSPEC, v0
s.send(struct.pack("=IHHII", 20, (1 << 8) | 1, 1 | 0x300, 1, 0) + struct.pack("=BBH", 0, 0, 0))
while True:
    d = s.recv(65536)
    if struct.unpack("=H", d[4:6])[0] in (2, 3):  # NLMSG_ERROR, NLMSG_DONE
        break'; }
destroyed() { ct_dump; flows; [ -n "$(record destroy "${PIP[a]}" "${out#ok }")" ]; }
wait_for 20 destroyed || check_fail "no DESTROY record for ${PIP[a]}:${out#ok } within 20 s"
rec=$(record destroy "${PIP[a]}" "${out#ok }")
info "DESTROY (TCP): $rec"
# TCP: each skb (a GSO one too) carries at least 40 bytes of headers; a retransmission adds more,
# so only a bound above
jq -e --argjson n $N '.from == "n/a" and .to == "n/c" and .bytes_orig >= $n + 40 * .packets_orig and .bytes_orig <= 2 * $n
	and .bytes_reply >= 2 + 40 * .packets_reply and .packets_orig >= 3 and .packets_reply >= 2' \
	<<<"$rec" >/dev/null || check_fail "DESTROY counters (TCP) do not match $N bytes sent and 2 received, + headers: $rec"
# UDP: exact, 28 bytes of IPv4 and UDP header per datagram; over IPv6 48
for dst in "${PIP[c]}" "${PIP6[c]}"; do
	[ "$dst" = "${PIP[c]}" ] && src=${PIP[a]} hdr=28 || src=${PIP6[a]} hdr=48
	read -r _ sport echoes <<<"$(inpod a udpn "$dst" 81 20 1000)"
	destroyed_udp() { ct_dump; flows; [ -n "$(record destroy "$src" "$sport")" ]; }
	wait_for 20 destroyed_udp || { check_fail "no DESTROY record for $src:$sport (UDP) within 20 s"; continue; }
	rec=$(record destroy "$src" "$sport")
	info "DESTROY (UDP): $rec"
	jq -e --argjson e "$echoes" --argjson h "$hdr" '.packets_orig == 20 and .bytes_orig == 20 * (1000 + $h)
		and .packets_reply == $e and .bytes_reply == $e * (1000 + $h) and $e > 0' <<<"$rec" >/dev/null ||
		check_fail "DESTROY counters (UDP) do not match 20 datagrams of 1000 bytes sent, $echoes echoed: $rec"
done

# ---- 5. the tool
tool() { ip netns exec "$(node_ns 1)" "$WEFT_TOOL" flows "$@"; }
tool --json --pod n/b >"$T/pod-b" || check_fail "weft flows --pod failed"
n=$(grep -vc '"summary"' "$T/pod-b" || true)
[ "$n" -ge 3 ] || check_fail "weft flows --pod n/b: $n records"
jq -s -e 'any(.[]; .event != "summary" and .from != "n/b" and .to != "n/b" and .endpoint_pod != "n/b")' "$T/pod-b" >/dev/null &&
	check_fail "weft flows --pod n/b lists a record without n/b"
tool --json --verdict denied >"$T/denied"
n=$(grep -vc '"summary"' "$T/denied" || true)
[ "$n" -ge 1 ] || check_fail "weft flows --verdict denied: nothing"
jq -s -e 'any(.[]; .event != "summary" and .verdict != "denied")' "$T/denied" >/dev/null && check_fail "--verdict denied lists an allowed record"
tool --json --verdict allowed | jq -s -e 'any(.[]; .event != "summary" and .verdict != "allowed")' >/dev/null &&
	check_fail "--verdict allowed lists a denied record"
tool >"$T/text"
grep -Eq "^[0-9:.]{12} NEW  TCP ${PIP[a]//./\\.}:[0-9]+ \(n/a\) -> 10\.96\.0\.10:80 service n/web:http -> ${PIP[c]//./\\.}:80 \(n/c\) allowed: unpoliced$" "$T/text" ||
	check_fail "weft flows (text) has no line for the Service connection: $(grep 10.96 "$T/text" | tail -1)"
grep -Eq "^[0-9:.]{12} DROP TCP ${PIP[c]//./\\.}:[0-9]+ \(n/c\) -> ${PIP[b]//./\\.}:80 \(n/b\) denied: denied by isolation of n/b \(ingress\)$" "$T/text" ||
	check_fail "weft flows (text) has no line for the denied connection"
grep -E ' (NEW|DROP|END) ' "$T/text" | tail -4 | sed 's/^/#   /'
tool --follow --json >"$T/follow" 2>&1 &
follower=$!
PIDS+=("$follower")
sleep 1
for _ in 1 2 3; do out=$(inpod a tcp "${PIP[c]}" 81); done
followed() { grep -q "\"sport\":${out#ok }," "$T/follow"; }
wait_for 5 followed || check_fail "weft flows --follow did not show a new connection"
sleep 1
kill "$follower" 2>/dev/null
dups=$(jq -r 'select(.seq) | .seq' "$T/follow" | sort | uniq -d | wc -l)
[ "$dups" = 0 ] || check_fail "weft flows --follow printed $dups records twice"
info "follow: $(grep -c '"seq"' "$T/follow") records, none twice"

# ---- 6. a flood over the rate (300/s): lost rises, the datapath keeps going
metric() { http_get 1 /metrics; awk -v k="$1" '$1 == k { print $2 }' <<<"$HTTP_BODY"; }
# lost, whatever the reason: over the rate (rate), or, on a slow machine (the sanitizer build at
# load), already in the kernel (the socket's buffer overran) before the rate limit sees them
lost_all() { http_get 1 /metrics; awk '$1 ~ /^weft_flow_log_lost_total\{/ { n += $2 } END { print n + 0 }' <<<"$HTTP_BODY"; }
lost0=$(lost_all)
rec0=$(metric weft_flow_log_records_total)
inpod a flood "${PIP[c]}" 81 4 >"$T/flood" &
flooder=$!
PIDS+=("$flooder")
ok=0 tries=0 health=0
t0=$(date +%s.%N)
while kill -0 "$flooder" 2>/dev/null; do
	tries=$((tries + 1))
	[[ $(inpod b tcp "${PIP[c]}" 80) == ok* ]] && ok=$((ok + 1))
	http_get 1 /healthz
	[ "$HTTP_CODE" = 200 ] && health=$((health + 1))
done
wait "$flooder"
t1=$(date +%s.%N)
lost1=$(lost_all)
rec1=$(metric weft_flow_log_records_total)
bound=$(echo "300 + 300 * ($t1 - $t0 + 1) / 1" | bc)
info "flood: $(cat "$T/flood") datagrams in $(echo "$t1 - $t0" | bc | cut -c1-4) s; records +$((rec1 - rec0)) (bound $bound), lost (every reason) $lost0 -> $lost1; meanwhile $ok/$tries connections ok, /healthz 200 $health/$tries"
[ "$lost1" -gt "$lost0" ] || check_fail "the flood: the lost counter did not rise ($lost0 -> $lost1)"
[ $((rec1 - rec0)) -le "$bound" ] || check_fail "the flood: $((rec1 - rec0)) records kept, over the rate's $bound"
{ [ "$tries" -ge 2 ] && [ "$ok" = "$tries" ]; } || check_fail "during the flood: $ok of $tries connections succeeded"
[ "$health" = "$tries" ] || check_fail "during the flood: /healthz answered 200 $health of $tries times"
# right after the flood weftd still reads its backlog (the flood's DESTROY events come 2 s later),
# and under the sanitizers at load a request may outlast curl's 2 s: asked again until answered
summary_lost() { flows && jq -s -e 'any(.[]; .event == "summary" and (.lost.kernel + .lost.ring + .lost.rate) > 0)' "$T/flows"; }
t0=$(date +%s%N)
wait_for 20 summary_lost || check_fail "/flows' summary does not count the loss: $(grep '"summary"' "$T/flows")"
info "after the flood: /flows counted the loss in $((($(date +%s%N) - t0) / 1000000)) ms"
tool_lost() { tool | tail -1 | grep_q -E '^# lost so far: [1-9][0-9]* \(kernel [0-9]+, ring [0-9]+, rate [0-9]+\)$'; }
wait_for 20 tool_lost || check_fail "weft flows does not say how many were lost"

# ---- 7. off means off (node 2)
# ctnetlink sockets of weftd: its fds' inodes among the NETLINK_NETFILTER (12) sockets with a group
ct_sockets() {
	local pid=${WEFTD_PID[$1]} inodes
	inodes=$(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n')
	awk 'NR > 1 && $2 == 12 && $4 != "00000000" { print $NF }' "/proc/$pid/net/netlink" | { grep -cFxf <(echo "$inodes") || true; }
}
[ "$(ct_sockets 1)" -ge 1 ] || check_fail "node 1 (on): no netfilter netlink socket with groups in weftd"
[ "$(ct_sockets 2)" = 0 ] || check_fail "node 2 (off): weftd holds $(ct_sockets 2) netfilter netlink socket(s) with groups"
[ "$(ip netns exec "$(node_ns 1)" cat /proc/sys/net/netfilter/nf_conntrack_acct)" = 1 ] || check_fail "node 1: nf_conntrack_acct not set"
[ "$(ip netns exec "$(node_ns 2)" cat /proc/sys/net/netfilter/nf_conntrack_acct)" = 0 ] || check_fail "node 2 (off): nf_conntrack_acct set"
ip netns exec "$(node_ns 2)" nft list table inet weft | grep_q -w log && check_fail "node 2 (off): a log rule"
http_get 2 /flows
[ "$HTTP_CODE" = 404 ] || check_fail "node 2 (off): /flows answered $HTTP_CODE"
rc=0
ip netns exec "$(node_ns 2)" "$WEFT_TOOL" flows >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || check_fail "node 2 (off): weft flows exited $rc, not 2"
info "node 2 (off): no event socket, no sysctl, no rule, /flows 404"
weftd_stop 1
[ "$WEFTD_RC" = 0 ] || check_fail "weftd on node 1 (flow log on) exited $WEFTD_RC on SIGTERM"
finish
