#!/usr/bin/env bash
# Builds the static archives the host suite links (Makefile, STATIC): Debian 12 ships libjansson.a
# but no static libmnl, libnftnl or libnftables, so this builds those three from Debian's own
# source packages (fetched and checked through apt's signed Sources: tools/debian-source.sh),
# Debian's patches applied, with what the plugins never use turned off:
#   libmnl      static only
#   libnftnl    static only
#   nftables    libnftables only: no nft CLI (so no readline/editline/linenoise), mini-gmp (no
#               libgmp), no xtables (no libxtables), JSON through jansson (the listings weft
#               parses are JSON), no man pages, no python
# Output: DIR (default build/static-deps) with lib/*.a, include/, lib/pkgconfig/, and DIR/.stamp
# naming the versions built; the Makefile builds a static suite once .stamp exists. A rebuild is a
# no-op while the stamp matches the versions apt offers and this script. Offline but for apt.
#
#   tools/build-static-deps.sh [DIR] [--force]
#
# Exits 0 when the archives are there, 1 with apt's error when a source package cannot be had
# (DIR/UNAVAILABLE then records why, for tools/install-deps.sh and the static-suite test).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
out=${1:-build/static-deps}
force=0
[ "${2:-}" = --force ] && force=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
PKGS=(libmnl libnftnl nftables)

# The stamp: versions apt would fetch now + this script's hash.
want=$(
	for p in "${PKGS[@]}"; do
		printf '%s %s\n' "$p" "$(apt-cache showsrc "$p" 2>/dev/null | awk '/^Version:/ && !v {v = $2} END {print v}')"
	done
	printf 'script %s\n' "$(sha256sum "$top/tools/build-static-deps.sh" | cut -d' ' -f1)"
)
if [ "$force" = 0 ] && [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ]; then
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # apt downloads as _apt
# shellcheck source=tools/debian-source.sh
. tools/debian-source.sh
rm -f "$out/.stamp" "$out/UNAVAILABLE"
for p in "${PKGS[@]}"; do
	if ! err=$(debian_source_fetch "$p" "$work/src" 2>&1); then
		printf 'source package %s cannot be fetched through apt:\n%s\n' "$p" "$err" >"$out/UNAVAILABLE"
		echo "build-static-deps: $(head -1 "$out/UNAVAILABLE")" >&2
		echo "$err" >&2
		exit 1
	fi
	debian_source_unpack "$work/src" "$p" "$work/$p"
done

jobs=$(nproc)
prefix=$out
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# -fPIE as Debian's default; the plugins link with -static (non-PIE), which takes PIE objects.
export CFLAGS="-O2 -g -fPIE -ffunction-sections -fdata-sections"
conf() { # DIR ARGS...: configure + install, quietly; the log is kept on failure
	local d=$1
	shift
	(cd "$d" && ./configure -q --prefix="$prefix" --libdir="$prefix/lib" --enable-static --disable-shared "$@" &&
		make -s -j"$jobs" && make -s install) >"$work/build.log" 2>&1 || {
		tail -40 "$work/build.log" >&2
		echo "build-static-deps: building $(basename "$d") failed" >&2
		exit 1
	}
}
conf "$work/libmnl"
conf "$work/libnftnl"
# nftables 1.0.6: --without-cli drops readline/editline/linenoise, --with-mini-gmp its bundled
# mini-gmp instead of libgmp, --without-xtables the xt match translation (and libxtables).
conf "$work/nftables" --without-cli --with-mini-gmp --without-xtables --with-json --disable-man-doc \
	--disable-python
for a in libmnl.a libnftnl.a libnftables.a; do
	[ -f "$prefix/lib/$a" ] || {
		echo "build-static-deps: $a missing after the build" >&2
		exit 1
	}
done
rm -rf "${prefix:?}/share" "${prefix:?}/sbin" "${prefix:?}/etc"
printf '%s\n' "$want" >"$out/.stamp"
echo "build-static-deps: $(tr '\n' ' ' <"$out/.stamp" | sed 's/ script .*//') -> $out"
