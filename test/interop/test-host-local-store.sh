#!/usr/bin/env bash
# Our host-local and the reference (/usr/lib/cni/host-local) on the same live store:
# same layout, same lock, each reads and releases the other's reservations, round robin
# continues across implementations, and concurrent mixed ADDs never hand out an address twice.
#
#   [ w-hli-PID ]   throwaway namespace, only passed as CNI_NETNS (host-local never enters it)
#   $T/data/mix/    the shared store
# Store entries are IP literals and fixed names, so ls | grep is safe here.
# shellcheck disable=SC2010,SC2012
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd jq ip
require_plugins host-local
[ -x "$REF_BIN/host-local" ] || skip "reference host-local not installed in $REF_BIN"

NS=$(mk_netns hli)
D=$T/data
C='{"cniVersion":"1.0.0","name":"mix","type":"host-local","ipam":{"type":"host-local","dataDir":"'$D'","ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"fd00:1::/120"}]]}}'
S=$D/mix
addr() { jqr '.ips[0].address' | cut -d/ -f1; }
owner() { tr '\r\n' '|/' <"$S/$1"; }
reservations() { ls -A "$S" | grep -Ev '^(lock|last_reserved_ip\..*|\.weft-index)$' | sort | tr '\n' ' '; }

info "reference reserves, ours continues its round robin"
REF=1 cni_ok host-local ADD r1 "$NS" eth0 "$C"
assert_eq "$(addr)" "10.1.0.2" "reference first"
REF=1 cni_ok host-local ADD r2 "$NS" eth0 "$C"
assert_eq "$(addr)" "10.1.0.3" "reference second"
cni_ok host-local ADD w1 "$NS" eth0 "$C"
assert_eq "$(addr)" "10.1.0.4" "ours continues after the reference's last_reserved_ip"
assert_eq "$(jqr '.ips[1].address')" "fd00:1::4/120" "ours continues in the IPv6 set too"
assert_eq "$(owner 10.1.0.4)" "w1|/eth0" "our reservation file"
REF=1 cni_ok host-local ADD r3 "$NS" eth0 "$C"
assert_eq "$(addr)" "10.1.0.5" "reference continues after ours"

info "the reference reads our reservations"
REF=1 cni_ok host-local CHECK w1 "$NS" eth0 "$C"
REF=1 cni_err 999 host-local CHECK nobody "$NS" eth0 "$C"   # our index does not fool its scan
REF=1 cni_ok host-local DEL w1 "$NS" eth0 "$C"
if [ -e "$S/10.1.0.4" ] || [ -e "$S/fd00:1::4" ]; then check_fail "reference DEL did not release our reservation"; fi
cni_err 999 host-local CHECK w1 "$NS" eth0 "$C"              # our index must notice the change

info "ours releases the reference's reservations"
cni_ok host-local CHECK r3 "$NS" eth0 "$C"                   # made after our index was written
cni_ok host-local DEL r3 "$NS" eth0 "$C"
[ ! -e "$S/10.1.0.5" ] || check_fail "our DEL did not release the reference's 10.1.0.5"
cni_ok host-local DEL r1 "$NS" eth0 "$C"
[ ! -e "$S/10.1.0.2" ] || check_fail "our DEL did not release the reference's 10.1.0.2"
assert_eq "$(reservations)" "10.1.0.3 fd00:1::3 " "only r2 left"

info "the reference skips our addresses"
cni_ok host-local ADD w2 "$NS" eth0 "$C" "IP=10.1.0.9"
assert_eq "$(addr)" "10.1.0.9" "requested"
printf '10.1.0.8' >"$S/last_reserved_ip.0"                   # make .9 the reference's next candidate
REF=1 cni_ok host-local ADD r4 "$NS" eth0 "$C"
assert_eq "$(addr)" "10.1.0.10" "reference skipped our 10.1.0.9"
# legacy content written by old versions is released by both
printf 'old1' >"$S/10.1.0.50"
printf 'old2' >"$S/10.1.0.51"
cni_ok host-local DEL old1 "$NS" eth0 "$C"
REF=1 cni_ok host-local DEL old2 "$NS" eth0 "$C"
if [ -e "$S/10.1.0.50" ] || [ -e "$S/10.1.0.51" ]; then check_fail "legacy reservations not released"; fi

info "concurrent mixed ADDs share the lock"
for i in $(seq 1 20); do
	for who in ref ours; do
		bin=$WEFT_BIN; [ $who = ref ] && bin=$REF_BIN
		printf '%s' "$C" | env -i PATH="$PATH" CNI_COMMAND=ADD CNI_CONTAINERID="$who$i" CNI_NETNS="$(nspath "$NS")" \
			CNI_IFNAME=eth0 CNI_PATH="$bin" "$bin/host-local" >"$T/$who$i.out" 2>&1 &
	done
done
wait
n=0
for f in "$T"/ref*.out "$T"/ours*.out; do jq -e '.ips[1]' "$f" >/dev/null 2>&1 && n=$((n + 1)); done
assert_eq "$n" 40 "all mixed ADDs succeeded"
assert_eq "$(cat "$T"/ref*.out "$T"/ours*.out | jq -r '.ips[0].address' | sort -u | wc -l)" 40 "40 distinct IPv4"
assert_eq "$(ls "$S" | grep -c '^10\.1\.0\.')" 43 "40 + w2 + r2 + r4 IPv4 files"
# every file names the container that got it in its output
bad=0
for f in "$T"/ref*.out "$T"/ours*.out; do
	cid=$(basename "$f" .out); a=$(jq -r '.ips[0].address' "$f"); a=${a%/*}
	[ "$(owner "$a")" = "$cid|/eth0" ] || bad=$((bad + 1))
done
assert_eq "$bad" 0 "files match outputs"
# tear down crosswise: ours DELs the reference's, the reference DELs ours
for i in $(seq 1 20); do
	cni_ok host-local DEL "ref$i" "$NS" eth0 "$C"
	REF=1 cni_ok host-local DEL "ours$i" "$NS" eth0 "$C"
done
for c in w2 r2 r4; do cni_ok host-local DEL "$c" "$NS" eth0 "$C"; done
assert_eq "$(reservations)" "" "store empty after crosswise DELs"

finish
