#!/usr/bin/env bash
# Interop: the same conflists driven by cnitool (libcni) against our plugins and against the
# reference plugins, each side in its own "host" namespace. Results must be equivalent (same
# keys, IPs, routes, interface order; MACs, veth names and sandbox paths normalised away);
# check and del must succeed on both; the pods must reach their gateway.
#
#   host-weft: br0 10.50.0.1/24 fd00:50::1/64 ── veth ── pod-weft (eth0, lo)   CNI_PATH=our bin
#   host-ref:  br0 10.50.0.1/24 fd00:50::1/64 ── veth ── pod-ref  (eth0, lo)   CNI_PATH=/usr/lib/cni
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
[ -x "$CNITOOL" ] || skip "no cnitool at $CNITOOL (tools/build-cnitool.sh)"
require_plugins bridge host-local loopback
require_ref_plugins bridge host-local loopback

# setup SIDE: a conf dir with the two networks, a host and a pod namespace.
setup() {
	local side=$1 dir=$T/$1
	mkdir -p "$dir/conf" "$dir/cache"
	jq -n --arg store "$dir/store" '{"cniVersion":"1.0.0","name":"brnet","plugins":[
		{"type":"bridge","bridge":"br0","isDefaultGateway":true,"ipMasq":false,"hairpinMode":true,
		 "ipam":{"type":"host-local","dataDir":$store,
			 "ranges":[[{"subnet":"10.50.0.0/24"}],[{"subnet":"fd00:50::/64"}]],
			 "routes":[{"dst":"192.0.2.0/24","gw":"10.50.0.254"}]}}]}' >"$dir/conf/10-brnet.conflist"
	jq -n '{"cniVersion":"1.0.0","name":"lonet","plugins":[{"type":"loopback"}]}' >"$dir/conf/20-lonet.conflist"
}
# tool SIDE HOSTNS BINDIR CMD NET NETNS: cnitool inside the side's host namespace
tool() { cnitool_in "$2" "$T/$1/conf" "$3" "$4" "$5" "$6" '{}'; }

# (a route without "gw" would trip the reference CHECK: it matches the gateway exactly)
setup weft
setup ref
HW=$(mk_netns host-weft)
HR=$(mk_netns host-ref)
PW=$(mk_netns pod-weft)
PR=$(mk_netns pod-ref)
ip -n "$PW" link set lo down
ip -n "$PR" link set lo down

declare -A OUT
for side in weft ref; do
	if [ $side = weft ]; then h=$HW p=$PW bin=$WEFT_BIN; else h=$HR p=$PR bin=$REF_BIN; fi
	for net in brnet lonet; do
		tool $side "$h" "$bin" add $net "$(nspath "$p")"
		[ "$CNI_RC" = 0 ] || fail "cnitool add $net ($side) failed: $CNI_OUT $CNI_ERR"
		OUT[$side.$net]=$CNI_OUT
	done
done

for net in brnet lonet; do
	assert_same_result "$net" "${OUT[weft.$net]}" "${OUT[ref.$net]}"
	# Belt and braces: the raw key sets and IP order as well.
	assert_eq "$(json_paths "${OUT[weft.$net]}")" "$(json_paths "${OUT[ref.$net]}")" "$net: same keys"
done
assert_eq "$(jq -c '[.ips[].address]' <<<"${OUT[weft.brnet]}")" '["10.50.0.2/24","fd00:50::2/64"]' "weft IPs in order"
assert_eq "$(jq -c '[.interfaces[].name][0,2]' <<<"${OUT[weft.brnet]}" | tr '\n' ' ')" '"br0" "eth0" ' "interface order"

info "brnet result (normalised): $(norm_result <<<"${OUT[weft.brnet]}" | jq -c .)"
info "traffic on both sides"
assert_ping "$PW" 10.50.0.1
assert_ping "$PR" 10.50.0.1
assert_ping "$PW" 127.0.0.1

info "cnitool check and del"
for side in weft ref; do
	if [ $side = weft ]; then h=$HW p=$PW bin=$WEFT_BIN; else h=$HR p=$PR bin=$REF_BIN; fi
	for cmd in check del; do
		for net in brnet lonet; do
			tool $side "$h" "$bin" $cmd $net "$(nspath "$p")"
			[ "$CNI_RC" = 0 ] || check_fail "cnitool $cmd $net ($side) failed: $CNI_OUT $CNI_ERR"
		done
	done
	assert_eq "$(ip -n "$p" -j link show | jq -c '[.[].ifname]')" '["lo"]' "$side: pod has only lo after del"
	assert_eq "$(veths_in "$h")" 0 "$side: no host veth after del"
done

finish
