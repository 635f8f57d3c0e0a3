#!/usr/bin/env bash
# bridge plugin: ADD → CHECK → DEL → DEL → GC with host-local, real traffic, every option
# visible in the kernel, CHECK failures, DEL without a netns, macspoofchk.
#
#   pod1 (eth0) ──veth──┐
#   pod2 (eth0) ──veth──┤ br0 10.20.0.1/24 fd00:20::1/64   (namespace "host": plays the node)
#   pod3, pod4 ─────────┘
#   podo ───── br1 (mtu 1400, hairpin, isolated, L2)   podp ── br2 (promisc)   podv/podt ── br6/br7 (vlan/trunk)
#   podm ───── br3 (MAC from CNI_ARGS, ipam {})                  podd ── br4 (disableContainerInterface)
#
# The plugin runs inside the "host" namespace (ip netns exec), never in the real root namespace.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip bridge nft jq ping
require_plugins bridge host-local

HOSTNS=$(mk_netns host)
STORE=$T/store
# Our host-local only: the reference is never a silent stand-in for a plugin under test.
# shellcheck disable=SC2034 # the CNI_PATH of lib.sh's hcni
IPAM_PATH=$WEFT_BIN

masq_elems() { ip netns exec "$HOSTNS" nft -j list ruleset | jq -r '[.nftables[] | select(.set?.name? | tostring | test("^br-")) | .set.elem[]? | .elem?.comment? // empty] | .[]' | sort | tr '\n' ' '; }

CONF=$(jq -c --arg store "$STORE" '.' <<EOF
{"cniVersion":"1.0.0","name":"brtest","type":"bridge","bridge":"br0","isDefaultGateway":true,
 "ipMasq":true,"macspoofchk":true,
 "ipam":{"type":"host-local","dataDir":"$STORE",
         "ranges":[[{"subnet":"10.20.0.0/24"}],[{"subnet":"fd00:20::/64"}]]}}
EOF
)

info "ADD two pods on a dual-stack bridge"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok bridge ADD c1 "$P1" eth0 "$CONF"
R1=$CNI_OUT
hcni_ok bridge ADD c2 "$P2" eth0 "$CONF"
R2=$CNI_OUT

assert_eq "$(jqr '[.interfaces[].name] | .[0]' "$R1")" br0 "first interface is the bridge"
assert_eq "$(jqr '.interfaces[2].name' "$R1")" eth0 "third interface is the container's"
assert_eq "$(jqr '.interfaces[2].sandbox' "$R1")" "$(nspath "$P1")" "container sandbox"
assert_eq "$(jqr '[.interfaces[] | .mac | test("^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")] | all' "$R1")" true "every interface has a MAC"
assert_eq "$(jqr '[.ips[].interface] | unique | tostring' "$R1")" "[2]" "ips point at the container interface"
assert_eq "$(jqr '[.ips[].address] | tostring' "$R1")" '["10.20.0.2/24","fd00:20::2/64"]' "pod1 addresses"
assert_eq "$(jqr '[.ips[].gateway] | tostring' "$R1")" '["10.20.0.1","fd00:20::1"]' "gateways"
assert_eq "$(jqr '[.routes[] | "\(.dst) \(.gw)"] | tostring' "$R1")" '["0.0.0.0/0 10.20.0.1","::/0 fd00:20::1"]' "default routes"
VETH1=$(jqr '.interfaces[1].name' "$R1")
[[ $VETH1 =~ ^veth[0-9a-f]{8}$ ]] || check_fail "host veth name '$VETH1' is not veth+8 hex"

# Kernel state: bridge with both gateways, the veth a port of it, the pod's addresses and routes.
BR=$(ip -n "$HOSTNS" -j addr show br0)
assert_eq "$(jq -r '[.[0].addr_info[] | select(.scope=="global") | "\(.local)/\(.prefixlen)"] | sort | tostring' <<<"$BR")" \
	'["10.20.0.1/24","fd00:20::1/64"]' "gateway addresses on br0"
