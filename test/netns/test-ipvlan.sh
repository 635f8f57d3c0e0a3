#!/usr/bin/env bash
# ipvlan plugin. Config errors run everywhere (they never reach the kernel); the rest needs the
# ipvlan module and skips (77) without it: ADD → CHECK → DEL → DEL → GC with host-local, two pods
# on one master (l2) ping each other, l3 mode, the chained "master from prevResult" case, rollback.
#
#   pod1 eth0 (ipvlan l2) ──┐
#   pod2 eth0 (ipvlan l2) ──┤ iv0 ══ veth ══ iv0p      (namespace "host": the node)
#   pod3 eth0 (ipvlan l3) ──┘
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_plugins ipvlan host-local

HOSTNS=$(mk_netns host)
STORE=$T/store
mk_veth "$HOSTNS" iv0 iv0p

POD_LINKS="lo "
# assert_clean DESC: what hcni_expect checks after a failed call - nothing left behind
assert_clean() {
	assert_eq "$(links_in "$PE")" "$POD_LINKS" "$1: pod links"
	assert_eq "$(reservations_in "$STORE")" 0 "$1: IPAM reservations"
}

CONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"ivnet","type":"ipvlan","master":"iv0","mode":"l2",
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.75.0.0/24"}]],"routes":[{"dst":"0.0.0.0/0"}]}}')
bad() { jq -c "$1" <<<"$CONF"; }
PE=$(mk_netns pode)

info "config errors (no kernel support needed)"
hcni_expect 7 '"l4"' "unknown mode" ipvlan ADD c1 "$PE" eth0 "$(bad '.mode = "l4"')"
hcni_expect 7 '"mtu": 10' "mtu too small" ipvlan ADD c1 "$PE" eth0 "$(bad '.mtu = 10')"
hcni_expect 7 '"master": true' "master as a bool" ipvlan ADD c1 "$PE" eth0 "$(bad '.master = true')"
hcni_expect 7 "PrevResult lacks a single named interface" "chained without a single prevResult interface" ipvlan ADD c1 "$PE" eth0 \
	"$(bad 'del(.master) | .prevResult = {"cniVersion":"1.0.0","interfaces":[{"name":"a"},{"name":"b"}],"ips":[]}')"
hcni_expect 7 "IPAM" "neither IPAM nor prevResult IPs" ipvlan ADD c1 "$PE" eth0 "$(bad '.ipam = {}')"
hcni ipvlan DEL c1 "$PE" eth0 "$CONF"
[ "$CNI_RC" = 0 ] || check_fail "DEL of nothing failed: $CNI_OUT"

((_FAILS == 0)) || finish  # report config-error failures rather than a skip
ip -n "$HOSTNS" link add probe0 link iv0 type ipvlan 2>/dev/null || skip "kernel has no 'ipvlan' link kind (module missing); config errors passed"
ip -n "$HOSTNS" link del probe0

info "ADD two pods (l2)"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok ipvlan ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
hcni_ok ipvlan ADD c2 "$P2" eth0 "$CONF"
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
hcni ipvlan CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK failed: $CNI_OUT"
hcni ipvlan CHECK c1 "$P1" eth0 "$(jq -c '.mode = "l3"' <<<"$C1")"
[[ $(jqr .msg) == *"mode l2 does not match expected value: l3"* ]] || check_fail "CHECK with another mode: $CNI_OUT"
hcni_ok ipvlan DEL c1 "$P1" eth0 "$CONF"
assert_eq "$(links_in "$P1")" "lo " "pod1 only lo"
hcni_ok ipvlan DEL c1 "$P1" eth0 "$CONF"
hcni_ok ipvlan DEL c2 "$P2" eth0 "$CONF"
assert_eq "$(reservations_in "$STORE")" 0 "addresses released"

info "l3 mode, GC"
P3=$(mk_netns pod3)
C11=$(jq -c '.mode = "l3" | .cniVersion = "1.1.0"' <<<"$CONF")
hcni_ok ipvlan ADD c3 "$P3" eth0 "$C11"
assert_eq "$(ip -n "$P3" -j -d link show eth0 | jq -r '.[0].linkinfo.info_data.mode')" l3 "l3 mode"
hcni_ok ipvlan GC "" "" "" "$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$C11")"
assert_eq "$(reservations_in "$STORE")" 0 "GC released the forgotten address"
hcni_ok ipvlan DEL c3 "$P3" eth0 "$C11"

info "chained: master and IPs from prevResult"
P4=$(mk_netns pod4)
PREV='{"cniVersion":"1.0.0","interfaces":[{"name":"iv0"}],"ips":[{"address":"10.76.0.5/24","gateway":"10.76.0.1"}]}'
CH=$(jq -c --argjson p "$PREV" 'del(.master) | .ipam = {} | .prevResult = $p' <<<"$CONF")
hcni_ok ipvlan ADD c4 "$P4" eth0 "$CH"
assert_eq "$(jqr '.ips[0].address')" 10.76.0.5/24 "address from prevResult"
assert_eq "$(ip -n "$P4" -j addr show eth0 | jq -r '.[0].addr_info[] | select(.family=="inet") | .local')" 10.76.0.5 "on the device"
hcni_ok ipvlan DEL c4 "$P4" eth0 "$CH"

info "runtime failures roll back"
hcni_expect 999 'failed to lookup master "nosuch0"' "missing master" ipvlan ADD c1 "$PE" eth0 "$(bad '.master = "nosuch0"')"
hcni_expect 999 nope-ipam "IPAM not found" ipvlan ADD c1 "$PE" eth0 "$(bad '.ipam.type = "nope-ipam"')"
finish
