#!/usr/bin/env bash
# ptp plugin: ADD → CHECK → DEL → DEL → GC with host-local, point-to-point routing checked in the
# kernel and with traffic, ipMasq elements, bad inputs (code + message, nothing left behind),
# rollback, DEL without the netns, and the same ADD with the reference plugin side by side.
#
#   pod1 eth0 10.60.0.x/24 ── veth ──┐ vethA 10.60.0.1/32 ; 10.60.0.x/32 dev vethA
#                                    │                           (namespace "host": the node)
#   pod2 eth0 10.60.0.y/24 ── veth ──┘ vethB 10.60.0.1/32 ; 10.60.0.y/32 dev vethB
#   (and fd00:60::/64 the same way)          podr: the reference ptp in namespace "href"
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip nft jq ping
require_plugins ptp host-local

HOSTNS=$(mk_netns host)
STORE=$T/store

masq_elems() { ip netns exec "$HOSTNS" nft -j list ruleset | jq -r '[.nftables[] | select(.set?.name? | tostring | test("^br-")) | .set.elem[]? | .elem?.comment? // empty] | .[]' | sort -u | tr '\n' ' '; }
# assert_clean DESC: what hcni_expect checks after a failed call - nothing left behind
POD_LINKS="lo " BASE_VETH=0 BASE_RES=0
assert_clean() {
	assert_eq "$(veths_in "$HOSTNS")" "$BASE_VETH" "$1: host veths"
	assert_eq "$(links_in "$PE")" "$POD_LINKS" "$1: pod links"
	assert_eq "$(reservations_in "$STORE")" "$BASE_RES" "$1: IPAM reservations"
}

CONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"ptpnet","type":"ptp","ipMasq":true,"mtu":1400,
	"ipam":{"type":"host-local","dataDir":$store,
		"ranges":[[{"subnet":"10.60.0.0/24"}],[{"subnet":"fd00:60::/64"}]],
		"routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0"}]}}')

info "ADD two pods"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok ptp ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
hcni_ok ptp ADD c2 "$P2" eth0 "$CONF"
R2=$CNI_OUT
IP1=$(jqr '.ips[0].address | split("/")[0]' "$R1")
IP2=$(jqr '.ips[0].address | split("/")[0]' "$R2")
IP1v6=$(jqr '.ips[1].address | split("/")[0]' "$R1")
assert_eq "$(jqr '[.interfaces[] | (.sandbox // "") != ""] | tostring' "$R1")" '[false,true]' "interfaces: host veth, then container"
assert_eq "$(jqr '.interfaces[1].name' "$R1")" eth0 "container interface name"
assert_eq "$(jqr '[.ips[].interface] | unique | tostring' "$R1")" "[1]" "ips point at the container interface"
assert_eq "$(jqr '[.ips[].address] | tostring' "$R1")" '["10.60.0.2/24","fd00:60::2/64"]' "pod1 addresses"
assert_eq "$(jqr '[.ips[].gateway] | tostring' "$R1")" '["10.60.0.1","fd00:60::1"]' "gateways from IPAM"
assert_eq "$(jqr '[.routes[].dst] | tostring' "$R1")" '["0.0.0.0/0","::/0"]' "IPAM routes"
V1=$(jqr '.interfaces[0].name' "$R1")

[[ $V1 =~ ^veth[0-9a-f]{8}$ ]] || check_fail "host veth name '$V1' is not veth+8 hex"
assert_eq "$(ip -n "$HOSTNS" -j link show "$V1" | jq -r '.[0].address')" "$(jqr '.interfaces[0].mac' "$R1")" "host veth MAC in result"
assert_eq "$(ip -n "$P1" -j link show eth0 | jq -r '.[0].address')" "$(jqr '.interfaces[1].mac' "$R1")" "container MAC in result"
assert_eq "$(ip -n "$P1" -j link show eth0 | jq -r '.[0].mtu')" 1400 "container mtu"
assert_eq "$(ip -n "$HOSTNS" -j link show "$V1" | jq -r '.[0].mtu')" 1400 "host veth mtu"

info "kernel state: point-to-point routing"
assert_eq "$(ip -n "$HOSTNS" -j addr show "$V1" | jq -r '[.[0].addr_info[] | select(.scope=="global") | "\(.local)/\(.prefixlen)"] | sort | tostring')" \
	'["10.60.0.1/32","fd00:60::1/128"]' "host veth carries the gateways as host addresses"
