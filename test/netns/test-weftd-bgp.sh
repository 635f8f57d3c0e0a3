#!/usr/bin/env bash
# The bgp backend: 3 nodes on one underlay, BIRD 2 on every node (started by the test, configured
# by weftd through its control socket), a full iBGP mesh, one pod per node.
#
#   [pod1]--cni0--(node1: weftd + bird)--eth0 -+                  +- eth0--(node3: weftd + bird)--[pod3]
#                                             br0 (underlay 10.99.0.0/24)
#   [pod2]--cni0--(node2: weftd + bird)--eth0 -+-- etcd 10.99.0.2
#
# Checks: BGP sessions Established between every pair (birdc and weftd's /metrics); each node's
# kernel has one route per remote subnet via that node, protocol bird, and no encapsulation
# device; pod <-> pod ping and TCP; a hostile node3 (its BIRD reconfigured by hand to announce
# node1's subnet, part of node2's, a prefix outside the cluster network and an unleased one
# inside it) gets none of them installed anywhere, while its own subnet stays; BIRD killed on
# node2: weftd reports it down, the routes stay and pod traffic keeps flowing (graceful restart),
# BIRD back: sessions up again; node3 leaves: its route is withdrawn everywhere within 10 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/weft-bgp-lib.sh"
require_root
require_cmd ip jq curl nft etcd etcdctl python3 ping bird birdc
require_built "$WEFTD"

established() { birdc_ "$1" show protocols | grep -c ' BGP .*Established' || true; }
routes_bird() { # routes_bird I -> "dst gw dev" lines of BIRD-installed routes (protocol bird = 12)
	ip -n "$(node_ns "$1")" -j route show proto bird | jq -r '.[] | "\(.dst) \(.gateway // "-") \(.dev)"' | sort
}
metric() { http_get "$1" /metrics; sed -n "s/^$2 //p" <<<"$HTTP_BODY"; }
# is VALUE CMD...: CMD's output equals VALUE (evaluated anew on every call: for wait_for)
is() { [ "$("${@:2}")" = "$1" ]; }

CLUSTER_EXTRA_BACKEND='"ASNumber": 64600'
cluster_init 3 bgp
on_exit bird_stop_all
weftd_start 1
weftd_start 2 --keep-lease # restarted below: its lease and announcements must survive that
weftd_start 3
weftd_wait_ready 1 2 3
for i in 1 2 3; do
	wait_for 5 test -s "$(node_dir "$i")/run/bird.conf" || fail "node$i: weftd wrote no bird.conf"
	bird_start "$i"
done
declare -A SUBNET
for i in 1 2 3; do SUBNET[$i]=$(node_subnet "$i"); done

# ---- sessions: every pair
t0=$(date +%s%N)
for i in 1 2 3; do
	wait_for 30 is 2 established "$i" || check_fail "node$i: $(established "$i") of 2 BGP sessions Established"
done
info "full mesh Established after $((($(date +%s%N) - t0) / 1000000)) ms"
for i in 1 2 3; do
	assert_eq "$(lease_var "$i" WEFT_MTU)" 1500 "node$i MTU (no encapsulation)"
	grep -q "local $(node_ip "$i") as 64600;" "$(node_dir "$i")/run/bird.conf" || check_fail "node$i bird.conf lacks AS 64600"
	wait_for 10 is 2 metric "$i" 'weft_bgp_sessions{state="established"}' ||
		check_fail "node$i /metrics: weft_bgp_sessions established is $(metric "$i" 'weft_bgp_sessions{state="established"}')"
	assert_eq "$(metric "$i" weft_bird_up)" 1 "node$i weft_bird_up"
done

# ---- routes: one per remote subnet, via that node, on the underlay, installed by BIRD
expect_routes() { # expect_routes I NODES...: the routes node I must have
	local j
	for j in "${@:2}"; do echo "${SUBNET[$j]} $(node_ip "$j") eth0"; done | sort
}
for i in 1 2 3; do
	others=()
	for j in 1 2 3; do [ "$i" = "$j" ] || others+=("$j"); done
	wait_for 10 is "$(expect_routes "$i" "${others[@]}")" routes_bird "$i" || true
	assert_eq "$(routes_bird "$i")" "$(expect_routes "$i" "${others[@]}")" "node$i BGP routes"
	assert_eq "$(routes_weft "$i")" "" "node$i has no weft-protocol routes (BIRD owns them)"
done
info "node1's kernel routes learned over BGP:"
ip -n "$(node_ns 1)" route show proto bird | sed 's/^/#   /'

for i in 1 2 3; do pod_create "$i"; done
pods_ping_all 3
seen=$(seen_peer "$(pod_ns 2)" "$(pod_ip 2)" 8081 "$(pod_ns 1)")
assert_eq "$seen" "$(pod_ip 1)" "TCP pod1 -> pod2 keeps the pod address"

