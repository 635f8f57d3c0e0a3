#!/usr/bin/env bash
# The restrictions a Service carries, and a refused batch that must not stop the others (issue 17:
# items 9, 10, 2 and weftd's own connections), with real traffic:
#
#   underlay 10.99.0.0/24 -- node1 (pod p1, server "p1")      etcd 10.99.0.2
#                         -- node2 (pod p2, server "p2")
#                         -- node3 (pod p3, a client)
#                         -- outside 10.99.0.200 (a host outside the cluster; it also holds
#                            10.96.0.10 and 10.96.5.5, so a packet for the Service range that leaves a
#                            node on the underlay is answered and counted there)
#
#   9  loadBalancerSourceRanges: the LB IP answers the outside host (inside the range), not node3
#      nor its pod (outside it); a changed list takes effect.
#   10 --service-cluster-ip-range 10.96.0.0/16: a ClusterIP on a port it does not define is refused
#      (TCP reset / ICMP) and an unallocated address dropped, from a pod (forward) and from the node
#      (output), and not one packet reaches the underlay.
#   4  a DNAT element for etcd's address:2379 put into svc-ips4 by hand takes a node's own curl to
#      the pods, but a weftd restarted under it still reaches etcd and programs new Services.
#   2  a set injected under the name of one Service's affinity set makes nftables refuse every batch
#      with that Service, a full one too: the Service is quarantined (counted, logged once), the
#      others written in the same transaction are programmed, later changes apply, a restart under
#      the conflict programs everyone else; once the set goes and the Service changes, it is
#      programmed.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
SVC=$TOP/test/netns/service/svc.py
RANGE=10.96.0.0/16

cluster_init 3 host-gw
for i in 1 2 3; do weftd_start "$i" --objects-datastore etcd --relist-interval 0 --service-cluster-ip-range "$RANGE" --service-external-ip-cidrs 10.250.0.0/24; done
weftd_wait_ready 1 2 3
for i in 1 2 3; do pod_create "$i"; done
P1=$(pod_ip 1) P2=$(pod_ip 2)
N1=$(node_ip 1)
SERVERS=()
kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_servers
for i in 1 2; do
	ip netns exec "$(pod_ns "$i")" python3 "$SVC" serve "p$i" >"$T/serve.$i" 2>&1 &
	SERVERS+=($!)
done
for i in 1 2; do wait_for 30 grep -q ready "$T/serve.$i" || fail "server p$i did not start: $(cat "$T/serve.$i")"; done

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
service_json() {
	echo "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"},\"spec\":$2,\"status\":${3:-{\}}}"
}
service() { put "services/shop/$1" "$(service_json "$@")"; }
endpoint() { echo "{\"addresses\":[\"$1\"],\"nodeName\":\"$2\",\"conditions\":{\"ready\":true}}"; }
slice_json() {
	echo "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\",\"labels\":{\"kubernetes.io/service-name\":\"$2\"}},\"addressType\":\"IPv4\",\"endpoints\":[$3],\"ports\":[$4]}"
}
slice() { put "endpointslices/shop/$1" "$(slice_json "$@")"; }
nft_in() { ip netns exec "$(node_ns "$1")" nft "${@:2}"; }
in_pod() { ip netns exec "$(pod_ns "$1")" python3 "$SVC" "${@:2}"; }
in_node() { ip netns exec "$(node_ns "$1")" python3 "$SVC" "${@:2}"; }
outside() { ip netns exec "$OUT_NS" python3 "$SVC" "$@"; }
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }

put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'
service web '{"clusterIP":"10.96.0.10","ports":[{"port":80,"targetPort":8080},{"name":"dns","port":53,"protocol":"UDP","targetPort":5353}]}'
slice web-1 web "$(endpoint "$P1" node1),$(endpoint "$P2" node2)" '{"port":8080},{"name":"dns","port":5353,"protocol":"UDP"}'
service lb '{"type":"LoadBalancer","clusterIP":"10.96.0.40","loadBalancerSourceRanges":["10.99.0.200/32"],"ports":[{"port":80,"targetPort":8080,"nodePort":30040}]}' \
	'{"loadBalancer":{"ingress":[{"ip":"10.250.0.40"}]}}'
