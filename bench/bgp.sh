# shellcheck shell=bash
# Section "bgp": the bgp backend at scale and the datapath of bgp and udp beside host-gw.
#
#   convergence   one node (weftd + BIRD 2, Backend.RouteReflectors ["rr"]) on section 3's underlay
#                 (agent.sh: ul_setup, node_attach); the reflector "rr" is a BIRD instance with its
#                 own lease that announces N static routes, one per remote lease written to etcd
#                 (bench/etcd-feed.py: 100.64.0.0/10 /24s, next hops 10.99.x.y on the /16 underlay).
#                 Timed from the feeder's first request to N routes of protocol bird in the kernel;
#                 then one more node joins (its lease and its route on the reflector): time to its
#                 route. --quick: N = 100.
#   datapath      tools/demo --measure per backend (host-gw, bgp, udp), each with its own underlay
#                 baseline (node1 -> node2) in the same run: iperf3 1 and 4 streams, mean RTT of 50 pings.
#                 --quick: bgp and udp only, in bench/datapath.sh's cluster (the demo's without its acts).

BGP_RR_IP=10.99.0.5
BGP_NODE_IP=10.99.0.40

bgp_put() { # bgp_put KEY VALUE
	ip netns exec "$NSP-etcd" curl -sf -m 5 "$ETCD_URL/v3/kv/put" \
		-d "$(jq -cn --arg k "$(printf '%s' "$1" | base64 -w0)" --arg v "$(printf '%s' "$2" | base64 -w0)" '{key:$k, value:$v}')" >/dev/null
}
# bgp_rr_routes FROM TO: the reflector's static routes for etcd-feed.py's leases FROM..TO
bgp_rr_routes() {
	python3 -c '
import sys
for i in range(int(sys.argv[1]), int(sys.argv[2]) + 1):
    net = 0x64400000 + (i << 8)
    print("\troute %d.%d.%d.0/24 via 10.99.%d.%d;" % (net >> 24, (net >> 16) & 255, (net >> 8) & 255, 1 + (i >> 8), i & 255))' "$@"
}
bgp_rr_conf() { # bgp_rr_conf N: the reflector's bird.conf announcing leases 1..N
	printf 'router id %s;\nprotocol device { scan time 10; }\nprotocol static rr_routes {\n\tipv4;\n' "$BGP_RR_IP"
	bgp_rr_routes 1 "$1"
	printf '}\nprotocol bgp node1 {\n\tlocal %s as 64600;\n\tneighbor %s as 64600;\n\tdirect;\n\trr client;\n' "$BGP_RR_IP" "$BGP_NODE_IP"
	printf '\tconnect retry time 1;\n'
	# quick: the reflector opens the session 1 s after its start (BIRD's default: 5 s)
	q && printf '\tconnect delay time 1;\n'
	printf '\tipv4 { import none; export all; };\n}\n'
}
bgp_kernel_routes() { ip -n "$NSP-bgpnode" route show proto bird | grep -c . ; }
bgp_has_routes() { [ "$(bgp_kernel_routes)" -ge "$1" ]; }
bgp_has_route() { [ -n "$(ip -n "$NSP-bgpnode" route show proto bird "$1")" ]; }

