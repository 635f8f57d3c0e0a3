#!/usr/bin/env bash
# bandwidth plugin chained after bridge: ADD → CHECK → DEL → DEL → GC, tbf/ifb/mirred visible in
# the kernel, measured rates with iperf3 (both directions), bad input, DEL without a netns.
#
#   pod (eth0 10.30.0.x) ──veth──► br0 10.30.0.1 (namespace "host" plays the node)
#       ingress limit: tbf root qdisc on the host veth
#       egress  limit: host veth ingress qdisc ─u32/mirred─► ifb bwp<hash> ─ tbf
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip tc jq iperf3
require_plugins bandwidth bridge

HOSTNS=$(mk_netns host)
ip -n "$HOSTNS" link add probeifb0 type ifb 2>/dev/null || skip "kernel has no ifb"
ip -n "$HOSTNS" link del probeifb0
STORE=$T/store

BR=$(jq -c -n --arg s "$STORE" '{"cniVersion":"1.0.0","name":"bwnet","type":"bridge","bridge":"br0","isGateway":true,
	"ipam":{"type":"host-local","dataDir":$s,"ranges":[[{"subnet":"10.30.0.0/24"}]]}}')
# 8 Mbit/s each way, 20 kB bursts.
BW=$(jq -c -n '{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth","ingressRate":8000000,"ingressBurst":160000,
	"egressRate":8000000,"egressBurst":160000}')

P=$(mk_netns pod)
hcni_ok bridge ADD c1 "$P" eth0 "$BR"
PREV=$CNI_OUT
VETH=$(jqr '.interfaces[1].name' "$PREV")

info "ADD"
hcni_ok bandwidth ADD c1 "$P" eth0 "$(with_prev "$BW" "$PREV")"
R=$CNI_OUT
IFB=$(jqr '.interfaces[-1].name' "$R")
[[ $IFB =~ ^bwp[0-9a-f]{12}$ ]] || check_fail "ifb name '$IFB' is not bwp+12 hex"
assert_eq "$(jqr '.interfaces | length' "$R")" 4 "prevResult's 3 interfaces + the ifb"
assert_eq "$(jqr '.ips' "$R")" "$(jqr '.ips' "$PREV")" "ips passed through"
assert_eq "$(ip -n "$HOSTNS" -j link show "$IFB" | jq -r '.[0].address')" "$(jqr '.interfaces[-1].mac' "$R")" "ifb MAC in result"
Q=$(tc -n "$HOSTNS" -j qdisc show dev "$VETH")
assert_eq "$(jq -r '.[] | select(.root) | .kind' <<<"$Q")" tbf "tbf is the host veth's root qdisc"
assert_eq "$(jq -r '.[] | select(.root) | .options.rate' <<<"$Q")" 1000000 "tbf rate 1 MB/s"
assert_eq "$(jq -r '[.[] | select(.kind=="ingress")] | length' <<<"$Q")" 1 "ingress qdisc on the host veth"
assert_eq "$(tc -n "$HOSTNS" -j qdisc show dev "$IFB" | jq -r '.[] | select(.root) | .kind')" tbf "tbf on the ifb"
F=$(tc -n "$HOSTNS" -j filter show dev "$VETH" ingress)
assert_eq "$(jq -r '[.[] | select(.kind=="u32") | .options.actions[]? | select(.kind=="mirred") | .to_dev] | unique | .[0]' <<<"$F")" "$IFB" \
	"u32 filter redirects to the ifb"

# The reference's CHECK accepts what we installed and ours accepts the same values.
hcni_ok bandwidth CHECK c1 "$P" eth0 "$(with_prev "$BW" "$R")"
if [ -x "$REF_BIN/bandwidth" ]; then
	BIN=$REF_BIN hcni bandwidth CHECK c1 "$P" eth0 "$(with_prev "$BW" "$R")"
	[ "$CNI_RC" = 0 ] || check_fail "the reference's CHECK rejects our qdiscs: $CNI_OUT"
fi

info "traffic: iperf3 both ways, limited to ≤ 1.2 × 8 Mbit/s"
ip netns exec "$HOSTNS" iperf3 -s -1 -D -B 10.30.0.1 --logfile "$T/iperf-s1.log"
sleep 0.5
ip netns exec "$P" iperf3 -c 10.30.0.1 -t 2 -J >"$T/eg.json" || true
EG=$(jq -r '.end.sum_received.bits_per_second // 0 | floor' "$T/eg.json")
[ "$EG" != 0 ] || info "iperf3 egress: $(jq -c '.error // .' "$T/eg.json" | head -c 300)" 
ip netns exec "$HOSTNS" iperf3 -s -1 -D -B 10.30.0.1 --logfile "$T/iperf-s2.log"
sleep 0.5
ip netns exec "$P" iperf3 -c 10.30.0.1 -t 2 -R -J >"$T/in.json" || true
IN=$(jq -r '.end.sum_received.bits_per_second // 0 | floor' "$T/in.json")
[ "$IN" != 0 ] || info "iperf3 ingress: $(jq -c '.error // .' "$T/in.json" | head -c 300)" 
info "egress ${EG} bit/s, ingress ${IN} bit/s"
((EG > 1000000 && EG <= 9600000)) || check_fail "egress rate $EG bit/s not within (1M, 9.6M]"
((IN > 1000000 && IN <= 9600000)) || check_fail "ingress rate $IN bit/s not within (1M, 9.6M]"

