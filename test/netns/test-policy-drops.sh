#!/usr/bin/env bash
# NetworkPolicy observability on 2 dual-stack nodes (vxlan), objects in etcd; y/a on node 1 is isolated by
# y/deny-all (default deny) and y/from-xa (UDP 81 from pods a of namespace x):
#   1. counters: /metrics (named nftables counters, one listing) rises by exactly the probes'
#      packets: allowed for y/from-xa rule 0, denied for the class (deny-all from-xa) and per
#      isolating policy; the kernel's own counter objects agree
#   2. live drops (node 1: --policy-log-drops): nfnetlink_log inside the node's namespace, no host
#      sysctl; `weft policy drops` names the flow, the pods and the policies; --follow shows a new
#      drop; weftd logs it; an IPv6 drop reads as [addr]:port; an egress drop names the source's
#      policy; a flood is logged at the
#      rule's rate, counted in full
#   3. node 2 (without the option): no log rule, /policy/drops 404, `weft policy drops` exits 2
#   4. fallback: with the group taken by another listener, weftd says so and logs to the kernel log
#   5. weftd uninstall removes the counters too
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
WEFT_TOOL=$WEFT_BUILD/tool/weft
require_built "$WEFT_TOOL"
# in a pod: TCP ("ok" to every connection) and UDP (echo) on 80 and 81
SERVE='import select, socket
socks = []
for port in (80, 81):
    socks.append(socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True))
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", port)); socks.append(u)
print("ready", flush=True)
while True:
    for s in select.select(socks, [], [])[0]:
        if s.type == socket.SOCK_STREAM:
            c = s.accept()[0]; c.sendall(b"ok"); c.close()
        else:
            d, a = s.recvfrom(64); s.sendto(d, a)'

CLUSTER_NETWORK6=fd00:10:244::/56
cluster_init 2 vxlan
weftd_start 1 --objects-datastore etcd --relist-interval 0 --policy-log-drops
weftd_start 2 --objects-datastore etcd --relist-interval 0
weftd_wait_ready 1 2
grep -q 'dropped packets are read from nfnetlink_log group' "$(node_dir 1)/weftd.log" ||
	fail "node 1: weftd did not bind nfnetlink_log: $(grep -i nfnetlink "$(node_dir 1)/weftd.log")"

declare -A PNS PIP PIP6
PIDS=()
kill_bg() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_bg
for i in 1 2; do node_bridge_dual "$i"; done
K=0
# mkpod NS P NODE: netns, veth on the node's bridge, the servers (TCP/UDP 80, 81), record
mkpod() {
	local ns=$1 p=$2 node=$3 gw s6 pns ip ip6
	K=$((K + 1))
	gw=$(lease_var "$node" WEFT_SUBNET) s6=$(lease_var "$node" WEFT_SUBNET6)
	ip=$(nth_addr "$gw" $((10 + K))) ip6=$(nth_addr "$s6" $((10 + K)))
	pns=$(mk_netns "p$ns$p")
	PNS[$ns/$p]=$pns PIP[$ns/$p]=$ip PIP6[$ns/$p]=$ip6
	ip -n "$(node_ns "$node")" link add "v$ns$p" type veth peer name eth0 netns "$pns"
	ip -n "$(node_ns "$node")" link set "v$ns$p" master cni0 up
	ip -n "$pns" addr add "$ip/${gw#*/}" dev eth0
	ip -n "$pns" addr add "$ip6/${s6#*/}" dev eth0 nodad
	ip -n "$pns" link set eth0 up
	ip -n "$pns" route add default via "${gw%/*}"
	ip -n "$pns" -6 route add default via "$(nth_addr "$s6" 1)"
	ip netns exec "$pns" python3 -c "$SERVE" >"$T/serve.$ns$p" 2>&1 &
	PIDS+=($!)
	wait_for 30 grep -q ready "$T/serve.$ns$p" || fail "server in $ns/$p did not start"
	objects_put "pods/$ns/$p" "$(jq -nc --arg ns "$ns" --arg p "$p" --arg node "node$node" --arg ip "$ip" --arg ip6 "$ip6" \
		'{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$p,labels:{pod:$p}},
		spec:{nodeName:$node,containers:[{name:"c"}]},status:{phase:"Running",podIP:$ip,podIPs:[{ip:$ip},{ip:$ip6}]}}')"
}
for ns in x y; do
	objects_put "namespaces/$ns" "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\",\"labels\":{\"ns\":\"$ns\"}}}"