assert_eq "$(jqr '.[0].address' "$BR")" "$(jqr '.interfaces[0].mac' "$R2")" "bridge MAC in result"
assert_eq "$(ip -n "$HOSTNS" -j link show "$VETH1" | jq -r '.[0].master')" br0 "host veth is a port of br0"
assert_eq "$(ip -n "$HOSTNS" -j link show "$VETH1" | jq -r '.[0].address')" "$(jqr '.interfaces[1].mac' "$R1")" "host veth MAC in result"
assert_eq "$(ip -n "$P1" -j link show eth0 | jq -r '.[0].address')" "$(jqr '.interfaces[2].mac' "$R1")" "container MAC in result"
assert_eq "$(ip -n "$P1" -j addr show eth0 | jq -r '[.[0].addr_info[] | select(.scope=="global") | "\(.local)/\(.prefixlen)"] | sort | tostring')" \
	'["10.20.0.2/24","fd00:20::2/64"]' "pod1 addresses in the kernel"
assert_eq "$(ip -n "$P1" -j addr show eth0 | jq -r '[.[0].addr_info[] | select(.family=="inet6" and .scope=="global") | .nodad] | all')" true \
	"enabledad=false: IPv6 addresses are nodad"
assert_eq "$(ip netns exec "$P1" cat /proc/sys/net/ipv6/conf/eth0/accept_dad)" 0 "accept_dad=0 in the pod"
assert_eq "$(ip -n "$P1" -j route show default | jq -r '.[0].gateway')" 10.20.0.1 "IPv4 default route in pod"
assert_eq "$(ip -n "$P1" -6 -j route show default | jq -r '.[0].gateway')" fd00:20::1 "IPv6 default route in pod"
assert_eq "$(ip netns exec "$HOSTNS" cat /proc/sys/net/ipv4/ip_forward)" 1 "ip_forward on in the host namespace"
assert_eq "$(ip netns exec "$HOSTNS" cat /proc/sys/net/ipv6/conf/all/forwarding)" 1 "IPv6 forwarding on"
assert_eq "$(masq_elems)" "brtest/c1/eth0 brtest/c1/eth0 brtest/c1/eth0 brtest/c1/eth0 brtest/c1/eth0 brtest/c1/eth0 brtest/c2/eth0 brtest/c2/eth0 brtest/c2/eth0 brtest/c2/eth0 brtest/c2/eth0 brtest/c2/eth0 " \
	"masq (masq4/6, local4/6) and macspoof (ports, allow) elements for both pods"

info "traffic: pod ↔ gateway, pod ↔ pod, both families"
assert_ping "$P1" 10.20.0.1
assert_ping "$P1" fd00:20::1
assert_ping "$P1" 10.20.0.3
assert_ping "$P2" 10.20.0.2
assert_ping "$P2" fd00:20::2
assert_ping "$HOSTNS" 10.20.0.2

info "CHECK"
C1=$(with_prev "$CONF" "$R1")
hcni bridge CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after ADD failed: $CNI_OUT"

ip -n "$P1" addr del 10.20.0.2/24 dev eth0
hcni_err "" "missing address 10.20.0.2/24" bridge CHECK c1 "$P1" eth0 "$C1"
ip -n "$P1" addr add 10.20.0.2/24 dev eth0
ip -n "$P1" route add default via 10.20.0.1
hcni bridge CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after restoring the address failed: $CNI_OUT"

ip -n "$P1" -6 route del default
hcni_err "" "route ::/0 via fd00:20::1" bridge CHECK c1 "$P1" eth0 "$C1"
ip -n "$P1" -6 route add default via fd00:20::1

ip -n "$HOSTNS" link set "$VETH1" nomaster
hcni_err "" "$VETH1 is not attached" bridge CHECK c1 "$P1" eth0 "$C1"
ip -n "$HOSTNS" link set "$VETH1" master br0
hcni bridge CHECK c1 "$P1" eth0 "$C1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after re-attaching failed: $CNI_OUT"
hcni_err 7 "prevResult" bridge CHECK c1 "$P1" eth0 "$CONF"

