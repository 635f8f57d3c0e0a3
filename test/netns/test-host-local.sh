#!/usr/bin/env bash
# host-local IPAM driven through the real binary with the CNI environment.
#
#   [ w-hl-PID ]   a throwaway namespace, only passed as CNI_NETNS: host-local never enters it
#   $T/data/<net>/ the store (fresh dataDir per scenario)
#
# Covers ADD -> CHECK -> DEL -> DEL -> GC, dual-stack, requested IPs (CNI_ARGS and
# runtimeConfig.ips), exhaustion (error, store unchanged, rollback across sets), STATUS 50,
# 50 parallel ADDs/DELs, leftovers of a killed ADD (released by DEL and by GC), bad inputs,
# and our ADD output against the reference for 1.0.0 / 0.4.0 / 0.3.1 / 0.2.0.
# Store entries are IP literals and fixed names, so ls | grep is safe here.
# shellcheck disable=SC2010,SC2012
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd jq ip
require_plugins host-local

NS=$(mk_netns hl)

# conf NAME DATADIR VERSION RANGES_JSON [EXTRA_TOPLEVEL_JSON_MEMBERS]
conf() {
	local name=$1 dd=$2 v=$3 ranges=$4 extra=${5:-}
	printf '{"cniVersion":"%s","name":"%s","type":"host-local"%s,"ipam":{"type":"host-local","dataDir":"%s","ranges":%s,"routes":[{"dst":"0.0.0.0/0"}]}}' \
		"$v" "$name" "${extra:+,$extra}" "$dd" "$ranges"
}
# store_state DIR: sorted file names and contents (not our index: it holds a timestamp), for before/after comparisons
store_state() { (cd "$1" 2>/dev/null && for f in $(ls -A | grep -v "^\.weft-index$" | sort); do printf '%s=%s\n' "$f" "$(tr '\r\n' '|/' <"$f")"; done); }
reservations() { ls -A "$1" 2>/dev/null | grep -Ev '^(lock|last_reserved_ip\..*|\.weft-index)$' | sort | tr '\n' ' '; }

V4='[[{"subnet":"10.1.0.0/24"}]]'

info "ADD -> CHECK -> DEL -> DEL -> GC"
D=$T/d1
C=$(conf n1 "$D" 1.1.0 "$V4")
cni_ok host-local ADD c1 "$NS" eth0 "$C"
assert_eq "$(jqr '.ips[0].address')" "10.1.0.2/24" "first address"
assert_eq "$(jqr '.ips[0].gateway')" "10.1.0.1" "gateway"
assert_eq "$(jqr '.ips[0].interface // "none"')" "none" "IPAM result has no interface"
assert_eq "$(jqr '.interfaces // [] | length')" "0" "no interfaces"
assert_eq "$(jqr '.routes[0].dst')" "0.0.0.0/0" "route"
assert_eq "$(jqr '.cniVersion')" "1.1.0" "result version"
assert_eq "$(od -An -c "$D/n1/10.1.0.2" | tr -s ' ')" " c 1 \r \n e t h 0" "reservation bytes"
assert_eq "$(cat "$D/n1/last_reserved_ip.0")" "10.1.0.2" "last_reserved_ip.0"
cni_ok host-local CHECK c1 "$NS" eth0 "$C"
cni_err 999 host-local CHECK c2 "$NS" eth0 "$C"
grep -q "c2" <<<"$(jqr .msg)" || check_fail "CHECK error names the container: $CNI_OUT"
# same attachment twice: duplicate allocation refused, nothing new reserved
cni_err 999 host-local ADD c1 "$NS" eth0 "$C"
assert_eq "$(reservations "$D/n1")" "10.1.0.2 " "duplicate ADD reserved nothing"
# round robin: a second container gets .3 (not .2 again after its release)
cni_ok host-local ADD c2 "$NS" eth0 "$C"
assert_eq "$(jqr '.ips[0].address')" "10.1.0.3/24" "second address"
cni_ok host-local DEL c1 "$NS" eth0 "$C"
[ ! -e "$D/n1/10.1.0.2" ] || check_fail "DEL left 10.1.0.2"
cni_ok host-local DEL c1 "$NS" eth0 "$C"
cni_ok host-local ADD c3 "$NS" eth0 "$C"
assert_eq "$(jqr '.ips[0].address')" "10.1.0.4/24" "round robin continues after last reserved"
cni_err 999 host-local CHECK c1 "$NS" eth0 "$C"
GC=$(conf n1 "$D" 1.1.0 "$V4" '"cni.dev/valid-attachments":[{"containerID":"c3","ifname":"eth0"}]')
cni_ok host-local GC "" "" "" "$GC"
assert_eq "$(reservations "$D/n1")" "10.1.0.4 " "GC kept only the valid attachment"
# DEL with no store at all is fine, and creates nothing
cni_ok host-local DEL cx "$NS" eth0 "$(conf n1 "$T/nodir" 1.1.0 "$V4")"
[ ! -e "$T/nodir" ] || check_fail "DEL created the store directory"

