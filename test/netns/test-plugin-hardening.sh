#!/usr/bin/env bash
# Hardening of the CNI plugins (issue 7, items 8-13): each section reproduces one defect end to end
# with the real binaries, checks the fixed behaviour, that nothing is left behind after a failure,
# and DEL twice.
#
#   [pod1]eth0 ──veth── br0 / cni0 (namespace "host": plugins run here) ──veth── eth0[pod2]
#   $T/<section>/...  host-local stores; $T/full is a 256 KiB tmpfs mounted only in a private
#                     mount namespace (a sleeping `unshare -m` holds it; plugins run there via nsenter)
#
# What the reference plugins (/usr/lib/cni, 1.1.1) do with the same input, run by hand:
#  12  CNI_PATH optional for ADD/CHECK/DEL: loopback and an L2 bridge work without it; a bridge that
#      delegates IPAM fails (code 4, naming CNI_PATH) and leaves nothing; DEL of it too.
#      Reference: code 4 "required env variables [CNI_PATH] missing" for every plugin and command.
#  11  host-local refuses subnets shorter than /8, and the unspecified, loopback and multicast ranges
#      (code 7 naming key and value) on ADD; DEL with such a config still releases. /8, link-local
#      accepted. Reference: hands out 127.0.0.2/8 and 224.0.0.2/24; 0.0.0.0/0 and ::/64 fail with a
#      garbled "no IP addresses available in range set: ?01-255.255.255.254" (999).
#  10  a FIFO / a symlink to /dev/zero named like an address in the store: ADD, CHECK, DEL and GC
#      neither hang nor fail; the entries are skipped, logged and left alone.
#      Reference: DEL hangs on either (killed after 5 s).
#   8  full disk: code 5 (I/O failure) "No space left on device" with the store path, not "range
#      exhausted"; the store is unchanged; DEL works on the full disk; a really full range still
#      says so. Reference: 999 "failed to allocate for range 0: write <path>: no space left on device".
#   9  container IDs of 200 and 4000 characters with bridge ipMasq+macspoofchk, portmap, firewall
#      and ptp ipMasq: ADD, CHECK, GC (by attachment), DEL, DEL again; the element comments carry
#      the hashed ID (checked against an FNV-1a model here). DEL of an attachment that cannot
#      exist succeeds. Reference: not compared here (its ipMasq/portmap/firewall use iptables).
#  13  weft (and tuning) DEL: a netns it cannot open (EACCES) is reported and the pod's interface
#      (tuning: its backup) is kept for the retry; a netns that is gone (ENOENT, or not a netns any
#      more) is success.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip nft jq nsenter unshare setpriv timeout mkfifo
require_plugins loopback bridge ptp portmap firewall host-local weft tuning

HOSTNS=$(mk_netns host)
POD1=$(mk_netns pod1)
POD2=$(mk_netns pod2)
P1=$(nspath "$POD1")
P2=$(nspath "$POD2")

