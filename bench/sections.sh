# shellcheck shell=bash
# The benchmark sections of bench/run. Each sec_NAME writes its part of the report to
# $W/md/<n>-NAME.md, raw figures to $OUT/*.csv, and returns 0 (measured, checks passed),
# 77 (skipped, reason in the report) or 1 (a measurement or a correctness check failed).

# ---------------------------------------------------------------------------------------------
# 1. Pod setup and teardown: four realistic chains, weft and the reference side by side, driven
# by cnitool and directly (benchexec's chain runner), with the floor (bench/floor.c) beside them.

CHAINS="flannel podman hostport weft"
declare -A CH_TITLE=(
	[flannel]="(a) flannel-style: bridge (hairpinMode, isDefaultGateway, no ipMasq) + host-local + portmap, no mappings"
	[podman]="(b) podman's default network: bridge (isGateway, ipMasq, hairpinMode) + host-local + portmap + firewall + tuning"
	[hostport]="(c) a pod with one hostPort: chain (a) with runtimeConfig.portMappings (one TCP hostPort per pod)"
	[weft]="(d) what weftd writes: weft + portmap (reference: the equivalent bridge + host-local + portmap)"
)
declare -A CH_MAIN=([flannel]="bridge+host-local" [podman]="bridge+host-local" [hostport]="bridge+host-local" [weft]="weft")
declare -A CH_FLOOR=([flannel]="-H" [podman]="-H -M" [hostport]="-H" [weft]="-H")
declare -A CH_IDX=([flannel]=0 [podman]=1 [hostport]=2 [weft]=3)
declare -A S1      # "chain impl driver op conc" -> "median p95 max n" (ms); "... step" -> main step stats
declare -A W1      # "chain impl driver op conc" -> wall ms of the whole batch
declare -A C1      # "chain impl driver op conc" -> CPU ms (user+system) per op, mean over the batch
declare -A FL      # "flags op" -> "median p95 max n"; "flags op wall" -> wall ms of -j 2

# ch_octet CHAIN IMPL: the second octet of the chain's /16 (each chain and implementation its own)
ch_octet() { echo $((201 + 2 * CH_IDX[$1] + ($([ "$2" = ref ] && echo 1 || echo 0)))); }

# ch_conf CHAIN IMPL: $W/ch-CHAIN-IMPL/net.d/bench.conflist (cnitool) and step-K.json, one per
# plugin with name and cniVersion as libcni sends them (direct); the hostport chain's portmap step
# is per pod (step-1-<i>.json with runtimeConfig). Prints nothing.
ch_conf() {
	local c=$1 impl=$2 o d br net
	o=$(ch_octet "$c" "$impl")
	d=$W/ch-$c-$impl
	br=wb$((CH_IDX[$c]))-$impl
	net=$NSP-ch$((CH_IDX[$c]))-$impl
	mkdir -p "$d/net.d" "$d/ipam" "$d/run"
	local bridge_hl
	bridge_hl=$(jq -n --arg br "$br" --arg sub "10.$o.1.0/24" --arg nw "10.$o.0.0/16" --arg dd "$d/ipam" \
		'{type:"bridge", bridge:$br, hairpinMode:true, isGateway:true, isDefaultGateway:true, ipMasq:false,
		  ipam:{type:"host-local", ranges:[[{subnet:$sub}]], routes:[{dst:$nw}], dataDir:$dd}}')
	case $c in
	flannel | hostport)
		jq -n --arg name "$net" --argjson b "$bridge_hl" \
			'{cniVersion:"1.0.0", name:$name, plugins:[$b, {type:"portmap", capabilities:{portMappings:true}}]}' ;;
	podman)
		jq -n --arg name "$net" --arg br "$br" --arg sub "10.$o.0.0/16" --arg gw "10.$o.0.1" --arg dd "$d/ipam" \
			'{cniVersion:"1.0.0", name:$name, plugins:[
			  {type:"bridge", bridge:$br, isGateway:true, ipMasq:true, hairpinMode:true,
			   ipam:{type:"host-local", routes:[{dst:"0.0.0.0/0"}], ranges:[[{subnet:$sub, gateway:$gw}]], dataDir:$dd}},
			  {type:"portmap", capabilities:{portMappings:true}}, {type:"firewall"}, {type:"tuning"}]}' ;;
	weft)
		if [ "$impl" = ours ]; then
			printf 'WEFT_NETWORK=10.%s.0.0/16\nWEFT_SUBNET=10.%s.1.1/24\nWEFT_MTU=1450\nWEFT_IPMASQ=false\n' "$o" "$o" >"$d/run/subnet.env"
			jq -n --arg name "$net" --arg br "$br" --arg rd "$d/run" --arg dd "$d/ipam" \
				'{cniVersion:"1.0.0", name:$name, plugins:[
				  {type:"weft", runDir:$rd, bridge:$br, dataDir:$dd, hairpinMode:true, isDefaultGateway:true},
				  {type:"portmap", capabilities:{portMappings:true}, snat:true}]}'
		else
			jq -n --arg name "$net" --argjson b "$bridge_hl" \
				'{cniVersion:"1.0.0", name:$name, plugins:[$b + {mtu:1450}, {type:"portmap", capabilities:{portMappings:true}, snat:true}]}'
		fi ;;
	esac >"$d/net.d/bench.conflist"
	local k n
	n=$(jq '.plugins | length' "$d/net.d/bench.conflist")
	for ((k = 0; k < n; k++)); do
		jq -c --argjson k "$k" '.plugins[$k] + {cniVersion, name}' "$d/net.d/bench.conflist" >"$d/step-$k.json"
	done
	echo "$n" >"$d/nsteps"
}

