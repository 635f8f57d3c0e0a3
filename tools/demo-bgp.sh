# shellcheck shell=bash
# tools/demo --backend bgp: sourced by tools/demo after weft-cluster-lib.sh. The last node goes on
# a second underlay segment behind a router namespace running FRR (AS 65000, zebra + bgpd); every
# node runs BIRD 2 (AS 64600), configured by its weftd. No encapsulation anywhere.
#
#   node1 .. node(N-1) 10.99.0.1x -+- br0 -- (rt: FRR) -- br1 -+- nodeN 10.98.0.1N
#   etcd 10.99.0.2, outside .200  -+  10.99.0.1    10.98.0.1
#
# demo_bgp_segments (after cluster_init), demo_bgp_routers (after weftd is ready: FRR and BIRD up,
# waits for every node's routes) and demo_bgp_report (the router's table, one check) are its hooks.
# shellcheck disable=SC2015 # the demo's own idiom: every prerequisite or a message and exit
command -v bird >/dev/null && command -v birdc >/dev/null || { echo "demo: --backend bgp needs bird2 (tools/install-deps.sh)" >&2; exit 1; }
# shellcheck disable=SC2015
[ -x /usr/lib/frr/bgpd ] && [ -x /usr/lib/frr/zebra ] || { echo "demo: --backend bgp needs FRR (tools/install-deps.sh)" >&2; exit 1; }

DEMO_RT_A=$CLUSTER_UNDERLAY.1 DEMO_RT_B=10.98.0.1 DEMO_RT_NS=
# shellcheck disable=SC2034 # read by weft-cluster-lib.sh's cluster_config_json
CLUSTER_EXTRA_BACKEND='"ASNumber": 64600, "Peers": [{"IP": "'$DEMO_RT_A'", "ASNumber": 65000}, {"IP": "'$DEMO_RT_B'", "ASNumber": 65000}]'
node_ip() { if [ "$1" = "$NODES" ]; then echo "10.98.0.$((10 + $1))"; else echo "$CLUSTER_UNDERLAY.$((10 + $1))"; fi; }
# BIRD installs the BGP routes (protocol bird), weftd none: "converged" counts those
routes_weft() {
	ip -n "$(node_ns "$1")" -j route show proto bird | jq -r '.[] | "\(.dst) \(.gateway // "-") \(.dev)"' | sort
}

demo_bgp_segments() {
	local n=$NODES ns
	ns=$(node_ns "$n")
	ip -n "$UL_NS" link add br1 type bridge
	ip -n "$UL_NS" link set br1 up
	ip -n "$UL_NS" link set "ul-n$n" master br1
	ip -n "$ns" addr flush dev eth0
	ip -n "$ns" addr add "$(node_ip "$n")/24" dev eth0
	DEMO_RT_NS=$(mk_netns rt)
	local br ifn addr
	for br in br0:eth0:$DEMO_RT_A br1:eth1:$DEMO_RT_B; do
		IFS=: read -r br ifn addr <<<"$br"
		ip link add "ul-rt-$ifn" netns "$UL_NS" type veth peer name "$ifn" netns "$DEMO_RT_NS"
		ip -n "$UL_NS" link set "ul-rt-$ifn" master "$br" up
		ip -n "$DEMO_RT_NS" addr add "$addr/24" dev "$ifn"
		ip -n "$DEMO_RT_NS" link set "$ifn" up
	done
	ip netns exec "$DEMO_RT_NS" sysctl -qw net.ipv4.ip_forward=1
	for ((i = 1; i < n; i++)); do ip -n "$(node_ns "$i")" route add default via "$DEMO_RT_A"; done
	ip -n "$ns" route add default via "$DEMO_RT_B"
	ip -n "$ETCD_NS" route add 10.98.0.0/24 via "$DEMO_RT_A"
	ip -n "$OUT_NS" route add 10.98.0.0/24 via "$DEMO_RT_A"
	echo "   node$n on a second segment 10.98.0.0/24 behind router rt (FRR) $DEMO_RT_A / $DEMO_RT_B"
}

declare -a DEMO_BIRD_PID=()
demo_bgp_stop() {
	local p
	for p in "${DEMO_BIRD_PID[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "$T"/frr/*.pid; do [ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
	return 0
}

demo_bgp_routers() {
	local F=$T/frr i d
	mkdir -p "$F"
	chmod o+x "$T" # FRR drops to its own user
	chown frr:frr "$F"
	: >"$F/zebra.conf"
	{
		printf 'frr defaults traditional\nhostname rt\nlog file %s/bgpd.log\n!\nrouter bgp 65000\n' "$F"
		printf ' bgp router-id %s\n no bgp ebgp-requires-policy\n timers bgp 3 9\n' "$DEMO_RT_A"
		for ((i = 1; i <= NODES; i++)); do
			printf ' neighbor %s remote-as 64600\n neighbor %s timers connect 5\n' "$(node_ip "$i")" "$(node_ip "$i")"
		done
		printf '!\n'
	} >"$F/bgpd.conf"
	on_exit demo_bgp_stop
	ip netns exec "$DEMO_RT_NS" /usr/lib/frr/zebra -d -u frr -g frr -f "$F/zebra.conf" -i "$F/zebra.pid" -z "$F/zserv.api" \
		--vty_socket "$F" >"$F/zebra.out" 2>&1 || fail "zebra did not start: $(cat "$F/zebra.out")"
	wait_for 5 test -S "$F/zserv.api" || fail "zebra socket missing"
	ip netns exec "$DEMO_RT_NS" /usr/lib/frr/bgpd -d -u frr -g frr -f "$F/bgpd.conf" -i "$F/bgpd.pid" -z "$F/zserv.api" \
		--vty_socket "$F" >"$F/bgpd.out" 2>&1 || fail "bgpd did not start: $(cat "$F/bgpd.out")"
	for ((i = 1; i <= NODES; i++)); do
		d=$(node_dir "$i")
		wait_for 5 test -s "$d/run/bird.conf" || fail "node$i: weftd wrote no bird.conf"
		ip netns exec "$(node_ns "$i")" bird -f -c "$d/run/bird.conf" -s "$d/run/bird.ctl" -P "$d/run/bird.pid" \
			>>"$d/bird.log" 2>&1 &
		DEMO_BIRD_PID+=($!)
	done
	echo "   FRR on the router, BIRD on every node; waiting for the BGP routes"
	wait_for 40 converged || true
}

demo_bgp_report() {
	local got want i
	say "the router's (FRR) kernel table: routes learned over BGP"
	got=$(ip -n "$DEMO_RT_NS" -j route show proto bgp | jq -r '.[] | "\(.dst) via \(.gateway) dev \(.dev)"' | sort)
	while IFS= read -r i; do echo "   $i"; done <<<"$got"
	want=$(for ((i = 1; i <= NODES; i++)); do echo "$(node_subnet "$i") via $(node_ip "$i") dev eth$((i == NODES ? 1 : 0))"; done | sort)
	total=$((total + 1))
	if [ "$got" = "$want" ]; then echo "   one route per node subnet, via that node   ok"
	else echo "   expected:"; while IFS= read -r i; do echo "     $i"; done <<<"$want"; echo "   FAIL"; fails=$((fails + 1)); fi
}
