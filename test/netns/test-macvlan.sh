#!/usr/bin/env bash
# macvlan plugin: ADD → CHECK → DEL → DEL → GC with host-local; two pods on one master in bridge
# mode ping each other; mode/mtu/mac visible in the kernel; L2-only; default master from the
# default route; every bad input (code, message, nothing left behind); the reference side by side.
#
#   pod1 eth0 (macvlan bridge) ──┐
#   pod2 eth0 (macvlan bridge) ──┤ mv0 ══ veth ══ mv0p   (namespace "host": the node; mv0 has the
#   pod3 eth0 (L2, private)    ──┘                         default route, so it is the default master)
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_plugins macvlan host-local

HOSTNS=$(mk_netns host)
STORE=$T/store
mk_veth "$HOSTNS" mv0 mv0p
ip -n "$HOSTNS" addr add 192.168.90.1/24 dev mv0
ip -n "$HOSTNS" route add default via 192.168.90.254 dev mv0
# (lib.sh's require_kind probes without a lower device, which macvlan needs)
ip -n "$HOSTNS" link add probe0 link mv0 type macvlan 2>/dev/null || skip "kernel has no 'macvlan' link kind"
ip -n "$HOSTNS" link del probe0

macvlans() { ip -n "$1" -j -d link show | jq '[.[] | select(.linkinfo.info_kind? == "macvlan")] | length'; }
POD_LINKS="lo " BASE_RES=0
# assert_clean DESC: what hcni_expect checks after a failed call - nothing left behind
assert_clean() {
	assert_eq "$(links_in "$PE")" "$POD_LINKS" "$1: pod links"
	assert_eq "$(macvlans "$HOSTNS")" 0 "$1: macvlans in the node"
	assert_eq "$(reservations_in "$STORE")" "$BASE_RES" "$1: IPAM reservations"
}

CONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"mvnet","type":"macvlan","master":"mv0","mode":"bridge",
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.70.0.0/24","gateway":"10.70.0.254"}]],
		"routes":[{"dst":"0.0.0.0/0"}]},"dns":{"nameservers":["10.70.0.53"]}}')

info "ADD two pods on mv0 (bridge mode)"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok macvlan ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
hcni_ok macvlan ADD c2 "$P2" eth0 "$(jq -c '.runtimeConfig = {"mac":"02:00:00:00:70:02"}' <<<"$CONF")"
R2=$CNI_OUT
assert_eq "$(jqr '.interfaces | length' "$R1")" 1 "one interface"
assert_eq "$(jqr '.interfaces[0].name' "$R1")" eth0 "interface name"
assert_eq "$(jqr '.interfaces[0].sandbox' "$R1")" "$(nspath "$P1")" "sandbox"
assert_eq "$(jqr '[.ips[].interface] | tostring' "$R1")" "[0]" "ips point at interface 0"
assert_eq "$(jqr '.ips[0].address' "$R1")" 10.70.0.1/24 "pod1 address"
assert_eq "$(jqr '.dns.nameservers[0]' "$R1")" 10.70.0.53 "config DNS"
assert_eq "$(jqr '.interfaces[0].mac' "$R2")" 02:00:00:00:70:02 "runtimeConfig.mac in the result"
L1=$(ip -n "$P1" -j -d link show eth0)
assert_eq "$(jq -r '.[0].linkinfo.info_kind' <<<"$L1")" macvlan "pod1 eth0 is a macvlan"
assert_eq "$(jq -r '.[0].linkinfo.info_data.mode' <<<"$L1")" bridge "bridge mode"
assert_eq "$(jq -r '.[0].address' <<<"$L1")" "$(jqr '.interfaces[0].mac' "$R1")" "MAC in result"
assert_eq "$(ip -n "$P2" -j link show eth0 | jq -r '.[0].address')" 02:00:00:00:70:02 "pod2 MAC from runtimeConfig"
assert_eq "$(ip netns exec "$P1" cat /proc/sys/net/ipv4/conf/eth0/proxy_arp)" 1 "proxy_arp on (as the reference)"
assert_eq "$(ip -n "$P1" -j route show default | jq -r '.[0].gateway')" 10.70.0.254 "default route via the IPAM gateway"
assert_eq "$(macvlans "$HOSTNS")" 0 "nothing created in the node namespace"

info "traffic: the two pods on one master"
assert_ping "$P1" 10.70.0.2
assert_ping "$P2" 10.70.0.1

info "CHECK"
C1=$(with_prev "$CONF" "$R1")
hcni macvlan CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after ADD failed: $CNI_OUT"
hcni macvlan CHECK c1 "$P1" eth0 "$(jq -c '.mode = "vepa"' <<<"$C1")"
[[ $(jqr .msg) == *"mode bridge does not match expected value: vepa"* ]] || check_fail "CHECK with another mode: $CNI_OUT"
ip -n "$P1" route del default
hcni macvlan CHECK c1 "$P1" eth0 "$C1"
[[ $(jqr .msg) == *"route 0.0.0.0/0"* ]] || check_fail "CHECK should report the missing route: $CNI_OUT"
ip -n "$P1" route add default via 10.70.0.254
hcni macvlan CHECK c1 "$P1" eth0 "$CONF"
assert_eq "$(jqr .code)" 7 "CHECK without prevResult"