info "dual-stack, routes, dns"
D=$T/d2
printf 'nameserver 10.0.0.53\nsearch a.example b.example\noptions ndots:2\ndomain example\n' >"$T/resolv.conf"
C='{"cniVersion":"1.0.0","name":"ds","type":"host-local","ipam":{"type":"host-local","dataDir":"'$D'","resolvConf":"'$T'/resolv.conf","ranges":[[{"subnet":"10.2.0.0/24","gateway":"10.2.0.254"}],[{"subnet":"fd00:2::/64"}]],"routes":[{"dst":"0.0.0.0/0"},{"dst":"::/0","gw":"fd00:2::1"}]}}'
cni_ok host-local ADD c1 "$NS" eth0 "$C"
assert_eq "$(jqr '[.ips[].address] | join(" ")')" "10.2.0.1/24 fd00:2::2/64" "dual-stack addresses (gw .254 frees .1)"
assert_eq "$(jqr '[.ips[].gateway] | join(" ")')" "10.2.0.254 fd00:2::1" "dual-stack gateways"
assert_eq "$(jqr '.dns.nameservers[0] + " " + (.dns.search | join(",")) + " " + .dns.options[0] + " " + .dns.domain')" \
	"10.0.0.53 a.example,b.example ndots:2 example" "dns from resolvConf"
assert_eq "$(cat "$D/ds/last_reserved_ip.1")" "fd00:2::2" "last_reserved_ip.1"
cni_ok host-local DEL c1 "$NS" eth0 "$C"
assert_eq "$(reservations "$D/ds")" "" "dual-stack DEL released both"

info "requested IPs"
D=$T/d3
C=$(conf rq "$D" 1.0.0 '[[{"subnet":"10.3.0.0/24"}],[{"subnet":"fd00:3::/64"}]]')
cni_ok host-local ADD c1 "$NS" eth0 "$C" "IP=10.3.0.50"
assert_eq "$(jqr '[.ips[].address] | join(" ")')" "10.3.0.50/24 fd00:3::2/64" "CNI_ARGS IP"
C2=$(conf rq "$D" 1.0.0 '[[{"subnet":"10.3.0.0/24"}],[{"subnet":"fd00:3::/64"}]]' '"runtimeConfig":{"ips":["10.3.0.60/24","fd00:3::60/64"]}')
cni_ok host-local ADD c2 "$NS" eth0 "$C2"
assert_eq "$(jqr '[.ips[].address] | join(" ")')" "10.3.0.60/24 fd00:3::60/64" "runtimeConfig.ips"
C3=$(conf rq "$D" 1.0.0 '[[{"subnet":"10.3.0.0/24"}],[{"subnet":"fd00:3::/64"}]]' '"args":{"cni":{"ips":["10.3.0.70"]}}')
cni_ok host-local ADD c3 "$NS" eth0 "$C3"
assert_eq "$(jqr '.ips[0].address')" "10.3.0.70/24" "args.cni.ips"
before=$(store_state "$D/rq")
cni_err 999 host-local ADD c4 "$NS" eth0 "$C" "IP=10.3.0.50"
grep -q "10.3.0.50" <<<"$(jqr .msg)" || check_fail "taken requested IP not named: $CNI_OUT"
cni_err 999 host-local ADD c4 "$NS" eth0 "$C" "IP=10.9.0.1"
grep -q "10.9.0.1" <<<"$(jqr .msg)" || check_fail "out-of-range requested IP not named: $CNI_OUT"
cni_err 999 host-local ADD c4 "$NS" eth0 "$C" "IP=10.3.0.1"
grep -q "gateway" <<<"$(jqr .msg)" || check_fail "gateway request not refused: $CNI_OUT"
cni "host-local" ADD c4 "$NS" eth0 "$C" "IP=notanip"
if [ "$CNI_RC" = 0 ] || [ "$(jqr .code)" = null ]; then check_fail "bad IP arg accepted: $CNI_OUT"; fi
assert_eq "$(store_state "$D/rq")" "$before" "failed requested-IP ADDs left the store unchanged"