# xcni NODE PLUGIN CMD CID NETNS IFNAME CONF: lib.sh's _cni_run plus what it cannot do, all under a
# 20 s timeout (a hang is rc 124, a failure): XPATH= the CNI_PATH ("-" leaves it unset; default
# $WEFT_BIN), XMNT=PID runs the plugin in that process's mount namespace, XPRIV="caps to drop"
# runs it without those capabilities. NETNS "-" leaves CNI_NETNS unset; a bare name is a netns.
xcni() {
	local node=$1 plugin=$2 cmd=$3 cid=$4 netns=$5 ifname=$6 conf=$7
	local -a pre=(timeout 20) env=(CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" CNI_IFNAME="$ifname")
	[ -z "$node" ] || pre+=(ip netns exec "$node")
	[ -z "${XMNT:-}" ] || pre+=(nsenter --mount="/proc/$XMNT/ns/mnt" --)
	[ -z "${XPRIV:-}" ] || pre+=(setpriv --bounding-set "$XPRIV" --)
	if [ "$netns" != - ]; then
		[ "${netns#/}" != "$netns" ] || netns=$(nspath "$netns")
		env+=(CNI_NETNS="$netns")
	fi
	[ "${XPATH:-}" = - ] || env+=(CNI_PATH="${XPATH:-$WEFT_BIN}")
	printf '%s' "$conf" >"$T/.xconf"
	set +e
	CNI_OUT=$("${pre[@]}" env -i PATH="$PATH" "${env[@]}" WEFT_LOG_LEVEL=warning \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" "$WEFT_BIN/$plugin" <"$T/.xconf" 2>"$T/.stderr")
	CNI_RC=$?
	set -e
	CNI_ERR=$(cat "$T/.stderr")
	[ "$CNI_RC" != 124 ] || check_fail "$plugin $cmd ${cid:0:20}: timed out (hang)"
}
x_ok() { xcni "$@"; [ "$CNI_RC" = 0 ] || check_fail "$2 $3 ${4:0:24}: exited $CNI_RC: $CNI_OUT $CNI_ERR"; }
# x_err CODE TEXT DESC xcni-args...: expect failure with CODE and TEXT in the message
x_err() {
	local code=$1 text=$2 desc=$3; shift 3
	xcni "$@"
	_check_error "$code" "$text" "$desc" || true
}

nft_comments() { ip netns exec "$HOSTNS" nft -j list ruleset | jq -r '[.. | objects | select(has("val") and has("comment")) | .comment] | .[]'; }
reservations() { { ls -A "$1" 2>/dev/null || true; } | grep -Ev '^(lock|last_reserved_ip\..*|\.weft-index)$' | sort | tr '\n' ' '; }
# assert_clean DESC: no veth on the host, only lo in the pods, no reservation in $STORE, no nft
# element carrying an attachment comment.
assert_clean() {
	assert_eq "$(veths_in "$HOSTNS")" 0 "$1: host veths"
	assert_eq "$(links_in "$POD1")" "lo " "$1: pod1 links"
	assert_eq "$(links_in "$POD2")" "lo " "$1: pod2 links"
	assert_eq "$(reservations_in "$STORE")" 0 "$1: reservations"
	assert_eq "$(nft_comments | wc -l)" 0 "$1: nft elements"
}

# ---------------------------------------------------------------------------------------------
info "12: CNI_PATH is optional unless the plugin delegates"
STORE=$T/s12
LO='{"cniVersion":"1.0.0","name":"lo","type":"loopback"}'
XPATH=- x_ok "" loopback ADD c1 "$POD1" eth0 "$LO"
assert_eq "$(ip -n "$POD1" -j link show lo | jq -r '.[0].flags | index("UP") != null')" true "loopback ADD without CNI_PATH set lo up"
XPATH=- x_ok "" loopback CHECK c1 "$POD1" eth0 "$(with_prev "$LO" "$CNI_OUT")"
XPATH=- x_ok "" loopback DEL c1 "$POD1" eth0 "$LO"
XPATH=- x_ok "" loopback DEL c1 "$POD1" eth0 "$LO"
L2='{"cniVersion":"1.0.0","name":"l2","type":"bridge","bridge":"br2"}'
XPATH=- x_ok "$HOSTNS" bridge ADD c1 "$POD1" eth0 "$L2"
assert_eq "$(veths_in "$HOSTNS")" 1 "L2 bridge ADD without CNI_PATH made the veth"
XPATH=- x_ok "$HOSTNS" bridge DEL c1 "$POD1" eth0 "$L2"
XPATH=- x_ok "$HOSTNS" bridge DEL c1 "$POD1" eth0 "$L2"
assert_clean "L2 bridge without CNI_PATH"
BR=$(jq -c -n --arg s "$STORE" '{"cniVersion":"1.0.0","name":"br12","type":"bridge","bridge":"br12","isGateway":true,
	"ipMasq":true,"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":"10.60.0.0/24"}]]}}')
XPATH=- x_err 4 "CNI_PATH" "bridge with IPAM, ADD without CNI_PATH" "$HOSTNS" bridge ADD c1 "$POD1" eth0 "$BR"
grep -q '"host-local"' <<<"$(jqr .msg)" || check_fail "the CNI_PATH error should name the IPAM plugin: $(jqr .msg)"
assert_clean "failed ADD without CNI_PATH"
XPATH=- x_err 4 "CNI_PATH" "bridge with IPAM, DEL without CNI_PATH" "$HOSTNS" bridge DEL c1 "$POD1" eth0 "$BR"
x_ok "$HOSTNS" bridge DEL c1 "$POD1" eth0 "$BR"
x_ok "$HOSTNS" bridge DEL c1 "$POD1" eth0 "$BR"

