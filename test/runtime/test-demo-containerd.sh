#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# weft-test: serial (containerd, podman and the node holders share /opt/cni, /var/lib/weft mount points)
# tools/demo --runtime containerd as a test: 2 nodes, 2 pods each, pods created over CRI by one
# containerd per node (the kubelet's calls), must report every pair reachable and the outside
# reached through masquerade, remove every pod with StopPodSandbox + RemovePodSandbox, and leave
# the host's root namespace as it was.
# shellcheck source=../lib/lib.sh
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/runtime-lib.sh
. "$(dirname "$0")/../lib/runtime-lib.sh"
require_root
require_cmd etcd jq python3 nsenter unshare
command -v containerd >/dev/null || skip "needs containerd (apt-get install containerd)"
command -v runc >/dev/null || skip "needs runc (apt-get install runc)"
require_static_busybox
require_plugins weftd weft host-local loopback portmap
cri_require

BEFORE=$T/host-before
host_snapshot "$BEFORE"
if out=$(WEFT_BUILD=$WEFT_BUILD "$TOP/tools/demo" --runtime containerd --nodes 2 --pods 2 --no-iperf 2>&1); then
	info "$(tail -1 <<<"$out")"
	ok=0
	if [[ $(tail -1 <<<"$out") =~ ^demo:\ ([0-9]+)\ of\ ([0-9]+)\ checks\ passed\ \(vxlan,\ 2\ nodes,\ 4\ pods\ via\ containerd ]]; then
		[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && ((BASH_REMATCH[1] >= 28)) && ok=1
	fi
	[ $ok = 1 ] || check_fail "unexpected summary: $(tail -1 <<<"$out")"
	grep -q 'creating 2 pods per node over CRI' <<<"$out" || check_fail "the demo did not create the pods over CRI"
else
	check_fail "demo --runtime containerd failed:"$'\n'"$(tail -40 <<<"$out")"
fi
AFTER=$T/host-after
host_snapshot "$AFTER"
host_unchanged "$BEFORE" "$AFTER"
finish
