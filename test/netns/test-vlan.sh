#!/usr/bin/env bash
# vlan plugin. Config errors run everywhere (they never reach the kernel); the rest needs the 8021q
# module and skips (77) without it: ADD → CHECK → DEL → DEL → GC with host-local, two pods on
# VLAN 42 of one veth ping each other across it, VLAN id/mtu in the kernel, rollback.
#
#   pod1 eth0 (VLAN 42 on vl0) ──┐
#                                 vl0 ══ veth ══ vl1     (namespace "host": the node)
#   pod2 eth0 (VLAN 42 on vl1) ──┘    the two pods share VLAN 42 over the veth pair
. "$(dirname "$0")/lib.sh"
require_root
require_cmd ip jq ping
[ -x "$WEFT_BIN/vlan" ] || skip "no $WEFT_BIN/vlan (build first)"
[ -x "$WEFT_BIN/host-local" ] || skip "no $WEFT_BIN/host-local"

HOSTNS=$(mk_netns host)
STORE=$T/store
ip -n "$HOSTNS" link add vl0 type veth peer name vl1
ip -n "$HOSTNS" link set vl0 up
ip -n "$HOSTNS" link set vl1 up

hcni() {
	local cmd=$1 cid=$2 netns=$3 ifname=$4 conf=$5
	local -a nsenv=(CNI_NETNS="$netns")
	[ "$netns" = - ] && nsenv=()
	[ -n "$netns" ] && [ "$netns" != - ] && [ "${netns#/}" = "$netns" ] && nsenv=(CNI_NETNS="$(nspath "$netns")")
	printf '%s' "$conf" >"$T/.conf"
	set +e
	CNI_OUT=$(ip netns exec "$HOSTNS" env -i PATH="$PATH" CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" \
		"${nsenv[@]}" CNI_IFNAME="$ifname" CNI_PATH="$WEFT_BIN" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$WEFT_BIN/vlan" <"$T/.conf" 2>"$T/.stderr")
	CNI_RC=$?
	set -e
}
hcni_ok() { hcni "$@"; [ "$CNI_RC" = 0 ] || fail "$1 $2 exited $CNI_RC: $CNI_OUT $(cat "$T/.stderr")"; }
with_prev() { jq -c --argjson r "$2" '. + {prevResult: $r}' <<<"$1"; }
reservations() { find "$STORE" -type f ! -name 'last_reserved_ip*' ! -name lock ! -name '.*' 2>/dev/null | wc -l; }
POD_LINKS="lo "
expect() {
	local code=$1 text=$2 desc=$3; shift 3
	hcni "$@"
	if [ "$CNI_RC" = 0 ]; then check_fail "$desc: expected error $code, got success"; return; fi
	local got msg
	got=$(jq -r .code <<<"$CNI_OUT" 2>/dev/null || echo not-json)
	msg=$(jq -r .msg <<<"$CNI_OUT" 2>/dev/null || echo "$CNI_OUT")
	[ "$got" = "$code" ] || check_fail "$desc: expected code $code, got $got: $msg"
	[[ $msg == *"$text"* ]] || check_fail "$desc: message should mention '$text': $msg"
	assert_eq "$(links_in "$PE")" "$POD_LINKS" "$desc: pod links"
	assert_eq "$(reservations)" 0 "$desc: IPAM reservations"
}

CONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"vlnet","type":"vlan","master":"vl0","vlanId":42,"mtu":1400,
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.77.0.0/24"}]]}}')
bad() { jq -c "$1" <<<"$CONF"; }
PE=$(mk_netns pode)

info "config errors (no kernel support needed)"
expect 7 '"master" field is required' "no master" ADD c1 "$PE" eth0 "$(bad 'del(.master)')"
expect 7 "4095" "vlanId out of range" ADD c1 "$PE" eth0 "$(bad '.vlanId = 4095')"
expect 7 "-1" "negative vlanId" ADD c1 "$PE" eth0 "$(bad '.vlanId = -1')"
expect 7 '"vlanId": "42"' "vlanId as a string" ADD c1 "$PE" eth0 "$(bad '.vlanId = "42"')"
expect 7 '"mtu": 70000' "mtu too large" ADD c1 "$PE" eth0 "$(bad '.mtu = 70000')"
expect 7 "IPAM" "no IPAM" ADD c1 "$PE" eth0 "$(bad '.ipam = {}')"
hcni DEL c1 "$PE" eth0 "$CONF"
[ "$CNI_RC" = 0 ] || check_fail "DEL of nothing failed: $CNI_OUT"

((_FAILS == 0)) || finish  # report config-error failures rather than a skip
ip -n "$HOSTNS" link add probe0 link vl0 type vlan id 1 2>/dev/null || skip "kernel has no 'vlan' link kind (8021q module missing); config errors passed"
ip -n "$HOSTNS" link del probe0

info "ADD two pods on VLAN 42, one per end of the veth"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
hcni_ok ADD c2 "$P2" eth0 "$(jq -c '.master = "vl1"' <<<"$CONF")"
L1=$(ip -n "$P1" -j -d link show eth0)
assert_eq "$(jq -r '.[0].linkinfo.info_kind' <<<"$L1")" vlan "kind"
assert_eq "$(jq -r '.[0].linkinfo.info_data.id' <<<"$L1")" 42 "VLAN id"
assert_eq "$(jq -r '.[0].mtu' <<<"$L1")" 1400 "mtu"
assert_eq "$(jqr '.interfaces[0].mac' "$R1")" "$(jq -r '.[0].address' <<<"$L1")" "MAC in result"
assert_ping "$P1" 10.77.0.3
assert_ping "$P2" 10.77.0.2

info "CHECK, DEL, DEL, GC"
C1=$(with_prev "$CONF" "$R1")
hcni CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK failed: $CNI_OUT"
hcni CHECK c1 "$P1" eth0 "$(jq -c '.vlanId = 43' <<<"$C1")"
[[ $(jqr .msg) == *"vlan ID 43"* ]] || check_fail "CHECK with another VLAN id: $CNI_OUT"
hcni_ok DEL c1 "$P1" eth0 "$CONF"
assert_eq "$(links_in "$P1")" "lo " "pod1 only lo"
hcni_ok DEL c1 "$P1" eth0 "$CONF"
hcni_ok GC "" "" "" "$(jq -c '.cniVersion = "1.1.0" | . + {"cni.dev/valid-attachments": []}' <<<"$CONF")"
assert_eq "$(reservations)" 0 "GC released c2's address"
hcni_ok DEL c2 "$P2" eth0 "$(jq -c '.master = "vl1"' <<<"$CONF")"

info "runtime failures roll back"
expect 999 'failed to lookup master "nosuch0"' "missing master" ADD c1 "$PE" eth0 "$(bad '.master = "nosuch0"')"
expect 999 nope-ipam "IPAM not found" ADD c1 "$PE" eth0 "$(bad '.ipam.type = "nope-ipam"')"
finish
