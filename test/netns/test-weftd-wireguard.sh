#!/usr/bin/env bash
# The wireguard backend: 3 nodes on one underlay, etcd in its own namespace, one pod per node.
#
#   [pod1]--cni0--(node1: weft-wg, UDP 51820)--eth0 -+                 +- eth0--(node3 ...)--[pod3]
#                                                   br0 (underlay 10.99.0.0/24, in w-ul-PID)
#   [pod2]--cni0--(node2: weft-wg, UDP 51820)--eth0 -+-- etcd 10.99.0.2 -- outside 10.99.0.200
#
# Each weftd runs in a private mount namespace whose /run/wireguard is the node's own directory:
# wireguard-go's UAPI socket directory is compiled in, and three nodes' weft-wg.sock must not meet.
#
# Checks: weft-wg has MTU 1500 - 60 and the subnet's address; one route per remote subnet
# "dev weft-wg"; each lease publishes a distinct 32-byte public key, the private key file is 0600
# and never in the log; pod <-> pod ping, TCP (pod address kept) and UDP across nodes; a marker
# sent pod to pod never appears on the underlay bridge while every inter-node IP packet there is
# UDP to or from port 51820 (control: the same marker sent to a host outside the cluster does
# appear, so the capture sees plaintext when there is some); hostile leases (garbage key, all-zero
# key, node1's key, node2's key again) are refused and counted and add no peer; --rotate-key on
# node2: a new key in its lease and the pods reach it again within seconds; a node that leaves has
# its peer removed on the others.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/wireguard-lib.sh"
require_root
require_cmd ip jq curl etcd etcdctl python3 ping tcpdump unshare
require_built "$WEFTD"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v wireguard-go >/dev/null || skip "wireguard-go is not installed (and the test does not use the kernel module)"

# weftd in a private mount namespace with the node's own /run/wireguard (wireguard-lib.sh)
wg_private_run_wrapper

cluster_init 3 wireguard
for i in 1 2 3; do weftd_start "$i"; done
weftd_wait_ready 1 2 3

SUB=$ETCD_PREFIX/subnets
declare -A SUBNET KEY
for i in 1 2 3; do SUBNET[$i]=$(node_subnet "$i"); done
lease_value() { etcdctl_ get "$SUB/${SUBNET[$1]/\//-}" --print-value-only; }
pubkey() { lease_value "$1" | jq -r '.publicKey // empty'; }
metric() { http_get "$1" /metrics; sed -n "s/^$2 //p" <<<"$HTTP_BODY"; }
peers() { http_get "$1" /metrics; grep -c '^weft_wireguard_peer_last_handshake_seconds{' <<<"$HTTP_BODY"; }
is() { [ "$("${@:2}")" = "$1" ]; }
three_routes() { local i; for i in 1 2 3; do [ "$(routes_weft "$i" | wc -l)" = 2 ] || return 1; done; }
wait_for 10 three_routes || fail "cluster not programmed: $(routes_weft 1 | tr '\n' ';')"

for i in 1 2 3; do
	ns=$(node_ns "$i")
	KEY[$i]=$(pubkey "$i")
	[ "${#KEY[$i]}" = 44 ] || check_fail "node$i lease has no 44-character publicKey: $(lease_value "$i")"
	assert_eq "$(lease_value "$i" | jq -r .backend)" wireguard "node$i lease backend"
	assert_eq "$(lease_var "$i" WEFT_MTU)" 1440 "node$i lease MTU (1500 - 60)"
	wglink=$(ip -n "$ns" -j link show weft-wg)
	assert_eq "$(jq -r '.[0].mtu' <<<"$wglink")" 1440 "node$i weft-wg MTU"
	assert_eq "$(jq -r '.[0].flags | index("UP") != null' <<<"$wglink")" true "node$i weft-wg up"
	assert_eq "$(ip -n "$ns" -j addr show dev weft-wg | jq -r '[.[0].addr_info[] | select(.family == "inet") | "\(.local)/\(.prefixlen)"] | join(" ")')" \
		"$(vtep_ip "$i")/32" "node$i weft-wg address"
	for j in 1 2 3; do
		[ "$i" = "$j" ] || assert_eq "$(route_to "$i" "${SUBNET[$j]}")" "- weft-wg " "node$i route to node$j"
	done
	keyfile=$(node_dir "$i")/state/wireguard.key
	assert_eq "$(stat -c %a "$keyfile")" 600 "node$i private key mode"
	grep -qF "$(head -c 43 "$keyfile")" "$(node_dir "$i")/weftd.log" && check_fail "node$i logged its private key"
	http_get "$i" '/healthz?verbose'
	grep -q "wireguard driver: wireguard-go" <<<"$HTTP_BODY" || check_fail "node$i /healthz?verbose does not name the driver: $HTTP_BODY"
	assert_eq "$(metric "$i" 'weft_wireguard_driver{driver="wireguard-go"}')" 1 "node$i /metrics names the driver"
	assert_eq "$(peers "$i")" 2 "node$i has 2 peers"
