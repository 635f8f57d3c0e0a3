# shellcheck shell=bash
# 4. Datapath: iperf3 (1 and 4 TCP streams) and ping RTT per path, each as % of the underlay
# baseline (node ↔ node over the same veth/bridge underlay) measured in the same cluster. The cluster
# is the main job's: tools/demo --measure builds 3 nodes with weftd and etcd, attaches pods through
# `weft cni add` and measures; it runs once per backend. --quick: the same cluster without the demo's
# acts (this file run as a script, below), only the paths the targets judge.

# dp_cell BPS BASELINE_BPS: "Gbit/s (% of baseline)", "–" if not measured (an empty field)
dp_cell() { if [ -n "$1" ]; then echo "$(awk -v b="$1" 'BEGIN{printf "%.2f", b/1e9}') ($(pct "$1" "$2") %)"; else echo "–"; fi; }

sec_datapath() {
	local f=$W/md/4-datapath.md be t csv key b1 b4 rtt base1 base4 baser paths
	md "$f" "### datapath: Datapath"
	md "$f" ""
	if ! ours_has weftd weft host-local || [ ! -x "$WEFT_BUILD/tool/weft" ]; then
		skipped "$f" "weftd / weft plugin / weft tool not built"; return 77
	fi
	for c in iperf3 etcd python3; do command -v "$c" >/dev/null || { skipped "$f" "needs $c"; return 77; }; done
	t=3
	q && t=1
	echo "backend,path,bps_1,bps_4,rtt_ms" >"$OUT/datapath.csv"
	if q; then
		md "$f" "iperf3 TCP for $t s with 1 stream (4 streams: full mode only), and the mean RTT of 20 pings (-i 0.01), in the"
		md "$f" "demo's cluster without its acts (\`bench/datapath.sh B CSV PATH...\`: 2 nodes, weftd + etcd, pods"
		md "$f" "attached by \`weft cni add\`, pings and masquerade checked first). Baseline: node1 → node2 over the underlay."
	else
		md "$f" "iperf3 TCP for $t s with 1 and with 4 streams (-P 4), and the mean RTT of 50 pings (-i 0.01),"
		md "$f" "in the demo cluster (\`tools/demo --backend B --measure\`: 3 nodes, weftd + etcd, pods attached by"
		md "$f" "\`weft cni add\`). Baseline: node1 → node2 over the underlay itself."
	fi
	md "$f" ""
	md "$f" "| backend | path | 1 stream Gbit/s (% of baseline) | 4 streams Gbit/s (%) | RTT ms (baseline ms) |"
	md "$f" "|---|---|---|---|---|"
	declare -A DP
	: >"$W/s4.dat"
	for be in host-gw vxlan; do
		csv=$W/dp-$be.csv
		if q; then
			# quick: the demo's cluster without its acts, only the paths the targets judge
			paths=(baseline cross-node)
			[ "$be" = host-gw ] && paths=(baseline same-node cross-node)
			if ! WEFT_BUILD=$WEFT_BUILD DP_TIME=$t bash "$BENCH/datapath.sh" "$be" "$csv" "${paths[@]}" >"$W/dp-$be.log" 2>&1; then
				log "  FAILED: bench/datapath.sh $be (quick cluster):"; tail -15 "$W/dp-$be.log" >&2
				return 1
			fi
		elif ! WEFT_BUILD=$WEFT_BUILD "$TOP/tools/demo" --backend "$be" --iperf-time "$t" --measure "$csv" >"$W/dp-$be.log" 2>&1; then
			log "  FAILED: tools/demo --backend $be:"; tail -15 "$W/dp-$be.log" >&2
			return 1
		fi
		IFS=, read -r _ base1 base4 baser < <(grep '^baseline,' "$csv")
		while IFS=, read -r key b1 b4 rtt; do
			echo "$be,$key,$b1,$b4,$rtt" >>"$OUT/datapath.csv"
			DP["$be $key"]=$(pct "$b1" "$base1")
			md "$f" "| $be | $key | $(dp_cell "$b1" "$base1") | $(dp_cell "$b4" "$base4") | $rtt ($baser) |"
			[ "$key" = baseline ] || echo "\"$be $key\" $(pct "$b1" "$base1") $(pct "$b4" "$base4")" >>"$W/s4.dat"
			if [ "$key" != baseline ]; then
				verdict_pct datapath "$(pct "$b1" "$base1")" "least favourable: $be, $key, 1 stream"
				verdict_pct datapath "$(pct "$b4" "$base4")" "least favourable: $be, $key, 4 streams"
			fi
		done <"$csv"
		say "   $be:${DP["$be same-node"]:+ same node ${DP["$be same-node"]} %,} cross node ${DP["$be cross-node"]:-?} % of baseline (1 stream)"
	done
	md "$f" ""
	md "$f" "![datapath](datapath.png)"
	md "$f" ""
	if command -v gnuplot >/dev/null; then
		gnuplot <<EOF 2>/dev/null || true
set terminal pngcairo size 900,420 noenhanced
set output "$OUT/datapath.png"
set title "Throughput as % of the underlay baseline (same run)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "% of baseline"
set yrange [0:140]
set bmargin 6
set xtics rotate by -25
set key top right horizontal
plot "$W/s4.dat" using 2:xtic(1) title "1 stream", "" using 3 title "4 streams"
EOF
	fi
	local v p
	p=${DP["host-gw same-node"]:-0}; ge "$p" 95 && v=met || v="not met"
	target "pod ↔ pod same node ≥ 95 % of host" "$p %" "$v" "1 stream, bridge"
	p=${DP["host-gw cross-node"]:-0}; ge "$p" 90 && v=met || v="not met"
	target "cross node host-gw ≥ 90 % of host" "$p %" "$v" "1 stream"
	p=${DP["vxlan cross-node"]:-0}; ge "$p" 75 && v=met || v="not met"
	target "cross node vxlan ≥ 75 % of host" "$p %" "$v" "1 stream"
	q && md "$f" "(quick mode: $t s runs; numbers are indicative only)"
	return 0
}

