#!/usr/bin/env bash
# Interop: a bridge + host-local + portmap conflist (portmap declares the portMappings capability)
# driven by cnitool (libcni) with CAP_ARGS, once against our plugins and once against the
# reference plugins (whose portmap programs iptables), each side in its own node namespace.
# Both must forward a TCP connection from a client and from the node's 127.0.0.1 to the pod,
# return equivalent results, pass check, and stop forwarding after del.
#
#   client-S (eth0 192.168.70.2/24) ── veth ── host-S: up0 192.168.70.1/24
#                                               br0 10.70.0.1/24 ── veth ── pod-S (eth0)
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq nc timeout nft
[ -x "$CNITOOL" ] || skip "no cnitool at $CNITOOL (tools/build-cnitool.sh)"
require_plugins bridge host-local portmap
require_ref_plugins bridge host-local portmap
command -v iptables >/dev/null || skip "the reference portmap needs iptables"

CAP='{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}'
SERVERS=()
# shellcheck disable=SC2016 # expanded at exit, on purpose
on_exit 'for p in "${SERVERS[@]}"; do kill "$p"; done'

setup() {
	local side=$1 dir=$T/$1
	mkdir -p "$dir/conf"
	jq -n --arg store "$dir/store" '{"cniVersion":"1.0.0","name":"pmnet","plugins":[
		{"type":"bridge","bridge":"br0","isDefaultGateway":true,"ipMasq":true,"hairpinMode":true,
		 "ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.70.0.0/24"}]]}},
		{"type":"portmap","capabilities":{"portMappings":true},"snat":true}]}' >"$dir/conf/10-pmnet.conflist"
}
# tool SIDE HOSTNS BINDIR CMD NETNS [CAP_ARGS]: cnitool inside the side's host namespace (no CNI_ARGS)
tool() { CNITOOL_ARGS='' cnitool_in "$2" "$T/$1/conf" "$3" "$4" pmnet "$5" "${6:-$CAP}"; }
# reach FROM ADDR POD: a connection to ADDR:8080 from FROM reaches a listener on POD:80
reach() {
	local tok="tok-$RANDOM" got
	ip netns exec "$3" timeout 8 nc -l 80 <<<"$tok" >/dev/null 2>&1 &
	SERVERS+=($!)
	wait_listen "$3" 80 || true
	got=$(ip netns exec "$1" timeout 4 nc -w2 -N "$2" 8080 </dev/null 2>/dev/null || true)
	kill "${SERVERS[-1]}" 2>/dev/null || true
	wait "${SERVERS[-1]}" 2>/dev/null || true
	[ "$got" = "$tok" ]
}

declare -A H C P OUT
for side in weft ref; do
	setup $side
	H[$side]=$(mk_netns host-$side)
	C[$side]=$(mk_netns client-$side)
	P[$side]=$(mk_netns pod-$side)
	ip -n "${H[$side]}" link add up0 type veth peer name eth0 netns "${C[$side]}"
	ip -n "${H[$side]}" addr add 192.168.70.1/24 dev up0
	ip -n "${H[$side]}" link set up0 up
	ip -n "${C[$side]}" addr add 192.168.70.2/24 dev eth0
	ip -n "${C[$side]}" link set eth0 up
done

for side in weft ref; do
	bin=$WEFT_BIN
	[ $side = ref ] && bin=$REF_BIN
	tool $side "${H[$side]}" "$bin" add "$(nspath "${P[$side]}")"
	[ "$CNI_RC" = 0 ] || fail "cnitool add ($side) failed: $CNI_OUT $CNI_ERR"
	OUT[$side]=$CNI_OUT
done

assert_same_result "pmnet" "${OUT[weft]}" "${OUT[ref]}"
info "result (normalised): $(norm_result <<<"${OUT[weft]}" | jq -c .)"
assert_eq "$(ip netns exec "${H[weft]}" nft -j list map inet weft pm-dnat4 | jq -r '[.nftables[].map.elem[]?[0].elem.comment] | length')" \
	1 "weft: one pm-dnat4 element"

info "traffic through the mapping on both sides"
for side in weft ref; do
	reach "${C[$side]}" 192.168.70.1 "${P[$side]}" || check_fail "$side: client → 192.168.70.1:8080 did not reach the pod"
	reach "${H[$side]}" 127.0.0.1 "${P[$side]}" || check_fail "$side: node → 127.0.0.1:8080 did not reach the pod"
	reach "${P[$side]}" 10.70.0.1 "${P[$side]}" || check_fail "$side: hairpin pod → 10.70.0.1:8080 did not reach the pod"
done

info "cnitool check, then del"
for side in weft ref; do
	bin=$WEFT_BIN
	[ $side = ref ] && bin=$REF_BIN
	tool $side "${H[$side]}" "$bin" check "$(nspath "${P[$side]}")"
	if [ "$CNI_RC" != 0 ]; then
		# Reference 1.1.1 bug: its CHECK looks for the per-pod chain in ip6tables too, even for
		# an IPv4-only pod, and fails whenever ip6tables works. Not something to copy.
		if [ $side = ref ] && grep -q "could not check ipv6 dnat" <<<"$CNI_OUT $CNI_ERR"; then
			info "ref: check hits the reference's IPv4-only CHECK bug: $CNI_OUT $CNI_ERR"
		else
			check_fail "cnitool check ($side) failed: $CNI_OUT $CNI_ERR"
		fi
	fi
	tool $side "${H[$side]}" "$bin" del "$(nspath "${P[$side]}")"
	[ "$CNI_RC" = 0 ] || check_fail "cnitool del ($side) failed: $CNI_OUT $CNI_ERR"
	! reach "${C[$side]}" 192.168.70.1 "${P[$side]}" 2>/dev/null || check_fail "$side: still forwarded after del"
	assert_eq "$(ip -n "${H[$side]}" -j link show type veth | jq '[.[] | select(.ifname != "up0")] | length')" 0 \
		"$side: no pod veth after del"
done
assert_eq "$(ip netns exec "${H[weft]}" nft -j list table inet weft | jq '[.nftables[] | (.map // .set) // empty
	| select(.name | startswith("pm-")) | .elem[]?] | length')" 0 "weft: no pm- elements after del"
assert_eq "$(ip netns exec "${H[ref]}" iptables -t nat -S | grep -c 'CNI-DN-' || true)" 0 "ref: no CNI-DN chains after del"

finish
