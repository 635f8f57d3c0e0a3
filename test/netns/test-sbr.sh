#!/usr/bin/env bash
# sbr chained after bridge on a pod's second interface: ADD → CHECK → DEL → DEL → GC, rule and
# table in the pod, replies to a remote host leave through the interface they came in on.
#
#                 ┌ eth0 10.50.0.2 ── br0 10.50.0.1 ─┐
#   pod ──────────┤  (default route)                 ├─ node ("host" netns) ── 192.0.2.1 ── "out" 192.0.2.2
#                 └ eth1 10.51.0.2 ── br1 10.51.0.1 ─┘
#   sbr on eth1: ip rule from 10.51.0.2 lookup 100; table 100: default via 10.51.0.1, 10.51.0.0/24
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_plugins sbr bridge

HOSTNS=$(mk_netns host)
STORE=$T/store

brconf() { jq -c -n --arg s "$STORE" --arg b "$1" --arg n "$2" --argjson d "$3" '{"cniVersion":"1.0.0","name":$b,"type":"bridge",
	"bridge":$b,"isGateway":true,"isDefaultGateway":$d,"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":$n}]]}}'; }
txp() { ip -n "$P" -s -j link show "$1" | jq '.[0].stats64.tx.packets'; }

OUT=$(mk_outside "$HOSTNS")
# Asymmetric replies are fine for the node: the test looks at where the pod sends them.
ip netns exec "$HOSTNS" sysctl -qw net.ipv4.conf.all.rp_filter=0

P=$(mk_netns pod)
hcni_ok bridge ADD c1 "$P" eth0 "$(brconf br0 10.50.0.0/24 true)"
hcni_ok bridge ADD c1 "$P" eth1 "$(brconf br1 10.51.0.0/24 false)"
PREV=$CNI_OUT
SBR='{"cniVersion":"1.0.0","name":"br1","type":"sbr"}'

info "before sbr: replies to 192.0.2.2 for 10.51.0.2 leave via eth0 (main table default route)"
B0=$(txp eth0) B1=$(txp eth1)
ip netns exec "$OUT" ping -c3 -i0.2 -W2 10.51.0.2 >/dev/null || check_fail "out → 10.51.0.2 before sbr"
(($(txp eth0) - B0 >= 3)) || check_fail "before sbr replies should leave via eth0"

info "ADD"
hcni_ok sbr ADD c1 "$P" eth1 "$(with_prev "$SBR" "$PREV")"
assert_eq "$(jq -S -c . <<<"$CNI_OUT")" "$(jq -S -c . <<<"$PREV")" "prevResult passed through"
assert_eq "$(ip -n "$P" -j rule show | jq -r '.[] | select(.src=="10.51.0.2") | "\(.table)"')" 100 "rule from 10.51.0.2 lookup 100"
assert_eq "$(ip -n "$P" -j route show table 100 | jq -r '[.[] | "\(.dst) \(.gateway // "-") \(.dev)"] | sort | join(",")')" \
	"10.51.0.0/24 - eth1,default 10.51.0.1 eth1" "table 100: subnet and default via eth1"
assert_eq "$(ip -n "$P" -j route show dev eth1 | jq length)" 0 "eth1 routes moved out of main"
assert_eq "$(ip -n "$P" -j route get 192.0.2.2 from 10.51.0.2 | jq -r '.[0].dev')" eth1 "route get from 10.51.0.2 → eth1"
assert_eq "$(ip -n "$P" -j route get 192.0.2.2 | jq -r '.[0].dev')" eth0 "other sources still use eth0"

info "traffic: replies leave through the interface they came in on"
B0=$(txp eth0) B1=$(txp eth1)
ip netns exec "$OUT" ping -c3 -i0.2 -W2 10.51.0.2 >/dev/null || check_fail "out → 10.51.0.2 after sbr"
(($(txp eth1) - B1 >= 3)) || check_fail "replies for 10.51.0.2 should leave via eth1 ($(($(txp eth1) - B1)) packets)"
(($(txp eth0) - B0 < 3)) || check_fail "replies for 10.51.0.2 still leave via eth0"
assert_ping "$OUT" 10.50.0.2

info "CHECK"
hcni_ok sbr CHECK c1 "$P" eth1 "$(with_prev "$SBR" "$PREV")"
ip -n "$P" rule del from 10.51.0.2 lookup 100
hcni_err 999 "from 10.51.0.2" sbr CHECK c1 "$P" eth1 "$(with_prev "$SBR" "$PREV")"
ip -n "$P" rule add from 10.51.0.2 lookup 100
hcni_err 7 "prevResult" sbr CHECK c1 "$P" eth1 "$SBR"

info "a second sbr interface gets the next free table"
hcni_ok bridge ADD c1 "$P" eth2 "$(brconf br2 10.52.0.0/24 false)"
hcni_ok sbr ADD c1 "$P" eth2 "$(with_prev '{"cniVersion":"1.0.0","name":"br2","type":"sbr"}' "$CNI_OUT")"
assert_eq "$(ip -n "$P" -j rule show | jq -r '.[] | select(.src=="10.52.0.2") | "\(.table)"')" 101 "rule from 10.52.0.2 lookup 101"

info "DEL, DEL again"
hcni_ok sbr DEL c1 "$P" eth1 "$(with_prev "$SBR" "$PREV")"
assert_eq "$(ip -n "$P" -j rule show | jq -r '[.[] | select(.src=="10.51.0.2")] | length')" 0 "rule removed"
assert_eq "$(ip -n "$P" -j route show table 100 | jq length)" 0 "table 100 emptied"
assert_eq "$(ip -n "$P" -j rule show | jq -r '[.[] | select(.src=="10.52.0.2")] | length')" 1 "eth2's rule untouched"
hcni_ok sbr DEL c1 "$P" eth1 "$(with_prev "$SBR" "$PREV")"
hcni_ok sbr DEL c1 "$P" eth9 "$SBR"

info "GC and STATUS (1.1.0) succeed"
hcni_ok sbr GC "" "" "" '{"cniVersion":"1.1.0","name":"br1","type":"sbr","cni.dev/valid-attachments":[]}'
hcni_ok sbr STATUS "" "" "" '{"cniVersion":"1.1.0","name":"br1","type":"sbr"}'

info "bad input leaves nothing behind"
RULES=$(ip -n "$P" -j rule show | jq -c .)
hcni_err 7 "prevResult" sbr ADD c1 "$P" eth1 "$SBR"
hcni_err 999 "eth7" sbr ADD c1 "$P" eth7 "$(with_prev "$SBR" "$PREV")"
hcni_err 4 "CNI_NETNS" sbr ADD c1 "/run/netns/nope-$$" eth1 "$(with_prev "$SBR" "$PREV")"
assert_eq "$(ip -n "$P" -j rule show | jq -c .)" "$RULES" "rules unchanged by failed ADDs"

info "DEL with the netns gone"
ip netns del "$P"
hcni_ok sbr DEL c1 "/run/netns/$P" eth2 "$SBR"
finish