# ---------------------------------------------------------------------------------------------
info "11: subnets too large or outside unicast space are refused (code 7, key and value)"
STORE=$T/s11
hl() { jq -c -n --arg s "$STORE" --arg n "$1" '{"cniVersion":"1.0.0","name":"n11","type":"host-local",
	"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":$n}]]}}'; }
for bad in 0.0.0.0/0 2.0.0.0/7 0.0.0.0/24 127.0.0.0/8 224.0.0.0/24 ::/0 ::/64 ff02::/64; do
	x_err 7 "ipam.ranges[0][0].subnet: \"$bad\"" "subnet $bad" "" host-local ADD c1 "$POD1" eth0 "$(hl "$bad")"
	assert_eq "$(reservations_in "$STORE")" 0 "subnet $bad: nothing reserved"
done
xcni "" host-local ADD c1 "$POD1" eth0 "$(hl 0.0.0.0/0)"
grep -q "shorter than /8" <<<"$(jqr .msg)" || check_fail "the size error should state the bound: $(jqr .msg)"
for good in 10.0.0.0/8 169.254.0.0/16 fe80::/64; do
	x_ok "" host-local ADD c1 "$POD1" eth0 "$(hl "$good")"
	x_ok "" host-local DEL c1 "$POD1" eth0 "$(hl "$good")"
done
# Through the bridge: refused before any address lands on the host (was 0.0.0.1/0 on br11).
BR=$(jq -c -n --arg s "$STORE" '{"cniVersion":"1.0.0","name":"br11","type":"bridge","bridge":"br11","isGateway":true,
	"ipMasq":true,"ipam":{"type":"host-local","dataDir":$s,"subnet":"0.0.0.0/0"}}')
x_err 7 'ipam.subnet: "0.0.0.0/0"' "bridge with subnet 0.0.0.0/0" "$HOSTNS" bridge ADD c1 "$POD1" eth0 "$BR"
assert_clean "bridge with subnet 0.0.0.0/0"
assert_eq "$(ip -n "$HOSTNS" -j addr show | jq '[.[].addr_info[] | select(.prefixlen == 0)] | length')" 0 "no /0 address on the host"
# DEL still works with such a config: attachments an older version made from it must be released.
mkdir -p "$STORE/br11"
printf 'c1\r\neth0' >"$STORE/br11/0.0.0.2"
x_ok "$HOSTNS" bridge DEL c1 "$POD1" eth0 "$BR"
assert_eq "$(reservations_in "$STORE")" 0 "DEL with a refused subnet released the old reservation"
x_ok "$HOSTNS" bridge DEL c1 "$POD1" eth0 "$BR"

# ---------------------------------------------------------------------------------------------
info "10: a FIFO and a symlink to /dev/zero in the store neither hang nor fail ADD/DEL"
STORE=$T/s10
HL=$(jq -c -n --arg s "$STORE" '{"cniVersion":"1.0.0","name":"n10","type":"host-local",
	"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":"10.62.0.0/29"}]]}}')
x_ok "" host-local ADD c1 "$POD1" eth0 "$HL"
assert_eq "$(jqr '.ips[0].address')" 10.62.0.2/29 "first address"
mkfifo "$STORE/n10/10.62.0.3"
ln -s /dev/zero "$STORE/n10/10.62.0.4"
x_ok "" host-local ADD c2 "$POD1" eth0 "$HL"
assert_eq "$(jqr '.ips[0].address')" 10.62.0.5/29 "ADD skips the FIFO's and the symlink's addresses"
grep -q "10.62.0.3 (not a regular file)" <<<"$CNI_ERR" || check_fail "the FIFO should be logged: $CNI_ERR"
grep -q "10.62.0.4 (a symlink)" <<<"$CNI_ERR" || check_fail "the symlink should be logged: $CNI_ERR"
rm -f "$STORE/n10/last_reserved_ip.0"
mkfifo "$STORE/n10/last_reserved_ip.0"
x_ok "" host-local ADD c3 "$POD1" eth0 "$HL"
x_ok "" host-local CHECK c3 "$POD1" eth0 "$HL"
for c in c1 c2 c3 c3; do x_ok "" host-local DEL "$c" "$POD1" eth0 "$HL"; done
assert_eq "$(reservations "$STORE/n10")" "10.62.0.3 10.62.0.4 " "only the planted entries are left, untouched"
if ! [ -p "$STORE/n10/10.62.0.3" ] || ! [ -L "$STORE/n10/10.62.0.4" ]; then check_fail "planted entries were modified"; fi
GC=$(jq -c '.cniVersion = "1.1.0" | .["cni.dev/valid-attachments"] = []' <<<"$HL")
x_ok "" host-local GC "" - "" "$GC"
assert_eq "$(reservations "$STORE/n10")" "10.62.0.3 10.62.0.4 " "GC leaves the planted entries alone"

