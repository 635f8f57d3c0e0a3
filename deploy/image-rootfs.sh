#!/usr/bin/env bash
# Stages the root filesystem of the weft image (deploy/Containerfile is FROM scratch and copies
# it): the binaries of a build directory, stripped, and exactly the shared libraries weftd and the
# weft tool load, taken from this machine (Debian 12), at the paths the dynamic loader looks in.
# The plugins are the static multi-call suite and need none of them.
#
#   deploy/image-rootfs.sh BUILD_DIR OUT_DIR      (make image calls it; OUT_DIR/rootfs is made)
#
#   /usr/bin/weftd, /usr/bin/weft          the node agent and the runtime tool (install-cni)
#   /opt/weft/bin/weft-plugins             the CNI plugins, one static multi-call file (what
#   /opt/weft/bin/<plugin> -> weft-plugins install-cni copies to the host), a symlink per name
#   /usr/lib/x86_64-linux-gnu/*.so.*       their libraries, as ldd resolves them here
#   /lib64/ld-linux-x86-64.so.2            the ELF interpreter; /lib, /lib64, /bin: merged-/usr links
#   /etc/passwd, /etc/group, /etc/nsswitch.conf, /tmp, /run, /var/lib
#
# No shell, no package manager, no libraries nobody loads. Checks at the end (in a chroot of the
# result, so a missing library fails here and not on a node): every executable starts.
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
out=$2
root=$out/rootfs
for f in "$build/bin/weftd" "$build/tool/weft" "$build/bin/weft"; do
	[ -x "$f" ] || { echo "image-rootfs: no $f (run make first)" >&2; exit 1; }
done

rm -rf "$root"
mkdir -p "$root"/{usr/bin,usr/lib,opt/weft/bin,etc,tmp,run,var/lib,proc,sys,dev}
chmod 1777 "$root/tmp"
# merged /usr, as Debian 12: the ELF interpreter path (/lib64/...) and /lib/modules (a hostPath
# mount in the DaemonSet) resolve through these links
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"

# strip into the image: the build keeps its debug info, the image does not need it
install_bin() { # SRC DEST
	cp "$1" "$2"
	strip --strip-unneeded "$2"
	chmod 0755 "$2"
}
# The plugins are one multi-call file (build/bin/weft-plugins; every plugin name a hard link to
# it): stored once, each name a symlink to it (symlinks survive any image layer tool; install-cni
# follows them and writes one file with a hard link per name on the host).
mc=$build/bin/weft-plugins
[ -x "$mc" ] || { echo "image-rootfs: no $mc (run make first)" >&2; exit 1; }
install_bin "$mc" "$root/opt/weft/bin/weft-plugins"
for f in "$build"/bin/*; do
	if [ ! -f "$f" ] || [ ! -x "$f" ] || [ "$f" = "$mc" ]; then continue; fi
	case ${f##*/} in
	weftd) install_bin "$f" "$root/usr/bin/weftd" ;;
	*)
		[ "$(stat -c %i "$f")" = "$(stat -c %i "$mc")" ] || {
			echo "image-rootfs: $f is not a link to $mc: a stale per-plugin build? (make clean; make)" >&2
			exit 1
		}
		ln -s weft-plugins "$root/opt/weft/bin/${f##*/}"
		;;
	esac
done
# What lands on the hosts must be static (it runs with whatever root the node has). A dynamic
# suite (the build could not make the static libraries: build/static-deps/UNAVAILABLE) is refused
# unless WEFT_ALLOW_DYNAMIC_PLUGINS=1 says to ship it anyway, for a test image on this machine.
linkage=$(cat "$build/linkage" 2>/dev/null || echo unknown)
if [ "$linkage" = static ]; then
	if readelf -lW "$root/opt/weft/bin/weft-plugins" | grep -q INTERP ||
		readelf -dW "$root/opt/weft/bin/weft-plugins" | grep -q NEEDED; then
		echo "image-rootfs: $build/linkage says static but weft-plugins needs a loader" >&2
		exit 1
	fi
elif [ "${WEFT_ALLOW_DYNAMIC_PLUGINS:-0}" = 1 ]; then
	echo "image-rootfs: WARNING: the plugins are DYNAMIC ($linkage): they will only run on hosts with Debian 12's libraries" >&2
else
	echo "image-rootfs: the plugins in $build are not static ($linkage): refusing to build an image whose plugins" >&2
	echo "  need the host's libraries (tools/build-static-deps.sh; see build/static-deps/UNAVAILABLE)." >&2
	echo "  WEFT_ALLOW_DYNAMIC_PLUGINS=1 builds it anyway (a test image for this machine only)." >&2
	exit 1
fi
install_bin "$build/tool/weft" "$root/usr/bin/weft"

