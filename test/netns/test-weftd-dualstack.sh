#!/usr/bin/env bash
# Dual-stack: Network 10.244.0.0/16 + Network6 fd00:10:244::/56 over the VXLAN backend (IPv6 pods
# overlaid on the IPv4 underlay). Each node's lease gets an IPv4 /24 and the matching IPv6 /64 in one
# etcd compare-and-swap; the weft plugin gives pods both families; pods reach each other in both.
#
#   node1 (10.99.0.11) --underlay-- node2 (10.99.0.12)       etcd 10.99.0.2
#     cni0 + pod p1                    cni0 + pod p2           (pods attached with `weft cni add`)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
cluster_require
WEFT_TOOL=$WEFT_BUILD/tool/weft
require_built "$WEFT_TOOL"

CLUSTER_NETWORK6=fd00:10:244::/56
cluster_init 2 vxlan
for i in 1 2; do
	for p in "$WEFT_BIN"/*; do [ "$(basename "$p")" = weftd ] || ln -sf "$p" "$(node_dir "$i")/bin/"; done
	weftd_start "$i" --ipam-data-dir "$(node_dir "$i")/ipam"
done
weftd_wait_ready 1 2

declare -A IP4 IP6
for i in 1 2; do
	s4=$(lease_var "$i" WEFT_SUBNET) s6=$(lease_var "$i" WEFT_SUBNET6)
	info "node$i lease: $s4 $s6"
	[ -n "$s6" ] || fail "node$i has no WEFT_SUBNET6 in its lease"
	python3 -c 'import ipaddress,sys; n=ipaddress.ip_network(sys.argv[2]); sys.exit(0 if ipaddress.ip_interface(sys.argv[1]).ip in n else 1)' \
		"$s6" "$CLUSTER_NETWORK6" || check_fail "node$i subnet6 $s6 not inside $CLUSTER_NETWORK6"
	ns=$(mk_netns "p$i")
	d=$(node_dir "$i")
	out=$(ip netns exec "$(node_ns "$i")" env NETCONFPATH="$d/cni" CNI_PATH="$d/bin" CNI_CONTAINERID="ds-$i" \
		"$WEFT_TOOL" cni add weft "/run/netns/$ns" --cache-dir "$d/cache") || fail "weft cni add on node$i: $out"
	IP4[$i]=$(jq -r '.ips[] | select(.address | contains(".")) | .address | split("/")[0]' <<<"$out")
	IP6[$i]=$(jq -r '.ips[] | select(.address | contains(":")) | .address | split("/")[0]' <<<"$out")
	[ -n "${IP6[$i]}" ] || check_fail "pod on node$i got no IPv6 address: $out"
done
assert_ne "$(lease_var 1 WEFT_SUBNET6)" "$(lease_var 2 WEFT_SUBNET6)" "the two nodes' IPv6 subnets"

# IPv6 routes to the other node's /64 through the VTEP, tagged as ours
for i in 1 2; do
	j=$((3 - i))
	s6=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)' "$(lease_var "$j" WEFT_SUBNET6)")
	ip -n "$(node_ns "$i")" -6 -j route show proto 252 | jq -e --arg d "$s6" '.[] | select(.dst == $d and .dev == "weft.1")' >/dev/null ||
		check_fail "node$i has no IPv6 route to $s6 via weft.1"
done
wait_for 5 ip netns exec "w-p1-$$" ping -6 -c1 -W1 "${IP6[2]}" || check_fail "pod1 -> pod2 over IPv6 (${IP6[2]})"
assert_ping "w-p2-$$" "${IP4[1]}"
ip netns exec "w-p2-$$" ping -6 -c1 -W2 "${IP6[1]}" >/dev/null 2>&1 || check_fail "pod2 -> pod1 over IPv6 (${IP6[1]})"
finish