# ---------------------------------------------------------------------------------------------
info "8: a full disk is an I/O error with the path, not an exhausted range"
FULL=$T/full
mkdir -p "$FULL"
unshare --mount --propagation private sleep 600 &
HOLDER=$!
on_exit "kill $HOLDER"
for _ in $(seq 50); do
	[ "$(readlink "/proc/$HOLDER/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && break
	sleep 0.1
done
inmnt() { nsenter --mount="/proc/$HOLDER/ns/mnt" -- "$@"; }
inmnt mount -t tmpfs -o size=256k tmpfs "$FULL"
HL=$(jq -c -n --arg s "$FULL" '{"cniVersion":"1.0.0","name":"n8","type":"host-local",
	"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":"10.63.0.0/24"}]]}}')
XMNT=$HOLDER x_ok "" host-local ADD c0 "$POD1" eth0 "$HL"
inmnt sh -c "dd if=/dev/zero of='$FULL/fill' bs=4k >/dev/null 2>&1 || true"
[ "$(inmnt df --output=avail "$FULL" | tail -1 | tr -d ' ')" = 0 ] || check_fail "could not fill the tmpfs"
BEFORE=$(inmnt ls -A "$FULL/n8" | tr '\n' ' ')
XMNT=$HOLDER x_err 5 "No space left on device" "ADD on a full disk" "" host-local ADD c1 "$POD1" eth0 "$HL"
grep -qF "$FULL/n8" <<<"$(jqr .msg)" || check_fail "full-disk error should name the store path: $(jqr .msg)"
grep -q "no IP addresses available" <<<"$(jqr .msg)" && check_fail "full disk reported as an exhausted range: $(jqr .msg)"
assert_eq "$(inmnt ls -A "$FULL/n8" | tr '\n' ' ')" "$BEFORE" "failed ADD left the store as it was"
XMNT=$HOLDER x_ok "" host-local DEL c0 "$POD1" eth0 "$HL"
XMNT=$HOLDER x_ok "" host-local DEL c0 "$POD1" eth0 "$HL"
assert_eq "$(inmnt ls -A "$FULL/n8" | grep -c '^10\.' || true)" 0 "DEL on the full disk released the address"
inmnt rm -f "$FULL/fill"
XMNT=$HOLDER x_ok "" host-local ADD c1 "$POD1" eth0 "$HL"
XMNT=$HOLDER x_ok "" host-local DEL c1 "$POD1" eth0 "$HL"
# ... and a range that really is full still says so (code 999, as the reference).
ONE=$(jq -c -n --arg s "$T/s8" '{"cniVersion":"1.0.0","name":"one","type":"host-local","ipam":{"type":"host-local",
	"dataDir":$s,"ranges":[[{"subnet":"10.64.0.0/24","rangeStart":"10.64.0.9","rangeEnd":"10.64.0.9"}]]}}')
x_ok "" host-local ADD c1 "$POD1" eth0 "$ONE"
x_err 999 "no IP addresses available in range set" "exhausted range" "" host-local ADD c2 "$POD1" eth0 "$ONE"
x_ok "" host-local DEL c1 "$POD1" eth0 "$ONE"

# ---------------------------------------------------------------------------------------------
info "9: long container IDs with ipMasq, macspoofchk, portmap, firewall and ptp"
STORE=$T/s9
# fnv STRING: "~" + FNV-1a 64 in hex, the attachment-id hash (bash arithmetic wraps at 64 bits)
fnv() {
	local s=$1 h=-3750763034362895579 i c
	for ((i = 0; i < ${#s}; i++)); do
		printf -v c '%d' "'${s:i:1}"
		h=$(((h ^ c) * 1099511628211))
	done
	printf '~%016x' "$h"
}
L1=$(printf 'a%.0s' $(seq 200))
L2=b$(printf '%04d' $(seq 1000) | head -c 3999)
BR=$(jq -c -n --arg s "$STORE" '{"cniVersion":"1.0.0","name":"hard","type":"bridge","bridge":"br9","isGateway":true,
	"ipMasq":true,"macspoofchk":true,"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":"10.65.0.0/24"}]]}}')
