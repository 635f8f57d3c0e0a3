#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# weft-test: serial (containerd, podman and the node holders share /opt/cni, /var/lib/weft mount points)
# The DaemonSet image, built and run here: `make image` (deploy/Containerfile, FROM scratch, with
# podman, no registry) in node 1, then node 1 runs the image the way the kubelet runs
# deploy/kubernetes/weft-etcd.yaml's DaemonSet: the pod and its containers are translated from the
# manifest (test/runtime/daemonset-cri.py: hostNetwork, command/args, env, hostPath and ConfigMap
# mounts, capabilities, limits) and sent to node 1's containerd over CRI. The init container
# installs the plugins into the node's /opt/cni/bin; weftd from the image, with the node's network
# (node 1's namespace), joins the cluster; pods created over CRI on node 1 get connectivity.
#
#   underlay br0 ── node1 10.99.0.11: containerd ─ pod weft-node1 (image: install-cni, weftd)
#               │                                 ─ pod web (CNI: the plugins install-cni put in /opt/cni/bin)
#               ── node2 10.99.0.12: weftd from the build, pod netns p2 (weft cni add)
#               ── etcd 10.99.0.2, outside 10.99.0.200
#
# Node 1 is a network namespace plus a private mount namespace (runtime-lib.sh's holder): its /run,
# /etc/cni, /opt/cni, /var/lib/cni and /var/lib/weft are tmpfs there, so the manifest's hostPaths
# are used as written.
# shellcheck source=../lib/lib.sh
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/weft-cluster-lib.sh
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
# shellcheck source=../lib/runtime-lib.sh
. "$(dirname "$0")/../lib/runtime-lib.sh"
cluster_require
require_cmd nsenter unshare podman make strip
command -v containerd >/dev/null || skip "needs containerd (apt-get install containerd)"
command -v runc >/dev/null || skip "needs runc (apt-get install runc)"
python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml"
require_static_busybox
WEFT_TOOL=$WEFT_BUILD/tool/weft
[ -x "$WEFT_TOOL" ] || skip "no $WEFT_TOOL (build first)"
cri_require
MANIFEST=$TOP/deploy/kubernetes/weft-etcd.yaml
IMG_DIR=$WEFT_BUILD/image

BEFORE=$T/host-before
host_snapshot "$BEFORE"

cluster_init 2 vxlan
N1=$(node_ns 1)
rt_node_start "$N1"

info "make image (podman, private vfs storage, inside node 1's mount namespace)"
PM=(podman --root "$T/podman/root" --runroot "$T/podman/run" --storage-driver vfs --tmpdir "$T/podman/tmp")
pm() { rt env CONTAINERS_CONF=/dev/null CONTAINERS_REGISTRIES_CONF=/dev/null "${PM[@]}" "$@"; }
START=$SECONDS
# The image must ship a static plugin suite (deploy/image-rootfs.sh refuses a dynamic one); only
# where this machine could not build the static libraries is a dynamic suite let through, and said.
LINKAGE=$(cat "$WEFT_BUILD/linkage" 2>/dev/null || echo unknown)
ALLOW_DYN=0
if [ "$LINKAGE" != static ] && [ -f "$TOP/build/static-deps/UNAVAILABLE" ]; then
	info "the plugin suite is DYNAMIC here ($(head -1 "$TOP/build/static-deps/UNAVAILABLE")): image built with WEFT_ALLOW_DYNAMIC_PLUGINS=1"
	ALLOW_DYN=1
fi
if ! rt env CONTAINERS_CONF=/dev/null CONTAINERS_REGISTRIES_CONF=/dev/null WEFT_ALLOW_DYNAMIC_PLUGINS=$ALLOW_DYN \
	make -s -C "$TOP" BUILD="$WEFT_BUILD" PODMAN="${PM[*]}" IMAGE=localhost/weft:test image >"$T/make-image.log" 2>&1; then
	tail -20 "$T/make-image.log" >&2
	fail "make image failed"
fi
BUILD_S=$((SECONDS - START))
SIZE=$(pm image inspect localhost/weft:test --format '{{.Size}}')
ARCHIVE=$(stat -c %s "$IMG_DIR/weft-image.tar")
info "image built in ${BUILD_S}s: $((SIZE / 1000000)) MB ($SIZE bytes), OCI archive $((ARCHIVE / 1000000)) MB; $(find "$IMG_DIR/rootfs" -type f | wc -l) files"
((SIZE < 30 * 1000 * 1000)) || check_fail "image is $SIZE bytes, goal < 30 MB"
# what is in it: the binaries, their libraries, nothing else executable (no shell)
[[ "$(pm image inspect localhost/weft:test --format '{{json .Config.Cmd}}')" == *weftd* ]] ||
	check_fail "image config has no weftd command"
