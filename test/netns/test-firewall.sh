#!/usr/bin/env bash
# firewall plugin chained after bridge: ADD → CHECK → DEL → DEL → GC, fw-* objects in table
# inet weft, forwarding through a node whose forward policy is drop, ingressPolicy same-bridge,
# bad input.
#
#   pod1, pod4 ── br0 10.40.0.1/24 ─┐
#   pod2 ──────── br1 10.41.0.1/24 ─┼─ node ("host" netns) ── up0 192.0.2.1 ── "out" netns 192.0.2.2
#   pod3 ──────── br2 10.42.0.1/24 ─┘   br1, br2: ingressPolicy same-bridge
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip nft jq ping
require_plugins firewall bridge

HOSTNS=$(mk_netns host)
STORE=$T/store

fw_elems() { ip netns exec "$HOSTNS" nft -j list ruleset | jq -r '[.nftables[] | select(.set?.name? | tostring | test("^fw-pods")) | .set.elem[]? | "\(.elem.val) \(.elem.comment)"] | sort | .[]' | tr '\n' ';'; }
brconf() { jq -c -n --arg s "$STORE" --arg b "$1" --arg n "$2" '{"cniVersion":"1.0.0","name":"fwnet","type":"bridge","bridge":$b,
	"isGateway":true,"isDefaultGateway":true,"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":$n}]]}}'; }

# An "outside" host behind the node. (An nftables accept cannot override a drop in another
# base chain, so unlike the reference's iptables rules ours do not open a FORWARD policy DROP.)
mk_outside "$HOSTNS" >/dev/null

FW='{"cniVersion":"1.0.0","name":"fwnet","type":"firewall","backend":"iptables","iptablesAdminChainName":"MY-ADMIN"}'

info "ADD bridge + firewall"
P1=$(mk_netns pod1)
hcni_ok bridge ADD c1 "$P1" eth0 "$(brconf br0 10.40.0.0/24)"
PREV1=$CNI_OUT
hcni_ok firewall ADD c1 "$P1" eth0 "$(with_prev "$FW" "$PREV1")"
assert_eq "$(jq -S -c . <<<"$CNI_OUT")" "$(jq -S -c . <<<"$PREV1")" "prevResult passed through"
assert_eq "$(fw_elems)" "10.40.0.2 fwnet/c1/eth0;" "pod IP in fw-pods4 with the attachment comment"
assert_eq "$(ip netns exec "$HOSTNS" nft -j list chain inet weft fw-forward | jq -r '.nftables[] | .chain? // empty | "\(.hook) \(.prio) \(.policy)"')" \
	"forward 0 accept" "fw-forward: filter forward priority 0"

info "traffic: pod → outside host through the node"
assert_ping "$P1" 192.0.2.2
ip netns exec "$HOSTNS" nft -j list chain inet weft fw-forward | jq -e '[.nftables[] | .rule? // empty] | length == 5' >/dev/null ||
	check_fail "fw-forward should hold 5 rules"

info "CHECK"
hcni_ok firewall CHECK c1 "$P1" eth0 "$(with_prev "$FW" "$PREV1")"
ip netns exec "$HOSTNS" nft delete element inet weft fw-pods4 '{ 10.40.0.2 }'
hcni_err 999 "10.40.0.2" firewall CHECK c1 "$P1" eth0 "$(with_prev "$FW" "$PREV1")"
hcni_ok firewall ADD c1 "$P1" eth0 "$(with_prev "$FW" "$PREV1")"
hcni_err 7 "prevResult" firewall CHECK c1 "$P1" eth0 "$FW"

