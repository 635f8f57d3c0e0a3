#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# containerd (Debian's 1.6) calling weft's plugins for real, through go-cni: `ctr run --cni`.
# go-cni is the library containerd's CRI plugin uses to call CNI; ctr's --cni reads the default
# places /etc/cni/net.d and /opt/cni/bin, which on the node (a private mount namespace) are
# bind mounts of our conflist and our build's bin directory. The CRI path itself (crictl runp)
# is test-containerd-cri.sh.
#
#   node (netns w-rt-PID + private mount ns; containerd, shims, runc and our plugins run here)
#     weft0 10.88.7.1/24 ── t1 (sleep), t2 (pings t1 and the gateway)
#
# Checks: containerd starts with the CRI plugin configured for our plugins and loads; the local
# OCI image imports; ctr run --cni → address from our host-local (reservation file with
# containerd's ID), ping gateway and the other container; exit → our DEL (reservation released,
# veth gone); the host's root namespace is unchanged.
# shellcheck source=../lib/lib.sh
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/runtime-lib.sh
. "$(dirname "$0")/../lib/runtime-lib.sh"
require_root
require_cmd ip nft jq nsenter unshare
command -v containerd >/dev/null || skip "needs containerd (apt-get install containerd)"
command -v ctr >/dev/null || skip "needs ctr (ships with containerd)"
command -v runc >/dev/null || skip "needs runc (apt-get install runc)"
require_static_busybox
require_plugins bridge host-local loopback

STORE=$T/ipam/weftnet
BEFORE=$T/host-before
host_snapshot "$BEFORE"

NODE=$(mk_netns rt)
rt_node_start "$NODE"
containerd_start "$T"

info "the CRI plugin loaded with our CNI configuration"
assert_eq "$(rt "${CTR[@]}" plugins ls | awk '$2 == "cri" {print $NF}')" ok "CRI plugin status"
grep -q 'failed to load cni' "$T/containerd.log" && check_fail "CRI could not load our CNI config: $(grep -m1 'failed to load cni' "$T/containerd.log")"
assert_eq "$(rt "${CTR[@]}" -n k8s.io images ls -q | grep -cx "$RT_IMAGE")" 1 "image imported"

# go-cni's defaults, on the node only
rt mount -t tmpfs -o mode=755 tmpfs /opt
rt mkdir -p /opt/cni/bin /etc/cni/net.d
rt mount --bind "$WEFT_BIN" /opt/cni/bin
rt mount -t tmpfs -o mode=755 tmpfs /etc/cni/net.d
rt cp "$T/net.d/10-weftnet.conflist" /etc/cni/net.d/

reservations() { find "$STORE" -maxdepth 1 -type f ! -name 'last_reserved_ip*' ! -name lock ! -name '.*' -printf '%f\n' 2>/dev/null | sort | tr '\n' ' '; }
veths() { rt ip -j link show type veth | jq -r '.[].ifname' | sort | tr '\n' ' '; }
# crun NAME CMD...: ctr run --cni --rm in the foreground (ADD before start, DEL after exit)
crun() {
	local name=$1; shift
	rt "${CTR[@]}" -n k8s.io run --cni --rm --snapshotter native "$RT_IMAGE" "$name" "$@"
}

info "t1: ctr run --cni (ADD through go-cni)"
crun t1 sh -c 'ip -o -4 addr show eth0; ip route; ping -c1 -W2 10.88.7.1 >/dev/null && echo gw-ok; sleep 8' >"$T/t1.out" 2>&1 &
T1=$!
for ((i = 0; i < 100; i++)); do [ -n "$(reservations)" ] && grep -q gw-ok "$T/t1.out" && break; sleep 0.1; done
IP1=$(reservations | tr -d ' ')
info "t1 has $IP1"
[[ $IP1 == 10.88.7.* ]] || check_fail "t1 has no reservation in our store (got '$IP1'): $(cat "$T/t1.out")"
assert_eq "$(tr '\r\n' '  ' <"$STORE/$IP1" 2>/dev/null)" "k8s.io-t1  eth0" "reservation holds containerd's ID and eth0"
grep -q "inet $IP1/24" "$T/t1.out" || check_fail "t1 does not see $IP1/24 on eth0: $(cat "$T/t1.out")"
grep -q '^default via 10.88.7.1' "$T/t1.out" || check_fail "t1 has no default route via 10.88.7.1"
grep -q gw-ok "$T/t1.out" || check_fail "t1 cannot ping its gateway"
assert_eq "$(veths | wc -w)" 1 "one veth on the node"

info "t2 pings t1 and the gateway"
if ! crun t2 sh -c "ping -c1 -W2 $IP1 && ping -c1 -W2 10.88.7.1" >"$T/t2.out" 2>&1; then
	check_fail "t2 could not ping t1 ($IP1) or the gateway: $(cat "$T/t2.out")"
fi
assert_eq "$(reservations)" "$IP1 " "t2's reservation released when it exited"
assert_eq "$(veths | wc -w)" 1 "t2's veth gone when it exited"

info "t1 exits: DEL"
wait "$T1" || check_fail "ctr run t1 failed: $(cat "$T/t1.out")"
assert_eq "$(reservations)" "" "no reservation left"
assert_eq "$(veths)" "" "no veth left on the node"
assert_eq "$(rt "${CTR[@]}" -n k8s.io containers ls -q | wc -l)" 0 "no containers left"

info "the host's root namespace is unchanged"
rt_node_stop
AFTER=$T/host-after
host_snapshot "$AFTER"
host_unchanged "$BEFORE" "$AFTER"
finish