info "macspoofchk drops frames with a changed source MAC"
MAC1=$(jqr '.interfaces[2].mac' "$R1")
assert_ping "$P1" 10.20.0.3
ip -n "$P1" link set eth0 address 02:de:ad:be:ef:01
ip -n "$P1" neigh flush dev eth0
assert_no_ping "$P1" 10.20.0.3
ip -n "$P1" link set eth0 address "$MAC1"
assert_ping "$P1" 10.20.0.3

info "DEL, DEL again"
hcni_ok bridge DEL c1 "$P1" eth0 "$CONF"
[ ! -e "$STORE/brtest/10.20.0.2" ] || check_fail "IPv4 reservation of pod1 survived DEL"
[ ! -e "$STORE/brtest/fd00:20::2" ] || check_fail "IPv6 reservation of pod1 survived DEL"
assert_eq "$(ip -n "$P1" -j link show | jq -r '[.[].ifname] | tostring')" '["lo"]' "pod1 has only lo after DEL"
ip -n "$HOSTNS" link show "$VETH1" >/dev/null 2>&1 && check_fail "host veth $VETH1 survived DEL"
[[ "$(masq_elems)" != *c1/eth0* ]] || check_fail "nft elements of c1 survived DEL: $(masq_elems)"
hcni_ok bridge DEL c1 "$P1" eth0 "$CONF"
assert_ping "$P2" 10.20.0.1

info "DEL with the netns already gone still releases the IP and the nft elements"
P3=$(mk_netns pod3)
hcni_ok bridge ADD c3 "$P3" eth0 "$CONF"
IP3=$(jqr '.ips[0].address | split("/")[0]')
[ -e "$STORE/brtest/$IP3" ] || check_fail "no reservation file for $IP3"
ip netns del "$P3"
hcni_ok bridge DEL c3 "/run/netns/$P3" eth0 "$CONF"
[ ! -e "$STORE/brtest/$IP3" ] || check_fail "reservation $IP3 survived DEL without netns"
[[ "$(masq_elems)" != *c3/eth0* ]] || check_fail "nft elements of c3 survived DEL without netns"

info "GC (cniVersion 1.1.0): c2 valid, a forgotten c4 collected"
CONF11=$(jq -c '.cniVersion = "1.1.0"' <<<"$CONF")
P4=$(mk_netns pod4)
hcni_ok bridge ADD c4 "$P4" eth0 "$CONF11"
IP4=$(jqr '.ips[0].address | split("/")[0]')
GC=$(jq -c '. + {"cni.dev/valid-attachments": [{"containerID":"c2","ifname":"eth0"}]}' <<<"$CONF11")
hcni_ok bridge GC "" "" "" "$GC"
[[ "$(masq_elems)" != *c4/eth0* ]] || check_fail "GC left nft elements of c4: $(masq_elems)"
[[ "$(masq_elems)" == *c2/eth0* ]] || check_fail "GC removed nft elements of the valid c2"
[ ! -e "$STORE/brtest/$IP4" ] || check_fail "GC left the reservation of c4 ($IP4)"
[ -e "$STORE/brtest/10.20.0.3" ] || check_fail "GC removed the valid reservation of c2"
hcni_ok bridge STATUS "" "" "" "$CONF11"
hcni_ok bridge DEL c4 "$P4" eth0 "$CONF11"
hcni_ok bridge DEL c2 "$P2" eth0 "$CONF"
assert_eq "$(reservations_in "$STORE/brtest")" 0 "IPAM store empty"
assert_eq "$(masq_elems)" "" "no nft elements left"

