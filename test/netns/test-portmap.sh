#!/usr/bin/env bash
# portmap plugin, chained after our bridge plugin: ADD → CHECK → DEL → DEL → GC with real TCP/UDP
# traffic from another machine, from the node itself (own address and 127.0.0.1) and from pods
# (hairpin), hostIP restriction, DEL without netns, GC, and every bad config it can get.
#
#   client (eth0 192.168.60.2/24 fd00:60::2/64)
#      │ veth
#   host: up0 192.168.60.1/24 + 192.168.60.10/24 (hostIP) fd00:60::1/64   (plays the node)
#         br0 10.30.0.1/24 fd00:30::1/64 ── pod1 (10.30.0.2), pod2 (10.30.0.3), pod3, pod4
#
# The plugins run inside the "host" namespace (ip netns exec), never in the real root namespace.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip nft jq nc timeout
require_plugins bridge portmap host-local

HOSTNS=$(mk_netns host)
CLIENT=$(mk_netns client)
STORE=$T/store
# shellcheck disable=SC2034 # the CNI_PATH of lib.sh's hcni
IPAM_PATH=$WEFT_BIN
SERVERS=()
# shellcheck disable=SC2016 # expanded at exit, on purpose
on_exit 'for p in "${SERVERS[@]}"; do kill "$p"; done'

ip -n "$HOSTNS" link add up0 type veth peer name eth0 netns "$CLIENT"
ip -n "$HOSTNS" addr add 192.168.60.1/24 dev up0
ip -n "$HOSTNS" addr add 192.168.60.10/24 dev up0
ip -n "$HOSTNS" addr add fd00:60::1/64 dev up0 nodad
ip -n "$HOSTNS" link set up0 up
ip -n "$CLIENT" addr add 192.168.60.2/24 dev eth0
ip -n "$CLIENT" addr add fd00:60::2/64 dev eth0 nodad
ip -n "$CLIENT" link set eth0 up

BRCONF=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"pmnet","type":"bridge","bridge":"br0",
	"isDefaultGateway":true,"ipMasq":true,"hairpinMode":true,
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.30.0.0/24"}],[{"subnet":"fd00:30::/64"}]]}}')
# pmconf PREVRESULT MAPPINGS [EXTRA]: the chained portmap config, as libcni would build it
pmconf() {
	jq -c -n --argjson r "$1" --argjson m "$2" --argjson x "${3:-{\}}" \
		'{"cniVersion":"1.0.0","name":"pmnet","type":"portmap","runtimeConfig":{"portMappings":$m},"prevResult":$r} + $x'
}
# pm_elems: comments of every pm-* map/set element, sorted
pm_elems() {
	ip netns exec "$HOSTNS" nft -j list table inet weft 2>/dev/null | jq -r '.nftables[] | (.map // .set) // empty
		| select(.name | startswith("pm-")) | .elem[]? | (if type == "array" then .[0] else . end) | .elem.comment // empty' |
		sort | tr '\n' ' '
}

# serve NS PORT TOKEN [udp] [6]: a one-shot listener answering TOKEN
serve() {
	local ns=$1 port=$2 token=$3 u=${4:-} six=${5:-}
	ip netns exec "$ns" timeout 8 nc ${u:+-u} ${six:+-6} -l "$port" <<<"$token" >/dev/null 2>&1 &
	SERVERS+=($!)
	wait_listen "$ns" "$port" ${u:+udp} || true
}
stop_servers() { for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; SERVERS=(); }
# talk NS ADDR PORT [udp]: connect and print what the server said
talk() {
	if [ "${4:-}" = udp ]; then
		echo ping | ip netns exec "$1" timeout 4 nc -u -w1 "$2" "$3" 2>/dev/null || true
	else
		ip netns exec "$1" timeout 4 nc -w2 -N "$2" "$3" </dev/null 2>/dev/null || true
	fi
}
# reach FROM ADDR PORT POD PODPORT [udp] [6]: FROM reaches the listener in POD through ADDR:PORT
reach() {
	local tok="tok-$RANDOM"
	serve "$4" "$5" "$tok" "${6:-}" "${7:-}"
	local got
	got=$(talk "$1" "$2" "$3" "${6:-}")
	stop_servers
	[ "$got" = "$tok" ] || check_fail "$1 → $2:$3 ${6:-tcp} did not reach $4:$5 (got '$got')"
}
no_reach() {
	local tok="tok-$RANDOM"
	serve "$4" "$5" "$tok" "${6:-}" "${7:-}"
	local got
	got=$(talk "$1" "$2" "$3" "${6:-}")
	stop_servers
	[ "$got" != "$tok" ] || check_fail "$1 → $2:$3 ${6:-tcp} unexpectedly reached $4:$5"
}

