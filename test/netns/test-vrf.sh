#!/usr/bin/env bash
# vrf chained plugin: ADD creates the VRF (first free table, or "table"), enslaves the interface,
# keeps its addresses and moves its routes into the VRF table; a second pod interface joins
# the same VRF; CHECK; DEL releases and deletes the VRF when empty; DEL again; bad config.
#
#   pod: eth0 ──veth── peer0 (ns "peer", 10.30.0.1)        eth1 ──veth── peer1
#        eth0, eth1 in VRF "blue"
#
# Needs the kernel's vrf link kind: skips (77) with the reason where it is missing.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_kind vrf
require_plugins vrf

POD=$(mk_netns pod)
PEER=$(mk_netns peer)
ip -n "$POD" link add eth0 type veth peer name peer0 netns "$PEER"
ip -n "$POD" link add eth1 type veth peer name peer1 netns "$PEER"
ip -n "$POD" addr add 10.30.0.2/24 dev eth0
ip -n "$POD" addr add fd00:30::2/64 dev eth0 nodad
ip -n "$POD" link set eth0 up
ip -n "$POD" link set eth1 up
ip -n "$POD" route add 10.99.0.0/16 via 10.30.0.1 dev eth0
ip -n "$PEER" addr add 10.30.0.1/24 dev peer0
ip -n "$PEER" link set peer0 up
ip -n "$PEER" link set peer1 up

PREV='{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"x"}],"ips":[{"address":"10.30.0.2/24","interface":0}]}'
CONF=$(jq -c --argjson p "$PREV" '{cniVersion:"1.0.0",name:"vrfnet",type:"vrf",vrfname:"blue",prevResult:$p}' <<<'{}')

info "ADD creates the VRF and enslaves eth0"
cni_ok vrf ADD c1 "$POD" eth0 "$CONF"
assert_eq "$(jqr '.ips[0].address')" 10.30.0.2/24 "prevResult passed through"
assert_eq "$(ip -n "$POD" -j -d link show blue | jq -r '.[0].linkinfo.info_kind')" vrf "VRF created"
TABLE=$(ip -n "$POD" -j -d link show blue | jq -r '.[0].linkinfo.info_data.table')
assert_eq "$TABLE" 1 "first free table"
assert_eq "$(ip -n "$POD" -j link show eth0 | jq -r '.[0].master')" blue "eth0 enslaved"
assert_eq "$(ip -n "$POD" -j addr show dev eth0 | jq -r '[.[0].addr_info[] | select(.scope=="global") | .local] | sort | join(",")')" \
	"10.30.0.2,fd00:30::2" "addresses kept"
assert_eq "$(ip -n "$POD" -j route show table "$TABLE" 10.99.0.0/16 | jq -r '.[0].gateway')" 10.30.0.1 "route moved to the VRF table"
ip netns exec "$POD" ping -c1 -W2 -I blue 10.30.0.1 >/dev/null || check_fail "ping through the VRF failed"

info "CHECK, ADD again (idempotent), a second interface"
cni_ok vrf CHECK c1 "$POD" eth0 "$CONF"
cni_ok vrf ADD c1 "$POD" eth0 "$CONF"
cni_ok vrf ADD c2 "$POD" eth1 "$CONF"
assert_eq "$(ip -n "$POD" -j link show eth1 | jq -r '.[0].master')" blue "eth1 enslaved"
cni_err 7 vrf ADD c3 "$POD" eth1 "$(jq -c '.table = 77' <<<"$CONF")"
cni_err 999 vrf CHECK c1 "$POD" eth0 "$(jq -c '.vrfname = "red"' <<<"$CONF")"

info "explicit table on a new VRF"
cni_ok vrf ADD c4 "$POD" eth1 "$(jq -c '.vrfname = "green" | .table = 500' <<<"$CONF")"
assert_eq "$(ip -n "$POD" -j -d link show green | jq -r '.[0].linkinfo.info_data.table')" 500 "table from config"
assert_eq "$(ip -n "$POD" -j link show eth1 | jq -r '.[0].master')" green "eth1 moved to green"
cni_ok vrf DEL c4 "$POD" eth1 "$(jq -c '.vrfname = "green" | .table = 500' <<<"$CONF")"
ip -n "$POD" link show green >/dev/null 2>&1 && check_fail "empty VRF green not deleted"

info "DEL: the VRF stays while a port is left, goes with the last one"
cni_ok vrf DEL c1 "$POD" eth0 "$CONF"
assert_eq "$(ip -n "$POD" -j link show eth0 | jq -r '.[0].master // "none"')" none "eth0 released"
ip -n "$POD" link show blue >/dev/null 2>&1 || check_fail "VRF deleted while a port was left"
cni_ok vrf ADD c2 "$POD" eth1 "$CONF"
cni_ok vrf DEL c2 "$POD" eth1 "$CONF"
ip -n "$POD" link show blue >/dev/null 2>&1 && check_fail "empty VRF blue not deleted"
cni_ok vrf DEL c2 "$POD" eth1 "$CONF"
cni_ok vrf DEL c2 "" eth1 "$CONF"

info "bad input"
cni_err 7 vrf ADD c1 "$POD" eth0 "$(jq -c 'del(.vrfname)' <<<"$CONF")"
cni_err 7 vrf ADD c1 "$POD" eth0 "$(jq -c '.vrfname = "a/b"' <<<"$CONF")"
cni_err 7 vrf ADD c1 "$POD" eth0 "$(jq -c '.table = "x"' <<<"$CONF")"
cni_err 7 vrf ADD c1 "$POD" eth0 "$(jq -c 'del(.prevResult)' <<<"$CONF")"
cni_err 999 vrf ADD c1 "$POD" nosuch "$CONF"
ip -n "$POD" link show blue >/dev/null 2>&1 && check_fail "failed ADD left VRF blue behind"
ip -n "$POD" link add blue type dummy
cni_err 999 vrf ADD c1 "$POD" eth0 "$CONF"

finish