# libraries: the union of what ldd resolves for every executable, copied (dereferenced) under
# the same directory, plus the SONAME links the loader asks for
declare -A libs=() needed=()
interp=
for f in "$root"/usr/bin/* "$root"/opt/weft/bin/*; do
	# (no `grep -q` and no `exit` in awk in these pipelines: under pipefail, the writer killed
	# by SIGPIPE fails the pipeline, which made `make image` exit 141 once ldconfig -p's output
	# outgrew the pipe buffer)
	missing=$(ldd "$f" | grep 'not found' || true)
	if [ -n "$missing" ]; then
		echo "image-rootfs: $f: $missing" >&2
		exit 1
	fi
	while read -r l; do libs[$l]=1; done < <(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
	while read -r l; do needed[$l]=1; done < <(ldd "$f" | awk '$2 == "=>" {print $1}')
	i=$(ldd "$f" | awk '$1 ~ /^\/.*ld-linux/ {print $1}')
	[ -n "$i" ] && interp=$i
done
[ -n "$interp" ] || { echo "image-rootfs: no ELF interpreter found by ldd" >&2; exit 1; }
# libraries loaded with dlopen() (libnftables: src/shared/nft/nft-ctx.c) are not DT_NEEDED, so
# ldd does not list them: every soname string in the binaries that ldconfig knows and ldd did
# not list is one, and comes with its own dependencies
declare -A dl=()
for f in "$root"/usr/bin/* "$root"/opt/weft/bin/*; do
	while read -r so; do [ -n "${needed[$so]:-}" ] || dl[$so]=1; done < <(strings -a "$f" | grep -E '^lib[A-Za-z0-9_+-]+\.so(\.[0-9]+)+$' || true)
done
for so in "${!dl[@]}"; do
	p=$(ldconfig -p | awk -v so="$so" '$1 == so && /x86-64|x86_64/ && p == "" {p = $NF} END {print p}')
	[ -n "$p" ] || { echo "image-rootfs: binaries name $so, which this machine does not have" >&2; exit 1; }
	libs[$p]=1
	while read -r l; do libs[$l]=1; done < <(ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
	echo "image-rootfs: $so is loaded with dlopen(): included with its dependencies" >&2
done
copy_lib() { # PATH-as-linked: copies the real file to usr/<dir>/<name> (never through /lib links)
	local p=$1 real dir name
	real=$(readlink -f "$p")
	name=${p##*/}
	dir=$(dirname "$real")
	dir=${dir#/usr}
	mkdir -p "$root/usr$dir"
	cp "$real" "$root/usr$dir/$name"
}
for l in "${!libs[@]}"; do copy_lib "$l"; done
copy_lib "$interp"
# /lib64/ld-linux-x86-64.so.2 → the loader in the multiarch dir, as on Debian
ireal=$(readlink -f "$interp")
mkdir -p "$root/usr/lib64"
[ "$(dirname "$interp")" = /lib64 ] && ln -sf "../lib/${ireal##*/lib/}" "$root/usr/lib64/${interp##*/}"
[ -e "$root$interp" ] || { echo "image-rootfs: $interp does not resolve in the image" >&2; exit 1; }

printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
: >"$root/etc/hosts"
: >"$root/etc/resolv.conf"

# every executable starts inside the image's own root with only its own libraries, and the
# dlopen()ed ones load there (the loader finds them without an ld.so.cache)
if [ "$(id -u)" = 0 ]; then
	for so in "${!dl[@]}"; do
		cat >"$root/tmp/dl.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) { if (!dlopen(argv[1], RTLD_NOW)) { puts(dlerror()); return 1; } return 0; }
C
		if command -v cc >/dev/null && cc -o "$root/tmp/dl" "$root/tmp/dl.c" 2>/dev/null; then
			chroot "$root" /tmp/dl "$so" || { echo "image-rootfs: $so does not load in the image" >&2; exit 1; }
		fi
		rm -f "$root/tmp/dl" "$root/tmp/dl.c"
	done
	chroot "$root" /usr/bin/weftd --help >/dev/null
	chroot "$root" /usr/bin/weft install-cni --help >/dev/null
	for f in "$root"/opt/weft/bin/*; do
		# a plugin without CNI_COMMAND prints its version/about line and exits (no privileges)
		out=$(chroot "$root" "/opt/weft/bin/${f##*/}" </dev/null 2>&1 || true)
		if grep -qiE 'error while loading shared libraries|not found|No such file' <<<"$out"; then
			echo "image-rootfs: ${f##*/} does not start in the image: $out" >&2
			exit 1
		fi
	done
fi
echo "image-rootfs: $(find "$root" -type f | wc -l) files, $(du -sh --apparent-size "$root" | cut -f1) in $root" >&2
