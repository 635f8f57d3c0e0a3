#!/usr/bin/env bash
# The ipip backend (Calico's ipipMode): 3 nodes on one underlay, etcd in its own namespace, one pod
# per node. Runs itself twice: Always (every remote through weft.ipip) and CrossSubnet
# (DirectRouting: same-segment nodes get plain routes, so here no route uses the tunnel).
#
#   [pod1]--cni0--(node1: weft.ipip)--eth0 -+                      +- eth0--(node3 ...)--[pod3]
#                                          br0 (underlay 10.99.0.0/24)
#   [pod2]--cni0--(node2: weft.ipip)--eth0 -+-- etcd 10.99.0.2
#
# Checks: the tunnel (kind ipip, local = node IP, MTU 1500 - 20, the subnet's network address);
# one route per remote subnet (via its node IP dev weft.ipip onlink, or dev eth0 with
# CrossSubnet); pod <-> pod ping and TCP across nodes; a full-size DF packet for the pod MTU.
# Skips (77) where the kernel has no ipip link kind.
if [ -z "${WEFT_IPIP_CASE:-}" ]; then
	rc=0 skipped=0
	for c in always cross-subnet; do
		echo "# ---- ipip case: $c"
		WEFT_IPIP_CASE=$c bash "$0"
		r=$?
		if [ $r = 77 ]; then skipped=1; elif [ $r != 0 ]; then rc=1; fi
	done
	((rc == 0 && skipped == 1)) && exit 77
	exit $rc
fi

. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
TEST_NAME="${TEST_NAME}[$WEFT_IPIP_CASE]"
require_root
require_cmd ip jq curl nft etcd etcdctl python3 ping
require_built "$WEFTD"
require_kind ipip

[ "$WEFT_IPIP_CASE" = cross-subnet ] && CLUSTER_EXTRA_BACKEND='"DirectRouting": true'
cluster_init 3 ipip
for i in 1 2 3; do weftd_start "$i"; done
weftd_wait_ready 1 2 3

for i in 1 2 3; do
	ns=$(node_ns "$i")
	assert_eq "$(lease_var "$i" WEFT_MTU)" 1480 "node$i lease MTU (1500 - 20)"
	tun=$(ip -n "$ns" -d -j link show weft.ipip)
	assert_eq "$(jq -r '.[0].linkinfo.info_kind' <<<"$tun")" ipip "node$i tunnel kind"
	assert_eq "$(jq -r '.[0].mtu' <<<"$tun")" 1480 "node$i tunnel MTU"
	assert_eq "$(jq -r '.[0].linkinfo.info_data.local' <<<"$tun")" "$(node_ip "$i")" "node$i tunnel local"
	assert_eq "$(ip -n "$ns" -j addr show dev weft.ipip | jq -r '[.[0].addr_info[] | select(.family == "inet") | "\(.local)/\(.prefixlen)"] | join(" ")')" \
		"$(vtep_ip "$i")/32" "node$i tunnel address"
	assert_eq "$(routes_weft "$i" | wc -l)" 2 "node$i weft route count"
	for j in 1 2 3; do
		[ "$i" = "$j" ] && continue
		case $WEFT_IPIP_CASE in
		always) assert_eq "$(route_to "$i" "$(node_subnet "$j")")" "$(node_ip "$j") weft.ipip onlink" "node$i route to node$j" ;;
		cross-subnet) assert_eq "$(route_to "$i" "$(node_subnet "$j")")" "$(node_ip "$j") eth0 " "node$i route to node$j" ;;
		esac
	done
done

for i in 1 2 3; do pod_create "$i"; done
pods_ping_all 3
seen=$(seen_peer "$(pod_ns 2)" "$(pod_ip 2)" 8081 "$(pod_ns 1)")
assert_eq "$seen" "$(pod_ip 1)" "TCP pod1 -> pod2 keeps the pod address"
ip netns exec "$(pod_ns 1)" ping -c1 -W2 -M "do" -s $((1480 - 28)) "$(pod_ip 2)" >/dev/null ||
	check_fail "full-size (1480) DF packet pod1 -> pod2 failed"

for i in 1 2 3; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status after SIGTERM"
done
finish
