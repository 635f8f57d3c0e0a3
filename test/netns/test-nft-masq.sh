#!/usr/bin/env bash
# ipMasq and macspoofchk through the nft-bridge API, checked with real traffic.
#
#   pod1 (10.88.0.2/24) ─veth─┐
#                             br0 10.88.0.1/24 ── node ── up0 192.0.2.1/24 ─veth─ outside 192.0.2.2/24
#   (ip_forward=1)            │                                            (no route back to 10.88/16)
#                            np2 10.99.0.1/32 ─veth─ pod2 10.88.0.130/32   (inside pod1's /24, routed)
#
# The elements are added/removed by a tiny driver linked against libweft.a, run inside "node".
# outside has no route to the pods, so pod1 -> outside only works when masqueraded; nft counters
# in outside and pod2 show which source address arrived.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip nft jq ping nc cc pkg-config
require_built "$WEFT_BUILD/libweft.a"

# --- driver -----------------------------------------------------------------------------------
cat >"$T/drv.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include "basic/string-util.h"
#include "shared/nft/nft-bridge.h"
static char **valid;
static bool is_valid(const char *cid, const char *ifname, void *u) {
	for (char **v = valid; *v; v++)
		if (streq(*v, cid))
			return true;
	return false;
}
int main(int argc, char **argv) {
	NftCtx *c = NULL;
	IpPrefix p;
	unsigned char mac[6];
	int r = -EINVAL;
	if (argc < 2 || nft_ctx_open(&c) < 0)
		return 2;
	if (streq(argv[1], "masq-add") && argc == 6 && ip_prefix_parse(argv[5], &p) == 0)
		r = nft_bridge_masq_add(c, argv[2], argv[3], argv[4], &p);
	else if (streq(argv[1], "masq-del") && argc == 5)
		r = nft_bridge_masq_del(c, argv[2], argv[3], argv[4]);
	else if (streq(argv[1], "mac-add") && argc == 7 && ether_addr_parse(argv[6], mac) == 0)
		r = nft_bridge_macspoof_add(c, argv[2], argv[3], argv[4], argv[5], mac);
	else if (streq(argv[1], "mac-del") && argc == 5)
		r = nft_bridge_macspoof_del(c, argv[2], argv[3], argv[4]);
	else if (streq(argv[1], "gc") && argc >= 3) {
		valid = argv + 3;
		r = nft_bridge_masq_gc(c, argv[2], is_valid, NULL);
	} else if (streq(argv[1], "flush"))
		r = nft_bridge_flush_all(c);
	nft_ctx_free(c);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	return 0;
}
EOF
# An ASan/UBSan libweft.a (make SAN=1) needs the sanitizer runtime in the driver too.
SANFLAGS=()
# (grep -c, not -q: an early grep exit would SIGPIPE nm and fail the pipeline under pipefail)
if [ "$(nm "$WEFT_BUILD/libweft.a" 2>/dev/null | grep -c '__asan_\|__ubsan_')" -gt 0 ]; then
	# shellcheck disable=SC2054 # the comma belongs to the option
	SANFLAGS=(-fsanitize=address,undefined -fno-sanitize-recover=all)
fi
# shellcheck disable=SC2046
cc "${SANFLAGS[@]}" -std=gnu17 -D_GNU_SOURCE -I"$TOP/src" -I"$TOP/src/shared" $(pkg-config --cflags jansson libnftables) \
	-o "$T/drv" "$T/drv.c" "$WEFT_BUILD/libweft.a" $(pkg-config --libs jansson libnftables libmnl) ||
	fail "cannot build the driver against $WEFT_BUILD/libweft.a"

# --- topology ---------------------------------------------------------------------------------
# mk_netns runs in a command substitution, so its own cleanup registration is lost: register here.
NODE=$(mk_netns node) && on_exit "ip netns del $NODE"
POD1=$(mk_netns pod1) && on_exit "ip netns del $POD1"
POD2=$(mk_netns pod2) && on_exit "ip netns del $POD2"
OUT=$(mk_netns outside) && on_exit "ip netns del $OUT"
drv() { ip netns exec "$NODE" "$T/drv" "$@"; }