done
mkpod y a 1
mkpod y b 2
mkpod x a 2
mkpod x b 2

# tcp FROM IP PORT: 0 if "ok" comes back within 0.5 s
tcp() { ip netns exec "${PNS[$1]}" python3 -c 'import socket,sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=0.5); s.settimeout(0.5)
    sys.exit(0 if s.recv(2) == b"ok" else 1)
except OSError:
    sys.exit(1)' "${PIP[$2]}" "$3"; }
no_tcp() { ! tcp "$@"; }
tcp6() { ip netns exec "${PNS[$1]}" python3 -c 'import socket,sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=0.5); s.settimeout(0.5)
    sys.exit(0 if s.recv(2) == b"ok" else 1)
except OSError:
    sys.exit(1)' "${PIP6[$2]}" "$3"; }
# udp FROM TO PORT N: N datagrams, each from a socket of its own (a new flow: conntrack NEW, so
# each one meets the policy rules); prints how many echoes came back
udp() { ip netns exec "${PNS[$1]}" python3 -c 'import socket,sys,time
n, back = int(sys.argv[3]), 0
socks = []
for i in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 0)); s.sendto(b"x", (sys.argv[1], int(sys.argv[2])))
    socks.append(s)
time.sleep(0.3)
for s in socks:
    s.setblocking(False)
    try:
        s.recv(16); back += 1
    except OSError:
        pass
print(back)' "${PIP[$2]}" "$3" "$4"; }
metrics() { http_get 1 /metrics; printf '%s\n' "$HTTP_BODY" >"$T/metrics"; }
# metric 'NAME{LABELS}': its value in $T/metrics, or 0 when absent (a counter not yet listed)
metric() { awk -v k="$1" '{ n = $NF; sub(/ [^ ]*$/, "") } $0 == k { v = n } END { print v + 0 }' "$T/metrics"; }
# kernel_counter NODE NAME: packets of a counter object of table inet weft
kernel_counter() {
	ip netns exec "$(node_ns "$1")" nft -j list counters table inet weft |
		jq -r --arg n "$2" '.nftables[] | select(.counter.name == $n) | .counter.packets'
}

tcp6 x/b y/a 80 || fail "x/b -> y/a over IPv6 before any policy: IPv6 is broken, not policed"
objects_put networkpolicies/y/deny-all '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"y","name":"deny-all"},"spec":{"podSelector":{}}}'
objects_put networkpolicies/y/from-xa '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"y","name":"from-xa"},
	"spec":{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"x"}},"podSelector":{"matchLabels":{"pod":"a"}}}],
	"ports":[{"port":81,"protocol":"UDP"}]}]}}'
wait_for 5 no_tcp x/b y/a 80 ||
	fail "x/b -> y/a:80 not denied 5 s after the default deny"
[ "$(udp x/a y/a 81 1)" = 1 ] || fail "x/a -> y/a:81/UDP (allowed by y/from-xa) denied"
[ "$(udp x/b y/a 81 1)" = 0 ] || fail "x/b -> y/a:81/UDP (not allowed) passed"

# ---- 1. counters
ALLOW='weft_policy_allowed_packets_total{namespace="y",policy="from-xa",direction="ingress",rule="0"}'
BYPOL='weft_policy_denied_by_policy_packets_total{namespace="y",policy="deny-all",direction="ingress"}'
BYPOL2='weft_policy_denied_by_policy_packets_total{namespace="y",policy="from-xa",direction="ingress"}'
metrics
DENY=$(grep -o '^weft_policy_denied_packets_total{chain="np-cls-[0-9a-f]*-in",direction="ingress",policies="deny-all from-xa"}' "$T/metrics") ||
	fail "no class deny counter for (deny-all from-xa) in /metrics: $(grep denied "$T/metrics")"
