#!/usr/bin/env bash
# weftd backends end to end: 3 nodes on one underlay, etcd in its own namespace, hand-made pods.
# Runs itself once per backend (host-gw, vxlan, vxlan with DirectRouting), each in fresh namespaces.
#
#   [pod1]--cni0--(node1)--eth0 -+                        +- eth0--(node3)--cni0--[pod3]
#                               br0 (underlay 10.99.0.0/24)
#   [pod2]--cni0--(node2)--eth0 -+-- etcd 10.99.0.2   -- outside 10.99.0.200
#
# Checks: routes (ip -j route), for vxlan the VTEP (MTU, nolearning, address), neighbours
# (ip -j neigh) and FDB (bridge -j fdb); pod <-> pod ping across nodes; pod -> outside arrives
# masqueraded to the node IP, pod -> pod keeps the pod IP; host-gw refuses a node whose public IP
# is not directly connected (log line, metric, no route).
if [ -z "${WEFT_BACKEND_CASE:-}" ]; then
	rc=0 skipped=0
	for c in host-gw vxlan vxlan-direct; do
		echo "# ---- backend case: $c"
		WEFT_BACKEND_CASE=$c bash "$0"
		r=$?
		if [ $r = 77 ]; then skipped=1; elif [ $r != 0 ]; then rc=1; fi
	done
	((rc == 0 && skipped == 1)) && exit 77
	exit $rc
fi

. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
TEST_NAME="${TEST_NAME}[$WEFT_BACKEND_CASE]"
cluster_require

backend=${WEFT_BACKEND_CASE%-direct}
[ "$WEFT_BACKEND_CASE" = vxlan-direct ] && CLUSTER_EXTRA_BACKEND='"DirectRouting": true'
cluster_init 3 "$backend"
for i in 1 2 3; do weftd_start "$i"; done
weftd_wait_ready 1 2 3

declare -A SUBNET VTEP_IP MAC
for i in 1 2 3; do
	SUBNET[$i]=$(node_subnet "$i")
	VTEP_IP[$i]=$(vtep_ip "$i")
	[ "$backend" = vxlan ] && MAC[$i]=$(vtep_mac "$i")
	info "node$i: subnet ${SUBNET[$i]} mtu $(lease_var "$i" WEFT_MTU)"
done
assert_ne "${SUBNET[1]}" "${SUBNET[2]}" "node subnets distinct"
assert_ne "${SUBNET[2]}" "${SUBNET[3]}" "node subnets distinct"

for i in 1 2 3; do
	assert_eq "$(lease_var "$i" WEFT_NETWORK)" "10.244.0.0/16" "node$i WEFT_NETWORK"
	assert_eq "$(lease_var "$i" WEFT_IPMASQ)" "false" "node$i WEFT_IPMASQ"
	assert_eq "$(jq -r '.plugins[0].type' "$(node_dir "$i")/cni/10-weft.conflist")" weft "node$i conflist"
	assert_eq "$(jq -r '.plugins | length' "$(node_dir "$i")/cni/10-weft.conflist")" 1 "no portmap without the binary"
	# exactly the two remote subnets, never our own
	assert_eq "$(routes_weft "$i" | wc -l)" 2 "node$i weft route count"
	assert_eq "$(route_to "$i" "${SUBNET[$i]}")" "" "node$i has no route to its own subnet"
	for j in 1 2 3; do
		[ "$i" = "$j" ] && continue
		got=$(route_to "$i" "${SUBNET[$j]}")
		case $WEFT_BACKEND_CASE in
		host-gw | vxlan-direct) assert_eq "$got" "$(node_ip "$j") eth0 " "node$i route to node$j" ;;
		vxlan)
			assert_eq "$got" "${VTEP_IP[$j]} weft.1 onlink" "node$i route to node$j"
			assert_eq "$(neigh_on "$i" "${VTEP_IP[$j]}")" "${MAC[$j]} PERMANENT" "node$i neighbour for node$j"
			assert_eq "$(fdb_on "$i" "${MAC[$j]}")" "$(node_ip "$j")" "node$i FDB for node$j"
			;;
		esac
	done
	case $WEFT_BACKEND_CASE in
	host-gw)
		assert_eq "$(lease_var "$i" WEFT_MTU)" 1500 "host-gw MTU"
		ip -n "$(node_ns "$i")" link show weft.1 >/dev/null 2>&1 && check_fail "host-gw created a VTEP"
		;;
	vxlan*)
		# the VTEP exists in both vxlan cases (DirectRouting only changes routes to near nodes)
		vt=$(ip -n "$(node_ns "$i")" -d -j link show weft.1)
		assert_eq "$(jq -r '.[0].mtu' <<<"$vt")" 1450 "node$i VTEP MTU (1500 - 50)"
		assert_eq "$(jq -r '.[0].linkinfo.info_data.learning' <<<"$vt")" false "node$i VTEP nolearning"
		assert_eq "$(jq -r '.[0].linkinfo.info_data.id' <<<"$vt")" 1 "node$i VNI"
		assert_eq "$(jq -r '.[0].linkinfo.info_data.port' <<<"$vt")" 4789 "node$i VXLAN port"
		assert_eq "$(jq -r '.[0].linkinfo.info_data.local' <<<"$vt")" "$(node_ip "$i")" "node$i VTEP local"
		assert_eq "$(ip -n "$(node_ns "$i")" -j addr show dev weft.1 | jq -r '[.[0].addr_info[] | select(.family == "inet") | "\(.local)/\(.prefixlen)"] | join(" ")')" \
			"${VTEP_IP[$i]}/32" "node$i VTEP address"
		assert_eq "$(lease_var "$i" WEFT_MTU)" 1450 "vxlan lease MTU"
		if [ "$WEFT_BACKEND_CASE" = vxlan-direct ]; then
			assert_eq "$(bridge -n "$(node_ns "$i")" -j fdb show dev weft.1 | jq 'map(select(.dst)) | length')" 0 "no FDB with DirectRouting"
		fi
		;;
	esac
	# firewall: our chains only, in the shared table
	fw=$(ip netns exec "$(node_ns "$i")" nft -j list table inet weft)
	assert_eq "$(jq -r '[.nftables[] | select(.chain) | .chain.name] | sort | join(",")' <<<"$fw")" \
		"node-forward,node-postrouting" "node$i nft chains"
