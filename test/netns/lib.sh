# shellcheck shell=bash
# Shared helpers for netns/interop tests. Source it first thing:
#   . "$(dirname "$0")/../netns/lib.sh"
#
# Every test runs as root in namespaces it creates itself (named with the PID) and removes them
# in an EXIT trap; it never touches the host's own links, routes or firewall. Exit 77 = skipped.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WEFT_BUILD=${WEFT_BUILD:-$TOP/build}
WEFT_BIN=${WEFT_BIN:-$WEFT_BUILD/bin}
REF_BIN=${REF_BIN:-/usr/lib/cni}
CNITOOL=${CNITOOL:-$TOP/build/tools/cnitool}
TEST_NAME=$(basename "$0" .sh)
T=$(mktemp -d "/tmp/weft-${TEST_NAME}.XXXXXX")
_NETNS=()
_CLEANUPS=()
_FAILS=0

_lib_cleanup() {
	local rc=$?
	local i
	for ((i = ${#_CLEANUPS[@]} - 1; i >= 0; i--)); do eval "${_CLEANUPS[$i]}" >/dev/null 2>&1 || true; done
	# mk_netns usually runs in a $(...) subshell, so _NETNS may not know every namespace: sweep all
	# namespaces carrying this test's PID suffix as well.
	for ns in "${_NETNS[@]}" $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E -- "-$$\$" || true); do
		ip netns del "$ns" >/dev/null 2>&1 || true
	done
	rm -rf "$T"
	exit "$rc"
}
trap _lib_cleanup EXIT
trap 'exit 130' INT TERM

# on_exit CMD...: run CMD (a string) at exit, newest first, before namespaces are deleted.
on_exit() { _CLEANUPS+=("$*"); }

skip() { echo "SKIP: $TEST_NAME: $*"; exit 77; }
fail() { echo "FAIL: $TEST_NAME: $*" >&2; exit 1; }
# soft failure: record and continue, test exits 1 at the end via finish
check_fail() { echo "FAIL: $TEST_NAME: $*" >&2; _FAILS=$((_FAILS + 1)); }
info() { echo "# $*"; }
finish() {
	if ((_FAILS > 0)); then echo "FAIL: $TEST_NAME ($_FAILS checks failed)"; exit 1; fi
	echo "PASS: $TEST_NAME"; exit 0
}

require_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
require_cmd() { local c; for c in "$@"; do command -v "$c" >/dev/null || skip "needs $c"; done; }
# require_kind KIND: skip if the kernel cannot create links of this kind. Kinds that stack on a
# parent (macvlan, ipvlan, vlan) are probed on a veth inside the probe namespace.
require_kind() {
	local kind=$1 ns="wk-$$-$RANDOM" args=()
	ip netns add "$ns"
	case $kind in
	vxlan) args=(id 1 dstport 4789) ;;
	vlan) ip -n "$ns" link add wkp0 type veth peer name wkp1; args=(id 10) ;;
	macvlan | ipvlan | macvtap) ip -n "$ns" link add wkp0 type veth peer name wkp1 ;;
	esac
	local link=()
	ip -n "$ns" link show wkp0 >/dev/null 2>&1 && link=(link wkp0)
	if ! ip -n "$ns" link add "${link[@]}" probe0 type "$kind" "${args[@]}" >/dev/null 2>&1; then
		ip netns del "$ns"; skip "kernel has no '$kind' link kind (module missing)"
	fi
	ip netns del "$ns"
}

# mk_netns NAME: create a namespace w-NAME-PID, print its name (path is /run/netns/<name>). It is
# removed at exit even when called as NS=$(mk_netns x) (cleanup sweeps the PID suffix).
mk_netns() {
	local ns="w-$1-$$"
	ip netns add "$ns"
	_NETNS+=("$ns")
	ip -n "$ns" link set lo up
	echo "$ns"
}
nspath() { echo "/run/netns/$1"; }

# cni PLUGIN CMD CID NETNS IFNAME CONF [ARGS]: run one of our plugins (or REF=1 for the reference)
# with the CNI environment; CONF is a file name or a JSON string. Sets CNI_OUT (stdout), CNI_ERR
# (stderr) and CNI_RC; never fails by itself.
cni() {
	local plugin=$1 cmd=$2 cid=$3 netns=$4 ifname=$5 conf=$6 args=${7:-}
	local bindir=$WEFT_BIN
	[ "${REF:-0}" = 1 ] && bindir=$REF_BIN
	[ -f "$conf" ] || { printf '%s' "$conf" >"$T/.conf"; conf=$T/.conf; }
	[ -n "$netns" ] && [ "${netns#/}" = "$netns" ] && netns=$(nspath "$netns")
	set +e
	CNI_OUT=$(env -i PATH="$PATH" CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" CNI_NETNS="$netns" \
		CNI_IFNAME="$ifname" CNI_PATH="${CNI_PATH_OVERRIDE:-$bindir}" CNI_ARGS="$args" \
		WEFT_LOG_LEVEL="${WEFT_LOG_LEVEL:-warning}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$bindir/$plugin" <"$conf" 2>"$T/.stderr")
	CNI_RC=$?
	set -e
	CNI_ERR=$(cat "$T/.stderr")
}
# cni_ok ...: like cni, but fail the test on a non-zero exit.
cni_ok() {
	cni "$@"
	[ "$CNI_RC" = 0 ] || fail "$1 $2 $3 exited $CNI_RC: $CNI_OUT $CNI_ERR"
}
# cni_err CODE ...: expect failure with the given CNI error code (JSON on stdout).
cni_err() {
	local code=$1; shift
	cni "$@"
	[ "$CNI_RC" != 0 ] || { check_fail "$1 $2: expected error $code, got success: $CNI_OUT"; return; }
	local got
	got=$(jq -r .code <<<"$CNI_OUT" 2>/dev/null || echo "not-json")
	[ "$got" = "$code" ] || check_fail "$1 $2: expected code $code, got $got: $CNI_OUT"
}

# jqr EXPR [JSON]: jq -r on JSON (default: $CNI_OUT)
jqr() { jq -r "$1" <<<"${2:-$CNI_OUT}"; }
assert_eq() { [ "$1" = "$2" ] || check_fail "${3:-values differ}: expected '$2', got '$1'"; }
assert_ne() { [ "$1" != "$2" ] || check_fail "${3:-values equal}: both '$1'"; }
# assert_ping NS ADDR: one ping must succeed within 2 s
assert_ping() {
	ip netns exec "$1" ping -c1 -W2 "$2" >/dev/null 2>&1 || check_fail "ping from $1 to $2 failed"
}
assert_no_ping() {
	! ip netns exec "$1" ping -c1 -W1 "$2" >/dev/null 2>&1 || check_fail "ping from $1 to $2 unexpectedly succeeded"
}
# links_in NS: list of link names in a namespace
links_in() { ip -n "$1" -j link show | jq -r '.[].ifname' | sort | tr '\n' ' '; }
