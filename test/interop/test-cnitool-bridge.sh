#!/usr/bin/env bash
# Interop: the same conflists driven by cnitool (libcni) against our plugins and against the
# reference plugins, each side in its own "host" namespace. Results must be equivalent (same
# keys, IPs, routes, interface order; MACs, veth names and sandbox paths normalised away);
# check and del must succeed on both; the pods must reach their gateway.
#
#   host-weft: br0 10.50.0.1/24 fd00:50::1/64 ── veth ── pod-weft (eth0, lo)   CNI_PATH=our bin
#   host-ref:  br0 10.50.0.1/24 fd00:50::1/64 ── veth ── pod-ref  (eth0, lo)   CNI_PATH=/usr/lib/cni
. "$(dirname "$0")/../netns/lib.sh"
require_root
require_cmd ip jq ping
[ -x "$CNITOOL" ] || skip "no cnitool at $CNITOOL (tools/build-cnitool.sh)"
for p in bridge host-local loopback; do
	[ -x "$WEFT_BIN/$p" ] || skip "no $WEFT_BIN/$p (build first)"
	[ -x "$REF_BIN/$p" ] || skip "no reference $p in $REF_BIN"
done

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
tool() {
	local side=$1 hostns=$2 bindir=$3 cmd=$4 net=$5 netns=$6
	ip netns exec "$hostns" env -i PATH="$PATH" NETCONFPATH="$T/$side/conf" CNI_PATH="$bindir" \
		CNI_IFNAME=eth0 CNI_ARGS="IgnoreUnknown=1" CAP_ARGS='{}' \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$CNITOOL" "$cmd" "$net" "$netns"
}
# Normalise what legitimately differs: MACs, host veth name, sandbox path.
norm() {
	jq -S '(.interfaces // []) |= map(
		(if .mac then .mac = "MAC" else . end)
		| (if .sandbox then .sandbox = "SANDBOX" else . end)
		| (if (.name | test("^veth[0-9a-f]{8}$")) then .name = "VETH" else . end))'
}

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
		set +e
		OUT[$side.$net]=$(tool $side "$h" "$bin" add $net "$(nspath "$p")" 2>"$T/$side.$net.err")
		rc=$?
		set -e
		[ $rc = 0 ] || fail "cnitool add $net ($side) failed: ${OUT[$side.$net]} $(cat "$T/$side.$net.err")"
	done
done

for net in brnet lonet; do
	a=$(norm <<<"${OUT[weft.$net]}")
	b=$(norm <<<"${OUT[ref.$net]}")
	if [ "$a" != "$b" ]; then
		check_fail "$net: results differ (weft vs reference):"
		diff <(echo "$a") <(echo "$b") >&2 || true
	fi
	# Belt and braces: the raw key sets and IP order as well.
	assert_eq "$(jq -c '[paths | map(tostring) | join(".")] | sort' <<<"${OUT[weft.$net]}")" \
		"$(jq -c '[paths | map(tostring) | join(".")] | sort' <<<"${OUT[ref.$net]}")" "$net: same keys"
done
assert_eq "$(jq -c '[.ips[].address]' <<<"${OUT[weft.brnet]}")" '["10.50.0.2/24","fd00:50::2/64"]' "weft IPs in order"
assert_eq "$(jq -c '[.interfaces[].name][0,2]' <<<"${OUT[weft.brnet]}" | tr '\n' ' ')" '"br0" "eth0" ' "interface order"

info "brnet result (normalised): $(norm <<<"${OUT[weft.brnet]}" | jq -c .)"
info "traffic on both sides"
assert_ping "$PW" 10.50.0.1
assert_ping "$PR" 10.50.0.1
assert_ping "$PW" 127.0.0.1

info "cnitool check and del"
for side in weft ref; do
	if [ $side = weft ]; then h=$HW p=$PW bin=$WEFT_BIN; else h=$HR p=$PR bin=$REF_BIN; fi
	for cmd in check del; do
		for net in brnet lonet; do
			tool $side "$h" "$bin" $cmd $net "$(nspath "$p")" >"$T/out" 2>&1 ||
				check_fail "cnitool $cmd $net ($side) failed: $(cat "$T/out")"
		done
	done
	assert_eq "$(ip -n "$p" -j link show | jq -c '[.[].ifname]')" '["lo"]' "$side: pod has only lo after del"
	assert_eq "$(ip -n "$h" -j link show type veth | jq length)" 0 "$side: no host veth after del"
done

finish