[ ! -e "$IMG_DIR/rootfs/bin/sh" ] || check_fail "the image has a shell; it should hold only weft and its libraries"
for b in usr/bin/weftd usr/bin/weft opt/weft/bin/weft opt/weft/bin/portmap opt/weft/bin/host-local opt/weft/bin/loopback; do
	[ -x "$IMG_DIR/rootfs/$b" ] || check_fail "image lacks /$b"
done
[ ! -e "$IMG_DIR/rootfs/opt/weft/bin/weftd" ] || check_fail "weftd is among the plugins (install-cni would copy it to the host)"
if [ ! -f "$IMG_DIR/rootfs/opt/weft/bin/weft-plugins" ] || [ -L "$IMG_DIR/rootfs/opt/weft/bin/weft-plugins" ]; then
	check_fail "the image has no multi-call /opt/weft/bin/weft-plugins"
fi
for b in weft portmap host-local loopback bridge; do
	assert_eq "$(readlink "$IMG_DIR/rootfs/opt/weft/bin/$b")" weft-plugins "image: /opt/weft/bin/$b is a name of weft-plugins"
done
if [ "$LINKAGE" = static ]; then
	! readelf -lW "$IMG_DIR/rootfs/opt/weft/bin/weft-plugins" | grep_q INTERP || check_fail "the image's plugins are not static"
fi

info "node 1: containerd with the node's CNI dirs, the image imported"
rt mkdir -p /etc/cni/net.d /opt/cni/bin
containerd_start "$(node_dir 1)" /etc/cni/net.d /opt/cni/bin
DS=$T/ds.json
python3 "$TOP/test/runtime/daemonset-cri.py" "$MANIFEST" --node-name node1 --pod-ip "$(node_ip 1)" \
	--configmap-dir "$T/cm" --log-dir "$T/logs/weft" --set "etcd-endpoints=$ETCD_URL" >"$DS" ||
	fail "cannot translate $MANIFEST into CRI requests"
IMAGE_REF=$(jq -r .image "$DS")
rt "${CTR[@]}" -n k8s.io images import --snapshotter native --base-name localhost/weft "$IMG_DIR/weft-image.tar" >"$T/import.log" 2>&1 ||
	fail "ctr images import of the image failed: $(cat "$T/import.log")"
IMPORTED=$(rt "${CTR[@]}" -n k8s.io images ls -q | grep '^localhost/weft' | head -1)
[ -n "$IMPORTED" ] || fail "imported image not listed: $(rt "${CTR[@]}" -n k8s.io images ls -q)"
# the manifest's image name, as if pulled (imagePullPolicy IfNotPresent: present, no pull)
rt "${CTR[@]}" -n k8s.io images tag "$IMPORTED" "$IMAGE_REF" >/dev/null
for d in $(jq -r '.host_dirs[]' "$DS"); do rt mkdir -p "$d"; done
mkdir -p "$T/logs/weft"
assert_eq "$(cri_ok Status '{}' | jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status')" false \
	"node 1 not NetworkReady before weft runs"

info "the DaemonSet's pod over CRI: sandbox with the node's network"
SANDBOX=$(jq -c .sandbox "$DS")
WPOD=$(cri_ok RunPodSandbox "{\"config\": $SANDBOX}" | jq -r .pod_sandbox_id)
# ctr_run CONFIG: CreateContainer + StartContainer in the DaemonSet pod; prints the container ID
ctr_run() {
	local id
	id=$(cri_ok CreateContainer "$(jq -cn --arg p "$WPOD" --argjson c "$1" --argjson s "$SANDBOX" \
		'{pod_sandbox_id: $p, config: $c, sandbox_config: $s}')" | jq -r .container_id)
	cri_ok StartContainer "{\"container_id\": \"$id\"}" >/dev/null
	echo "$id"
}
ctr_state() { cri_ok ContainerStatus "{\"container_id\": \"$1\"}" | jq -r "$2"; }

info "init container: weft install-cni into the node's /opt/cni/bin"
for ((k = 0; k < $(jq '.init | length' "$DS"); k++)); do
	ID=$(ctr_run "$(jq -c ".init[$k]" "$DS")")
	for ((t = 0; t < 100; t++)); do [ "$(ctr_state "$ID" .status.state)" = CONTAINER_EXITED ] && break; sleep 0.1; done
	assert_eq "$(ctr_state "$ID" .status.state)" CONTAINER_EXITED "init container $k finished"
	assert_eq "$(ctr_state "$ID" .status.exit_code)" 0 "init container $k exit code"