[[ $DENY =~ chain=\"np-cls-([0-9a-f]+-in)\" ]] && CLS=${BASH_REMATCH[1]}
a0=$(metric "$ALLOW") d0=$(metric "$DENY") p0=$(metric "$BYPOL") q0=$(metric "$BYPOL2")
k0=$(kernel_counter 1 "np-cc-$CLS")
{ [ "$a0" -ge 1 ] && [ "$d0" -ge 1 ]; } || check_fail "counters did not count the first probes: allowed $a0, denied $d0"
N=7
back=$(udp x/a y/a 81 $N)
[ "$back" = $N ] || check_fail "allowed probe: $back of $N echoes"
back=$(udp x/b y/a 81 $N)
[ "$back" = 0 ] || check_fail "denied probe: $back of $N echoes"
metrics
a1=$(metric "$ALLOW") d1=$(metric "$DENY") p1=$(metric "$BYPOL") q1=$(metric "$BYPOL2")
k1=$(kernel_counter 1 "np-cc-$CLS")
info "allowed y/from-xa rule 0: $a0 -> $a1; denied class $CLS: $d0 -> $d1 (kernel $k0 -> $k1); by policy deny-all $p0 -> $p1, from-xa $q0 -> $q1"
[ $((a1 - a0)) = $N ] || check_fail "allowed counter of y/from-xa rose by $((a1 - a0)), not $N"
[ $((d1 - d0)) = $N ] || check_fail "class deny counter rose by $((d1 - d0)), not $N"
[ $((p1 - p0)) = $N ] || check_fail "per-policy deny counter of y/deny-all rose by $((p1 - p0)), not $N"
[ $((q1 - q0)) = $N ] || check_fail "per-policy deny counter of y/from-xa rose by $((q1 - q0)), not $N"
[ "$k1" = "$d1" ] || check_fail "/metrics says $d1 denied, the kernel's np-cc-$CLS $k1"
grep -q '^# TYPE weft_policy_allowed_packets_total counter' "$T/metrics" || check_fail "no TYPE line for the allowed counter"
grep '^weft_policy_' "$T/metrics" | grep -E 'allowed|denied' | sed 's/^/#   /'

# ---- 2. live drops (node 1)
ip netns exec "$(node_ns 1)" nft list table inet weft >"$T/rules.1"
grep -q "log prefix \"weft-np y ingress deny by deny-all from-xa: #$CLS\" group 30565" "$T/rules.1" ||
	check_fail "node 1: no nflog rule naming the class: $(grep log "$T/rules.1")"
ip netns exec "$(node_ns 1)" "$WEFT_TOOL" policy drops --follow >"$T/follow" 2>&1 &
follower=$!
PIDS+=("$follower")
sleep 1
re_tcp="^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} DROP ingress ${PIP[x/b]//./\\.}:[0-9]+ -> ${PIP[y/a]//./\\.}:80/TCP \(x/b -> y/a\) isolated by y/deny-all, y/from-xa$"
n_follow=$(grep -Ec "$re_tcp" "$T/follow" || true) # the drops weftd had: printed first
tcp x/b y/a 80 && check_fail "x/b -> y/a:80/TCP allowed"
ip netns exec "$(node_ns 1)" "$WEFT_TOOL" policy drops >"$T/drops" 2>&1 || check_fail "weft policy drops failed: $(cat "$T/drops")"
sed 's/^/#   /' "$T/drops" | tail -3
re_udp="^[0-9:.]+ DROP ingress ${PIP[x/b]//./\\.}:[0-9]+ -> ${PIP[y/a]//./\\.}:81/UDP \(x/b -> y/a\) isolated by y/deny-all, y/from-xa$"
grep -Eq "$re_tcp" "$T/drops" || check_fail "weft policy drops does not show x/b -> y/a:80/TCP with its policies"
[ "$(grep -Ec "$re_udp" "$T/drops")" -ge $((N + 1)) ] || check_fail "weft policy drops shows $(grep -Ec "$re_udp" "$T/drops") UDP drops, not $((N + 1))"
grep -q "${PIP[x/a]}" "$T/drops" && check_fail "an allowed flow (x/a) is listed as dropped"
followed() { [ "$(grep -Ec "$re_tcp" "$T/follow")" -gt "$n_follow" ]; }
wait_for 3 followed || check_fail "weft policy drops --follow did not show the new drop: $(cat "$T/follow")"
kill "$follower" 2>/dev/null
grep -Eq "Policy drop: ingress ${PIP[x/b]//./\\.}:[0-9]+ -> ${PIP[y/a]//./\\.}:80/TCP \(x/b -> y/a\) isolated by y/deny-all y/from-xa" "$(node_dir 1)/weftd.log" ||
	check_fail "weftd did not log the drop at info"
http_get 1 /policy/drops
BODY=$HTTP_BODY
jq -e --arg src "${PIP[x/b]}" 'select(.proto == "TCP" and .src == $src and .dport == 80 and .to == "y/a"
	and .policies == ["y/deny-all", "y/from-xa"] and .direction == "ingress")' <<<"$HTTP_BODY" >/dev/null ||
	check_fail "/policy/drops has no JSON line for the TCP drop"
last=$(jq -s 'map(.seq) | max' <<<"$HTTP_BODY")
http_get 1 "/policy/drops?since=$last"
{ [ "$HTTP_CODE" = 200 ] && [ -z "$HTTP_BODY" ]; } || check_fail "/policy/drops?since=$last: $HTTP_CODE '$HTTP_BODY' (expected nothing new)"
echo "#   $(jq -c 'select(.proto == "TCP")' <<<"$BODY" | tail -1)"

# IPv6: the same class; the addresses in brackets
tcp6 x/b y/a 80 && check_fail "x/b -> y/a:80/TCP over IPv6 allowed"
re6="^[0-9:.]+ DROP ingress \\[${PIP6[x/b]}\\]:[0-9]+ -> \\[${PIP6[y/a]}\\]:80/TCP \\(x/b -> y/a\\) isolated by y/deny-all, y/from-xa$"
drops6() { ip netns exec "$(node_ns 1)" "$WEFT_TOOL" policy drops | grep -Eq "$re6"; }
wait_for 3 drops6 || check_fail "weft policy drops does not show the IPv6 drop x/b -> y/a:80"
ip netns exec "$(node_ns 1)" "$WEFT_TOOL" policy drops | grep -E "$re6" | tail -1 | sed 's/^/#   /'
info "IPv6 drop shown"

# egress: y/a may not open connections; the drop names the source pod's isolating policy
objects_put networkpolicies/y/no-out '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"y","name":"no-out"},
	"spec":{"podSelector":{"matchLabels":{"pod":"a"}},"policyTypes":["Egress"]}}'
