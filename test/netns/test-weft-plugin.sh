#!/usr/bin/env bash
# The `weft` CNI plugin: the node lease (weftd's subnet.env) turned into pod attachments.
#
#   [pod1]eth0 --veth-- cni0 (10.244.7.1/24, fd00:244:0:7::1/64) --veth-- eth0[pod2]
#              \___________ node namespace "host" (plugin runs here) ________/
#
# No lease → code 11 and nothing created; ADD → CHECK → DEL → DEL → GC; ping pod ↔ gateway and
# pod ↔ pod (v4 + v6); MTU and routes from the lease; CHECK notices a removed address; DEL without
# the pod netns and without the lease still releases the address; bad input leaves nothing behind.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd jq ping

HOSTNS=$(mk_netns host)
POD1=$(mk_netns pod1)
POD2=$(mk_netns pod2)
RUN=$T/run
DATA=$T/data
mkdir -p "$RUN" "$DATA"

conf() {
	cat <<EOF
{"cniVersion":"${1:-1.0.0}","name":"weftnet","type":"weft","runDir":"$RUN","dataDir":"$DATA"${2:-}}
EOF
}

info "no lease yet → code 11, nothing created"
hcni weft ADD c1 "$POD1" eth0 "$(conf)"
assert_ne "$CNI_RC" 0 "ADD without lease must fail"
assert_eq "$(jqr .code)" 11 "ADD without lease: code"
grep -q "subnet.env" <<<"$(jqr .msg)" || check_fail "no-lease message should name the lease file: $(jqr .msg)"
assert_eq "$(links_in "$HOSTNS")" "lo " "host links after failed ADD"
assert_eq "$(links_in "$POD1")" "lo " "pod links after failed ADD"
hcni weft STATUS "" "" "" "$(conf 1.1.0)"
assert_eq "$(jqr .code)" 50 "STATUS without lease"

cat >"$RUN/subnet.env" <<EOF
WEFT_NETWORK=10.244.0.0/16
WEFT_SUBNET=10.244.7.1/24
WEFT_NETWORK6=fd00:244::/48
WEFT_SUBNET6=fd00:244:0:7::1/64
WEFT_MTU=1400
WEFT_IPMASQ=false
EOF

info "ADD pod1 and pod2"
hcni weft ADD c1 "$POD1" eth0 "$(conf)"
[ "$CNI_RC" = 0 ] || fail "ADD pod1: $CNI_OUT $CNI_ERR"
R1=$CNI_OUT
assert_eq "$(jqr '[.interfaces[].name] | .[0]' "$R1")" cni0 "first result interface is the bridge"
assert_eq "$(jqr '.interfaces[2].sandbox' "$R1")" "/run/netns/$POD1" "container interface sandbox"
IP1=$(jqr '.ips[] | select(.address | test("^10\\.")) | .address' "$R1")
IP1_6=$(jqr '.ips[] | select(.address | test(":")) | .address' "$R1")
assert_eq "$IP1" 10.244.7.2/24 "pod1 IPv4"
assert_eq "$IP1_6" fd00:244:0:7::2/64 "pod1 IPv6"
assert_eq "$(jqr '[.routes[].dst] | sort | join(",")' "$R1")" "0.0.0.0/0,10.244.0.0/16,::/0,fd00:244::/48" "routes"
hcni weft ADD c2 "$POD2" eth0 "$(conf)"
[ "$CNI_RC" = 0 ] || fail "ADD pod2: $CNI_OUT $CNI_ERR"
R2=$CNI_OUT
IP2=$(jqr '.ips[0].address' "$R2")
assert_eq "$IP2" 10.244.7.3/24 "pod2 IPv4"

assert_eq "$(ip -n "$POD1" -j link show eth0 | jq -r '.[0].mtu')" 1400 "pod MTU from the lease"
assert_eq "$(ip -n "$HOSTNS" -j addr show cni0 | jq -r '[.[0].addr_info[] | select(.scope == "global") | .local] | sort | join(",")')" \
	"10.244.7.1,fd00:244:0:7::1" "gateway addresses on cni0"
HVETH=$(jqr '.interfaces[1].name' "$R1")
assert_eq "$(ip -n "$HOSTNS" -j -d link show "$HVETH" | jq -r '.[0].linkinfo.info_slave_data.hairpin')" true "hairpin on"
ip -n "$POD1" -j route show default | jq -e '.[0].gateway == "10.244.7.1"' >/dev/null || check_fail "pod1 default route"

