#!/usr/bin/env bash
# Prepares the CRI test client (test/runtime/cri/cri.js); idempotent, quick when done:
#
#   1. node_modules from package-lock.json (npm ci: @grpc/grpc-js, @grpc/proto-loader);
#   2. api/api.proto: the CRI v1 protocol, taken from Debian's containerd source package (its
#      vendor/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto) of the containerd version installed
#      here, with the license next to it.
#
# Why fetched, not committed: the proto then always matches the containerd the tests drive
# (Debian's security updates included), and the repository carries no third-party sources. This
# step needs Debian's archive anyway (apt-get source), as step 1 needs npm's registry; both are
# run by tools/install-deps.sh, and again by the tests when something is missing.
#
# The gogoproto import and options at the top of api.proto are Go code-generation hints (no
# effect on the wire); cri.js drops them when loading, so no gogo.proto is needed.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "cri/setup: needs node and npm (apt-get install nodejs npm)" >&2
	exit 1
fi

# node_modules is current when it was installed (stamp) after the lock last changed
if ! [ -d node_modules/@grpc/grpc-js ] || ! [ -d node_modules/@grpc/proto-loader ] ||
	! [ node_modules/.weft-stamp -nt package-lock.json ]; then
	echo "cri/setup: npm ci" >&2
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
	touch node_modules/.weft-stamp
fi

want=$(dpkg-query -W -f='${source:Version}' containerd 2>/dev/null || true)
[ -n "$want" ] || { echo "cri/setup: containerd is not installed (apt-get install containerd)" >&2; exit 1; }
if [ -s api/api.proto ] && [ "$(cat api/VERSION 2>/dev/null)" = "$want" ]; then
	exit 0
fi

# apt-get source needs a deb-src entry: the one tools/debian-source.sh adds for the builds
# shellcheck source=tools/debian-source.sh
. ../../../tools/debian-source.sh
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null &&
	! grep -qs '^deb-src' /etc/apt/sources.list 2>/dev/null; then
	[ "$(id -u)" = 0 ] || { echo "cri/setup: no deb-src entry, run as root to add one" >&2; exit 1; }
	debian_source_ensure_deb_src
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work" # apt's _apt user downloads into it
# the installed version's source; the candidate's when that one has left the archive
(cd "$work" && { apt-get source -qq --download-only "containerd=$want" || apt-get source -qq --download-only containerd; } >/dev/null 2>&1) ||
	{ echo "cri/setup: apt-get source containerd failed" >&2; exit 1; }
orig=$(ls "$work"/containerd_*.orig.tar.*)
tar -tf "$orig" >"$work/list"
inner=$(grep -m1 '/vendor/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto$' "$work/list") ||
	{ echo "cri/setup: $orig has no vendor/k8s.io/cri-api/.../v1/api.proto" >&2; exit 1; }
tar -C "$work" -xf "$orig" "$inner" "${inner%pkg/apis/runtime/v1/api.proto}LICENSE"
mkdir -p api
cp "$work/$inner" api/api.proto.new
cp "$work/${inner%pkg/apis/runtime/v1/api.proto}LICENSE" api/LICENSE
mv api/api.proto.new api/api.proto
{
	echo "api.proto: k8s.io/cri-api runtime/v1, from Debian's containerd source package $(basename "$orig")"
	echo "path in the tarball: $inner"
} >api/SOURCE
echo "$want" >api/VERSION
echo "cri/setup: api/api.proto from containerd $want" >&2