wait_for 5 no_tcp y/a x/a 80 || check_fail "y/a -> x/a:80 not denied 5 s after y/no-out"
re_out="^[0-9:.]+ DROP egress ${PIP[y/a]//./\\.}:[0-9]+ -> ${PIP[x/a]//./\\.}:80/TCP \(y/a -> x/a\) isolated by y/no-out$"
drops_out() { ip netns exec "$(node_ns 1)" "$WEFT_TOOL" policy drops | grep -Eq "$re_out"; }
wait_for 3 drops_out || check_fail "weft policy drops does not show the egress drop y/a -> x/a:80 by y/no-out"
[ "$(udp x/a y/a 81 1)" = 1 ] || check_fail "x/a -> y/a:81/UDP (allowed) denied under y/no-out: the reply is established"
etcdctl_ del "$ETCD_PREFIX/objects/networkpolicies/y/no-out" >/dev/null
wait_for 5 tcp y/a x/a 80 || check_fail "y/a -> x/a:80 still denied after y/no-out was deleted"
info "egress drop named by the source's policy"

# a flood: every packet counted, the log at the rule's rate (50/s, burst 20)
metrics
d0=$(metric "$DENY") r0=$(metric 'weft_policy_drop_log_total{what="read"}')
t0=$(date +%s.%N)
udp x/b y/a 81 300 >/dev/null
t1=$(date +%s.%N)
sleep 0.5
metrics
d1=$(metric "$DENY") r1=$(metric 'weft_policy_drop_log_total{what="read"}')
bound=$(echo "20 + 50 * ($t1 - $t0 + 1) / 1" | bc)
info "flood of 300: denied +$((d1 - d0)), logged +$((r1 - r0)) (bound $bound)"
[ $((d1 - d0)) = 300 ] || check_fail "the flood: class deny counter rose by $((d1 - d0)), not 300"
{ [ $((r1 - r0)) -ge 20 ] && [ $((r1 - r0)) -le "$bound" ]; } || check_fail "the flood: $((r1 - r0)) drops logged, expected 20..$bound"

