#!/usr/bin/env bash
# Per-Service counters from the datapath (docs/metrics.md): one dual-stack node, one pod serving on
# three IPv4 and three IPv6 addresses (the endpoints), the node as the client.
#   1. K TCP and K UDP connections over IPv4 and IPv6 to a Service with three endpoints per family:
#      weft_service_new_connections_total sums to K per port and family, and each endpoint's
#      series equals the connections that endpoint answered (endpoint-map element counters);
#      a one-endpoint Service (a named counter on its DNAT rule) and a sessionAffinity Service
#      (endpoint chains) likewise;
#   2. a Service without endpoints: TCP and UDP probes refused, weft_service_no_endpoint_total
#      {action="reject"} equals the probes;
#   3. editing one Service (an endpoint removed) leaves the others' series as they were, and the
#      removed endpoint's series is gone;
#   4. a full sync (a node address came) keeps every counter; a restart of weftd keeps each series,
#      as it was or from 0 (never another Service's count);
#   5. `promtool check metrics` passes;
#   and maps an older weftd left without the counter flag are declared again.
# weft-test: serial
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
require_cmd promtool
CLUSTER_NETWORK6=fd00:10:244::/56
cluster_init 1 host-gw
# an older weftd's maps, without the counter flag: the first full sync declares them again
ip netns exec "$(node_ns 1)" nft -f - <<'EOF'
add table inet weft
add map inet weft svc-noep4 { type ipv4_addr . inet_proto . inet_service : verdict; }
add map inet weft svc-eps4-tcp-001 { typeof numgen random mod 1 : ip daddr . tcp dport; }
add chain inet weft svc-endpoints-check
add rule inet weft svc-endpoints-check ip daddr . meta l4proto . th dport vmap @svc-noep4
EOF
RANGES=10.96.0.0/16,fd00:10:96::/112
WARGS=(--objects-datastore etcd --relist-interval 0 --service-cluster-ip-range "$RANGES")
weftd_start 1 "${WARGS[@]}"
weftd_wait_ready 1
pod_create 1
[ -n "$(lease_var 1 WEFT_SUBNET6)" ] || fail "no WEFT_SUBNET6 in the lease"
NS=$(node_ns 1) PNS=$(pod_ns 1)
ip -n "$NS" addr add "$(lease_var 1 WEFT_SUBNET6)" dev cni0 nodad
G6=$(lease_var 1 WEFT_SUBNET6)
A4=() A6=()
for k in 10 11 12; do
	A4+=("$(nth_addr "$(node_subnet 1)" "$k")")
	A6+=("$(nth_addr "$G6" "$k")")
done
for k in 1 2; do ip -n "$PNS" addr add "${A4[$k]}/32" dev eth0; done
for k in 0 1 2; do ip -n "$PNS" addr add "${A6[$k]}/64" dev eth0 nodad; done
ip -n "$PNS" route add default via "${G6%/*}"
info "endpoints: ${A4[*]} ${A6[*]}"

