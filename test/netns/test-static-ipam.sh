#!/usr/bin/env bash
# static IPAM: as bridge's IPAM (address in the pod, ping) and called directly: ADD → CHECK →
# DEL → DEL → GC, CNI_ARGS / args.cni.ips / runtimeConfig.ips precedence, 0.2.0 output, the same
# output as the reference binary, bad input.
#
#   pod (eth0 10.60.0.5/24, static) ──veth── br0 10.60.0.1 (namespace "host")
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping
require_plugins static bridge

HOSTNS=$(mk_netns host)
P=$(mk_netns pod)

# st CMD CONF [CNI_ARGS]: run static (BIN=dir to pick the binary); sets CNI_OUT/CNI_RC.
st() {
	printf '%s' "$2" >"$T/.conf"
	set +e
	CNI_OUT=$(env -i PATH="$PATH" CNI_COMMAND="$1" CNI_CONTAINERID=c1 CNI_NETNS="$(nspath "$P")" CNI_IFNAME=eth0 \
		CNI_PATH="$WEFT_BIN" CNI_ARGS="${3:-}" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"${BIN:-$WEFT_BIN}/static" <"$T/.conf" 2>"$T/.stderr")
	CNI_RC=$?
	set -e
}
st_ok() { st "$@"; [ "$CNI_RC" = 0 ] || fail "static $1 exited $CNI_RC: $CNI_OUT"; }
st_err() { # CODE TEXT CMD CONF [ARGS]
	local code=$1 text=$2; shift 2
	st "$@"
	[ "$CNI_RC" != 0 ] || { check_fail "static $1: expected error $code, got success: $CNI_OUT"; return; }
	[ "$(jqr .code)" = "$code" ] || check_fail "static $1: expected code $code: $CNI_OUT"
	[[ $(jqr .msg) == *"$text"* ]] || check_fail "static $1: message should mention '$text': $CNI_OUT"
}
conf() { jq -c -n --arg v "${2:-1.0.0}" --argjson ipam "$1" '{"cniVersion":$v,"name":"stnet","type":"static","ipam":$ipam}'; }

IPAM='{"type":"static","addresses":[{"address":"10.60.0.5/24","gateway":"10.60.0.1"},{"address":"fd00:60::5/64"}],
 "routes":[{"dst":"0.0.0.0/0"},{"dst":"192.0.2.0/24","gw":"10.60.0.254"}],"dns":{"nameservers":["10.60.0.53"],"search":["example.org"]}}'

