# shellcheck shell=bash
# Fetching a Debian source package the one trusted way, shared by tools/build-cnitool.sh and
# tools/build-static-deps.sh (source it). `apt-get source` takes the .dsc and tarballs named by
# the Sources index of the configured deb-src suite; that index is covered by the archive's signed
# Release file (Signed-By below), and apt checks every file's size and SHA256 against it before
# keeping it. dpkg-source then unpacks and applies Debian's patches, so we build what Debian ships.

# Adds a deb-src entry for Debian bookworm if there is none (root only; apt-get update after).
debian_source_ensure_deb_src() {
	if grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null ||
		grep -qs '^deb-src' /etc/apt/sources.list 2>/dev/null; then
		return 0
	fi
	echo "adding a deb-src entry for Debian bookworm (needed for 'apt-get source')" >&2
	cat >/etc/apt/sources.list.d/weft-debian-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt-get update -qq
}

# debian_source_fetch PKG DIR: downloads PKG's source package into DIR (checked by apt as above).
# Prints apt's error and returns non-zero when a file cannot be had.
debian_source_fetch() {
	local pkg=$1 dir=$2 log
	debian_source_ensure_deb_src
	mkdir -p "$dir"
	log=$(cd "$dir" && apt-get source -qq --download-only "$pkg" 2>&1) || {
		echo "$log" | grep -E '^(E|W):' >&2
		return 1
	}
}

# debian_source_unpack DIR PKG OUT: unpacks the fetched PKG_*.dsc in DIR into OUT with Debian's
# patches applied; the checksums in the (signed) .dsc are verified against the tarballs again.
debian_source_unpack() {
	local dir=$1 pkg=$2 out=$3 dsc
	dsc=$(ls "$dir/${pkg}"_*.dsc)
	rm -rf "$out"
	dpkg-source --no-copy -x "$dsc" "$out" >/dev/null
}
