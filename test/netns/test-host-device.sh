#!/usr/bin/env bash
# host-device plugin: a veth end of the node moved into the pod (by name and by hwaddr), renamed
# to CNI_IFNAME with its original name in the alias, addressed by host-local; traffic to the node;
# CHECK; DEL moves it back under its name; DEL again; GC; bad inputs roll back (the device is back,
# as it was); the reference side by side.
#
#   pod eth0 (was hd0) 10.80.0.x/24 ══ veth ══ hd0p 10.80.0.1/24   (namespace "host": the node)
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_plugins host-device host-local

HOSTNS=$(mk_netns host)
STORE=$T/store
# mkdev NS NAME: a veth NAME (the "device") whose peer NAMEp holds 10.80.0.1/24 in NS
mkdev() {
	mk_veth "$1" "$2" "${2}p"
	ip -n "$1" addr add 10.80.0.1/24 dev "${2}p" 2>/dev/null || true
}
mkdev "$HOSTNS" hd0

devstate() { ip -n "$HOSTNS" -j link show hd0 2>/dev/null | jq -c '.[0] | {ifname, up: (.flags | index("UP") != null), ifalias}'; }
POD_LINKS="lo " BASE_RES=0
# assert_clean DESC: what hcni_expect checks after a failed call - nothing left behind, and hd0
# back in the node as it was before the bad-input calls ($HD0)
assert_clean() {
	assert_eq "$(links_in "$PE")" "$POD_LINKS" "$1: pod links"
	assert_eq "$(devstate)" "$HD0" "$1: hd0 back in the node as it was"
	assert_eq "$(reservations_in "$STORE")" "$BASE_RES" "$1: IPAM reservations"
}

CONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"hdnet","type":"host-device","device":"hd0",
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.80.0.0/24","rangeStart":"10.80.0.10"}]]}}')

info "ADD by device name"
P1=$(mk_netns pod1)
MAC=$(ip -n "$HOSTNS" -j link show hd0 | jq -r '.[0].address')
hcni_ok host-device ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
assert_eq "$(jqr '.interfaces | tostring' "$R1")" "[{\"name\":\"eth0\",\"mac\":\"$MAC\",\"sandbox\":\"$(nspath "$P1")\"}]" "result interface"
assert_eq "$(jqr '.ips[0].address' "$R1")" 10.80.0.10/24 "address"
assert_eq "$(jqr '[.ips[].interface] | tostring' "$R1")" "[0]" "ips point at interface 0"
ip -n "$HOSTNS" link show hd0 >/dev/null 2>&1 && check_fail "hd0 is still in the node"
L=$(ip -n "$P1" -j link show eth0)
assert_eq "$(jq -r '.[0].ifalias' <<<"$L")" hd0 "original name kept in the alias"
assert_eq "$(jq -r '.[0].address' <<<"$L")" "$MAC" "same device (MAC)"
assert_eq "$(jq -r '.[0].flags | index("UP") != null' <<<"$L")" true "up in the pod"
assert_ping "$P1" 10.80.0.1

info "CHECK"
C1=$(with_prev "$CONF" "$R1")
hcni host-device CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after ADD failed: $CNI_OUT"
ip -n "$P1" addr flush dev eth0
hcni host-device CHECK c1 "$P1" eth0 "$C1"
[[ $(jqr .msg) == *"missing address 10.80.0.10/24"* ]] || check_fail "CHECK should report the missing address: $CNI_OUT"
hcni host-device CHECK c1 "$P1" eth0 "$CONF"
assert_eq "$(jqr .code)" 7 "CHECK without prevResult"

info "DEL moves it back under its name; DEL again"
hcni_ok host-device DEL c1 "$P1" eth0 "$CONF"
assert_eq "$(links_in "$P1")" "lo " "pod1 has only lo"
assert_eq "$(ip -n "$HOSTNS" -j link show hd0 | jq -r '.[0].address')" "$MAC" "hd0 is back in the node"
assert_eq "$(reservations_in "$STORE")" 0 "address released"
hcni_ok host-device DEL c1 "$P1" eth0 "$CONF"
hcni_ok host-device DEL c1 - eth0 "$CONF"