slice lb-1 lb "$(endpoint "$P1" node1)" '{"port":8080}'
for i in 1 2 3; do
	wait_for 10 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-ips4 | grep -q '10.250.0.40 . tcp . 80'" ||
		fail "node$i: Services not programmed: $(tail -5 "$(node_dir "$i")/weftd.log")"
done

# ---- 9: loadBalancerSourceRanges ----
ip -n "$OUT_NS" route add 10.250.0.40 via "$N1"
ip -n "$(node_ns 3)" route add 10.250.0.40 via "$N1"
case_ "LB IP from inside loadBalancerSourceRanges (the outside host)"
r=$(outside tcp 10.250.0.40 80)
info "  outside -> 10.250.0.40:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "LB IP from an allowed source: $r"
case_ "LB IP from outside the ranges: node3 itself (output) and its pod (forward) are dropped"
r=$(in_node 3 tcp 10.250.0.40 80 2)
info "  node3 -> 10.250.0.40:80: $r"
assert_eq "$r" timeout "LB IP from node3 (not in loadBalancerSourceRanges)"
r=$(in_pod 3 tcp 10.250.0.40 80 2)
info "  p3 -> 10.250.0.40:80: $r"
assert_eq "$r" timeout "LB IP from pod p3 (not in loadBalancerSourceRanges)"
case_ "the ClusterIP and NodePort of that Service are not restricted"
r=$(in_pod 3 tcp 10.96.0.40 80)
[[ $r =~ ^p1\  ]] || check_fail "ClusterIP of a Service with source ranges: $r"
r=$(in_node 3 tcp "$N1" 30040)
[[ $r =~ ^p1\  ]] || check_fail "NodePort of a Service with source ranges: $r"
case_ "the ranges change: node3's network admitted"
service lb '{"type":"LoadBalancer","clusterIP":"10.96.0.40","loadBalancerSourceRanges":["10.99.0.0/24"],"ports":[{"port":80,"targetPort":8080,"nodePort":30040}]}' \
	'{"loadBalancer":{"ingress":[{"ip":"10.250.0.40"}]}}'
wait_for 10 sh -c "ip netns exec $(node_ns 3) nft list set inet weft svc-fw-allow4 | grep -q '10.99.0.0/24'" ||
	check_fail "node3: svc-fw-allow4 not updated: $(nft_in 3 list set inet weft svc-fw-allow4)"
r=$(in_node 3 tcp 10.250.0.40 80)
info "  node3 -> 10.250.0.40:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "LB IP from node3 after it was admitted: $r"

# ---- 10: the Service range ----
# the outside host holds a ClusterIP and an unallocated address of the range, and node3 sends the
# range there: on a node without the drop, the packets would leave on the underlay and be answered
ip -n "$OUT_NS" addr add 10.96.0.10/32 dev eth0
ip -n "$OUT_NS" addr add 10.96.5.5/32 dev eth0
ip netns exec "$OUT_NS" nft -f - <<'EOF'
table inet leak {
	counter seen { }
	chain in { type filter hook prerouting priority -300; ip daddr 10.96.0.0/16 counter name seen; }
}
EOF
leaked() { ip netns exec "$OUT_NS" nft -j list counter inet leak seen | jq '.nftables[] | select(.counter) | .counter.packets'; }
ip -n "$(node_ns 3)" route replace 10.96.0.0/16 via "$OUTSIDE_IP"
case_ "a defined port of a ClusterIP still works (pod and node)"
r=$(in_pod 3 tcp 10.96.0.10 80)
[[ $r =~ ^p[12]\  ]] || check_fail "ClusterIP defined port from a pod: $r"
r=$(in_node 3 tcp 10.96.0.10 80)
[[ $r =~ ^p[12]\  ]] || check_fail "ClusterIP defined port from the node: $r"
case_ "a port the ClusterIP does not define: refused at once (TCP reset, ICMP), pod and node"
r=$(in_pod 3 tcp 10.96.0.10 81 2)
info "  p3 -> 10.96.0.10:81: $r"
assert_eq "$r" refused "undefined TCP port from a pod"
r=$(in_pod 3 udp 10.96.0.10 54 2)
info "  p3 -> 10.96.0.10:54/udp: $r"
assert_eq "$r" refused "undefined UDP port from a pod"
r=$(in_node 3 tcp 10.96.0.10 81 2)
info "  node3 -> 10.96.0.10:81: $r"
assert_eq "$r" refused "undefined TCP port from the node"
case_ "an address of the range no Service holds: dropped on the node, pod and node"
r=$(in_pod 3 tcp 10.96.5.5 80 2)
info "  p3 -> 10.96.5.5:80: $r"
assert_eq "$r" timeout "unallocated ClusterIP from a pod"
r=$(in_node 3 tcp 10.96.5.5 80 2)
info "  node3 -> 10.96.5.5:80: $r"
assert_eq "$r" timeout "unallocated ClusterIP from the node"
case_ "nothing of the range reached the underlay"
n=$(leaked)
info "  packets for $RANGE seen by the outside host: $n"
assert_eq "$n" 0 "packets for the Service range leaked to the underlay"
ip -n "$(node_ns 3)" route del 10.96.0.0/16 via "$OUTSIDE_IP"