PM='{"cniVersion":"1.0.0","name":"hard","type":"portmap","runtimeConfig":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]}}'
FW='{"cniVersion":"1.0.0","name":"hard","type":"firewall"}'
declare -A RES
for cid in "$L1" "$L2"; do
	p=$P1; [ "$cid" = "$L1" ] || p=$P2
	x_ok "$HOSTNS" bridge ADD "$cid" "$p" eth0 "$BR"
	RES[$cid]=$CNI_OUT
	[ "$cid" = "$L1" ] || PM=$(jq -c '.runtimeConfig.portMappings[0].hostPort = 8081' <<<"$PM")
	x_ok "$HOSTNS" portmap ADD "$cid" "$p" eth0 "$(with_prev "$PM" "${RES[$cid]}")"
	x_ok "$HOSTNS" firewall ADD "$cid" "$p" eth0 "$(with_prev "$FW" "${RES[$cid]}")"
	x_ok "$HOSTNS" bridge CHECK "$cid" "$p" eth0 "$(with_prev "$BR" "${RES[$cid]}")"
	x_ok "$HOSTNS" firewall CHECK "$cid" "$p" eth0 "$(with_prev "$FW" "${RES[$cid]}")"
done
ID1="$(fnv hard)/$(fnv "$L1")/eth0" ID2="$(fnv hard)/$(fnv "$L2")/eth0"
n1=$(nft_comments | grep -cxF "$ID1" || true)
n2=$(nft_comments | grep -cxF "$ID2" || true)
[ "$n1" -ge 5 ] || check_fail "expected >= 5 elements (masq, local, macspoof, portmap, firewall) tagged $ID1, got $n1: $(nft_comments | sort | uniq -c)"
assert_eq "$n2" "$n1" "both long IDs tagged alike"
assert_eq "$(nft_comments | grep -cvxF -e "$ID1" -e "$ID2" || true)" 0 "no other comments"
# GC keeps L1 (matched through its hash), removes L2's elements and address.
for plugin in firewall portmap bridge; do
	conf=$FW; [ "$plugin" = portmap ] && conf=$PM; [ "$plugin" = bridge ] && conf=$BR
	conf=$(jq -c --arg c "$L1" '.cniVersion = "1.1.0" | .["cni.dev/valid-attachments"] = [{"containerID": $c, "ifname": "eth0"}]' <<<"$conf")
	x_ok "$HOSTNS" "$plugin" GC "" - "" "$conf"
done
assert_eq "$(nft_comments | grep -cxF "$ID2" || true)" 0 "GC removed the invalid attachment's elements"
assert_eq "$(nft_comments | grep -cxF "$ID1" || true)" "$n1" "GC kept the valid attachment's elements"
assert_eq "$(reservations_in "$STORE")" 1 "GC released the invalid attachment's address"
for cid in "$L1" "$L2"; do
	p=$P1; [ "$cid" = "$L1" ] || p=$P2
	for _ in 1 2; do
		x_ok "$HOSTNS" firewall DEL "$cid" "$p" eth0 "$(with_prev "$FW" "${RES[$cid]}")"
		x_ok "$HOSTNS" portmap DEL "$cid" "$p" eth0 "$(with_prev "$PM" "${RES[$cid]}")"
		x_ok "$HOSTNS" bridge DEL "$cid" "$p" eth0 "$BR"
	done
done
assert_clean "long IDs after DEL"
PTP=$(jq -c -n --arg s "$STORE" '{"cniVersion":"1.0.0","name":"hardptp","type":"ptp","ipMasq":true,
	"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":"10.66.0.0/24"}]]}}')
