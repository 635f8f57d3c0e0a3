#!/usr/bin/env bash
# weft-test: serial
# L2 announcement of LoadBalancer addresses in Kubernetes mode (issue 21): three weftd
# --datastore kubernetes against the fake API server, each holding a coordination.k8s.io/v1 Lease
# kube-system/weft-member-<node> (label weft.dev/lb-member=true, leaseDurationSeconds 6) and
# listing the others'; for each address exactly one live node answers ARP on the segment, and an
# outside host reaches the Service.
#
#   underlay 10.99.0.0/24 -- fake-apiserver https://10.99.0.2:6443 (in the etcd namespace)
#                         -- node1, node2, node3 (weftd)
#                         -- outside 10.99.0.200 (route 192.0.2.0/28 dev eth0, ARPs for it)
#
# Checks: every node holds its member Lease, kubectl shows them; exactly one node answers ARP for
# the address, the one whose metric says it announces it, and the outside host is served; the
# announcer dies (off the network, weftd killed with -9): another takes over once the dead node's
# member Lease has not changed for 6 s by its own clock (measured; budget 6 s + 2 s), the outside's
# neighbour entry moves, the interruption is measured; a node stopped cleanly empties its Lease.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/weft-lb-lib.sh"
. "$(dirname "$0")/../lib/kube-fixture-lib.sh"

require_root
require_cmd ip jq curl python3 kubectl openssl
require_built "$WEFTD"

API_IP=$ETCD_IP
API_URL=https://$API_IP:6443
TOKEN=weft-lb-l2-kube-token
NET_CONF=$T/net-conf.json
LEASES=/apis/coordination.k8s.io/v1/namespaces/kube-system/leases

cluster_init 3 host-gw --no-etcd
fixture_start_ns "$ETCD_NS" "$API_IP" "$TOKEN" \
	--node node1=10.244.1.0/24 --node node2=10.244.2.0/24 --node node3=10.244.3.0/24
cat >"$NET_CONF" <<EOC
{"Network": "10.244.0.0/16", "SubnetLen": 24, "Backend": {"Type": "host-gw"},
 "LoadBalancer": {"Pools": [{"Name": "public", "CIDRs": ["192.0.2.0/28"]}], "Announce": "l2"}}
EOC
api() { # api METHOD PATH [CURL ARGS...]
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -sS -m 10 --cacert "$T/apiserver.crt" -X "$m" -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' "$@" "$API_URL$p"
}
kubectl_() { ip netns exec "$ETCD_NS" kubectl --kubeconfig "$T/kubeconfig" --request-timeout 10s "$@"; }
lb_use_kube api
lb_put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'
for i in 1 2 3; do
	weftd_start "$i" --datastore kubernetes --kubeconfig "$T/kubeconfig" --net-config "$NET_CONF" \
		--relist-interval 0 --service-cluster-ip-range 10.96.0.0/16
done
weftd_wait_ready 1 2 3
ip -n "$OUT_NS" route add 192.0.2.0/28 dev eth0

is() { [ "$("${@:2}")" = "$1" ]; }
# the holders of the member Leases that are held, as "node1 node2 ..."
members() {
	api GET "$LEASES?labelSelector=weft.dev%2Flb-member%3Dtrue" |
		jq -r '[.items[] | select(.spec.holderIdentity // "" != "") | .spec.holderIdentity] | sort | join(" ")'
}

lb_servers 1 2 3

info "case: member Leases"
wait_for 15 is "node1 node2 node3" members || check_fail "member Leases held: '$(members)'"
lease=$(api GET "$LEASES/weft-member-node1")
assert_eq "$(jq -r .spec.leaseDurationSeconds <<<"$lease")" 6 "member Lease leaseDurationSeconds"
assert_eq "$(jq -r '.metadata.labels["weft.dev/lb-member"]' <<<"$lease")" true "member Lease label"
out=$(kubectl_ get lease -n kube-system -l weft.dev/lb-member=true 2>&1) || check_fail "kubectl get lease: $out"
while IFS= read -r line; do info "    $line"; done <<<"$out"
for i in 1 2 3; do
	grep_q -E "^weft-member-node$i +node$i " <<<"$out" || check_fail "kubectl: weft-member-node$i"
done

lb_l2_cluster_case

lb_l2_kill_case "member Lease"
# the dead node's record last changed at its last renewal (every 2 s) before the kill: the others
# drop it 6 s after they saw that change, so no sooner than 4 s after the kill
((TAKEOVER_MS >= 3000)) || check_fail "takeover after $TAKEOVER_MS ms: before node$O's Lease could expire"
# the dead node's Lease stays (nobody deletes it), held by node$O: kubectl still lists it
assert_eq "$(members)" "node$A node$B node$O" "member Leases after the kill (node$O's left as it was)"

info "case: a clean stop empties the member Lease; the other takes over at once"
weftd_stop "$N"
holder_of() { api GET "$LEASES/weft-member-node$1" | jq -r '.spec.holderIdentity // ""'; }
assert_eq "$(holder_of "$N")" "" "node$N's member Lease holder after a clean stop"
S=$A
[ "$N" = "$A" ] && S=$B
t0=$(date +%s%N)
wait_for 5 is "$(mac_of "$S")" answers 192.0.2.1 || check_fail "after node$N stopped: '$(answers 192.0.2.1)', expected node$S"
info "  node$S answers $((($(date +%s%N) - t0) / 1000000)) ms after node$N stopped"

info "l2 (Kubernetes): takeover $TAKEOVER_MS ms after the kill, outside interruption $win ms ($nf connections failed)"
weftd_stop "$S"
finish