ip -n "$NODE" link add br0 type bridge
ip -n "$NODE" addr add 10.88.0.1/24 dev br0
ip -n "$NODE" link set br0 up
ip -n "$NODE" link add hp1 type veth peer name eth0 netns "$POD1"
ip -n "$NODE" link set hp1 master br0 up
ip -n "$POD1" addr add 10.88.0.2/24 dev eth0
ip -n "$POD1" link set eth0 up
ip -n "$POD1" route add default via 10.88.0.1
ip -n "$POD1" route add 10.88.0.130/32 via 10.88.0.1 # same /24, but routed through the node

ip -n "$NODE" link add np2 type veth peer name eth0 netns "$POD2"
ip -n "$NODE" addr add 10.99.0.1/32 dev np2
ip -n "$NODE" link set np2 up
ip -n "$NODE" route add 10.88.0.130/32 dev np2
ip -n "$POD2" addr add 10.88.0.130/32 dev eth0
ip -n "$POD2" link set eth0 up
ip -n "$POD2" route add 10.99.0.1/32 dev eth0
ip -n "$POD2" route add default via 10.99.0.1

ip -n "$NODE" link add up0 type veth peer name dn0 netns "$OUT"
ip -n "$NODE" addr add 192.0.2.1/24 dev up0
ip -n "$NODE" link set up0 up
ip -n "$OUT" addr add 192.0.2.2/24 dev dn0
ip -n "$OUT" link set dn0 up
ip netns exec "$NODE" sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'

# observers: count what arrives by source address
for ns in "$OUT" "$POD2"; do
	ip netns exec "$ns" nft -f - <<'EOF'
table inet obs {
	counter from_pod1 {}
	counter from_other {}
	counter from_node {}
	chain in {
		type filter hook prerouting priority -400;
		ip protocol icmp ip saddr 10.88.0.2 counter name from_pod1
		ip protocol icmp ip saddr != 10.88.0.2 counter name from_other
		ip protocol icmp ip saddr { 192.0.2.1, 10.99.0.1 } counter name from_node
		tcp dport 8080 ip saddr 10.88.0.2 counter name from_pod1
		tcp dport 8080 ip saddr != 10.88.0.2 counter name from_other
		tcp dport 8080 ip saddr { 192.0.2.1, 10.99.0.1 } counter name from_node
	}
}
EOF
done
pkts() { ip netns exec "$1" nft -j list counter inet obs "$2" | jq '.nftables[1].counter.packets'; }
reset_obs() { ip netns exec "$1" nft reset counters table inet obs >/dev/null; }
tcp_ok() { # tcp_ok NS DST: one TCP connection carrying a line must succeed
	local out=$T/nc.out
	: >"$out"
	ip netns exec "$OUT" timeout 5 nc -l 8080 >"$out" &
	local lpid=$!
	wait_listen "$OUT" 8080 || true
	echo hello | ip netns exec "$1" timeout 3 nc -N -w 2 "$2" 8080 >/dev/null 2>&1 || true
	wait "$lpid" 2>/dev/null || true
	[ "$(cat "$out")" = hello ]
}

# --- no masquerade yet: outside is unreachable (no route back), its counters see the pod IP ----
assert_ping "$POD1" 10.88.0.1
assert_ping "$POD1" 10.88.0.130
assert_no_ping "$POD1" 192.0.2.2
assert_ne "$(pkts "$OUT" from_pod1)" 0 "outside saw the pod's own address before masq"
reset_obs "$OUT"

# --- masq on ----------------------------------------------------------------------------------
drv masq-add net1 cid1 eth0 10.88.0.2/24 || fail "masq-add failed"
drv masq-add net1 cid1 eth0 10.88.0.2/24 || fail "second masq-add failed"
assert_eq "$(ip netns exec "$NODE" nft -j list chain inet weft br-postrouting | jq '[.nftables[] | select(.rule)] | length')" 6 "rules in br-postrouting"
assert_eq "$(ip netns exec "$NODE" nft -j list set inet weft br-masq4 | jq -r '.nftables[1].set.elem[0].elem.comment')" "net1/cid1/eth0" "masq element comment"

