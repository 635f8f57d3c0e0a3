#!/usr/bin/env bash
# `weft install-cni` (the DaemonSet's init container step) on temp directories; no namespaces are
# needed except a private mount namespace for the read-only case:
#
#   $T/src  (the image's /opt/weft/bin)  --install-cni-->  $T/dest  (the host's /opt/cni/bin)
#   bridge, loopback, sleepy (copies of true/echo/sleep), README (not executable), .hidden
#
# Covers: first install copies (mode 0755, same bytes), a second run reports unchanged and keeps
# the inodes, a changed binary is replaced while the old copy is executing (it keeps running; an
# in-place write would be ETXTBSY), foreign files in dest untouched, --plugins, a wrong mode
# repaired, stale temp files, --conf-src/--conf-dest, and every error: missing dirs, unknown and
# non-executable plugins (nothing written), read-only dest, a directory in the way, bad usage.
. "$(dirname "$0")/../lib/lib.sh"
require_cmd cmp stat sha256sum
WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFT"

SRC=$T/src
DEST=$T/dest
mkdir -p "$SRC" "$DEST" "$SRC/subdir"
cp /bin/true "$SRC/bridge"
cp /bin/echo "$SRC/loopback"
cp /bin/sleep "$SRC/sleepy"
printf 'docs\n' >"$SRC/README"
chmod 0644 "$SRC/README"
cp /bin/true "$SRC/.hidden"
# Foreign files: a plugin we do not ship and a plain file; they must never change.
printf '#!/bin/sh\necho foreign\n' >"$DEST/foreign-plugin"
chmod 0700 "$DEST/foreign-plugin"
printf 'x\n' >"$DEST/notes.txt"
touch -d '2020-01-01 00:00' "$DEST/foreign-plugin" "$DEST/notes.txt"
foreign_state() { stat -c '%n %i %a %s %Y' "$DEST/foreign-plugin" "$DEST/notes.txt"; sha256sum "$DEST/foreign-plugin" "$DEST/notes.txt"; }
FOREIGN0=$(foreign_state)

# ic ARGS...: run install-cni; sets OUT (stdout), ERR (stderr), RC.
ic() {
	set +e
	OUT=$("$WEFT" install-cni "$@" 2>"$T/.err")
	RC=$?
	set -e
	ERR=$(cat "$T/.err")
	# Under ASan/UBSan (the sanitizer pass) error paths exit non-zero anyway: look for reports.
	! grep -q 'Sanitizer' <<<"$ERR" || check_fail "install-cni $*: sanitizer report: $ERR"
}
ic_ok() { ic "$@"; [ "$RC" = 0 ] || fail "install-cni $* exited $RC: $OUT $ERR"; }
# ic_err PATTERN ARGS...: must fail, stderr must match PATTERN (grep -E).
ic_err() {
	local pat=$1; shift
	ic "$@"
	[ "$RC" != 0 ] || { check_fail "install-cni $*: expected failure, got success: $OUT"; return; }
	grep -qE -- "$pat" <<<"$ERR" || check_fail "install-cni $*: stderr '$ERR' does not match /$pat/"
}
no_temps() {
	local f
	for f in "$1"/.weft-install.*; do [ ! -e "$f" ] || check_fail "temp file left: $f"; done
}

info "first install copies every executable of src"
ic_ok --src "$SRC" --dest "$DEST"
assert_eq "$(grep -c '^installed ' <<<"$OUT")" 3 "installed lines: $OUT"
for p in bridge loopback sleepy; do
	grep -qx "installed $DEST/$p" <<<"$OUT" || check_fail "no 'installed $DEST/$p' in: $OUT"
	cmp -s "$SRC/$p" "$DEST/$p" || check_fail "$p differs after install"
	assert_eq "$(stat -c %a "$DEST/$p")" 755 "mode of $p"
done
grep -q '3 installed, 0 updated, 0 unchanged' <<<"$OUT" || check_fail "summary: $OUT"
for p in README .hidden subdir; do [ ! -e "$DEST/$p" ] || check_fail "$p was copied"; done
"$DEST/loopback" ok >/dev/null || check_fail "installed loopback does not run"
no_temps "$DEST"

