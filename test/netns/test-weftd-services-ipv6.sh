#!/usr/bin/env bash
# IPv6 and dual-stack Services without kube-proxy, across nodes, on a dual-stack cluster (Network
# 10.244.0.0/16 + Network6 fd00:10:244::/56, IPv6 pods overlaid on the IPv4 underlay):
#
#   underlay 10.99.0.0/24 + fd00:99::/64 -- node1 (pod p1, server "p1", IPv4 and IPv6)
#                                         -- node2 (pod p2, server "p2")
#                                         -- node3 (pod p3, the client)
#                                         -- outside 10.99.0.200 / fd00:99::200
#
# weftd runs with --service-cluster-ip-range 10.96.0.0/12,fd00:10:96::/112 and no node has a
# hand-added route to the Services. Each case fails without its feature: a dual-stack Service
# (clusterIPs v4 + v6, EndpointSlices IPv4 and IPv6) reached over IPv6 TCP and UDP from a pod on
# another node (both endpoints, pod source kept) and over IPv4 too; from a node over IPv6 and IPv4
# with the route of the option (its pod-network gateway address as source); a NodePort over IPv6
# from outside, masqueraded; a SingleStack IPv6 Service; a Service without IPv6 endpoints
# rejecting over IPv6 (TCP reset / ICMPv6 port unreachable, not a timeout) while its IPv4
# ClusterIP answers; a foreign route to a Service range left alone; `weftd uninstall` removing
# the routes; a range overlapping the underlay refused. (The ranges are not kube-apiserver's
# default 10.96.0.0/12: that one covers this underlay, 10.99.0.0/24.)
#   SERVICES_BACKEND=vxlan|udp (default vxlan; IPv6 pods need an overlay on this IPv4 underlay)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
BACKEND=${SERVICES_BACKEND:-vxlan}
RANGE4=10.96.0.0/16 RANGE6=fd00:10:96::/112

CLUSTER_NETWORK6=fd00:10:244::/56
cluster_init 3 "$BACKEND"
ul6() { echo "fd00:99::$1"; } # underlay IPv6 of node I (11..13) or the outside host (200)
ip -n "$OUT_NS" addr add "$(ul6 200)/64" dev eth0 nodad
for i in 1 2 3; do
	ip -n "$(node_ns "$i")" addr add "$(ul6 $((10 + i)))/64" dev eth0 nodad
	ip netns exec "$(node_ns "$i")" sysctl -qw net.ipv6.conf.all.forwarding=1
done
# node2 already has a route of its own to the IPv4 range: weft must leave it alone
ip -n "$(node_ns 2)" route add "$RANGE4" dev eth0
for i in 1 2 3; do
	weftd_start "$i" --objects-datastore etcd --relist-interval 0 --resync-interval 2s \
		--service-cluster-ip-range "$RANGE4,$RANGE6"
done
weftd_wait_ready 1 2 3

# pod_ip6 I: the pod's IPv6 address (::a of the node's /64); gw6 I: the node's IPv6 pod gateway
pod_ip6() { python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[10])' "$(lease_var "$1" WEFT_SUBNET6)"; }
gw6() { local g; g=$(lease_var "$1" WEFT_SUBNET6); echo "${g%/*}"; }
gw4() { local g; g=$(lease_var "$1" WEFT_SUBNET); echo "${g%/*}"; }
for i in 1 2 3; do
	pod_create "$i"
	[ -n "$(lease_var "$i" WEFT_SUBNET6)" ] || fail "node$i has no WEFT_SUBNET6 in its lease"
	ip -n "$(node_ns "$i")" addr add "$(lease_var "$i" WEFT_SUBNET6)" dev cni0 nodad
	ip -n "$(pod_ns "$i")" addr add "$(pod_ip6 "$i")/64" dev eth0 nodad
	ip -n "$(pod_ns "$i")" route add default via "$(gw6 "$i")"