# a server per endpoint address (TCP 8080, UDP 5353) answering with its own address; probes
PY=$T/eps.py
cat >"$PY" <<'EOF'
import socket, sys, threading, collections
def serve(addrs):
    for a in addrs:
        fam = socket.AF_INET6 if ":" in a else socket.AF_INET
        t = socket.socket(fam, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind((a, 8080)); t.listen(128)
        u = socket.socket(fam, socket.SOCK_DGRAM); u.bind((a, 5353))
        def tcp(t=t, a=a):
            while True:
                c, _ = t.accept(); c.sendall(a.encode()); c.close()
        def udp(u=u, a=a):
            while True:
                _, peer = u.recvfrom(100); u.sendto(a.encode(), peer)
        threading.Thread(target=tcp, daemon=True).start()
        threading.Thread(target=udp, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()
def probe(kind, ip, port, n):
    """n connections (each a new socket: a new conntrack entry); prints "answer count" lines"""
    # every socket stays open until the end: a closed UDP socket's port may come back to a later
    # one, whose datagrams then ride the first one's conntrack entry (no new connection, no count)
    c, held = collections.Counter(), []
    for _ in range(n):
        s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET,
                          socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        s.settimeout(3)
        try:
            s.connect((ip, port))
            if kind == "udp":
                s.send(b"x")
            c[s.recv(100).decode().strip() or "empty"] += 1
        except ConnectionRefusedError:
            c["refused"] += 1
        except (socket.timeout, TimeoutError):
            c["timeout"] += 1
        except OSError as e:
            c[f"error-{e.errno}"] += 1
        finally:
            held.append(s)
    for s in held:
        s.close()
    for k, v in sorted(c.items()):
        print(k, v)
if sys.argv[1] == "serve":
    serve(sys.argv[2:])
else:
    probe(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
EOF
ip netns exec "$PNS" python3 "$PY" serve "${A4[@]}" "${A6[@]}" >"$T/serve.log" 2>&1 &
SERVER=$!
kill_server() { kill "$SERVER" 2>/dev/null; return 0; }
on_exit kill_server
wait_for 30 grep -q ready "$T/serve.log" || fail "server did not start: $(cat "$T/serve.log")"

put() { objects_put "$1" "$2"; }
service() { put "services/shop/$1" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"},\"spec\":$2}"; }
# slice NAME SERVICE TYPE "ADDR..." : ready endpoints on node1, ports http 8080/TCP, dns 5353/UDP
slice() {
	local eps="" a
	for a in $4; do eps+="${eps:+,}{\"addresses\":[\"$a\"],\"nodeName\":\"node1\",\"conditions\":{\"ready\":true}}"; done
	put "endpointslices/shop/$1" "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\",\"labels\":{\"kubernetes.io/service-name\":\"$2\"}},\"addressType\":\"$3\",\"endpoints\":[$eps],\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"},{\"name\":\"dns\",\"port\":5353,\"protocol\":\"UDP\"}]}"
}
PORTS='[{"name":"http","port":80,"targetPort":"http"},{"name":"dns","port":53,"protocol":"UDP","targetPort":"dns"}]'
put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'
service multi "{\"clusterIP\":\"10.96.0.20\",\"clusterIPs\":[\"10.96.0.20\",\"fd00:10:96::20\"],\"ipFamilies\":[\"IPv4\",\"IPv6\"],\"ipFamilyPolicy\":\"RequireDualStack\",\"ports\":$PORTS}"
slice multi-4 multi IPv4 "${A4[*]}"
slice multi-6 multi IPv6 "${A6[*]}"
service solo "{\"clusterIP\":\"10.96.0.21\",\"ports\":$PORTS}"
slice solo-4 solo IPv4 "${A4[0]}"
service empty "{\"clusterIP\":\"10.96.0.22\",\"ports\":$PORTS}"
service aff "{\"clusterIP\":\"10.96.0.23\",\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":600}},\"ports\":$PORTS}"
slice aff-4 aff IPv4 "${A4[1]} ${A4[2]}"

METRICS=$T/metrics
scrape() {
	http_get 1 /metrics
	[ "$HTTP_CODE" = 200 ] || fail "/metrics answered $HTTP_CODE"
	printf '%s\n' "$HTTP_BODY" >"$METRICS"
}
# series FAMILY 'LABEL="V",...' : the sum of the family's series having all those labels ("none": no series)
series() {
	python3 - "$METRICS" "$1" "$2" <<'EOF'
import re, sys
path, fam, want = sys.argv[1:]
want = dict(re.findall(r'(\w+)="([^"]*)"', want))
tot, n = 0, 0
for line in open(path):
    m = re.match(r'^(\w+)\{(.*)\} (\d+)$', line.strip())
    if not m or m.group(1) != fam:
        continue
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
    if all(labels.get(k) == v for k, v in want.items()):
        tot += int(m.group(3)); n += 1
print(tot if n else "none")
EOF
}
wait_for 20 sh -c "ip netns exec $NS nft list map inet weft svc-noep4 2>/dev/null | grep -q '10.96.0.22 . udp . 53'" ||
	fail "Services not programmed: $(tail -5 "$(node_dir 1)/weftd.log")"
scrape
for f in weft_service_new_connections_total weft_service_no_endpoint_total; do
	grep -q "^# TYPE $f counter" "$METRICS" || check_fail "no $f family"
done
assert_eq "$(series weft_service_new_connections_total 'service="multi",port="80",endpoint="'"${A4[0]}"':8080"')" 0 "a fresh endpoint's series is 0"

K=24
probe() { ip netns exec "$NS" python3 "$PY" "$@"; }
# run_probes NAME PROTO IP PORT N: probes from the node, answers kept in $T/ans.NAME
run_probes() {
	probe "$2" "$3" "$4" "$5" >"$T/ans.$1"
	info "  $1 ($2 $3:$4 x$5): $(tr '\n' ' ' <"$T/ans.$1")"
}
answered() { awk -v a="$2" '$1 == a { print $2; f = 1 } END { if (!f) print 0 }' "$T/ans.$1"; }

info "1. new connections per endpoint"
run_probes m-tcp4 tcp 10.96.0.20 80 $K
run_probes m-udp4 udp 10.96.0.20 53 $K
run_probes m-tcp6 tcp fd00:10:96::20 80 $K
run_probes m-udp6 udp fd00:10:96::20 53 $K
run_probes solo tcp 10.96.0.21 80 5
run_probes aff tcp 10.96.0.23 80 6
scrape
check_proto() { # NAME PROTOCOL PORT ADDRS...
	local name=$1 proto=$2 port=$3 a sum=0 c s tp
	shift 3
	tp=8080
	[ "$proto" = UDP ] && tp=5353
	for a in "$@"; do
		local ep=$a
		[[ $a == *:* ]] && ep="[$a]"
		c=$(answered "$name" "$a")
		s=$(series weft_service_new_connections_total "port=\"$port\",protocol=\"$proto\",endpoint=\"$ep:$tp\",service=\"${name%%-*}\"")
		[ "${name%%-*}" = m ] && s=$(series weft_service_new_connections_total "port=\"$port\",protocol=\"$proto\",endpoint=\"$ep:$tp\",service=\"multi\"")
		assert_eq "$s" "$c" "$name: endpoint $ep: counter = connections it answered"
		sum=$((sum + c))
	done
	echo "$sum"
}
assert_eq "$(check_proto m-tcp4 TCP 80 "${A4[@]}")" $K "multi TCP IPv4: the endpoints answered every connection"
assert_eq "$(check_proto m-udp4 UDP 53 "${A4[@]}")" $K "multi UDP IPv4"
assert_eq "$(check_proto m-tcp6 TCP 80 "${A6[@]}")" $K "multi TCP IPv6"
assert_eq "$(check_proto m-udp6 UDP 53 "${A6[@]}")" $K "multi UDP IPv6"
assert_eq "$(series weft_service_new_connections_total 'service="multi",protocol="TCP"')" $((2 * K)) "multi TCP: the series sum to the connections"
assert_eq "$(series weft_service_new_connections_total 'service="solo",endpoint="'"${A4[0]}"':8080"')" 5 "one endpoint (named counter)"
assert_eq "$(answered solo "${A4[0]}")" 5 "solo answered"
assert_eq "$(series weft_service_new_connections_total 'service="aff",protocol="TCP"')" 6 "sessionAffinity (endpoint chains): all counted"
for a in "${A4[1]}" "${A4[2]}"; do
	assert_eq "$(series weft_service_new_connections_total "service=\"aff\",protocol=\"TCP\",endpoint=\"$a:8080\"")" \
		"$(answered aff "$a")" "aff: endpoint $a"
