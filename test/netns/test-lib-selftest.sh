#!/usr/bin/env bash
# Self-test of lib.sh's verdict: small throwaway scripts source it, do one thing wrong (or right),
# and their exit status must say so. A test library whose scripts pass after failed checks makes
# every test built on it unable to fail.
#
#   $T/test-case-NAME.sh ── sources LIB (default: test/lib/lib.sh) ── exit status, output
#                       WEFT_BUILD=$T/build (bin/bridge exists, nothing else)
#
# LIB=path/to/old/lib.sh runs the cases against another copy (to see them fail on the old one).
# shellcheck disable=SC2016 # the case bodies are single-quoted on purpose: they expand in the case
. "$(dirname "$0")/../lib/lib.sh"
require_cmd ip jq

LIB=${LIB:-$TOP/test/lib/lib.sh}
FAKE=$T/build
mkdir -p "$FAKE/bin"
printf '#!/bin/sh\nexit 0\n' >"$FAKE/bin/bridge"
chmod +x "$FAKE/bin/bridge"

# run_case NAME EXPECT BODY [WEFT_BUILD]: run BODY after sourcing LIB; exit status must be EXPECT
# ("nonzero" = anything but 0 and 77). Sets OUT (stdout+stderr of the case).
run_case() {
	local name=$1 expect=$2 body=$3 build=${4:-$FAKE} f=${RUN_CASE_FILE:-$T/test-case-$1.sh} rc ok=0 l
	{
		echo '#!/usr/bin/env bash'
		printf '. %q\n' "$LIB"
		echo 'echo "TMPDIR-OF-CASE $T"'
		printf '%s\n' "$body"
	} >"$f"
	set +e
	OUT=$(cd "$T" && env -i PATH="$PATH" WEFT_BUILD="$build" bash "$f" 2>&1)
	rc=$?
	set -e
	case $expect in
	nonzero) [ "$rc" != 0 ] && [ "$rc" != 77 ] && ok=1 ;;
	*) [ "$rc" = "$expect" ] && ok=1 ;;
	esac
	if [ $ok = 1 ]; then
		info "$name: exit $rc"
	else
		check_fail "$name: expected exit $expect, got $rc; output:"
		while IFS= read -r l; do echo "    $l"; done <<<"$OUT" >&2
	fi
	# the case's temporary directory is gone whatever happened
	local d
	d=$(sed -n 's/^TMPDIR-OF-CASE //p' <<<"$OUT" | head -1)
	[ -z "$d" ] || [ ! -e "$d" ] || check_fail "$name: left its temporary directory $d behind"
}

# the verdicts that were right before
run_case all-good 0 'check_ok=1; [ "$check_ok" = 1 ] || check_fail "no"; finish'
run_case finish-with-failures 1 'check_fail "one"; check_fail "two"; finish'
grep -q 'FAIL: test-case-finish-with-failures (2 checks failed)' <<<"$OUT" || check_fail "finish's summary line is missing: $OUT"
run_case skip 77 'skip "no such kernel feature"'
run_case fail 1 'fail "hard failure"; finish'
run_case set-e nonzero 'false; finish'

# a script that forgets finish, or leaves early with exit 0, must not pass
run_case forgot-finish-with-failures 1 'check_fail "forgotten"'
grep -q 'FAIL: test-case-forgot-finish-with-failures (1 checks failed' <<<"$OUT" ||
	check_fail "no summary when finish is missing: $OUT"
run_case early-exit-0-with-failures 1 'check_fail "bad"; exit 0; finish'
run_case forgot-finish-clean 1 'info "all checks passed, but the script never says so"'
run_case early-exit-0-clean 1 'exit 0; check_fail "never reached"; finish'
# a program that borrows the helpers (not a test-*.sh: tools/demo) need not call finish, but its
# failed checks still fail it
run_case_named() { local f=$1; shift; RUN_CASE_FILE=$f run_case "$@"; }
run_case_named "$T/demo-like.sh" program-without-finish 0 'info "done"'
run_case_named "$T/demo-like.sh" program-with-failures 1 'check_fail "broken"'
# a skip after failed checks hides nothing
run_case skip-after-failures 1 'check_fail "config error"; skip "kernel lacks it"'
# failures recorded in subshells count: command substitution, pipeline, background job
run_case fail-in-cmdsubst 1 'x=$(check_fail "in \$(...)"; echo y); [ "$x" = y ]; finish'
run_case fail-in-pipeline 1 'printf "a\nb\n" | while read -r l; do [ "$l" = a ] || check_fail "line $l"; done; finish'
run_case fail-in-background 1 '( check_fail "in a background job" ) & wait; finish'

# our binaries missing is a failure, never a skip
run_case plugin-missing 1 'require_plugins bridge host-local; finish'
grep -q 'host-local is missing' <<<"$OUT" || check_fail "require_plugins does not name the missing plugin: $OUT"
run_case plugin-present 0 'require_plugins bridge; finish'
run_case no-build-dir 1 'finish' "$T/no-such-build"

# namespaces made with mk_netns (also inside $(...)) are removed at exit, pass or fail
if [ "$(id -u)" = 0 ]; then
	run_case netns-cleanup 1 'NS=$(mk_netns selftest); echo "NS-OF-CASE $NS"; check_fail "x"; finish'
	ns=$(sed -n 's/^NS-OF-CASE //p' <<<"$OUT")
	[ -n "$ns" ] || check_fail "netns-cleanup: no namespace was created: $OUT"
	[ -z "$ns" ] || ! ip netns list | grep_q -w -- "$ns" || {
		check_fail "netns-cleanup: $ns still exists"
		ip netns del "$ns" || true
	}
fi
finish
