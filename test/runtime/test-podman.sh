#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# podman (Debian's 4.3, CNI backend) calling weft's plugins for real: a private containers.conf
# points cni_plugin_dirs at our build and network_config_dir at a private dir holding
# test/data/runtime/weftnet.conflist (bridge + host-local [+ portmap]). Containers run from a
# local busybox rootfs (--rootfs), storage is vfs under the test's directory.
#
#   node (netns w-rt-PID + private mount ns; podman, conmon, runc and our plugins run here)
#     weft0 10.88.7.1/24 ── c1 (sleep), c2 (httpd :80, -p 18080:80 when portmap is built)
#
# Checks: podman network ls sees the conflist; run → address from our host-local (reservation file
# in our dataDir, podman inspect), ping gateway and the other container, port mapping from the
# node; rm -f → our DEL (reservation gone, veth gone); the host's root namespace is unchanged.
# shellcheck source=../lib/lib.sh
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/runtime-lib.sh
. "$(dirname "$0")/../lib/runtime-lib.sh"
require_root
require_cmd ip nft jq nsenter unshare nc
command -v podman >/dev/null || skip "needs podman (apt-get install podman)"
command -v runc >/dev/null || skip "needs runc (apt-get install runc)"
require_static_busybox
require_plugins bridge host-local
HAVE_PORTMAP=0
[ -x "$WEFT_BIN/portmap" ] && HAVE_PORTMAP=1

DATA=$TOP/test/data/runtime
NET=weftnet
STORE=$T/ipam/$NET

BEFORE=$T/host-before
host_snapshot "$BEFORE"

# Private podman world: configs, storage, CNI config dir, all under $T.
mkdir -p "$T/net.d" "$T/ipam" "$T/graph" "$T/runroot" "$T/tmp"
fill() { sed -e "s|@DIR@|$T|g" -e "s|@CNI_BIN@|$WEFT_BIN|g" "$1"; }
fill "$DATA/containers.conf" >"$T/containers.conf"
fill "$DATA/storage.conf" >"$T/storage.conf"
if [ $HAVE_PORTMAP = 1 ]; then
	fill "$DATA/weftnet.conflist" >"$T/net.d/$NET.conflist"
else
	info "no $WEFT_BIN/portmap: conflist without portmap, port mapping not tested"
	fill "$DATA/weftnet.conflist" | jq '.plugins |= map(select(.type != "portmap"))' >"$T/net.d/$NET.conflist"
fi
mk_rootfs "$T/rootfs"

NODE=$(mk_netns rt)
rt_node_start "$NODE"

# pm ARGS...: podman on the node with only our configuration
pm() {
	rt env CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf" \
		CONTAINERS_REGISTRIES_CONF=/dev/null podman "$@"
}
on_exit "pm rm -f -a -t 0"
# reservations: IPs reserved in our host-local store
reservations() { find "$STORE" -maxdepth 1 -type f ! -name 'last_reserved_ip*' ! -name lock ! -name '.*' -printf '%f\n' 2>/dev/null | sort | tr '\n' ' '; }
veths() { rt ip -j link show type veth | jq -r '.[].ifname' | sort | tr '\n' ' '; }

info "podman $(podman version --format '{{.Client.Version}}'), backend $(pm info --format '{{.Host.NetworkBackend}}')"
assert_eq "$(pm info --format '{{.Host.NetworkBackend}}')" cni "podman uses the CNI backend"
pm network ls
assert_eq "$(pm network ls --format '{{.Name}}' | grep -cx "$NET")" 1 "podman network ls lists $NET"
assert_eq "$(pm network inspect "$NET" | jq -r '.[0].plugins[0].type // .[0].driver')" bridge "network inspect shows our bridge conflist"

info "podman run c1 on $NET"
pm run -d --name c1 --network "$NET" --rootfs "$T/rootfs" sleep 3600 >/dev/null || fail "podman run c1 failed"
IP1=$(pm inspect c1 --format "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}")
GW=$(pm inspect c1 --format "{{(index .NetworkSettings.Networks \"$NET\").Gateway}}")
CID1=$(pm inspect c1 --format '{{.Id}}')
info "c1 $CID1 has $IP1, gateway $GW"
[[ $IP1 == 10.88.7.* ]] || check_fail "c1 address '$IP1' is not from our range 10.88.7.0/24"
assert_eq "$GW" 10.88.7.1 "gateway reported by podman"
[ -f "$STORE/$IP1" ] || check_fail "no reservation file $STORE/$IP1 in our host-local store"
# reference format: "<container id>\r\n<ifname>"
assert_eq "$(tr '\r\n' '  ' <"$STORE/$IP1" 2>/dev/null)" "$CID1  eth0" "reservation holds podman's container ID and eth0"
assert_eq "$(pm exec c1 ip -o -4 addr show eth0 | awk '{print $4}')" "$IP1/24" "address inside c1"
assert_eq "$(pm exec c1 ip route | awk '/^default/ {print $3}')" 10.88.7.1 "default route inside c1"
assert_eq "$(rt ip -j addr show weft0 | jq -r '[.[0].addr_info[] | select(.family=="inet") | .local] | join(" ")')" 10.88.7.1 "gateway on weft0 (node)"
VETH1=$(veths)
info "host-side veths: $VETH1"
pm exec c1 ping -c1 -W2 "$GW" >/dev/null || check_fail "c1 cannot ping its gateway $GW"