done
P1=$(pod_ip 1) P2=$(pod_ip 2) P3=$(pod_ip 3)
P1v6=$(pod_ip6 1) P2v6=$(pod_ip6 2) P3v6=$(pod_ip6 3)
info "pods: p1 $P1 $P1v6, p2 $P2 $P2v6, p3 $P3 $P3v6"

# Servers and probes, both families: svc6.py serve NAME | tcp|udp IP PORT [TIMEOUT]
SVC=$T/svc6.py
cat >"$SVC" <<'EOF'
import socket, sys, threading
def serve(name):
    for fam, any_ in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        t = socket.socket(fam, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            t.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        t.bind((any_, 8080)); t.listen(128)
        u = socket.socket(fam, socket.SOCK_DGRAM)
        if fam == socket.AF_INET6:
            u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        u.bind((any_, 5353))
        def tcp(t=t):
            while True:
                c, peer = t.accept()
                c.sendall(f"{name} {peer[0]}\n".encode()); c.close()
        def udp(u=u):
            while True:
                _, peer = u.recvfrom(2048)
                u.sendto(f"{name} {peer[0]}".encode(), peer)
        threading.Thread(target=tcp, daemon=True).start()
        threading.Thread(target=udp, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()
def probe(kind, ip, port, timeout):
    s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET,
                      socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.connect((ip, port))
        if kind == "udp":
            s.send(b"x")
        return s.recv(200).decode().strip() or "empty"
    except ConnectionRefusedError:
        return "refused"
    except (socket.timeout, TimeoutError):
        return "timeout"
    except OSError as e:
        return f"error-{e.errno}"
    finally:
        s.close()
if sys.argv[1] == "serve":
    serve(sys.argv[2])
else:
    print(probe(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 2.0))
EOF
SERVERS=()
kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_servers
for i in 1 2; do
	ip netns exec "$(pod_ns "$i")" python3 "$SVC" serve "p$i" >"$T/serve.$i" 2>&1 &
	SERVERS+=($!)
done
for i in 1 2; do wait_for 30 grep -q ready "$T/serve.$i" || fail "server p$i did not start: $(cat "$T/serve.$i")"; done

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
# service NAME SPEC-JSON
service() {
	put "services/shop/$1" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"},\"spec\":$2,\"status\":{}}"
}
endpoint() { echo "{\"addresses\":[\"$1\"],\"nodeName\":\"$2\",\"conditions\":{\"ready\":true}}"; }
# slice NAME SERVICE IPv4|IPv6 ENDPOINTS-JSON-ARRAY-MEMBERS PORTS-JSON-ARRAY-MEMBERS
slice() {
	put "endpointslices/shop/$1" "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\",\"labels\":{\"kubernetes.io/service-name\":\"$2\"}},\"addressType\":\"$3\",\"endpoints\":[$4],\"ports\":[$5]}"
}
WEB_PORTS='{"name":"http","port":8080,"protocol":"TCP"},{"name":"dns","port":5353,"protocol":"UDP"}'
PORTS='[{"name":"http","port":80,"targetPort":"http","nodePort":30080},{"name":"dns","port":53,"protocol":"UDP","targetPort":5353,"nodePort":30053}]'

put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'
service web "{\"type\":\"NodePort\",\"ipFamilyPolicy\":\"RequireDualStack\",\"ipFamilies\":[\"IPv4\",\"IPv6\"],
	\"clusterIP\":\"10.96.0.10\",\"clusterIPs\":[\"10.96.0.10\",\"fd00:10:96::10\"],\"ports\":$PORTS}"
slice web-v4 web IPv4 "$(endpoint "$P1" node1),$(endpoint "$P2" node2)" "$WEB_PORTS"
slice web-v6 web IPv6 "$(endpoint "$P1v6" node1),$(endpoint "$P2v6" node2)" "$WEB_PORTS"
service v6only '{"ipFamilyPolicy":"SingleStack","ipFamilies":["IPv6"],"clusterIP":"fd00:10:96::20",
	"clusterIPs":["fd00:10:96::20"],"ports":[{"port":80,"targetPort":8080}]}'
slice v6only-1 v6only IPv6 "$(endpoint "$P2v6" node2)" '{"port":8080}'
service nov6 '{"ipFamilyPolicy":"PreferDualStack","ipFamilies":["IPv4","IPv6"],"clusterIP":"10.96.0.30",
	"clusterIPs":["10.96.0.30","fd00:10:96::30"],"ports":[{"port":80,"targetPort":8080},
	{"name":"u","port":53,"protocol":"UDP","targetPort":5353}]}'
