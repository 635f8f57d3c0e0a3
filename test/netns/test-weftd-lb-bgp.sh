#!/usr/bin/env bash
# LoadBalancer addresses announced over BGP (issue 21): three bgp nodes (BIRD, AS 64600) peer with
# a router (FRR, AS 65000) that has a second segment with a host outside the cluster. weftd assigns
# LoadBalancer addresses from the pool 192.0.2.0/28 and every eligible node announces them to the
# router as /32s; the outside host reaches them through the router.
#
#   (node1 10.99.0.11)-+                            [pod2 on node2, pod3 on node3; none on node1]
#   (node2 10.99.0.12)-+- br0 -- (rt: FRR, ECMP) -- br1 -- (ext 10.98.0.100)
#   (node3 10.99.0.13)-+   10.99.0.1      10.98.0.1
#    etcd 10.99.0.2 ---+
#
# Checks: externalTrafficPolicy Cluster: the router's RIB (vtysh) has the address with ECMP over
# all three nodes, and the outside host reaches the Service; Local: only node2 (the one endpoint)
# announces, the outside host reaches it with its source kept; the last local endpoint going
# not-ready withdraws it from the router (measured: < 2 s from the etcd write, BGP included); nodes
# never install each other's LB routes; weftd killed with -9 on an announcing node: BIRD and the
# rules keep serving (interruption measured); then the node dies (off the network, BIRD gone): the
# router drops it from ECMP after its hold time (3 s here; interruption measured).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/weft-bgp-lib.sh"
. "$(dirname "$0")/../lib/weft-lb-lib.sh"
cluster_require
require_cmd bird birdc vtysh
if [ ! -x /usr/lib/frr/bgpd ] || [ ! -x /usr/lib/frr/zebra ]; then skip "needs FRR (/usr/lib/frr/bgpd, zebra)"; fi
SVC=$TOP/test/netns/service/svc.py

RT_A=$CLUSTER_UNDERLAY.1 RT_B=10.98.0.1 EXT_IP=10.98.0.100
CLUSTER_EXTRA_BACKEND='"ASNumber": 64600, "Peers": [{"IP": "'$RT_A'", "ASNumber": 65000}]'
cluster_init 3 bgp --no-config
lb_config '[{"Name": "public", "CIDRs": ["192.0.2.0/28"]}]'

# the router and the outside segment
rt_two_segments "$RT_A" "$RT_B"
# ECMP by flow (addresses and ports): new connections of one client spread over the nodes
ip netns exec "$RT_NS" sysctl -qw net.ipv4.fib_multipath_hash_policy=1
ext_host "$EXT_IP" "$RT_B"
for i in 1 2 3; do ip -n "$(node_ns "$i")" route add 10.98.0.0/24 via "$RT_A"; done

on_exit bird_stop_all
# KEEP_LOGS=DIR: the nodes' logs and configs, FRR's and the connection loops' kept there
[ -n "${KEEP_LOGS:-}" ] && on_exit "mkdir -p $KEEP_LOGS; cp -r $T/n1 $T/n2 $T/n3 $T/frr $T/loop* $KEEP_LOGS/"
for i in 1 2 3; do weftd_start "$i" --objects-datastore etcd --relist-interval 0; done
weftd_wait_ready 1 2 3

# FRR: zebra + bgpd (frr_lb_conf says how it is set up)
F=$T/frr
frr_dir "$F"
frr_lb_conf "$F" "$RT_A" 3
frr_start "$RT_NS" "$F"
for i in 1 2 3; do
	wait_for 5 test -s "$(node_dir "$i")/run/bird.conf" || fail "node$i: weftd wrote no bird.conf"
	bird_start "$i"
done
vtysh_() { ip netns exec "$RT_NS" vtysh --vty_socket "$F" -c "$*"; }
# rib ADDR: the active next hops of FRR's selected BGP route to ADDR/32, sorted, space-separated
rib() {
	vtysh_ "show ip route $1/32 json" 2>/dev/null |
		jq -r --arg p "$1/32" '.[$p][]? | select(.protocol == "bgp" and .selected) | .nexthops[] | select(.active) | .ip' |
		sort | tr '\n' ' ' | sed 's/ $//'
}
is() { [ "$("${@:2}")" = "$1" ]; }
established() { vtysh_ "show bgp summary json" | jq '[.ipv4Unicast.peers[] | select(.state == "Established")] | length'; }
wait_for 60 is 3 established || fail "router: $(established) of 3 sessions Established"

