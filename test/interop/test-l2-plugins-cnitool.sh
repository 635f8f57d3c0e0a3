#!/usr/bin/env bash
# Interop: cnitool (libcni 1.1.2, cniVersion 1.0.0) runs a ptp+host-local and a macvlan+host-local
# conflist against our plugins and against the reference plugins, each side in its own node
# namespace. Results must be equivalent (MACs of generated links, host veth names and sandbox
# paths normalised away; MACs we ask for must match exactly); the pods must reach their gateway
# (ptp) and the node's side of the master (macvlan); check and del must succeed on both.
#
#   node-weft: vethX 10.90.0.1/32 ── veth ── pw1 eth0   mv0 ══ mv0p 10.91.0.1/24; mv0 ── pw2 eth0 (macvlan)
#   node-ref:  the same, with CNI_PATH=/usr/lib/cni     (pods pr1, pr2)
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
[ -x "$CNITOOL" ] || skip "no cnitool at $CNITOOL (tools/build-cnitool.sh)"
require_plugins ptp macvlan host-local
require_ref_plugins ptp macvlan host-local

setup() { # SIDE NODE
	local dir=$T/$1
	mkdir -p "$dir/conf"
	jq -n --arg store "$dir/store" '{"cniVersion":"1.0.0","name":"ptpnet","plugins":[
		{"type":"ptp","ipMasq":false,"mtu":1400,
		 "ipam":{"type":"host-local","dataDir":$store,
			 "ranges":[[{"subnet":"10.90.0.0/24"}],[{"subnet":"fd00:90::/64"}]],
			 "routes":[{"dst":"0.0.0.0/0"},{"dst":"192.0.2.0/24","gw":"10.90.0.1"}]}}]}' >"$dir/conf/10-ptpnet.conflist"
	jq -n --arg store "$dir/store" '{"cniVersion":"1.0.0","name":"mvnet","plugins":[
		{"type":"macvlan","master":"mv0","mode":"bridge","mtu":1450,
		 "ipam":{"type":"host-local","dataDir":$store,
			 "ranges":[[{"subnet":"10.91.0.0/24","rangeStart":"10.91.0.10"}]],
			 "routes":[{"dst":"0.0.0.0/0","gw":"10.91.0.1"}]}}]}' >"$dir/conf/20-mvnet.conflist"
	mk_veth "$2" mv0 mv0p
	ip -n "$2" addr add 10.91.0.1/24 dev mv0p
}
# tool SIDE NODE BINDIR CMD NET NETNS [CAP_ARGS]: cnitool inside the side's node namespace
tool() { cnitool_in "$2" "$T/$1/conf" "$3" "$4" "$5" "$6" "${7:-}"; }

NW=$(mk_netns node-weft)
NR=$(mk_netns node-ref)
setup weft "$NW"
setup ref "$NR"
declare -A POD OUT
POD[weft.ptpnet]=$(mk_netns pw1)
POD[weft.mvnet]=$(mk_netns pw2)
POD[ref.ptpnet]=$(mk_netns pr1)
POD[ref.mvnet]=$(mk_netns pr2)

for side in weft ref; do
	if [ $side = weft ]; then node=$NW bin=$WEFT_BIN; else node=$NR bin=$REF_BIN; fi
	for net in ptpnet mvnet; do
		tool $side "$node" "$bin" add $net "$(nspath "${POD[$side.$net]}")"
		[ "$CNI_RC" = 0 ] || fail "cnitool add $net ($side) failed: $CNI_OUT $CNI_ERR"
		OUT[$side.$net]=$CNI_OUT
	done
done

for net in ptpnet mvnet; do
	assert_same_result "$net" "${OUT[weft.$net]}" "${OUT[ref.$net]}"
	assert_eq "$(json_paths "${OUT[weft.$net]}")" "$(json_paths "${OUT[ref.$net]}")" "$net: same keys"
	info "$net result (normalised): $(norm_result <<<"${OUT[weft.$net]}" | jq -c .)"