# ---- weftd's own connections ----
case_ "a DNAT element for etcd's address takes other clients but not weftd"
CHAIN=$(nft_in 1 list map inet weft svc-ips4 | grep -o '10.96.0.10 . tcp . 80 : goto [^ ,}]*' | awk '{ print $NF }')
[ -n "$CHAIN" ] || fail "no chain of shop/web on node1"
# what an externalIP of etcd's address did before the address policy: every node's own client
# and weftd's datastore connections to the pods
hijack() { nft_in 1 add element inet weft svc-ips4 "{ $ETCD_IP . tcp . 2379 : goto $CHAIN }"; }
hijack
r=$(in_node 1 tcp "$ETCD_IP" 2379 2)
info "  node1 (not weftd) -> $ETCD_IP:2379: $r"
[[ $r =~ ^p[12]\  ]] || check_fail "the injected element does not take node1's own traffic (the test proves nothing): $r"
weftd_stop 1
hijack 2>/dev/null || true
weftd_start 1 --objects-datastore etcd --relist-interval 0 --service-cluster-ip-range "$RANGE" --service-external-ip-cidrs 10.250.0.0/24
WAIT_TIMEOUT=20 weftd_wait_ready 1
service new '{"clusterIP":"10.96.0.77","ports":[{"port":80,"targetPort":8080}]}'
slice new-1 new "$(endpoint "$P2" node2)" '{"port":8080}'
wait_for 10 sh -c "ip netns exec $(node_ns 1) nft list map inet weft svc-ips4 | grep -q '10.96.0.77 . tcp . 80'" ||
	check_fail "node1 restarted under the hijack does not program new Services: $(tail -5 "$(node_dir 1)/weftd.log")"
grep -q "HTTP/0.9" "$(node_dir 1)/weftd.log" && check_fail "weftd talked to the pods instead of etcd"

# ---- 2: quarantine ----
case_ "a Service nftables refuses is quarantined; the others of the same transaction are programmed"
# node2 gets a set of its own under the name of shop/broken's affinity set, with another type: the
# Service's "add set" then fails with "File exists" in every batch, a full one too (the set is one
# the Service wants, so a full sync keeps it), as a duplicate of two Services did
AFF_SET="svc-shop/broken/tcp/80/ip4/ep/$P1/8080/aff3"
nft_in 2 add set inet weft "$AFF_SET" '{ type ipv6_addr; }'
BROKEN='{"clusterIP":"10.96.0.30","sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":3}},"ports":[{"port":80,"targetPort":8080}]}'
TAB=$'\t'
ip netns exec "$ETCD_NS" python3 "$TOP/test/netns/service/etcd-txn.py" "$ETCD_URL" >/dev/null <<EOF ||
$ETCD_PREFIX/objects/services/shop/broken$TAB$(service_json broken "$BROKEN")
$ETCD_PREFIX/objects/endpointslices/shop/broken-1$TAB$(slice_json broken-1 broken "$(endpoint "$P1" node1)" '{"port":8080}')
$ETCD_PREFIX/objects/services/shop/fine$TAB$(service_json fine '{"clusterIP":"10.96.0.31","ports":[{"port":80,"targetPort":8080}]}')
$ETCD_PREFIX/objects/endpointslices/shop/fine-1$TAB$(slice_json fine-1 fine "$(endpoint "$P1" node1)" '{"port":8080}')
EOF
	fail "etcd refused the transaction"