info "options: mtu, hairpinMode, portIsolation (L2)"
OPTS='{"cniVersion":"1.0.0","name":"opts","type":"bridge","bridge":"br1","mtu":1400,"hairpinMode":true,"portIsolation":true,"ipam":{}}'
PO=$(mk_netns podo)
hcni_ok bridge ADD co "$PO" eth0 "$OPTS"
RO=$CNI_OUT
VO=$(jqr '.interfaces[1].name' "$RO")
L=$(ip -n "$HOSTNS" -j -d link show "$VO")
assert_eq "$(jq -r '.[0].mtu' <<<"$L")" 1400 "host veth mtu"
assert_eq "$(ip -n "$PO" -j link show eth0 | jq -r '.[0].mtu')" 1400 "container mtu"
assert_eq "$(ip -n "$HOSTNS" -j link show br1 | jq -r '.[0].mtu')" 1400 "bridge mtu"
assert_eq "$(jq -r '.[0].linkinfo.info_slave_data.hairpin' <<<"$L")" true "hairpin on"
assert_eq "$(jq -r '.[0].linkinfo.info_slave_data.isolated' <<<"$L")" true "port isolated"
assert_eq "$(jqr '.ips // [] | length' "$RO")" 0 "L2 only: no ips"
assert_eq "$(ip -n "$PO" -j addr show eth0 | jq -r '[.[0].addr_info[] | select(.family=="inet")] | length')" 0 "L2 only: no IPv4 address"
assert_eq "$(ip -n "$PO" -j link show eth0 | jq -r '.[0].flags | index("UP") != null')" true "L2 container iface up"
assert_eq "$(ip -n "$HOSTNS" -j addr show br1 | jq -r '[.[0].addr_info[] | select(.family=="inet")] | length')" 0 "L2: no gateway on br1"
hcni bridge CHECK co "$PO" eth0 "$(with_prev "$OPTS" "$RO")"
[ "$CNI_RC" = 0 ] || check_fail "CHECK of the L2 pod failed: $CNI_OUT"

info "options: promiscMode"
PP=$(mk_netns podp)
hcni_ok bridge ADD cp "$PP" eth0 '{"cniVersion":"1.0.0","name":"promisc","type":"bridge","bridge":"br2","promiscMode":true}'
assert_eq "$(ip -n "$HOSTNS" -j link show br2 | jq -r '.[0].flags | index("PROMISC") != null')" true "bridge promisc"

# Bridge VLAN filtering is a kernel build option (CONFIG_BRIDGE_VLAN_FILTERING).
if ip -n "$HOSTNS" link add wvprobe type bridge vlan_filtering 1 >/dev/null 2>&1; then
	ip -n "$HOSTNS" link del wvprobe
	info "options: vlan (default vlan dropped), vlanTrunk (default vlan kept)"
	PV=$(mk_netns podv)
	hcni_ok bridge ADD cv "$PV" eth0 '{"cniVersion":"1.0.0","name":"vlan","type":"bridge","bridge":"br6","vlan":100,
		"preserveDefaultVlan":false,"ipam":{}}'
	VV=$(jqr '.interfaces[1].name')
	assert_eq "$(ip -n "$HOSTNS" -j -d link show br6 | jq -r '.[0].linkinfo.info_data.vlan_filtering')" 1 "vlan_filtering on"
	assert_eq "$(bridge -n "$HOSTNS" -j vlan show dev "$VV" | jq -c '[.[0].vlans[] | {vlan, flags}]')" \
		'[{"vlan":100,"flags":["PVID","Egress Untagged"]}]' "access vlan 100 only"
	PT=$(mk_netns podt)
	hcni_ok bridge ADD ct "$PT" eth0 '{"cniVersion":"1.0.0","name":"trunk","type":"bridge","bridge":"br7",
		"vlanTrunk":[{"id":5},{"minID":10,"maxID":12}]}'
	VT=$(jqr '.interfaces[1].name')
	assert_eq "$(bridge -n "$HOSTNS" -j vlan show dev "$VT" | jq -c '[.[0].vlans[] | .vlan] | sort')" '[1,5,10,11,12]' \
		"trunk vlans 5,10-12 plus default 1"
	assert_eq "$(bridge -n "$HOSTNS" -j vlan show dev "$VT" | jq -c '[.[0].vlans[] | select(.vlan != 1) | .flags // [] | length] | add')" 0 \
		"trunk vlans are tagged"
else
	info "SKIP vlan/vlanTrunk checks: this kernel has no bridge VLAN filtering"
fi

info "MAC from CNI_ARGS, ipam {}"
PM=$(mk_netns podm)
hcni_ok bridge ADD cm "$PM" eth0 '{"cniVersion":"1.0.0","name":"mac","type":"bridge","bridge":"br3","ipam":{}}' \
	"IgnoreUnknown=1;MAC=02:11:22:33:44:55"