info "ADD by hwaddr (no IPAM), GC, STATUS; DEL with the netns gone"
P2=$(mk_netns pod2)
HW=$(jq -c --arg m "$MAC" 'del(.device) | del(.ipam) | .hwaddr = ($m | ascii_upcase) | .cniVersion = "1.1.0"' <<<"$CONF")
hcni_ok host-device ADD c2 "$P2" net1 "$HW"
assert_eq "$(jqr '.ips // [] | length')" 0 "no IPAM: no ips"
assert_eq "$(ip -n "$P2" -j link show net1 | jq -r '.[0].address')" "$MAC" "found by hwaddr, renamed net1"
hcni_ok host-device GC "" "" "" "$HW"
hcni_ok host-device STATUS "" "" "" "$HW"
hcni_ok host-device DEL c2 "$P2" net1 "$HW"
assert_eq "$(ip -n "$HOSTNS" -j link show hd0 | jq -r '.[0].ifname')" hd0 "back from net1"
mkdev "$HOSTNS" hd1
P3=$(mk_netns pod3)
hcni_ok host-device ADD c3 "$P3" eth0 "$(jq -c '.device = "hd1"' <<<"$CONF")"
ip netns del "$P3"
hcni_ok host-device DEL c3 "/run/netns/$P3" eth0 "$(jq -c '.device = "hd1"' <<<"$CONF")"
assert_eq "$(reservations_in "$STORE")" 0 "address released with the netns gone"

info "bad input: code, message naming key/value, the device back as it was"
PE=$(mk_netns pode)
HD0=$(devstate)
bad() { jq -c "$1" <<<"$CONF"; }
hcni_expect 7 'specify either "device", "hwaddr", "kernelpath" or "pciBusID"' "no device selector" host-device ADD c1 "$PE" eth0 "$(bad 'del(.device)')"
hcni_expect 7 '"hwaddr"' "bad hwaddr" host-device ADD c1 "$PE" eth0 "$(bad 'del(.device) | .hwaddr = "nope"')"
hcni_expect 7 '/tmp/x' "kernelpath outside /sys/devices" host-device ADD c1 "$PE" eth0 "$(bad 'del(.device) | .kernelpath = "/tmp/x"')"
hcni_expect 7 '"pciBusID": "xyz"' "pciBusID not a PCI address" host-device ADD c1 "$PE" eth0 "$(bad 'del(.device) | .pciBusID = "xyz"')"
hcni_expect 7 'DeviceID bogus' "runtimeConfig.deviceID not a PCI address" host-device ADD c1 "$PE" eth0 "$(bad '.runtimeConfig = {"deviceID":"bogus"}')"
hcni_expect 999 'pci device 0000:ff:1f.7' "no such PCI device" host-device ADD c1 "$PE" eth0 "$(bad 'del(.device) | .pciBusID = "0000:ff:1f.7"')"
hcni_expect 999 '"device" nosuch0' "device does not exist" host-device ADD c1 "$PE" eth0 "$(bad '.device = "nosuch0"')"
hcni_expect 999 "hwaddr" "no device with that hwaddr" host-device ADD c1 "$PE" eth0 "$(bad 'del(.device) | .hwaddr = "02:00:00:00:00:99"')"
hcni_expect 7 "loopback" "the loopback device" host-device ADD c1 "$PE" eth0 "$(bad '.device = "lo"')"
hcni_expect 4 CNI_NETNS "missing netns" host-device ADD c1 - eth0 "$CONF"
hcni_expect 999 nope-ipam "IPAM plugin not found (device moved back)" host-device ADD c1 "$PE" eth0 "$(bad '.ipam.type = "nope-ipam"')"
ip -n "$PE" link add eth0 type veth peer name eth0p
POD_LINKS="eth0 eth0p lo " hcni_expect 999 "eth0 already exists" "ifname taken in the pod" host-device ADD c1 "$PE" eth0 "$CONF"
ip -n "$PE" link del eth0
ip -n "$HOSTNS" link set hd0 down
HD0=$(devstate)
hcni_expect 999 "203.0.113.1" "failure after IPAM (device back, still down)" host-device ADD c1 "$PE" eth0 \
	"$(bad '.ipam.routes = [{"dst":"198.51.100.0/24","gw":"203.0.113.1"}]')"