done
INSTALLED=$(rt ls /opt/cni/bin | sort | tr '\n' ' ')
EXPECTED=$(find "$IMG_DIR/rootfs/opt/weft/bin" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')
assert_eq "$INSTALLED" "$EXPECTED" "plugins installed on the node"
for p in weft portmap loopback; do
	rt cmp -s "/opt/cni/bin/$p" "$IMG_DIR/rootfs/opt/weft/bin/$p" || check_fail "/opt/cni/bin/$p differs from the image's"
done
# one file on the node too: every name a hard link to the installed weft-plugins
NODE_INO=$(rt stat -c %i /opt/cni/bin/weft-plugins)
for p in weft portmap loopback host-local bridge; do
	assert_eq "$(rt stat -c %i "/opt/cni/bin/$p")" "$NODE_INO" "/opt/cni/bin/$p is a link to the installed weft-plugins"
done
if [ "$LINKAGE" = static ]; then
	! rt readelf -lW /opt/cni/bin/weft-plugins | grep_q INTERP || check_fail "the plugins installed on the node need a loader"
fi
info "init container again (a restarted pod, attempt 1): identical files are left alone"
# shellcheck disable=SC2016 # the node's shell expands the glob
stamps() { rt sh -c 'stat -c "%n %i %Y" /opt/cni/bin/*' | sort; }
STAMP=$(stamps)
ID=$(ctr_run "$(jq -c '.init[0] | .metadata.attempt = 1' "$DS")")
for ((t = 0; t < 100; t++)); do [ "$(ctr_state "$ID" .status.state)" = CONTAINER_EXITED ] && break; sleep 0.1; done
assert_eq "$(ctr_state "$ID" .status.exit_code)" 0 "second install-cni exit code"
assert_eq "$(stamps)" "$STAMP" "second install-cni changed no file (inode, mtime)"

info "weftd from the image on node 1; weftd from the build on node 2"
WEFTD_CID=$(ctr_run "$(jq -c '.containers[0]' "$DS")")
d2=$(node_dir 2)
"$WEFT_TOOL" install-cni --src "$WEFT_BIN" --dest "$d2/bin" --plugins weft,portmap,loopback,host-local >/dev/null
weftd_start 2 --ipam-data-dir "$d2/ipam"
ready1() { http_get 1 /healthz; [ "$HTTP_CODE" = 200 ]; }
if ! wait_for 30 ready1; then
	cri ContainerStatus "{\"container_id\": \"$WEFTD_CID\"}" | jq -c .status >&2 || true
	tail -20 "$T"/logs/weft/weftd/0.log >&2 || true
	fail "weftd from the image never became ready on node 1"
fi
weftd_wait_ready 2
# it is the image's weftd: its executable lives in the container's root filesystem
WPID=$(cri_ok ContainerStatus "{\"container_id\": \"$WEFTD_CID\", \"verbose\": true}" | jq -r '.info.info | fromjson | .pid')
cmp -s "/proc/$WPID/exe" "$IMG_DIR/rootfs/usr/bin/weftd" || check_fail "node 1's weftd (pid $WPID) is not the image's binary"
[ ! -e "/proc/$WPID/root/bin/sh" ] || check_fail "node 1's weftd does not run in the image's root filesystem"
assert_eq "$(readlink "/proc/$WPID/ns/net")" "$(rt readlink /proc/self/ns/net)" "weftd runs in the node's network namespace"
rt test -f /run/weft/subnet.env || check_fail "no /run/weft/subnet.env on node 1 (hostPath)"
rt test -f /etc/cni/net.d/10-weft.conflist || check_fail "no /etc/cni/net.d/10-weft.conflist on node 1 (hostPath)"
S1=$(rt sed -n 's/^WEFT_SUBNET=//p' /run/weft/subnet.env)
info "node 1 leased $S1 (weftd from the image)"
NET1=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)' "$S1")
route_on_2() { [ -n "$(route_to 2 "$NET1")" ]; }
wait_for 10 route_on_2 || check_fail "node 2 has no route to node 1's subnet $NET1"
http_get 1 /metrics
grep -q '^weft_ready 1' <<<"$HTTP_BODY" || check_fail "image weftd's /metrics: weft_ready is not 1"
if command -v promtool >/dev/null; then
	promtool check metrics <<<"$HTTP_BODY" >"$T/promtool.out" 2>&1 || check_fail "promtool: $(cat "$T/promtool.out")"
fi

info "a pod over CRI on node 1 (the plugins from the image), a pod on node 2"
for ((t = 0; t < 50; t++)); do
	[ "$(cri_ok Status '{}' | jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status')" = true ] && break
	sleep 0.2
done
assert_eq "$(cri_ok Status '{}' | jq -r '.status.conditions[] | select(.type == "NetworkReady") | .status')" true "node 1 NetworkReady"
PCFG=$(jq -cn --arg logs "$T/logs/web" '{metadata: {name: "web", namespace: "default", uid: "uid-web", attempt: 0},
	hostname: "web", log_directory: $logs, linux: {}}')