slice nov6-1 nov6 IPv4 "$(endpoint "$P1" node1)" '{"port":8080},{"name":"u","port":5353,"protocol":"UDP"}'

in_pod() { ip netns exec "$(pod_ns "$1")" python3 "$SVC" "${@:2}"; }
in_node() { ip netns exec "$(node_ns "$1")" python3 "$SVC" "${@:2}"; }
outside() { ip netns exec "$OUT_NS" python3 "$SVC" "$@"; }
# programmed: the last Service written answers from the pod on node3, and from node3 itself
# (the routes of the option: they need the pod bridge's gateway addresses, added above)
answers() { [[ $("$@" 1) =~ ^p[12]\  ]]; }
wait_for 15 answers in_pod 3 tcp fd00:10:96::20 80 || fail "node3 never answered on fd00:10:96::20: $(tail -5 "$(node_dir 3)/weftd.log")"
wait_for 5 answers in_node 3 tcp fd00:10:96::10 80 || info "node3 -> [fd00:10:96::10]:80 does not answer yet"
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }
# answers of N probes, as "p1 x, p2 y"; spread_src: the distinct sources the servers saw
spread() {
	local n=$1 out
	shift
	out=$(for _ in $(seq "$n"); do "$@"; done)
	echo "$out" >"$T/last-spread"
	awk '{ print $1 }' <<<"$out" | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }'
}
spread_src() { awk '{ print $2 }' "$T/last-spread" | sort -u | paste -sd' '; }
BOTH='^p1 [0-9]+, p2 [0-9]+$'

case_ "dual-stack Service, IPv6 ClusterIP, TCP from a pod on another node: both endpoints, pod source kept"
s=$(spread 20 in_pod 3 tcp fd00:10:96::10 80)
info "  p3 -> [fd00:10:96::10]:80 x20: $s (sources seen: $(spread_src))"
[[ $s =~ $BOTH ]] || check_fail "pod -> IPv6 ClusterIP TCP: $s"
assert_eq "$(spread_src)" "$P3v6" "source seen by the endpoints (pod -> IPv6 ClusterIP)"

case_ "dual-stack Service, IPv6 ClusterIP, UDP (targetPort by number)"
s=$(spread 12 in_pod 3 udp fd00:10:96::10 53)
info "  p3 -> [fd00:10:96::10]:53/udp x12: $s"
[[ $s =~ $BOTH ]] || check_fail "pod -> IPv6 ClusterIP UDP: $s"

case_ "dual-stack Service, IPv4 ClusterIP: the IPv4 slice's endpoints"
s=$(spread 12 in_pod 3 tcp 10.96.0.10 80)
info "  p3 -> 10.96.0.10:80 x12: $s (sources seen: $(spread_src))"
[[ $s =~ $BOTH ]] || check_fail "pod -> IPv4 ClusterIP of the dual-stack Service: $s"
assert_eq "$(spread_src)" "$P3" "source seen by the endpoints (pod -> IPv4 ClusterIP)"

case_ "--service-cluster-ip-range: weft's own route per range, pod-network gateway as source"
r6=$(ip -n "$(node_ns 3)" -6 -j route show proto 252 | jq -r --arg d "$RANGE6" '.[] | select(.dst == $d) | "\(.dev) \(.prefsrc)"')
r4=$(ip -n "$(node_ns 3)" -4 -j route show proto 252 | jq -r --arg d "$RANGE4" '.[] | select(.dst == $d) | "\(.dev) \(.prefsrc)"')
info "  node3: $RANGE6 -> '$r6', $RANGE4 -> '$r4'"
assert_eq "$r6" "eth0 $(gw6 3)" "node3's route to $RANGE6"
assert_eq "$r4" "eth0 $(gw4 3)" "node3's route to $RANGE4"

