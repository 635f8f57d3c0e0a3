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

lb_l2_cluster_case

info "case: externalTrafficPolicy Local: the node with the endpoint, and nobody once it goes"
lb_service loc 10.96.0.21 Local
lb_slice loc-1 loc true "$A"
wait_for 30 is 192.0.2.2 lb_ingress loc || fail "loc got no address: '$(lb_ingress loc)'"
wait_for 20 is "$(mac_of "$A")" answers 192.0.2.2 || check_fail "ARP for 192.0.2.2: '$(answers 192.0.2.2)', expected node$A's $(mac_of "$A")"
out=$(ip netns exec "$OUT_NS" python3 "$LB_SVC" tcp 192.0.2.2 80 1)
assert_eq "$out" "p$A $OUTSIDE_IP" "outside -> 192.0.2.2:80 (Local keeps the client's address)"
lb_slice loc-1 loc false "$A"
wait_for 10 is "" answers 192.0.2.2 || check_fail "192.0.2.2 still answered after its endpoint went: '$(answers 192.0.2.2)'"

lb_l2_kill_case "member lease"
member_left=$(etcdctl_ get --prefix --keys-only "$ETCD_PREFIX/loadbalancer/members/" | grep -c "node$O\$" || true)
assert_eq "$member_left" 0 "node$O's member key expired"

info "l2: takeover $TAKEOVER_MS ms after the kill, outside interruption $win ms ($nf connections failed)"
for i in $A $B; do weftd_stop "$i"; done
finish
