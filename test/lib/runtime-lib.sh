# shellcheck shell=bash
# Helpers for the runtime tests (podman, containerd). Source after test/lib/lib.sh.
#
# - a tiny busybox rootfs and an OCI image archive of it, built locally from Debian's
#   busybox-static (no image registry is reachable);
# - the "node": a network namespace plus a private mount namespace (rt_node_start) in which the
#   runtime runs. Everything a runtime writes to /run, /var/lib/cni or /etc/cni lands on tmpfs
#   there, its netns bind mounts never reach the host, and its bridges and nft rules stay in the
#   node's network namespace;
# - a before/after snapshot of the host's root network namespace (host_snapshot, host_unchanged).

BUSYBOX=${BUSYBOX:-/bin/busybox}

# require_static_busybox: skip unless $BUSYBOX is a static binary (busybox-static, not busybox).
require_static_busybox() {
	[ -x "$BUSYBOX" ] || skip "needs $BUSYBOX (apt-get install busybox-static)"
	if "$BUSYBOX" --list 2>/dev/null | grep -x httpd >/dev/null && ! ldd "$BUSYBOX" >/dev/null 2>&1; then
		return 0
	fi
	skip "$BUSYBOX is not the static busybox with httpd (apt-get install busybox-static)"
}

# mk_rootfs DIR: a minimal root filesystem: /bin/busybox plus a symlink per applet, the usual
# mount points, /etc/passwd and /etc/group for root and nobody.
mk_rootfs() {
	local d=$1 a
	mkdir -p "$d"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,var/www}
	chmod 1777 "$d/tmp"
	cp "$BUSYBOX" "$d/bin/busybox"
	for a in $("$BUSYBOX" --list); do
		[ "$a" = busybox ] || ln -sf busybox "$d/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$d/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$d/etc/group"
	echo "weft-runtime-test" >"$d/var/www/index.html"
	: >"$d/etc/hosts"
	: >"$d/etc/resolv.conf"
}

# _sha FILE: bare sha256 hex of FILE
_sha() { sha256sum "$1" | cut -d' ' -f1; }

# mk_oci_archive ROOTFS OUT.tar NAME CMD...: write an OCI image layout tarball (one uncompressed
# layer holding ROOTFS; config with CMD as the entrypoint; manifest; index.json naming the image
# NAME, e.g. "docker.io/weft/busybox:test") that `ctr images import` understands.
mk_oci_archive() {
	local rootfs=$1 out=$2 name=$3; shift 3
	local w
	w=$(mktemp -d "$T/oci.XXXXXX")
	mkdir -p "$w/blobs/sha256"
	# reproducible-ish layer: sorted, numeric owner root
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$w/layer.tar" .
	local lsha lsize
	lsha=$(_sha "$w/layer.tar"); lsize=$(stat -c %s "$w/layer.tar")
	mv "$w/layer.tar" "$w/blobs/sha256/$lsha"
	local cmd
	cmd=$(printf '%s\n' "$@" | jq -R . | jq -cs .)
	jq -cn --arg diff "sha256:$lsha" --argjson cmd "$cmd" '{
		architecture: "amd64", os: "linux",
		config: {Entrypoint: $cmd, Env: ["PATH=/bin:/sbin"], WorkingDir: "/"},
		rootfs: {type: "layers", diff_ids: [$diff]},
		history: [{created_by: "weft test/runtime/lib-rootfs.sh"}]}' >"$w/config.json"
	local csha csize
	csha=$(_sha "$w/config.json"); csize=$(stat -c %s "$w/config.json")
	mv "$w/config.json" "$w/blobs/sha256/$csha"
	jq -cn --arg c "sha256:$csha" --argjson cs "$csize" --arg l "sha256:$lsha" --argjson ls "$lsize" '{
		schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
		config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
		layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}' >"$w/manifest.json"
	local msha msize
	msha=$(_sha "$w/manifest.json"); msize=$(stat -c %s "$w/manifest.json")
	mv "$w/manifest.json" "$w/blobs/sha256/$msha"
	jq -cn --arg m "sha256:$msha" --argjson ms "$msize" --arg name "$name" --arg tag "${name##*:}" '{
		schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
		manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $m, size: $ms,
			platform: {architecture: "amd64", os: "linux"},
			annotations: {"io.containerd.image.name": $name, "org.opencontainers.image.ref.name": $tag}}]}' >"$w/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
	tar -C "$w" -cf "$out" oci-layout index.json blobs
	rm -rf "$w"
}

# host_snapshot FILE: what a runtime must not change in the host's root network namespace:
# links (name, state, addresses), policy rules, routes and the whole nftables ruleset (which is
# what iptables-nft writes to as well). Run in the root namespace.
host_snapshot() {
	{
		echo "== links"; ip -br link | awk '{print $1, $3}' | sort
		echo "== addrs"; ip -br addr | sort
		echo "== rules"; ip rule; ip -6 rule
		echo "== routes"; ip route show table all | sort; ip -6 route show table all | sort
		echo "== nft"; nft list ruleset 2>&1
	} >"$1"
}

