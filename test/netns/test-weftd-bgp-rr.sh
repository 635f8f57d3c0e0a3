#!/usr/bin/env bash
# The bgp backend with a route reflector: node1 is named in Backend.RouteReflectors, BIRD 2 on every
# node (started by the test, configured by weftd through its control socket), one pod per node.
#
#   [pod1]--cni0--(node1: weftd + bird, reflector)--eth0 -+
#   [pod2]--cni0--(node2: weftd + bird, client)----eth0 -+- br0 (underlay 10.99.0.0/24) -- etcd 10.99.0.2
#   [pod3]--cni0--(node3: weftd + bird, client)----eth0 -+
#                 (node4: joins later, then leaves)  eth0 -+
#
# Checks: sessions only to the reflector (node1: one per client; clients: exactly one, to node1),
# in birdc and /metrics; every node's subnet routed everywhere, next hop the owning node (not the
# reflector); pod <-> pod ping; node4 joins -> routed everywhere; a hostile reflector (its BIRD
# reconfigured by hand to announce node2's subnet, part of node3's, a prefix outside the cluster
# network and an unleased one) gets none of them installed on the clients (node2's subnet is only
# withdrawn while it lasts: the reflector's own route hides the reflected one); BIRD down on a client:
# /healthz stays 200, /healthz?verbose and /metrics say BIRD is down; node4 stops (releases its
# lease): its own BIRD no longer announces its subnet, withdrawn everywhere within 10 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/weft-bgp-lib.sh"
require_root
require_cmd ip jq curl nft etcd etcdctl python3 ping bird birdc
require_built "$WEFTD"

# established I -> the names of node I's Established BGP sessions, sorted
established() { birdc_ "$1" show protocols | awk '$2 == "BGP" && /Established/ { print $1 }' | sort | tr '\n' ' '; }
proto_of() { echo "node_$(node_ip "$1" | tr . _)"; }
routes_bird() { # routes_bird I -> "dst gw dev" lines of BIRD-installed routes
	ip -n "$(node_ns "$1")" -j route show proto bird | jq -r '.[] | "\(.dst) \(.gateway // "-") \(.dev)"' | sort
}
metric() { http_get "$1" /metrics; sed -n "s/^$2 //p" <<<"$HTTP_BODY"; }
is() { [ "$("${@:2}")" = "$1" ]; }

CLUSTER_EXTRA_BACKEND='"ASNumber": 64600, "RouteReflectors": ["node1"]'
cluster_init 3 bgp
cluster_add_node 4
on_exit bird_stop_all
for i in 1 2 3; do weftd_start "$i"; done
weftd_wait_ready 1 2 3
node_up() {
	wait_for 5 test -s "$(node_dir "$1")/run/bird.conf" || fail "node$1: weftd wrote no bird.conf"
	bird_start "$1"
	SUBNET[$1]=$(node_subnet "$1")
}
declare -A SUBNET
for i in 1 2 3; do node_up "$i"; done

# ---- sessions: to the reflector only
t0=$(date +%s%N)
wait_for 30 is "$(proto_of 2) $(proto_of 3) " established 1 ||
	check_fail "node1 (reflector) sessions: '$(established 1)'"
for i in 2 3; do
	wait_for 30 is "$(proto_of 1) " established "$i" || check_fail "node$i (client) sessions: '$(established "$i")'"
	grep -q "rr client;" "$(node_dir "$i")/run/bird.conf" && check_fail "node$i (client) reflects"
done
assert_eq "$(grep -c 'rr client;' "$(node_dir 1)/run/bird.conf")" 2 "node1's bird.conf: 2 route reflector clients"
info "sessions to the reflector Established after $((($(date +%s%N) - t0) / 1000000)) ms"
wait_for 10 is 2 metric 1 'weft_bgp_sessions{state="established"}' || check_fail "node1 /metrics: 2 sessions established"
for i in 2 3; do
	wait_for 10 is 1 metric "$i" 'weft_bgp_sessions{state="established"}' ||
		check_fail "node$i /metrics: $(metric "$i" 'weft_bgp_sessions{state="established"}') sessions established, expected 1"
done

# ---- routes: every remote subnet, next hop its own node (reflected, not through node1)
expect_routes() { # expect_routes I NODES...
	local j
	for j in "${@:2}"; do [ "$j" = "$1" ] || echo "${SUBNET[$j]} $(node_ip "$j") eth0"; done | sort
}
check_routes() { # check_routes NODES...: every one of them routes every other one
	local i
	for i in "$@"; do
		wait_for 10 is "$(expect_routes "$i" "$@")" routes_bird "$i" || true
		assert_eq "$(routes_bird "$i")" "$(expect_routes "$i" "$@")" "node$i BGP routes"
	done
}
check_routes 1 2 3
info "node2's kernel routes (node3's reflected by node1):"
ip -n "$(node_ns 2)" route show proto bird | sed 's/^/#   /'
for i in 1 2 3; do pod_create "$i"; done
assert_ping "$(pod_ns 2)" "$(pod_ip 3)"
assert_ping "$(pod_ns 3)" "$(pod_ip 1)"

