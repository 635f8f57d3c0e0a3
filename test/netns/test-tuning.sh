#!/usr/bin/env bash
# tuning chained after bridge: ADD → CHECK → DEL → DEL → GC, sysctl/mac/mtu/promisc/allmulti in
# the kernel, originals saved in dataDir (the reference's file name and keys) and restored on DEL,
# precedence of CNI_ARGS / runtimeConfig / args.cni, bad input leaves nothing behind.
#
#   pod (eth0) ──veth── br0 10.70.0.1 (namespace "host")
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_plugins tuning bridge

# shellcheck disable=SC2034 # where lib.sh's hcni runs the plugins
HOSTNS=$(mk_netns host)
STORE=$T/store
DD=$T/tuning

link() { ip -n "$P" -j -d link show eth0 | jq -r ".[0] | $1"; }
sc() { ip netns exec "$P" cat "/proc/sys/$1"; }
state() { echo "$(link '"\(.address) \(.mtu) \(.promiscuity) \(.flags | index("ALLMULTI") != null)"') $(sc net/ipv4/conf/eth0/arp_filter) $(sc net/core/somaxconn)"; }

P=$(mk_netns pod)
hcni_ok bridge ADD c1 "$P" eth0 "$(jq -c -n --arg s "$STORE" '{"cniVersion":"1.0.0","name":"tnet","type":"bridge","bridge":"br0",
	"isGateway":true,"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":"10.70.0.0/24"}]]}}')"
PREV=$CNI_OUT
ORIG=$(state)

TU=$(jq -c -n --arg dd "$DD" '{"cniVersion":"1.0.0","name":"tnet","type":"tuning","dataDir":$dd,"mac":"02:70:00:00:00:01",
	"mtu":1400,"promisc":true,"allmulti":true,"sysctl":{"net.ipv4.conf.IFNAME.arp_filter":"1","net.core.somaxconn":"777"}}')

info "ADD"
hcni_ok tuning ADD c1 "$P" eth0 "$(with_prev "$TU" "$PREV")"
R=$CNI_OUT
assert_eq "$(jqr '.interfaces[2].mac' "$R")" 02:70:00:00:00:01 "new MAC in the result"
assert_eq "$(jqr '.ips' "$R")" "$(jqr '.ips' "$PREV")" "ips passed through"
assert_eq "$(state)" "02:70:00:00:00:01 1400 1 true 1 777" "mac mtu promisc allmulti sysctls in the kernel"
[ -f "$DD/c1_eth0.json" ] || check_fail "no backup $DD/c1_eth0.json"
assert_eq "$(jq -r '.mac' "$DD/c1_eth0.json")" "$(jqr '.interfaces[2].mac' "$PREV")" "original MAC saved (reference key)"
assert_eq "$(jq -c '[.mtu, .promisc, .allmulti]' "$DD/c1_eth0.json")" "[1500,false,false]" "original mtu/promisc/allmulti saved"
assert_ping "$P" 10.70.0.1

info "CHECK"
hcni_ok tuning CHECK c1 "$P" eth0 "$(with_prev "$TU" "$R")"
ip -n "$P" link set eth0 mtu 1300
hcni_err 999 "MTU of eth0 is 1400" tuning CHECK c1 "$P" eth0 "$(with_prev "$TU" "$R")"
ip -n "$P" link set eth0 mtu 1400
ip netns exec "$P" sh -c 'echo 0 > /proc/sys/net/ipv4/conf/eth0/arp_filter'
hcni_err 999 "arp_filter" tuning CHECK c1 "$P" eth0 "$(with_prev "$TU" "$R")"
ip netns exec "$P" sh -c 'echo 1 > /proc/sys/net/ipv4/conf/eth0/arp_filter'
hcni_err 7 "prevResult" tuning CHECK c1 "$P" eth0 "$TU"

