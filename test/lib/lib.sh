# shellcheck shell=bash
# Shared helpers for netns/interop tests. Source it first thing:
#   . "$(dirname "$0")/../lib/lib.sh"
#
# Every test runs as root in namespaces it creates itself (named with the PID) and removes them
# in an EXIT trap; it never touches the host's own links, routes or firewall. Exit 77 = skipped.
#
# Pass/fail is decided here, not by the script's last line: the EXIT trap turns any exit into a
# failure when a check_fail was recorded (also from a subshell: they are counted in a file), and an
# exit 0 that did not come from finish (a test-*.sh that forgot it, or an early `exit 0`) fails too;
# programs that only borrow the helpers (tools/demo) are not held to finish, but still to check_fail.
# A skip after failed checks is a failure. Our own binaries missing is a failure, never a skip and
# never a fallback to the reference plugins (those run only where a script asks: REF=1, BIN=$REF_BIN).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WEFT_BUILD=${WEFT_BUILD:-$TOP/build}
WEFT_BIN=${WEFT_BIN:-$WEFT_BUILD/bin}
REF_BIN=${REF_BIN:-/usr/lib/cni}
CNITOOL=${CNITOOL:-$TOP/build/tools/cnitool}
# Timing slack, a whole multiplier of the deadlines that waits and bounds allow (wait_for, and the
# bounds a test scales by it). tools/run-tests sets 3 for the sanitizer build, which runs several
# times slower; a tight figure is measured in bench/, never here.
WEFT_TEST_SLACK=${WEFT_TEST_SLACK:-1}
TEST_NAME=$(basename "$0" .sh)
T=$(mktemp -d "/tmp/weft-${TEST_NAME}.XXXXXX")
_NETNS=()
_CLEANUPS=()
_FAILS=0
_FINISHED=0
_FAILFILE=$T/.fails
: >"$_FAILFILE"
# python3 on PATH may be a pyenv shim: a bash script that runs pyenv to find the interpreter, about
# 0.7 CPU-s per call and seconds on a loaded machine, where a test calls python3 tens of times. The
# test calls the interpreter the shim resolves to directly (tools/run-tests does this once for all).
if [[ $(command -v python3 || true) == */shims/python3 ]]; then
	mkdir -p "$T/.bin"
	ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$T/.bin/python3"
	PATH=$T/.bin:$PATH
fi

# _fail_count: failed checks so far, those recorded in subshells ($(...), pipelines, &) included
_fail_count() {
	local n=0
	[ -f "$_FAILFILE" ] && n=$(wc -l <"$_FAILFILE")
	echo $((n > _FAILS ? n : _FAILS))
}