sec_bgp() {
	local f=$W/md/8-bgp.md n t prefix d rd t0 t1 conv join be bes csv key b1 b4 rtt base1 base4 baser last
	md "$f" "### bgp: BGP backend (BIRD) and the udp backend"
	md "$f" ""
	# shellcheck disable=SC2153 # WEFT_BIN is set by bench/run
	WEFTD_BIN=$WEFT_BIN/weftd
	if [ ! -x "$WEFTD_BIN" ] || [ ! -x "$WEFT_BUILD/tool/weft" ]; then skipped "$f" "weftd / weft tool not built"; return 77; fi
	for c in bird birdc iperf3 python3 curl /usr/bin/etcd /usr/lib/frr/bgpd; do
		command -v "$c" >/dev/null || { skipped "$f" "needs $c"; return 77; }
	done
	n=1000
	q && n=100
	ul_setup || return 1
	prefix=/bench/bgp-$n
	bgp_put "$prefix/config" "$(jq -cn '{Network:"100.64.0.0/10", SubnetLen:24, Backend:{Type:"bgp", ASNumber:64600, RouteReflectors:["rr"]}, Masquerade:true}')" ||
		{ log "  FAILED: etcd put"; return 1; }
	# the reflector: BIRD with every route from the start; its lease comes with the others
	node_attach bgprr "$BGP_RR_IP" || return 1
	rd=$W/bgp-rr
	mkdir -p "$rd"
	bgp_rr_conf "$n" >"$rd/bird.conf"
	ip netns exec "$NSP-bgprr" bird -f -c "$rd/bird.conf" -s "$rd/bird.ctl" >>"$rd/bird.log" 2>&1 &
	track_pid $!
	# the node: weftd, then BIRD on the config weftd writes
	node_attach bgpnode "$BGP_NODE_IP" || return 1
	weftd_run bgpnode "$prefix"
	d=$W/weftd-bgpnode
	wait_until 20 weftd_ready bgpnode || { log "  FAILED: weftd not ready: $(tail -5 "$d/weftd.log")"; return 1; }
	wait_until 5 test -s "$d/run/bird.conf" || { log "  FAILED: no bird.conf"; return 1; }
	ip netns exec "$NSP-bgpnode" bird -f -c "$d/run/bird.conf" -s "$d/run/bird.ctl" >>"$d/bird.log" 2>&1 &
	track_pid $!
	wait_until 5 test -S "$d/run/bird.ctl" || { log "  FAILED: BIRD did not start"; return 1; }
	# N leases + the reflector's lease: feeder start -> N routes in the kernel
	bgp_put "$prefix/subnets/100.127.255.0-24" "{\"node\":\"rr\",\"publicIP\":\"$BGP_RR_IP\",\"backend\":\"bgp\"}" || return 1
	read -r last t0 < <(etcd_feed "$prefix" 1 "$n" host-gw) || { log "  FAILED: etcd feed"; return 1; }
	wait_until 120 bgp_has_routes "$n" || { log "  FAILED: $(bgp_kernel_routes) of $n routes after 120 s"; tail -5 "$d/weftd.log" >&2; return 1; }
	t1=$(now_ms)
	conv=$((t1 - t0))
	say "   $n remote subnets over BGP (from the reflector) in the kernel after $conv ms"
	# one node joins among N: its route on the reflector and its lease, timed from the lease
	bgp_rr_conf $((n + 1)) >"$rd/bird.conf"
	birdc -s "$rd/bird.ctl" configure >/dev/null || { log "  FAILED: reflector reconfigure"; return 1; }
	read -r last t0 < <(etcd_feed "$prefix" $((n + 1)) $((n + 1)) host-gw) || return 1
	wait_until 30 bgp_has_route "$last" || { log "  FAILED: joined node's $last not routed after 30 s"; return 1; }
	t1=$(now_ms)
	join=$((t1 - t0))
	say "   one node joining among $n: routed after $join ms"
	echo "metric,remote_nodes,ms" >"$OUT/bgp.csv"
	echo "converge,$n,$conv" >>"$OUT/bgp.csv"
	echo "join,$n,$join" >>"$OUT/bgp.csv"
	md "$f" "Convergence: one node (weftd + BIRD 2) whose only BGP peer is a route reflector (a BIRD instance"
	md "$f" "with its own lease, named in Backend.RouteReflectors) announcing one route per remote lease;"
	md "$f" "the leases are written to etcd (bench/etcd-feed.py), weftd renders the per-node import filters"
	md "$f" "and configures BIRD, BIRD installs the routes. Timed from the feeder's first request to"
	md "$f" "\`ip route show proto bird\` holding them all (polled every ~5 ms)."
	md "$f" ""
	md "$f" "| remote nodes | all learned over BGP, in the kernel (ms) | one node joining among them (ms) |"
	md "$f" "|---|---|---|"
	md "$f" "| $n | $conv | $join |"
	md "$f" ""

	t=3
	q && t=1
	echo "backend,path,bps_1,bps_4,rtt_ms" >"$OUT/datapath-bgp.csv"
	if q; then
		md "$f" "Datapath, same run: the demo's cluster without its acts (\`bench/datapath.sh B CSV PATH...\`; bgp:"
		md "$f" "3 nodes, node3 on a second segment behind an FRR router, every node's routes learned over BGP"
		md "$f" "before measuring), iperf3 TCP $t s with 1 stream (4: full mode only), mean RTT of 20 pings; each backend against"
		md "$f" "its own underlay baseline (node1 → node2). host-gw: the datapath section."
	else
		md "$f" "Datapath, same run: \`tools/demo --backend B --measure\` (3 nodes; bgp: node3 on a second segment"
		md "$f" "behind an FRR router, the measured pair on one segment), iperf3 TCP $t s with 1 and 4 streams,"
		md "$f" "mean RTT of 50 pings; each backend against its own underlay baseline (node1 → node2)."
	fi
	md "$f" ""
	md "$f" "| backend | path | 1 stream Gbit/s (% of baseline) | 4 streams Gbit/s (%) | RTT ms (baseline ms) |"
	md "$f" "|---|---|---|---|---|"
	bes="host-gw bgp udp"
	# quick: host-gw is section datapath's; the demo's cluster without its acts (bench/datapath.sh)
	q && bes="bgp udp"
	for be in $bes; do
		csv=$W/dpb-$be.csv
		if q; then
			if ! WEFT_BUILD=$WEFT_BUILD DP_TIME=$t bash "$BENCH/datapath.sh" "$be" "$csv" baseline cross-node >"$W/dpb-$be.log" 2>&1; then
				log "  FAILED: bench/datapath.sh $be (quick cluster):"; tail -15 "$W/dpb-$be.log" >&2
				return 1
			fi
		elif ! WEFT_BUILD=$WEFT_BUILD "$TOP/tools/demo" --backend "$be" --iperf-time "$t" --measure "$csv" >"$W/dpb-$be.log" 2>&1; then
			log "  FAILED: tools/demo --backend $be:"; tail -15 "$W/dpb-$be.log" >&2
			return 1
		fi
		IFS=, read -r _ base1 base4 baser < <(grep '^baseline,' "$csv")
		while IFS=, read -r key b1 b4 rtt; do
			case $key in baseline | cross-node) ;; *) continue ;; esac
			echo "$be,$key,$b1,$b4,$rtt" >>"$OUT/datapath-bgp.csv"
			md "$f" "| $be | $key | $(dp_cell "$b1" "$base1") | $(dp_cell "$b4" "$base4") | $rtt ($baser) |"
			[ "$key" = cross-node ] && say "   $be: cross node $(pct "$b1" "$base1") % of baseline (1 stream), RTT $rtt ms"
			if [ "$key" = cross-node ]; then
				verdict_pct bgp "$(pct "$b1" "$base1")" "least favourable: $be, cross node, 1 stream"
				verdict_pct bgp "$(pct "$b4" "$base4")" "least favourable: $be, cross node, 4 streams"
			fi
		done <"$csv"
	done
	md "$f" ""
	q && md "$f" "(quick mode: $n remote nodes, $t s runs; numbers are indicative only)"
	return 0
}