done

# ---- datapath
for i in 1 2 3; do pod_create "$i"; done
pods_ping_all 3
seen=$(seen_peer "$OUT_NS" "$OUTSIDE_IP" 8080 "$(pod_ns 1)")
assert_eq "$seen" "$(node_ip 1)" "pod1 -> outside is masqueraded to node1's IP"
seen=$(seen_peer "$(pod_ns 2)" "$(pod_ip 2)" 8081 "$(pod_ns 1)")
assert_eq "$seen" "$(pod_ip 1)" "pod1 -> pod2 keeps the pod address (no masquerade)"
seen=$(seen_peer "$(pod_ns 1)" "$(pod_ip 1)" 8082 "$(pod_ns 3)")
assert_eq "$seen" "$(pod_ip 3)" "pod3 -> pod1 keeps the pod address (no masquerade)"
if [ "$backend" = vxlan ]; then
	# a full-size packet for the pod MTU crosses the overlay without fragmentation
	ip netns exec "$(pod_ns 1)" ping -c1 -W2 -M "do" -s $((1450 - 28)) "$(pod_ip 2)" >/dev/null ||
		check_fail "1450-byte packet pod1 -> pod2 with DF failed"
fi

# ---- metrics agree with the kernel
http_get 1 /metrics
assert_eq "$HTTP_CODE" 200 "/metrics status"
assert_eq "$(sed -n 's/^weft_nodes //p' <<<"$HTTP_BODY")" 2 "weft_nodes"
assert_eq "$(sed -n 's/^weft_routes_programmed //p' <<<"$HTTP_BODY")" 2 "weft_routes_programmed"
if [ "$WEFT_BACKEND_CASE" = vxlan ]; then
	assert_eq "$(sed -n 's/^weft_neighbours_programmed //p' <<<"$HTTP_BODY")" 2 "weft_neighbours_programmed"
	assert_eq "$(sed -n 's/^weft_fdb_programmed //p' <<<"$HTTP_BODY")" 2 "weft_fdb_programmed"
fi

# ---- host-gw: a node whose public IP is not on a directly connected network is refused
if [ "$WEFT_BACKEND_CASE" = host-gw ]; then
	cluster_add_node 4
	ip -n "$(node_ns 4)" addr add 192.0.2.4/32 dev eth0
	weftd_start 4 --public-ip 192.0.2.4
	weftd_wait_ready 4
	s4=$(node_subnet 4)
	wait_for 3 grep -q "node node4 has public IP 192.0.2.4, which is not on a directly connected" "$(node_dir 1)/weftd.log" ||
		check_fail "node1 did not log the refusal of node4"
	assert_eq "$(route_to 1 "$s4")" "" "no route to the unreachable node"
	http_get 1 /metrics
	assert_eq "$(sed -n 's/^weft_hostgw_unreachable_total //p' <<<"$HTTP_BODY")" 1 "weft_hostgw_unreachable_total"
	assert_eq "$(sed -n 's/^weft_nodes //p' <<<"$HTTP_BODY")" 3 "weft_nodes includes the refused node"
fi

for i in 1 2 3; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status after SIGTERM"
done
finish
