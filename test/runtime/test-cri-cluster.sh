#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The kubelet's path across nodes: etcd + weftd on two node namespaces (weft-cluster-lib.sh), one
# containerd per node inside the node (own root, state and socket under $T/nI, its own mount
# namespace), its CRI plugin reading the conflist weftd wrote ($T/nI/cni) and the plugins
# `weft install-cni` put into the node's bin dir ($T/nI/bin). Pods are created over CRI's gRPC
# API (test/runtime/cri/cri.js), as the kubelet does:
#
#   underlay br0 ── node1 10.99.0.11: weftd, containerd, cni0 ── a1 (hostPort 18080 → 80), a2
#               ── node2 10.99.0.12: weftd, containerd, cni0 ── b1
#               ── etcd 10.99.0.2, outside 10.99.0.200
#
# Checks: containerd reports NetworkReady once weftd wrote the conflist; each pod's address is in
# its node's lease; pods reach each other across nodes (ping and HTTP, both ways); the hostPort
# answers from the other node's pod and from outside the cluster; StopPodSandbox releases the
# address, the veth and the port mapping's nft elements; the repeated DELs (StopPodSandbox again,
# RemovePodSandbox) after a new pod took the node do not touch that pod; at the end no veth,
# reservation or nft element is left on either node, weftd stays ready, and the host's root
# namespace is unchanged.
# shellcheck source=../lib/lib.sh
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/weft-cluster-lib.sh
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
# shellcheck source=../lib/runtime-lib.sh
. "$(dirname "$0")/../lib/runtime-lib.sh"
cluster_require
require_cmd nsenter unshare
command -v containerd >/dev/null || skip "needs containerd (apt-get install containerd)"
command -v runc >/dev/null || skip "needs runc (apt-get install runc)"
require_static_busybox
require_plugins weft portmap loopback host-local
WEFT_TOOL=$WEFT_BUILD/tool/weft
require_built "$WEFT_TOOL"
cri_require

BEFORE=$T/host-before
host_snapshot "$BEFORE"

cluster_init 2 vxlan
declare -a SOCK=() LOG=()
for i in 1 2; do
	d=$(node_dir "$i")
	# the DaemonSet's init step, into this node's CNI bin dir
	"$WEFT_TOOL" install-cni --src "$WEFT_BIN" --dest "$d/bin" --plugins weft,portmap,loopback,host-local >/dev/null ||
		fail "weft install-cni into $d/bin failed"
	weftd_start "$i" --ipam-data-dir "$d/ipam"
done
weftd_wait_ready 1 2
for i in 1 2; do
	jq -e '.plugins | map(.type) | index("portmap")' "$(node_dir "$i")/cni/10-weft.conflist" >/dev/null ||
		check_fail "node $i: weftd's conflist has no portmap (bin dir: $(ls "$(node_dir "$i")/bin"))"
done

# per node: a holder (node netns + private mount ns) and containerd in it
for i in 1 2; do
	d=$(node_dir "$i")
	rt_node_start "$(node_ns "$i")"
	containerd_start "$d" "$d/cni" "$d/bin"
	SOCK[i]=$CTRD_SOCK
	LOG[i]=$CTRD_LOG
done

# on I METHOD JSON: CRI call to node I's containerd (failing the test on error)
on() {
	local i=$1
	shift
	CTRD_SOCK=${SOCK[$i]} CTRD_LOG=${LOG[$i]} cri_ok "$@"
}
# at exit, whatever pods are left (a function with locals: lib.sh's cleanup loop counts with $i)
remove_all_pods() {
	local n p
	for n in 1 2; do
		for p in $(cri -s "${SOCK[$n]}" ListPodSandbox | jq -r ".items[]?.id"); do
			cri -s "${SOCK[$n]}" StopPodSandbox "{\"pod_sandbox_id\": \"$p\"}"
			cri -s "${SOCK[$n]}" RemovePodSandbox "{\"pod_sandbox_id\": \"$p\"}"
		done
	done
}
on_exit remove_all_pods

pod_veths() { ip -n "$(node_ns "$1")" -j link show type veth | jq -r '[.[].ifname | select(. != "eth0")] | sort | join(" ")'; }
# nft_elements I: every element of every set and map in node I's ruleset (what pods and ports add)
nft_elements() {
	ip netns exec "$(node_ns "$1")" nft -j list ruleset |
		jq -S -c '[.nftables[] | (.set // .map // empty) | select(.elem) | {family, table, name, elem}]'
}
in_subnet() { python3 -c 'import ipaddress,sys; sys.exit(ipaddress.ip_address(sys.argv[1]) not in ipaddress.ip_network(sys.argv[2]))' "$1" "$2"; }