# ---- node4 joins: routed everywhere through the reflector
t0=$(date +%s%N)
weftd_start 4
weftd_wait_ready 4
node_up 4
check_routes 1 2 3 4
info "node4 joined: routed on every node $((($(date +%s%N) - t0) / 1000000)) ms after its weftd started"
wait_for 10 is "$(proto_of 1) " established 4 || check_fail "node4 sessions: '$(established 4)'"
pod_create 4
assert_ping "$(pod_ns 2)" "$(pod_ip 4)"

# ---- a hostile reflector: node1 announces others' subnets, a foreign and an unleased prefix
s3_half=$(python3 -c 'import ipaddress,sys; print(list(ipaddress.ip_network(sys.argv[1]).subnets(1))[1])' "${SUBNET[3]}")
d1=$(node_dir 1)
python3 -c '
import sys
extra = "".join("\troute %s blackhole;\n" % p for p in sys.argv[2:])
print(open(sys.argv[1]).read().replace("protocol static weft_self {\n", "protocol static weft_self {\n" + extra, 1), end="")' \
	"$d1/run/bird.conf" "${SUBNET[2]}" "$s3_half" 192.168.77.0/24 10.244.250.0/24 >"$d1/hostile.conf"
grep -q "route 192.168.77.0/24" "$d1/hostile.conf" || fail "could not build the hostile config"
birdc_ 1 configure \""$d1/hostile.conf"\" >/dev/null || fail "node1's BIRD refused the hostile config"
filtered_count() { birdc_ "$1" show route filtered protocol "$2" count | grep -o '^[0-9]* of' | cut -d' ' -f1; }
for i in 3 4; do
	wait_for 10 is 4 filtered_count "$i" "$(proto_of 1)" ||
		check_fail "node$i: expected 4 filtered routes from the reflector, got: $(birdc_ "$i" show route filtered protocol "$(proto_of 1)" count | tail -1)"
done
# The reflector's own (static) route to node2's subnet now beats the one it reflected, so the
# clients lose that route: a reflector can withdraw (it is in every client's path for routes) but
# never redirect. Nothing hostile is installed.
for i in 3 4; do
	wait_for 10 is "$(expect_routes "$i" 1 3 4)" routes_bird "$i" || true
	assert_eq "$(routes_bird "$i")" "$(expect_routes "$i" 1 3 4)" "node$i installed nothing from the hostile reflector"
done
birdc_ 1 configure \""$d1/run/bird.conf"\" >/dev/null
check_routes 1 2 3 4
assert_ping "$(pod_ns 3)" "$(pod_ip 2)"

# ---- BIRD down on a client: weftd stays healthy, says so in /healthz?verbose and /metrics
bird_kill 3
wait_for 5 is 0 metric 3 weft_bird_up || check_fail "node3 /metrics: weft_bird_up not 0 with BIRD down"
http_get 3 /healthz
assert_eq "$HTTP_CODE" 200 "node3 /healthz with BIRD down (BIRD is not weftd's to restart)"
http_get 3 '/healthz?verbose'
grep -q '^\[-\]bird' <<<"$HTTP_BODY" || check_fail "node3 /healthz?verbose does not report BIRD down: $HTTP_BODY"
bird_start 3
wait_for 30 is "$(proto_of 1) " established 3 || check_fail "node3: session not back after BIRD restart"
http_get 3 '/healthz?verbose'
if ! grep -q '^\[+\]bird' <<<"$HTTP_BODY" || ! grep -q '^bgp sessions: 1 of 1 established' <<<"$HTTP_BODY"; then
	check_fail "node3 /healthz?verbose after BIRD restart: $HTTP_BODY"
fi

# ---- node4 leaves (lease released): its BIRD withdraws its subnet, gone everywhere within 10 s
route_bird_to() { routes_bird "$1" | grep "^$2 " || true; }
t0=$(date +%s%N)
weftd_stop 4
assert_eq "$WEFTD_RC" 0 "node4 exit status after SIGTERM"
assert_eq "$(birdc_ 4 show route protocol weft_self | grep -c blackhole || true)" 0 "node4's BIRD no longer holds its subnet"
grep -q "route ${SUBNET[4]} blackhole" "$(node_dir 4)/run/bird.conf" && check_fail "node4's bird.conf still announces ${SUBNET[4]}"
for i in 1 2 3; do
	wait_for 10 is "" route_bird_to "$i" "${SUBNET[4]}" || check_fail "node$i still routes node4's subnet 10 s after it left"
done
info "node4 left: its route withdrawn on nodes 1-3 in $((($(date +%s%N) - t0) / 1000000)) ms"
check_routes 1 2 3

for i in 1 2 3; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status after SIGTERM"
done
finish