# throughput (reported, not asserted: the machine is shared); should match host-gw, no encapsulation
if command -v iperf3 >/dev/null; then
	ip netns exec "$(pod_ns 2)" iperf3 -s -1 -D -p 5201 >/dev/null 2>&1
	wait_listen "$(pod_ns 2)" 5201
	bps=$(ip netns exec "$(pod_ns 1)" iperf3 -c "$(pod_ip 2)" -p 5201 -t 3 -J 2>/dev/null | jq -r '.end.sum_received.bits_per_second // 0')
	info "bgp backend pod1 -> pod2 TCP throughput: $(awk -v b="$bps" 'BEGIN { printf "%.0f Mbit/s", b / 1e6 }')"
fi

# ---- hostile announcements from node3
s2_half=$(python3 -c 'import ipaddress,sys; print(list(ipaddress.ip_network(sys.argv[1]).subnets(1))[1])' "${SUBNET[2]}")
d3=$(node_dir 3)
python3 -c '
import sys
extra = "".join("\troute %s blackhole;\n" % p for p in sys.argv[2:])
print(open(sys.argv[1]).read().replace("protocol static weft_self {\n", "protocol static weft_self {\n" + extra, 1), end="")' \
	"$d3/run/bird.conf" "${SUBNET[1]}" "$s2_half" 192.168.77.0/24 10.244.250.0/24 >"$d3/hostile.conf"
grep -q "route 192.168.77.0/24" "$d3/hostile.conf" || fail "could not build the hostile config"
birdc_ 3 configure \""$d3/hostile.conf"\" >/dev/null || fail "node3's BIRD refused the hostile config"
filtered_count() { birdc_ "$1" show route filtered protocol "$2" count | grep -o '^[0-9]* of' | cut -d' ' -f1; }
# node1 and node2 receive the 4 hostile prefixes (kept as filtered) besides node3's own
for i in 1 2; do
	p3=node_$(node_ip 3 | tr . _)
	wait_for 10 is 4 filtered_count "$i" "$p3" ||
		check_fail "node$i: expected 4 filtered routes from node3, got: $(birdc_ "$i" show route filtered protocol "$p3" count | tail -1)"
done
for i in 1 2; do
	others=()
	for j in 1 2 3; do [ "$i" = "$j" ] || others+=("$j"); done
	assert_eq "$(routes_bird "$i")" "$(expect_routes "$i" "${others[@]}")" "node$i installed nothing hostile"
done
assert_ping "$(pod_ns 1)" "$(pod_ip 2)" # node2's subnet still goes to node2, not to node3
birdc_ 3 configure \""$d3/run/bird.conf"\" >/dev/null

# ---- graceful restart: BIRD killed on node2
bird_kill 2
wait_for 5 is 0 metric 2 weft_bird_up || check_fail "node2 /metrics: weft_bird_up not 0 with BIRD down"
ip netns exec "$(pod_ns 1)" ping -c 20 -i 0.2 -W 1 "$(pod_ip 2)" >"$T/gr-ping" 2>&1
lost=$(sed -n 's/.* \([0-9]*\)% packet loss.*/\1/p' "$T/gr-ping")
info "pod1 -> pod2 during node2's BIRD outage: ${lost:-?}% loss over 4 s"
assert_eq "$lost" 0 "pod traffic keeps flowing while node2's BIRD is down"
assert_eq "$(routes_bird 1 | grep -c "^${SUBNET[2]} ")" 1 "node1 keeps node2's route (stale, graceful restart)"
bird_start 2
wait_for 30 is 2 established 2 || check_fail "node2: sessions not back after BIRD restart"
assert_eq "$(metric 2 weft_bird_up)" 1 "node2 weft_bird_up after restart"

# ---- graceful restart: weftd restarted on node2 (BIRD keeps running; weftd must not withdraw or
# re-render node2's announcements from a partial view while it starts again)
ip netns exec "$(pod_ns 1)" ping -c 60 -i 0.1 -W 1 "$(pod_ip 2)" >"$T/wr-ping" 2>&1 &
ping_pid=$!
weftd_stop 2
weftd_start 2 --keep-lease
weftd_wait_ready 2
wait "$ping_pid" || true
lost=$(sed -n 's/.* \([0-9]*\)% packet loss.*/\1/p' "$T/wr-ping")
info "pod1 -> pod2 while node2's weftd restarted: ${lost:-?}% loss over 6 s"
assert_eq "$lost" 0 "pod traffic keeps flowing while node2's weftd restarts"
assert_eq "$(node_subnet 2)" "${SUBNET[2]}" "node2 keeps its subnet across the weftd restart"
assert_eq "$(routes_bird 1 | grep -c "^${SUBNET[2]} ")" 1 "node1 still routes node2's subnet after node2's weftd restart"
wait_for 10 is 2 established 2 || check_fail "node2: $(established 2) of 2 sessions after its weftd restart"

route_bird_to() { routes_bird "$1" | grep "^$2 " || true; }
# ---- node3 leaves
weftd_stop 3
t0=$(date +%s%N)
for i in 1 2; do
	wait_for 10 is "" route_bird_to "$i" "${SUBNET[3]}" || check_fail "node$i still routes node3's subnet 10 s after it left"
done
info "node3 left: its route withdrawn on nodes 1-2 in $((($(date +%s%N) - t0) / 1000000)) ms"

for i in 1 2; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status after SIGTERM"
done
finish