info "NetworkReady on both nodes"
for i in 1 2; do
	ok=
	for ((t = 0; t < 50; t++)); do
		ok=$(on "$i" Status '{}' | jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status')
		[ "$ok" = true ] && break
		sleep 0.2
	done
	assert_eq "$ok" true "node $i: NetworkReady with weftd's conflist"
done
EL0_1=$(nft_elements 1)
EL0_2=$(nft_elements 2)

mkdir -p "$T/logs"
declare -A PODID=() CID=() PIP=()
# run_pod I NAME [HOSTPORT]: RunPodSandbox + an httpd container that serves the pod's name
run_pod() {
	local i=$1 name=$2 hp=${3:-} pm='[]' cfg c st
	[ -n "$hp" ] && pm=$(jq -cn --argjson hp "$hp" '[{protocol: "TCP", container_port: 80, host_port: $hp}]')
	cfg=$(jq -cn --arg n "$name" --arg logs "$T/logs" --argjson pm "$pm" '{metadata: {name: $n, namespace: "default",
		uid: ("uid-" + $n), attempt: 0}, hostname: $n, log_directory: $logs, port_mappings: $pm, linux: {}}')
	PODID[$name]=$(on "$i" RunPodSandbox "$(jq -cn --argjson c "$cfg" '{config: $c}')" | jq -r .pod_sandbox_id)
	st=$(on "$i" PodSandboxStatus "{\"pod_sandbox_id\": \"${PODID[$name]}\"}")
	PIP[$name]=$(jq -r .status.network.ip <<<"$st")
	c=$(jq -cn --arg img "$RT_IMAGE" '{metadata: {name: "web", attempt: 0}, image: {image: $img}, log_path: "web.log",
		command: ["sh", "-c", "hostname >/var/www/index.html && exec httpd -f -p 80 -h /var/www"], linux: {}}')
	CID[$name]=$(on "$i" CreateContainer "$(jq -cn --arg p "${PODID[$name]}" --argjson c "$c" --argjson s "$cfg" \
		'{pod_sandbox_id: $p, config: $c, sandbox_config: $s}')" | jq -r .container_id)
	on "$i" StartContainer "{\"container_id\": \"${CID[$name]}\"}" >/dev/null
	info "node $i: pod $name ${PODID[$name]:0:12} has ${PIP[$name]}"
}
# exec_in I NAME CMD...: ExecSync in pod NAME's container on node I; stdout, status = exit code
exec_in() {
	local i=$1 name=$2 out cmd
	shift 2
	cmd=$(printf '%s\n' "$@" | jq -R . | jq -cs .)
	out=$(on "$i" ExecSync "$(jq -cn --arg c "${CID[$name]}" --argjson cmd "$cmd" '{container_id: $c, cmd: $cmd, timeout: 10}')")
	jq -r .stdout <<<"$out"
	jq -j '.stderr // ""' <<<"$out" >&2
	return "$(jq -r '.exit_code // 1' <<<"$out")"
}
# http_from I NAME URL: what pod NAME fetches from URL (busybox wget), retried for up to 4 s
http_from() {
	local out t
	for ((t = 0; t < 8; t++)); do
		# (busybox-static 1.35's wget crashes with -T: the timeout comes from busybox's timeout)
		out=$(exec_in "$1" "$2" timeout 3 wget -q -O - "$3" 2>"$T/wget.err") && { echo "$out"; return 0; }
		sleep 0.5
	done
	echo "none: $(tr '\n' ' ' <"$T/wget.err")"
}
reservations() { reservations_in "$(node_dir "$1")/ipam"; }

info "pods over CRI: a1 (hostPort 18080) on node 1, b1 on node 2"
run_pod 1 a1 18080
run_pod 2 b1
S1=$(node_subnet 1)
S2=$(node_subnet 2)
in_subnet "${PIP[a1]}" "$S1" || check_fail "a1's ${PIP[a1]} is not in node 1's lease $S1"
in_subnet "${PIP[b1]}" "$S2" || check_fail "b1's ${PIP[b1]} is not in node 2's lease $S2"
assert_eq "$(reservations 1)" 1 "node 1: one reservation"
assert_eq "$(reservations 2)" 1 "node 2: one reservation"
assert_eq "$(exec_in 1 a1 ip -o -4 addr show eth0 | awk '{print $4}')" "${PIP[a1]}/${S1#*/}" "a1 sees its address"