done
assert_eq "$(jq -c '[.ips[].address]' <<<"${OUT[weft.ptpnet]}")" '["10.90.0.2/24","fd00:90::2/64"]' "ptp IPs in order"

info "kernel state equal on both sides"
podroutes() { ip -n "$1" -j route show | jq -c '[.[] | {dst, gateway, scope}] | sort_by(.dst)'; }
for net in ptpnet mvnet; do
	assert_eq "$(podroutes "${POD[weft.$net]}")" "$(podroutes "${POD[ref.$net]}")" "$net: pod routes"
	assert_eq "$(ip -n "${POD[weft.$net]}" -j link show eth0 | jq .[0].mtu)" "$(ip -n "${POD[ref.$net]}" -j link show eth0 | jq .[0].mtu)" "$net: pod mtu"
done
hostaddrs() { ip -n "$1" -j addr show type veth | jq -c '[.[].addr_info[] | select(.scope=="global") | "\(.local)/\(.prefixlen)"] | sort'; }
assert_eq "$(hostaddrs "$NW")" "$(hostaddrs "$NR")" "node veth addresses"

info "traffic on both sides"
for side in weft ref; do
	assert_ping "${POD[$side.ptpnet]}" 10.90.0.1
	# The reference adds the IPv6 gateway to its host veth with DAD, so it is tentative for a
	# second or two (ours is added nodad and answers at once): allow for that.
	ip netns exec "${POD[$side.ptpnet]}" ping -c1 -w5 fd00:90::1 >/dev/null 2>&1 || check_fail "$side: ping fd00:90::1 failed"
	assert_ping "${POD[$side.mvnet]}" 10.91.0.1
done

info "cnitool check and del"
for side in weft ref; do
	if [ $side = weft ]; then node=$NW bin=$WEFT_BIN; else node=$NR bin=$REF_BIN; fi
	for cmd in check del; do
		for net in ptpnet mvnet; do
			tool $side "$node" "$bin" $cmd $net "$(nspath "${POD[$side.$net]}")"
			[ "$CNI_RC" = 0 ] || check_fail "cnitool $cmd $net ($side) failed: $CNI_OUT $CNI_ERR"
		done
	done
	for net in ptpnet mvnet; do
		assert_eq "$(ip -n "${POD[$side.$net]}" -j link show | jq -c '[.[].ifname]')" '["lo"]' "$side $net: pod has only lo after del"
	done
	assert_eq "$(ip -n "$node" -j link show type veth | jq -c '[.[].ifname] | sort')" '["mv0","mv0p"]' "$side: no pod veth left"
done

info "macvlan with a requested MAC (CAP_ARGS mac): exactly as asked on both sides"
for side in weft ref; do
	if [ $side = weft ]; then node=$NW bin=$WEFT_BIN; else node=$NR bin=$REF_BIN; fi
	jq '.plugins[0].capabilities = {"mac": true}' "$T/$side/conf/20-mvnet.conflist" >"$T/x" && mv "$T/x" "$T/$side/conf/20-mvnet.conflist"
	tool $side "$node" "$bin" add mvnet "$(nspath "${POD[$side.mvnet]}")" '{"mac":"02:00:00:00:91:01"}'
	[ "$CNI_RC" = 0 ] || fail "cnitool add with mac ($side) failed: $CNI_OUT $CNI_ERR"
	OUT[$side.mac]=$CNI_OUT
	assert_eq "$(jq -r '.interfaces[0].mac' <<<"${OUT[$side.mac]}")" 02:00:00:00:91:01 "$side: requested MAC in the result"
	tool $side "$node" "$bin" del mvnet "$(nspath "${POD[$side.mvnet]}")" '{"mac":"02:00:00:00:91:01"}'
	[ "$CNI_RC" = 0 ] || check_fail "cnitool del with mac ($side) failed"
done
assert_eq "$(jq -S 'del(.interfaces[0].sandbox)' <<<"${OUT[weft.mac]}")" "$(jq -S 'del(.interfaces[0].sandbox)' <<<"${OUT[ref.mac]}")" "results with a requested MAC"
finish