info "DEL, DEL again, DEL without the netns"
hcni_ok macvlan DEL c1 "$P1" eth0 "$CONF"
assert_eq "$(links_in "$P1")" "lo " "pod1 has only lo"
[ ! -e "$STORE/mvnet/10.70.0.1" ] || check_fail "reservation of pod1 survived DEL"
hcni_ok macvlan DEL c1 "$P1" eth0 "$CONF"
hcni_ok macvlan DEL c1 - eth0 "$CONF"
P3=$(mk_netns pod3)
hcni_ok macvlan ADD c3 "$P3" eth0 "$CONF"
IP3=$(jqr '.ips[0].address | split("/")[0]')
ip netns del "$P3"
hcni_ok macvlan DEL c3 "/run/netns/$P3" eth0 "$CONF"
[ ! -e "$STORE/mvnet/$IP3" ] || check_fail "reservation $IP3 survived DEL without netns"
# The master is gone: DEL still works (the reference needs the master even for DEL).
hcni_ok macvlan DEL c2 "$P2" eth0 "$(jq -c '.master = "gone0"' <<<"$CONF")"
assert_eq "$(links_in "$P2")" "lo " "DEL with a vanished master"

info "GC (1.1.0) and STATUS"
CONF11=$(jq -c '.cniVersion = "1.1.0"' <<<"$CONF")
P4=$(mk_netns pod4)
hcni_ok macvlan ADD c4 "$P4" eth0 "$CONF11"
hcni_ok macvlan GC "" "" "" "$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$CONF11")"
assert_eq "$(reservations_in "$STORE")" 0 "GC released the forgotten reservation"
hcni_ok macvlan STATUS "" "" "" "$CONF11"
hcni_ok macvlan DEL c4 "$P4" eth0 "$CONF11"

info "L2 only, default master, private mode, mtu, config mac"
P5=$(mk_netns pod5)
L2='{"cniVersion":"0.4.0","name":"mvl2","type":"macvlan","mode":"private","mtu":1400,"mac":"02:00:00:00:70:05","ipam":{}}'
hcni_ok macvlan ADD c5 "$P5" eth0 "$L2"
R5=$CNI_OUT
L5=$(ip -n "$P5" -j -d link show eth0)
assert_eq "$(jq -r '.[0].linkinfo.info_data.mode' <<<"$L5")" private "private mode"
assert_eq "$(jq -r '.[0].mtu' <<<"$L5")" 1400 "mtu"
assert_eq "$(jq -r '.[0].address' <<<"$L5")" 02:00:00:00:70:05 "config mac"
assert_eq "$(jq -r '.[0].flags | index("UP") != null' <<<"$L5")" true "L2 interface is up"
assert_eq "$(jqr '.ips // [] | length' "$R5")" 0 "L2: no ips"
assert_eq "$(ip -n "$P5" -j addr show eth0 | jq '[.[0].addr_info[] | select(.family=="inet")] | length')" 0 "L2: no IPv4 address"
# the link of the macvlan is mv0 (default route's device): its ifindex in the node namespace
assert_eq "$(jq -r '.[0].link_index // .[0].link' <<<"$L5" | head -1)" "$(ip -n "$HOSTNS" -j link show mv0 | jq -r '.[0].ifindex')" "default master is mv0"
hcni macvlan CHECK c5 "$P5" eth0 "$(with_prev "$L2" "$R5")"
[ "$CNI_RC" = 0 ] || check_fail "CHECK of the L2 pod: $CNI_OUT"
hcni_ok macvlan DEL c5 "$P5" eth0 "$L2"
hcni_ok macvlan DEL c5 "$P5" eth0 "$L2"

