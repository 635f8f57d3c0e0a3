#!/usr/bin/env bash
# dhcp IPAM plugin + `dhcp daemon` against a real DHCP server (dnsmasq), all inside namespaces.
#
#   lan:  br0 10.77.0.1/24, dnsmasq (range .50-.99, option 3 + 121, T1 10 s / T2 20 s)
#          └── lan0 ══ veth ══ up0 ──┐
#   node: cni-dhcp0 (bridge plugin) ─┤   `dhcp daemon -socketpath $T/dhcp.sock` runs here
#   pod1, pod2, pod3: eth0 ──veth────┘   bridge plugin with "ipam":{"type":"dhcp"}
#
# ADD gets an address from the range with the routes of option 121; pods reach the server;
# the lease is renewed at T1 (dnsmasq's lease file shows a later expiry); CHECK; DEL sends
# DHCPRELEASE (the lease leaves dnsmasq's file); DEL again; GC releases what is not listed;
# a pod namespace deleted without DEL does not hurt the daemon; no daemon -> clear errors.
# dnsmasq enforces a 2-minute minimum lease, so renewal is driven by T1 (option 58) instead
# of a 30 s lease; the test takes about 20 s.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping dnsmasq
require_plugins dhcp bridge

LAN=$(mk_netns lan)
NODE=$(mk_netns node)
# shellcheck disable=SC2034 # where lib.sh's hcni runs the plugins
HOSTNS=$NODE
SOCK=$T/dhcp.sock
LEASES=$T/dnsmasq.leases

ip -n "$LAN" link add br0 type bridge
ip -n "$LAN" addr add 10.77.0.1/24 dev br0
ip -n "$LAN" link set br0 up
ip -n "$LAN" link add lan0 type veth peer name up0 netns "$NODE"
ip -n "$LAN" link set lan0 master br0 up
ip -n "$NODE" link add cni-dhcp0 type bridge
ip -n "$NODE" link set cni-dhcp0 up
ip -n "$NODE" link set up0 master cni-dhcp0 up

touch "$LEASES"
ip netns exec "$LAN" dnsmasq --keep-in-foreground --conf-file=/dev/null --port=0 --user=root \
	--interface=br0 --bind-interfaces --no-ping --dhcp-authoritative \
	--dhcp-range=10.77.0.50,10.77.0.99,255.255.255.0,30s \
	--dhcp-option=3,10.77.0.1 \
	--dhcp-option=121,10.99.0.0/16,10.77.0.1,0.0.0.0/0,10.77.0.1 \
	--dhcp-option=option:T1,10 --dhcp-option=option:T2,20 \
	--dhcp-leasefile="$LEASES" --pid-file="$T/dnsmasq.pid" --log-dhcp --log-facility="$T/dnsmasq.log" &
DNSMASQ_PID=$!
on_exit "kill $DNSMASQ_PID; wait $DNSMASQ_PID"

start_daemon() {
	ip netns exec "$NODE" env ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" WEFT_LOG_LEVEL=debug \
		"$WEFT_BIN/dhcp" daemon -socketpath "$SOCK" -timeout 8s -pidfile "$T/daemon.pid" >>"$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
	for _ in $(seq 50); do [ -S "$SOCK" ] && return 0; sleep 0.1; done
	cat "$T/daemon.log"; fail "dhcp daemon did not start"
}
stop_daemon() {
	kill "$DAEMON_PID" 2>/dev/null || true
	wait "$DAEMON_PID" 2>/dev/null || true
}
start_daemon
on_exit 'stop_daemon'

# shellcheck disable=SC2034 # a failing hcni_ok shows the end of the daemon's log
HCNI_LOG=$T/daemon.log
lease_of() { awk -v ip="$1" '$3 == ip {print $1}' "$LEASES"; }

CONF=$(jq -nc --arg sock "$SOCK" '{cniVersion:"1.0.0",name:"dhcpnet",type:"bridge",bridge:"cni-dhcp0",
	ipam:{type:"dhcp",daemonSocketPath:$sock,provide:[{option:"host-name",fromArg:"K8S_POD_NAME"}]}}')
IPAM=$(jq -c '.type = "dhcp" | del(.bridge)' <<<"$CONF")