done

info "2. no endpoints: rejected, counted"
run_probes e-tcp tcp 10.96.0.22 80 4
run_probes e-udp udp 10.96.0.22 53 3
assert_eq "$(answered e-tcp refused)" 4 "TCP probes refused"
# from the node itself the output hook's reject fails the send (EPERM) rather than answering ICMP
assert_eq "$(($(answered e-udp refused) + $(answered e-udp error-1)))" 3 "UDP probes refused"
scrape
assert_eq "$(series weft_service_no_endpoint_total 'service="empty",protocol="TCP",action="reject"')" 4 "no-endpoint TCP rejects counted"
assert_eq "$(series weft_service_no_endpoint_total 'service="empty",protocol="UDP",action="reject"')" 3 "no-endpoint UDP rejects counted"
assert_eq "$(series weft_service_no_endpoint_total 'service="multi"')" none "a Service with endpoints has no no-endpoint series"

snapshot() { grep -E '^weft_service_(new_connections|no_endpoint)_total\{' "$METRICS" | grep -v "$1" | sort; }
info "3. editing one Service leaves the others' counters; a removed endpoint's series is gone"
snapshot 'service="multi"' >"$T/before"
M0=$(series weft_service_new_connections_total "service=\"multi\",protocol=\"TCP\",endpoint=\"${A4[0]}:8080\"")
slice multi-4 multi IPv4 "${A4[0]} ${A4[1]}"
wait_for 20 sh -c "ip netns exec $NS nft list ruleset | grep -c '${A4[2]} . 8080' | grep -qx 0" ||
	fail "endpoint ${A4[2]} still programmed for multi"