assert_eq "$(jqr '.interfaces[2].mac')" 02:11:22:33:44:55 "MAC in result"
assert_eq "$(ip -n "$PM" -j link show eth0 | jq -r '.[0].address')" 02:11:22:33:44:55 "MAC in the pod"
hcni_ok bridge ADD cm2 "$PM" eth1 '{"cniVersion":"1.0.0","name":"mac","type":"bridge","bridge":"br3","ipam":{},
	"runtimeConfig":{"mac":"02:11:22:33:44:66"}}' "IgnoreUnknown=1;MAC=02:11:22:33:44:55"
assert_eq "$(ip -n "$PM" -j link show eth1 | jq -r '.[0].address')" 02:11:22:33:44:66 "runtimeConfig.mac wins over CNI_ARGS"

info "disableContainerInterface"
PD=$(mk_netns podd)
hcni_ok bridge ADD cd "$PD" eth0 '{"cniVersion":"1.0.0","name":"dis","type":"bridge","bridge":"br4","disableContainerInterface":true}'
assert_eq "$(ip -n "$PD" -j link show eth0 | jq -r '.[0].flags | index("UP") != null')" false "container iface left down"

info "enabledad: ADD returns only once DAD is done (no tentative address left)"
PE=$(mk_netns pode)
hcni_ok bridge ADD ce "$PE" eth0 "$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"dad","type":"bridge",
	"bridge":"br8","isGateway":true,"enabledad":true,
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"fd00:88::/64"}]]}}')"
assert_eq "$(ip netns exec "$PE" cat /proc/sys/net/ipv6/conf/eth0/accept_dad)" 1 "accept_dad=1"
assert_eq "$(ip -n "$PE" -6 -j addr show dev eth0 scope global | jq -c '[.[0].addr_info[] | select(.local) | {local, tentative: (.tentative // false), nodad: (.nodad // false)}]')" \
	'[{"local":"fd00:88::2","tentative":false,"nodad":false}]' "address with DAD done"

info "isGateway without isDefaultGateway: gateway on the bridge, no default route"
PG=$(mk_netns podg)
GWCONF=$(jq -c --arg store "$STORE" -n '{"cniVersion":"1.0.0","name":"gw","type":"bridge","bridge":"br5","isGateway":true,
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.21.0.0/24","gateway":"10.21.0.254"}]],
	"routes":[{"dst":"192.0.2.0/24"}]}}')
hcni_ok bridge ADD cg "$PG" eth0 "$GWCONF"
assert_eq "$(jqr '.routes | length')" 1 "only IPAM's route"
assert_eq "$(ip -n "$PG" -j route show default | jq length)" 0 "no default route in pod"
assert_eq "$(ip -n "$PG" -j route show 192.0.2.0/24 | jq -r '.[0].gateway')" 10.21.0.254 "IPAM route via IPAM gateway"
assert_eq "$(ip -n "$HOSTNS" -j addr show br5 | jq -r '[.[0].addr_info[] | select(.family=="inet") | "\(.local)/\(.prefixlen)"] | tostring')" \
	'["10.21.0.254/24"]' "IPAM gateway on br5"
assert_ping "$PG" 10.21.0.254
info "a different gateway address without forceAddress is refused; with it, replaced"
PG2=$(mk_netns podg2)
GW2=$(jq -c '.ipam.ranges[0][0].gateway = "10.21.0.253"' <<<"$GWCONF")
hcni_err "" "already has an IP address different from 10.21.0.253/24" bridge ADD cg2 "$PG2" eth0 "$GW2"
assert_eq "$(ip -n "$PG2" -j link show | jq -r '[.[].ifname] | tostring')" '["lo"]' "failed ADD left nothing in the pod"
hcni_ok bridge ADD cg2 "$PG2" eth0 "$(jq -c '.forceAddress = true' <<<"$GW2")"
assert_eq "$(ip -n "$HOSTNS" -j addr show br5 | jq -r '[.[0].addr_info[] | select(.family=="inet") | .local] | tostring')" \
	'["10.21.0.253"]' "forceAddress replaced the gateway"

finish