# host_unchanged BEFORE AFTER: soft-fail with a diff if the host's network state changed.
host_unchanged() {
	if ! diff -u "$1" "$2" >"$T/host.diff"; then
		check_fail "the host's root network namespace changed during the test:"
		sed 's/^/    /' "$T/host.diff" >&2
	fi
}

# rt_lock: one runtime test at a time on this machine (run-tests runs two serial tests at once).
# The node holders mount tmpfs over /opt/cni, /etc/cni, /var/lib/cni, /var/lib/weft; when one of
# those is missing on the host, rt_node_start creates it and removes it at exit, and removing a
# directory on the host detaches every mount on it in other mount namespaces too: another test's
# node lost its /opt/cni mid-test ("failed to find plugin loopback"). The lock is taken before
# those directories are looked at and, being the first cleanup registered, released after they
# are removed. A mkdir lock, not flock: the containerd and holder processes a test starts would
# inherit a flock descriptor. A lock whose owner is gone is taken over.
RT_LOCKED=
rt_lock() {
	local lock=${WEFT_RT_LOCK:-/run/lock/weft-runtime-test} i owner
	[ -z "$RT_LOCKED" ] || return 0
	mkdir -p "${lock%/*}"
	for ((i = 0; i < 9000; i++)); do
		if mkdir "$lock" 2>/dev/null; then
			echo $$ >"$lock/pid"
			RT_LOCKED=1
			on_exit "rm -rf '$lock'"
			((i == 0)) || info "waited $((i / 10)) s for the runtime-test lock"
			return 0
		fi
		owner=$(cat "$lock/pid" 2>/dev/null || true)
		if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then
			rm -rf "$lock"
			continue
		fi
		sleep 0.1
	done
	fail "rt_lock: $lock held by pid ${owner:-?} for 15 min"
}

