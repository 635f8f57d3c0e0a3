#!/usr/bin/env bash
# IPv6 LoadBalancer addresses announced over BGP (issue 21): the topology of test-weftd-lb-bgp.sh
# with IPv6 on both segments and the router, a dual-stack cluster (Network6), and an IPv6 pool.
# A dual-stack LoadBalancer Service (ipFamilies IPv4 + IPv6, RequireDualStack) gets an address of
# each family; every eligible node announces the IPv6 one as a /128 to the router over an ipv6
# channel of its IPv4 BGP session (MP-BGP), next hop its own underlay IPv6 address.
#
#   (node1 10.99.0.11 fd00:99::11)-+                                        [pods on node2, node3]
#   (node2 10.99.0.12 fd00:99::12)-+- br0 -- (rt: FRR, ECMP) -- br1 -- (ext 10.98.0.100 fd00:98::100)
#   (node3 10.99.0.13 fd00:99::13)-+   10.99.0.1 fd00:99::1  10.98.0.1 fd00:98::1
#
# Checks: externalTrafficPolicy Cluster: the router's IPv6 RIB has the /128 with ECMP over all three
# nodes' IPv6 addresses, and the outside host reaches the Service's IPv6 address over TCP; Local:
# only node2 (the one endpoint) announces it, and the outside host reaches it with its source kept;
# the last local endpoint going not-ready withdraws it (measured); the nodes never install the /128.
# The bgp backend routes IPv4 pod subnets only: the nodes' IPv6 pod subnets are routed by hand here
# (Cluster forwards to a pod on another node).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/weft-bgp-lib.sh"
. "$(dirname "$0")/../lib/weft-lb-lib.sh"
cluster_require
require_cmd bird birdc vtysh
if [ ! -x /usr/lib/frr/bgpd ] || [ ! -x /usr/lib/frr/zebra ]; then skip "needs FRR (/usr/lib/frr/bgpd, zebra)"; fi

RT_A=$CLUSTER_UNDERLAY.1 RT_B=10.98.0.1 EXT_IP=10.98.0.100
RT_A6=fd00:99::1 RT_B6=fd00:98::1 EXT_IP6=fd00:98::100
ul6() { echo "fd00:99::$((10 + $1))"; } # node I's underlay IPv6 address
CLUSTER_EXTRA_BACKEND='"ASNumber": 64600, "Peers": [{"IP": "'$RT_A'", "ASNumber": 65000}]'
CLUSTER_NETWORK6=fd00:10:244::/56
cluster_init 3 bgp --no-config
lb_config '[{"Name": "public", "CIDRs": ["192.0.2.0/28", "2001:db8:5::/124"]}]'

rt_two_segments "$RT_A" "$RT_B"
ip -n "$RT_NS" addr add "$RT_A6/64" dev eth0 nodad
ip -n "$RT_NS" addr add "$RT_B6/64" dev eth1 nodad
ip netns exec "$RT_NS" sysctl -qw net.ipv6.conf.all.forwarding=1
ip netns exec "$RT_NS" sysctl -qw net.ipv6.fib_multipath_hash_policy=1
ext_host "$EXT_IP" "$RT_B" "$EXT_IP6" "$RT_B6"
for i in 1 2 3; do
	ip -n "$(node_ns "$i")" addr add "$(ul6 "$i")/64" dev eth0 nodad
	ip netns exec "$(node_ns "$i")" sysctl -qw net.ipv6.conf.all.forwarding=1
	ip -n "$(node_ns "$i")" route add 10.98.0.0/24 via "$RT_A"
	ip -n "$(node_ns "$i")" -6 route add fd00:98::/64 via "$RT_A6"
done

on_exit bird_stop_all
[ -n "${KEEP_LOGS:-}" ] && on_exit "mkdir -p $KEEP_LOGS; cp -r $T/n1 $T/n2 $T/n3 $T/frr $KEEP_LOGS/"
for i in 1 2 3; do weftd_start "$i" --objects-datastore etcd --relist-interval 0; done
weftd_wait_ready 1 2 3