_lib_cleanup() {
	local rc=$?
	local _lib_i n
	# Only the test's own shell decides (bash resets traps in subshells; this guards the odd case).
	if [ "$BASHPID" = "$$" ]; then
		n=$(_fail_count)
		if ((n > 0)) && [ "$rc" = 0 ]; then
			echo "FAIL: $TEST_NAME ($n checks failed; the script exited 0 without calling finish)"
			rc=1
		elif ((n > 0)) && [ "$rc" = 77 ]; then
			echo "FAIL: $TEST_NAME ($n checks failed before the skip)"
			rc=1
		elif [ "$rc" = 0 ] && [ "$_FINISHED" != 1 ] && [[ $TEST_NAME == test-* ]]; then
			echo "FAIL: $TEST_NAME exited 0 without reaching finish (an early exit 0, or finish missing)"
			rc=1
		fi
	fi
	for ((_lib_i = ${#_CLEANUPS[@]} - 1; _lib_i >= 0; _lib_i--)); do eval "${_CLEANUPS[$_lib_i]}" >/dev/null 2>&1 || true; done
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
# soft failure: record and continue; the test fails at exit however it exits (finish or not)
check_fail() {
	echo "FAIL: $TEST_NAME: $*" >&2
	_FAILS=$((_FAILS + 1))
	echo "${*//$'\n'/ }" >>"$_FAILFILE" 2>/dev/null || true
}
info() { echo "# $*"; }
[ -d "$WEFT_BIN" ] || fail "no $WEFT_BIN: build first (make), or point WEFT_BUILD at a build"
# finish: the last line of every test: PASS (exit 0) or FAIL (exit 1) with the failed-check count.
finish() {
	local n
	n=$(_fail_count)
	_FINISHED=1
	if ((n > 0)); then echo "FAIL: $TEST_NAME ($n checks failed)"; exit 1; fi
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

# _cni_run NODE BINDIR CNI_PATH PLUGIN CMD CID NETNS IFNAME CONF [ARGS]: what cni and hcni run.
# NODE "" = this namespace, else the plugin runs inside it (ip netns exec). NETNS "-" leaves
# CNI_NETNS unset; a bare name is resolved with nspath. CONF is a file name or a JSON string.
_cni_run() {
	local node=$1 bindir=$2 path=$3 plugin=$4 cmd=$5 cid=$6 netns=$7 ifname=$8 conf=$9 cniargs=${10:-}
	local -a in_node=() nsenv=(CNI_NETNS="$netns")
	[ -z "$node" ] || in_node=(ip netns exec "$node")
	if [ "$netns" = - ]; then
		nsenv=()
	elif [ -n "$netns" ] && [ "${netns#/}" = "$netns" ]; then
		nsenv=(CNI_NETNS="$(nspath "$netns")")
	fi
	[ -f "$conf" ] || { printf '%s' "$conf" >"$T/.conf"; conf=$T/.conf; }
	set +e
	CNI_OUT=$("${in_node[@]}" env -i PATH="$PATH" CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" "${nsenv[@]}" \
		CNI_IFNAME="$ifname" CNI_PATH="$path" CNI_ARGS="$cniargs" \
		WEFT_LOG_LEVEL="${WEFT_LOG_LEVEL:-warning}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$bindir/$plugin" <"$conf" 2>"$T/.stderr")
	CNI_RC=$?
	set -e
	CNI_ERR=$(cat "$T/.stderr")
}

# cni PLUGIN CMD CID NETNS IFNAME CONF [ARGS]: run one of our plugins (or REF=1 for the reference)
# with the CNI environment, in this namespace; CONF is a file name or a JSON string. Sets CNI_OUT
# (stdout), CNI_ERR (stderr) and CNI_RC; never fails by itself.
cni() {
	local bindir=$WEFT_BIN
	[ "${REF:-0}" = 1 ] && bindir=$REF_BIN
	_cni_run "" "$bindir" "${CNI_PATH_OVERRIDE:-$bindir}" "$@"
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
	_check_error "$code" "" "$1 $2" || true
}

# hcni PLUGIN CMD CID NETNS IFNAME CONF [ARGS]: cni, but run inside the node namespace $HOSTNS
# (HNS= another one), so the plugin's host side lives in a throwaway namespace. BIN= the plugin
# directory (default $WEFT_BIN; BIN=$REF_BIN for the reference), IPATH= its CNI_PATH (default
# $IPAM_PATH where the script sets one, else $WEFT_BIN). NETNS "-" leaves CNI_NETNS unset.
hcni() { _cni_run "${HNS:-$HOSTNS}" "${BIN:-$WEFT_BIN}" "${IPATH:-${IPAM_PATH:-$WEFT_BIN}}" "$@"; }
# hcni_ok ...: like hcni, but fail the test on a non-zero exit (showing the last lines of
# $HCNI_LOG first, where the script names one: a daemon's log, say).
hcni_ok() {
	hcni "$@"
	[ "$CNI_RC" = 0 ] && return 0
	[ -z "${HCNI_LOG:-}" ] || tail -20 "$HCNI_LOG"
	fail "$1 $2 $3 exited $CNI_RC: $CNI_OUT $CNI_ERR"
}
# hcni_err CODE TEXT PLUGIN CMD ...: expect hcni to fail with CNI error CODE ("" = any code) and a
# msg that contains TEXT (soft checks).
hcni_err() {
	local code=$1 text=$2; shift 2
	hcni "$@"
	_check_error "$code" "$text" "$1 $2 $3" || true
}
# hcni_expect CODE TEXT DESC PLUGIN CMD ...: hcni_err, then - when the plugin did fail - the
# script's own `assert_clean DESC`, which checks that the failed call left nothing behind.
hcni_expect() {
	local code=$1 text=$2 desc=$3; shift 3
	declare -F assert_clean >/dev/null || fail "hcni_expect: the script defines no assert_clean"
	hcni "$@"
	_check_error "$code" "$text" "$desc" || return 0
	assert_clean "$desc"
}
# _check_error CODE TEXT DESC: the run just made failed with CODE and TEXT in its msg; status 1
# (after recording the failure) when it succeeded instead.
_check_error() {
	local code=$1 text=$2 desc=$3 got msg
	if [ "$CNI_RC" = 0 ]; then check_fail "$desc: expected error ${code:-code}, got success: $CNI_OUT"; return 1; fi
	got=$(jq -r .code <<<"$CNI_OUT" 2>/dev/null || echo not-json)
	msg=$(jq -r .msg <<<"$CNI_OUT" 2>/dev/null || echo "$CNI_OUT")
	[ -z "$code" ] || [ "$got" = "$code" ] || check_fail "$desc: expected code $code, got $got: $msg ${CNI_ERR:+(stderr: $CNI_ERR)}"
	[[ $msg == *"$text"* ]] || check_fail "$desc: message should mention '$text': $msg"
}
# with_prev CONF RESULT: CONF with RESULT as its prevResult (a chained plugin's config)
with_prev() { jq -c --argjson r "$2" '. + {prevResult: $r}' <<<"$1"; }

# jqr EXPR [JSON]: jq -r on JSON (default: $CNI_OUT)
# grep_q ARGS...: `grep -q ARGS` for the end of a pipeline. It reads its input to the end: under
# pipefail, a plain `cmd | grep -q` fails whenever grep exits at the first match while cmd is still
# writing (cmd dies of SIGPIPE, 141), so a match could read as a miss. (GNU grep stops at the first
# match for -c or >/dev/null too.)
grep_q() {
	local rc
	grep -q "$@"
	rc=$?
	cat >/dev/null
	return $rc
}
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
# wait_listen NS PORT [udp]: wait (up to 5 s) until something in NS listens on PORT. A fixed sleep
# after starting a server loses the race on a busy machine (tests run in parallel).
wait_listen() {
	local i opt=-Hltn
	[ "${3:-}" != udp ] || opt=-Hlun
	for ((i = 0; i < 50; i++)); do
		[ -z "$(ip netns exec "$1" ss "$opt" "sport = :$2" 2>/dev/null)" ] || return 0
		sleep 0.1
	done
	return 1
}
# links_in NS: list of link names in a namespace
links_in() { ip -n "$1" -j link show | jq -r '.[].ifname' | sort | tr '\n' ' '; }
# veths_in NS: how many veth links a namespace holds
veths_in() { ip -n "$1" -j link show type veth | jq length; }
# reservations_in DIR: how many addresses a host-local store (or one network of it) holds
reservations_in() { { find "$1" -type f ! -name 'last_reserved_ip*' ! -name lock ! -name '.*' 2>/dev/null || true; } | wc -l; }

# require_plugins NAME...: fail (not skip: a test of a missing plugin must not pass) unless our
# build has these plugins
require_plugins() { local p; for p in "$@"; do require_built "$WEFT_BIN/$p"; done; }
# require_built FILE...: fail unless these files of our build exist (executables: and are executable)
require_built() {
	local f
	for f in "$@"; do
		[ -e "$f" ] || fail "$f is missing: build first (make), or point WEFT_BUILD at a build"
		[ -d "$f" ] || [[ $f == *.a ]] || [ -x "$f" ] || fail "$f is not executable"
	done
}
# require_ref_plugins NAME...: skip unless the reference plugins are installed in $REF_BIN
require_ref_plugins() { local p; for p in "$@"; do [ -x "$REF_BIN/$p" ] || skip "no reference $p in $REF_BIN"; done; }

# mk_veth NS NAME PEER: a veth pair NAME ══ PEER inside NS, both ends up
mk_veth() {
	ip -n "$1" link add "$2" type veth peer name "$3"
	ip -n "$1" link set "$2" up
	ip -n "$1" link set "$3" up
}
# mk_outside NODE: an "outside" host behind the node namespace NODE; prints its namespace.
#   NODE: up0 192.0.2.1/24, IPv4 forwarding on ══ veth ══ up1 192.0.2.2/24, default via 192.0.2.1
mk_outside() {
	local out
	out=$(mk_netns out) &&
		ip -n "$1" link add up0 type veth peer name up1 netns "$out" &&
		ip -n "$1" addr add 192.0.2.1/24 dev up0 && ip -n "$1" link set up0 up &&
		ip -n "$out" addr add 192.0.2.2/24 dev up1 && ip -n "$out" link set up1 up &&
		ip -n "$out" route add default via 192.0.2.1 &&
		ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=1 &&
		echo "$out"
}

# --- interop: cnitool (libcni) against our plugins and the reference ones

# cnitool_in NODE CONFDIR BINDIR CMD NET NETNS [CAP_ARGS]: cnitool inside the node namespace NODE
# with NETCONFPATH=CONFDIR, CNI_PATH=BINDIR, CNI_IFNAME=eth0, CAP_ARGS (default {}) and CNI_ARGS
# $CNITOOL_ARGS (default IgnoreUnknown=1; empty = unset). Sets CNI_OUT, CNI_ERR, CNI_RC.
cnitool_in() {
	local -a argenv=()
	[ -z "${CNITOOL_ARGS-IgnoreUnknown=1}" ] || argenv=(CNI_ARGS="${CNITOOL_ARGS-IgnoreUnknown=1}")
	set +e
	CNI_OUT=$(ip netns exec "$1" env -i PATH="$PATH" NETCONFPATH="$2" CNI_PATH="$3" CNI_IFNAME=eth0 \
		"${argenv[@]}" CAP_ARGS="${7:-{\}}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$CNITOOL" "$4" "$5" "$6" 2>"$T/.stderr")
	CNI_RC=$?
	set -e
	CNI_ERR=$(cat "$T/.stderr")
}
# norm_result: stdin's result with what legitimately differs between implementations normalised:
# MACs, host veth names (veth + 8 hex), sandbox paths.
norm_result() {
	jq -S '(.interfaces // []) |= map(
		(if .mac then .mac = "MAC" else . end)
		| (if .sandbox then .sandbox = "SANDBOX" else . end)
		| (if (.name | test("^veth[0-9a-f]{8}$")) then .name = "VETH" else . end))'
}
# assert_same_result DESC OURS REF: equal after norm_result; the diff goes to stderr when not
assert_same_result() {
	local a b
	a=$(norm_result <<<"$2")
	b=$(norm_result <<<"$3")
	[ "$a" = "$b" ] && return 0
	check_fail "$1: results differ (weft vs reference):"
	diff <(echo "$a") <(echo "$b") >&2 || true
}
# json_paths JSON: every key path of a JSON document, sorted (to compare key sets)
json_paths() { jq -c '[paths | map(tostring) | join(".")] | sort' <<<"$1"; }