scrape
snapshot 'service="multi"' >"$T/after"
diff -u "$T/before" "$T/after" >&2 || check_fail "other Services' counters changed when multi changed"
assert_eq "$(series weft_service_new_connections_total "service=\"multi\",endpoint=\"${A4[2]}:8080\"")" none "removed endpoint's series gone"
assert_eq "$(series weft_service_new_connections_total "service=\"multi\",protocol=\"TCP\",endpoint=\"${A4[0]}:8080\"")" "$M0" "multi's kept endpoint (same position) kept its counter"
promtool check metrics <"$METRICS" >"$T/promtool" 2>&1 || { cat "$T/promtool" >&2; check_fail "promtool check metrics"; }

info "4. a full sync (a node address came) keeps every counter"
snapshot '^$' >"$T/before-full"
FULL0=$(awk '$1 == "weft_service_full_syncs_total" { print $2 }' "$METRICS")
MT=$(series weft_service_new_connections_total 'service="multi",protocol="TCP"')
ip -n "$NS" addr add 10.99.0.250/32 dev eth0
full_synced() {
	scrape
	[ "$(awk '$1 == "weft_service_full_syncs_total" { print $2 }' "$METRICS")" -gt "$FULL0" ]
}
wait_for 40 full_synced || fail "no full sync after a node address came (full syncs: $FULL0)"
snapshot '^$' >"$T/after-full"
diff -u "$T/before-full" "$T/after-full" >&2 || check_fail "counters changed over a full sync"
run_probes solo2 tcp 10.96.0.21 80 2
run_probes m-tcp4b tcp 10.96.0.20 80 4
scrape
assert_eq "$(series weft_service_new_connections_total 'service="solo",endpoint="'"${A4[0]}"':8080"')" 7 "solo counts on after the full sync"
assert_eq "$(series weft_service_new_connections_total 'service="multi",protocol="TCP"')" $((MT + 4)) "multi counts on after the full sync"

info "4b. a restart: the same series, each as it was or from 0 (endpoint maps start again), never another's"
snapshot '^$' >"$T/before-restart"
weftd_stop 1
weftd_start 1 "${WARGS[@]}"
weftd_wait_ready 1
restarted() {
	scrape
	[ "$(snapshot '^$' | wc -l)" = "$(wc -l <"$T/before-restart")" ]
}
wait_for 20 restarted || fail "series missing after the restart"
python3 - "$T/before-restart" <(snapshot '^$') <<'EOF2' || check_fail "a counter after the restart is neither its value nor 0"
import sys
def load(p):
    return dict(l.rsplit(" ", 1) for l in open(p).read().split("\n") if l)
b, a = load(sys.argv[1]), load(sys.argv[2])
bad = [k for k in b if k not in a or a[k] not in (b[k], "0")]
for k in bad:
    print("  ", k, b[k], "->", a.get(k), file=sys.stderr)
sys.exit(1 if bad or set(a) != set(b) else 0)
EOF2
run_probes aff2 tcp 10.96.0.23 80 3
scrape
assert_eq "$(series weft_service_new_connections_total 'service="aff",protocol="TCP"')" 9 "aff (named counters) counted on over the restart"

info "5. promtool"
promtool check metrics <"$METRICS" >"$T/promtool" 2>&1 || { cat "$T/promtool" >&2; check_fail "promtool check metrics"; }
# under the sanitizers: neither weftd run (before and after the restart) reported anything
weftd_stop 1
if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$(node_dir 1)/weftd.log" >&2; then
	check_fail "weftd reported a sanitizer error"
fi
finish