MAPS='[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},
       {"hostPort":5353,"containerPort":53,"protocol":"udp"},
       {"hostPort":9090,"containerPort":90,"protocol":"tcp","hostIP":"192.168.60.10"}]'

info "ADD: bridge, then portmap chained on its result"
P1=$(mk_netns pod1)
P2=$(mk_netns pod2)
hcni_ok bridge ADD c1 "$P1" eth0 "$BRCONF"
R1=$CNI_OUT
hcni_ok bridge ADD c2 "$P2" eth0 "$BRCONF"
R2=$CNI_OUT
PM1=$(pmconf "$R1" "$MAPS")
hcni_ok portmap ADD c1 "$P1" eth0 "$PM1"
assert_eq "$(jq -S . <<<"$CNI_OUT")" "$(jq -S . <<<"$R1")" "ADD passes prevResult through"
assert_eq "$(pm_elems)" "pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 " \
	"elements: 2 dnat4 + 2 dnat6 + 1 hostip4 + 2 masq4 + 2 masq6"
assert_eq "$(ip netns exec "$HOSTNS" cat /proc/sys/net/ipv4/conf/br0/route_localnet)" 1 "route_localnet on br0 (snat)"

# The bridge's IPv6 gateway (and link-local) addresses go through DAD first: until then the pods
# cannot resolve their router. Wait for it rather than race it.
for _ in $(seq 50); do
	[ -z "$(ip -n "$HOSTNS" -6 addr show dev br0 tentative)" ] && break
	sleep 0.1
done

info "traffic from a client on the node's network"
reach "$CLIENT" 192.168.60.1 8080 "$P1" 80
reach "$CLIENT" fd00:60::1 8080 "$P1" 80 "" 6
reach "$CLIENT" 192.168.60.1 5353 "$P1" 53 udp
reach "$CLIENT" 192.168.60.10 9090 "$P1" 90
no_reach "$CLIENT" 192.168.60.1 9090 "$P1" 90
no_reach "$CLIENT" 192.168.60.1 8081 "$P1" 80

info "traffic from the node itself: its own addresses and 127.0.0.1 (snat)"
reach "$HOSTNS" 192.168.60.1 8080 "$P1" 80
reach "$HOSTNS" 10.30.0.1 8080 "$P1" 80
reach "$HOSTNS" 127.0.0.1 8080 "$P1" 80
reach "$HOSTNS" 192.168.60.10 9090 "$P1" 90

info "hairpin: the pod to its own hostPort, a neighbour pod to it"
reach "$P1" 10.30.0.1 8080 "$P1" 80
reach "$P1" 192.168.60.1 8080 "$P1" 80
reach "$P2" 192.168.60.1 8080 "$P1" 80

info "CHECK"
hcni portmap CHECK c1 "$P1" eth0 "$PM1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after ADD failed: $CNI_OUT"
ip netns exec "$HOSTNS" nft delete element inet weft pm-dnat4 '{ tcp . 8080 }'
hcni_err 999 "tcp 8080 -> 10.30.0.2:80" portmap CHECK c1 "$P1" eth0 "$PM1"
hcni_ok portmap ADD c1 "$P1" eth0 "$PM1"
hcni portmap CHECK c1 "$P1" eth0 "$PM1"
[ "$CNI_RC" = 0 ] || check_fail "CHECK after re-ADD failed: $CNI_OUT"
hcni_err 7 "prevResult" portmap CHECK c1 "$P1" eth0 "$(jq -c 'del(.prevResult)' <<<"$PM1")"

