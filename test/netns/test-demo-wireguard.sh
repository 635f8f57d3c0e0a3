#!/usr/bin/env bash
# weft-test: no-san (the whole demo for a minute; the sanitizer pass takes the backend in test-weftd-wireguard)
# tools/demo --backend wireguard (issue 20, item 5): 3 nodes, 2 pods each, no iperf, over
# wireguard-go (this machine has no wireguard module; each weftd in a private mount namespace for
# its UAPI socket). Every pair reachable, masquerade to the outside only, the demo's Service and
# NetworkPolicy acts, and its WireGuard act: every node's device with 2 peers that have completed a
# handshake (wg show), and a capture on the underlay bridge where every node to node packet is UDP
# port 51820 and a marker sent pod to pod is absent. Nothing left behind: links, namespaces, and the
# demo's wireguard-go processes (they exit with their TUN devices).
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd etcd jq python3 tcpdump unshare
require_plugins weftd
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v wireguard-go >/dev/null || skip "wireguard-go is not installed (the demo runs the wireguard backend over it; no kernel module is used)"
command -v wg >/dev/null || skip "wg (wireguard-tools) is not installed: the demo shows the devices with wg show"
before=$(ip -br link | awk '{print $1}' | sort | tr '\n' ' ')
wg_before=$(pgrep -x wireguard-go | sort | tr '\n' ' ' || true)
if out=$(WEFT_BUILD=$WEFT_BUILD "$TOP/tools/demo" --backend wireguard --no-iperf 2>&1); then
	info "$(tail -1 <<<"$out")"
	grep -q "^demo: 76 of 76 checks passed (wireguard" <<<"$out" || check_fail "unexpected summary: $(tail -1 <<<"$out")"
	sed -n '/^== WireGuard/,/^== addresses/p' <<<"$out" | grep -v '^== addresses' | grep -v 'node1|' | sed '/^$/d; s/^/#/'
	for i in 1 2 3; do
		grep -q "^   node$i weft-wg: UDP 51820, 2 peers, 2 with a handshake   ok\$" <<<"$out" || check_fail "node$i's WireGuard line missing"
	done
	grep -Eq "^   tcpdump -i br0 .*: [1-9][0-9]* packets UDP port 51820 .* 0 other; marker received by pod2.1: yes, in the capture: 0 times   ok\$" <<<"$out" ||
		check_fail "no encryption evidence line"
else
	check_fail "demo --backend wireguard failed:"$'\n'"$(tail -40 <<<"$out")"
fi
after=$(ip -br link | awk '{print $1}' | sort | tr '\n' ' ')
assert_eq "$after" "$before" "host links changed by the demo"
# wireguard-go exits once its TUN device goes with the node's namespace. The demo's are those whose
# /run/wireguard is a node directory of the demo's (/tmp/weft-demo.*/nI/wg): other tests may run their own
demo_wg_left() {
	local p
	for p in $(pgrep -x wireguard-go || true); do
		[[ " $wg_before " == *" $p "* ]] && continue
		grep -qs 'weft-demo\.[^ ]*/wg[^ ]* /run/wireguard ' "/proc/$p/mountinfo" && echo "$p"
	done
	return 0
}
for _ in $(seq 50); do [ -z "$(demo_wg_left)" ] && break; sleep 0.2; done
[ -z "$(demo_wg_left)" ] || check_fail "the demo's wireguard-go processes still run: $(demo_wg_left | tr '\n' ' ')"
finish
