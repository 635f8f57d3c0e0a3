#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# containerd's CRI plugin calling weft's plugins, driven by crictl as the kubelet would:
# runp (pod sandbox) → our bridge + host-local give it an address (crictl inspectp, our store);
# a container in the pod pings the gateway; stopp/rmp → our DEL (reservation released, no veth).
#
# crictl comes from cri-tools, which Debian 12 does not package: without a crictl in PATH (or
# CRICTL=/path) this test skips. test-containerd.sh covers containerd + go-cni without CRI.
# shellcheck source=../netns/lib.sh
. "$(dirname "$0")/../netns/lib.sh"
# shellcheck source=lib-runtime.sh
. "$(dirname "$0")/lib-runtime.sh"
require_root
require_cmd ip nft jq nsenter unshare
command -v containerd >/dev/null || skip "needs containerd (apt-get install containerd)"
command -v runc >/dev/null || skip "needs runc (apt-get install runc)"
CRICTL=${CRICTL:-$(command -v crictl || true)}
if [ -z "$CRICTL" ] || [ ! -x "$CRICTL" ]; then
	skip "needs crictl (cri-tools, not packaged in Debian 12; set CRICTL=/path/to/crictl); containerd+go-cni is covered by test-containerd"
fi
require_static_busybox
for p in bridge host-local loopback; do [ -x "$WEFT_BIN/$p" ] || skip "no $WEFT_BIN/$p (build first)"; done

STORE=$T/ipam/weftnet
BEFORE=$T/host-before
host_snapshot "$BEFORE"

NODE=$(mk_netns rt)
rt_node_start "$NODE"
containerd_start

EP=unix://$T/containerd/containerd.sock
cri() { rt "$CRICTL" --runtime-endpoint "$EP" --image-endpoint "$EP" --timeout 30s "$@"; }
# shellcheck disable=SC2016 # expanded at exit
on_exit 'for p in $(cri pods -q 2>/dev/null); do cri stopp "$p"; cri rmp "$p"; done'
reservations() { find "$STORE" -maxdepth 1 -type f ! -name 'last_reserved_ip*' ! -name lock ! -name '.*' -printf '%f\n' 2>/dev/null | sort | tr '\n' ' '; }
veths() { rt ip -j link show type veth | jq -r '.[].ifname' | sort | tr '\n' ' '; }

info "crictl $(cri --version 2>&1 | awk '{print $NF}'), runtime: $(cri version | awk '/RuntimeName|RuntimeVersion/ {printf "%s ", $2}')"
NETREADY=
for ((i = 0; i < 50; i++)); do
	NETREADY=$(cri info | jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status')
	[ "$NETREADY" = true ] && break
	sleep 0.2
done
assert_eq "$NETREADY" true "CRI reports NetworkReady with our conflist"
assert_eq "$(cri images -q | grep -c .)" 1 "image visible to CRI"

mkdir -p "$T/logs"
jq -n --arg logs "$T/logs" '{metadata: {name: "weft-pod", namespace: "default", uid: "weft-pod-uid", attempt: 0},
	hostname: "weft-pod", log_directory: $logs, linux: {}}' >"$T/pod.json"
jq -n --arg img "$RT_IMAGE" '{metadata: {name: "busy"}, image: {image: $img}, command: ["sleep", "3600"],
	log_path: "busy.log", linux: {}}' >"$T/ctr.json"

info "crictl runp: CNI ADD"
POD=$(cri runp "$T/pod.json") || fail "crictl runp failed: $(tail -20 "$T/containerd.log")"
PIP=$(cri inspectp "$POD" | jq -r '.status.network.ip')
info "pod $POD has $PIP"
[[ $PIP == 10.88.7.* ]] || check_fail "pod address '$PIP' is not from our range"
[ -f "$STORE/$PIP" ] || check_fail "no reservation $STORE/$PIP"
assert_eq "$(tr '\r\n' '  ' <"$STORE/$PIP" 2>/dev/null)" "$POD  eth0" "reservation holds the sandbox ID and eth0"
assert_eq "$(veths | wc -w)" 1 "one veth on the node"

info "a container in the pod pings the gateway"
CID=$(cri create "$POD" "$T/ctr.json" "$T/pod.json") || fail "crictl create failed"
cri start "$CID" >/dev/null || fail "crictl start failed"
assert_eq "$(cri exec -s "$CID" ip -o -4 addr show eth0 | awk '{print $4}')" "$PIP/24" "address seen in the container"
cri exec -s "$CID" ping -c1 -W2 10.88.7.1 >/dev/null || check_fail "container cannot ping the gateway"
rt ping -c1 -W2 "$PIP" >/dev/null || check_fail "node cannot ping the pod"

info "crictl stopp/rmp: CNI DEL"
cri stop "$CID" >/dev/null || true
cri stopp "$POD" >/dev/null || check_fail "crictl stopp failed"
assert_eq "$(reservations)" "" "reservation released by stopp"
assert_eq "$(veths)" "" "veth removed by stopp"
cri rmp "$POD" >/dev/null || check_fail "crictl rmp failed"
assert_eq "$(cri pods -q | wc -l)" 0 "no pods left"

info "the host's root namespace is unchanged"
rt_node_stop
AFTER=$T/host-after
host_snapshot "$AFTER"
host_unchanged "$BEFORE" "$AFTER"
finish