info "traffic"
assert_ping "$POD1" 10.244.7.1
assert_ping "$POD1" "${IP2%/*}"
assert_ping "$POD2" "${IP1%/*}"
ip netns exec "$POD1" ping -6 -c1 -W2 fd00:244:0:7::1 >/dev/null 2>&1 || check_fail "pod1 → v6 gateway"
ip netns exec "$POD2" ping -6 -c1 -W2 "${IP1_6%/*}" >/dev/null 2>&1 || check_fail "pod2 → pod1 v6"

info "CHECK"
hcni weft CHECK c1 "$POD1" eth0 "$(conf 1.0.0 ",\"prevResult\":$R1")"
assert_eq "$CNI_RC" 0 "CHECK pod1: $CNI_OUT"
ip -n "$POD1" addr del "$IP1" dev eth0
hcni weft CHECK c1 "$POD1" eth0 "$(conf 1.0.0 ",\"prevResult\":$R1")"
assert_ne "$CNI_RC" 0 "CHECK must fail after the address was removed"
grep -q "10.244.7.2" <<<"$(jqr .msg)" || check_fail "CHECK message should name the missing address: $(jqr .msg)"
hcni weft CHECK c1 "$POD1" eth0 "$(conf)"
assert_eq "$(jqr .code)" 7 "CHECK without prevResult"

info "DEL, DEL again"
hcni weft DEL c1 "$POD1" eth0 "$(conf)"
assert_eq "$CNI_RC" 0 "DEL pod1: $CNI_OUT"
assert_eq "$(links_in "$POD1")" "lo " "pod1 links after DEL"
[ ! -e "$DATA/weftnet/10.244.7.2" ] || check_fail "pod1 reservation still there after DEL"
hcni weft DEL c1 "$POD1" eth0 "$(conf)"
assert_eq "$CNI_RC" 0 "second DEL"

info "DEL with the netns gone and no lease file (weftd uninstalled) still releases the address"
ip netns del "$POD2"
mv "$RUN/subnet.env" "$RUN/subnet.env.saved"
hcni weft DEL c2 "" eth0 "$(conf)"
assert_eq "$CNI_RC" 0 "DEL without netns and lease: $CNI_OUT"
[ ! -e "$DATA/weftnet/10.244.7.3" ] || check_fail "pod2 reservation still there"
mv "$RUN/subnet.env.saved" "$RUN/subnet.env"

info "GC releases a leaked reservation"
printf 'leaked\r\neth0' >"$DATA/weftnet/10.244.7.50"
hcni weft GC "" "" "" "$(conf 1.1.0 ',"cni.dev/valid-attachments":[]')"
assert_eq "$CNI_RC" 0 "GC: $CNI_OUT"
[ ! -e "$DATA/weftnet/10.244.7.50" ] || check_fail "GC did not release the leaked reservation"

info "GC without a lease (weftd gone) still collects, keeping valid attachments"
printf 'keep\r\neth0' >"$DATA/weftnet/10.244.7.60"
printf 'drop\r\neth0' >"$DATA/weftnet/10.244.7.61"
mv "$RUN/subnet.env" "$RUN/subnet.env.saved"
hcni weft GC "" "" "" "$(conf 1.1.0 ',"cni.dev/valid-attachments":[{"containerID":"keep","ifname":"eth0"}]')"
assert_eq "$CNI_RC" 0 "GC without lease: $CNI_OUT"
[ -e "$DATA/weftnet/10.244.7.60" ] || check_fail "GC without lease released a valid attachment"
[ ! -e "$DATA/weftnet/10.244.7.61" ] || check_fail "GC without lease kept a stale reservation"
mv "$RUN/subnet.env.saved" "$RUN/subnet.env"
rm -f "$DATA/weftnet/10.244.7.60"

info "bad input leaves nothing behind"
POD3=$(mk_netns pod3)
hcni weft ADD "../../etc" "$POD3" eth0 "$(conf)"
assert_eq "$(jqr .code)" 4 "container ID with path tricks"
hcni weft ADD c3 "$POD3" eth0 "$(conf 1.0.0 ',"mtu":"big"')"
assert_eq "$(jqr .code)" 7 "invalid mtu"
hcni weft ADD c3 "$POD3" "bad/name" "$(conf)"
assert_eq "$(jqr .code)" 4 "invalid ifname"
ip -n "$POD3" link add eth0 type veth peer name eth1
hcni weft ADD c3 "$POD3" eth0 "$(conf)"
assert_ne "$CNI_RC" 0 "ADD onto an existing eth0 must fail"
assert_eq "$(links_in "$POD3")" "eth0 eth1 lo " "pod3 untouched after failed ADD"
# shellcheck disable=SC2010 # reservation files are IP literals
assert_eq "$(ls "$DATA/weftnet" | grep -c '^10\.' || true)" 0 "no reservation left after failed ADDs"
assert_eq "$(veths_in "$HOSTNS")" 0 "no veth left in the node"

finish