assert_ping "$POD1" 192.0.2.2
assert_eq "$(pkts "$OUT" from_pod1)" 0 "outside must not see 10.88.0.2 when masqueraded"
assert_ne "$(pkts "$OUT" from_other)" 0 "outside saw masqueraded pings"
reset_obs "$OUT"
tcp_ok "$POD1" 192.0.2.2 || check_fail "TCP pod1 -> outside with masquerade failed"
assert_eq "$(pkts "$OUT" from_pod1)" 0 "TCP: outside must not see 10.88.0.2"
# the masqueraded source is the node's address on the way out
assert_ne "$(pkts "$OUT" from_node)" 0 "outside saw 192.0.2.1 as the source"

# pod -> pod in the same /24 (routed through the node): not masqueraded
reset_obs "$POD2"
assert_ping "$POD1" 10.88.0.130
assert_ne "$(pkts "$POD2" from_pod1)" 0 "pod2 must see pod1's own address"
assert_eq "$(pkts "$POD2" from_other)" 0 "pod2 saw a masqueraded source"

# --- masq off ---------------------------------------------------------------------------------
drv masq-del net1 cid1 eth0 || fail "masq-del failed"
drv masq-del net1 cid1 eth0 || fail "second masq-del failed"
assert_eq "$(ip netns exec "$NODE" nft -j list set inet weft br-masq4 | jq '.nftables[1].set.elem | length')" 0 "masq elements after del"
reset_obs "$OUT"
assert_no_ping "$POD1" 192.0.2.2
assert_ne "$(pkts "$OUT" from_pod1)" 0 "after del, outside sees the pod address again"
assert_eq "$(pkts "$OUT" from_other)" 0 "after del, nothing masqueraded"
! tcp_ok "$POD1" 192.0.2.2 || check_fail "TCP pod1 -> outside worked without masquerade"

# --- GC: element of an attachment that is no longer valid goes --------------------------------
drv masq-add net1 cid1 eth0 10.88.0.2/24 || fail "masq-add failed"
drv masq-add net1 cid9 eth0 10.88.0.9/24 || fail "masq-add failed"
drv gc net1 cid1 || fail "gc failed"
assert_eq "$(ip netns exec "$NODE" nft -j list set inet weft br-masq4 | jq -r '[.nftables[1].set.elem[].elem.val] | join(",")')" "10.88.0.2" "after gc"
assert_ping "$POD1" 192.0.2.2

# --- macspoofchk --------------------------------------------------------------------------------
podmac=$(ip -n "$POD1" -j link show eth0 | jq -r '.[0].address')
drv mac-add net1 cid1 eth0 hp1 "$podmac" || fail "mac-add failed"
assert_ping "$POD1" 10.88.0.1
ip -n "$POD1" link set eth0 address 02:de:ad:be:ef:01
ip -n "$NODE" neigh flush dev br0
assert_no_ping "$POD1" 10.88.0.1
ip -n "$POD1" link set eth0 address "$podmac"
assert_ping "$POD1" 10.88.0.1
# allowing the other MAC instead (re-ADD) flips it
drv mac-add net1 cid1 eth0 hp1 02:de:ad:be:ef:01 || fail "mac-add (replace) failed"
ip -n "$NODE" neigh flush dev br0
assert_no_ping "$POD1" 10.88.0.1
drv mac-del net1 cid1 eth0 || fail "mac-del failed"
assert_ping "$POD1" 10.88.0.1

# --- flush: no weft objects left ---------------------------------------------------------------
drv flush || fail "flush failed"
assert_eq "$(ip netns exec "$NODE" nft -j list tables | jq '[.nftables[] | select(.table.name == "weft")] | length')" 0 "weft tables after flush"
finish