# ---- 3. node 2: the option off
ip netns exec "$(node_ns 2)" nft list table inet weft >"$T/rules.2"
grep -q 'np-cc-' "$T/rules.2" || check_fail "node 2: no class deny (y/b is isolated there)"
grep -qw 'log' "$T/rules.2" && check_fail "node 2 (no --policy-log-drops): a log rule: $(grep -w log "$T/rules.2")"
http_get 2 /policy/drops
[ "$HTTP_CODE" = 404 ] || check_fail "node 2: /policy/drops answered $HTTP_CODE"
rc=0
ip netns exec "$(node_ns 2)" "$WEFT_TOOL" policy drops >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || check_fail "node 2: weft policy drops exited $rc, not 2"
info "node 2 without the option: no log rule, /policy/drops 404"

# ---- 4. the group taken by another listener in node 2's namespace: weftd falls back
ip netns exec "$(node_ns 2)" python3 -c 'import socket, struct, sys, time
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)  # NETLINK_NETFILTER
s.bind((0, 0))
# NFULNL_MSG_CONFIG (subsys ULOG 4 << 8 | 1), request + ack; nfgenmsg AF_UNSPEC, v0, group 30565;
# NFULA_CFG_CMD (1) = BIND (1)
attr = struct.pack("=HHB3x", 5, 1, 1)
msg = struct.pack("=BBH", 0, 0, socket.htons(30565)) + attr
s.send(struct.pack("=IHHII", 16 + len(msg), (4 << 8) | 1, 1 | 4, 1, 0) + msg)
err = struct.unpack("=i", s.recv(4096)[16:20])[0]
print("bound" if err == 0 else "error %d" % err, flush=True)
time.sleep(3600)' >"$T/holder" 2>&1 &
PIDS+=($!)
wait_for 5 grep -q bound "$T/holder" || fail "could not bind the group in node 2's namespace: $(cat "$T/holder")"
weftd_stop 2
weftd_start 2 --objects-datastore etcd --relist-interval 0 --policy-log-drops
weftd_wait_ready 2
wait_for 5 grep -q 'cannot bind nfnetlink_log group 30565' "$(node_dir 2)/weftd.log" ||
	check_fail "node 2: weftd did not say that it cannot bind the group"
kernel_log_rule() { ip netns exec "$(node_ns 2)" nft list table inet weft | grep 'log prefix "weft-np y ingress deny by deny-all from-xa: "$' >/dev/null; }
wait_for 5 kernel_log_rule ||
	check_fail "node 2: no kernel-log rule after the fallback: $(ip netns exec "$(node_ns 2)" nft list table inet weft | grep -w log)"
ip netns exec "$(node_ns 2)" nft list table inet weft | grep 'group 30565' >/dev/null && check_fail "node 2: an nflog rule although the group is not weftd's"
http_get 2 /policy/drops
{ [ "$HTTP_CODE" = 404 ] && grep -q 'kernel log' <<<"$HTTP_BODY"; } || check_fail "node 2 fallback: /policy/drops $HTTP_CODE '$HTTP_BODY'"
info "group taken: weftd says so and logs to the kernel log"

# ---- 5. the counters go with the rest: weftd uninstall leaves no np-* counter
weftd_stop 1
[ "$WEFTD_RC" = 0 ] || check_fail "weftd on node 1 (drop log on) exited $WEFTD_RC on SIGTERM: $(tail -5 "$(node_dir 1)/weftd.log")"
weftd_cmd 1 uninstall >"$T/uninstall.log" 2>&1 || check_fail "weftd uninstall failed: $(cat "$T/uninstall.log")"
n=$(ip netns exec "$(node_ns 1)" nft -j list counters table inet weft 2>/dev/null |
	jq '[.nftables[] | .counter // empty | select(.name | startswith("np-"))] | length')
[ "${n:-0}" = 0 ] || check_fail "weftd uninstall left $n np-* counters"
finish
