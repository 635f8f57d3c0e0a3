#!/usr/bin/env bash
# LoadBalancer addresses announced on the segment (L2, issue 21): three host-gw nodes and a host
# outside the cluster on the same underlay; weftd assigns from the pool 192.0.2.0/28 and, for
# each address, exactly one live eligible node (rendezvous hashing) answers ARP for it with its
# underlay MAC.
#
#   (node1 10.99.0.11)-+
#   (node2 10.99.0.12)-+- br0 -- (outside 10.99.0.200: route 192.0.2.0/28 dev eth0, ARPs for it)
#   (node3 10.99.0.13)-+
#    etcd 10.99.0.2 ---+
#
# Checks: every node holds a member key; Cluster: exactly one node answers ARP for the address
# (probed from the outside), the one whose metric says it announces it, and the outside host is
# served; Local: the owner is the node with the endpoint, and when that endpoint goes nobody
# answers; the owner dies (off the network, weftd killed with -9): another node takes over when
# the dead node's member lease expires (measured; budget the 6 s TTL + 2 s),
# its gratuitous ARP moves the outside's neighbour entry to its MAC, and the outside host's
# interruption is measured.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/weft-lb-lib.sh"
cluster_require
SVC=$TOP/test/netns/service/svc.py
PROBE=$TOP/test/netns/service/arp-probe.py

cluster_init 3 host-gw --no-config
lb_config '[{"Name": "public", "CIDRs": ["192.0.2.0/28"]}]'
for i in 1 2 3; do weftd_start "$i" --objects-datastore etcd --relist-interval 0; done
weftd_wait_ready 1 2 3
ip -n "$OUT_NS" route add 192.0.2.0/28 dev eth0

is() { [ "$("${@:2}")" = "$1" ]; }

lb_servers 1 2 3
lb_put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'

info "case: member keys"
wait_for 10 is 3 bash -c "ip netns exec $ETCD_NS etcdctl --endpoints $ETCD_URL get --prefix --keys-only $ETCD_PREFIX/loadbalancer/members/ | grep -c ." ||
	check_fail "member keys: $(etcdctl_ get --prefix --keys-only "$ETCD_PREFIX/loadbalancer/members/")"
assert_eq "$(etcdctl_ get --prefix --keys-only "$ETCD_PREFIX/loadbalancer/members/" | grep . | sed 's|.*/||' | sort | tr '\n' ' ')" "node1 node2 node3 " "member keys"

info "case: externalTrafficPolicy Cluster: exactly one node answers ARP"
lb_service web 10.96.0.20 Cluster
wait_for 30 is 192.0.2.1 lb_ingress web || fail "web got no address: '$(lb_ingress web)'"
t0=$(date +%s%N)
wait_for 20 sh -c "[ -n \"\$(ip netns exec $OUT_NS python3 $PROBE eth0 $OUTSIDE_IP 192.0.2.1 0.2)\" ]" || check_fail "nobody answers ARP for 192.0.2.1"
info "  answered $((($(date +%s%N) - t0) / 1000000)) ms after the address was written"
O=$(owners 1 2 3)
[ "$(wc -w <<<"$O")" = 1 ] || fail "expected exactly one L2 announcer, got '$O'"
macs=$(answers 192.0.2.1)
assert_eq "$macs" "$(mac_of "$O")" "the MACs answering ARP for 192.0.2.1 (node$O's is $(mac_of "$O"))"
info "  node$O answers ($macs)"
# endpoints on the other two nodes, so the owner's death is a pure L2 failover
A='' B=''
for i in 1 2 3; do
	[ "$i" = "$O" ] && continue
	if [ -z "$A" ]; then A=$i; else B=$i; fi
done
lb_slice web-1 web true "$A" "$B"
wait_for 20 sh -c "ip netns exec $OUT_NS python3 $SVC tcp 192.0.2.1 80 1 | grep -q '^p[$A$B] '" ||
	check_fail "outside -> 192.0.2.1:80: $(ip netns exec "$OUT_NS" python3 "$SVC" tcp 192.0.2.1 80 1)"