info "bad input: code, message naming key/value, nothing left behind"
PE=$(mk_netns pode)
bad() { jq -c "$1" <<<"$CONF"; }
hcni_expect 7 '"bogus"' "unknown mode" macvlan ADD c1 "$PE" eth0 "$(bad '.mode = "bogus"')"
hcni_expect 7 "invalid MTU 9000" "mtu above the master's" macvlan ADD c1 "$PE" eth0 "$(bad '.mtu = 9000')"
hcni_expect 7 "invalid MTU -1" "negative mtu" macvlan ADD c1 "$PE" eth0 "$(bad '.mtu = -1')"
hcni_expect 7 '"mtu": "1400"' "mtu as a string" macvlan ADD c1 "$PE" eth0 "$(bad '.mtu = "1400"')"
hcni_expect 7 '"master": 5' "master as a number" macvlan ADD c1 "$PE" eth0 "$(bad '.master = 5')"
hcni_expect 7 'a/b' "master with a slash" macvlan ADD c1 "$PE" eth0 "$(bad '.master = "a/b"')"
hcni_expect 7 'zz:00' "bad config mac" macvlan ADD c1 "$PE" eth0 "$(bad '.mac = "zz:00:00:00:00:01"')"
hcni_expect 4 'xx:yy' "bad CNI_ARGS MAC" macvlan ADD c1 "$PE" eth0 "$CONF" "IgnoreUnknown=1;MAC=xx:yy"
hcni_expect 999 'failed to lookup master "nosuch0"' "master does not exist" macvlan ADD c1 "$PE" eth0 "$(bad '.master = "nosuch0"')"
hcni_expect 4 CNI_NETNS "missing netns" macvlan ADD c1 - eth0 "$CONF"
hcni_expect 999 nope-ipam "IPAM plugin not found (macvlan deleted)" macvlan ADD c1 "$PE" eth0 "$(bad '.ipam.type = "nope-ipam"')"
ip -n "$PE" link add eth0 type veth peer name eth0p
POD_LINKS="eth0 eth0p lo " hcni_expect 999 'rename macvlan to "eth0"' "ifname taken in the pod" macvlan ADD c1 "$PE" eth0 "$CONF"
ip -n "$PE" link del eth0
hcni_expect 999 "203.0.113.1" "unreachable IPAM route (macvlan and address rolled back)" macvlan ADD c1 "$PE" eth0 \
	"$(bad '.ipam.routes = [{"dst":"198.51.100.0/24","gw":"203.0.113.1"}]')"
HN2=$(mk_netns host2)
HNS=$HN2 hcni_expect 999 "no default route interface found" "no master and no default route" macvlan ADD c1 "$PE" eth0 "$(bad 'del(.master)')"

if [ -x "$REF_BIN/macvlan" ]; then
	info "side by side with the reference macvlan"
	HREF=$(mk_netns href)
	mk_veth "$HREF" mv0 mv0p
	PR=$(mk_netns podr)
	PW=$(mk_netns podw)
	for mode in bridge private vepa passthru; do
		RC=$(jq -c --arg s "$T/rstore" --arg m "$mode" '.mode = $m | .ipam.dataDir = $s | .runtimeConfig = {"mac":"02:00:00:00:71:01"}' <<<"$CONF")
		WC=$(jq -c --arg s "$T/wstore" --arg m "$mode" '.mode = $m | .ipam.dataDir = $s | .runtimeConfig = {"mac":"02:00:00:00:71:01"}' <<<"$CONF")
		HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni_ok macvlan ADD cr "$PR" eth0 "$RC"
		RREF=$CNI_OUT
		hcni_ok macvlan ADD cw "$PW" eth0 "$WC"
		RW=$CNI_OUT
		# passthru: the device takes its master's MAC, and the two masters differ.
		norm() { jq -S --arg m "$2" '.interfaces |= map(.sandbox = "SB" | if .mac == $m then .mac = "MASTER" else . end)' <<<"$1"; }
		mmac() { ip -n "$1" -j link show mv0 | jq -r '.[0].address'; }
		assert_eq "$(norm "$RW" "$(mmac "$HOSTNS")")" "$(norm "$RREF" "$(mmac "$HREF")")" "$mode: result equals the reference's"
		kern() { ip -n "$1" -j -d link show eth0 | jq -c --arg m "$2" '.[0] | {mtu, address: (if .address == $m then "MASTER" else .address end), mode: .linkinfo.info_data.mode, flags}'; }
		assert_eq "$(kern "$PW" "$(mmac "$HOSTNS")")" "$(kern "$PR" "$(mmac "$HREF")")" "$mode: pod link equals the reference's"
		HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni macvlan CHECK cr "$PR" eth0 "$(with_prev "$RC" "$RREF")"
		[ "$CNI_RC" = 0 ] || check_fail "$mode: reference CHECK failed: $CNI_OUT"
		hcni macvlan CHECK cw "$PW" eth0 "$(with_prev "$WC" "$RW")"
		[ "$CNI_RC" = 0 ] || check_fail "$mode: our CHECK failed: $CNI_OUT"
		hcni_ok macvlan DEL cw "$PW" eth0 "$WC"
		HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni_ok macvlan DEL cr "$PR" eth0 "$RC"
	done
	# Both refuse an MTU above the master's with the same text.
	HNS=$HREF BIN=$REF_BIN IPATH=$REF_BIN hcni macvlan ADD cr "$PR" eth0 "$(bad '.mtu = 9000')"
	REFMSG=$(jqr .msg)
	hcni macvlan ADD cw "$PW" eth0 "$(bad '.mtu = 9000')"
	[[ $(jqr .msg) == "$REFMSG"* ]] || check_fail "mtu message differs: ours '$(jqr .msg)' vs '$REFMSG'"
fi
finish