# ch_cmds CHAIN IMPL DRIVER OP FROM TO: benchexec lines, one pod each (pods $NSP-chI-IMPL-p<i>)
ch_cmds() {
	local c=$1 impl=$2 drv=$3 op=$4 from=$5 to=$6 i k bin d n pp line cap types=()
	bin=$(impl_bin "$impl")
	d=$W/ch-$c-$impl
	pp=ch$((CH_IDX[$c]))-$impl-p
	n=$(cat "$d/nsteps")
	mapfile -t types < <(jq -r '.plugins[].type' "$d/net.d/bench.conflist")
	for ((i = from; i <= to; i++)); do
		if [ "$c" = hostport ]; then
			cap="{\"portMappings\":[{\"hostPort\":$((20000 + i)),\"containerPort\":80,\"protocol\":\"tcp\"}]}"
			[ "$drv" = direct ] && [ "$op" = ADD ] &&
				jq -c --argjson m "$cap" '. + {runtimeConfig: $m}' "$d/step-1.json" >"$d/step-1-$i.json"
		fi
		if [ "$drv" = cnitool ]; then
			echo "${cap:+CAP_ARGS=$cap }NETCONFPATH=$d/net.d CNI_PATH=$bin CNI_IFNAME=eth0 $CNITOOL ${op,,} $NSP-ch$((CH_IDX[$c]))-$impl $(nsp "$pp$i")"
			continue
		fi
		line="CNI_COMMAND=$op CNI_CONTAINERID=$c-$i CNI_NETNS=$(nsp "$pp$i") CNI_IFNAME=eth0 CNI_PATH=$bin"
		local order=() sep=""
		if [ "$op" = ADD ]; then for ((k = 0; k < n; k++)); do order+=("$k"); done
		else for ((k = n - 1; k >= 0; k--)); do order+=("$k"); done; fi
		for k in "${order[@]}"; do
			local conf=$d/step-$k.json
			[ "$c" = hostport ] && [ "$k" = 1 ] && conf=$d/step-1-$i.json
			line+="$sep <$conf"
			[ "$op" != ADD ] && line+=" @$d/result-$i.json"
			line+=" $bin/${types[$k]}"
			sep=" ::"
		done
		echo "$line"
	done
}

# ch_run CHAIN IMPL DRIVER OP CONC FROM TO: one batch; records stats (whole chain, and the main
# plugin's own step for direct), CSV; keeps direct ADD results for DEL's prevResult
ch_run() {
	local c=$1 impl=$2 drv=$3 op=$4 conc=$5 from=$6 to=$7 d col
	d=$W/s1/$c-$impl-$drv-$op-$conc
	rm -rf "$d"
	ch_cmds "$c" "$impl" "$drv" "$op" "$from" "$to" | bx "$NSP-ch$((CH_IDX[$c]))-$impl" "$conc" "$d" || return 1
	S1["$c $impl $drv $op $conc"]=$(awk '{print $2}' "$d/lat" | stats_us)
	W1["$c $impl $drv $op $conc"]=$(awk '{printf "%.1f", $1/1000}' "$d/total_us")
	C1["$c $impl $drv $op $conc"]=$(awk -v n=$((to - from + 1)) '{printf "%.3f", $1/1000/n}' "$d/cpu_us")
	if [ "$drv" = direct ]; then
		# the main plugin: first step of ADD, last step of DEL (reverse order)
		if [ "$op" = ADD ]; then col=5; else col='NF'; fi
		S1["$c $impl $drv $op $conc step"]=$(awk "{print \$$col}" "$d/lat" | stats_us)
	fi
	sort -n "$d/lat" | awk -v p="$c,$impl,$drv,$op,$conc" '{s=""; for (k = 5; k <= NF; k++) s = s (k > 5 ? ";" : "") $k;
		printf "%s,%d,%d,%d,%s\n", p, $1, $2, $3, s}' >>"$OUT/setup.csv"
	if [ "$drv" = direct ] && [ "$op" = ADD ]; then
		local i
		for ((i = from; i <= to; i++)); do cp "$d/out/$((i - from)).out" "$W/ch-$c-$impl/result-$i.json"; done
	fi
	LAST=$d
}

# fl_run FLAGS OP WORKERS N: the floor program in its own node namespace
fl_run() {
	local flags=$1 op=$2 j=$3 n=$4 d key
	key="$flags $op"; [ "$j" != 1 ] && key="$flags $op j$j"
	d=$W/s1/floor-${flags// /}-$op-$j
	mkdir -p "$d"
	# shellcheck disable=SC2086
	ip netns exec "$NSP-fl" "$FLOOR" $flags -j "$j" -s 10.220 -p "/run/netns/$NSP-fl-p%d" -o "${op,,}" -l "$d/lat" 1 "$n" 2>"$d/stderr" ||
		{ log "  FAILED: floor $flags $op -j $j"; cat "$d/stderr" >&2; return 1; }
	FL["$key"]=$(awk '{print $2}' "$d/lat" | stats_us)
	FL["$key wall"]=$(awk '/^total_us/ {printf "%.1f", $2/1000}' "$d/stderr")
	FL["$key cpu"]=$(awk -v n="$n" '/^cpu_us/ {printf "%.3f", $2/1000/n}' "$d/stderr")
	sort -n "$d/lat" | awk -v p="floor${flags// /},floor,direct,$op,$j" '{printf "%s,%d,%d,%d,\n", p, $1, $2, $3}' >>"$OUT/setup.csv"
}

# dist A B: A - B with 3 decimals
dist() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "nan" || b == "nan") print "n/a"; else printf "%+.3f", a - b }'; }
within() { awk -v a="$1" -v b="$2" -v m="$3" 'BEGIN { exit !(a != "" && b != "" && a - b <= m) }'; }

