#!/usr/bin/env bash
# `weft cni` vs cnitool (libcni 1.1.2) on the same conflists, reference plugins:
#
#   cnitool add NET nsA  ---\                       /--- weft cni del NET nsA
#                            >  /var/lib/cni/results  <
#   weft cni add NET nsB ---/   (libcni cache format) \--- cnitool del NET nsB
#
# For 1.0.0 and 0.4.0 loopback + host-local lists: the printed results agree (modulo the address
# host-local hands out and the netns path), the cache files agree field by field, each tool
# CHECKs and DELs what the other ADDed. cnitool has no cache-dir option, so both use the default
# /var/lib/cni with network names carrying our PID; the EXIT trap removes exactly those files.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd jq ip
WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFT"
[ -x "$CNITOOL" ] || skip "cnitool not built (tools/build-cnitool.sh)"
for p in loopback host-local; do [ -x "$REF_BIN/$p" ] || skip "reference $p missing"; done

CONF=$T/net.d
mkdir -p "$CONF"
CACHE=/var/lib/cni
[ -d "$CACHE/results" ] || on_exit "rmdir $CACHE/results $CACHE 2>/dev/null"
export NETCONFPATH=$CONF CNI_PATH=$REF_BIN
unset CNI_CACHE_DIR CAP_ARGS CNI_IFNAME CNI_CONTAINERID
export CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=pod-$$"
NSA=$(mk_netns tia)
NSB=$(mk_netns tib)
# mk_netns runs in the $(...) subshell, so its own cleanup registration is lost: register here.
on_exit "ip netns del $NSA"
on_exit "ip netns del $NSB"
PA=$(nspath "$NSA")
PB=$(nspath "$NSB")
cid() { echo "cnitool-$(printf '%s' "$1" | sha512sum | cut -c1-20)"; }
CA=$(cid "$PA")
CB=$(cid "$PB")

# run TOOL ARGS...: TOOL is cnitool or weft; sets OUT RC ERR
run() {
	local tool=$1; shift
	set +e
	if [ "$tool" = cnitool ]; then OUT=$("$CNITOOL" "$@" 2>"$T/.err"); else OUT=$("$WEFT" cni "$@" 2>"$T/.err"); fi
	RC=$?
	set -e
	ERR=$(cat "$T/.err")
}
run_ok() { run "$@"; [ "$RC" = 0 ] || check_fail "$*: rc=$RC $OUT $ERR"; }
# normalise a result: the address and netns differ by construction
norm() { jq -S --arg a "$2" --arg ns "$3" 'walk(if type == "string" then (if . == $a then "ADDR" elif . == $ns then "NETNS" else . end) else . end)' <<<"$1"; }
lo_up() { ip -n "$1" -j link show lo | jq -e '.[0].flags | index("UP") != null' >/dev/null; }

n=0
for ver in 1.0.0 0.4.0; do
	n=$((n + 1))
	net="wi$n-$$"
	on_exit "rm -f $CACHE/results/$net-*"
	cat >"$CONF/$n.conflist" <<EOF
{"cniVersion":"$ver","name":"$net","plugins":[{"type":"loopback"},
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"$T/ipam","ranges":[[{"subnet":"10.232.$n.0/24"}]]}}]}
EOF
	info "$ver: cnitool add nsA, weft add nsB"
	ip -n "$NSA" link set lo down
	ip -n "$NSB" link set lo down
	run_ok cnitool add "$net" "$PA"
	RA=$OUT
	run_ok weft add "$net" "$PB"
	RB=$OUT
	AA=$(jq -r '.ips[0].address' <<<"$RA")
	AB=$(jq -r '.ips[0].address' <<<"$RB")
	assert_eq "$AA" "10.232.$n.2/24" "$ver cnitool address"
	assert_eq "$AB" "10.232.$n.3/24" "$ver weft address"
	assert_eq "$(norm "$RB" "$AB" "$PB")" "$(norm "$RA" "$AA" "$PA")" "$ver: same result"
	assert_eq "$(jq -r .cniVersion <<<"$RB")" "$ver" "$ver: result version"
	lo_up "$NSA" || check_fail "$ver: lo not up in nsA (cnitool)"
	lo_up "$NSB" || check_fail "$ver: lo not up in nsB (weft)"

	FA=$CACHE/results/$net-$CA-eth0
	FB=$CACHE/results/$net-$CB-eth0
	{ [ -f "$FA" ] && [ -f "$FB" ]; } || fail "$ver: cache files missing ($FA, $FB)"
	assert_eq "$(jq -r .containerId "$FB")" "$CB" "$ver: weft derives cnitool's container ID"
	assert_eq "$(jq -c 'del(.netns, .containerId, .result)' "$FB")" "$(jq -c 'del(.containerId, .result)' "$FA")" \
		"$ver: cache files agree (kind, config bytes, ifName, networkName, cniArgs)"
	assert_eq "$(norm "$(jq .result "$FB")" "$AB" "$PB")" "$(norm "$(jq .result "$FA")" "$AA" "$PA")" "$ver: cached results agree"

	info "$ver: cross CHECK"
	run_ok weft check "$net" "$PA"
	run_ok cnitool check "$net" "$PB"

	info "$ver: cross DEL"
	run_ok weft del "$net" "$PA"
	[ -e "$FA" ] && check_fail "$ver: weft did not remove cnitool's cache file"
	[ -e "$T/ipam/$net/${AA%/*}" ] && check_fail "$ver: address of cnitool's attachment not released"
	lo_up "$NSA" && check_fail "$ver: lo still up in nsA after DEL"
	run_ok cnitool del "$net" "$PB"
	[ -e "$FB" ] && check_fail "$ver: cnitool did not remove weft's cache file"
	[ -e "$T/ipam/$net/${AB%/*}" ] && check_fail "$ver: address of weft's attachment not released"
	# DEL again: both fine with nothing cached
	run_ok weft del "$net" "$PB"
	run_ok cnitool del "$net" "$PA"

	info "$ver: both refuse an unknown network"
	run cnitool add "nope-$$" "$PA"
	assert_ne "$RC" 0 "cnitool unknown network"
	run weft add "nope-$$" "$PA"
	assert_ne "$RC" 0 "weft unknown network"
	assert_eq "$(jq -r .code <<<"$OUT")" 7 "weft unknown network error code"
done
finish