info "CHECK notices a changed rate"
ip netns exec "$HOSTNS" tc qdisc replace dev "$VETH" root tbf rate 2mbit burst 20k latency 25ms
hcni_err 999 "Rate doesn't match" bandwidth CHECK c1 "$P" eth0 "$(with_prev "$BW" "$R")"
hcni_err 7 "prevResult" bandwidth CHECK c1 "$P" eth0 "$BW"

info "DEL, DEL again"
hcni_ok bandwidth DEL c1 "$P" eth0 "$(with_prev "$BW" "$R")"
ip -n "$HOSTNS" link show "$IFB" >/dev/null 2>&1 && check_fail "ifb $IFB survived DEL"
assert_eq "$(tc -n "$HOSTNS" -j qdisc show dev "$VETH" | jq -r '[.[] | select(.kind=="tbf" or .kind=="ingress")] | length')" 0 \
	"no tbf/ingress qdisc left on the veth"
hcni_ok bandwidth DEL c1 "$P" eth0 "$(with_prev "$BW" "$R")"
assert_ping "$P" 10.30.0.1

info "runtimeConfig.bandwidth (egress only), then DEL with the netns gone"
RC=$(jq -c -n '{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth","capabilities":{"bandwidth":true},
	"runtimeConfig":{"bandwidth":{"egressRate":4000000,"egressBurst":80000}}}')
hcni_ok bandwidth ADD c1 "$P" eth0 "$(with_prev "$RC" "$PREV")"
IFB2=$(jqr '.interfaces[-1].name')
assert_eq "$IFB2" "$IFB" "same ifb name for the same network + container"
assert_eq "$(tc -n "$HOSTNS" -j qdisc show dev "$IFB" | jq -r '.[] | select(.root) | .options.rate')" 500000 "egress 4 Mbit/s"
assert_eq "$(tc -n "$HOSTNS" -j qdisc show dev "$VETH" | jq -r '[.[] | select(.root and .kind=="tbf")] | length')" 0 "no ingress tbf"
hcni_ok bandwidth ADD c1 "$P" eth0 "$(with_prev "$RC" "$PREV")"
assert_eq "$(tc -n "$HOSTNS" -j filter show dev "$VETH" ingress | jq '[.[] | select(.options.actions)] | length')" 1 \
	"a repeated ADD does not stack filters"
hcni_ok bandwidth CHECK c1 "$P" eth0 "$(with_prev "$RC" "$CNI_OUT")"
hcni_ok bridge DEL c1 "$P" eth0 "$BR"
ip netns del "$P"
hcni_ok bandwidth DEL c1 "$(nspath "$P")" eth0 "$(with_prev "$RC" "$PREV")"
ip -n "$HOSTNS" link show "$IFB" >/dev/null 2>&1 && check_fail "ifb $IFB survived DEL without netns"

info "no limits: prevResult passes through unchanged"
P2=$(mk_netns pod2)
hcni_ok bridge ADD c2 "$P2" eth0 "$BR"
PREV2=$CNI_OUT
hcni_ok bandwidth ADD c2 "$P2" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth"}' "$PREV2")"
assert_eq "$(jq -S -c . <<<"$CNI_OUT")" "$(jq -S -c . <<<"$PREV2")" "unchanged prevResult"

info "bad input: right code, names the key, nothing left behind"
LINKS_BEFORE=$(links_in "$HOSTNS")
hcni_err 7 "ingressBurst" bandwidth ADD c2 "$P2" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth","ingressRate":1000000}' "$PREV2")"
hcni_err 7 "egressRate" bandwidth ADD c2 "$P2" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth","egressBurst":1000000}' "$PREV2")"
hcni_err 7 "4GB" bandwidth ADD c2 "$P2" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth","egressRate":1000,"egressBurst":40000000000}' "$PREV2")"
hcni_err 7 "ingressRate" bandwidth ADD c2 "$P2" eth0 "$(with_prev '{"cniVersion":"1.0.0","name":"bwnet","type":"bandwidth","ingressRate":-1,"ingressBurst":1}' "$PREV2")"
hcni_err 7 "prevResult" bandwidth ADD c2 "$P2" eth0 "$BW"
hcni_err 999 "eth9" bandwidth ADD c2 "$P2" eth9 "$(with_prev "$BW" "$PREV2")"
assert_eq "$(links_in "$HOSTNS")" "$LINKS_BEFORE" "no ifb left behind by failed ADDs"

info "GC and STATUS (1.1.0) succeed"
hcni_ok bandwidth GC "" "" "" '{"cniVersion":"1.1.0","name":"bwnet","type":"bandwidth","cni.dev/valid-attachments":[]}'
hcni_ok bandwidth STATUS "" "" "" '{"cniVersion":"1.1.0","name":"bwnet","type":"bandwidth"}'
hcni_ok bridge DEL c2 "$P2" eth0 "$BR"
finish