info "DEL restores everything, DEL again"
hcni_ok tuning DEL c1 "$P" eth0 "$TU"
assert_eq "$(state)" "$ORIG" "original values back"
[ ! -e "$DD/c1_eth0.json" ] || check_fail "backup survived DEL"
hcni_ok tuning DEL c1 "$P" eth0 "$TU"
hcni_ok tuning GC "" "" "" '{"cniVersion":"1.1.0","name":"tnet","type":"tuning","cni.dev/valid-attachments":[]}'

info "a backup written by the reference is restored by us"
if [ -x "$REF_BIN/tuning" ]; then
	BIN=$REF_BIN hcni_ok tuning ADD c2 "$P" eth0 "$(with_prev "$(jq -c 'del(.sysctl)' <<<"$TU")" "$PREV")"
	hcni_ok tuning DEL c2 "$P" eth0 "$TU"
	assert_eq "$(state)" "$ORIG" "reference ADD, our DEL"
fi

info "precedence: config < CNI_ARGS MAC < runtimeConfig.mac < args.cni.mac"
M=$(jq -c '{cniVersion, name, type, dataDir, mac}' <<<"$TU")
hcni_ok tuning ADD c3 "$P" eth0 "$(with_prev "$M" "$PREV")" "IgnoreUnknown=1;MAC=02:70:00:00:00:02"
assert_eq "$(link .address)" 02:70:00:00:00:02 "CNI_ARGS MAC over config"
hcni_ok tuning ADD c3 "$P" eth0 "$(with_prev "$(jq -c '.runtimeConfig = {mac: "02:70:00:00:00:03"}' <<<"$M")" "$PREV")" "MAC=02:70:00:00:00:02"
assert_eq "$(link .address)" 02:70:00:00:00:03 "runtimeConfig.mac over CNI_ARGS"
hcni_ok tuning ADD c3 "$P" eth0 "$(with_prev "$(jq -c '.runtimeConfig = {mac: "02:70:00:00:00:03"} | .args = {cni: {mac: "02:70:00:00:00:04", mtu: 1450}}' <<<"$M")" "$PREV")"
assert_eq "$(link '"\(.address) \(.mtu)"')" "02:70:00:00:00:04 1450" "args.cni wins"
hcni_ok tuning DEL c3 "$P" eth0 "$M"
assert_eq "$(state)" "$ORIG" "the first ADD's originals are restored after repeated ADDs"

info "bad input: right code, names the key, nothing changed or left behind"
bad() { hcni_err "$1" "$2" tuning ADD c4 "$P" eth0 "$(with_prev "$(jq -c "$3" <<<"$M")" "$PREV")"; }
bad 7 "kernel.pid_max" '.sysctl = {"kernel.pid_max": "1"}'
bad 7 "'..'" '.sysctl = {"net/ipv4/../../kernel/pid_max": "1"}'
bad 7 "for interface \"lo\"" '.sysctl = {"net.ipv4.conf.lo.arp_filter": "1"}'
bad 7 "nope" '.sysctl = {"net.ipv4.conf.eth0.nope": "1"}'
bad 7 "value must be a string" '.sysctl = {"net.core.somaxconn": 5}'
bad 7 "zz" '.mac = "zz"'
bad 7 "mtu" '.mtu = -5'
bad 7 "mtu" '.mtu = 70000 | del(.mac)'
bad 7 "allmulti" '.allmulti = "yes"'
hcni_err 7 "prevResult" tuning ADD c4 "$P" eth0 "$M"
# A late failure (mtu rejected by the kernel) must undo the earlier steps (sysctl, MAC).
bad 7 "mtu" '.sysctl = {"net.core.somaxconn": "999"} | .mtu = 70000'
assert_eq "$(state)" "$ORIG" "failed ADDs changed nothing"
assert_eq "$(find "$DD" -type f 2>/dev/null | wc -l)" 0 "failed ADDs left no backup"

info "DEL with the netns gone removes the backup"
hcni_ok tuning ADD c5 "$P" eth0 "$(with_prev "$M" "$PREV")"
ip netns del "$P"
hcni_ok tuning DEL c5 "/run/netns/$P" eth0 "$M"
[ ! -e "$DD/c5_eth0.json" ] || check_fail "backup survived DEL without netns"
finish
