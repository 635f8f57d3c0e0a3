#!/usr/bin/env bash
# weftd must not trust the Kubernetes datastore blindly (issue 7, item 7): the checks of the etcd
# reproductions (test-weftd-hostile-leases.sh) on the podCIDRs and weft.dev/* annotations of other
# Nodes, served by test/kube/fake-apiserver.py. vxlan, 3 nodes, the issue's addresses:
#
#   underlay br0 10.250.100.0/24 -- node1..3 (.11-.13, podCIDRs 10.250.129-131.0/24)
#                                 -- fake-apiserver 10.250.100.2:6443 (where etcd would be)
#
#   - a Node whose podCIDR is the underlay's /24 is refused everywhere; the connected route stays
#   - a /25 podCIDR inside node2's /24 is refused; node2's neighbour and route stay
#   - two Nodes with one podCIDR: the older creationTimestamp wins on every node, equal ones by name
#   - a loopback public-ip, a multicast vtep-mac, an unreadable podCIDR are refused
#   - a Node with a 200-character name is programmed (it used to be skipped past 63)
#   - the periodic resync lists the Nodes again (--relist-interval)
#   - node2's weft.dev annotations removed by hand: node2 publishes them again at once
# shellcheck disable=SC2317 # helpers are called through wait_for
CLUSTER_UNDERLAY=10.250.100
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
require_root
require_cmd ip bridge jq curl python3
[ -x "$WEFTD" ] || skip "weftd not built ($WEFTD)"
require_kind vxlan
CLUSTER_NETWORK=10.250.128.0/17
FIXTURE=$TOP/test/kube/fake-apiserver.py
API_URL=http://$ETCD_IP:6443
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json

cluster_init 3 vxlan --no-etcd
# KEEP_LOGS=DIR: keep the weftd logs there (the test directory is removed at exit)
[ -z "${KEEP_LOGS:-}" ] || on_exit "mkdir -p '$KEEP_LOGS'; (for n in 1 2 3; do cp '$T'/n\$n/weftd.log '$KEEP_LOGS'/weftd-n\$n.log; done)"
ip netns exec "$ETCD_NS" python3 "$FIXTURE" --bind "$ETCD_IP" --port 6443 \
	--node node1=10.250.129.0/24 --node node2=10.250.130.0/24 --node node3=10.250.131.0/24 >"$T/fixture.log" 2>&1 &
FIXTURE_PID=$!
on_exit "kill $FIXTURE_PID; wait $FIXTURE_PID"
api() { # api METHOD PATH [CURL ARGS...]
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -s -m 3 -X "$m" "$@" "$API_URL$p"
}
wait_for 30 api GET /version || { cat "$T/fixture.log" >&2; fail "fake-apiserver did not come up"; }
cat >"$KUBECONFIG_FILE" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$API_URL"}
contexts:
- name: t
  context: {cluster: test, user: weft}
current-context: t
users:
- name: weft
  user: {token: unused}
EOK
cluster_config_json >"$NET_CONF"

for i in 1 2 3; do
	weftd_start "$i" --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF" \
		--resync-interval 1s --relist-interval 1s
done
weftd_wait_ready 1 2 3
two_each() { local i; for i in 1 2 3; do [ "$(routes_weft "$i" | wc -l)" = 2 ] || return 1; done; }
wait_for 10 two_each || fail "cluster not programmed: $(routes_weft 1 | tr '\n' ';')"
mac2=$(vtep_mac 2)

# node NAME CREATED PODCIDR PUBLIC-IP MAC: a Node as the fixture takes it (full object)
node() {
	local ann
	ann=$(jq -nc --arg ip "$4" --arg mac "$5" '{"weft.dev/public-ip": $ip, "weft.dev/backend-type": "vxlan", "weft.dev/vtep-mac": $mac}')
	api POST /fixture/nodes -d "$(jq -nc --arg n "$1" --arg c "$2" --arg p "$3" --argjson a "$ann" \
		'{metadata: {name: $n, creationTimestamp: $c, annotations: $a}, spec: {podCIDRs: [$p], podCIDR: $p}}')" >/dev/null
}
rejected() {
	http_get "$1" /metrics
	sed -n "s/^weft_leases_rejected_total{reason=\"$2\"} //p" <<<"$HTTP_BODY"
}
rejected_on() {
	local r=$1 i v
	shift
	for i in "$@"; do v=$(rejected "$i" "$r"); [ -n "$v" ] && ((v >= ${MIN:-1})) || return 1; done
}
expect_rejected() {
	local r=$1
	shift
	wait_for 5 rejected_on "$r" "$@" || check_fail "reason $r not counted on node(s) $* (node$1: $(rejected "$1" "$r"))"
}
kroute() { ip -n "$(node_ns "$1")" -j route show table main "$2" | jq -r '.[] | "\(.protocol // "boot") \(.dev) \(.gateway // "-")"'; }
has_route() { [ -n "$(route_to "$1" "$2")" ]; } # has_route I DST
neigh_is() { [ "$(neigh_on "$1" "$2")" = "$3" ]; } # neigh_is I IP "MAC STATE"
no_weft_route() {
	local d=$1 i
	shift
	for i in "$@"; do [ -z "$(route_to "$i" "$d")" ] || check_fail "node$i installed a route to $d: $(route_to "$i" "$d")"; done
}
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# ---- the underlay's own subnet as a podCIDR
node fake "$now" 10.250.100.0/24 10.250.100.50 02:00:00:00:00:50
expect_rejected outside_network 1 2 3
for i in 1 2 3; do
	assert_eq "$(kroute "$i" 10.250.100.0/24)" "kernel eth0 -" "node$i connected underlay route"
	assert_ping "$(node_ns "$i")" "$ETCD_IP"