info "exhaustion, rollback across sets, STATUS"
D=$T/d4
C=$(conf ex "$D" 1.1.0 '[[{"subnet":"fd00:4::/64"}],[{"subnet":"10.4.0.0/24","rangeStart":"10.4.0.2","rangeEnd":"10.4.0.3"}]]')
cni_ok host-local STATUS "" "" "" "$C"
cni_ok host-local ADD c1 "$NS" eth0 "$C"
cni_ok host-local STATUS "" "" "" "$C"
cni_ok host-local ADD c2 "$NS" eth0 "$C"
before=$(store_state "$D/ex")
cni_err 999 host-local ADD c3 "$NS" eth0 "$C"
assert_eq "$(jqr .msg)" "failed to allocate for range 1: no IP addresses available in range set: 10.4.0.2-10.4.0.3" "exhaustion message"
assert_eq "$(store_state "$D/ex")" "$before" "exhausted ADD left no IPv6 reservation behind"
cni_err 50 host-local STATUS "" "" "" "$C"
grep -q "10.4.0.2-10.4.0.3" <<<"$(jqr .msg)" || check_fail "STATUS does not name the range: $CNI_OUT"
cni_ok host-local DEL c1 "$NS" eth0 "$C"
cni_ok host-local STATUS "" "" "" "$C"

info "50 parallel ADDs, then 50 parallel DELs"
D=$T/d5
C=$(conf par "$D" 1.0.0 '[[{"subnet":"10.5.0.0/24"}],[{"subnet":"fd00:5::/64"}]]')
printf '%s' "$C" >"$T/par.json"
mkdir -p "$T/par"
for i in $(seq 1 50); do
	env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID="p$i" CNI_NETNS="$(nspath "$NS")" CNI_IFNAME=eth0 \
		CNI_PATH="$WEFT_BIN" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$WEFT_BIN/host-local" <"$T/par.json" >"$T/par/$i.out" 2>"$T/par/$i.err" &
