#!/usr/bin/env bash
# bridge plugin under concurrency: 50 ADDs at once race to create the same bridge, the same
# gateway addresses and the same nftables chains; then 50 DELs at once.
#
#   pod1..pod50 (eth0) ──veth── br0 10.30.0.1/24 fd00:30::1/64   (namespace "host")
#
# Expect: every ADD succeeds, 50 distinct IPs, one bridge, each gateway address once, exactly one
# copy of each nft rule; after the DELs: IPAM store empty, no veth, no nft element.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip nft jq ping
require_plugins bridge host-local

N=${N:-50}
HOSTNS=$(mk_netns host)
STORE=$T/store
IPAM_PATH=$WEFT_BIN
CONF=$T/conf.json
jq -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"conc","type":"bridge","bridge":"br0",
	"isDefaultGateway":true,"ipMasq":true,"macspoofchk":true,
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.30.0.0/24"}],[{"subnet":"fd00:30::/64"}]]}}' >"$CONF"

# run_bg CMD I: one plugin run for pod I, output in $T/CMD.I.{out,err,rc}
run_bg() {
	local cmd=$1 i=$2 rc=0
	ip netns exec "$HOSTNS" env -i PATH="$PATH" CNI_COMMAND="$cmd" CNI_CONTAINERID="cid$i" \
		CNI_NETNS="$(nspath "${PODS[$i]}")" CNI_IFNAME=eth0 CNI_PATH="$IPAM_PATH" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$WEFT_BIN/bridge" <"$CONF" >"$T/$cmd.$i.out" 2>"$T/$cmd.$i.err" || rc=$?
	echo "$rc" >"$T/$cmd.$i.rc"
}
nft_ruleset() { ip netns exec "$HOSTNS" nft -j list ruleset; }

declare -a PODS
for ((i = 1; i <= N; i++)); do PODS[i]=$(mk_netns "p$i"); done

info "$N parallel ADDs"
for ((i = 1; i <= N; i++)); do run_bg ADD "$i" & done
wait
ok=0
for ((i = 1; i <= N; i++)); do
	if [ "$(cat "$T/ADD.$i.rc")" = 0 ]; then ok=$((ok + 1)); else
		check_fail "ADD $i failed: $(cat "$T/ADD.$i.out" "$T/ADD.$i.err")"
	fi
done
assert_eq "$ok" "$N" "successful ADDs"
ips4=$(cat "$T"/ADD.*.out | jq -r '.ips[]?.address | select(contains("."))' | sort -u | wc -l)
ips6=$(cat "$T"/ADD.*.out | jq -r '.ips[]?.address | select(contains(":"))' | sort -u | wc -l)
assert_eq "$ips4" "$N" "distinct IPv4 addresses"
assert_eq "$ips6" "$N" "distinct IPv6 addresses"
assert_eq "$(ip -n "$HOSTNS" -j link show type bridge | jq -r '[.[].ifname] | tostring')" '["br0"]' "exactly one bridge"
assert_eq "$(ip -n "$HOSTNS" -j addr show br0 | jq -r '[.[0].addr_info[] | select(.scope=="global") | "\(.local)/\(.prefixlen)"] | sort | tostring')" \
	'["10.30.0.1/24","fd00:30::1/64"]' "each gateway address once"
assert_eq "$(ip -n "$HOSTNS" -j link show master br0 | jq length)" "$N" "$N ports on br0"
R=$(nft_ruleset)
assert_eq "$(jq '[.nftables[] | select(.table?.name? == "weft")] | length' <<<"$R")" 2 "one inet and one bridge weft table"
assert_eq "$(jq '[.nftables[] | select(.chain?.name? == "br-postrouting")] | length' <<<"$R")" 1 "one br-postrouting chain"
assert_eq "$(jq '[.nftables[] | select(.rule?.chain? == "br-postrouting")] | length' <<<"$R")" \
	"$(jq '[.nftables[] | select(.rule?.chain? == "br-postrouting") | .rule.expr | tostring] | unique | length' <<<"$R")" \
	"no duplicate br-postrouting rule"
assert_eq "$(jq '[.nftables[] | select(.rule?.chain? == "br-macspoof")] | length' <<<"$R")" \
	"$(jq '[.nftables[] | select(.rule?.chain? == "br-macspoof") | .rule.expr | tostring] | unique | length' <<<"$R")" \
	"no duplicate br-macspoof rule"
[ "$(jq '[.nftables[] | select(.rule?.chain? == "br-postrouting")] | length' <<<"$R")" -gt 0 ] || check_fail "no masquerade rules at all"
assert_eq "$(jq -r '[.nftables[] | select(.set?.name? == "br-masq4") | .set.elem[]?] | length' <<<"$R")" "$N" "$N masq4 elements"
assert_eq "$(jq -r '[.nftables[] | select(.set?.name? == "br-mac-allow") | .set.elem[]?] | length' <<<"$R")" "$N" "$N macspoof elements"
# Traffic through the contended bridge, first and last pod.
assert_ping "${PODS[1]}" 10.30.0.1
assert_ping "${PODS[N]}" "$(jq -r '.ips[0].address | split("/")[0]' "$T/ADD.1.out")"

info "$N parallel DELs"
for ((i = 1; i <= N; i++)); do run_bg DEL "$i" & done
wait
for ((i = 1; i <= N; i++)); do
	[ "$(cat "$T/DEL.$i.rc")" = 0 ] || check_fail "DEL $i failed: $(cat "$T/DEL.$i.out" "$T/DEL.$i.err")"
done
assert_eq "$(reservations_in "$STORE/conc")" 0 "IPAM store empty"
assert_eq "$(veths_in "$HOSTNS")" 0 "no veth left in the host namespace"
for ((i = 1; i <= N; i++)); do
	[ "$(ip -n "${PODS[$i]}" -j link show | jq length)" = 1 ] || check_fail "pod $i still has links: $(links_in "${PODS[$i]}")"
done
R=$(nft_ruleset)
assert_eq "$(jq '[.nftables[] | select(.set?.name? | tostring | startswith("br-")) | .set.elem[]?] | length' <<<"$R")" 0 "no nft element left"

finish