info "ADD (direct): ips, routes, dns"
st_ok ADD "$(conf "$IPAM")"
R=$CNI_OUT
assert_eq "$(jqr '[.ips[] | "\(.address) \(.gateway // "-")"] | join(",")' "$R")" "10.60.0.5/24 10.60.0.1,fd00:60::5/64 -" "ips"
assert_eq "$(jqr '[.routes[] | "\(.dst) \(.gw // "-")"] | join(",")' "$R")" "0.0.0.0/0 -,192.0.2.0/24 10.60.0.254" "routes"
assert_eq "$(jqr '.dns | tostring' "$R")" '{"nameservers":["10.60.0.53"],"search":["example.org"]}' "dns"
if [ -x "$REF_BIN/static" ]; then
	for v in 1.0.0 0.4.0 0.2.0; do
		st ADD "$(conf "$IPAM" $v)"; OURS=$(jq -S -c . <<<"$CNI_OUT")
		BIN=$REF_BIN st ADD "$(conf "$IPAM" $v)"; REF=$(jq -S -c . <<<"$CNI_OUT")
		assert_eq "$OURS" "$REF" "same output as the reference ($v)"
	done
fi

info "CHECK, DEL, DEL, GC, STATUS"
st_ok CHECK "$(jq -c --argjson r "$R" '. + {prevResult: $r}' <<<"$(conf "$IPAM")")"
st_err 999 "10.60.0.5" CHECK "$(jq -c '. + {prevResult: {"cniVersion":"1.0.0","ips":[{"address":"10.60.0.5/24","gateway":"10.60.0.9"}]}}' <<<"$(conf "$IPAM")")"
st_err 7 "prevResult" CHECK "$(conf "$IPAM")"
st_ok DEL "$(conf "$IPAM")"
st_ok DEL "$(conf "$IPAM")"
st_ok GC "$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$(conf "$IPAM" 1.1.0)")"
st_ok STATUS "$(conf "$IPAM" 1.1.0)"

info "addresses from CNI_ARGS (appended, GATEWAY), args.cni.ips and runtimeConfig.ips (replace)"
ONE='{"type":"static","addresses":[{"address":"10.60.0.5/24"}]}'
st_ok ADD "$(conf "$ONE")" "IgnoreUnknown=1;IP=10.61.0.5/16,fd00:61::5/64;GATEWAY=10.61.0.1"
assert_eq "$(jqr '[.ips[] | "\(.address) \(.gateway // "-")"] | join(",")')" "10.60.0.5/24 -,10.61.0.5/16 10.61.0.1,fd00:61::5/64 -" "CNI_ARGS"
st_ok ADD "$(jq -c '. + {args: {cni: {ips: ["10.62.0.5/24"]}}}' <<<"$(conf "$ONE")")" "IP=10.61.0.5/16"
assert_eq "$(jqr '[.ips[].address] | join(",")')" "10.62.0.5/24" "args.cni.ips replaces"
st_ok ADD "$(jq -c '. + {args: {cni: {ips: ["10.62.0.5/24"]}}, runtimeConfig: {ips: ["10.63.0.5/24"]}}' <<<"$(conf "$ONE")")"
assert_eq "$(jqr '[.ips[].address] | join(",")')" "10.63.0.5/24" "runtimeConfig.ips wins"

info "bad input"
st_err 7 "ipam" ADD '{"cniVersion":"1.0.0","name":"stnet","type":"static"}'
st_err 7 "CIDR" ADD "$(conf '{"type":"static","addresses":[{"address":"10.60.0.5"}]}')"
st_err 7 "gateway" ADD "$(conf '{"type":"static","addresses":[{"address":"10.60.0.5/24","gateway":"x"}]}')"
st_err 7 "NOT in CIDR" ADD "$(jq -c '. + {runtimeConfig: {ips: ["10.63.0.5"]}}' <<<"$(conf "$ONE")")"
st_err 4 "10.61.0.5" ADD "$(conf "$ONE")" "IP=10.61.0.5/99"
st_err 1 "more than 1 address" ADD "$(conf '{"type":"static","addresses":[{"address":"10.60.0.5/24"},{"address":"10.60.0.6/24"}]}' 0.2.0)"
st_err 7 "routes" ADD "$(conf '{"type":"static","routes":[{"dst":"nope"}]}')"

info "as the bridge plugin's IPAM: the address is in the pod and reachable"
BR=$(jq -c -n '{"cniVersion":"1.0.0","name":"stnet","type":"bridge","bridge":"br0","isGateway":true,
	"ipam":{"type":"static","addresses":[{"address":"10.60.0.5/24","gateway":"10.60.0.1"}],"routes":[{"dst":"0.0.0.0/0"}]}}')
printf '%s' "$BR" >"$T/br.json"
OUTB=$(ip netns exec "$HOSTNS" env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID=c1 CNI_NETNS="$(nspath "$P")" CNI_IFNAME=eth0 \
	CNI_PATH="$WEFT_BIN" "$WEFT_BIN/bridge" <"$T/br.json") || fail "bridge ADD with static IPAM: $OUTB"
assert_eq "$(ip -n "$P" -j addr show eth0 | jq -r '[.[0].addr_info[] | select(.family=="inet") | "\(.local)/\(.prefixlen)"] | join(",")')" \
	10.60.0.5/24 "static address in the pod"
assert_eq "$(ip -n "$P" -j route show default | jq -r '.[0].gateway')" 10.60.0.1 "default route via the gateway"
assert_ping "$P" 10.60.0.1
ip netns exec "$HOSTNS" env -i PATH="$PATH" CNI_COMMAND=DEL CNI_CONTAINERID=c1 CNI_NETNS="$(nspath "$P")" CNI_IFNAME=eth0 \
	CNI_PATH="$WEFT_BIN" "$WEFT_BIN/bridge" <"$T/br.json" || check_fail "bridge DEL with static IPAM"
finish