assert_eq "$(ip -n "$HOSTNS" -j route show "$IP1/32" | jq -r '.[0].dev')" "$V1" "host route to pod1 via its veth"
assert_eq "$(ip -n "$HOSTNS" -6 -j route show "$IP1v6/128" | jq -r '.[0].dev')" "$V1" "host IPv6 route to pod1"
assert_eq "$(ip -n "$P1" -j route show 10.60.0.0/24 | jq -r '.[0].gateway')" 10.60.0.1 "pod subnet route via the gateway"
assert_eq "$(ip -n "$P1" -j route show 10.60.0.1 | jq -r '.[0].scope')" link "pod route to the gateway, scope link"
assert_eq "$(ip -n "$P1" -j route show default | jq -r '.[0].gateway')" 10.60.0.1 "pod default route"
assert_eq "$(ip -n "$P1" -j route show proto kernel | jq length)" 0 "the kernel's subnet route is gone"
assert_eq "$(ip -n "$P1" -6 -j route show fd00:60::/64 | jq -r '.[0].gateway')" fd00:60::1 "pod IPv6 subnet route via the gateway"
assert_eq "$(ip netns exec "$HOSTNS" cat /proc/sys/net/ipv4/ip_forward)" 1 "ip_forward on"
assert_eq "$(masq_elems)" "ptpnet/c1/eth0 ptpnet/c2/eth0 " "ipMasq elements for both pods"

info "traffic: pod ↔ node, pod ↔ pod via the node, both families"
assert_ping "$P1" 10.60.0.1
assert_ping "$P1" fd00:60::1
assert_ping "$P1" "$IP2"
assert_ping "$P2" "$IP1"
assert_ping "$P2" "$IP1v6"
assert_ping "$HOSTNS" "$IP1"
# Same subnet, but not on-link: the pod must ARP only for the gateway.
ip -n "$P1" neigh flush all
assert_ping "$P1" "$IP2"
assert_eq "$(ip -n "$P1" -4 -j neigh show | jq -r '[.[].dst] | unique | tostring')" '["10.60.0.1"]' "pod1 only resolves the gateway"

info "CHECK"
C1=$(with_prev "$CONF" "$R1")
hcni ptp CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after ADD failed: $CNI_OUT"
ip -n "$P1" addr del 10.60.0.2/24 dev eth0
hcni ptp CHECK c1 "$P1" eth0 "$C1"
[[ $(jqr .msg) == *"missing address 10.60.0.2/24"* ]] || check_fail "CHECK should report the missing address: $CNI_OUT"
hcni ptp CHECK c1 "$P1" eth0 "$CONF"
assert_eq "$(jqr .code)" 7 "CHECK without prevResult"
hcni ptp CHECK c1 "$P1" eth1 "$C1"
[[ $(jqr .msg) == *"eth1"* ]] || check_fail "CHECK of an interface not in prevResult: $CNI_OUT"

info "DEL, DEL again, DEL without the netns"
hcni_ok ptp DEL c1 "$P1" eth0 "$CONF"
assert_eq "$(links_in "$P1")" "lo " "pod1 has only lo after DEL"
ip -n "$HOSTNS" link show "$V1" >/dev/null 2>&1 && check_fail "host veth $V1 survived DEL"
[ ! -e "$STORE/ptpnet/10.60.0.2" ] || check_fail "reservation of pod1 survived DEL"
[[ "$(masq_elems)" != *c1/eth0* ]] || check_fail "masq elements of c1 survived DEL"
hcni_ok ptp DEL c1 "$P1" eth0 "$CONF"
hcni_ok ptp DEL c1 - eth0 "$CONF"
assert_ping "$P2" 10.60.0.1
P3=$(mk_netns pod3)
hcni_ok ptp ADD c3 "$P3" eth0 "$CONF"
IP3=$(jqr '.ips[0].address | split("/")[0]')
ip netns del "$P3"
hcni_ok ptp DEL c3 "/run/netns/$P3" eth0 "$CONF"
[ ! -e "$STORE/ptpnet/$IP3" ] || check_fail "reservation $IP3 survived DEL without netns"
[[ "$(masq_elems)" != *c3/eth0* ]] || check_fail "masq elements of c3 survived DEL without netns"

info "GC (1.1.0) keeps c2, collects a forgotten c4; STATUS"
CONF11=$(jq -c '.cniVersion = "1.1.0"' <<<"$CONF")
P4=$(mk_netns pod4)
hcni_ok ptp ADD c4 "$P4" eth0 "$CONF11"
IP4=$(jqr '.ips[0].address | split("/")[0]')
hcni_ok ptp GC "" "" "" "$(jq -c '. + {"cni.dev/valid-attachments": [{"containerID":"c2","ifname":"eth0"}]}' <<<"$CONF11")"
[[ "$(masq_elems)" != *c4/eth0* ]] || check_fail "GC left masq elements of c4"
[[ "$(masq_elems)" == *c2/eth0* ]] || check_fail "GC removed masq elements of the valid c2"
[ ! -e "$STORE/ptpnet/$IP4" ] || check_fail "GC left the reservation of c4"
hcni_ok ptp STATUS "" "" "" "$CONF11"
hcni_ok ptp DEL c4 "$P4" eth0 "$CONF11"
hcni_ok ptp DEL c2 "$P2" eth0 "$CONF"
assert_eq "$(reservations_in "$STORE")" 0 "IPAM store empty"
assert_eq "$(masq_elems)" "" "no masq elements left"
assert_eq "$(veths_in "$HOSTNS")" 0 "no host veths left"

