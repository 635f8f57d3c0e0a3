#!/usr/bin/env bash
# loadBalancerSourceRanges (issue 17, item 9) in Kubernetes mode: the Service comes from the API
# server (the fixture, test/kube/fake-apiserver.py, which accepts the object as kube-apiserver
# would), leases from etcd (--objects-datastore kubernetes):
#
#   underlay 10.99.0.0/24 -- node1 (pod p1, server "p1")
#                         -- node2 (a client outside the range, through its own output hook)
#                         -- 10.99.0.2: etcd and the fixture (a client outside the range, through
#                            node1's prerouting)
#                         -- outside 10.99.0.200 (the one source inside the range)
#
# The LB IP 10.250.0.40 answers the outside host only; after the list is widened to the underlay,
# node2 gets through too; the ClusterIP stays unrestricted.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
require_cmd curl jq python3
SVC=$TOP/test/netns/service/svc.py
FIXTURE=$TOP/test/kube/fake-apiserver.py
API_URL=http://$ETCD_IP:6443
TOKEN=weft-restrict-token
KUBECONFIG_FILE=$T/kubeconfig

cluster_init 2 host-gw
ip netns exec "$ETCD_NS" python3 "$FIXTURE" --bind "$ETCD_IP" --port 6443 --token "$TOKEN" >>"$T/fixture.log" 2>&1 &
FIXTURE_PID=$!
on_exit "kill $FIXTURE_PID 2>/dev/null; wait $FIXTURE_PID 2>/dev/null"
wait_listen "$ETCD_NS" 6443 || fail "fake-apiserver did not come up: $(cat "$T/fixture.log")"
cluster_kubeconfig "$KUBECONFIG_FILE" "$API_URL" "$TOKEN"
api() { ip netns exec "$ETCD_NS" curl -s -m 5 -X "$1" -H "Authorization: Bearer $TOKEN" "${@:3}" "$API_URL$2"; }

for i in 1 2; do
	weftd_start "$i" --objects-datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --relist-interval 0 \
		--service-cluster-ip-range 10.96.0.0/16 --service-external-ip-cidrs 10.250.0.0/24
done
weftd_wait_ready 1 2
pod_create 1
P1=$(pod_ip 1) N1=$(node_ip 1)
ip netns exec "$(pod_ns 1)" python3 "$SVC" serve p1 >"$T/serve.1" 2>&1 &
SERVER=$!
on_exit "kill $SERVER 2>/dev/null"
wait_for 30 grep -q ready "$T/serve.1" || fail "server p1 did not start: $(cat "$T/serve.1")"

# apply RANGES-JSON-ARRAY: the Service (with its LB status) and its EndpointSlice
apply() {
	api POST /fixture/apply -H 'Content-Type: application/json' -d '{"apiVersion":"v1","kind":"List","items":[
	{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}},
	{"apiVersion":"v1","kind":"Service","metadata":{"namespace":"shop","name":"lb"},
	 "spec":{"type":"LoadBalancer","clusterIP":"10.96.0.40","loadBalancerSourceRanges":'"$1"',
		 "ports":[{"port":80,"targetPort":8080,"nodePort":30040}]},
	 "status":{"loadBalancer":{"ingress":[{"ip":"10.250.0.40"}]}}},
	{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",
	 "metadata":{"namespace":"shop","name":"lb-1","labels":{"kubernetes.io/service-name":"lb"}},
	 "addressType":"IPv4","ports":[{"port":8080}],
	 "endpoints":[{"addresses":["'"$P1"'"],"nodeName":"node1","conditions":{"ready":true}}]}]}' >"$T/apply.json"
	jq -e '.applied | length == 3' "$T/apply.json" >/dev/null || fail "fixture refused the objects: $(cat "$T/apply.json")"
}
apply '["10.99.0.200/32"]'
for i in 1 2; do
	wait_for 15 sh -c "ip netns exec $(node_ns "$i") nft list set inet weft svc-fw-allow4 2>/dev/null | grep -q '10.99.0.200'" ||
		fail "node$i: the source ranges are not programmed: $(tail -5 "$(node_dir "$i")/weftd.log")"
done
in_node() { ip netns exec "$(node_ns "$1")" python3 "$SVC" "${@:2}"; }
ip -n "$OUT_NS" route add 10.250.0.40 via "$N1"
ip -n "$ETCD_NS" route add 10.250.0.40 via "$N1"
ip -n "$(node_ns 2)" route add 10.250.0.40 via "$N1"

info "case: the outside host, inside loadBalancerSourceRanges, reaches the LB IP"
r=$(ip netns exec "$OUT_NS" python3 "$SVC" tcp 10.250.0.40 80)
info "  outside -> 10.250.0.40:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "LB IP from an allowed source: $r"
info "case: sources outside the ranges are dropped (node1's prerouting, node2's output)"
r=$(ip netns exec "$ETCD_NS" python3 "$SVC" tcp 10.250.0.40 80 2)
info "  10.99.0.2 -> 10.250.0.40:80: $r"
assert_eq "$r" timeout "LB IP from 10.99.0.2 (not in loadBalancerSourceRanges)"
r=$(in_node 2 tcp 10.250.0.40 80 2)
info "  node2 -> 10.250.0.40:80: $r"
assert_eq "$r" timeout "LB IP from node2 (not in loadBalancerSourceRanges)"
r=$(in_node 1 tcp 10.96.0.40 80) # node1: the Service-range route needs a pod gateway
[[ $r =~ ^p1\  ]] || check_fail "the ClusterIP of a Service with source ranges: $r"
info "case: the list widened to the underlay: node2 gets through"
apply '["10.99.0.0/24"]'
wait_for 15 sh -c "ip netns exec $(node_ns 2) nft list set inet weft svc-fw-allow4 | grep -q '10.99.0.0/24'" ||
	check_fail "node2: the widened ranges are not programmed"
r=$(in_node 2 tcp 10.250.0.40 80)
info "  node2 -> 10.250.0.40:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "LB IP from node2 once admitted: $r"
finish
