#!/usr/bin/env bash
# weftd's memory as it is (issue #18: no MADV_DONTNEED on library pages any more): RSS, PSS and
# private dirty from /proc/PID/smaps_rollup of one weftd, ready on a one-node vxlan cluster in
# throwaway namespaces (test/lib/weft-cluster-lib.sh: etcd + the node), read after its first
# full resync (the old trick ran after each full pass, so the figures are comparable).
#
#   bench/weftd-memory.sh [BUILD_DIR]      default: build (WEFT_BUILD); prints one Markdown row
#
# Needs root, etcd, the build's weftd.
set -euo pipefail
[ $# -ge 1 ] && WEFT_BUILD=$(cd "$1" && pwd) && export WEFT_BUILD
# shellcheck source=../test/lib/lib.sh
. "$(dirname "$0")/../test/lib/lib.sh"
# shellcheck source=../test/lib/weft-cluster-lib.sh
. "$(dirname "$0")/../test/lib/weft-cluster-lib.sh"
cluster_require
cluster_init 1 vxlan
weftd_start 1
weftd_wait_ready 1
sleep 12 # past the first periodic full resync (10 s)
pid=${WEFTD_PID[1]}
kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$pid/smaps_rollup"; }
printf '| %s | %s | %s kB | %s kB | %s kB | %s kB | %s kB |\n' "$WEFT_BUILD/bin/weftd" \
	"$(readelf -dW "$WEFT_BUILD/bin/weftd" | grep -c NEEDED) DT_NEEDED" "$(kb Rss)" "$(kb Pss)" \
	"$(kb Private_Dirty)" "$(kb Shared_Clean)" "$(kb Private_Clean)"