info "ADD two pods through the bridge plugin"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
T0=$SECONDS
hcni_ok bridge ADD c1 "$P1" eth0 "$CONF" "IgnoreUnknown=1;K8S_POD_NAME=pod-one"
R1=$CNI_OUT
hcni_ok bridge ADD c2 "$P2" eth0 "$CONF"
R2=$CNI_OUT
info "two ADDs took $((SECONDS - T0)) s"
A1=$(jqr '.ips[0].address' "$R1")
A2=$(jqr '.ips[0].address' "$R2")
IP1=${A1%/*}
IP2=${A2%/*}
[[ $A1 =~ ^10\.77\.0\.([5-9][0-9])/24$ ]] || check_fail "pod1 address $A1 not in 10.77.0.50-99/24"
[[ $A2 =~ ^10\.77\.0\.([5-9][0-9])/24$ ]] || check_fail "pod2 address $A2 not in 10.77.0.50-99/24"
assert_ne "$IP1" "$IP2" "two pods got the same address"
assert_eq "$(jqr '.ips[0].gateway' "$R1")" 10.77.0.1 "gateway from option 3"
assert_eq "$(jqr '[.routes[] | "\(.dst) \(.gw)"] | sort | tostring' "$R1")" \
	'["0.0.0.0/0 10.77.0.1","10.99.0.0/16 10.77.0.1"]' "routes from option 121"
assert_eq "$(ip -n "$P1" -j addr show dev eth0 | jq -r '.[0].addr_info[] | select(.family=="inet") | "\(.local)/\(.prefixlen)"')" \
	"$A1" "address on pod1 eth0"
assert_eq "$(ip -n "$P1" -j route show 10.99.0.0/16 | jq -r '.[0].gateway')" 10.77.0.1 "option 121 route in pod1"
assert_ping "$P1" 10.77.0.1
assert_ping "$P2" 10.77.0.1
assert_ping "$P1" "$IP2"
[ -n "$(lease_of "$IP1")" ] || check_fail "dnsmasq has no lease for $IP1"
grep -q "pod-one" "$LEASES" || check_fail "host-name from K8S_POD_NAME (provide/fromArg) not in dnsmasq's lease: $(cat "$LEASES")"
# dnsmasq writes the client identifier as hex: type 0, then "c1/dhcpnet/eth0".
CLID="00$(printf '%s' c1/dhcpnet/eth0 | od -An -v -tx1 | tr -d '\n' | tr -s ' ' ':')"
grep -q "$CLID" "$LEASES" || check_fail "client id $CLID not in dnsmasq's lease file: $(cat "$LEASES")"

info "ADD retried for an attachment that holds a lease returns the same lease"
hcni_ok dhcp ADD c1 "$P1" eth0 "$IPAM"
assert_eq "$(jqr '.ips[0].address')" "$A1" "repeated ADD"

info "CHECK"
hcni_ok bridge CHECK c1 "$P1" eth0 "$(with_prev "$CONF" "$R1")"
hcni_ok dhcp CHECK c1 "$P1" eth0 "$(with_prev "$IPAM" "$R1")"
hcni_err 999 "not in prevResult" dhcp CHECK c1 "$P1" eth0 "$(with_prev "$IPAM" "$R2")"
hcni_err 999 "no DHCP lease held" dhcp CHECK c9 "$P1" eth0 "$IPAM"

info "a pod namespace deleted without DEL"
P3=$(mk_netns pod3)
hcni_ok bridge ADD c3 "$P3" eth0 "$CONF"
ip netns del "$P3"

info "renewal at T1 (10 s): dnsmasq's expiry for pod1 moves forward"
E1=$(lease_of "$IP1")
sleep 13
E2=$(lease_of "$IP1")
if [ -z "$E2" ] || [ "$E2" -le "$E1" ]; then check_fail "lease of $IP1 not renewed (expiry $E1 -> ${E2:-gone})"; fi
grep -q "DHCPREQUEST(br0) $IP1" "$T/dnsmasq.log" || check_fail "no renewing DHCPREQUEST in dnsmasq's log"
grep -q "c3/dhcpnet/eth0: dropping the lease" "$T/daemon.log" || check_fail "daemon did not drop the lease of the deleted pod"
hcni_ok dhcp STATUS "" "" "" "$(jq -c '.cniVersion = "1.1.0"' <<<"$IPAM")"
assert_ping "$P1" 10.77.0.1

info "DEL releases (DHCPRELEASE), DEL again is fine"
hcni_ok bridge DEL c1 "$P1" eth0 "$CONF"
for _ in $(seq 20); do [ -z "$(lease_of "$IP1")" ] && break; sleep 0.1; done
[ -z "$(lease_of "$IP1")" ] || check_fail "dnsmasq still holds $IP1 after DEL"
grep -q "DHCPRELEASE(br0) $IP1" "$T/dnsmasq.log" || check_fail "no DHCPRELEASE for $IP1 in dnsmasq's log"
hcni_ok bridge DEL c1 "$P1" eth0 "$CONF"
hcni_ok dhcp DEL c1 "$P1" eth0 "$IPAM"

info "GC releases attachments not in the valid list"
GC=$(jq -c '.cniVersion = "1.1.0" | .["cni.dev/valid-attachments"] = [{containerID:"c1",ifname:"eth0"}]' <<<"$IPAM")
hcni_ok dhcp GC "" "" "" "$GC"
for _ in $(seq 20); do [ -z "$(lease_of "$IP2")" ] && break; sleep 0.1; done
[ -z "$(lease_of "$IP2")" ] || check_fail "GC did not release $IP2"
hcni_err 999 "no DHCP lease held" dhcp CHECK c2 "$P2" eth0 "$IPAM"

info "bad config"
hcni_err 7 "ipam.provide[0]" dhcp ADD c5 "$P2" eth0 "$(jq -c '.ipam.provide = [{option:"no-such-option",value:"x"}]' <<<"$IPAM")"
hcni_err 7 "ipam.request" dhcp ADD c5 "$P2" eth0 "$(jq -c '.ipam.request = "1"' <<<"$IPAM")"
hcni_err 999 "error looking up" dhcp ADD c5 "$P2" nosuch0 "$IPAM"

info "no daemon: ADD fails naming the socket, STATUS 50, DEL succeeds"
stop_daemon
[ ! -e "$SOCK" ] || check_fail "daemon left its socket behind"
[ ! -e "$T/daemon.pid" ] || check_fail "daemon left its pidfile behind"
hcni_err 999 "error dialing DHCP daemon: dial unix $SOCK" dhcp ADD c4 "$P2" eth0 "$IPAM"
hcni_err 999 "error dialing DHCP daemon" bridge ADD c4 "$P2" eth1 "$CONF"
hcni_err 50 "$SOCK" dhcp STATUS "" "" "" "$(jq -c '.cniVersion = "1.1.0"' <<<"$IPAM")"
hcni_ok dhcp DEL c4 "$P2" eth0 "$IPAM"
grep -E "ERROR|runtime error|AddressSanitizer" "$T/daemon.log" && check_fail "daemon reported errors"

finish