# ---- bench/datapath.sh BACKEND CSV PATH... (run, not sourced): the quick mode's cluster ----
# tools/demo's topology and weftd/`weft cni add` setup, without its Service, NetworkPolicy and
# records acts (most of its minute): 2 nodes (bgp: 3, node3 behind the FRR router, as the demo),
# pods pod1.1 and pod1.2 on node1, pod2.1 on node2. Checks first (pings pod <-> pod across nodes,
# pod -> outside masqueraded to node1, pod address kept across nodes; bgp: every node's routes
# learned over BGP), then per PATH (baseline, same-node, cross-node) iperf3 with 1 stream (and 4
# with DP_P4=1) for DP_TIME s (default 1) and the mean RTT of 20 pings, as
# "path,bps_1stream,bps_4streams,rtt_ms" lines in CSV (tools/demo --measure's format; bps_4streams
# empty without DP_P4). Exit 0 only if every check passed and measured.
dp_lean() {
	local i j d out key bps bps4 rtt sip sns cns
	local -A pip=() pns=()
	cluster_init "$NODES" "$DP_BACKEND"
	[ "$DP_BACKEND" = bgp ] && demo_bgp_segments >/dev/null
	for ((i = 1; i <= NODES; i++)); do
		for j in "$WEFT_BIN"/*; do [ "$(basename "$j")" = weftd ] || ln -sf "$j" "$(node_dir "$i")/bin/"; done
		weftd_start "$i" --ipam-data-dir "$(node_dir "$i")/ipam"
	done
	weftd_wait_ready $(seq "$NODES")
	[ "$DP_BACKEND" = bgp ] && demo_bgp_routers >/dev/null
	wait_for 20 converged || { tail -5 "$(node_dir 1)/weftd.log" >&2; fail "$DP_BACKEND: nodes did not converge"; }
	for key in 1.1 1.2 2.1; do
		i=${key%.*} j=${key#*.} d=$(node_dir "$i")
		pns[$key]=$(mk_netns "p$i-$j")
		out=$(ip netns exec "$(node_ns "$i")" env NETCONFPATH="$d/cni" CNI_PATH="$d/bin" CNI_CONTAINERID="dp-$i-$j" \
			CNI_IFNAME=eth0 "$WEFT_TOOL" cni add weft "/run/netns/${pns[$key]}" --cache-dir "$d/cache") ||
			fail "weft cni add for pod$key failed: $out"
		pip[$key]=$(jq -r '.ips[0].address | split("/")[0]' <<<"$out")
	done
	for key in 1.1:2.1 2.1:1.1 1.1:1.2; do
		i=${key%:*} j=${key#*:}
		ip netns exec "${pns[$i]}" ping -c1 -W2 "${pip[$j]}" >/dev/null || check_fail "$DP_BACKEND: pod$i -> pod$j (${pip[$j]}) does not answer"
	done
	[ "$(seen_peer "$OUT_NS" "$OUTSIDE_IP" 7001 "${pns[1.1]}")" = "$(node_ip 1)" ] ||
		check_fail "$DP_BACKEND: pod1.1 -> outside not masqueraded to node1"
	[ "$(seen_peer "${pns[2.1]}" "${pip[2.1]}" 7002 "${pns[1.1]}")" = "${pip[1.1]}" ] ||
		check_fail "$DP_BACKEND: pod1.1 -> pod2.1 does not arrive from the pod's address"
	: >"$DP_CSV"
	for key in "${DP_PATHS[@]}"; do
		case $key in
		baseline) sns=$(node_ns 2) sip=$(node_ip 2) cns=$(node_ns 1) ;;
		same-node) sns=${pns[1.2]} sip=${pip[1.2]} cns=${pns[1.1]} ;;
		cross-node) sns=${pns[2.1]} sip=${pip[2.1]} cns=${pns[1.1]} ;;
		*) fail "unknown path $key" ;;
		esac
		bps=$(dp_iperf "$sns" "$sip" "$cns" 1) bps4=""
		[ "$DP_P4" = 1 ] && bps4=$(dp_iperf "$sns" "$sip" "$cns" 4)
		rtt=$(ip netns exec "$cns" ping -q -c 20 -i 0.01 "$sip" | awk -F/ '/^rtt/ {print $5}')
		echo "$key,$bps,$bps4,${rtt:-0}" >>"$DP_CSV"
		if [ "$bps" = 0 ] || [ "$bps4" = 0 ] || [ -z "$rtt" ]; then check_fail "$DP_BACKEND $key: no throughput or RTT"; fi
	done
}
# dp_iperf SERVER_NS SERVER_IP CLIENT_NS STREAMS: received bits/s (0 if the run failed)
dp_iperf() {
	local pid bps
	ip netns exec "$1" iperf3 -s -1 -B "$2" -p 5201 >/dev/null 2>&1 &
	pid=$!
	wait_for 3 ip netns exec "$1" ss -ltnH "sport = :5201" || true
	bps=$(ip netns exec "$3" timeout $((DP_TIME + 10)) iperf3 -c "$2" -p 5201 -t "$DP_TIME" -P "$4" -J 2>/dev/null |
		jq -r '.end.sum_received.bits_per_second // 0' 2>/dev/null)
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "${bps:-0}"
}
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	DP_BACKEND=$1 DP_CSV=$2
	shift 2
	DP_PATHS=("$@")
	DP_TIME=${DP_TIME:-1}
	DP_P4=${DP_P4:-0}
	NODES=2
	[ "$DP_BACKEND" = bgp ] && NODES=3
	# shellcheck source=../test/lib/lib.sh
	. "$(dirname "$0")/../test/lib/lib.sh"
	# shellcheck source=../test/lib/weft-cluster-lib.sh
	. "$TOP/test/lib/weft-cluster-lib.sh"
	WEFT_TOOL=${WEFT_TOOL:-$WEFT_BUILD/tool/weft}
	# converged = every node has a route to every other node's subnet (bgp: learned over BGP)
	converged() {
		local i
		for ((i = 1; i <= NODES; i++)); do [ "$(routes_weft "$i" | wc -l)" -ge $((NODES - 1)) ] || return 1; done
	}
	# shellcheck source=../tools/demo-bgp.sh
	[ "$DP_BACKEND" = bgp ] && . "$TOP/tools/demo-bgp.sh"
	dp_lean
	exit 0
fi
