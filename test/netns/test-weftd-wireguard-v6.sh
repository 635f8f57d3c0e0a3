#!/usr/bin/env bash
# The wireguard backend's Mode separate on a dual-stack cluster: 2 nodes whose underlay has both
# families (10.99.0.1N and fd99::1N on eth0), Network 10.244.0.0/16 + Network6 fd00:10:244::/56,
# wireguard-go (each weftd in a private mount namespace for /run/wireguard, as in
# test-weftd-wireguard.sh).
#
#   [pod1]--cni0--(node1: weft-wg UDP 51820 over IPv4, weft-wg-v6 UDP 51821 over IPv6)--eth0 -+
#                                                                                         br0 (w-ul-PID)
#   [pod2]--cni0--(node2: the same)-----------------------------------------------------eth0 -+
#
# Checks: both devices on each node, wireguard-go listening on 51820 and 51821 (two processes, two
# UAPI sockets weft-wg.sock and weft-wg-v6.sock); the lease publishes publicIPv6; the IPv4 route to
# the other node's subnet goes through weft-wg, the IPv6 one through weft-wg-v6, each device with
# one peer; pod MTU (lease and devices) 1500 - 80, the IPv6 endpoints' overhead; IPv6 ping and TCP
# pod to pod (address kept) and IPv4 ping; on the underlay bridge every inter-node IPv6 packet but
# neighbour discovery is UDP port 51821, and a marker sent pod to pod over IPv6 never appears (the
# control: the same capture holds the marker when it is sent to the other node's underlay address
# in clear); weftd uninstall removes both devices. Fails on a weftd that makes weft-wg only.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/wireguard-lib.sh"
require_root
require_cmd ip jq curl etcd etcdctl python3 ping tcpdump unshare ss
require_built "$WEFTD"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v wireguard-go >/dev/null || skip "wireguard-go is not installed (and the test does not use the kernel module)"

# weftd in a private mount namespace with the node's own /run/wireguard (wireguard-lib.sh)
wg_private_run_wrapper

CLUSTER_NETWORK6=fd00:10:244::/56
CLUSTER_EXTRA_BACKEND='"Mode": "separate"'
cluster_init 2 wireguard
ip6_of() { echo "fd99::$((10 + $1))"; }
for i in 1 2; do ip -n "$(node_ns "$i")" addr add "$(ip6_of "$i")/64" dev eth0 nodad; done
for i in 1 2; do weftd_start "$i"; done
weftd_wait_ready 1 2

SUB=$ETCD_PREFIX/subnets
declare -A SUBNET SUBNET6 POD6
for i in 1 2; do
	SUBNET[$i]=$(node_subnet "$i")
	SUBNET6[$i]=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)' "$(lease_var "$i" WEFT_SUBNET6)")
	POD6[$i]=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_network(sys.argv[1])[10])' "${SUBNET6[$i]}")
done
lease_value() { etcdctl_ get "$SUB/${SUBNET[$1]/\//-}" --print-value-only; }
route6_to() { ip -n "$(node_ns "$1")" -6 -j route show proto 252 | jq -r --arg d "$2" '.[] | select(.dst == $d) | .dev'; }
programmed() { local i; for i in 1 2; do [ -n "$(route6_to "$i" "${SUBNET6[$((3 - i))]}")" ] || return 1; done; }
wait_for 10 programmed || fail "IPv6 routes not programmed: $(ip -n "$(node_ns 1)" -6 route show proto 252 | tr '\n' ';')"
# peers DEV I: node I's peers on DEV, from /metrics
peers() { http_get "$2" /metrics; grep -c "^weft_wireguard_peer_last_handshake_seconds{device=\"$1\"" <<<"$HTTP_BODY"; }

for i in 1 2; do
	ns=$(node_ns "$i") j=$((3 - i))
	for dev in weft-wg weft-wg-v6; do
		ip -n "$ns" link show "$dev" >/dev/null 2>&1 || { check_fail "node$i has no $dev"; continue; }
		assert_eq "$(ip -n "$ns" -j link show "$dev" | jq -r '.[0].mtu')" 1420 "node$i $dev MTU (1500 - 80)"
		assert_eq "$(peers "$dev" "$i")" 1 "node$i peers on $dev"
	done
	assert_eq "$(lease_var "$i" WEFT_MTU)" 1420 "node$i pod MTU (1500 - 80: IPv6 endpoints)"
	for port in 51820 51821; do
		ip netns exec "$ns" ss -Hluan "sport = :$port" | grep_q . || check_fail "node$i: nothing listens on UDP $port"
	done
	for s in weft-wg weft-wg-v6; do
		[ -S "$(node_dir "$i")/wg/$s.sock" ] || check_fail "node$i has no UAPI socket $s.sock"
	done
	assert_eq "$(lease_value "$i" | jq -r '.publicIPv6 // empty')" "$(ip6_of "$i")" "node$i lease publicIPv6"
	assert_eq "$(route_to "$i" "${SUBNET[$j]}")" "- weft-wg " "node$i IPv4 route to node$j"
	assert_eq "$(route6_to "$i" "${SUBNET6[$j]}")" weft-wg-v6 "node$i IPv6 route to node$j"
	assert_eq "$(ip -n "$ns" -6 -j addr show dev weft-wg-v6 scope global | jq -r '[.[0].addr_info[] | select(.local) | "\(.local)/\(.prefixlen)"] | join(" ")')" \
		"${SUBNET6[$i]%/*}/128" "node$i weft-wg-v6 address"
	assert_eq "$(ip -n "$ns" -6 -j addr show dev weft-wg scope global | jq -r '[.[].addr_info[]? | select(.local)] | length')" 0 \
		"node$i weft-wg has no IPv6 address"