done
assert_eq "$(printf '%s\n' "${KEY[@]}" | sort -u | wc -l)" 3 "three distinct public keys"

# ---- datapath, captured on the underlay bridge
for i in 1 2 3; do pod_create "$i"; done
ip netns exec "$UL_NS" tcpdump -i br0 -n -U -s 0 -w "$T/ul.pcap" >"$T/tcpdump.log" 2>&1 &
TCPDUMP_PID=$!
wait_for 5 grep -q "listening on br0" "$T/tcpdump.log" || fail "tcpdump did not start: $(cat "$T/tcpdump.log")"
pods_ping_all 3
seen=$(seen_peer "$(pod_ns 2)" "$(pod_ip 2)" 8081 "$(pod_ns 1)")
assert_eq "$seen" "$(pod_ip 1)" "TCP pod1 -> pod2 keeps the pod address"
seen=$(seen_peer "$(pod_ns 1)" "$(pod_ip 1)" 8082 "$(pod_ns 3)")
assert_eq "$seen" "$(pod_ip 3)" "TCP pod3 -> pod1 keeps the pod address"
MARKER=weft-wireguard-marker-$$-plaintext
# send_marker NS DST PORT PROTO: MARKER in one datagram / TCP stream from NS to DST:PORT
send_marker() {
	ip netns exec "$1" python3 -c '
import socket, sys
dst, port, proto, m = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].encode() * 20
if proto == "udp":
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(m, (dst, port))
else:
    s = socket.create_connection((dst, port), timeout=5); s.sendall(m); s.close()' "$2" "$3" "$4" "$MARKER"
}
ip netns exec "$(pod_ns 2)" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 9001)); s.settimeout(float(sys.argv[2]))
try:
    d, a = s.recvfrom(65535); open(sys.argv[1], "w").write("%s %s\n" % (a[0], d.decode()[:40]))
except socket.timeout:
    open(sys.argv[1], "w").write("none\n")' "$T/u1" "$((15 * WEFT_TEST_SLACK))" &
RECV_PID=$!
wait_listen "$(pod_ns 2)" 9001 udp
send_marker "$(pod_ns 3)" "$(pod_ip 2)" 9001 udp
wait "$RECV_PID"
assert_eq "$(cat "$T/u1")" "$(pod_ip 3) ${MARKER}${MARKER:0:$((40 - ${#MARKER}))}" "UDP pod3 -> pod2 (the marker)"
ip netns exec "$(pod_ns 2)" python3 -c '
import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 8090)); s.listen(1)
c, a = s.accept(); open("'"$T/t1"'", "wb").write(c.recv(65535))' &
RECV_PID=$!
wait_listen "$(pod_ns 2)" 8090
send_marker "$(pod_ns 1)" "$(pod_ip 2)" 8090 tcp
wait "$RECV_PID"
grep -qF "$MARKER" "$T/t1" || check_fail "TCP pod1 -> pod2 did not carry the marker"
# control: the marker to a host outside the cluster crosses the underlay in clear (masqueraded)
ip netns exec "$OUT_NS" python3 -c '
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 9009)); s.settimeout(10); s.recvfrom(65535)' &
RECV_PID=$!
wait_listen "$OUT_NS" 9009 udp
send_marker "$(pod_ns 1)" "$OUTSIDE_IP" 9009 udp
wait "$RECV_PID" || check_fail "the control datagram did not reach the outside host"
sleep 1
kill "$TCPDUMP_PID"
wait "$TCPDUMP_PID" 2>/dev/null || true
nodes="host $(node_ip 1) or host $(node_ip 2) or host $(node_ip 3)"
internode="ip and src net $CLUSTER_UNDERLAY.0/24 and dst net $CLUSTER_UNDERLAY.0/24 and not host $ETCD_IP and not host $OUTSIDE_IP and ($nodes)"
count() { tcpdump -r "$T/ul.pcap" -n "$1" 2>/dev/null | wc -l; }
bytes() { tcpdump -r "$T/ul.pcap" -n -w - "$1" 2>/dev/null | wc -c; }
n_wg=$(count "$internode and udp port 51820")
n_other=$(count "$internode and not udp port 51820")
n_marker_wg=$(tcpdump -r "$T/ul.pcap" -n -w - "$internode" 2>/dev/null | grep -caF "$MARKER" || true)
n_marker_all=$(grep -caF "$MARKER" "$T/ul.pcap" || true)
info "underlay capture: $(count ip) IP packets; inter-node ($internode): $n_wg packets ($(bytes "$internode and udp port 51820") pcap bytes) UDP port 51820, $n_other other; marker in inter-node traffic: $n_marker_wg, in the whole capture (control to the outside host): $n_marker_all"
((n_wg > 0)) || check_fail "no WireGuard packets between the nodes on the underlay"
assert_eq "$n_other" 0 "inter-node packets that are not UDP port 51820"
assert_eq "$n_marker_wg" 0 "the marker in inter-node underlay traffic"
((n_marker_all > 0)) || check_fail "control: the marker sent in clear to the outside host is not in the capture"