done
wait
ok=0
for i in $(seq 1 50); do jq -e '.ips[1]' "$T/par/$i.out" >/dev/null 2>&1 && ok=$((ok + 1)); done
assert_eq "$ok" 50 "parallel ADDs succeeded"
assert_eq "$(cat "$T"/par/*.out | jq -r '.ips[0].address' | sort -u | wc -l)" 50 "50 distinct IPv4 in outputs"
assert_eq "$(cat "$T"/par/*.out | jq -r '.ips[1].address' | sort -u | wc -l)" 50 "50 distinct IPv6 in outputs"
assert_eq "$(ls "$D/par" | grep -c '^10\.5\.0\.')" 50 "50 IPv4 reservation files"
assert_eq "$(ls "$D/par" | grep -c '^fd00:5::')" 50 "50 IPv6 reservation files"
# every output address has a file naming its container
bad=0
for i in $(seq 1 50); do
	a=$(jq -r '.ips[0].address' "$T/par/$i.out"); a=${a%/*}
	[ "$(tr '\r\n' '|/' <"$D/par/$a")" = "p$i|/eth0" ] || bad=$((bad + 1))
done
assert_eq "$bad" 0 "files match outputs"
for i in $(seq 1 50); do
	env -i PATH="$PATH" CNI_COMMAND=DEL CNI_CONTAINERID="p$i" CNI_NETNS="$(nspath "$NS")" CNI_IFNAME=eth0 \
		CNI_PATH="$WEFT_BIN" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
		"$WEFT_BIN/host-local" <"$T/par.json" >"$T/par/$i.del" 2>&1 &
done
wait
assert_eq "$(reservations "$D/par")" "" "store empty after parallel DELs"
assert_eq "$(ls -A "$D/par" | sort | tr '\n' ' ')" ".weft-index last_reserved_ip.0 last_reserved_ip.1 lock " "only bookkeeping left"

info "reservations left by a killed ADD"
D=$T/d6
C=$(conf kl "$D" 1.1.0 "$V4")
cni_ok host-local ADD live "$NS" eth0 "$C"
printf 'dead1\r\neth0' >"$D/kl/10.1.0.77"   # ADD killed before the runtime learned of it
printf 'dead2\r\neth0' >"$D/kl/10.1.0.78"
printf 'dead3' >"$D/kl/10.1.0.79"            # legacy content (ID only)
cni_ok host-local DEL dead1 "$NS" eth0 "$C"
[ ! -e "$D/kl/10.1.0.77" ] || check_fail "DEL did not release the killed ADD's reservation"
cni_ok host-local CHECK dead3 "$NS" eth0 "$C"
GC=$(conf kl "$D" 1.1.0 "$V4" '"cni.dev/valid-attachments":[{"containerID":"live","ifname":"eth0"}]')
cni_ok host-local GC "" "" "" "$GC"
assert_eq "$(reservations "$D/kl")" "10.1.0.2 " "GC released dead2 and legacy dead3, kept live"

info "bad inputs: code and no file"
D=$T/d7
for bad in '[[{"subnet":"10.7.0.0/31"}]]' '[[{"subnet":"10.7.0.5/24"}]]' '[[{"subnet":"10.7.0.0/24","rangeStart":"10.8.0.1"}]]' \
	'[[{"subnet":"10.7.0.0/24"}],[{"subnet":"10.7.0.0/25"}]]' '[[{"subnet":"nope"}]]' '[]' '{}'; do
	cni_err 7 host-local ADD c1 "$NS" eth0 "$(conf bad "$D" 1.0.0 "$bad")"
done
cni_err 7 host-local ADD c1 "$NS" eth0 '{"cniVersion":"1.0.0","name":"bad","type":"host-local"}'
grep -q "ipam" <<<"$(jqr .msg)" || check_fail "missing ipam not named: $CNI_OUT"
cni_err 7 host-local ADD c1 "$NS" eth0 "$(conf bad "$D" 1.0.0 '[[{"subnet":"10.7.0.0/24","gateway":"10.9.9.9"}]]')"
grep -q 'ipam.ranges\[0\]\[0\].gateway: 10.9.9.9' <<<"$(jqr .msg)" || check_fail "gateway error does not name key and value: $CNI_OUT"
cni_err 7 host-local ADD c1 "$NS" eth0 "$(conf bad "$D" 0.2.0 '[[{"subnet":"10.7.0.0/24"}],[{"subnet":"10.8.0.0/24"}]]')"
[ ! -e "$D" ] || check_fail "bad inputs created files: $(ls -R "$D")"

info "ADD output equals the reference's"
if [ -x "$REF_BIN/host-local" ]; then
	for v in 1.0.0 0.4.0 0.3.1 0.2.0; do
		for who in ours ref; do
			c='{"cniVersion":"'$v'","name":"cmp","type":"host-local","ipam":{"type":"host-local","dataDir":"'$T/cmp-$who-$v'","resolvConf":"'$T'/resolv.conf","ranges":[[{"subnet":"10.6.0.0/24","rangeStart":"10.6.0.10"}],[{"subnet":"fd00:6::/64"}]],"routes":[{"dst":"0.0.0.0/0"},{"dst":"10.99.0.0/16","gw":"10.6.0.1"}]}}'
			REF=$([ $who = ref ] && echo 1 || echo 0) cni host-local ADD cmp1 "$NS" eth0 "$c" "IP=fd00:6::42"
			[ "$CNI_RC" = 0 ] || check_fail "$who ADD $v failed: $CNI_OUT"
			jq -S . <<<"$CNI_OUT" >"$T/cmp-$who-$v.json"
		done
		diff -u "$T/cmp-ref-$v.json" "$T/cmp-ours-$v.json" || check_fail "ADD output differs from the reference for $v"
		assert_eq "$(store_state "$T/cmp-ours-$v/cmp")" "$(store_state "$T/cmp-ref-$v/cmp")" "store files equal the reference's ($v)"
	done
else
	info "reference host-local not installed: comparison skipped"
fi

finish
