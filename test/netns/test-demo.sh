#!/usr/bin/env bash
# weft-test: no-san (the whole demo for minutes; the sanitizer pass takes its backends and plugins in test-weftd-backends, -bgp, -udp and the plugin tests)
# The main job as a test: tools/demo with both backends (3 nodes, 2 pods each, no iperf) must
# report every pair reachable, masquerade to the outside only, and clean up after itself.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd etcd jq python3
require_plugins weftd
before=$(ip -br link | awk '{print $1}' | sort | tr '\n' ' ')
for backend in vxlan host-gw; do
	if out=$(WEFT_BUILD=$WEFT_BUILD "$TOP/tools/demo" --backend "$backend" --no-iperf 2>&1); then
		info "$(tail -1 <<<"$out")"
		grep -q "^demo: 72 of 72 checks passed ($backend" <<<"$out" || check_fail "$backend: unexpected summary: $(tail -1 <<<"$out")"
	else
		check_fail "demo --backend $backend failed:"$'\n'"$(tail -40 <<<"$out")"
	fi
	left=$(ip netns list | awk '{print $1}' | grep -c -- '-[0-9]*$' || true)
	info "$backend: namespaces still present afterwards: $left (other tests may own some)"
done
after=$(ip -br link | awk '{print $1}' | sort | tr '\n' ' ')
assert_eq "$after" "$before" "host links changed by the demo"
finish