done
api DELETE /api/v1/nodes/fake >/dev/null
sleep 1.5
for i in 1 2 3; do assert_eq "$(kroute "$i" 10.250.100.0/24)" "kernel eth0 -" "node$i connected route after the Node is deleted"; done

# ---- a /25 inside node2's /24
node half "$now" 10.250.130.0/25 10.250.100.51 02:00:00:00:00:51
expect_rejected prefix_length 1 3
no_weft_route 10.250.130.0/25 1 3
assert_eq "$(neigh_on 1 10.250.130.0)" "$mac2 PERMANENT" "node1's neighbour for node2"
assert_eq "$(route_to 1 10.250.130.0/24)" "10.250.130.0 weft.1 onlink" "node1's route to node2"

# ---- one podCIDR, two Nodes: the older wins everywhere; equal timestamps go by name
node twin-b 2020-01-01T00:00:00Z 10.250.140.0/24 10.250.100.62 02:00:00:00:00:62
node twin-a 2010-01-01T00:00:00Z 10.250.140.0/24 10.250.100.61 02:00:00:00:00:61
node tie-b 2015-01-01T00:00:00Z 10.250.141.0/24 10.250.100.64 02:00:00:00:00:64
node tie-a 2015-01-01T00:00:00Z 10.250.141.0/24 10.250.100.63 02:00:00:00:00:63
expect_rejected overlap 1 2 3
for i in 1 2 3; do
	wait_for 5 neigh_is "$i" 10.250.140.0 "02:00:00:00:00:61 PERMANENT" ||
		check_fail "node$i: 10.250.140.0/24 should go to the older twin-a, neighbour is '$(neigh_on "$i" 10.250.140.0)'"
	assert_eq "$(fdb_on "$i" 02:00:00:00:00:62)" "" "node$i FDB for the younger twin-b"
	assert_eq "$(neigh_on "$i" 10.250.141.0)" "02:00:00:00:00:63 PERMANENT" "node$i: equal timestamps, tie-a wins by name"
	assert_eq "$(fdb_on "$i" 02:00:00:00:00:64)" "" "node$i FDB for tie-b"
done

# ---- the rest of a Node
node loop "$now" 10.250.150.0/24 127.0.0.1 02:00:00:00:00:65
node mcast "$now" 10.250.151.0/24 10.250.100.66 01:00:5e:00:00:01
api POST /fixture/nodes -d '{"metadata": {"name": "bogus", "annotations": {"weft.dev/public-ip": "10.250.100.67"}},
	"spec": {"podCIDRs": ["10.250.152.0/24", "not-a-cidr"]}}' >/dev/null
expect_rejected public_ip 1 2 3
expect_rejected vtep_mac 1 2 3
expect_rejected malformed 1 2 3
no_weft_route 10.250.150.0/24 1 2 3
no_weft_route 10.250.151.0/24 1 2 3
no_weft_route 10.250.152.0/24 1 2 3
long="$(printf 'k%.0s' {1..190})-long-node"
node "$long" "$now" 10.250.160.0/24 10.250.100.68 02:00:00:00:00:68
wait_for 5 has_route 1 10.250.160.0/24 || check_fail "a Node with a ${#long}-character name was not programmed"

# ---- the periodic resync lists again
l0=$(api GET /fixture/stats | jq .lists)
sleep 3.5
l1=$(api GET /fixture/stats | jq .lists)
((l1 - l0 >= 4)) || check_fail "3 nodes re-listed only $((l1 - l0)) times in 3.5 s with --relist-interval 1s"

# ---- our own annotations removed under a running node: published again
api PATCH /api/v1/nodes/node2 -H 'Content-Type: application/merge-patch+json' \
	-d '{"metadata": {"annotations": {"weft.dev/public-ip": null, "weft.dev/vtep-mac": null, "weft.dev/backend-type": null}}}' >/dev/null
annotated2() { [ "$(api GET /api/v1/nodes/node2 | jq -r '.metadata.annotations["weft.dev/vtep-mac"] // "none"')" = "$mac2" ]; }
wait_for 3 annotated2 || check_fail "node2 did not publish its removed annotations again"
http_get 2 /metrics
grep -q '^weft_lease_recreated_total [1-9]' <<<"$HTTP_BODY" || check_fail "weft_lease_recreated_total not counted on node2"
wait_for 3 has_route 1 10.250.130.0/24 || check_fail "node1 has no route to node2 after node2 published its annotations again"

for i in 1 2 3; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status"
done
finish