done

# ---- pods with both families
for i in 1 2; do
	pod_create "$i"
	# what the CNI plugin does on ADD (pod_forwarding_enable), in the node namespace this test made
	ip netns exec "$(node_ns "$i")" sysctl -qw net.ipv6.conf.all.forwarding=1
	gw6=$(lease_var "$i" WEFT_SUBNET6)
	ip -n "$(node_ns "$i")" addr add "$gw6" dev cni0 nodad
	ip -n "$(pod_ns "$i")" addr add "${POD6[$i]}/64" dev eth0 nodad
	ip -n "$(pod_ns "$i")" -6 route add default via "${gw6%/*}"
	assert_eq "$(ip -n "$(pod_ns "$i")" -j link show eth0 | jq -r '.[0].mtu')" 1420 "pod$i MTU"
done

ip netns exec "$UL_NS" tcpdump -i br0 -n -U -s 0 -w "$T/ul.pcap" >"$T/tcpdump.log" 2>&1 &
TCPDUMP_PID=$!
wait_for 5 grep -q "listening on br0" "$T/tcpdump.log" || fail "tcpdump did not start: $(cat "$T/tcpdump.log")"
wait_for 10 ip netns exec "$(pod_ns 1)" ping -6 -c1 -W1 "${POD6[2]}" || check_fail "pod1 -> pod2 over IPv6 (${POD6[2]})"
ip netns exec "$(pod_ns 2)" ping -6 -c1 -W2 "${POD6[1]}" >/dev/null 2>&1 || check_fail "pod2 -> pod1 over IPv6 (${POD6[1]})"
assert_ping "$(pod_ns 1)" "$(pod_ip 2)"
assert_ping "$(pod_ns 2)" "$(pod_ip 1)"

MARKER=weft-wireguard-v6-marker-$$-plaintext
# listen6 NS PORT OUT: accepts one TCP connection over IPv6, writes "<peer address> <data>" to OUT
listen6() {
	ip netns exec "$1" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1]))); s.listen(1); s.settimeout(15)
c, a = s.accept(); c.settimeout(5); d = b""
while True:
    x = c.recv(65535)
    if not x: break
    d += x
open(sys.argv[2], "w").write("%s %s\n" % (a[0], d.decode()[:80]))' "$2" "$3" &
	LISTEN_PID=$!
	wait_listen "$1" "$2"
}
send6() { # send6 NS DST PORT: MARKER x20 over one IPv6 TCP connection
	ip netns exec "$1" python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); s.sendall(sys.argv[3].encode() * 20); s.close()' "$2" "$3" "$MARKER"
}
listen6 "$(pod_ns 2)" 8096 "$T/t6"
send6 "$(pod_ns 1)" "${POD6[2]}" 8096 || check_fail "TCP pod1 -> pod2 over IPv6 failed"
wait "$LISTEN_PID" || true
assert_eq "$(cut -d' ' -f1 "$T/t6" 2>/dev/null)" "${POD6[1]}" "TCP pod1 -> pod2 over IPv6 keeps the pod address"
grep -qF "$MARKER" "$T/t6" || check_fail "TCP pod1 -> pod2 over IPv6 did not carry the marker"
# control: the marker sent in clear between the nodes' own IPv6 underlay addresses
listen6 "$(node_ns 2)" 8097 "$T/c6"
send6 "$(node_ns 1)" "$(ip6_of 2)" 8097 || check_fail "the control connection failed"
wait "$LISTEN_PID" || true
sleep 1
kill "$TCPDUMP_PID"
wait "$TCPDUMP_PID" 2>/dev/null || true

internode="ip6 and src net fd99::/64 and dst net fd99::/64"
count() { tcpdump -r "$T/ul.pcap" -n "$1" 2>/dev/null | wc -l; }
pods6="$internode and not (host $(ip6_of 1) and host $(ip6_of 2) and tcp port 8097) and not icmp6"
n_wg=$(count "$pods6 and udp port 51821")
n_other=$(count "$pods6 and not udp port 51821")
n_marker_wg=$(tcpdump -r "$T/ul.pcap" -n -w - "$pods6" 2>/dev/null | grep -caF "$MARKER" || true)
n_marker_all=$(grep -caF "$MARKER" "$T/ul.pcap" || true)
info "underlay capture: inter-node IPv6 ($pods6): $n_wg packets UDP port 51821, $n_other other; marker there: $n_marker_wg, in the whole capture (control in clear): $n_marker_all"
((n_wg > 0)) || check_fail "no WireGuard packets over IPv6 (UDP 51821) between the nodes"
assert_eq "$n_other" 0 "inter-node IPv6 packets that are not UDP port 51821 (neighbour discovery aside)"
assert_eq "$n_marker_wg" 0 "the marker in inter-node IPv6 underlay traffic"
((n_marker_all > 0)) || check_fail "control: the marker sent in clear is not in the capture"

# ---- weftd uninstall removes both devices
weftd_stop 2
assert_eq "$WEFTD_RC" 0 "node2 exit status after SIGTERM"
weftd_cmd 2 uninstall >"$T/uninstall.log" 2>&1 || check_fail "weftd uninstall failed: $(cat "$T/uninstall.log")"
for dev in weft-wg weft-wg-v6; do
	gone() { ! ip -n "$(node_ns 2)" link show "$1" >/dev/null 2>&1; }
	wait_for 5 gone "$dev" || check_fail "uninstall left $dev on node2"
done
weftd_stop 1
assert_eq "$WEFTD_RC" 0 "node1 exit status after SIGTERM"
finish
