#!/usr/bin/env bash
# Builds cnitool (the reference runtime-side tool) from Debian's Go sources of
# containernetworking/cni: libcni comes from golang-github-appc-cni-dev, the cnitool main file from
# that package's Debian source package. Output: build/tools/cnitool. Offline; no Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/tools/cnitool
[ -x "$out" ] && [ "${1:-}" != --force ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p build/tools
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null &&
	! grep -qs '^deb-src' /etc/apt/sources.list 2>/dev/null; then
	echo "adding a deb-src entry for Debian bookworm (needed for 'apt-get source')" >&2
	cat >/etc/apt/sources.list.d/weft-debian-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt-get update -qq
fi
(cd "$work" && apt-get source -qq --download-only golang-github-appc-cni-dev >/dev/null 2>&1)
tar -C "$work" -xf "$work"/golang-github-appc-cni_*.orig.tar.*
main=$(ls "$work"/golang-github-appc-cni-*/cnitool/cnitool.go)
mkdir -p "$work/src"
cp "$main" "$work/src/"
(cd "$work/src" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/cache" go build -o "$OLDPWD/$out" cnitool.go)
echo "built $out from $(basename "$(dirname "$(dirname "$main")")")"
