#!/usr/bin/env bash
# `weft install-cni` with the real multi-call suite: the source is one file with a name per
# plugin (build/bin/weft-plugins and its hard links), and the destination must end up the same,
# one file, never a copy per name, installed without disturbing a plugin that is running.
#
#   $T/src  (weft-plugins + bridge, dhcp, host-local, loopback: hard links)  --install-cni-->  $T/dest
#
# Covers: first install (one inode, as many links as names, same bytes, each name runs its plugin),
# a second run changes nothing (inode, mtime), a new suite replaces every name while the old one
# runs `dhcp daemon` (the only long-running plugin mode: it keeps running from the old inode, the
# names all point at the new file), a destination holding separate per-plugin copies (what
# install-cni wrote before the multi-call suite) is turned into links, --plugins with a subset.
. "$(dirname "$0")/../lib/lib.sh"
require_cmd cmp stat
WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFT" "$WEFT_BIN/weft-plugins"

SRC=$T/src
DEST=$T/dest
mkdir -p "$SRC" "$DEST"
NAMES=(bridge dhcp host-local loopback)
cp "$WEFT_BIN/weft-plugins" "$SRC/weft-plugins"
for n in "${NAMES[@]}"; do ln "$SRC/weft-plugins" "$SRC/$n"; done

ic_ok() {
	OUT=$("$WEFT" install-cni "$@" 2>"$T/.err") || fail "install-cni $* failed: $(cat "$T/.err")"
}
# one_file DIR NAMES...: every name in DIR is one inode, with exactly that many links
one_file() {
	local dir=$1 ino n
	shift
	ino=$(stat -c %i "$dir/$1")
	for n in "$@"; do assert_eq "$(stat -c %i "$dir/$n")" "$ino" "$dir/$n is the same file as $dir/$1"; done
	assert_eq "$(stat -c %h "$dir/$1")" "$#" "link count of the installed suite"
}
no_temps() { assert_eq "$(find "$1" -name '.weft-install.*' | wc -l)" 0 "temp files left in $1"; }

info "first install: one file, a link per name"
ic_ok --src "$SRC" --dest "$DEST"
assert_eq "$(grep -c '^installed ' <<<"$OUT")" 5 "five names installed: $OUT"
one_file "$DEST" weft-plugins "${NAMES[@]}"
cmp -s "$SRC/weft-plugins" "$DEST/bridge" || check_fail "installed bytes differ"
assert_eq "$(stat -c %a "$DEST/bridge")" 755 "mode"
for n in "${NAMES[@]}"; do
	set +e
	first=$("$DEST/$n" </dev/null 2>&1 | head -1)
	set -e
	[[ $first == *"$n"* ]] || check_fail "$DEST/$n does not run $n: $first"
done
no_temps "$DEST"

info "second install: unchanged"
before=$(stat -c '%n %i %Y' "$DEST"/*)
ic_ok --src "$SRC" --dest "$DEST"
assert_eq "$(grep -c '^unchanged ' <<<"$OUT")" 5 "all unchanged: $OUT"
assert_eq "$(stat -c '%n %i %Y' "$DEST"/*)" "$before" "no file touched by a no-op run"

info "a new suite while the old one runs dhcp daemon"
"$DEST/dhcp" daemon -socketpath "$T/dhcp.sock" -pidfile "$T/dhcp.pid" >"$T/dhcp.log" 2>&1 &
DHCPD=$!
on_exit "kill $DHCPD"
for _ in $(seq 50); do [ -S "$T/dhcp.sock" ] && break; sleep 0.1; done
[ -S "$T/dhcp.sock" ] || fail "dhcp daemon did not start: $(cat "$T/dhcp.log")"
old_ino=$(stat -c %i "$DEST/dhcp")
# a new build: another file with a link per name (still a valid ELF, other bytes)
rm -f "$SRC"/*
cp "$WEFT_BIN/weft-plugins" "$SRC/weft-plugins"
printf 'weft-v2' >>"$SRC/weft-plugins"
for n in "${NAMES[@]}"; do ln "$SRC/weft-plugins" "$SRC/$n"; done
ic_ok --src "$SRC" --dest "$DEST"
assert_eq "$(grep -c '^updated ' <<<"$OUT")" 5 "every name updated: $OUT"
one_file "$DEST" weft-plugins "${NAMES[@]}"
cmp -s "$SRC/weft-plugins" "$DEST/dhcp" || check_fail "new suite not installed"
assert_ne "$(stat -c %i "$DEST/dhcp")" "$old_ino" "dhcp is a new inode"
kill -0 "$DHCPD" 2>/dev/null || check_fail "the running dhcp daemon died"
case $(readlink "/proc/$DHCPD/exe" 2>/dev/null) in
*'(deleted)') ;;
*) check_fail "the running daemon's executable is not the old (unlinked) inode: $(readlink "/proc/$DHCPD/exe")" ;;
esac
# the old daemon still answers: STATUS through the new plugin
conf='{"cniVersion":"1.1.0","name":"d","type":"dhcp","ipam":{"type":"dhcp","daemonSocketPath":"'$T/dhcp.sock'"}}'
set +e
st=$(env -i CNI_COMMAND=STATUS CNI_PATH="$DEST" "$DEST/dhcp" <<<"$conf" 2>&1)
rc=$?
set -e
assert_eq "$rc" 0 "STATUS of the running daemon through the new suite: $st"
no_temps "$DEST"

info "separate per-plugin copies in dest become links"
rm -f "$DEST"/*
for n in weft-plugins "${NAMES[@]}"; do cp "$SRC/weft-plugins" "$DEST/$n"; done
ic_ok --src "$SRC" --dest "$DEST"
one_file "$DEST" weft-plugins "${NAMES[@]}"
assert_eq "$(grep -c '^unchanged ' <<<"$OUT")" 1 "the first name (same bytes) is kept: $OUT"

info "--plugins: a subset is one file as well"
D2=$T/dest2
mkdir -p "$D2"
ic_ok --src "$SRC" --dest "$D2" --plugins loopback,bridge
one_file "$D2" loopback bridge
[ ! -e "$D2/dhcp" ] || check_fail "--plugins wrote a name it did not list"
finish
