# shellcheck shell=bash
# 4. Datapath: iperf3 (1 and 4 TCP streams) and ping RTT per path, each as % of the underlay
# baseline (node ↔ node over the same veth/bridge underlay) measured in the same cluster. The cluster
# is the main job's: tools/demo --measure builds 3 nodes with weftd and etcd, attaches pods through
# `weft cni add` and measures; it runs once per backend.

sec_datapath() {
	local f=$W/md/4-datapath.md be t csv key b1 b4 rtt base1 base4 baser
	md "$f" "## 4. Datapath"
	md "$f" ""
	if ! ours_has weftd weft host-local || [ ! -x "$WEFT_BUILD/tool/weft" ]; then
		skipped "$f" "weftd / weft plugin / weft tool not built"; return 77
	fi
	for c in iperf3 etcd python3; do command -v "$c" >/dev/null || { skipped "$f" "needs $c"; return 77; }; done
	t=3
	q && t=1
	echo "backend,path,bps_1,bps_4,rtt_ms" >"$OUT/datapath.csv"
	md "$f" "iperf3 TCP for $t s with 1 and with 4 streams (-P 4), and the mean RTT of 50 pings (-i 0.01),"
	md "$f" "in the demo cluster (\`tools/demo --backend B --measure\`: 3 nodes, weftd + etcd, pods attached by"
	md "$f" "\`weft cni add\`). Baseline: node1 → node2 over the underlay itself."
	md "$f" ""
	md "$f" "| backend | path | 1 stream Gbit/s (% of baseline) | 4 streams Gbit/s (%) | RTT ms (baseline ms) |"
	md "$f" "|---|---|---|---|---|"
	declare -A DP
	: >"$W/s4.dat"
	for be in host-gw vxlan; do
		csv=$W/dp-$be.csv
		if ! WEFT_BUILD=$WEFT_BUILD "$TOP/tools/demo" --backend "$be" --iperf-time "$t" --measure "$csv" >"$W/dp-$be.log" 2>&1; then
			log "  FAILED: tools/demo --backend $be:"; tail -15 "$W/dp-$be.log" >&2
			return 1
		fi
		IFS=, read -r _ base1 base4 baser < <(grep '^baseline,' "$csv")
		while IFS=, read -r key b1 b4 rtt; do
			echo "$be,$key,$b1,$b4,$rtt" >>"$OUT/datapath.csv"
			DP["$be $key"]=$(pct "$b1" "$base1")
			md "$f" "| $be | $key | $(awk -v b="$b1" 'BEGIN{printf "%.2f", b/1e9}') ($(pct "$b1" "$base1") %) | $(awk -v b="$b4" 'BEGIN{printf "%.2f", b/1e9}') ($(pct "$b4" "$base4") %) | $rtt ($baser) |"
			[ "$key" = baseline ] || echo "\"$be $key\" $(pct "$b1" "$base1") $(pct "$b4" "$base4")" >>"$W/s4.dat"
		done <"$csv"
		say "   $be: same node ${DP["$be same-node"]:-?} %, cross node ${DP["$be cross-node"]:-?} % of baseline (1 stream)"
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
