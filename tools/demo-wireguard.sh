# shellcheck shell=bash
# tools/demo --backend wireguard: sourced by tools/demo after weft-cluster-lib.sh. Every node's pod
# traffic to the other nodes goes through its WireGuard device weft-wg (UDP 51820 on the underlay).
# This machine has no wireguard kernel module, so weftd runs wireguard-go, which serves its UAPI on
# /run/wireguard/weft-wg.sock: a directory compiled into it, which every node's weftd would share.
# So each weftd runs in a private mount namespace whose /run/wireguard is the node's own directory
# ($T/nI/wg), as test/netns/test-weftd-wireguard.sh does. `wg` (wireguard-tools, for inspecting
# only; weftd never runs it) reads a node's device the same way (demo_wg). bench/wireguard.sh and
# test/netns/test-weftd-kube-wireguard.sh source this file for the same wrapper and demo_wg.
#
# demo_wg_report (after the connectivity matrix) is its hook: each node's device and peers (wg show),
# and a capture on the underlay bridge while a marker goes pod to pod across nodes: every node to
# node packet is UDP to port 51820 and the marker is not in any of them.
# shellcheck disable=SC2015 # the demo's own idiom: every prerequisite or a message and exit
[ -c /dev/net/tun ] || { echo "demo: --backend wireguard needs /dev/net/tun" >&2; exit 1; }
for c in wireguard-go wg unshare tcpdump; do
	command -v "$c" >/dev/null || { echo "demo: --backend wireguard needs $c (tools/install-deps.sh)" >&2; exit 1; }
done

# weftd in a private mount namespace with the node's own /run/wireguard: the wrapper finds the node
# from --state-dir (weft-cluster-lib.sh passes $T/nI/state) and uses $T/nI/wg
[ -x "$WEFTD" ] || { echo "demo: $WEFTD is not built (run make)" >&2; exit 1; }
# shellcheck source=../test/lib/wireguard-lib.sh
. "$TOP/test/lib/wireguard-lib.sh"
wg_private_run_wrapper

# demo_wg I ARGS...: wg ARGS in node I's namespace, with the node's /run/wireguard
demo_wg() {
	local i=$1
	shift
	# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
	ip netns exec "$(node_ns "$i")" unshare -m --propagation private sh -c \
		'mount -t tmpfs tmpfs /run && mkdir /run/wireguard && mount --bind "$0" /run/wireguard && exec wg "$@"' \
		"$(node_dir "$i")/wg" "$@"
}

demo_wg_report() {
	local i n hs port line tpid filter pcap=$T/underlay.pcap marker n_wg n_other n_marker bytes got
	say "WireGuard: each node's device weft-wg and its peers (wg show, read from wireguard-go's UAPI socket)"
	demo_wg 1 show weft-wg 2>&1 | sed 's/^/   node1| /'
	for ((i = 1; i <= NODES; i++)); do
		port=$(demo_wg "$i" show weft-wg listen-port 2>/dev/null)
		n=$(demo_wg "$i" show weft-wg peers 2>/dev/null | grep -c . || true)
		# every pair has pinged by now: each peer has completed a handshake
		hs=$(demo_wg "$i" show weft-wg latest-handshakes 2>/dev/null | awk '$2 > 0' | grep -c . || true)
		total=$((total + 1))
		line=$(printf 'node%d weft-wg: UDP %s, %s peers, %s with a handshake' "$i" "${port:-?}" "$n" "$hs")
		if [ "$port" = 51820 ] && [ "$n" = $((NODES - 1)) ] && [ "$hs" = "$n" ]; then echo "   $line   ok"
		else echo "   $line (want 51820, $((NODES - 1)), $((NODES - 1)))   FAIL"; fails=$((fails + 1)); fi
	done

	say "encryption: the underlay bridge captured while a marker goes pod1.1 -> pod2.1 (TCP)$( ((NODES >= 3)) && echo ' and pod3.1 pings pod1.1')"
	marker=weft-demo-plaintext-$$
	ip netns exec "$UL_NS" tcpdump -i br0 -nn -U -s 0 -w "$pcap" >"$T/tcpdump.log" 2>&1 &
	tpid=$!
	wait_for 5 grep -q "listening on br0" "$T/tcpdump.log" || echo "   tcpdump did not start: $(cat "$T/tcpdump.log")"
	ip netns exec "${POD_NS[pod2.1]}" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 7003)); s.listen(1); s.settimeout(10)
c, a = s.accept(); d = b""
while True:
    b = c.recv(65536)
    if not b: break
    d += b
open(sys.argv[1], "wb").write(d)' "$T/marker.got" &
	local rpid=$!
	wait_listen "${POD_NS[pod2.1]}" 7003 || wait_listen "${POD_NS[pod2.1]}" 7003 || true
	ip netns exec "${POD_NS[pod1.1]}" python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 7003), timeout=5); s.sendall(sys.argv[2].encode() * 50); s.close()' \
		"${POD_IP[pod2.1]}" "$marker" || true
	wait "$rpid" 2>/dev/null || true
	[ -n "${POD_NS[pod3.1]:-}" ] && ip netns exec "${POD_NS[pod3.1]}" ping -c 3 -i 0.2 -W 2 "${POD_IP[pod1.1]}" >/dev/null 2>&1 || true
	sleep 0.5
	kill "$tpid" 2>/dev/null || true
	wait "$tpid" 2>/dev/null || true
	# node to node: both ends on the underlay, neither etcd nor the outside host
	filter="ip and src net $CLUSTER_UNDERLAY.0/24 and dst net $CLUSTER_UNDERLAY.0/24 and not host $ETCD_IP and not host $OUTSIDE_IP"
	n_wg=$(tcpdump -r "$pcap" -nn "$filter and udp port 51820" 2>/dev/null | grep -c . || true)
	bytes=$(tcpdump -r "$pcap" -nn "$filter and udp port 51820" 2>/dev/null | awk '{ n += $NF } END { print n + 0 }')
	n_other=$(tcpdump -r "$pcap" -nn "$filter and not udp port 51820" 2>/dev/null | grep -c . || true)
	n_marker=$(tcpdump -r "$pcap" -nn -w - "$filter" 2>/dev/null | grep -caF "$marker" || true)
	got=$(grep -coF "$marker" "$T/marker.got" 2>/dev/null || true)
	total=$((total + 1))
	line="tcpdump -i br0 '$filter': $n_wg packets UDP port 51820 ($bytes bytes of UDP payload), $n_other other; marker received by pod2.1: $([ "$got" -ge 1 ] 2>/dev/null && echo yes || echo no), in the capture: $n_marker times"
	if ((n_wg > 0 && n_other == 0 && n_marker == 0)) && [ "$got" -ge 1 ] 2>/dev/null; then echo "   $line   ok"
	else echo "   $line   FAIL"; fails=$((fails + 1)); fi
}
