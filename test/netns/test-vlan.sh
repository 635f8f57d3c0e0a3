#!/usr/bin/env bash
# vlan plugin. Config errors run everywhere (they never reach the kernel); the rest needs the 8021q
# module and skips (77) without it: ADD → CHECK → DEL → DEL → GC with host-local, two pods on
# VLAN 42 of one veth ping each other across it, VLAN id/mtu in the kernel, rollback.
#
#   pod1 eth0 (VLAN 42 on vl0) ──┐
#                                 vl0 ══ veth ══ vl1     (namespace "host": the node)
#   pod2 eth0 (VLAN 42 on vl1) ──┘    the two pods share VLAN 42 over the veth pair
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_plugins vlan host-local

HOSTNS=$(mk_netns host)
STORE=$T/store
mk_veth "$HOSTNS" vl0 vl1

POD_LINKS="lo "
# assert_clean DESC: what hcni_expect checks after a failed call - nothing left behind
assert_clean() {
	assert_eq "$(links_in "$PE")" "$POD_LINKS" "$1: pod links"
	assert_eq "$(reservations_in "$STORE")" 0 "$1: IPAM reservations"
}

CONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"vlnet","type":"vlan","master":"vl0","vlanId":42,"mtu":1400,
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.77.0.0/24"}]]}}')
bad() { jq -c "$1" <<<"$CONF"; }
PE=$(mk_netns pode)

info "config errors (no kernel support needed)"
hcni_expect 7 '"master" field is required' "no master" vlan ADD c1 "$PE" eth0 "$(bad 'del(.master)')"
hcni_expect 7 "4095" "vlanId out of range" vlan ADD c1 "$PE" eth0 "$(bad '.vlanId = 4095')"
hcni_expect 7 "-1" "negative vlanId" vlan ADD c1 "$PE" eth0 "$(bad '.vlanId = -1')"
hcni_expect 7 '"vlanId": "42"' "vlanId as a string" vlan ADD c1 "$PE" eth0 "$(bad '.vlanId = "42"')"
hcni_expect 7 '"mtu": 70000' "mtu too large" vlan ADD c1 "$PE" eth0 "$(bad '.mtu = 70000')"
hcni_expect 7 "IPAM" "no IPAM" vlan ADD c1 "$PE" eth0 "$(bad '.ipam = {}')"
hcni vlan DEL c1 "$PE" eth0 "$CONF"
[ "$CNI_RC" = 0 ] || check_fail "DEL of nothing failed: $CNI_OUT"

((_FAILS == 0)) || finish  # report config-error failures rather than a skip
ip -n "$HOSTNS" link add probe0 link vl0 type vlan id 1 2>/dev/null || skip "kernel has no 'vlan' link kind (8021q module missing); config errors passed"
ip -n "$HOSTNS" link del probe0

info "ADD two pods on VLAN 42, one per end of the veth"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok vlan ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
hcni_ok vlan ADD c2 "$P2" eth0 "$(jq -c '.master = "vl1"' <<<"$CONF")"
L1=$(ip -n "$P1" -j -d link show eth0)
assert_eq "$(jq -r '.[0].linkinfo.info_kind' <<<"$L1")" vlan "kind"
assert_eq "$(jq -r '.[0].linkinfo.info_data.id' <<<"$L1")" 42 "VLAN id"
assert_eq "$(jq -r '.[0].mtu' <<<"$L1")" 1400 "mtu"
assert_eq "$(jqr '.interfaces[0].mac' "$R1")" "$(jq -r '.[0].address' <<<"$L1")" "MAC in result"
assert_ping "$P1" 10.77.0.3
assert_ping "$P2" 10.77.0.2

info "CHECK, DEL, DEL, GC"
C1=$(with_prev "$CONF" "$R1")
hcni vlan CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK failed: $CNI_OUT"
hcni vlan CHECK c1 "$P1" eth0 "$(jq -c '.vlanId = 43' <<<"$C1")"
[[ $(jqr .msg) == *"vlan ID 43"* ]] || check_fail "CHECK with another VLAN id: $CNI_OUT"
hcni_ok vlan DEL c1 "$P1" eth0 "$CONF"
assert_eq "$(links_in "$P1")" "lo " "pod1 only lo"
hcni_ok vlan DEL c1 "$P1" eth0 "$CONF"
hcni_ok vlan GC "" "" "" "$(jq -c '.cniVersion = "1.1.0" | . + {"cni.dev/valid-attachments": []}' <<<"$CONF")"
assert_eq "$(reservations_in "$STORE")" 0 "GC released c2's address"
hcni_ok vlan DEL c2 "$P2" eth0 "$(jq -c '.master = "vl1"' <<<"$CONF")"

info "runtime failures roll back"
hcni_expect 999 'failed to lookup master "nosuch0"' "missing master" vlan ADD c1 "$PE" eth0 "$(bad '.master = "nosuch0"')"
hcni_expect 999 nope-ipam "IPAM not found" vlan ADD c1 "$PE" eth0 "$(bad '.ipam.type = "nope-ipam"')"
finish