# rt_node_start NETNS: start a node holder: a process in network namespace NETNS (from mk_netns)
# and in a new mount namespace (slave of the host's, so nothing propagates back) with tmpfs on
# /run, /var/lib/cni, /etc/cni, /opt/cni, /var/lib/weft (and /var/lib/containers if it exists:
# the paths a node's runtime and weft's DaemonSet write to), a sysfs of NETNS on /sys and the
# host's cgroup tree re-bound under it (runc needs it). Sets RT_PID, the node `rt` runs in (a test
# with several nodes keeps each RT_PID and sets it back before `rt`, or uses rt_in). rt_node_stop
# (every holder is stopped at exit) kills every process left in that mount namespace, then the
# holder. Paths the runtime must see (configs, binaries, the test's $T) must not be under those
# tmpfs.
RT_HOLDERS=()
rt_node_start() {
	local ns=$1
	[ -e "/run/netns/$ns" ] || fail "rt_node_start: no netns $ns"
	rt_lock
	# Runtimes write to /var/lib/cni (libcni's cache) and /etc/cni whatever they are told, the
	# DaemonSet's hostPaths are /opt/cni/bin and /var/lib/weft: make sure all are mount points on
	# the node, creating (and later removing) empty ones on the host if needed.
	local d
	for d in /var/lib/cni /etc/cni /opt/cni /var/lib/weft; do
		[ -d "$d" ] && continue
		mkdir -p "$d"
		on_exit "rmdir $d"
	done
	cat >"$T/.holder.sh" <<'HOLDER'
set -e
exec 3<"/run/netns/$1"
mount -t tmpfs -o mode=755 tmpfs /run
mkdir /run/.cg
mount --rbind /sys/fs/cgroup /run/.cg
for d in /var/lib/cni /etc/cni /opt/cni /var/lib/weft /var/lib/containers; do
	if [ -d "$d" ]; then mount -t tmpfs -o mode=755 tmpfs "$d"; fi
done
exec nsenter --net=/proc/self/fd/3 sh -c '
	set -e
	exec 3<&-
	umount -l /sys
	mount -t sysfs sysfs /sys
	mount --rbind /run/.cg /sys/fs/cgroup
	umount -l /run/.cg
	rmdir /run/.cg
	echo ready
	exec sleep 100000'
HOLDER
	local out="$T/.holder.$ns.out"
	unshare --mount --propagation slave bash "$T/.holder.sh" "$ns" >"$out" 2>&1 &
	RT_PID=$!
	((${#RT_HOLDERS[@]} > 0)) || on_exit rt_node_stop_all
	RT_HOLDERS+=("$RT_PID")
	local i
	for ((i = 0; i < 50; i++)); do
		grep -q '^ready' "$out" 2>/dev/null && return 0
		kill -0 "$RT_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail "node holder did not start: $(cat "$out")"
}

# rt_node_pids [HOLDER]: every process in the holder's mount namespace except the holder itself.
rt_node_pids() {
	local holder=${1:-$RT_PID} mnt p
	mnt=$(readlink "/proc/$holder/ns/mnt" 2>/dev/null) || return 0
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[ "$p" = "$holder" ] && continue
		[ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$mnt" ] && echo "$p"
	done
	return 0
}

# rt_node_stop [HOLDER]: stop one node (default: $RT_PID's) and everything running in it.
rt_node_stop() {
	local holder=${1:-${RT_PID:-}}
	[ -n "$holder" ] || return 0
	local left all i p alive
	left=$(rt_node_pids "$holder")
	all=$left
	if [ -n "$left" ]; then
		# shellcheck disable=SC2086
		kill $left 2>/dev/null || true
		for ((i = 0; i < 30; i++)); do [ -z "$(rt_node_pids "$holder")" ] && break; sleep 0.1; done
		left=$(rt_node_pids "$holder")
		# shellcheck disable=SC2086
		[ -z "$left" ] || kill -9 $left 2>/dev/null || true
		# a process leaves the namespace early in its exit: wait until it is really gone
		for ((i = 0; i < 50; i++)); do
			alive=0
			for p in $all; do [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && alive=1; done
			[ $alive = 0 ] && break
			sleep 0.1
		done
	fi
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	[ "$holder" = "${RT_PID:-}" ] && RT_PID=
	return 0
}

rt_node_stop_all() {
	local h
	for h in "${RT_HOLDERS[@]}"; do rt_node_stop "$h"; done
}

# rt CMD...: run CMD on the node (its network and mount namespaces).
rt() { nsenter -t "$RT_PID" -m -n -- "$@"; }
# rt_in HOLDER CMD...: run CMD on the node of that holder.
rt_in() { local h=$1; shift; nsenter -t "$h" -m -n -- "$@"; }

# --- containerd -----------------------------------------------------------------------------------
RT_IMAGE=docker.io/weft/busybox:test

# containerd_start [DIR [CONF_DIR [BIN_DIR]]]: start Debian's containerd on the node (rt_node_start
# first) with test/data/runtime/containerd.toml: root, state and sockets under DIR/containerd
# (default $T), the CRI plugin's CNI conf dir CONF_DIR and bin dir BIN_DIR. Without CONF_DIR the
# conflist test/data/runtime/weftnet.conflist goes into DIR/net.d (without portmap unless
# CONTAINERD_PORTMAP=1) and BIN_DIR is $WEFT_BIN. The busybox image $RT_IMAGE is imported into
# the k8s.io namespace (CRI's). Sets CTR (ctr command with the socket), CTRD_SOCK and CTRD_LOG;
# stopped by rt_node_stop (which kills everything left in the node's mount namespace).
containerd_start() {
	local dir=${1:-$T} conf=${2:-} bin=${3:-$WEFT_BIN} data=$TOP/test/data/runtime i
	mkdir -p "$dir/containerd"
	if [ -z "$conf" ]; then
		conf=$dir/net.d
		mkdir -p "$conf" "$dir/ipam"
		local keep='select(.type != "portmap")'
		[ "${CONTAINERD_PORTMAP:-0}" = 1 ] && keep=.
		sed -e "s|@DIR@|$dir|g" "$data/weftnet.conflist" | jq ".plugins |= map($keep)" >"$conf/10-weftnet.conflist"
	fi
	sed -e "s|@DIR@|$dir|g" -e "s|@CNI_BIN@|$bin|g" -e "s|@IMAGE@|$RT_IMAGE|g" \
		-e "s|^    conf_dir = .*|    conf_dir = \"$conf\"|" "$data/containerd.toml" >"$dir/containerd.toml"
	CTRD_SOCK=$dir/containerd/containerd.sock
	CTRD_LOG=$dir/containerd.log
	CTR=(ctr --address "$CTRD_SOCK")
	# shellcheck disable=SC2016 # $1/$2 are the inner shell's
	rt sh -c 'exec containerd --config "$1" >"$2" 2>&1 </dev/null &' sh "$dir/containerd.toml" "$CTRD_LOG"
	for ((i = 0; i < 100; i++)); do
		rt "${CTR[@]}" version >/dev/null 2>&1 && break
		sleep 0.1
	done
	rt "${CTR[@]}" version >/dev/null 2>&1 || fail "containerd did not start: $(tail -20 "$CTRD_LOG")"
	info "containerd $(rt "${CTR[@]}" version | awk '/Server:/ {s=1} s && /Version:/ && v == "" {v = $2} END {print v}') up ($dir)"
	if [ ! -s "$T/image.tar" ]; then
		mk_rootfs "$T/rootfs"
		mk_oci_archive "$T/rootfs" "$T/image.tar" "$RT_IMAGE" sleep 3600
	fi
	rt "${CTR[@]}" -n k8s.io images import --snapshotter native "$T/image.tar" >/dev/null ||
		fail "ctr images import failed"
}

# --- CRI (test/runtime/cri: a gRPC client in place of crictl) ------------------------------------
CRI_JS=$TOP/test/runtime/cri/cri.js

# cri_require: skip without node; prepare the client (npm packages, CRI api.proto) or fail.
cri_require() {
	command -v node >/dev/null || skip "needs node (apt-get install nodejs npm; tools/install-deps.sh)"
	"$TOP/test/runtime/cri/setup.sh" >"$T/cri-setup.log" 2>&1 ||
		fail "test/runtime/cri/setup.sh failed: $(tail -5 "$T/cri-setup.log")"
}

# cri [-s SOCK] METHOD [JSON]: one CRI call to containerd's socket (default $CTRD_SOCK); prints
# the response JSON; status 1 with the gRPC error on stderr. The socket is a path, so this runs
# from the host namespaces (the node's containerd still does all the work in the node).
cri() {
	local sock=$CTRD_SOCK
	if [ "$1" = -s ]; then sock=$2; shift 2; fi
	node "$CRI_JS" --endpoint "unix://$sock" --timeout 60 "$@"
}
# cri_ok METHOD [JSON]: cri, failing the test (with containerd's last log lines) on an error
cri_ok() {
	local out
	if ! out=$(cri "$@" 2>"$T/.cri.err"); then
		tail -15 "${CTRD_LOG:-/dev/null}" >&2
		fail "CRI $1 failed: $(cat "$T/.cri.err")"
	fi
	printf '%s\n' "$out"
}

# --- containerd on the nodes of weft-cluster-lib.sh (tools/demo --runtime containerd) ------------
declare -a CRI_SOCK=() CRI_LOG=()

# cri_cluster_node_start I: node I gets a holder (its netns + a private mount namespace) and a
# containerd in it whose CRI plugin reads the conflist weftd writes ($T/nI/cni) and the node's
# bin dir ($T/nI/bin). Sets CRI_SOCK[I] and CRI_LOG[I].
cri_cluster_node_start() {
	local i=$1 d
	d=$(node_dir "$i")
	rt_node_start "$(node_ns "$i")"
	containerd_start "$d" "$d/cni" "$d/bin" >/dev/null
	CRI_SOCK[i]=$CTRD_SOCK
	CRI_LOG[i]=$CTRD_LOG
}

# cri_pod_up I NAME NETNS: RunPodSandbox on node I (the kubelet's first call for a pod; CNI ADD
# happens inside it), then the sandbox's network namespace is attached as NETNS (ip netns attach)
# so `ip netns exec NETNS` reaches the pod. Prints "SANDBOX_ID IP".
cri_pod_up() {
	local i=$1 name=$2 netns=$3 cfg id st pid
	mkdir -p "$T/logs/$name"
	cfg=$(jq -cn --arg n "$name" --arg logs "$T/logs/$name" '{metadata: {name: $n, namespace: "default",
		uid: ("uid-" + $n), attempt: 0}, hostname: $n, log_directory: $logs, linux: {}}')
	id=$(CTRD_SOCK=${CRI_SOCK[$i]} CTRD_LOG=${CRI_LOG[$i]} cri_ok RunPodSandbox "{\"config\": $cfg}" | jq -r .pod_sandbox_id)
	st=$(CTRD_SOCK=${CRI_SOCK[$i]} CTRD_LOG=${CRI_LOG[$i]} cri_ok PodSandboxStatus "{\"pod_sandbox_id\": \"$id\", \"verbose\": true}")
	pid=$(jq -r '.info.info | fromjson | .pid' <<<"$st")
	ip netns attach "$netns" "$pid" || fail "ip netns attach $netns $pid failed"
	echo "$id $(jq -r .status.network.ip <<<"$st")"
}

# cri_pod_down I SANDBOX_ID NETNS: StopPodSandbox (CNI DEL) and RemovePodSandbox, as the kubelet
# does, then forget the attached namespace.
cri_pod_down() {
	local i=$1 id=$2 netns=$3
	ip netns del "$netns" 2>/dev/null || true
	CTRD_SOCK=${CRI_SOCK[$i]} CTRD_LOG=${CRI_LOG[$i]} cri_ok StopPodSandbox "{\"pod_sandbox_id\": \"$id\"}" >/dev/null &&
		CTRD_SOCK=${CRI_SOCK[$i]} CTRD_LOG=${CRI_LOG[$i]} cri_ok RemovePodSandbox "{\"pod_sandbox_id\": \"$id\"}" >/dev/null
}