sec_setup() {
	local f=$W/md/1-setup.md c impl drv op n conc need
	md "$f" "### setup: Pod setup and teardown"
	md "$f" ""
	# shellcheck disable=SC2153 # WEFT_BIN is set by bench/run, which sources this file
	if ! ours_has bridge host-local portmap firewall tuning weft; then skipped "$f" "weft's plugins not all built in $WEFT_BIN"; return 77; fi
	if [ ! -x "$CNITOOL" ]; then skipped "$f" "no cnitool at $CNITOOL (tools/build-cnitool.sh failed?)"; return 77; fi
	if [ ! -x "$FLOOR" ]; then skipped "$f" "the floor program could not be built (needs $WEFT_BUILD/libweft.a)"; return 77; fi
	n=100; conc=100
	q && { n=5; conc=10; }
	need=$((n > conc ? n : conc))
	echo "chain,impl,driver,op,concurrency,index,us,maxrss_kb,step_us" >"$OUT/setup.csv"
	say "   chains: $CHAINS; $n sequential ADD/DEL per chain, implementation and driver; $conc concurrent"
	for c in $CHAINS; do
		for impl in ref ours; do
			ch_conf "$c" "$impl"
			ns_add "ch$((CH_IDX[$c]))-$impl" >/dev/null
			ns_add_many "ch$((CH_IDX[$c]))-$impl-p" 1 "$need"
		done
	done
	ns_add fl >/dev/null
	ns_add_many "fl-p" 1 "$need"

	# The floor: sequential, then $conc at once: ADD with 2 workers (2 cores, CPU-bound); DEL with
	# one worker per pod, since a link deletion mostly waits for RCU grace periods, which concurrent
	# deletions share (2 workers would be slower than the plugins); without and with the masq elements.
	local fflags
	for fflags in "-H" "-H -M"; do
		fl_run "$fflags" ADD 1 "$n" && fl_run "$fflags" DEL 1 "$n" &&
			fl_run "$fflags" ADD 2 "$conc" && fl_run "$fflags" DEL "$conc" "$conc" || return 1
	done

	# Phases outer, implementations inner: both are measured close together in time.
	for c in $CHAINS; do
		for drv in direct cnitool; do
			for impl in ref ours; do
				ch_run "$c" "$impl" "$drv" ADD 1 1 "$n" || return 1
				distinct_ips "$LAST" "$n" || return 1
				if [ "$c" = hostport ]; then # the hostPort mappings really exist
					if [ "$impl" = ours ]; then
						[ "$(ip netns exec "$NSP-ch2-ours" nft -j list map inet weft pm-dnat4 | jq '[.nftables[].map.elem? // [] | .[]] | length')" = "$n" ] ||
							{ log "  FAILED: weft: expected $n hostPort elements"; return 1; }
					else
						[ "$(ip netns exec "$NSP-ch2-ref" iptables-save -t nat | grep -c -- '--dport 2[0-9]\{4\}')" -ge "$n" ] ||
							{ log "  FAILED: reference: expected $n hostPort DNAT rules"; return 1; }
					fi
				fi
				ch_run "$c" "$impl" "$drv" DEL 1 1 "$n" || return 1
				local left
				left=$(store_count "$W/ch-$c-$impl/ipam" "$NSP-ch$((CH_IDX[$c]))-$impl")
				[ "$left" = 0 ] || { log "  FAILED: $c $impl: $left reservations left after DEL"; return 1; }
			done
		done
		for drv in direct cnitool; do
			for impl in ref ours; do
				ch_run "$c" "$impl" "$drv" ADD "$conc" 1 "$conc" || return 1
				distinct_ips "$LAST" "$conc" || return 1
				ch_run "$c" "$impl" "$drv" DEL "$conc" 1 "$conc" || return 1
				left=$(store_count "$W/ch-$c-$impl/ipam" "$NSP-ch$((CH_IDX[$c]))-$impl")
				[ "$left" = 0 ] || { log "  FAILED: $c $impl: $left reservations left after concurrent DEL"; return 1; }
			done
		done
	done
	s1_report "$f" "$n" "$conc"
	return 0
}