case_ "node -> IPv6 and IPv4 ClusterIP with only the option (no hand-added route)"
s=$(spread 12 in_node 3 tcp fd00:10:96::10 80)
info "  node3 -> [fd00:10:96::10]:80 x12: $s (sources seen: $(spread_src))"
[[ $s =~ $BOTH ]] || check_fail "node -> IPv6 ClusterIP: $s"
assert_eq "$(spread_src)" "$(gw6 3)" "source seen by the endpoints (node3 -> IPv6 ClusterIP)"
s=$(spread 12 in_node 3 tcp 10.96.0.10 80)
info "  node3 -> 10.96.0.10:80 x12: $s (sources seen: $(spread_src))"
[[ $s =~ $BOTH ]] || check_fail "node -> IPv4 ClusterIP: $s"
assert_eq "$(spread_src)" "$(gw4 3)" "source seen by the endpoints (node3 -> IPv4 ClusterIP)"
s=$(spread 6 in_node 1 udp fd00:10:96::10 53)
info "  node1 -> [fd00:10:96::10]:53/udp x6: $s"
[[ $s =~ ^p[12]\  ]] || check_fail "node1 -> IPv6 ClusterIP UDP: $s"

case_ "a Service route deleted by hand is put back"
ip -n "$(node_ns 1)" -6 route del "$RANGE6" proto 252
wait_for 5 sh -c "ip -n $(node_ns 1) -6 route show proto 252 $RANGE6 | grep -q 'src $(gw6 1)'" ||
	check_fail "node1 did not put its route to $RANGE6 back"

case_ "a Service route altered by hand (its source dropped) is replaced by the next resync"
ip -n "$(node_ns 1)" route replace "$RANGE4" dev eth0 proto 252
wait_for 5 sh -c "ip -n $(node_ns 1) route show proto 252 $RANGE4 | grep -q 'src $(gw4 1)'" ||
	check_fail "node1 did not restore the source of its route to $RANGE4"

case_ "a foreign route to a Service range is left alone"
r=$(ip -n "$(node_ns 2)" -4 -j route show "$RANGE4" | jq -r '.[] | "\(.protocol // "boot") \(.dev) \(.prefsrc // "-")"')
info "  node2: $RANGE4 -> $r"
assert_eq "$r" "boot eth0 -" "node2's own route to $RANGE4"
grep -q "route to $RANGE4 via - that weft did not install" "$(node_dir 2)/weftd.log" ||
	check_fail "node2 did not log the foreign route to $RANGE4"
r=$(ip -n "$(node_ns 2)" -6 -j route show proto 252 | jq -r --arg d "$RANGE6" '.[] | select(.dst == $d) | .prefsrc')
assert_eq "$r" "$(gw6 2)" "node2's route to $RANGE6 (the other range still goes in)"

case_ "NodePort over IPv6 from outside, masqueraded (externalTrafficPolicy Cluster)"
s=$(spread 10 outside tcp "$(ul6 11)" 30080)
info "  outside -> [$(ul6 11)]:30080 x10: $s (sources seen: $(spread_src))"
[[ $s =~ $BOTH ]] || check_fail "NodePort over IPv6: $s"
[[ " $(spread_src) " != *" $(ul6 200) "* ]] || check_fail "NodePort over IPv6 kept the client's source: $(spread_src)"
r=$(outside udp "$(ul6 12)" 30053)
info "  outside -> [$(ul6 12)]:30053/udp: $r"
[[ $r =~ ^p[12]\  && $r != *" $(ul6 200)" ]] || check_fail "NodePort UDP over IPv6: $r"

