#!/usr/bin/env bash
# bgp with a router in the path (the cross-subnet case): two underlay segments joined by a router
# namespace running FRR (zebra + bgpd, AS 65000); BIRD on every node (AS 64600), started by the
# test and configured by weftd. Nodes on one segment mesh with each other; the router is their
# external peer and carries the subnets of the nodes beyond it. No encapsulation anywhere.
#
#   [pod1]-(node1 10.99.0.11)-+                         +-(node3 10.98.0.13)-[pod3]
#   [pod2]-(node2 10.99.0.12)-+- br0 -- (rt: FRR) -- br1 -+
#              etcd 10.99.0.2-+   10.99.0.1   10.98.0.1
#
# Checks: the router's kernel table has exactly one route per node subnet, via that node; nodes
# route their own segment directly and the other through the router; pod <-> pod across the
# router (ping, TCP keeping pod addresses); prefixes the router announces on its own (a node's
# subnet, one outside the cluster network, an unleased one inside it) are never installed on a
# node; node3 leaves: withdrawn from the router and the nodes within 10 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/weft-bgp-lib.sh"
require_root
require_cmd ip jq curl nft etcd etcdctl python3 ping bird birdc vtysh
require_built "$WEFTD"
if [ ! -x /usr/lib/frr/bgpd ] || [ ! -x /usr/lib/frr/zebra ]; then skip "needs FRR (/usr/lib/frr/bgpd, zebra)"; fi

node_ip() { if [ "$1" = 3 ]; then echo 10.98.0.13; else echo "$CLUSTER_UNDERLAY.$((10 + $1))"; fi; }
RT_A=$CLUSTER_UNDERLAY.1 RT_B=10.98.0.1
CLUSTER_EXTRA_BACKEND='"ASNumber": 64600, "Peers": [{"IP": "'$RT_A'", "ASNumber": 65000}, {"IP": "'$RT_B'", "ASNumber": 65000}]'
cluster_init 2 bgp

# second segment, the router, node3 on it
rt_two_segments "$RT_A" "$RT_B"
N3=$(mk_netns n3)
ip link add ul-n3 netns "$UL_NS" type veth peer name eth0 netns "$N3"
ip -n "$UL_NS" link set ul-n3 master br1 up
ip -n "$N3" addr add "$(node_ip 3)/24" dev eth0
ip -n "$N3" link set eth0 up
ip netns exec "$N3" sysctl -qw net.ipv4.ip_forward=1
mkdir -p "$(node_dir 3)"/{cni,run,state,bin}
CLUSTER_N=3
for i in 1 2; do ip -n "$(node_ns "$i")" route add default via "$RT_A"; done
ip -n "$N3" route add default via "$RT_B"
ip -n "$ETCD_NS" route add 10.98.0.0/24 via "$RT_A"

established() { birdc_ "$1" show protocols | grep -c ' BGP .*Established' || true; }
routes_bird() {
	ip -n "$(node_ns "$1")" -j route show proto bird | jq -r '.[] | "\(.dst) \(.gateway // "-") \(.dev)"' | sort
}
routes_router() { ip -n "$RT_NS" -j route show proto bgp | jq -r '.[] | "\(.dst) \(.gateway // "-") \(.dev)"' | sort; }
is() { [ "$("${@:2}")" = "$1" ]; }

on_exit bird_stop_all
for i in 1 2 3; do weftd_start "$i"; done
weftd_wait_ready 1 2 3
declare -A SUBNET
for i in 1 2 3; do SUBNET[$i]=$(node_subnet "$i"); done

# FRR on the router: zebra (kernel routes) and bgpd, own config, sockets and pid files. Besides the
# nodes' subnets it announces three prefixes of its own that no node may install: one overlapping
# node2's subnet, one outside the cluster network, one inside it that no lease holds.
F=$T/frr
# the upper half of node2's subnet (its pods are in the lower half: the router's own traffic to them is unaffected)
S2_HIGH=$(python3 -c 'import ipaddress,sys; print(list(ipaddress.ip_network(sys.argv[1]).subnets(1))[1])' "${SUBNET[2]}")
frr_dir "$F"
cat >"$F/bgpd.conf" <<EOC
frr defaults traditional
hostname rt
log file $F/bgpd.log
!
router bgp 65000
 bgp router-id $RT_A
 no bgp ebgp-requires-policy
 no bgp network import-check
 timers bgp 3 9
 neighbor $(node_ip 1) remote-as 64600
 neighbor $(node_ip 1) timers connect 5
 neighbor $(node_ip 2) remote-as 64600
 neighbor $(node_ip 2) timers connect 5
 neighbor $(node_ip 3) remote-as 64600
 neighbor $(node_ip 3) timers connect 5
 address-family ipv4 unicast
  network $S2_HIGH
  network 192.168.77.0/24
  network 10.244.250.0/24
 exit-address-family