info "second install: unchanged, same inodes and mtimes"
before=$(stat -c '%n %i %Y' "$DEST/bridge" "$DEST/loopback" "$DEST/sleepy")
ic_ok --src "$SRC" --dest "$DEST"
assert_eq "$(grep -c '^unchanged ' <<<"$OUT")" 3 "unchanged lines: $OUT"
grep -q '0 installed, 0 updated, 3 unchanged' <<<"$OUT" || check_fail "summary: $OUT"
assert_eq "$(stat -c '%n %i %Y' "$DEST/bridge" "$DEST/loopback" "$DEST/sleepy")" "$before" "files touched by a no-op run"

info "a changed binary is replaced while the old copy is executing"
# long enough to outlive the install on a busy machine (the sanitizer build at load took over 3 s);
# stopped below, once checked
"$DEST/sleepy" 120 &
SLEEPY=$!
on_exit "kill $SLEEPY"
sleep 0.2
kill -0 "$SLEEPY" || fail "sleepy did not start"
# What a naive installer would do: the kernel refuses to write an executing file.
if cp "$SRC/sleepy" "$DEST/sleepy" 2>"$T/cp.err"; then
	check_fail "cp over a running binary succeeded: the ETXTBSY case is not exercised"
else
	grep -q 'Text file busy' "$T/cp.err" || check_fail "cp failed differently: $(cat "$T/cp.err")"
fi
printf 'weft-v2' >>"$SRC/sleepy"      # still a valid ELF, different size and content
ic_ok --src "$SRC" --dest "$DEST"
grep -qx "updated $DEST/sleepy" <<<"$OUT" || check_fail "no 'updated $DEST/sleepy' in: $OUT"
assert_eq "$(grep -c '^unchanged ' <<<"$OUT")" 2 "others unchanged: $OUT"
cmp -s "$SRC/sleepy" "$DEST/sleepy" || check_fail "sleepy not replaced"
assert_eq "$(stat -c %a "$DEST/sleepy")" 755 "mode of new sleepy"
kill -0 "$SLEEPY" 2>/dev/null || check_fail "the running old sleepy died"
case $(readlink "/proc/$SLEEPY/exe" 2>/dev/null) in
*'(deleted)') ;;
*) check_fail "running sleepy's executable is not the old (unlinked) inode: $(readlink "/proc/$SLEEPY/exe")" ;;
esac
"$DEST/sleepy" 0 || check_fail "new sleepy does not run"
kill -0 "$SLEEPY" 2>/dev/null || check_fail "the old sleepy did not run on beside the new one"
kill "$SLEEPY"
wait "$SLEEPY" && rc=0 || rc=$?
assert_eq "$rc" 143 "exit status of the old sleepy (our SIGTERM, nothing else)"
no_temps "$DEST"

info "a wrong mode on an identical file is repaired"
chmod 0644 "$DEST/bridge"
ic_ok --src "$SRC" --dest "$DEST" --plugins bridge
grep -qx "updated $DEST/bridge" <<<"$OUT" || check_fail "mode 0644 not repaired: $OUT"
assert_eq "$(stat -c %a "$DEST/bridge")" 755 "repaired mode"

info "stale temp files of a dead run are removed, fresh ones (a concurrent run) kept"
: >"$DEST/.weft-install.bridge.0123456789abcdef"
touch -d '1 hour ago' "$DEST/.weft-install.bridge.0123456789abcdef"
: >"$DEST/.weft-install.loopback.fedcba9876543210"
ic_ok --src "$SRC" --dest "$DEST"
[ ! -e "$DEST/.weft-install.bridge.0123456789abcdef" ] || check_fail "stale temp file kept"
[ -e "$DEST/.weft-install.loopback.fedcba9876543210" ] || check_fail "fresh temp file removed"
rm -f "$DEST/.weft-install.loopback.fedcba9876543210"

assert_eq "$(foreign_state)" "$FOREIGN0" "foreign files in dest changed"