info "across nodes: a1 ⇄ b1 (ping, HTTP)"
exec_in 1 a1 ping -c1 -W2 "${PIP[b1]}" >/dev/null || check_fail "a1 cannot ping b1 across nodes"
exec_in 2 b1 ping -c1 -W2 "${PIP[a1]}" >/dev/null || check_fail "b1 cannot ping a1 across nodes"
assert_eq "$(http_from 1 a1 "http://${PIP[b1]}/")" b1 "a1 → b1 HTTP"
assert_eq "$(http_from 2 b1 "http://${PIP[a1]}/")" a1 "b1 → a1 HTTP"

info "hostPort 18080 on node 1: from b1 (other node) and from outside the cluster"
assert_eq "$(http_from 2 b1 "http://$(node_ip 1):18080/")" a1 "b1 → node1:18080"
assert_eq "$(ip netns exec "$OUT_NS" curl -s -m 2 "http://$(node_ip 1):18080/" || echo none)" a1 "outside → node1:18080"
[ "$(nft_elements 1)" != "$EL0_1" ] || check_fail "node 1: no nft element was added for the pod and its hostPort"

info "StopPodSandbox a1: released"
on 1 StopContainer "{\"container_id\": \"${CID[a1]}\", \"timeout\": 2}" >/dev/null
on 1 StopPodSandbox "{\"pod_sandbox_id\": \"${PODID[a1]}\"}" >/dev/null
assert_eq "$(reservations 1)" 0 "node 1: reservation released"
assert_eq "$(pod_veths 1)" "" "node 1: veth gone"
assert_eq "$(nft_elements 1)" "$EL0_1" "node 1: nft elements back to before the pod"
[ "$(ip netns exec "$OUT_NS" curl -s -m 1 "http://$(node_ip 1):18080/" || true)" = "" ] || check_fail "hostPort still answers"

info "a2 takes node 1; a1's repeated DELs (StopPodSandbox again, RemovePodSandbox) leave it alone"
run_pod 1 a2 18080
in_subnet "${PIP[a2]}" "$S1" || check_fail "a2's ${PIP[a2]} is not in node 1's lease $S1"
V_A2=$(pod_veths 1)
EL_A2=$(nft_elements 1)
on 1 StopPodSandbox "{\"pod_sandbox_id\": \"${PODID[a1]}\"}" >/dev/null
on 1 RemoveContainer "{\"container_id\": \"${CID[a1]}\"}" >/dev/null
on 1 RemovePodSandbox "{\"pod_sandbox_id\": \"${PODID[a1]}\"}" >/dev/null
# containerd logs each CNI DEL it made; all three must have reached the plugins
assert_eq "$(grep -c "TearDown network for sandbox \\\\\"${PODID[a1]}\\\\\" successfully" "${LOG[1]}")" 3 "a1: CNI DEL on Stop, Stop again, Remove"
assert_eq "$(reservations 1)" 1 "node 1: a2's reservation kept"
assert_eq "$(pod_veths 1)" "$V_A2" "node 1: a2's veth kept"
assert_eq "$(nft_elements 1)" "$EL_A2" "node 1: nft elements unchanged by a1's repeated DELs"
assert_eq "$(http_from 2 b1 "http://${PIP[a2]}/")" a2 "b1 → a2 HTTP after a1's repeated DELs"
assert_eq "$(http_from 2 b1 "http://$(node_ip 1):18080/")" a2 "b1 → node1:18080 is a2 now"

info "all pods stopped and removed: nothing left"
for p in a2:1 b1:2; do
	n=${p%:*} i=${p#*:}
	on "$i" StopContainer "{\"container_id\": \"${CID[$n]}\", \"timeout\": 2}" >/dev/null
	on "$i" StopPodSandbox "{\"pod_sandbox_id\": \"${PODID[$n]}\"}" >/dev/null
	on "$i" RemovePodSandbox "{\"pod_sandbox_id\": \"${PODID[$n]}\"}" >/dev/null
done
for i in 1 2; do
	assert_eq "$(on "$i" ListPodSandbox '{}' | jq '.items | length')" 0 "node $i: no pod sandboxes"
	assert_eq "$(reservations "$i")" 0 "node $i: no reservations"
	assert_eq "$(pod_veths "$i")" "" "node $i: no pod veths"
	http_get "$i" /healthz
	assert_eq "$HTTP_CODE" 200 "node $i: weftd still ready"
	if grep 'level=error' "${LOG[$i]}" | grep -iE 'cni|network'; then check_fail "node $i: containerd logged CNI errors (above)"; fi
done
assert_eq "$(nft_elements 1)" "$EL0_1" "node 1: nft elements as before any pod"
assert_eq "$(nft_elements 2)" "$EL0_2" "node 2: nft elements as before any pod"

info "the host's root namespace is unchanged"
rt_node_stop_all
cluster_teardown
AFTER=$T/host-after
host_snapshot "$AFTER"
host_unchanged "$BEFORE" "$AFTER"
finish