wait_for 10 sh -c "ip netns exec $(node_ns 2) nft list map inet weft svc-ips4 | grep -q '10.96.0.31 . tcp . 80'" ||
	check_fail "node2: a refused Service stopped the others: $(grep -i refused "$(node_dir 2)/weftd.log" | tail -3)"
r=$(in_node 2 tcp 10.96.0.31 80)
[[ $r =~ ^p1\  ]] || check_fail "node2: the Service next to the refused one does not answer: $r"
# quarantined NODE: "gauge counter" of node NODE
quarantined() {
	local m
	m=$(ip netns exec "$(node_ns "$1")" curl -s -m 2 http://127.0.0.1:9876/metrics)
	echo "$(awk '$1 == "weft_service_quarantined" { print $2 }' <<<"$m") $(awk '$1 == "weft_service_rejected_total{reason=\"nftables\"}" { print $2 }' <<<"$m")"
}
q=$(quarantined 2)
info "  node2: weft_service_quarantined, weft_service_rejected_total{reason=\"nftables\"}: $q"
assert_eq "$q" "1 1" "node2: quarantined Services and nftables refusals counted"
n=$(grep -c "nftables refused the objects of Service shop/broken" "$(node_dir 2)/weftd.log" || true)
assert_eq "$n" 1 "node2: the refusal logged once"
case_ "later changes of other Services keep syncing on that node"
service fine '{"clusterIP":"10.96.0.31","ports":[{"port":80,"targetPort":8080},{"name":"b","port":81,"targetPort":8080}]}'
# (port b has no endpoint port of its name: svc-noep4)
wait_for 10 sh -c "ip netns exec $(node_ns 2) nft list map inet weft svc-noep4 | grep -q '10.96.0.31 . tcp . 81'" ||
	check_fail "node2: a change after the quarantine was not applied"
for i in 1 3; do
	wait_for 10 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-ips4 | grep -q '10.96.0.30 . tcp . 80'" ||
		check_fail "node$i (no conflict): shop/broken not programmed"
done
case_ "a restart under the conflict: the full sync is narrowed, everyone else is programmed"
weftd_stop 2
weftd_start 2 --objects-datastore etcd --relist-interval 0 --service-cluster-ip-range "$RANGE" --service-external-ip-cidrs 10.250.0.0/24
weftd_wait_ready 2
wait_for 20 sh -c "ip netns exec $(node_ns 2) nft list map inet weft svc-noep4 | grep -q '10.96.0.31 . tcp . 81'" ||
	check_fail "node2 restarted: the full sync programmed nothing: $(grep -i refused "$(node_dir 2)/weftd.log" | tail -3)"
r=$(in_node 2 tcp 10.96.0.10 80)
[[ $r =~ ^p[12]\  ]] || check_fail "node2 restarted: shop/web does not answer: $r"
wait_for 5 sh -c "ip netns exec $(node_ns 2) curl -s http://127.0.0.1:9876/metrics | grep -q '^weft_service_quarantined 1$'" ||
	check_fail "node2 restarted: shop/broken not quarantined: $(quarantined 2)"
if nft_in 2 list map inet weft svc-ips4 | grep_q '10.96.0.30 . tcp . 80'; then
	check_fail "node2 restarted: the refused Service has an entry"
fi
case_ "the conflicting set gone, the Service's next change programs it"
# (the restarted weftd's full sync may have deleted it already: a svc-* set no programmed Service wants)
nft_in 2 delete set inet weft "$AFF_SET" 2>/dev/null || true
slice broken-1 broken "$(endpoint "$P1" node1),$(endpoint "$P2" node2)" '{"port":8080}'
wait_for 10 sh -c "ip netns exec $(node_ns 2) nft list map inet weft svc-ips4 | grep -q '10.96.0.30 . tcp . 80 : goto'" ||
	check_fail "node2: shop/broken not programmed after the conflict went"
r=$(in_node 2 tcp 10.96.0.30 80)
[[ $r =~ ^p[12]\  ]] || check_fail "node2: shop/broken does not answer: $r"
q=$(quarantined 2)
assert_eq "${q%% *}" 0 "node2: quarantined Services after the fix"

for i in 1 2 3; do weftd_alive "$i" || check_fail "weftd on node $i died"; done
info "$N_CASES cases"
finish