ext_tcp() { ip netns exec "$EXT_NS" python3 "$SVC" tcp "$1" 80 1; }

lb_servers 2 3
lb_put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'

info "case: externalTrafficPolicy Cluster: every node announces, ECMP on the router"
lb_service web 10.96.0.20 Cluster
lb_slice web-1 web true 2 3
wait_for 30 is 192.0.2.1 lb_ingress web || fail "web got no address: '$(lb_ingress web)'"
ALL="$(node_ip 1) $(node_ip 2) $(node_ip 3)"
t0=$(date +%s%N)
wait_for 20 is "$ALL" rib 192.0.2.1 || check_fail "router RIB for 192.0.2.1: '$(rib 192.0.2.1)', expected '$ALL'"
info "  in the router's RIB $((($(date +%s%N) - t0) / 1000000)) ms after the address was written"
vtysh_ "show ip route 192.0.2.1/32" | grep -E '^(B|  )' | sed 's/^/#   /'
wait_for 20 sh -c "ip netns exec $EXT_NS python3 $SVC tcp 192.0.2.1 80 1 | grep -q '^p[23] '" ||
	check_fail "ext -> 192.0.2.1:80: $(ext_tcp 192.0.2.1)"
seen=$(for _ in $(seq 30); do ext_tcp 192.0.2.1 | cut -d' ' -f1; done | sort -u | tr '\n' ' ')
info "  answered by: $seen"
for i in 1 2 3; do
	assert_eq "$(weftd_metric "$i" 'weft_loadbalancer_announcements{mode="bgp"}')" 1 "node$i bgp announcements"
	# the address never reaches a node's kernel from BGP (the router gives it back: refused)
	assert_eq "$(ip -n "$(node_ns "$i")" route show 192.0.2.1 proto bird)" "" "node$i installed 192.0.2.1 from BGP"
done

info "case: externalTrafficPolicy Local: only the node with the endpoint"
lb_service loc 10.96.0.21 Local
lb_slice loc-1 loc true 2
wait_for 30 is 192.0.2.2 lb_ingress loc || fail "loc got no address: '$(lb_ingress loc)'"
wait_for 20 is "$(node_ip 2)" rib 192.0.2.2 || check_fail "router RIB for 192.0.2.2: '$(rib 192.0.2.2)', expected node2 only"
sleep 1 # nodes 1 and 3 had time to announce it, if they would
assert_eq "$(rib 192.0.2.2)" "$(node_ip 2)" "Local: the router has node2 only"
out=$(ext_tcp 192.0.2.2)
assert_eq "$out" "p2 $EXT_IP" "ext -> 192.0.2.2:80 (Local keeps the client's address)"

info "case: the last local endpoint goes: withdrawn"
# timed in three steps: weftd decides (its log), BIRD drops the route, the router's RIB loses it
bird_has() { birdc_ "$1" show route "$2/32" protocol weft_lb | grep_q "^$2/32"; }
bird_has 2 192.0.2.2 || check_fail "node2's BIRD does not have 192.0.2.2 in weft_lb"
bird_has 1 192.0.2.2 && check_fail "node1's BIRD has 192.0.2.2 (no endpoint there)"
t0=$(date +%s%N)
lb_slice loc-1 loc false 2
tw=$(date +%s%N) # the write is in etcd (etcdctl returned)
wait_for 10 grep -q 'LoadBalancer: withdrawing 192.0.2.2 (bgp)' "$(node_dir 2)/weftd.log" || check_fail "node2 did not log the withdrawal"
t1=$(date +%s%N)
wait_for 10 bash -c "! birdc -s $(node_dir 2)/run/bird.ctl show route 192.0.2.2/32 protocol weft_lb | grep -q '^192.0.2.2/32'" ||
	check_fail "node2's BIRD still has 192.0.2.2"