mkdir -p "$T/logs/web"
PPOD=$(cri_ok RunPodSandbox "{\"config\": $PCFG}" | jq -r .pod_sandbox_id)
PIP1=$(cri_ok PodSandboxStatus "{\"pod_sandbox_id\": \"$PPOD\"}" | jq -r .status.network.ip)
CCFG=$(jq -cn --arg img "$RT_IMAGE" '{metadata: {name: "web", attempt: 0}, image: {image: $img}, log_path: "web.log",
	command: ["httpd", "-f", "-p", "80", "-h", "/var/www"], linux: {}}')
PCID=$(cri_ok CreateContainer "$(jq -cn --arg p "$PPOD" --argjson c "$CCFG" --argjson s "$PCFG" \
	'{pod_sandbox_id: $p, config: $c, sandbox_config: $s}')" | jq -r .container_id)
cri_ok StartContainer "{\"container_id\": \"$PCID\"}" >/dev/null
python3 -c 'import ipaddress,sys; sys.exit(ipaddress.ip_address(sys.argv[1]) not in ipaddress.ip_interface(sys.argv[2]).network)' "$PIP1" "$S1" ||
	check_fail "node 1's pod $PIP1 is not in node 1's lease $S1"
P2=$(mk_netns p2)
ip netns exec "$(node_ns 2)" env NETCONFPATH="$d2/cni" CNI_PATH="$d2/bin" "$WEFT_TOOL" cni add weft "/run/netns/$P2" >"$T/p2.json" ||
	fail "weft cni add on node 2 failed: $(cat "$T/p2.json")"
on_exit "ip netns exec $(node_ns 2) env NETCONFPATH=$d2/cni CNI_PATH=$d2/bin $WEFT_TOOL cni del weft /run/netns/$P2"
PIP2=$(jq -r '.ips[0].address | split("/")[0]' "$T/p2.json")
info "pods: node 1 $PIP1 (CRI), node 2 $PIP2"

# exec1 CMD...: ExecSync in node 1's pod; stdout, status = exit code
exec1() {
	local out cmd
	cmd=$(printf '%s\n' "$@" | jq -R . | jq -cs .)
	out=$(cri_ok ExecSync "$(jq -cn --arg c "$PCID" --argjson cmd "$cmd" '{container_id: $c, cmd: $cmd, timeout: 10}')")
	jq -r .stdout <<<"$out"
	return "$(jq -r '.exit_code // 1' <<<"$out")"
}
exec1 ping -c1 -W2 "$PIP2" >/dev/null || check_fail "node 1's pod cannot ping node 2's pod"
assert_ping "$P2" "$PIP1"
assert_eq "$(ip netns exec "$P2" curl -s -m 3 "http://$PIP1/" || echo none)" weft-runtime-test "node 2's pod → node 1's pod HTTP"
peer_listen "$OUT_NS" 7001 "$T/peer"
exec1 sh -c "echo hi | nc -w 2 $OUTSIDE_IP 7001" >/dev/null || check_fail "node 1's pod cannot reach the outside host"
wait "$LISTEN_PID" 2>/dev/null || true
assert_eq "$(cat "$T/peer" 2>/dev/null)" "$(node_ip 1)" "node 1's pod is masqueraded to node 1's address (nft from the image's weftd)"

info "teardown: the pod, then weftd (SIGTERM, as on a rollout)"
cri_ok StopPodSandbox "{\"pod_sandbox_id\": \"$PPOD\"}" >/dev/null
cri_ok RemovePodSandbox "{\"pod_sandbox_id\": \"$PPOD\"}" >/dev/null
# shellcheck disable=SC2016 # the node's shell expands
assert_eq "$(rt sh -c 'find /var/lib/cni/networks -type f ! -name "last_reserved_ip*" ! -name lock ! -name ".*" | wc -l')" 0 "node 1: no reservation left"
cri_ok StopContainer "{\"container_id\": \"$WEFTD_CID\", \"timeout\": 20}" >/dev/null
assert_eq "$(ctr_state "$WEFTD_CID" .status.exit_code)" 0 "weftd exit code on SIGTERM"
cri_ok StopPodSandbox "{\"pod_sandbox_id\": \"$WPOD\"}" >/dev/null
cri_ok RemovePodSandbox "{\"pod_sandbox_id\": \"$WPOD\"}" >/dev/null

info "the host's root namespace is unchanged"
rt_node_stop_all
cluster_teardown
AFTER=$T/host-after
host_snapshot "$AFTER"
host_unchanged "$BEFORE" "$AFTER"
finish
