#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# containerd's CRI plugin calling weft's plugins, driven over CRI's gRPC API as the kubelet does
# (test/runtime/cri/cri.js in place of crictl, which Debian 12 does not package):
#
#   node (netns w-rt-PID + private mount ns: containerd, shims, runc, our plugins)
#     weft0 10.88.7.1/24 ── pod (sandbox + httpd container), hostPort 18080 → 80
#     up0 192.0.2.1/24 ══ outside (w-out-PID) 192.0.2.2/24
#
# Version and Status (RuntimeReady, NetworkReady with our conflist); RunPodSandbox with a port
# mapping → our bridge + host-local + portmap (ADD with the portMappings capability);
# PodSandboxStatus reports the address our store holds; a container (CreateContainer,
# StartContainer) serves HTTP, ExecSync sees the address and pings the gateway; the hostPort
# answers from outside; StopPodSandbox → our DEL (reservation, veth and port mapping gone);
# StopPodSandbox again and RemovePodSandbox (containerd's repeated DELs) succeed and change
# nothing; the host's root namespace is unchanged.
# shellcheck source=../lib/lib.sh
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/runtime-lib.sh
. "$(dirname "$0")/../lib/runtime-lib.sh"
require_root
require_cmd ip nft jq nsenter unshare curl
command -v containerd >/dev/null || skip "needs containerd (apt-get install containerd)"
command -v runc >/dev/null || skip "needs runc (apt-get install runc)"
require_static_busybox
require_plugins bridge host-local loopback portmap
cri_require

STORE=$T/ipam/weftnet
BEFORE=$T/host-before
host_snapshot "$BEFORE"

NODE=$(mk_netns rt)
OUT=$(mk_outside "$NODE") || fail "outside namespace"
rt_node_start "$NODE"
CONTAINERD_PORTMAP=1 containerd_start "$T"
# shellcheck disable=SC2016 # expanded at exit
on_exit 'for p in $(cri ListPodSandbox | jq -r ".items[]?.id"); do cri StopPodSandbox "{\"pod_sandbox_id\": \"$p\"}"; cri RemovePodSandbox "{\"pod_sandbox_id\": \"$p\"}"; done'

reservations() { find "$STORE" -maxdepth 1 -type f ! -name 'last_reserved_ip*' ! -name lock ! -name '.*' -printf '%f\n' 2>/dev/null | sort | tr '\n' ' '; }
veths() { rt ip -j link show type veth | jq -r '.[].ifname | select(. != "up0")' | sort | tr '\n' ' '; }
hostport_rules() { rt nft list ruleset 2>/dev/null | grep -c 18080 || true; }
network_ready() {
	cri_ok Status '{}' | jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status'
}

info "Version"
V=$(cri_ok Version '{"version": "v1"}')
info "$(jq -r '"\(.runtime_name) \(.runtime_version), CRI \(.runtime_api_version)"' <<<"$V")"
assert_eq "$(jq -r .runtime_name <<<"$V")" containerd "runtime name"
assert_eq "$(jq -r .runtime_api_version <<<"$V")" v1 "CRI API version"

info "Status: RuntimeReady and NetworkReady"
for ((i = 0; i < 50; i++)); do [ "$(network_ready)" = true ] && break; sleep 0.2; done
ST=$(cri_ok Status '{}')
assert_eq "$(jq -r '.status.conditions[] | select(.type == "RuntimeReady") | .status' <<<"$ST")" true "RuntimeReady"
assert_eq "$(jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status' <<<"$ST")" true "NetworkReady with our conflist"
assert_eq "$(cri_ok ListImages '{}' | jq -r --arg i "$RT_IMAGE" '[.images[].repo_tags[] | select(. == $i)] | length')" 1 "image visible to CRI"

mkdir -p "$T/logs"
POD_CONFIG=$(jq -cn --arg logs "$T/logs" '{metadata: {name: "weft-pod", namespace: "default", uid: "weft-pod-uid", attempt: 0},
	hostname: "weft-pod", log_directory: $logs, labels: {app: "weft"},
	port_mappings: [{protocol: "TCP", container_port: 80, host_port: 18080}], linux: {}}')

info "RunPodSandbox with hostPort 18080 → 80: CNI ADD"
POD=$(cri_ok RunPodSandbox "$(jq -cn --argjson c "$POD_CONFIG" '{config: $c}')" | jq -r .pod_sandbox_id)
PS=$(cri_ok PodSandboxStatus "{\"pod_sandbox_id\": \"$POD\"}")
PIP=$(jq -r .status.network.ip <<<"$PS")
info "pod ${POD:0:12} has $PIP"
assert_eq "$(jq -r .status.state <<<"$PS")" SANDBOX_READY "sandbox state"
[[ $PIP == 10.88.7.* ]] || check_fail "pod address '$PIP' is not from our range"
[ -f "$STORE/$PIP" ] || check_fail "no reservation $STORE/$PIP"
assert_eq "$(tr '\r\n' '  ' <"$STORE/$PIP" 2>/dev/null)" "$POD  eth0" "reservation holds the sandbox ID and eth0"
assert_eq "$(veths | wc -w)" 1 "one veth on the node"
[ "$(hostport_rules)" -gt 0 ] || check_fail "no nft element for hostPort 18080 on the node"

