#!/usr/bin/env bash
# weft-test: timeout 1200
# weft-test: no-san (the whole demo for minutes; the sanitizer pass takes its backends and plugins in test-weftd-backends, -bgp, -udp and the plugin tests)
# tools/demo with the bgp backend (two segments, an FRR router, BIRD on every node: the router's
# table is one of the checks) and the udp backend (TUN + userspace UDP), 3 nodes, 2 pods each, no
# iperf: every pair reachable, masquerade to the outside only, nothing left behind.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd etcd jq python3 bird birdc
require_plugins weftd
if [ ! -x /usr/lib/frr/bgpd ] || [ ! -x /usr/lib/frr/zebra ]; then skip "needs FRR (/usr/lib/frr/bgpd, zebra)"; fi
before=$(ip -br link | awk '{print $1}' | sort | tr '\n' ' ')
declare -A WANT=([bgp]=73 [udp]=72) # bgp: one more check, the router's table
for backend in bgp udp; do
	if out=$(WEFT_BUILD=$WEFT_BUILD "$TOP/tools/demo" --backend "$backend" --no-iperf 2>&1); then
		info "$(tail -1 <<<"$out")"
		grep -q "^demo: ${WANT[$backend]} of ${WANT[$backend]} checks passed ($backend" <<<"$out" ||
			check_fail "$backend: unexpected summary: $(tail -1 <<<"$out")"
		if [ "$backend" = bgp ]; then
			info "the router's table:"
			sed -n '/router.s (FRR) kernel table/,/^$/p' <<<"$out" | sed '1d; /^$/d; s/^/#/'
		fi
	else
		check_fail "demo --backend $backend failed:"$'\n'"$(tail -40 <<<"$out")"
	fi
done
after=$(ip -br link | awk '{print $1}' | sort | tr '\n' ' ')
assert_eq "$after" "$before" "host links changed by the demo"
finish
