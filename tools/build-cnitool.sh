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
# shellcheck source=tools/debian-source.sh
. tools/debian-source.sh
debian_source_fetch golang-github-appc-cni-dev "$work" >/dev/null
tar -C "$work" -xf "$work"/golang-github-appc-cni_*.orig.tar.*
main=$(ls "$work"/golang-github-appc-cni-*/cnitool/cnitool.go)
mkdir -p "$work/src"
cp "$main" "$work/src/"
(cd "$work/src" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/cache" go build -o "$OLDPWD/$out" cnitool.go)
echo "built $out from $(basename "$(dirname "$(dirname "$main")")")"