ip -n "$HOSTNS" link set hd0 up
# DEL of an interface we did not move in (no alias) is refused and leaves it alone.
ip -n "$PE" link add eth0 type veth peer name eth0p
hcni host-device DEL c1 "$PE" eth0 "$CONF"
if [ "$CNI_RC" = 0 ] || [[ $(jqr .msg) != *"no alias"* ]]; then check_fail "DEL of a foreign interface: $CNI_OUT"; fi
ip -n "$PE" link show eth0 >/dev/null 2>&1 || check_fail "DEL moved a foreign interface"
ip -n "$PE" link del eth0
# DEL when the original name is taken in the node again: error, device stays in the pod for a retry.
P4=$(mk_netns pod4)
hcni_ok host-device ADD c4 "$P4" eth0 "$CONF"
ip -n "$HOSTNS" link add hd0 type veth peer name hd0x
hcni host-device DEL c4 "$P4" eth0 "$CONF"
if [ "$CNI_RC" = 0 ] || [[ $(jqr .msg) != *'"hd0"'* ]]; then check_fail "DEL with the name taken: $CNI_OUT"; fi
ip -n "$P4" link show eth0 >/dev/null 2>&1 || check_fail "device lost when the name was taken"
ip -n "$HOSTNS" link del hd0
hcni_ok host-device DEL c4 "$P4" eth0 "$CONF"
ip -n "$HOSTNS" link show hd0 >/dev/null 2>&1 || check_fail "retried DEL did not bring hd0 back"

if [ -x "$REF_BIN/host-device" ]; then
	info "side by side with the reference host-device"
	HREF=$(mk_netns href)
	mkdev "$HREF" hd0
	PR=$(mk_netns podr)
	PW=$(mk_netns podw)
	RC=$(jq -c --arg s "$T/rstore" '.ipam.dataDir = $s' <<<"$CONF")
	WC=$(jq -c --arg s "$T/wstore" '.ipam.dataDir = $s' <<<"$CONF")
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni_ok host-device ADD cr "$PR" eth0 "$RC"
	RREF=$CNI_OUT
	hcni_ok host-device ADD cw "$PW" eth0 "$WC"
	RW=$CNI_OUT
	norm() { jq -S '.interfaces |= map(.mac = "MAC" | .sandbox = "SB")' <<<"$1"; }
	assert_eq "$(norm "$RW")" "$(norm "$RREF")" "result equals the reference's"
	kern() { ip -n "$1" -j link show eth0 | jq -c '.[0] | {ifalias, flags}'; }
	assert_eq "$(kern "$PW")" "$(kern "$PR")" "pod link (alias, flags) equals the reference's"
	# Each DELs what the other ADDed: the alias convention is shared.
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni host-device CHECK cr "$PR" eth0 "$(with_prev "$RC" "$RREF")"
	[ "$CNI_RC" = 0 ] || check_fail "reference CHECK failed: $CNI_OUT"
	hcni_ok host-device DEL cw "$PW" eth0 "$WC"
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni_ok host-device DEL cr "$PR" eth0 "$RC"
	assert_eq "$(ip -n "$HREF" -j link show hd0 | jq -r '.[0].ifname')" hd0 "reference moved its device back"
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni_ok host-device ADD cr "$PR" eth0 "$RC"
	HNS=$HREF hcni_ok host-device DEL cr "$PR" eth0 "$RC"
	assert_eq "$(ip -n "$HREF" -j link show hd0 | jq -r '.[0].ifname')" hd0 "our DEL returns a device the reference moved in"
fi
finish