x_ok "$HOSTNS" ptp ADD "$L2" "$P1" eth0 "$PTP"
assert_eq "$(nft_comments | grep -cxF "$(fnv hardptp)/$(fnv "$L2")/eth0" || true)" 2 "ptp ipMasq elements tagged with the hash"
x_ok "$HOSTNS" ptp DEL "$L2" "$P1" eth0 "$PTP"
x_ok "$HOSTNS" ptp DEL "$L2" "$P1" eth0 "$PTP"
assert_clean "ptp with a long ID after DEL"
# DEL of attachments that cannot exist: a never-added 4000-character ID without a netns, an ifname
# no element can carry.
x_ok "$HOSTNS" bridge DEL "x$L2" - eth0 "$BR"
x_ok "$HOSTNS" portmap DEL "x$L2" - eth0 "$PM"
x_ok "$HOSTNS" firewall DEL c1 - 'e"0' "$FW"
x_ok "$HOSTNS" portmap DEL c1 - 'e\0' "$PM"
assert_clean "DEL of attachments that cannot exist"

# ---------------------------------------------------------------------------------------------
info "13: weft DEL reports a netns it cannot open; only a gone netns is success"
STORE=$T/s13
RUN=$T/run
mkdir -p "$RUN"
printf 'WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.244.9.1/24\nWEFT_MTU=1400\nWEFT_IPMASQ=false\n' >"$RUN/subnet.env"
WC=$(jq -c -n --arg r "$RUN" --arg s "$STORE" '{"cniVersion":"1.0.0","name":"weftnet","type":"weft","runDir":$r,"dataDir":$s,"bridge":"cni9"}')
x_ok "$HOSTNS" weft ADD c1 "$POD1" eth0 "$WC"
# The netns path behind a directory root cannot search without CAP_DAC_OVERRIDE: EACCES.
mkdir "$T/noacc"
ln -s "$P1" "$T/noacc/ns"
chown 65534 "$T/noacc"
chmod 700 "$T/noacc"
XPRIV=-dac_override,-dac_read_search x_err 999 "Permission denied" "weft DEL with EACCES on the netns" \
	"$HOSTNS" weft DEL c1 "$T/noacc/ns" eth0 "$WC"
grep -qF "$T/noacc/ns" <<<"$(jqr .msg)" || check_fail "the error should name the netns path: $(jqr .msg)"
assert_eq "$(links_in "$POD1")" "eth0 lo " "the pod's interface is kept for the retry"
# tuning DEL had the same shortcut: on EACCES it dropped its backup without restoring the MTU.
R1=$(jq -c --arg ns "$P1" '{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":$ns}],"ips":[]}' <<<'{}')
TU=$(jq -c -n --arg dd "$T/tuning" '{"cniVersion":"1.0.0","name":"weftnet","type":"tuning","dataDir":$dd,"mtu":1300}')
x_ok "$HOSTNS" tuning ADD c1 "$POD1" eth0 "$(with_prev "$TU" "$R1")"
XPRIV=-dac_override,-dac_read_search x_err 999 "Permission denied" "tuning DEL with EACCES on the netns" \
	"$HOSTNS" tuning DEL c1 "$T/noacc/ns" eth0 "$TU"
[ -f "$T/tuning/c1_eth0.json" ] || check_fail "tuning dropped its backup although the netns could not be opened"
x_ok "$HOSTNS" tuning DEL c1 "$POD1" eth0 "$TU"
x_ok "$HOSTNS" tuning DEL c1 "$POD1" eth0 "$TU"
assert_eq "$(ip -n "$POD1" -j link show eth0 | jq '.[0].mtu')" 1400 "tuning DEL restored the MTU"
x_ok "$HOSTNS" weft DEL c1 "$POD1" eth0 "$WC"
x_ok "$HOSTNS" weft DEL c1 "$POD1" eth0 "$WC"
assert_eq "$(links_in "$POD1")" "lo " "DEL with an openable netns removed the interface"
# Gone: no such file, or a file that is no netns any more (the bind mount went away).
x_ok "$HOSTNS" weft ADD c2 "$POD2" eth0 "$WC"
: >"$T/notns"
x_ok "$HOSTNS" weft DEL c2 "$T/notns" eth0 "$WC"
x_ok "$HOSTNS" weft DEL c2 "/run/netns/gone-$$" eth0 "$WC"
x_ok "$HOSTNS" weft DEL c2 "$POD2" eth0 "$WC"
x_ok "$HOSTNS" weft DEL c2 "$POD2" eth0 "$WC"
assert_clean "weft after DEL"

finish