info "another pod takes over a hostPort (last ADD wins); the loser's DEL leaves it alone"
PM2=$(pmconf "$R2" '[{"hostPort":8080,"containerPort":80},{"hostPort":8081,"containerPort":81}]')
hcni_ok portmap ADD c2 "$P2" eth0 "$PM2"
reach "$CLIENT" 192.168.60.1 8080 "$P2" 80
hcni_err 999 "another attachment" portmap CHECK c1 "$P1" eth0 "$PM1"
hcni_ok portmap DEL c1 "$P1" eth0 "$PM1"
reach "$CLIENT" 192.168.60.1 8080 "$P2" 80
reach "$CLIENT" 192.168.60.1 8081 "$P2" 81
[[ "$(pm_elems)" != *c1/eth0* ]] || check_fail "elements of c1 survived DEL: $(pm_elems)"
hcni portmap CHECK c2 "$P2" eth0 "$PM2"
[ "$CNI_RC" = 0 ] || check_fail "CHECK of c2 failed: $CNI_OUT"

info "DEL: the mapping is gone; DEL again"
hcni_ok portmap DEL c2 "$P2" eth0 "$PM2"
no_reach "$CLIENT" 192.168.60.1 8080 "$P2" 80
no_reach "$HOSTNS" 127.0.0.1 8081 "$P2" 81
assert_eq "$(pm_elems)" "" "no elements after DEL"
hcni_ok portmap DEL c2 "$P2" eth0 "$PM2"
hcni_ok portmap DEL c2 "$P2" eth0 "$(jq -c 'del(.prevResult) | del(.runtimeConfig)' <<<"$PM2")"

info "DEL with the pod's netns gone"
P3=$(mk_netns pod3)
hcni_ok bridge ADD c3 "$P3" eth0 "$BRCONF"
PM3=$(pmconf "$CNI_OUT" '[{"hostPort":7070,"containerPort":70}]')
hcni_ok portmap ADD c3 "$P3" eth0 "$PM3"
[[ "$(pm_elems)" == *c3/eth0* ]] || check_fail "no elements for c3"
ip netns del "$P3"
hcni_ok portmap DEL c3 "/run/netns/$P3" eth0 "$PM3"
hcni_ok bridge DEL c3 "/run/netns/$P3" eth0 "$BRCONF"
assert_eq "$(pm_elems)" "" "DEL without netns removed c3's elements"

info "GC (1.1.0): c2 valid, c1 collected"
hcni_ok portmap ADD c1 "$P1" eth0 "$(pmconf "$R1" '[{"hostPort":8080,"containerPort":80}]')"
hcni_ok portmap ADD c2 "$P2" eth0 "$(pmconf "$R2" '[{"hostPort":8082,"containerPort":82}]')"
GC=$(jq -c -n '{"cniVersion":"1.1.0","name":"pmnet","type":"portmap",
	"cni.dev/valid-attachments":[{"containerID":"c2","ifname":"eth0"}]}')
OTHER=$(jq -c '.name = "othernet"' <<<"$(pmconf "$R1" '[{"hostPort":6060,"containerPort":60}]')")
hcni_ok portmap ADD c9 "$P1" eth0 "$OTHER"
hcni_ok portmap GC "" "" "" "$GC"
[[ "$(pm_elems)" != *pmnet/c1/eth0* ]] || check_fail "GC left c1's elements: $(pm_elems)"
[[ "$(pm_elems)" == *pmnet/c2/eth0* ]] || check_fail "GC removed the valid c2's elements"
[[ "$(pm_elems)" == *othernet/c9/eth0* ]] || check_fail "GC removed another network's elements"
no_reach "$CLIENT" 192.168.60.1 8080 "$P1" 80
reach "$CLIENT" 192.168.60.1 8082 "$P2" 82
hcni_ok portmap DEL c2 "$P2" eth0 "$GC"
hcni_ok portmap DEL c9 "$P1" eth0 "$OTHER"
assert_eq "$(pm_elems)" "" "no elements left"

info "no portMappings: prevResult passed through, nothing installed"
hcni_ok portmap ADD c1 "$P1" eth0 "$(jq -c 'del(.runtimeConfig)' <<<"$PM1")"
assert_eq "$(jq -S . <<<"$CNI_OUT")" "$(jq -S . <<<"$R1")" "result = prevResult"
R1OLD=$(jq -c '.cniVersion = "0.4.0"' <<<"$R1")
hcni_ok portmap ADD c1 "$P1" eth0 "$(jq -c '.cniVersion = "0.4.0" | del(.runtimeConfig)' <<<"$(pmconf "$R1OLD" '[]')")"
assert_eq "$(jqr .cniVersion)" "0.4.0" "result in the config's version"
assert_eq "$(pm_elems)" "" "nothing installed"

