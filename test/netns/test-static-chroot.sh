#!/usr/bin/env bash
# The host suite runs where a runtime runs it on any node: from a root that holds ONLY what
# `weft install-cni` put there, plus what a runtime provides. No loader, no libraries, no /etc.
#
#   $ROOT/opt/cni/bin/{weft-plugins, bridge, portmap, ...}   (weft install-cni --dest $ROOT/opt/cni/bin)
#   $ROOT/proc /sys /run/netns $STATE   bind mounts, in a private mount namespace (gone at exit)
#
#   node "host" ─ plugins run here: ip netns exec host chroot $ROOT /opt/cni/bin/NAME
#     ├── cni-podman0 (bridge + host-local) ── pod1    chain: bridge portmap firewall tuning bandwidth
#     ├── cni0 (weft, from a weftd lease)  ─── pod2    chain: weft portmap (what weftd writes)
#     └── pod3: loopback
#
# Each chain, as a runtime drives it (prevResult threaded through ADD; CHECK and DEL get the
# chain's result; DEL in reverse order): ADD, CHECK, GC keeping the attachment, STATUS, DEL, DEL
# again, GC of nothing. Asserted on the kernel: addresses, ping to the gateway, the nftables
# elements of portmap and the bridge's ipMasq, the tc qdisc of bandwidth, tuning's sysctl, the
# IPAM store; after DEL none of it is left.
#
# A dynamic suite cannot run there: then its loader and libraries (ldd, and the dlopen()ed
# libnftables) are copied into the root too, every check runs, and the test ends in a skip naming
# the reason (test-static-suite says why the suite is dynamic).
if [ -z "${WEFT_TEST_MNTNS:-}" ] && [ "$(id -u)" = 0 ]; then
	# bind mounts stay in a private mount namespace: nothing to unmount on the host, even on a crash
	exec unshare -m --propagation private env WEFT_TEST_MNTNS=1 bash "$0" "$@"
fi
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd jq ping chroot nft tc ldd
require_plugins weft-plugins bridge portmap firewall tuning bandwidth host-local weft loopback
WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFT"
CHROOT=$(command -v chroot)

HOSTNS=$(mk_netns host)
POD1=$(mk_netns pod1)
POD2=$(mk_netns pod2)
POD3=$(mk_netns pod3)
STATE=$T/state
mkdir -p "$STATE/ipam" "$STATE/weft-run" "$STATE/weft-data"
# The root is a tmpfs outside $T, so lib.sh's `rm -rf $T` can never walk into the bind mounts of
# /proc, /sys or /run/netns; unmounting it (recursively, first thing at exit) takes everything.
ROOT=$(mktemp -d /tmp/weft-chroot.XXXXXX)
mount -t tmpfs -o mode=0755 weft-chroot "$ROOT"
on_exit "umount -R -l '$ROOT' && rmdir '$ROOT'"
mkdir -p "$ROOT/opt/cni/bin"

info "install the suite into an empty root"
names=$(cd "$WEFT_BIN" && for f in *; do if [ -f "$f" ] && [ -x "$f" ] && [ "$f" != weftd ]; then printf '%s,' "$f"; fi; done)
"$WEFT" install-cni --src "$WEFT_BIN" --dest "$ROOT/opt/cni/bin" --plugins "${names%,}" >/dev/null ||
	fail "weft install-cni into $ROOT/opt/cni/bin failed"