info "--plugins installs only the listed names"
D2=$T/dest2
mkdir "$D2"
ic_ok --src "$SRC" --dest "$D2" --plugins sleepy,bridge
assert_eq "$(find "$D2" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')" "bridge sleepy " "dest2 content"
grep -q '2 installed' <<<"$OUT" || check_fail "summary: $OUT"

info "errors"
# Validation happens before any write: loopback must not appear in dest2.
ic_err 'nope: no such file' --src "$SRC" --dest "$D2" --plugins loopback,nope
ic_err 'README: not executable' --src "$SRC" --dest "$D2" --plugins loopback,README
ic_err 'not a regular file' --src "$SRC" --dest "$D2" --plugins subdir
ic_err 'invalid plugin name' --src "$SRC" --dest "$D2" --plugins ../etc/passwd
ic_err 'invalid plugin name' --src "$SRC" --dest "$D2" --plugins ..
ic_err 'empty list' --src "$SRC" --dest "$D2" --plugins ,
[ ! -e "$D2/loopback" ] || check_fail "loopback installed by a failed run"
ic_err "Source directory $T/missing: no such directory" --src "$T/missing" --dest "$DEST"
ic_err "Destination directory $T/missing: no such directory" --src "$SRC" --dest "$T/missing"
ic_err "no executables" --src "$T/src/subdir" --dest "$DEST"
ic_err 'required' --src "$SRC"
ic_err 'Unexpected argument' --src "$SRC" --dest "$DEST" extra
ic_err 'go together' --src "$SRC" --dest "$DEST" --conf-src "$T/x.conflist"
D3=$T/dest3
mkdir -p "$D3/bridge"
ic_err 'is a directory, refusing' --src "$SRC" --dest "$D3" --plugins bridge
[ -d "$D3/bridge" ] || check_fail "directory in dest replaced"
no_temps "$D3"

if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	info "read-only destination (bind mount, private mount namespace)"
	RO=$T/ro
	mkdir "$RO"
	set +e
	# shellcheck disable=SC2016 # expanded by the inner sh
	unshare -m sh -c 'mount --make-rprivate / && mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" &&
		exec "$2" install-cni --src "$3" --dest "$1"' sh "$RO" "$WEFT" "$SRC" >"$T/ro.out" 2>"$T/ro.err"
	RC=$?
	set -e
	[ "$RC" != 0 ] || check_fail "install into a read-only dest succeeded: $(cat "$T/ro.out")"
	grep -q "Failed to create a file in $RO: Read-only file system" "$T/ro.err" ||
		check_fail "read-only error message: $(cat "$T/ro.err")"
else
	info "read-only destination not tested (needs root and unshare)"
fi

info "--conf-src / --conf-dest"
NETD=$T/net.d
mkdir "$NETD"
printf '{"cniVersion":"1.0.0","name":"weft","plugins":[{"type":"weft"}]}\n' >"$T/10-weft.conflist"
ic_ok --src "$SRC" --dest "$DEST" --conf-src "$T/10-weft.conflist" --conf-dest "$NETD"
grep -qx "installed $NETD/10-weft.conflist" <<<"$OUT" || check_fail "conf not installed: $OUT"
cmp -s "$T/10-weft.conflist" "$NETD/10-weft.conflist" || check_fail "conf content"
assert_eq "$(stat -c %a "$NETD/10-weft.conflist")" 644 "conf mode"
ic_ok --src "$SRC" --dest "$DEST" --conf-src "$T/10-weft.conflist" --conf-dest "$NETD"
grep -qx "unchanged $NETD/10-weft.conflist" <<<"$OUT" || check_fail "conf not unchanged: $OUT"
ic_err "$T/none.conflist: no such file" --src "$SRC" --dest "$DEST" --conf-src "$T/none.conflist" --conf-dest "$NETD"
ic_err "Config destination directory $T/nonetd: no such directory" --src "$SRC" --dest "$DEST" \
	--conf-src "$T/10-weft.conflist" --conf-dest "$T/nonetd"

"$WEFT" install-cni --help | grep_q -- '--conf-src' || check_fail "--help"
finish