# s1_report FILE N CONC: per-chain tables, targets, plots
s1_report() {
	local f=$1 n=$2 conc=$3 c fk fm row
	md "$f" "Every chain runs twice, weft's plugins and the reference's (Go, $REF_BIN), each in its own node"
	md "$f" "namespace with its own bridge, /16 and dataDir, the same conflist apart from those. Per-op latency is"
	md "$f" "the wall time of one pod's whole chain, measured by bench/benchexec.c inside the node namespace."
	md "$f" "*cnitool*: \`NETCONFPATH=… CNI_PATH=… cnitool add|del <net> /run/netns/<pod>\` (libcni: config"
	md "$f" "loading, result cache, and one exec per plugin). *direct*: benchexec's chain runner execs each plugin"
	md "$f" "in turn with the CNI environment and its config on stdin, prevResult spliced in as libcni does (DEL:"
	md "$f" "reverse order, the ADD result as prevResult) — what a runtime's own overhead would be if it were zero."
	md "$f" "*main step*: the first plugin alone (bridge with its host-local, or weft), from the same direct runs."
	md "$f" ""
	md "$f" "*floor*: bench/floor.c does the kernel work of one bridge pod ADD (veth with the peer created in the"
	md "$f" "pod, bridge port + hairpin, pod sysctls, link up, address, route; with -M also the ipMasq nft elements)"
	md "$f" "and DEL (the pod's link, [the elements]) in one process, with no exec, JSON or IPAM store — the same"
	md "$f" "messages from the same libweft.a. Concurrent floor: ADD of $conc pods by 2 worker processes (2 cores);"
	md "$f" "DEL by one process per pod (deletions mostly wait for RCU grace periods, which concurrent ones share)."
	md "$f" "Chain (b)'s floor includes the masquerade elements; (c)'s does not include the hostPort element."
	md "$f" "Distance to the floor = median − floor median (concurrent: wall / floor wall). *CPU per op*: user +"
	md "$f" "system time of the whole batch (every process, getrusage) divided by its pods — which a busy machine"
	md "$f" "inflates far less than wall time; cnitool's own CPU is included in its rows."
	md "$f" ""
	: >"$W/s1-seq.dat"
	: >"$W/s1-conc.dat"
	for c in $CHAINS; do
		fk=${CH_FLOOR[$c]}
		md "$f" "#### ${CH_TITLE[$c]}"
		md "$f" ""
		md "$f" "weft's conflist: \`$(jq -c 'del(.plugins[].ipam?.dataDir, .plugins[].dataDir?, .plugins[].runDir?)' "$W/ch-$c-ours/net.d/bench.conflist" | sed 's/null//g')\`"
		md "$f" ""
		md "$f" "| op ($n sequential, ms) | driver | weft median / p95 | reference median / p95 | ref/weft | floor | weft − floor | ref − floor | CPU per op: weft / ref / floor |"
		md "$f" "|---|---|---|---|---|---|---|---|---|"
		local op drv key wm wp rmed rp
		for op in ADD DEL; do
			read -r fm _ <<<"${FL["$fk $op"]}"
			for row in "direct chain" "direct step" "cnitool chain"; do
				drv=${row% *}
				key="$c ours $drv $op 1"; [ "${row#* }" = step ] && key="$key step"
				read -r wm wp _ <<<"${S1["$key"]}"
				key="$c ref $drv $op 1"; [ "${row#* }" = step ] && key="$key step"
				read -r rmed rp _ <<<"${S1["$key"]}"
				local label=$op
				[ "${row#* }" = step ] && label="$op, main step (${CH_MAIN[$c]})"
				local cpu="—"
				[ "${row#* }" = chain ] && cpu="${C1["$c ours $drv $op 1"]:-?} / ${C1["$c ref $drv $op 1"]:-?} / ${FL["$fk $op cpu"]:-?}"
				md "$f" "| $label | $drv | $wm / $wp | $rmed / $rp | **$(ratio "$rmed" "$wm")×** | $fm | $(dist "$wm" "$fm") | $(dist "$rmed" "$fm") | $cpu |"
			done
			read -r wm _ <<<"${S1["$c ours direct $op 1"]}"
			read -r rmed _ <<<"${S1["$c ref direct $op 1"]}"
			printf '%s\n' "\"$c\\n$op\" $wm $rmed $fm" >>"$W/s1-seq.dat"
		done
		md "$f" ""
		md "$f" "| $conc at once (wall ms) | driver | weft wall (per-op median) | reference wall (per-op median) | ref/weft | floor wall (ADD: 2 workers, DEL: 1 per pod) | weft / floor | ref / floor |"
		md "$f" "|---|---|---|---|---|---|---|---|"
		for op in ADD DEL; do
			local fw=${FL["$fk $op j2 wall"]:-}
			[ "$op" = DEL ] && fw=${FL["$fk $op j$conc wall"]}
			for drv in direct cnitool; do
				local ow=${W1["$c ours $drv $op $conc"]} rw=${W1["$c ref $drv $op $conc"]}
				read -r wm _ <<<"${S1["$c ours $drv $op $conc"]}"
				read -r rmed _ <<<"${S1["$c ref $drv $op $conc"]}"
				md "$f" "| $op | $drv | $ow ($wm) | $rw ($rmed) | **$(ratio "$rw" "$ow")×** | $fw | $(ratio "$ow" "$fw")× | $(ratio "$rw" "$fw")× |"
			done
			printf '%s\n' "\"$c\\n$op $conc\" ${W1["$c ours direct $op $conc"]} ${W1["$c ref direct $op $conc"]} $fw" >>"$W/s1-conc.dat"
		done
		md "$f" ""
	done
	md "$f" "All IPs distinct in every ADD batch (checked; a duplicate fails the run); the host-local store is"
	md "$f" "empty after every DEL batch (checked); chain (c)'s hostPorts exist after its ADDs (nft map elements"
	md "$f" "for weft, iptables DNAT rules for the reference; checked)."
	md "$f" ""
	md "$f" "![sequential](setup-seq.png) ![concurrent](setup-conc.png)"
	md "$f" ""
	plot_bars "$W/s1-seq.dat" "$OUT/setup-seq.png" "Sequential pod ops, direct, median latency of the chain ($n pods)" "ms (log)" log
	plot_bars "$W/s1-conc.dat" "$OUT/setup-conc.png" "$conc pods at once, direct, wall time of the batch" "ms (log)" log

	# Targets, judged on every chain (all must meet); the least favourable chain leads.
	local m_add="" m_del="" m_conc="" v_add=met v_del=met v_conc=met worst="" worst_r=999 r lim wd fm2
	for c in $CHAINS; do
		fk=${CH_FLOOR[$c]}
		lim=2.5; [ "$c" = weft ] && lim=1.5
		read -r wm _ <<<"${S1["$c ours direct ADD 1 step"]}"; read -r fm _ <<<"${FL["$fk ADD"]}"
		m_add+="${m_add:+; }${c%%-*} $(dist "$wm" "$fm") (≤ $lim)"
		within "$wm" "$fm" "$lim" || v_add="not met"
		read -r wm _ <<<"${S1["$c ours direct DEL 1 step"]}"; read -r fm2 _ <<<"${FL["$fk DEL"]}"
		m_del+="${m_del:+; }$c $(dist "$wm" "$fm2")"
		within "$wm" "$fm2" 2 || v_del="not met"
		wd=$(ratio "${W1["$c ours direct ADD $conc"]}" "${FL["$fk ADD j2 wall"]}")
		m_conc+="${m_conc:+; }$c ${wd}×"
		{ [ "$wd" != n/a ] && ge 1.5 "$wd"; } || v_conc="not met"
		for drv in direct cnitool; do
			read -r wm _ <<<"${S1["$c ours $drv ADD 1"]}"; read -r rmed _ <<<"${S1["$c ref $drv ADD 1"]}"
			r=$(ratio "$rmed" "$wm")
			if awk -v a="$r" -v b="$worst_r" 'BEGIN { exit !(a + 0 < b + 0) }'; then worst_r=$r; worst="chain $c via $drv: $wm vs $rmed ms"; fi
		done
	done
	target "ADD of the main plugin within 2.5 ms (bridge+host-local) / 1.5 ms (weft) of the floor, every chain" "$m_add ms" "$v_add" "direct, sequential median; main step vs floor"
	target "DEL of the main plugin within 2 ms of the floor, every chain" "$m_del ms" "$v_del" "direct, sequential median; main step vs floor"
	target "$conc concurrent ADDs within 1.5× the floor's wall time, every chain" "$m_conc" "$v_conc" "direct, whole chain; floor: 2 workers"
	if ge "$worst_r" 5; then v=met; else v="not met"; fi
	target "ADD ≥ 5× faster than the reference (least favourable chain and driver)" "${worst_r}× ($worst)" "$v" "sequential median of the whole chain"
	r=$(ratio "${W1["flannel ref direct ADD $conc"]}" "${W1["flannel ours direct ADD $conc"]}")
	local r2
	r2=$(ratio "${W1["flannel ref cnitool ADD $conc"]}" "${W1["flannel ours cnitool ADD $conc"]}")
	if ge "$r" 10 && ge "$r2" 10; then v=met; else v="not met"; fi
	target "concurrent ADD ≥ 10× faster ($conc pods, chain (a))" "${r}× direct wall; ${r2}× via cnitool" "$v" "wall time of the batch"
	read -r wm _ <<<"${S1["hostport ours cnitool ADD 1"]}"; read -r rmed _ <<<"${S1["hostport ref cnitool ADD 1"]}"
	r=$(ratio "$rmed" "$wm")
	if ge "$r" 10; then v=met; else v="not met"; fi
	target "ADD with a hostPort ≥ 10× faster" "${r}× via cnitool ($wm vs $rmed ms); $(ratio "$(echo "${S1["hostport ref direct ADD 1"]}" | cut -d' ' -f1)" "$(echo "${S1["hostport ours direct ADD 1"]}" | cut -d' ' -f1)")× direct" "$v" "chain (c)"
	S1_HEADLINE="least favourable: ${worst_r}× ($worst)"
	verdict_ratio setup "$worst_r" "${worst_r}×" "reference / weft, least favourable chain and driver: $worst"
}