# ---- hostile leases: each refused, counted, and no peer for it
ALL_ZERO=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
rejected() { metric "$1" "weft_leases_rejected_total{reason=\"$2\"}"; }
atleast() { local v; v=$(rejected "$1" "$2"); [ -n "$v" ] && ((v >= $3)); } # atleast I REASON N
# expect_rejected REASON N I...: node I counts REASON at least N times
expect_rejected() {
	local r=$1 n=$2 i
	shift 2
	for i in "$@"; do
		wait_for 5 atleast "$i" "$r" "$n" || check_fail "node$i: reason $r counted $(rejected "$i" "$r") times, want >= $n"
	done
}
hostile() { # hostile SUBNET NODE IP KEY
	etcdctl_ put "$SUB/$1" "$(printf '{"backend":"wireguard","node":"%s","publicIP":"%s","publicKey":"%s"}' "$2" "$3" "$4")" >/dev/null
}
hostile 10.244.201.0-24 evil1 "$CLUSTER_UNDERLAY.71" "not-a-key"
hostile 10.244.202.0-24 evil2 "$CLUSTER_UNDERLAY.72" "$ALL_ZERO"
expect_rejected public_key 2 1 2 3
hostile 10.244.203.0-24 evil3 "$CLUSTER_UNDERLAY.73" "${KEY[1]}" # node1's own key: younger than node1's lease
expect_rejected public_key 3 1
expect_rejected duplicate_public_key 1 2 3
hostile 10.244.204.0-24 evil4 "$CLUSTER_UNDERLAY.74" "${KEY[2]}"
expect_rejected duplicate_public_key 2 3
expect_rejected duplicate_public_key 1 1
for i in 1 2 3; do
	assert_eq "$(peers "$i")" 2 "node$i still has exactly 2 peers after the hostile leases"
	assert_eq "$(routes_weft "$i" | wc -l)" 2 "node$i still has exactly 2 routes after the hostile leases"
done
assert_ping "$(pod_ns 1)" "$(pod_ip 2)"
for s in 201 202 203 204; do etcdctl_ del "$SUB/10.244.$s.0-24" >/dev/null; done

# ---- key rotation on node2
weftd_stop 2
t0=$(date +%s%N)
weftd_start 2 --rotate-key
weftd_wait_ready 2
newkey() { local k; k=$(pubkey 2); [ -n "$k" ] && [ "$k" != "${KEY[2]}" ]; }
wait_for 5 newkey || fail "node2's lease still has the old key after --rotate-key"
grep -q "replaced the key pair" "$(node_dir 2)/weftd.log" || check_fail "node2 did not log the rotation"
reach() { ip netns exec "$(pod_ns "$1")" ping -c1 -W1 "$(pod_ip "$2")" >/dev/null; }
wait_for 10 reach 1 2 || check_fail "pod1 -> pod2 not back within 10 s of the rotation"
wait_for 10 reach 3 2 || check_fail "pod3 -> pod2 not back within 10 s of the rotation"
info "--rotate-key on node2: pods 1 and 3 reach pod2 again after $((($(date +%s%N) - t0) / 1000000)) ms"
assert_ping "$(pod_ns 2)" "$(pod_ip 1)"
for i in 1 3; do assert_eq "$(peers "$i")" 2 "node$i has 2 peers after node2's rotation (the old key removed)"; done

# ---- node3 leaves: its peer goes on the others
weftd_stop 3
for i in 1 2; do
	wait_for 10 is 1 peers "$i" || check_fail "node$i still has $(peers "$i") peers 10 s after node3 left"
	wait_for 5 is "" route_to "$i" "${SUBNET[3]}" || check_fail "node$i still routes node3's subnet"
done
assert_ping "$(pod_ns 1)" "$(pod_ip 2)"

# ---- weftd uninstall on node3 removes its WireGuard device (and so ends its wireguard-go)
ip -n "$(node_ns 3)" link show weft-wg >/dev/null 2>&1 || check_fail "node3 has no weft-wg before uninstall"
weftd_cmd 3 uninstall >"$T/uninstall.log" 2>&1 || check_fail "weftd uninstall failed: $(cat "$T/uninstall.log")"
ip -n "$(node_ns 3)" link show weft-wg >/dev/null 2>&1 && check_fail "uninstall left weft-wg on node3"

for i in 1 2; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status after SIGTERM"
done
finish