assert_eq "$(out_neigh)" "$(mac_of "$O")" "outside's neighbour entry for 192.0.2.1"

info "case: externalTrafficPolicy Local: the node with the endpoint, and nobody once it goes"
lb_service loc 10.96.0.21 Local
lb_slice loc-1 loc true "$A"
wait_for 30 is 192.0.2.2 lb_ingress loc || fail "loc got no address: '$(lb_ingress loc)'"
wait_for 20 is "$(mac_of "$A")" answers 192.0.2.2 || check_fail "ARP for 192.0.2.2: '$(answers 192.0.2.2)', expected node$A's $(mac_of "$A")"
out=$(ip netns exec "$OUT_NS" python3 "$SVC" tcp 192.0.2.2 80 1)
assert_eq "$out" "p$A $OUTSIDE_IP" "outside -> 192.0.2.2:80 (Local keeps the client's address)"
lb_slice loc-1 loc false "$A"
wait_for 10 is "" answers 192.0.2.2 || check_fail "192.0.2.2 still answered after its endpoint went: '$(answers 192.0.2.2)'"

info "case: the announcer dies (off the network, weftd killed with -9): another node takes over"
ip netns exec "$OUT_NS" python3 "$SVC" loop 192.0.2.1 80 14 >"$T/loop" &
LOOP=$!
sleep 1.5
ip -n "$(node_ns "$O")" link set eth0 down
weftd_stop "$O" KILL
t0=$(date +%s%N)
wait_for 15 sh -c "[ -n \"\$(cd $T && grep -l '192.0.2.1 taken over from node$O' n$A/weftd.log n$B/weftd.log)\" ]" ||
	check_fail "nobody took 192.0.2.1 over from node$O"
TAKEOVER_MS=$((($(date +%s%N) - t0) / 1000000))
N=$(owners "$A" "$B")
[ "$(wc -w <<<"$N")" = 1 ] || check_fail "expected one new announcer, got '$N'"
info "  node$N took over $TAKEOVER_MS ms after the kill (member lease TTL 6 s)"
# the dead node's lease ends at most 6 s after the kill (its last keepalive was before it); etcd
# sweeps expired leases every 500 ms, the others list every 250 ms, this loop polls a log
((TAKEOVER_MS < (6000 + 2000) * WEFT_TEST_SLACK)) || check_fail "takeover took $TAKEOVER_MS ms (TTL 6 s + 2 s)"
wait_for 3 is "$(mac_of "$N")" out_neigh || check_fail "outside's neighbour entry: '$(out_neigh)', expected node$N's $(mac_of "$N")"
garp=$(weftd_metric "$N" 'weft_loadbalancer_l2_packets_total{type="gratuitous_arp"}')
((garp > 0)) || check_fail "node$N sent no gratuitous ARP"
assert_eq "$(weftd_metric "$N" weft_loadbalancer_failovers_total)" 1 "node$N failovers_total"
ts=$(weftd_metric "$N" weft_loadbalancer_last_failover_timestamp_seconds)
python3 -c "import sys,time; sys.exit(0 if abs(time.time() - float(sys.argv[1])) < 60 else 1)" "$ts" ||
	check_fail "last failover timestamp $ts"
wait "$LOOP" || true
read -r nf win < <(loop_outage "$T/loop")
info "  outside: $(wc -l <"$T/loop") connections, $nf failed, interruption $win ms"
tail -3 "$T/loop" | grep_q -v " p[$A$B] " && check_fail "still failing at the end: $(tail -3 "$T/loop")"
assert_eq "$(answers 192.0.2.1)" "$(mac_of "$N")" "after the takeover only node$N answers"
member_left=$(etcdctl_ get --prefix --keys-only "$ETCD_PREFIX/loadbalancer/members/" | grep -c "node$O\$" || true)
assert_eq "$member_left" 0 "node$O's member key expired"

info "l2: takeover $TAKEOVER_MS ms after the kill, outside interruption $win ms ($nf connections failed)"
for i in $A $B; do weftd_stop "$i"; done
finish
