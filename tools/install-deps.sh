#!/usr/bin/env bash
# Installs everything the build, the tests and the bench need (Debian 12), then builds the static
# libmnl/libnftnl/libnftables the host suite links (tools/build-static-deps.sh) and cnitool.
# Idempotent and fast when everything is there: asks dpkg-query first and only runs apt-get
# (update + install, no recommends) for what is missing.
#
# Every package below exists in Debian 12 (bookworm); checked with apt-cache policy.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
	# build
	build-essential pkg-config dpkg-dev
	libjansson-dev libmnl-dev libnftables-dev libcurl4-openssl-dev libyaml-dev
	clang            # libFuzzer builds (make fuzz)
	# tests
	libcmocka-dev nftables iproute2 iputils-ping jq curl python3 netcat-openbsd tcpdump procps psmisc shellcheck
	clang-format          # tools/check-style (the "style" test): .clang-format is written for version 14
	busybox-static runc   # runtime tests (podman/containerd run a busybox rootfs)
	nodejs python3-yaml   # runtime tests: the CRI client (test/runtime/cri), the DaemonSet read from deploy/
	prometheus            # promtool and the server that scrape weftd's /metrics
	dnsmasq-base          # DHCP server for the dhcp plugin test
	groff-base            # the man page check renders man/*.8 (test-man-pages)
	# interop: reference plugins, cnitool sources (tools/build-cnitool.sh), runtimes
	golang-go golang-github-appc-cni-dev containernetworking-plugins containerd podman
	# weftd datastore
	etcd-server etcd-client
	# weftd bgp backend: BIRD on the nodes, FRR as the router in the path (tests start their own instances)
	bird2 frr
	# weftd wireguard backend: wireguard-go (the userspace WireGuard weftd starts when the kernel has no
	# module); wireguard-tools (wg) only for tests to inspect devices, never called by weftd
	wireguard-go wireguard-tools
	# bench
	iperf3 gnuplot-nox hyperfine time
)

missing=()
for p in "${PKGS[@]}"; do
	# "install ok installed" only; half-installed or config-files counts as missing
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
		missing+=("$p")
	fi
done

# npm ships inside some nodejs builds (not Debian's): ask for the package only when there is no npm
command -v npm >/dev/null || missing+=(npm)

if ((${#missing[@]} > 0)); then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: missing packages (run as root to install): ${missing[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The static host suite's libraries (cached in build/static-deps; a no-op when up to date). When
# Debian's source packages cannot be fetched the build goes on with a DYNAMIC host suite (the
# Makefile's STATIC=auto), loudly: build/static-deps/UNAVAILABLE says why, test-static-suite
# reports it, and `make image` refuses such a suite unless told otherwise.
if ! tools/build-static-deps.sh; then
	echo "install-deps: WARNING: no static libmnl/libnftnl/libnftables; the plugins will be dynamic" >&2
fi
tools/build-cnitool.sh
# the CRI test client: npm packages and CRI's api.proto from Debian's containerd source package
test/runtime/cri/setup.sh