info "podman run c2 (httpd)"
PUBLISH=()
[ $HAVE_PORTMAP = 1 ] && PUBLISH=(-p 18080:80)
if ! pm run -d --name c2 --network "$NET" "${PUBLISH[@]}" --rootfs "$T/rootfs" httpd -f -p 80 -h /var/www >"$T/c2.out" 2>&1; then
	check_fail "podman run c2 ${PUBLISH[*]} failed: $(cat "$T/c2.out")"
	# go on with the rest: without the port mapping
	PUBLISH=()
	pm rm -f -t 0 c2 >/dev/null 2>&1 || true
	pm run -d --name c2 --network "$NET" --rootfs "$T/rootfs" httpd -f -p 80 -h /var/www >/dev/null || fail "podman run c2 failed"
fi
IP2=$(pm inspect c2 --format "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}")
info "c2 has $IP2"
assert_ne "$IP2" "$IP1" "c1 and c2 addresses"
assert_eq "$(reservations)" "$(printf '%s\n' "$IP1" "$IP2" | sort | tr '\n' ' ')" "two reservations in our store"
pm exec c1 ping -c1 -W2 "$IP2" >/dev/null || check_fail "c1 cannot ping c2 ($IP2)"
pm exec c2 ping -c1 -W2 "$IP1" >/dev/null || check_fail "c2 cannot ping c1 ($IP1)"
# httpd may need a moment to listen
http_get() { # NS-CMD-PREFIX... HOST PORT: prints the body
	local host=$1 port=$2 i out
	for ((i = 0; i < 20; i++)); do
		out=$(printf 'GET / HTTP/1.0\r\n\r\n' | rt nc -w 3 "$host" "$port" 2>/dev/null | tail -n1) || true
		[ -n "$out" ] && { echo "$out"; return 0; }
		sleep 0.2
	done
	return 1
}
assert_eq "$(http_get "$IP2" 80)" weft-runtime-test "HTTP from the node to c2:80"
assert_eq "$(pm exec c1 wget -qO- "http://$IP2/")" weft-runtime-test "HTTP from c1 to c2:80"

if ((${#PUBLISH[@]} > 0)); then
	info "port mapping 18080 → c2:80"
	assert_eq "$(pm port c2 | tr -d '\n')" "80/tcp -> 0.0.0.0:18080" "podman port"
	assert_eq "$(http_get 10.88.7.1 18080)" weft-runtime-test "HTTP to the node's 10.88.7.1:18080 reaches c2"
	assert_eq "$(pm exec c1 wget -qO- "http://10.88.7.1:18080/")" weft-runtime-test "HTTP from c1 via the mapped port"
	assert_eq "$(http_get 127.0.0.1 18080)" weft-runtime-test "HTTP to the node's 127.0.0.1:18080 reaches c2"
fi

info "podman rm -f: our DEL releases the address and removes the veth"
pm rm -f -t 0 c1 >/dev/null || check_fail "podman rm c1 failed"
[ ! -e "$STORE/$IP1" ] || check_fail "reservation $IP1 survived podman rm"
assert_eq "$(reservations)" "$IP2 " "only c2's reservation left"
assert_eq "$(veths | wc -w)" 1 "one veth left after removing c1"
pm exec c2 ping -c1 -W2 "$GW" >/dev/null || check_fail "c2 lost its network when c1 was removed"
pm rm -f -t 0 c2 >/dev/null || check_fail "podman rm c2 failed"
assert_eq "$(reservations)" "" "no reservation left"
assert_eq "$(veths)" "" "no veth left on the node"
if [ $HAVE_PORTMAP = 1 ]; then
	[[ "$(rt nft list ruleset 2>/dev/null)" != *18080* ]] || check_fail "port 18080 still in the node's nft ruleset after rm"
fi
assert_eq "$(pm ps -a -q | wc -l)" 0 "no containers left"

info "the host's root namespace is unchanged"
pm rm -f -a -t 0 >/dev/null 2>&1 || true
rt_node_stop
AFTER=$T/host-after
host_snapshot "$AFTER"
host_unchanged "$BEFORE" "$AFTER"
finish
