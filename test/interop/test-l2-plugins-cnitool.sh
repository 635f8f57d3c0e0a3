#!/usr/bin/env bash
# Interop: cnitool (libcni 1.1.2, cniVersion 1.0.0) runs a ptp+host-local and a macvlan+host-local
# conflist against our plugins and against the reference plugins, each side in its own node
# namespace. Results must be equivalent (MACs of generated links, host veth names and sandbox
# paths normalised away; MACs we ask for must match exactly); the pods must reach their gateway
# (ptp) and the node's side of the master (macvlan); check and del must succeed on both.
#
#   node-weft: vethX 10.90.0.1/32 ── veth ── pw1 eth0   mv0 ══ mv0p 10.91.0.1/24; mv0 ── pw2 eth0 (macvlan)
#   node-ref:  the same, with CNI_PATH=/usr/lib/cni     (pods pr1, pr2)
. "$(dirname "$0")/../netns/lib.sh"
require_root
require_cmd ip jq ping
[ -x "$CNITOOL" ] || skip "no cnitool at $CNITOOL (tools/build-cnitool.sh)"
for p in ptp macvlan host-local; do
	[ -x "$WEFT_BIN/$p" ] || skip "no $WEFT_BIN/$p (build first)"
	[ -x "$REF_BIN/$p" ] || skip "no reference $p in $REF_BIN"
done

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
	ip -n "$2" link add mv0 type veth peer name mv0p
	ip -n "$2" link set mv0 up
	ip -n "$2" link set mv0p up
	ip -n "$2" addr add 10.91.0.1/24 dev mv0p
}
# tool SIDE NODE BINDIR CMD NET NETNS [CAP_ARGS]: cnitool inside the side's node namespace
tool() {
	ip netns exec "$2" env -i PATH="$PATH" NETCONFPATH="$T/$1/conf" CNI_PATH="$3" \
		CNI_IFNAME=eth0 CNI_ARGS="IgnoreUnknown=1" CAP_ARGS="${7:-{\}}" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$CNITOOL" "$4" "$5" "$6"
}
norm() {
	jq -S '(.interfaces // []) |= map(
		(if .mac then .mac = "MAC" else . end)
		| (if .sandbox then .sandbox = "SANDBOX" else . end)
		| (if (.name | test("^veth[0-9a-f]{8}$")) then .name = "VETH" else . end))'
}

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
		set +e
		OUT[$side.$net]=$(tool $side "$node" "$bin" add $net "$(nspath "${POD[$side.$net]}")" 2>"$T/err")
		rc=$?
		set -e
		[ $rc = 0 ] || fail "cnitool add $net ($side) failed: ${OUT[$side.$net]} $(cat "$T/err")"
	done
done

for net in ptpnet mvnet; do
	a=$(norm <<<"${OUT[weft.$net]}")
	b=$(norm <<<"${OUT[ref.$net]}")
	if [ "$a" != "$b" ]; then
		check_fail "$net: results differ (weft vs reference):"
		diff <(echo "$a") <(echo "$b") >&2 || true
	fi
	assert_eq "$(jq -c '[paths | map(tostring) | join(".")] | sort' <<<"${OUT[weft.$net]}")" \
		"$(jq -c '[paths | map(tostring) | join(".")] | sort' <<<"${OUT[ref.$net]}")" "$net: same keys"
	info "$net result (normalised): $(jq -c . <<<"$a")"
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
			tool $side "$node" "$bin" $cmd $net "$(nspath "${POD[$side.$net]}")" >"$T/out" 2>&1 ||
				check_fail "cnitool $cmd $net ($side) failed: $(cat "$T/out")"
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
	OUT[$side.mac]=$(tool $side "$node" "$bin" add mvnet "$(nspath "${POD[$side.mvnet]}")" '{"mac":"02:00:00:00:91:01"}') ||
		fail "cnitool add with mac ($side) failed: ${OUT[$side.mac]}"
	assert_eq "$(jq -r '.interfaces[0].mac' <<<"${OUT[$side.mac]}")" 02:00:00:00:91:01 "$side: requested MAC in the result"
	tool $side "$node" "$bin" del mvnet "$(nspath "${POD[$side.mvnet]}")" '{"mac":"02:00:00:00:91:01"}' >/dev/null ||
		check_fail "cnitool del with mac ($side) failed"
done
assert_eq "$(jq -S 'del(.interfaces[0].sandbox)' <<<"${OUT[weft.mac]}")" "$(jq -S 'del(.interfaces[0].sandbox)' <<<"${OUT[ref.mac]}")" "results with a requested MAC"
finish