case_ "SingleStack IPv6 Service"
s=$(spread 6 in_pod 3 tcp fd00:10:96::20 80)
info "  p3 -> [fd00:10:96::20]:80 x6: $s"
[[ $s =~ ^p2\ 6$ ]] || check_fail "IPv6-only Service: $s"
s=$(spread 4 in_pod 1 tcp fd00:10:96::20 80)
info "  p1 -> [fd00:10:96::20]:80 x4: $s"
[[ $s =~ ^p2\ 4$ ]] || check_fail "IPv6-only Service from node1's pod: $s"

case_ "no IPv6 endpoints: IPv6 ClusterIP rejects (TCP reset, ICMPv6 unreachable), IPv4 one answers"
t0=$(date +%s%N)
r=$(in_pod 3 tcp fd00:10:96::30 80 6)
ms=$((($(date +%s%N) - t0) / 1000000))
info "  p3 -> [fd00:10:96::30]:80: $r (${ms} ms)"
assert_eq "$r" refused "Service without IPv6 endpoints (TCP over IPv6)"
# a reject, not the probe's 6 s timeout (1,748 ms seen at a load average of 20: python's start)
((ms < 4000)) || check_fail "the TCP reject took $ms ms"
t0=$(date +%s%N)
r=$(in_pod 3 udp fd00:10:96::30 53 6)
ms=$((($(date +%s%N) - t0) / 1000000))
info "  p3 -> [fd00:10:96::30]:53/udp: $r (${ms} ms)"
assert_eq "$r" refused "Service without IPv6 endpoints (UDP over IPv6)"
((ms < 4000)) || check_fail "the ICMPv6 reject took $ms ms"
r=$(in_node 3 tcp fd00:10:96::30 80 3)
info "  node3 -> [fd00:10:96::30]:80: $r"
assert_eq "$r" refused "Service without IPv6 endpoints, from the node"
r=$(in_pod 3 tcp 10.96.0.30 80 3)
info "  p3 -> 10.96.0.30:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "the IPv4 ClusterIP of the Service without IPv6 endpoints: $r"

for i in 1 2 3; do
	http_get "$i" /metrics >/dev/null
	f=$(awk '$1 == "weft_service_sync_failures_total" { print $2 }' <<<"$HTTP_BODY")
	[ "$f" = 0 ] || check_fail "node $i: failed Service syncs: ${f:-no metric}"
done

case_ "weftd uninstall removes the Service routes"
# svc_routes I: node I's routes (any protocol, any table, both families) to the two ranges
svc_routes() {
	{ ip -n "$(node_ns "$1")" -4 -j route show table all; ip -n "$(node_ns "$1")" -6 -j route show table all; } |
		jq -s --arg a "$RANGE4" --arg b "$RANGE6" '[.[][] | select(.dst == $a or .dst == $b)] | length'
}
weftd_stop 3
assert_eq "$(svc_routes 3)" 2 "Service routes on node3 after weftd stopped (they stay until uninstall)"
weftd_cmd 3 uninstall >"$T/uninstall.log" 2>&1 || check_fail "weftd uninstall failed: $(cat "$T/uninstall.log")"
assert_eq "$(svc_routes 3)" 0 "Service routes on node3 after weftd uninstall"

case_ "a Service range overlapping the underlay is refused"
rc=0
timeout 10 ip netns exec "$(node_ns 3)" "$WEFTD" --node-name node3 --iface eth0 --etcd-endpoints "$ETCD_URL" \
	--etcd-prefix "$ETCD_PREFIX" --listen 127.0.0.1:9877 --run-dir "$T/n3-overlap" --state-dir "$T/n3-overlap" \
	--cni-conf-dir "$T/n3-overlap" --service-cluster-ip-range 10.96.0.0/12 >"$T/overlap.log" 2>&1 || rc=$?
info "  weftd --service-cluster-ip-range 10.96.0.0/12: exit $rc, $(grep -o 'overlaps the underlay.*' "$T/overlap.log")"
assert_eq "$rc" 2 "weftd's exit code with a range overlapping the underlay"
assert_eq "$(svc_routes 3)" 0 "Service routes on node3 after the refused start"

info "$N_CASES cases, backend $BACKEND"
finish