# FRR: as in test-weftd-lb-bgp.sh, and the nodes activated for IPv6 unicast on their IPv4 sessions
F=$T/frr
frr_dir "$F"
frr_lb_conf "$F" "$RT_A" 3 ipv6
frr_start "$RT_NS" "$F"
for i in 1 2 3; do
	wait_for 5 test -s "$(node_dir "$i")/run/bird.conf" || fail "node$i: weftd wrote no bird.conf"
	bird_start "$i"
done
vtysh_() { ip netns exec "$RT_NS" vtysh --vty_socket "$F" -c "$*"; }
# rib6 ADDR: the nodes (numbers) behind the active next hops of FRR's selected BGP route to
# ADDR/128, sorted, space-separated. BIRD gives the global next hop (`next hop address`) and, on a
# shared link, its link-local one, which FRR installs: both are mapped to their node.
ll6() { ip -n "$(node_ns "$1")" -j -6 addr show dev eth0 scope link | jq -r '.[0].addr_info[]?.local'; }
rib6() {
	local h i
	local -A node_of=()
	for i in 1 2 3; do
		node_of[$(ul6 "$i")]=$i
		for h in $(ll6 "$i"); do node_of[$h]=$i; done
	done
	for h in $(vtysh_ "show ipv6 route $1/128 json" 2>/dev/null |
		jq -r --arg p "$1/128" '.[$p][]? | select(.protocol == "bgp" and .selected) | .nexthops[] | select(.active) | .ip'); do
		echo "${node_of[$h]:-$h}"
	done | sort -u | tr '\n' ' ' | sed 's/ $//'
}
# bgp6 ADDR: the global next hops of FRR's BGP paths to ADDR/128 (what BIRD sent), sorted
bgp6() {
	vtysh_ "show bgp ipv6 unicast $1/128 json" 2>/dev/null |
		jq -r '.paths[]?.nexthops[]? | select(.scope == "global") | .ip' | sort | tr '\n' ' ' | sed 's/ $//'
}
is() { [ "$("${@:2}")" = "$1" ]; }
established() { vtysh_ "show bgp summary json" | jq '[.ipv4Unicast.peers[] | select(.state == "Established")] | length'; }
wait_for 60 is 3 established || fail "router: $(established) of 3 sessions Established"

ext_tcp() { ip netns exec "$EXT_NS" python3 "$LB_SVC" tcp "$1" 80 1; }

# pods on nodes 2 and 3 with an IPv6 address too (::a of the node's /64), servers on both families
net6() { python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)' "$(lease_var "$1" WEFT_SUBNET6)"; }
lb_servers 2 3
for i in 2 3; do
	[ -n "$(lease_var "$i" WEFT_SUBNET6)" ] || fail "node$i has no WEFT_SUBNET6 in its lease"
	ip -n "$(node_ns "$i")" addr add "$(lease_var "$i" WEFT_SUBNET6)" dev cni0 nodad
	ip -n "$(pod_ns "$i")" addr add "$(pod_ip6 "$i")/64" dev eth0 nodad
	ip -n "$(pod_ns "$i")" -6 route add default via "$(lease_var "$i" WEFT_SUBNET6 | cut -d/ -f1)"
	for j in 1 2 3; do
		[ "$j" = "$i" ] || ip -n "$(node_ns "$j")" -6 route add "$(net6 "$i")" via "$(ul6 "$i")"
	done
done
lb_put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'