info "snat=false: no masq elements, still forwarded from outside"
hcni_ok portmap ADD c1 "$P1" eth0 "$(pmconf "$R1" '[{"hostPort":8080,"containerPort":80}]' '{"snat":false}')"
assert_eq "$(pm_elems)" "pmnet/c1/eth0 pmnet/c1/eth0 " "dnat4 + dnat6 only"
reach "$CLIENT" 192.168.60.1 8080 "$P1" 80
hcni_ok portmap DEL c1 "$P1" eth0 "$PM1"

info "masqAll: one catch-all snat element per address; CHECK passes"
MA=$(pmconf "$R1" '[{"hostPort":8080,"containerPort":80}]' '{"masqAll":true}')
hcni_ok portmap ADD c1 "$P1" eth0 "$MA"
assert_eq "$(pm_elems)" "pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 pmnet/c1/eth0 " "dnat4/6 + masq4/6"
hcni portmap CHECK c1 "$P1" eth0 "$MA"
[ "$CNI_RC" = 0 ] || check_fail "CHECK with masqAll failed: $CNI_OUT"
reach "$HOSTNS" 127.0.0.1 8080 "$P1" 80
hcni_ok portmap DEL c1 "$P1" eth0 "$MA"

info "bad configs: code 7 naming key and value, nothing left in nft"
BASE=$(pmconf "$R1" '[{"hostPort":8080,"containerPort":80}]')
hcni_err 7 "prevResult" portmap ADD cbad "$P1" eth0 "$(jq -c 'del(.prevResult)' <<<"$BASE")"
hcni_err 7 'protocol "icmp"' portmap ADD cbad "$P1" eth0 "$(pmconf "$R1" '[{"hostPort":8080,"containerPort":80,"protocol":"icmp"}]')"
hcni_err 7 "hostPort" portmap ADD cbad "$P1" eth0 "$(pmconf "$R1" '[{"hostPort":0,"containerPort":80}]')"
hcni_err 7 "containerPort" portmap ADD cbad "$P1" eth0 "$(pmconf "$R1" '[{"hostPort":8080,"containerPort":70000}]')"
hcni_err 7 "hostIP" portmap ADD cbad "$P1" eth0 "$(pmconf "$R1" '[{"hostPort":8080,"containerPort":80,"hostIP":"1.2.3"}]')"
hcni_err 7 '"conditionsV4" ["-s","1.2.3.4"]' portmap ADD cbad "$P1" eth0 "$(jq -c '.conditionsV4 = ["-s","1.2.3.4"]' <<<"$BASE")"
hcni_err 7 "conditionsV6" portmap ADD cbad "$P1" eth0 "$(jq -c '.conditionsV6 = "x"' <<<"$BASE")"
hcni_err 7 '"markMasqBit": 32' portmap ADD cbad "$P1" eth0 "$(jq -c '.markMasqBit = 32' <<<"$BASE")"
hcni_err 7 "externalSetMarkChain" portmap ADD cbad "$P1" eth0 "$(jq -c '.markMasqBit = 5 | .externalSetMarkChain = "X"' <<<"$BASE")"
hcni_err 7 '"backend": "ebpf"' portmap ADD cbad "$P1" eth0 "$(jq -c '.backend = "ebpf"' <<<"$BASE")"
hcni_err 7 '"snat": "yes"' portmap ADD cbad "$P1" eth0 "$(jq -c '.snat = "yes"' <<<"$BASE")"
assert_eq "$(pm_elems)" "" "no elements after failed ADDs"
# accepted: empty conditions, both backends, markMasqBit in range
for x in '{"conditionsV4":[],"conditionsV6":null}' '{"backend":"iptables"}' '{"backend":"nftables","markMasqBit":0}'; do
	hcni_ok portmap ADD cok "$P1" eth0 "$(jq -c --argjson x "$x" '. + $x' <<<"$BASE")"
	hcni_ok portmap DEL cok "$P1" eth0 "$BASE"
done
assert_eq "$(pm_elems)" "" "no elements left at the end"

hcni_ok bridge DEL c1 "$P1" eth0 "$BRCONF"
hcni_ok bridge DEL c2 "$P2" eth0 "$BRCONF"
finish
