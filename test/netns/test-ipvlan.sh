#!/usr/bin/env bash
# ipvlan plugin. Config errors run everywhere (they never reach the kernel); the rest needs the
# ipvlan module and skips (77) without it: ADD → CHECK → DEL → DEL → GC with host-local, two pods
# on one master (l2) ping each other, l3 mode, the chained "master from prevResult" case, rollback.
#
#   pod1 eth0 (ipvlan l2) ──┐
#   pod2 eth0 (ipvlan l2) ──┤ iv0 ══ veth ══ iv0p      (namespace "host": the node)
#   pod3 eth0 (ipvlan l3) ──┘
. "$(dirname "$0")/lib.sh"
require_root
require_cmd ip jq ping
[ -x "$WEFT_BIN/ipvlan" ] || skip "no $WEFT_BIN/ipvlan (build first)"
[ -x "$WEFT_BIN/host-local" ] || skip "no $WEFT_BIN/host-local"

HOSTNS=$(mk_netns host)
STORE=$T/store
ip -n "$HOSTNS" link add iv0 type veth peer name iv0p
ip -n "$HOSTNS" link set iv0 up
ip -n "$HOSTNS" link set iv0p up

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
		"$WEFT_BIN/ipvlan" <"$T/.conf" 2>"$T/.stderr")
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

CONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"ivnet","type":"ipvlan","master":"iv0","mode":"l2",
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.75.0.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}}')
bad() { jq -c "$1" <<<"$CONF"; }
PE=$(mk_netns pode)

info "config errors (no kernel support needed)"
expect 7 '"l4"' "unknown mode" ADD c1 "$PE" eth0 "$(bad '.mode = "l4"')"
expect 7 '"mtu": 10' "mtu too small" ADD c1 "$PE" eth0 "$(bad '.mtu = 10')"
expect 7 '"master": true' "master as a bool" ADD c1 "$PE" eth0 "$(bad '.master = true')"
expect 7 "PrevResult lacks a single named interface" "chained without a single prevResult interface" ADD c1 "$PE" eth0 \
	"$(bad 'del(.master) | .prevResult = {"cniVersion":"1.0.0","interfaces":[{"name":"a"},{"name":"b"}],"ips":[]}')"
expect 7 "IPAM" "neither IPAM nor prevResult IPs" ADD c1 "$PE" eth0 "$(bad '.ipam = {}')"
hcni DEL c1 "$PE" eth0 "$CONF"
[ "$CNI_RC" = 0 ] || check_fail "DEL of nothing failed: $CNI_OUT"

((_FAILS == 0)) || finish  # report config-error failures rather than a skip
ip -n "$HOSTNS" link add probe0 link iv0 type ipvlan 2>/dev/null || skip "kernel has no 'ipvlan' link kind (module missing); config errors passed"
ip -n "$HOSTNS" link del probe0

info "ADD two pods (l2)"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
hcni_ok ADD c2 "$P2" eth0 "$CONF"
assert_eq "$(jqr '.interfaces | length' "$R1")" 1 "one interface"
assert_eq "$(jqr '.ips[0].interface' "$R1")" 0 "ips point at interface 0"
L1=$(ip -n "$P1" -j -d link show eth0)
assert_eq "$(jq -r '.[0].linkinfo.info_kind' <<<"$L1")" ipvlan "kind"
assert_eq "$(jq -r '.[0].linkinfo.info_data.mode' <<<"$L1")" l2 "mode"
assert_eq "$(jq -r '.[0].address' <<<"$L1")" "$(ip -n "$HOSTNS" -j link show iv0 | jq -r '.[0].address')" "ipvlan shares the master's MAC"
assert_ping "$P1" 10.75.0.3
assert_ping "$P2" 10.75.0.2

info "CHECK, DEL, DEL"
C1=$(with_prev "$CONF" "$R1")
hcni CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK failed: $CNI_OUT"
hcni CHECK c1 "$P1" eth0 "$(jq -c '.mode = "l3"' <<<"$C1")"
[[ $(jqr .msg) == *"mode l2 does not match expected value: l3"* ]] || check_fail "CHECK with another mode: $CNI_OUT"
hcni_ok DEL c1 "$P1" eth0 "$CONF"
assert_eq "$(links_in "$P1")" "lo " "pod1 only lo"
hcni_ok DEL c1 "$P1" eth0 "$CONF"
hcni_ok DEL c2 "$P2" eth0 "$CONF"
assert_eq "$(reservations)" 0 "addresses released"

info "l3 mode, GC"
P3=$(mk_netns pod3)
C11=$(jq -c '.mode = "l3" | .cniVersion = "1.1.0"' <<<"$CONF")
hcni_ok ADD c3 "$P3" eth0 "$C11"
assert_eq "$(ip -n "$P3" -j -d link show eth0 | jq -r '.[0].linkinfo.info_data.mode')" l3 "l3 mode"
hcni_ok GC "" "" "" "$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$C11")"
assert_eq "$(reservations)" 0 "GC released the forgotten address"
hcni_ok DEL c3 "$P3" eth0 "$C11"

info "chained: master and IPs from prevResult"
P4=$(mk_netns pod4)
PREV='{"cniVersion":"1.0.0","interfaces":[{"name":"iv0"}],"ips":[{"address":"10.76.0.5/24","gateway":"10.76.0.1"}]}'
CH=$(jq -c --argjson p "$PREV" 'del(.master) | .ipam = {} | .prevResult = $p' <<<"$CONF")
hcni_ok ADD c4 "$P4" eth0 "$CH"
assert_eq "$(jqr '.ips[0].address')" 10.76.0.5/24 "address from prevResult"
assert_eq "$(ip -n "$P4" -j addr show eth0 | jq -r '.[0].addr_info[] | select(.family=="inet") | .local')" 10.76.0.5 "on the device"
hcni_ok DEL c4 "$P4" eth0 "$CH"

info "runtime failures roll back"
expect 999 'failed to lookup master "nosuch0"' "missing master" ADD c1 "$PE" eth0 "$(bad '.master = "nosuch0"')"
expect 999 nope-ipam "IPAM not found" ADD c1 "$PE" eth0 "$(bad '.ipam.type = "nope-ipam"')"
finish