info "a container in the pod: httpd on :80, ExecSync sees the address and pings the gateway"
CTR_CONFIG=$(jq -cn --arg img "$RT_IMAGE" '{metadata: {name: "web", attempt: 0}, image: {image: $img},
	command: ["httpd", "-f", "-p", "80", "-h", "/var/www"], log_path: "web.log", linux: {}}')
CID=$(cri_ok CreateContainer "$(jq -cn --arg p "$POD" --argjson c "$CTR_CONFIG" --argjson s "$POD_CONFIG" \
	'{pod_sandbox_id: $p, config: $c, sandbox_config: $s}')" | jq -r .container_id)
cri_ok StartContainer "{\"container_id\": \"$CID\"}" >/dev/null
assert_eq "$(cri_ok ContainerStatus "{\"container_id\": \"$CID\"}" | jq -r .status.state)" CONTAINER_RUNNING "container state"
EX=$(cri_ok ExecSync "{\"container_id\": \"$CID\", \"cmd\": [\"ip\", \"-o\", \"-4\", \"addr\", \"show\", \"eth0\"], \"timeout\": 10}")
assert_eq "$(jq -r .stdout <<<"$EX" | awk '{print $4}')" "$PIP/24" "address seen in the container"
EX=$(cri_ok ExecSync "{\"container_id\": \"$CID\", \"cmd\": [\"ping\", \"-c1\", \"-W2\", \"10.88.7.1\"], \"timeout\": 10}")
assert_eq "$(jq -r .exit_code <<<"$EX")" 0 "container pings the gateway"
rt ping -c1 -W2 "$PIP" >/dev/null || check_fail "node cannot ping the pod"

info "hostPort: outside → 192.0.2.1:18080 reaches the pod's httpd"
BODY=
for ((i = 0; i < 20; i++)); do
	BODY=$(ip netns exec "$OUT" curl -s -m 2 http://192.0.2.1:18080/ || true)
	[ -n "$BODY" ] && break
	sleep 0.2
done
assert_eq "$BODY" weft-runtime-test "hostPort answer"
assert_eq "$(ip netns exec "$OUT" curl -s -m 2 "http://$PIP/" || echo unreachable)" weft-runtime-test "pod address from outside (routed via the node)"

info "StopPodSandbox: CNI DEL"
cri_ok StopContainer "{\"container_id\": \"$CID\", \"timeout\": 2}" >/dev/null
cri_ok StopPodSandbox "{\"pod_sandbox_id\": \"$POD\"}" >/dev/null
assert_eq "$(reservations)" "" "reservation released by StopPodSandbox"
assert_eq "$(veths)" "" "veth removed by StopPodSandbox"
assert_eq "$(hostport_rules)" 0 "hostPort gone from the node's ruleset"
assert_eq "$(cri_ok PodSandboxStatus "{\"pod_sandbox_id\": \"$POD\"}" | jq -r .status.state)" SANDBOX_NOTREADY "sandbox state after stop"
[ "$(ip netns exec "$OUT" curl -s -m 1 http://192.0.2.1:18080/ || true)" = "" ] || check_fail "hostPort still answers after StopPodSandbox"

info "StopPodSandbox again, RemovePodSandbox: repeated DELs succeed and change nothing"
RULES_BEFORE=$(rt nft list ruleset | sha256sum)
cri_ok StopPodSandbox "{\"pod_sandbox_id\": \"$POD\"}" >/dev/null
cri_ok RemoveContainer "{\"container_id\": \"$CID\"}" >/dev/null
cri_ok RemovePodSandbox "{\"pod_sandbox_id\": \"$POD\"}" >/dev/null
assert_eq "$(rt nft list ruleset | sha256sum)" "$RULES_BEFORE" "node ruleset unchanged by the repeated DELs"
assert_eq "$(cri_ok ListPodSandbox '{}' | jq '.items | length')" 0 "no pods left"
if cri PodSandboxStatus "{\"pod_sandbox_id\": \"$POD\"}" >/dev/null 2>"$T/gone.err"; then
	check_fail "PodSandboxStatus of a removed pod succeeded"
else
	grep -q NOT_FOUND "$T/gone.err" || check_fail "PodSandboxStatus of a removed pod: expected NOT_FOUND, got $(cat "$T/gone.err")"
fi
grep -E 'level=error' "$CTRD_LOG" | grep -iE 'cni|network' && check_fail "containerd logged CNI errors (above)"

info "the host's root namespace is unchanged"
rt_node_stop
AFTER=$T/host-after
host_snapshot "$AFTER"
host_unchanged "$BEFORE" "$AFTER"
finish