linkage=$(cat "$WEFT_BUILD/linkage" 2>/dev/null || echo unknown)
if [ "$linkage" != static ]; then
	info "dynamic suite ($linkage): copying its loader and libraries into the root"
	libs=$(ldd "$WEFT_BIN/weft-plugins" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
	# awk reads to the end: exiting at the first match SIGPIPEs ldconfig, which pipefail reports (141)
	nft=$(ldconfig -p | awk '$1 == "libnftables.so.1" && /x86-64/ && !f {f = $NF} END {print f}')
	[ -z "$nft" ] || libs="$libs $nft $(ldd "$nft" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')"
	for l in $libs; do
		mkdir -p "$ROOT$(dirname "$l")"
		cp -L "$l" "$ROOT$l"
	done
fi
# what a runtime provides: /proc, /sys, the netns files, and the plugins' state directories
mkdir -p "$ROOT/proc" "$ROOT/sys" "$ROOT/run/netns" "$ROOT$STATE"
mount --bind /proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mount --rbind /run/netns "$ROOT/run/netns"
mount --bind "$STATE" "$ROOT$STATE"
info "root holds: $(cd "$ROOT" && find . -path ./proc -prune -o -path ./sys -prune -o -path ./run/netns -prune -o \
	-path ".$STATE" -prune -o -type f -print | sort | tr '\n' ' ')"

# crun PLUGIN CMD CID NETNS IFNAME CONF: run one plugin from the root, in the node namespace.
# Sets CNI_OUT, CNI_ERR, CNI_RC like lib.sh's cni.
crun() {
	local plugin=$1 cmd=$2 cid=$3 netns=$4 ifname=$5 conf=$6
	local -a nsenv=()
	[ -z "$netns" ] || nsenv=(CNI_NETNS="/run/netns/$netns")
	printf '%s' "$conf" >"$T/.conf"
	set +e
	CNI_OUT=$(ip netns exec "$HOSTNS" env -i CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" "${nsenv[@]}" \
		CNI_IFNAME="$ifname" CNI_PATH=/opt/cni/bin WEFT_LOG_LEVEL=warning \
		"$CHROOT" "$ROOT" "/opt/cni/bin/$plugin" <"$T/.conf" 2>"$T/.stderr")
	CNI_RC=$?
	set -e
	CNI_ERR=$(cat "$T/.stderr")
}

# chain CMD CID NETNS CONFLIST [RESULT]: every plugin of CONFLIST as a runtime runs them (ADD in
# order, prevResult threaded; CHECK/DEL with RESULT, DEL in reverse; GC/STATUS without one).
# Fails the test on a non-zero exit; CHAIN_OUT is ADD's final result.
chain() {
	local cmd=$1 cid=$2 netns=$3 list=$4 prev=${5:-} n i conf order
	n=$(jq '.plugins | length' <<<"$list")
	order=$(seq 0 $((n - 1)))
	[ "$cmd" != DEL ] || order=$(seq $((n - 1)) -1 0)
	for i in $order; do
		conf=$(jq -c --argjson i "$i" '.plugins[$i] + {name: .name, cniVersion: .cniVersion}' <<<"$list")
		case $cmd in
		GC) conf=$(jq -c --argjson v "${GC_VALID:-[]}" '. + {"cni.dev/valid-attachments": $v}' <<<"$conf") ;;
		STATUS) ;;
		*) [ -z "$prev" ] || conf=$(with_prev "$conf" "$prev") ;;
		esac
		crun "$(jq -r .type <<<"$conf")" "$cmd" "$cid" "$netns" eth0 "$conf"
		[ "$CNI_RC" = 0 ] || fail "$cmd $(jq -r .type <<<"$conf") ($cid) from the chroot exited $CNI_RC: $CNI_OUT $CNI_ERR"
		[ "$cmd" != ADD ] || prev=$CNI_OUT
	done
	CHAIN_OUT=$prev
}

# lifecycle NAME CID NETNS CONFLIST CHECK_UP CHECK_DOWN: the whole sequence, with the caller's
# kernel checks after ADD and after DEL.
lifecycle() {
	local name=$1 cid=$2 netns=$3 list=$4 up=$5 down=$6 res
	info "$name: ADD"
	chain ADD "$cid" "$netns" "$list"
	res=$CHAIN_OUT
	RESULT=$res
	"$up"
	info "$name: CHECK, GC (attachment valid), STATUS"
	chain CHECK "$cid" "$netns" "$list" "$res"
	GC_VALID="[{\"containerID\":\"$cid\",\"ifname\":\"eth0\"}]" chain GC "" "" "$list"
	"$up"
	chain STATUS "" "" "$list"
	info "$name: DEL, DEL again, GC"
	chain DEL "$cid" "$netns" "$list" "$res"
	chain DEL "$cid" "$netns" "$list" "$res"
	GC_VALID="[]" chain GC "" "" "$list"
	"$down"
}

nft_comments() { ip netns exec "$HOSTNS" nft -j list ruleset | jq -r '[.nftables[] | .set?.elem?[]?, .map?.elem?[]? | .. | .comment? // empty] | .[]' | sort -u | tr '\n' ' '; }