t2=$(date +%s%N)
# polled in the router's kernel table (zebra installs FRR's RIB there; one cheap ip call, where
# a vtysh call takes hundreds of ms on a loaded machine), then confirmed in the RIB
wait_for 10 is "" ip -n "$RT_NS" route show 192.0.2.2 proto bgp || check_fail "192.0.2.2 still in the router's table 10 s after its endpoint went"
t3=$(date +%s%N)
assert_eq "$(rib 192.0.2.2)" "" "192.0.2.2 in the router's RIB"
WITHDRAW_MS=$(((t3 - t0) / 1000000)) WEFTD_MS=$(((t1 - tw) / 1000000)) ROUTER_MS=$(((t3 - t1) / 1000000))
info "  withdrawn from the router's RIB $WITHDRAW_MS ms after the EndpointSlice write began: etcdctl $(((tw - t0) / 1000000)) ms, weftd decided within $WEFTD_MS ms of it, BIRD within $(((t2 - t1) / 1000000)) ms more, the router's table $(((t3 - t2) / 1000000)) ms after that"
# the issue: withdrawn within a second of the change reaching weftd. That is bench/'s figure
# (bench/loadbalancer.sh); here, with the machine busy (1053 ms seen at a load average of 17),
# three times that
((ROUTER_MS < 3000 * WEFT_TEST_SLACK)) || check_fail "from weftd's decision to the router took $ROUTER_MS ms (budget $((3000 * WEFT_TEST_SLACK)))"
((WITHDRAW_MS < 8000 * WEFT_TEST_SLACK)) || check_fail "withdraw took $WITHDRAW_MS ms from the write (budget $((8000 * WEFT_TEST_SLACK)))"
lb_slice loc-1 loc true 2
wait_for 10 is "$(node_ip 2)" rib 192.0.2.2 || check_fail "192.0.2.2 not announced again: '$(rib 192.0.2.2)'"

info "case: weftd on node1 killed with -9: BIRD and the rules keep serving"
ip netns exec "$EXT_NS" python3 "$SVC" loop 192.0.2.1 80 6 >"$T/loop1" &
LOOP=$!
sleep 1.5
weftd_stop 1 KILL
wait "$LOOP" || true
read -r n1 w1 < <(loop_outage "$T/loop1")
info "  $(wc -l <"$T/loop1") connections, $n1 failed, window $w1 ms"
assert_eq "$(rib 192.0.2.1)" "$ALL" "router keeps node1 (its BIRD still runs)"
[ "$n1" = 0 ] || check_fail "$n1 connections failed while only weftd was down"

info "case: node1 dies (off the network, its BIRD gone): the router drops it from ECMP after its hold time"
ip netns exec "$EXT_NS" python3 "$SVC" loop 192.0.2.1 80 10 >"$T/loop2" &
LOOP=$!
sleep 1.5
t0=$(date +%s%N)
ip -n "$(node_ns 1)" link set eth0 down
bird_kill 1
wait_for 15 is "$(node_ip 2) $(node_ip 3)" rib 192.0.2.1 || check_fail "router RIB after node1 died: '$(rib 192.0.2.1)'"
DROP_MS=$((($(date +%s%N) - t0) / 1000000))
wait "$LOOP" || true
read -r n2 w2 < <(loop_outage "$T/loop2")
info "  router dropped node1 after $DROP_MS ms; $(wc -l <"$T/loop2") connections, $n2 failed, window $w2 ms"
tail -3 "$T/loop2" | grep_q -v ' p[23] ' && check_fail "still failing at the end: $(tail -3 "$T/loop2")"
out=$(ext_tcp 192.0.2.1)
[[ $out == p[23]\ * ]] || check_fail "ext -> 192.0.2.1 after node1 died: $out"

info "bgp: Cluster ECMP over 3 nodes; Local withdraw $WITHDRAW_MS ms (weftd $WEFTD_MS, to the router's RIB $ROUTER_MS); weftd -9: $n1 failed; node death: dropped in $DROP_MS ms, $n2 connections failed over $w2 ms"
for i in 2 3; do weftd_stop "$i"; done
finish