# ---------------------------------------------------------------------------------------------
# 2. Scale

sec_scale() {
	local f=$W/md/2-scale.md impl sizes k size prev i d ipam_sizes ik
	md "$f" "### scale: Scale"
	md "$f" ""
	if ! ours_has bridge host-local; then skipped "$f" "weft's bridge/host-local not built in $WEFT_BIN"; return 77; fi
	sizes="0 250 1000"; k=20; ipam_sizes="0 250 1000 4000"; ik=50
	q && { sizes="0 50"; k=5; ipam_sizes="0 250"; ik=10; }
	say "   pods on the node: $sizes ($k probe ADD+DEL each); IPAM store sizes: $ipam_sizes ($ik ops each)"
	echo "impl,what,size,op,index,us,maxrss_kb" >"$OUT/scale.csv"
	declare -A SC
	for impl in ref ours; do
		mkconf "sc-$impl" "$impl"
		ns_add "sc-$impl" >/dev/null
		ns_add_many "sc-$impl-q" 1 "$k"
	done
	prev=0
	for size in $sizes; do
		for impl in ref ours; do
			if ((size > prev)); then
				ns_add_many "sc-$impl-p" $((prev + 1)) "$size"
				# populate with real pods (netns + veth) of the same implementation; not measured
				cmds_direct "sc-$impl" "$impl" ADD $((prev + 1)) "$size" "sc-$impl-p" |
					bx "$NSP-sc-$impl" 2 "$W/s2/$impl-fill-$size" || return 1
			fi
			for op in ADD DEL; do
				d=$W/s2/$impl-$size-$op
				cmds_direct "sc-$impl" "$impl" "$op" 1 "$k" "sc-$impl-q" | sed "s/CONTAINERID=sc-$impl-/CONTAINERID=probe-/" |
					bx "$NSP-sc-$impl" 1 "$d" || return 1
				[ "$op" = ADD ] && { distinct_ips "$d" "$k" || return 1; }
				SC["$impl $size $op"]=$(awk '{print $2}' "$d/lat" | stats_us)
				lat_csv "$d" "$impl,pods,$size,$op" >>"$OUT/scale.csv"
			done
			local nlinks
			nlinks=$(ip -n "$NSP-sc-$impl" -o link show master "wb-$impl" | wc -l)
			[ "$nlinks" = "$size" ] || { log "  FAILED: $impl: $nlinks bridge ports with $size pods"; return 1; }
		done
		prev=$size
	done
	ns_del_prefix "sc-"

	# host-local alone against the store size (populated with real ADDs of the same implementation)
	declare -A IP
	for impl in ref ours; do
		local o dd=$W/ipam-$impl
		o=$(impl_octet "$impl")
		jq -n --arg name "$NSP-ipam-$impl" --arg sub "10.$o.0.0/16" --arg dd "$dd" \
			'{cniVersion:"1.0.0", name:$name, type:"bridge", ipam:{type:"host-local", ranges:[[{subnet:$sub}]], dataDir:$dd}}' >"$W/ipam-$impl.json"
	done
	ns_add ipam >/dev/null
	prev=0
	for size in $ipam_sizes; do
		for impl in ref ours; do
			local bin
			bin=$(impl_bin "$impl")
			if ((size > prev)); then
				for ((i = prev + 1; i <= size; i++)); do
					echo "CNI_COMMAND=ADD CNI_CONTAINERID=fill-$i CNI_NETNS=$(nsp ipam) CNI_IFNAME=eth0 CNI_PATH=$bin <$W/ipam-$impl.json $bin/host-local"
				done | bx "$NSP-ipam" 2 "$W/s2/ipam-$impl-fill-$size" || return 1
			fi
			for op in ADD DEL; do
				d=$W/s2/ipam-$impl-$size-$op
				for ((i = 1; i <= ik; i++)); do
					echo "CNI_COMMAND=$op CNI_CONTAINERID=probe-$i CNI_NETNS=$(nsp ipam) CNI_IFNAME=eth0 CNI_PATH=$bin <$W/ipam-$impl.json $bin/host-local"
				done | bx "$NSP-ipam" 1 "$d" || return 1
				[ "$op" = ADD ] && { distinct_ips "$d" "$ik" || return 1; }
				IP["$impl $size $op"]=$(awk '{print $2}' "$d/lat" | stats_us)
				lat_csv "$d" "$impl,ipam,$size,$op" >>"$OUT/scale.csv"
			done
			local c
			c=$(store_count "$W/ipam-$impl" "$NSP-ipam-$impl")
			[ "$c" = "$size" ] || { log "  FAILED: $impl: $c reservations in a store of $size"; return 1; }
		done
		prev=$size
	done

	md "$f" "Probe pods are ADDed and then DELed ($k each, direct exec, median/p95 ms) on a node that already"
	md "$f" "has N running pods (real netns + veth on the bridge, created by the same implementation; one /16)."
	md "$f" ""
	md "$f" "| pods on node | weft ADD | weft DEL | reference ADD | reference DEL | ref/weft ADD |"
	md "$f" "|---|---|---|---|---|---|"
	: >"$W/s2-pods.dat"
	for size in $sizes; do
		local oa od ra rd oa95 od95 ra95 rd95
		read -r oa oa95 _ <<<"${SC["ours $size ADD"]}"; read -r od od95 _ <<<"${SC["ours $size DEL"]}"
		read -r ra ra95 _ <<<"${SC["ref $size ADD"]}"; read -r rd rd95 _ <<<"${SC["ref $size DEL"]}"
		md "$f" "| $size | $oa / $oa95 | $od / $od95 | $ra / $ra95 | $rd / $rd95 | $(ratio "$ra" "$oa")× |"
		verdict_ratio scale "$(ratio "$ra" "$oa")" "$(ratio "$ra" "$oa")×" "reference / weft ADD, least favourable row: $size pods on the node"
		echo "$size $oa $od $ra $rd" >>"$W/s2-pods.dat"
	done
	md "$f" ""
	md "$f" "host-local alone (ADD then DEL of $ik probe containers, direct exec, median/p95 ms) against the"
	md "$f" "number of reservations already in the store:"
	md "$f" ""
	md "$f" "| reservations | weft ADD | weft DEL | reference ADD | reference DEL | ref/weft ADD |"
	md "$f" "|---|---|---|---|---|---|"
	: >"$W/s2-ipam.dat"
	for size in $ipam_sizes; do
		read -r oa oa95 _ <<<"${IP["ours $size ADD"]}"; read -r od od95 _ <<<"${IP["ours $size DEL"]}"
		read -r ra ra95 _ <<<"${IP["ref $size ADD"]}"; read -r rd rd95 _ <<<"${IP["ref $size DEL"]}"
		md "$f" "| $size | $oa / $oa95 | $od / $od95 | $ra / $ra95 | $rd / $rd95 | $(ratio "$ra" "$oa")× |"
		verdict_ratio scale "$(ratio "$ra" "$oa")" "$(ratio "$ra" "$oa")×" "reference / weft ADD, least favourable row: host-local alone, $size reservations"
		echo "$size $oa $od $ra $rd" >>"$W/s2-ipam.dat"
	done
	md "$f" ""
	md "$f" "![pods](scale-pods.png) ![ipam](scale-ipam.png)"
	md "$f" ""
	plot_lines "$W/s2-pods.dat" "$OUT/scale-pods.png" "ADD/DEL latency vs pods already on the node" "pods on the node" "median ms (log)"
	plot_lines "$W/s2-ipam.dat" "$OUT/scale-ipam.png" "host-local op time vs store size" "reservations in the store" "median ms (log)"

	local first last a0 a1 r
	first=${sizes%% *}; last=${sizes##* }
	a0=${SC["ours $first ADD"]%% *}; a1=${SC["ours $last ADD"]%% *}
	r=$(awk -v a="$a0" -v b="$a1" 'BEGIN { printf "%+.0f", 100 * (b - a) / a }')
	if awk -v a="$a0" -v b="$a1" 'BEGIN { exit !(b <= 1.10 * a) }'; then v=met; else v="not met"; fi
	[ "$last" = 1000 ] || v="$v (quick: $last pods, not 1000)"
	target "ADD at 1000 pods within 10 % of ADD at 0" "$a1 vs $a0 ms at $last/$first pods ($r %)" "$v" "median of $k, direct exec"
	return 0
}

# ---------------------------------------------------------------------------------------------
# 3. Agent (weftd)

. "$BENCH/agent.sh"

# ---------------------------------------------------------------------------------------------
# 4. Datapath

. "$BENCH/datapath.sh"

# ---------------------------------------------------------------------------------------------
# 5. Footprint

sec_footprint() {
	local f=$W/md/5-footprint.md p
	md "$f" "### footprint: Footprint"
	md "$f" ""
	md "$f" "Binary sizes in bytes: as installed (ours: \`$WEFT_BUILD/bin\`, built -O2 -g; reference: $REF_BIN) and"
	md "$f" "stripped (\`strip -o\`; Debian's Go binaries are already stripped)."
	md "$f" ""
	md "$f" "| binary | weft installed | weft stripped | reference installed | reference stripped | ref/weft (stripped) |"
	md "$f" "|---|---|---|---|---|---|"
	echo "binary,impl,installed_bytes,stripped_bytes" >"$OUT/footprint.csv"
	for p in bridge host-local loopback portmap weftd; do
		local oi="—" os="—" ri="—" rs_="—"
		if [ -x "$WEFT_BIN/$p" ]; then
			oi=$(stat -c %s "$WEFT_BIN/$p"); strip -o "$W/strip-$p" "$WEFT_BIN/$p" && os=$(stat -c %s "$W/strip-$p")
			echo "$p,weft,$oi,$os" >>"$OUT/footprint.csv"
		fi
		if [ -x "$REF_BIN/$p" ]; then
			ri=$(stat -c %s "$REF_BIN/$p"); strip -o "$W/rstrip-$p" "$REF_BIN/$p" 2>/dev/null && rs_=$(stat -c %s "$W/rstrip-$p")
			echo "$p,reference,$ri,$rs_" >>"$OUT/footprint.csv"
		fi
		[ "$p" = weftd ] && ri="(no reference agent)"
		[ "$p" = portmap ] && [ ! -x "$WEFT_BIN/$p" ] && oi="(not implemented)"
		md "$f" "| $p | $oi | $os | $ri | $rs_ | $(ratio "$rs_" "$os")× |"
		verdict_ratio footprint "$(ratio "$rs_" "$os")" "$(ratio "$rs_" "$os")×" "reference / weft, least favourable: $p stripped" smaller larger
	done
	md "$f" ""
	# peak RSS of one ADD (bridge + its host-local child, max of the two), /usr/bin/time -f %M
	if ours_has bridge host-local; then
		local impl hns
		md "$f" "Peak RSS of one ADD and one DEL (bridge plugin exec'd directly; the maximum over the plugin and"
		md "$f" "its host-local child, as \`/usr/bin/time -f %M\` reports it; median of 5):"
		md "$f" ""
		md "$f" "| op | weft KiB | reference KiB | ref/weft |"
		md "$f" "|---|---|---|---|"
		declare -A RSS
		for impl in ref ours; do
			mkconf "fp-$impl" "$impl"
			hns=$(ns_add "fp-$impl")
			ns_add_many "fp-$impl-p" 1 5
			for op in ADD DEL; do
				local d=$W/s5/$impl-$op
				rm -rf "$d"; mkdir -p "$d"
				local bin
				bin=$(impl_bin "$impl")
				for ((i = 1; i <= 5; i++)); do
					if [ -n "$GTIME" ]; then
						echo "CNI_COMMAND=$op CNI_CONTAINERID=fp-$i CNI_NETNS=$(nsp "fp-$impl-p$i") CNI_IFNAME=eth0 CNI_PATH=$bin <$W/fp-$impl/plugin.json $GTIME -f %M -o $d/rss-$i $bin/bridge"
					else
						echo "CNI_COMMAND=$op CNI_CONTAINERID=fp-$i CNI_NETNS=$(nsp "fp-$impl-p$i") CNI_IFNAME=eth0 CNI_PATH=$bin <$W/fp-$impl/plugin.json $bin/bridge"
					fi
				done | bx "$hns" 1 "$d" || return 1
				if [ -n "$GTIME" ]; then
					RSS["$impl $op"]=$(cat "$d"/rss-* | sort -n | sed -n 3p)
				else
					RSS["$impl $op"]=$(awk '{print $3}' "$d/lat" | sort -n | sed -n 3p)
				fi
			done
		done
		for op in ADD DEL; do
			md "$f" "| $op | ${RSS["ours $op"]} | ${RSS["ref $op"]} | $(ratio "${RSS["ref $op"]}" "${RSS["ours $op"]}")× |"
			verdict_ratio footprint "$(ratio "${RSS["ref $op"]}" "${RSS["ours $op"]}")" "$(ratio "${RSS["ref $op"]}" "${RSS["ours $op"]}")×" \
				"reference / weft, least favourable: peak RSS of one $op" smaller larger
			echo "peak_rss_$op,weft,${RSS["ours $op"]}," >>"$OUT/footprint.csv"
			echo "peak_rss_$op,reference,${RSS["ref $op"]}," >>"$OUT/footprint.csv"
		done
		md "$f" ""
	else
		md "$f" "Peak RSS of one ADD: skipped: weft's bridge/host-local not built."
	fi
	if [ -n "${AGENT_IDLE_RSS:-}" ]; then
		md "$f" "weftd RSS idle (0 remote nodes): $AGENT_IDLE_RSS (from the agent section)."
	else
		md "$f" "weftd RSS idle: see the agent section (not measured in this run)."
	fi
	md "$f" ""
	return 0
}

# ---------------------------------------------------------------------------------------------
# Plots and report

# plot_bars DAT PNG TITLE YLABEL [log]: DAT rows "label weft reference"
plot_bars() {
	local dat=$1 png=$2 title=$3 ylab=$4 lg=${5:-}
	[ -s "$dat" ] || return 0
	gnuplot <<EOF 2>>"$W/gnuplot.log" || log "  (plot $png failed, see gnuplot.log)"
set terminal pngcairo size 900,500 font "sans,10"
set bmargin 5
set output "$png"
set title "$title"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "$ylab"
$( [ -n "$lg" ] && echo "set logscale y" )
set grid ytics
set key top left
set xtics noenhanced
plot "$dat" using 2:xtic(1) title "weft" lc rgb "#2a7ab0", "" using 3 title "reference (Go)" lc rgb "#d9822b"$(
	awk 'NF >= 4 { f = 1 } END { exit !f }' "$dat" && echo ', "" using 4 title "floor (kernel work only)" lc rgb "#888888"')
EOF
}
# plot_lines DAT PNG TITLE XLABEL YLABEL: DAT rows "x weftADD weftDEL refADD refDEL"
plot_lines() {
	local dat=$1 png=$2 title=$3 xlab=$4 ylab=$5
	[ -s "$dat" ] || return 0
	gnuplot <<EOF 2>>"$W/gnuplot.log" || log "  (plot $png failed, see gnuplot.log)"
set terminal pngcairo size 900,500 font "sans,10"
set bmargin 5
set output "$png"
set title "$title"
set xlabel "$xlab"
set ylabel "$ylab"
set logscale y
set grid
set key outside right
plot "$dat" using 1:2 with linespoints lw 2 pt 7 lc rgb "#2a7ab0" title "weft ADD", \
     "" using 1:3 with linespoints lw 2 pt 5 dt 2 lc rgb "#2a7ab0" title "weft DEL", \
     "" using 1:4 with linespoints lw 2 pt 7 lc rgb "#d9822b" title "reference ADD", \
     "" using 1:5 with linespoints lw 2 pt 5 dt 2 lc rgb "#d9822b" title "reference DEL"
EOF
}

# write_report: REPORT.md, one run: its header (commit, date, machine, configuration), the targets,
# then each section that ran in bench/run's order, its verdict line under its header.
write_report() {
	local r=$OUT/REPORT.md cpu mode git date s sf
	cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
	mode=full; q && mode="quick (--quick: small counts; ratios are indicative only)"
	git=$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo '?')
	date=$(date -u '+%Y-%m-%d %H:%M UTC')
	{
		echo "# weft benchmarks vs the Go reference plugins"
		echo
		echo "One header per run (\`## Run\`: commit, date, machine, configuration); under it, the sections that"
		echo "run measured, in \`bench/run\`'s order: ${ALL_SECTIONS// /, }. Each section opens with one"
		echo "verdict word and the ratio it rests on, the least favourable one in the section: **faster** /"
		echo "**slower** (weft against the reference, or against the baseline of the same run), **par** (the"
		echo "ratio prints as 1.0×), **smaller** / **larger** (sizes and memory), **met** / **missed** (absolute"
		echo "targets where there is nothing to compare with)."
		echo
		echo "## Run: git $git, $date, ${ONLY:-$ALL_SECTIONS}"
		echo
		echo "Generated by \`bench/run$( q && echo ' --quick')$( [ -n "$ONLY" ] && echo " --only ${ONLY// /,}")\` — mode: $mode."
		echo
		echo "- machine: $cpu, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
		echo "- date: $date; $(. /etc/os-release; echo "$PRETTY_NAME")"
		echo "- weft: $WEFT_BIN (git $git)"
		echo "- reference: $REF_BIN (Debian containernetworking-plugins $(dpkg-query -W -f '${Version}' containernetworking-plugins 2>/dev/null || echo '?'))"
		echo "- runtime tool: cnitool (libcni $(dpkg-query -W -f '${Version}' golang-github-appc-cni-dev 2>/dev/null || echo '?')), $CNITOOL"
		echo "- sections run: ${ONLY:-$ALL_SECTIONS}; failed: ${FAILED[*]:-none}; skipped: ${SKIPPED[*]:-none}"
		echo "- load average (1/5/15 min) at the end of the run: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (other jobs inflate wall times most, CPU per op less)"
		echo
		echo "Absolute times on this shared 2-core machine are noise; the ratios between weft and the"
		echo "reference, measured in the same run, are the point. Raw figures: the CSV files next to this"
		echo "report (setup.csv, scale.csv, agent.csv, datapath.csv, footprint.csv; latencies in µs)."
		echo
		echo "### Targets"
		echo
		[ -n "${S1_HEADLINE:-}" ] && { echo "Pod setup, $S1_HEADLINE; every target below is judged on all four chains of the setup section."; echo; }
		echo "| target | measured | verdict | note |"
		echo "|---|---|---|---|"
		[ -f "$W/targets.md" ] && cat "$W/targets.md"
		echo
		# each section's fragment is $W/md/<n>-<name>.md, its first line the header
		for s in $ALL_SECTIONS; do
			for sf in "$W"/md/*-"$s".md; do
				[ -f "$sf" ] || continue
				head -n 1 "$sf"
				echo
				verdict_line "$s"
				tail -n +2 "$sf"
			done
		done
	} >"$r"
}