!
EOC
frr_start "$RT_NS" "$F"
for i in 1 2 3; do
	wait_for 5 test -s "$(node_dir "$i")/run/bird.conf" || fail "node$i: weftd wrote no bird.conf"
	bird_start "$i"
done

# ---- sessions: node1-node2 mesh + router; node3 only the router
t0=$(date +%s%N)
for i in 1 2; do wait_for 40 is 2 established "$i" || check_fail "node$i: $(established "$i") of 2 sessions Established"; done
wait_for 40 is 1 established 3 || check_fail "node3: $(established 3) of 1 sessions Established"
expect_router() { local j; for j in 1 2 3; do echo "${SUBNET[$j]} $(node_ip "$j") eth$((j == 3 ? 1 : 0))"; done | sort; }
wait_for 30 is "$(expect_router)" routes_router || true
info "sessions and the router's routes in place after $((($(date +%s%N) - t0) / 1000000)) ms"
assert_eq "$(routes_router)" "$(expect_router)" "router: one route per node subnet, via that node"
info "the router's (FRR) kernel routes learned over BGP:"
ip -n "$RT_NS" route show proto bgp | sed 's/^/#   /'
info "vtysh: show ip route bgp"
ip netns exec "$RT_NS" vtysh --vty_socket "$F" -c "show ip route bgp" 2>&1 | grep -E '^B' | sed 's/^/#   /'

declare -A EXPECT
EXPECT[1]="$(printf '%s\n' "${SUBNET[2]} $(node_ip 2) eth0" "${SUBNET[3]} $RT_A eth0" | sort)"
EXPECT[2]="$(printf '%s\n' "${SUBNET[1]} $(node_ip 1) eth0" "${SUBNET[3]} $RT_A eth0" | sort)"
EXPECT[3]="$(printf '%s\n' "${SUBNET[1]} $RT_B eth0" "${SUBNET[2]} $RT_B eth0" | sort)"
for i in 1 2 3; do
	wait_for 10 is "${EXPECT[$i]}" routes_bird "$i" || true
	assert_eq "$(routes_bird "$i")" "${EXPECT[$i]}" "node$i routes (own segment direct, the other through the router)"
	assert_eq "$(ip -n "$(node_ns "$i")" -j link show | jq -r '[.[].ifname | select(startswith("weft"))] | join(",")')" "" \
		"node$i has no tunnel device"
done
# the router's own prefixes reached node1 and were refused there
for i in 1 3; do
	filtered=$(birdc_ "$i" show route filtered protocol "ext_$( ((i == 3)) && echo "${RT_B//./_}" || echo "${RT_A//./_}")" 2>/dev/null |
		grep -oE "^($S2_HIGH|192\.168\.77\.0/24|10\.244\.250\.0/24)" | sort | tr '\n' ' ')
	assert_eq "$filtered" "$(printf '%s\n' "$S2_HIGH" 10.244.250.0/24 192.168.77.0/24 | sort | tr '\n' ' ')" \
		"node$i received the router's own prefixes and refused them"
done

for i in 1 2 3; do pod_create "$i"; done
pods_ping_all 3
seen=$(seen_peer "$(pod_ns 3)" "$(pod_ip 3)" 8081 "$(pod_ns 1)")
assert_eq "$seen" "$(pod_ip 1)" "TCP pod1 -> pod3 across the router keeps the pod address"

# ---- node3 leaves (the node goes away: weftd releases its lease, its BIRD is shut down)
weftd_stop 3
kill -TERM "${BIRD_PID[3]}"
wait "${BIRD_PID[3]}" 2>/dev/null || true
BIRD_PID[3]=
t0=$(date +%s%N)
for i in 1 2; do
	wait_for 10 is "" bash -c "ip -n $(node_ns "$i") route show proto bird ${SUBNET[3]}" || check_fail "node$i still routes node3's subnet 10 s after it left"
done
wait_for 10 is "" bash -c "ip -n $RT_NS route show proto bgp ${SUBNET[3]}" || check_fail "the router still routes node3's subnet 10 s after it left"
info "node3 left: withdrawn on nodes 1-2 and the router in $((($(date +%s%N) - t0) / 1000000)) ms"
for i in 1 2; do weftd_stop "$i"; done
finish