# service6 NAME CLUSTER-IP-SUFFIX ETP: a dual-stack LoadBalancer Service on port 80 (target 8080)
service6() {
	lb_put "services/shop/$1" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"},\"spec\":{\"type\":\"LoadBalancer\",\"ipFamilyPolicy\":\"RequireDualStack\",\"ipFamilies\":[\"IPv4\",\"IPv6\"],\"clusterIP\":\"10.96.0.$2\",\"clusterIPs\":[\"10.96.0.$2\",\"fd00:10:96::$2\"],\"externalTrafficPolicy\":\"$3\",\"ports\":[{\"port\":80,\"targetPort\":8080}]}}"
}
info "case: externalTrafficPolicy Cluster: every node announces the /128, ECMP on the router"
service6 web 20 Cluster
lb_slice web-4 web true 2 3
lb_slice6 web-6 web true 2 3
# (IPv6 has no broadcast address: the pool's first address, 2001:db8:5::, is given out first)
wait_for 30 is 192.0.2.1,2001:db8:5:: lb_ingress web || fail "web's addresses: '$(lb_ingress web)'"
V6=2001:db8:5::
ALL6="1 2 3"
t0=$(date +%s%N)
wait_for 20 is "$ALL6" rib6 "$V6" || check_fail "router RIB for $V6: '$(rib6 "$V6")', expected '$ALL6'"
info "  in the router's IPv6 RIB $((($(date +%s%N) - t0) / 1000000)) ms after the address was written"
vtysh_ "show ipv6 route $V6/128" | grep -E '^(B|  )' | sed 's/^/#   /'
assert_eq "$(bgp6 "$V6")" "$(ul6 1) $(ul6 2) $(ul6 3)" "the global next hops the nodes sent for $V6"
wait_for 20 sh -c "ip netns exec $EXT_NS python3 $LB_SVC tcp $V6 80 1 | grep -q '^p[23] '" ||
	check_fail "ext -> [$V6]:80: $(ext_tcp "$V6")"
seen=$(for _ in $(seq 30); do ext_tcp "$V6" | cut -d' ' -f1; done | sort -u | tr '\n' ' ')
info "  answered by: $seen"
out=$(ext_tcp 192.0.2.1)
[[ $out == p[23]\ * ]] || check_fail "ext -> 192.0.2.1:80 (the IPv4 address of the same Service): $out"
for i in 1 2 3; do
	grep_q 'weft_lb6' "$(node_dir "$i")/run/bird.conf" || check_fail "node$i: no weft_lb6 in bird.conf"
	assert_eq "$(ip -n "$(node_ns "$i")" -6 route show "$V6" proto bird)" "" "node$i installed $V6 from BGP"
done

info "case: externalTrafficPolicy Local: only the node with the endpoint announces the /128"
V6L=2001:db8:5::1
service6 loc 21 Local
lb_slice loc-4 loc true 2
lb_slice6 loc-6 loc true 2
wait_for 30 is 192.0.2.2,2001:db8:5::1 lb_ingress loc || fail "loc's addresses: '$(lb_ingress loc)'"
wait_for 20 is 2 rib6 "$V6L" || check_fail "router RIB for $V6L: '$(rib6 "$V6L")', expected node2 only"
sleep 1 # nodes 1 and 3 had time to announce it, if they would
assert_eq "$(rib6 "$V6L")" 2 "Local: the router has node2 only"
assert_eq "$(ext_tcp "$V6L")" "p2 $EXT_IP6" "ext -> [$V6L]:80 (Local keeps the client's address)"

info "case: the last local endpoint goes: the /128 is withdrawn"
t0=$(date +%s%N)
lb_slice6 loc-6 loc false 2
lb_slice loc-4 loc false 2
wait_for 10 is "" ip -n "$RT_NS" -6 route show "$V6L" proto bgp || check_fail "$V6L still in the router's table 10 s after its endpoint went"
WITHDRAW_MS=$((($(date +%s%N) - t0) / 1000000))
assert_eq "$(rib6 "$V6L")" "" "$V6L in the router's RIB"
info "  withdrawn from the router's table $WITHDRAW_MS ms after the EndpointSlice writes began"
((WITHDRAW_MS < 3000 * WEFT_TEST_SLACK)) || check_fail "withdraw took $WITHDRAW_MS ms from the write (budget 3000)"
assert_eq "$(rib6 "$V6")" "$ALL6" "web's /128 untouched"

info "bgp6: Cluster ECMP over 3 nodes ($seen); Local on node2 only; withdrawn in $WITHDRAW_MS ms"
for i in 1 2 3; do weftd_stop "$i"; done
finish