info "bad input: code, message naming key/value, nothing left behind"
PE=$(mk_netns pode)
bad() { jq -c "$1" <<<"$CONF"; }
hcni_expect 7 '"mtu": 10' "mtu too small" ptp ADD c1 "$PE" eth0 "$(bad '.mtu = 10')"
hcni_expect 7 '"mtu": "1400"' "mtu as a string" ptp ADD c1 "$PE" eth0 "$(bad '.mtu = "1400"')"
hcni_expect 7 '"ipMasq": "yes"' "ipMasq as a string" ptp ADD c1 "$PE" eth0 "$(bad '.ipMasq = "yes"')"
hcni_expect 7 'ipam' "no IPAM type" ptp ADD c1 "$PE" eth0 "$(bad '.ipam = {}')"
hcni_expect 4 CNI_NETNS "missing netns" ptp ADD c1 - eth0 "$CONF"
hcni_expect 4 "nonexistent-$$" "netns that does not exist" ptp ADD c1 "/run/netns/nonexistent-$$" eth0 "$CONF"
hcni_expect 4 CNI_IFNAME "ifname with a slash" ptp ADD c1 "$PE" "eth/0" "$CONF"
hcni_expect 999 nope-ipam "IPAM plugin not found" ptp ADD c1 "$PE" eth0 "$(bad '.ipam.type = "nope-ipam"')"
ip -n "$PE" link add eth0 type veth peer name eth0p
POD_LINKS="eth0 eth0p lo " hcni_expect 999 "eth0" "ifname already exists in the pod (IPAM rolled back)" ptp ADD c1 "$PE" eth0 "$CONF"
ip -n "$PE" link del eth0
# A failure after the veth and the addresses exist: a route IPAM hands out that the kernel refuses.
hcni_expect 999 "203.0.113.1" "unreachable IPAM route gateway (everything rolled back)" ptp ADD c1 "$PE" eth0 \
	"$(bad '.ipam.routes = [{"dst":"192.0.2.0/24","gw":"10.60.0.254"},{"dst":"198.51.100.0/24","gw":"203.0.113.1"}]')"
assert_eq "$(masq_elems)" "" "failed ADDs left no masq elements"

if [ -x "$REF_BIN/ptp" ]; then
	info "side by side with the reference ptp (same IPAM, another node namespace)"
	HREF=$(mk_netns href)
	PR=$(mk_netns podr)
	PW=$(mk_netns podw)
	RC=$(jq -c --arg s "$T/rstore" '.ipMasq = false | .ipam.dataDir = $s' <<<"$CONF")
	WC=$(jq -c --arg s "$T/wstore" '.ipMasq = false | .ipam.dataDir = $s' <<<"$CONF")
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni_ok ptp ADD cr "$PR" eth0 "$RC"
	RREF=$CNI_OUT
	hcni_ok ptp ADD cw "$PW" eth0 "$WC"
	RW=$CNI_OUT
	norm() { jq -S '.interfaces |= map(.mac = "MAC" | if .sandbox then .sandbox = "SB" else .name = "VETH" end)' <<<"$1"; }
	assert_eq "$(norm "$RW")" "$(norm "$RREF")" "result equals the reference's"
	routes() { ip -n "$1" -j route show | jq -c '[.[] | {dst, gateway, scope}] | sort_by(.dst)'; }
	routes6() { ip -n "$1" -6 -j route show | jq -c '[.[] | select(.dst | startswith("fe80") | not) | {dst, gateway}] | sort_by(.dst)'; }
	assert_eq "$(routes "$PW")" "$(routes "$PR")" "pod IPv4 routes equal the reference's"
	assert_eq "$(routes6 "$PW")" "$(routes6 "$PR")" "pod IPv6 routes equal the reference's"
	hostaddrs() { ip -n "$1" -j addr show type veth | jq -c '[.[].addr_info[] | select(.scope=="global") | "\(.local)/\(.prefixlen)"] | sort'; }
	assert_eq "$(hostaddrs "$HOSTNS")" "$(hostaddrs "$HREF")" "host veth addresses equal the reference's"
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni ptp CHECK cr "$PR" eth0 "$(with_prev "$RC" "$RREF")"
	[ "$CNI_RC" = 0 ] || check_fail "reference CHECK of its own result failed: $CNI_OUT"
	hcni ptp CHECK cw "$PW" eth0 "$(with_prev "$WC" "$RW")"
	[ "$CNI_RC" = 0 ] || check_fail "our CHECK next to the reference failed: $CNI_OUT"
	hcni_ok ptp DEL cw "$PW" eth0 "$WC"
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni_ok ptp DEL cr "$PR" eth0 "$RC"
fi
finish
