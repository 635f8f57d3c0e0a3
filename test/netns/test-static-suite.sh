#!/usr/bin/env bash
# The host suite as `make` built it (build/bin, what install-cni ships): one multi-call file, a
# name per plugin, and - the point of it - a static executable. No namespaces needed.
#
#   build/bin/weft-plugins  <- bridge, ptp, ..., weft, dhcp, host-local, static (hard links)
#
# Checks:
#   - every plugin directory in src/ has its name in build/bin, and all of them are one inode;
#   - each name is its plugin: the no-command text and VERSION equal, byte for byte and exit code,
#     what the per-plugin executables printed before the multi-call build (test/data/plugin-cli,
#     recorded from the last per-plugin build); `weft-plugins NAME` runs NAME as well; an unknown
#     name fails with a message naming it;
#   - linkage: build/linkage (the Makefile's record) says static whenever build/static-deps holds
#     the archives, so `make` cannot quietly produce a dynamic suite; a static suite has no
#     PT_INTERP and no dynamic section (readelf), `file` calls it statically linked, and it names
#     no shared object (no dlopen of libnftables);
#   - size: the stripped suite is under 3 MB (the reference's is ~45 MB).
# A dynamic suite (sanitizer build, or Debian's netfilter source packages could not be fetched:
# build/static-deps/UNAVAILABLE) passes the other checks and then skips, saying why.
. "$(dirname "$0")/../lib/lib.sh"
require_cmd readelf file strip
MC=$WEFT_BIN/weft-plugins
require_built "$MC"
DATA=$TOP/test/data/plugin-cli

names=()
for d in "$TOP"/src/plugins/*/ "$TOP"/src/ipam/*/; do
	d=${d%/}
	names+=("${d##*/}")
done
((${#names[@]} >= 17)) || check_fail "only ${#names[@]} plugin directories found"

info "every plugin name is a link to the one multi-call file"
mc_ino=$(stat -c %i "$MC")
for n in "${names[@]}"; do
	if [ ! -x "$WEFT_BIN/$n" ]; then
		check_fail "no $WEFT_BIN/$n"
		continue
	fi
	assert_eq "$(stat -c %i "$WEFT_BIN/$n")" "$mc_ino" "$n is a hard link to weft-plugins"
done

# out NAME [ENV...]: what NAME prints (stdout + stderr) and its exit code, as recorded in $DATA
run_as() {
	local exe=$1
	shift
	set +e
	env -i PATH=/usr/bin:/bin "$@" "$exe" </dev/null 2>&1
	echo "rc=$?"
	set -e
}

info "each name behaves as its plugin did (no-command text, VERSION)"
for n in "${names[@]}"; do
	[ -f "$DATA/$n.version" ] || { check_fail "no recorded output for $n in $DATA"; continue; }
	assert_eq "$(run_as "$WEFT_BIN/$n" CNI_COMMAND=VERSION)" "$(cat "$DATA/$n.version")" "$n VERSION"
	assert_eq "$(run_as "$WEFT_BIN/$n")" "$(cat "$DATA/$n.help")" "$n without CNI_COMMAND"
done
# the texts differ from plugin to plugin, so a table that sent two names to one plugin cannot pass
assert_eq "$(for n in "${names[@]}"; do head -1 "$DATA/$n.help"; done | sort -u | wc -l)" "${#names[@]}" \
	"one distinct no-command text per plugin"
# a symlink works as well as a hard link (argv[0] is what counts)
ln -s "$MC" "$T/bridge"
assert_eq "$(run_as "$T/bridge" | head -1)" "CNI bridge plugin (weft)" "a symlink named bridge runs bridge"
set +e
out=$("$MC" portmap </dev/null 2>&1)
set -e
assert_eq "$(head -1 <<<"$out")" "CNI portmap plugin (weft)" "weft-plugins portmap runs portmap"

info "an unknown name fails and says which"
ln -s "$MC" "$T/nosuchplugin"
set +e
err=$(CNI_COMMAND=VERSION "$T/nosuchplugin" </dev/null 2>&1 >/dev/null)
rc=$?
set -e
assert_ne "$rc" 0 "unknown name exit code"
[[ $err == *'unknown plugin name "nosuchplugin"'* ]] || check_fail "unknown name message: $err"

info "size: the stripped suite"
strip -o "$T/stripped" "$MC"
size=$(stat -c %s "$T/stripped")
info "weft-plugins: $size bytes stripped ($(stat -c %s "$MC") with debug info), ${#names[@]} names"
((size < 3 * 1000 * 1000)) || check_fail "stripped suite is $size bytes, over 3 MB"

info "linkage"
linkage=$(cat "$WEFT_BUILD/linkage" 2>/dev/null || echo missing)
deps=$TOP/build/static-deps
if [ -f "$deps/.stamp" ] && [ "$linkage" != static ] && [[ $WEFT_BUILD != *san* ]]; then
	check_fail "build/static-deps has the static archives but $WEFT_BUILD/linkage is '$linkage': make built a dynamic suite"
fi
if [ "$linkage" = static ]; then
	for f in "$MC" "$WEFT_BIN"/*; do
		if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
		[ "${f##*/}" != weftd ] || continue # weftd runs in the image: may stay dynamic
		readelf -lW "$f" | grep_q 'INTERP' && check_fail "$f has a PT_INTERP (needs a loader)"
		readelf -dW "$f" | grep_q 'NEEDED' && check_fail "$f needs shared libraries: $(readelf -dW "$f" | grep NEEDED)"
		readelf -dW "$f" | grep_q 'There is no dynamic section' || check_fail "$f has a dynamic section"
		file -L "$f" | grep_q 'statically linked' || check_fail "file(1) does not call $f static: $(file -L "$f")"
		so=$(strings -a "$f" | grep -E '^lib[A-Za-z0-9_+-]+\.so(\.[0-9]+)*$' || true)
		[ -z "$so" ] || check_fail "$f names shared objects (dlopen?): $so"
	done
	finish
fi
if [ "$(_fail_count)" = 0 ]; then
	readelf -lW "$MC" | grep_q 'INTERP' || check_fail "linkage says dynamic but $MC has no PT_INTERP"
fi
if [[ $WEFT_BUILD == *san* ]]; then
	skip "sanitizer build: the host suite is dynamic by design (ASan's runtime is a shared library)"
fi
if [ -f "$deps/UNAVAILABLE" ]; then
	skip "host suite is DYNAMIC: tools/build-static-deps.sh could not build the static libraries: $(head -1 "$deps/UNAVAILABLE") $(grep -m1 '^E:' "$deps/UNAVAILABLE" || true)"
fi
check_fail "host suite is dynamic ($linkage) and build/static-deps was never built: run tools/install-deps.sh (or tools/build-static-deps.sh), then make"
finish