info "ingressPolicy same-bridge: two isolated bridges cannot reach each other; the open bridge still can"
ISO=$(jq -c '.ingressPolicy = "same-bridge" | .backend = "nftables"' <<<"$FW")
P2=$(mk_netns pod2)
P3=$(mk_netns pod3)
hcni_ok bridge ADD c2 "$P2" eth0 "$(brconf br1 10.41.0.0/24)"
PREV2=$CNI_OUT
hcni_ok firewall ADD c2 "$P2" eth0 "$(with_prev "$ISO" "$PREV2")"
hcni_ok bridge ADD c3 "$P3" eth0 "$(brconf br2 10.42.0.0/24)"
PREV3=$CNI_OUT
hcni_ok firewall ADD c3 "$P3" eth0 "$(with_prev "$ISO" "$PREV3")"
assert_eq "$(ip netns exec "$HOSTNS" nft -j list set inet weft fw-isolated | jq -r '[.nftables[] | .set? // empty | .elem[]] | sort | join(",")')" "br1,br2" \
	"isolated bridges"
assert_no_ping "$P2" 10.42.0.2
assert_no_ping "$P3" 10.41.0.2
assert_ping "$P1" 10.41.0.2
assert_ping "$P2" 192.0.2.2

info "DEL, DEL again, DEL with the netns gone"
hcni_ok firewall DEL c1 "$P1" eth0 "$(with_prev "$FW" "$PREV1")"
[[ "$(fw_elems)" != *c1/eth0* ]] || check_fail "c1 elements survived DEL: $(fw_elems)"
hcni_ok firewall DEL c1 "$P1" eth0 "$FW"
ip netns del "$P3"
hcni_ok firewall DEL c3 "/run/netns/$P3" eth0 "$ISO"
[[ "$(fw_elems)" != *c3/eth0* ]] || check_fail "c3 elements survived DEL without netns"

info "GC (1.1.0): c2 valid, forgotten c4 collected, other networks untouched"
P4=$(mk_netns pod4)
hcni_ok bridge ADD c4 "$P4" eth0 "$(brconf br0 10.40.0.0/24)"
hcni_ok firewall ADD c4 "$P4" eth0 "$(with_prev "$FW" "$CNI_OUT")"
hcni_ok firewall ADD o1 "$P4" eth1 "$(with_prev '{"cniVersion":"1.0.0","name":"othernet","type":"firewall"}' '{"cniVersion":"1.0.0","ips":[{"address":"fd00:99::5/64"}]}')"
hcni_ok firewall GC "" "" "" '{"cniVersion":"1.1.0","name":"fwnet","type":"firewall","cni.dev/valid-attachments":[{"containerID":"c2","ifname":"eth0"}]}'
assert_eq "$(fw_elems)" "10.41.0.2 fwnet/c2/eth0;fd00:99::5 othernet/o1/eth1;" "GC kept c2 and the other network"
hcni_ok firewall STATUS "" "" "" '{"cniVersion":"1.1.0","name":"fwnet","type":"firewall"}'

info "bad input"
hcni_err 7 "firewalld" firewall ADD c9 "$P4" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"fwnet","type":"firewall","backend":"firewalld"}' "$PREV1")"
hcni_err 7 "ebtables" firewall ADD c9 "$P4" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"fwnet","type":"firewall","backend":"ebtables"}' "$PREV1")"
hcni_err 7 "strict" firewall ADD c9 "$P4" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"fwnet","type":"firewall","ingressPolicy":"strict"}' "$PREV1")"
hcni_err 7 "prevResult" firewall ADD c9 "$P4" eth0 "$FW"
hcni_err 7 "bridge plugin" firewall ADD c9 "$P4" eth0 "$(with_prev "$ISO" '{"cniVersion":"1.0.0","ips":[{"address":"10.9.0.9/24"}]}')"
[[ "$(fw_elems)" != *c9/* ]] || check_fail "failed ADDs left elements: $(fw_elems)"

hcni_ok firewall DEL c2 "$P2" eth0 "$ISO"
hcni_ok firewall DEL c4 "$P4" eth0 "$FW"
hcni_ok firewall DEL o1 "$P4" eth1 '{"cniVersion":"1.0.0","name":"othernet","type":"firewall"}'
assert_eq "$(fw_elems)" "" "no elements left"
finish