# --- podman's chain -----------------------------------------------------------------------------
PODMAN=$(jq -c -n --arg ipam "$STATE/ipam" '{cniVersion: "1.1.0", name: "podman", plugins: [
  {type: "bridge", bridge: "cni-podman0", isGateway: true, ipMasq: true, hairpinMode: true,
   ipam: {type: "host-local", dataDir: $ipam, routes: [{dst: "0.0.0.0/0"}], ranges: [[{subnet: "10.88.0.0/16", gateway: "10.88.0.1"}]]}},
  {type: "portmap", capabilities: {portMappings: true},
   runtimeConfig: {portMappings: [{hostPort: 18080, containerPort: 80, protocol: "tcp"}]}},
  {type: "firewall"},
  {type: "tuning", sysctl: {"net.ipv4.conf.eth0.arp_notify": "1"}},
  {type: "bandwidth", ingressRate: 8000000, ingressBurst: 160000, egressRate: 8000000, egressBurst: 160000}]}')
podman_up() {
	assert_eq "$(jqr '.ips[0].address' "$RESULT")" 10.88.0.2/16 "podman chain: pod address"
	assert_ping "$POD1" 10.88.0.1
	[[ $(nft_comments) == *podman/c1/eth0* ]] || check_fail "no nftables element for podman/c1/eth0: $(nft_comments)"
	assert_eq "$(ip netns exec "$POD1" cat /proc/sys/net/ipv4/conf/eth0/arp_notify)" 1 "tuning's sysctl in the pod"
	local veth
	veth=$(jqr '.interfaces[1].name' "$RESULT")
	tc -n "$HOSTNS" qdisc show dev "$veth" | grep_q tbf || check_fail "bandwidth: no tbf qdisc on $veth: $(tc -n "$HOSTNS" qdisc show dev "$veth")"
	assert_eq "$(reservations_in "$STATE/ipam")" 1 "one address reserved"
}
podman_down() {
	assert_eq "$(ip -n "$POD1" -j link show | jq -r '[.[].ifname] | join(" ")')" lo "pod1 has only lo after DEL"
	[[ $(nft_comments) != *podman/c1/eth0* ]] || check_fail "nftables elements left after DEL: $(nft_comments)"
	assert_eq "$(reservations_in "$STATE/ipam")" 0 "no address reserved after DEL"
}
lifecycle podman c1 "$POD1" "$PODMAN" podman_up podman_down

# --- weftd's chain (src/daemon/cni-conf.c: weft + portmap) -----------------------------------------
cat >"$STATE/weft-run/subnet.env" <<EOF
WEFT_NETWORK=10.244.0.0/16
WEFT_SUBNET=10.244.7.1/24
WEFT_MTU=1400
WEFT_IPMASQ=true
EOF
WEFTNET=$(jq -c -n --arg run "$STATE/weft-run" --arg data "$STATE/weft-data" '{cniVersion: "1.1.0", name: "weft", plugins: [
  {type: "weft", runDir: $run, dataDir: $data, hairpinMode: true, isDefaultGateway: true},
  {type: "portmap", capabilities: {portMappings: true}, snat: true,
   runtimeConfig: {portMappings: [{hostPort: 18081, containerPort: 80, protocol: "tcp"}]}}]}')
weft_up() {
	assert_eq "$(jqr '.ips[0].address' "$RESULT")" 10.244.7.2/24 "weft chain: pod address"
	assert_ping "$POD2" 10.244.7.1
	[[ $(nft_comments) == *weft/c2/eth0* ]] || check_fail "no nftables element for weft/c2/eth0: $(nft_comments)"
}
weft_down() {
	assert_eq "$(ip -n "$POD2" -j link show | jq -r '[.[].ifname] | join(" ")')" lo "pod2 has only lo after DEL"
	[[ $(nft_comments) != *weft/c2/eth0* ]] || check_fail "nftables elements left after DEL: $(nft_comments)"
}
lifecycle weft c2 "$POD2" "$WEFTNET" weft_up weft_down

# --- loopback -------------------------------------------------------------------------------------
ip -n "$POD3" link set lo down
LO='{"cniVersion":"1.1.0","name":"lo","plugins":[{"type":"loopback"}]}'
lo_up() { assert_eq "$(ip -n "$POD3" -j link show lo | jq -r '.[0].flags | index("UP") != null')" true "lo is up"; }
lo_down() { :; }
lifecycle loopback c3 "$POD3" "$LO" lo_up lo_down

if [ "$linkage" != static ]; then
	skip "the suite is dynamic ($linkage): every chain ran from the chroot only with its libraries copied in"
fi
finish
