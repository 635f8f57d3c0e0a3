# shellcheck shell=bash
# Section 3 (weftd programming remote nodes) and the small cluster helpers it shares with the
# datapath section. Topology (all namespaces ours, wb<PID>-*):
#
#   underlay "ul": bridge br0 (no address), 10.99.0.0/16
#     |-- veth -- etcd  eth0 10.99.0.2   /usr/bin/etcd :2379, data in $W/etcd
#     |-- veth -- node  eth0 10.99.0.N   weftd (one fresh node namespace per measurement)
#
# Remote nodes exist only as leases written into etcd (bench/etcd-feed.py): 100.64.0.0/10, /24 each.

ETCD_URL=http://10.99.0.2:2379
UL=""
ETCD_BENCH_PID=""
WEFTD_BIN=""

ul_setup() {
	[ -n "$UL" ] && return 0
	UL=$(ns_add ul) || return 1
	ip -n "$UL" link add br0 type bridge && ip -n "$UL" link set br0 up || return 1
	node_attach etcd 10.99.0.2 || return 1
	mkdir -p "$W/etcd"
	ip netns exec "$NSP-etcd" /usr/bin/etcd --name bench --data-dir "$W/etcd/data" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster bench=http://127.0.0.1:2380 --max-txn-ops 1000 --max-request-bytes 8388608 \
		--quota-backend-bytes 4294967296 --log-level error >>"$W/etcd/etcd.log" 2>&1 &
	ETCD_BENCH_PID=$!
	track_pid "$ETCD_BENCH_PID"
	for _ in $(seq 100); do
		[[ $(ip netns exec "$NSP-etcd" curl -sf -m 1 "$ETCD_URL/health" 2>/dev/null) == *'"health":"true"'* ]] && return 0
		sleep 0.1
	done
	log "  etcd did not start: $(tail -5 "$W/etcd/etcd.log")"
	return 1
}

# node_attach NAME ADDR: namespace $NSP-NAME with eth0 ADDR/16 on the underlay bridge
node_attach() {
	local name=$1 addr=$2 ns=$NSP-$1
	ip netns list | grep "^$ns\b" >/dev/null || ns_add "$name" >/dev/null || return 1
	ip link add "u-$name" netns "$UL" type veth peer name eth0 netns "$ns" || return 1
	ip -n "$UL" link set "u-$name" master br0 up
	ip -n "$ns" addr add "$addr/16" dev eth0
	ip -n "$ns" link set eth0 up
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
}

# etcd_put_config PREFIX BACKEND: the network config under PREFIX/config
etcd_put_config() {
	local be=$2 cfg
	cfg=$(jq -cn --arg t "$be" '{Network:"100.64.0.0/10", SubnetLen:24, Backend:{Type:$t}, Masquerade:true}')
	ip netns exec "$NSP-etcd" curl -sf -m 5 "$ETCD_URL/v3/kv/put" \
		-d "$(jq -cn --arg k "$(printf '%s/config' "$1" | base64 -w0)" --arg v "$(printf '%s' "$cfg" | base64 -w0)" '{key:$k, value:$v}')" >/dev/null
}
etcd_feed() { ip netns exec "$NSP-etcd" python3 "$BENCH/etcd-feed.py" "$ETCD_URL" "$@"; }

# weftd_run NODE PREFIX: start weftd in node namespace NODE (already attached); sets WEFTD_PID
weftd_run() {
	local node=$1 prefix=$2 d=$W/weftd-$1
	mkdir -p "$d"/{cni,run,state,bin,ipam}
	ip netns exec "$NSP-$node" env WEFT_LOG_LEVEL=info "$WEFTD_BIN" --node-name "$node" --iface eth0 \
		--etcd-endpoints "$ETCD_URL" --etcd-prefix "$prefix" --listen 127.0.0.1:9876 \
		--cni-conf-dir "$d/cni" --cni-bin-dir "$d/bin" --run-dir "$d/run" --state-dir "$d/state" \
		--ipam-data-dir "$d/ipam" --lease-ttl 60 >>"$d/weftd.log" 2>&1 &
	WEFTD_PID=$!
	track_pid "$WEFTD_PID"
}
weftd_ready() { ip netns exec "$NSP-$1" curl -sf -m 1 http://127.0.0.1:9876/healthz >/dev/null 2>&1; }
# wait_until SECONDS CMD...: poll CMD every 5 ms
wait_until() {
	local end=$((SECONDS + $1)); shift
	while ! "$@"; do ((SECONDS < end)) || return 1; sleep 0.005; done
}
# kernel counts of weftd's objects in node NS: routes (proto 0xfc), permanent neighbours and FDB
# entries on the VTEP
n_routes() { ip -n "$NSP-$1" route show proto 252 | grep -c . ; }
n_neigh() { ip -n "$NSP-$1" neigh show dev weft.1 nud permanent 2>/dev/null | grep -c . ; }
n_fdb() { bridge -n "$NSP-$1" fdb show dev weft.1 2>/dev/null | grep -c ' dst ' ; }
# programmed NODE BACKEND N: true once the kernel shows all N remote nodes
programmed() {
	[ "$(n_routes "$1")" -ge "$3" ] || return 1
	[ "$2" = vxlan ] || return 0
	[ "$(n_neigh "$1")" -ge "$3" ] && [ "$(n_fdb "$1")" -ge "$3" ]
}
vm() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; } # vm PID VmRSS -> KiB
pss() { awk '$1 == "Pss:" {print $2}' "/proc/$1/smaps_rollup"; } # pss PID -> KiB
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

sec_agent() {
	local f=$W/md/3-agent.md be n sizes backends t0 t1 nodeidx=50
	md "$f" "### agent: Agent (weftd)"
	md "$f" ""
	md "$f" "There is no reference agent to run here (flannel is not packaged in Debian), so these are"
	md "$f" "absolute numbers against the targets."
	md "$f" ""
	# shellcheck disable=SC2153 # WEFT_BIN is set by bench/run, which sources this file
	WEFTD_BIN=$WEFT_BIN/weftd
	if [ ! -x "$WEFTD_BIN" ]; then skipped "$f" "weftd not built ($WEFTD_BIN)"; return 77; fi
	if [ ! -x /usr/bin/etcd ] || ! command -v python3 >/dev/null || ! command -v curl >/dev/null; then
		skipped "$f" "needs /usr/bin/etcd, python3 and curl"; return 77
	fi
	sizes="100 1000 5000"; backends="vxlan host-gw"
	q && sizes="100"
	ul_setup || return 1
	echo "backend,remote_nodes,phase,ms" >"$OUT/agent.csv"
	md "$f" "Remote nodes are leases written into the real etcd in weftd's format (bench/etcd-feed.py,"
	md "$f" "/v3/kv/txn batches of 1000). *warm*: weftd is running and ready with no remote node, then all N"
	md "$f" "leases are written (timed from the moment the feeder sends its first request, so python's start-up
is not counted); *cold*: the N leases are already stored and weftd starts (includes etcd"
	md "$f" "connect, lease acquisition, VTEP and nftables set-up). Time until the kernel shows every entry"
	md "$f" "(\`ip route show proto 252\`; vxlan also \`ip neigh … nud permanent\` and \`bridge fdb … dst\` on"
	md "$f" "weft.1), polled every ~5 ms; weftd's own log line for its reconcile pass in brackets."
	md "$f" ""
	md "$f" "| backend | remote nodes | warm: programmed after (ms) | cold: start → programmed (ms) |"
	md "$f" "|---|---|---|---|"
	: >"$W/s3.dat"
	declare -A AG
	for be in $backends; do
		for n in $sizes; do
			local prefix=/bench/$be-$n node pass
			etcd_put_config "$prefix" "$be" || { log "  FAILED: etcd put"; return 1; }
			# warm
			nodeidx=$((nodeidx + 1)); node=ag$nodeidx
			node_attach "$node" "10.99.0.$nodeidx" || return 1
			weftd_run "$node" "$prefix"
			wait_until 20 weftd_ready "$node" || { log "  FAILED: weftd not ready: $(tail -5 "$W/weftd-$node/weftd.log")"; return 1; }
			if [ -z "${AGENT_IDLE_RSS:-}" ]; then
				AGENT_IDLE_RSS="VmRSS $(vm "$WEFTD_PID" VmRSS) KiB, PSS $(pss "$WEFTD_PID") KiB, VmHWM $(vm "$WEFTD_PID" VmHWM) KiB"
				AGENT_IDLE_KIB=$(vm "$WEFTD_PID" VmRSS)
				AGENT_IDLE_SPLIT="anonymous $(vm "$WEFTD_PID" RssAnon) KiB, file-backed $(vm "$WEFTD_PID" RssFile) KiB"
			fi
			read -r _ t0 < <(etcd_feed "$prefix" 1 "$n" "$be")
			[ -n "$t0" ] || { log "  FAILED: feeding etcd"; return 1; }
			t1=$(now_ms)
			wait_until 60 programmed "$node" "$be" "$n" ||
				{ log "  FAILED: $be: $(n_routes "$node") routes of $n after 60 s; $(tail -3 "$W/weftd-$node/weftd.log")"; return 1; }
			AG["$be $n warm"]=$(($(now_ms) - t0))
			echo "$be,$n,feed_etcd_returned,$((t1 - t0))" >>"$OUT/agent.csv"
			echo "$be,$n,warm,${AG["$be $n warm"]}" >>"$OUT/agent.csv"
			if [ "$n" = 1000 ] || q; then
				AG["$be rss $n"]="VmRSS $(vm "$WEFTD_PID" VmRSS) KiB, PSS $(pss "$WEFTD_PID") KiB, VmHWM $(vm "$WEFTD_PID" VmHWM) KiB"
				AG["$be rsskib $n"]=$(vm "$WEFTD_PID" VmRSS)
				# one node joins among n
				local sub
				read -r sub t0 < <(etcd_feed "$prefix" $((n + 1)) $((n + 1)) "$be")
				[ -n "$t0" ] || { log "  FAILED: feeding etcd"; return 1; }
				wait_until 10 programmed "$node" "$be" $((n + 1)) || { log "  FAILED: join not programmed"; return 1; }
				AG["$be join $n"]=$(($(now_ms) - t0))
				echo "$be,$n,join_one,${AG["$be join $n"]}" >>"$OUT/agent.csv"
				[ -n "$(ip -n "$NSP-$node" route show "$sub" proto 252)" ] || { log "  FAILED: no route to joined $sub"; return 1; }
			fi
			untrack_kill "$WEFTD_PID"
			# cold: a fresh node, the leases already stored
			nodeidx=$((nodeidx + 1)); node=ag$nodeidx
			node_attach "$node" "10.99.0.$nodeidx" || return 1
			local want=$n
			[ -n "${AG["$be join $n"]:-}" ] && want=$((n + 1))
			t0=$(now_ms)
			weftd_run "$node" "$prefix"
			wait_until 60 programmed "$node" "$be" "$want" ||
				{ log "  FAILED: $be cold: $(n_routes "$node") routes of $want; $(tail -3 "$W/weftd-$node/weftd.log")"; return 1; }
			AG["$be $n cold"]=$(($(now_ms) - t0))
			echo "$be,$n,cold,${AG["$be $n cold"]}" >>"$OUT/agent.csv"
			pass=$(grep -o "Reconciled [0-9]* remote nodes.* in [0-9.]* ms" "$W/weftd-$node/weftd.log" | head -1 | sed 's/.* in \([0-9.]*\) ms/\1/')
			untrack_kill "$WEFTD_PID"
			ns_del_prefix "$node"
			md "$f" "| $be | $n | ${AG["$be $n warm"]} | ${AG["$be $n cold"]}${pass:+ [pass $pass ms]} |"
			echo "$be $n ${AG["$be $n warm"]} ${AG["$be $n cold"]}" >>"$W/s3.dat"
		done
	done
	md "$f" ""
	local big=${sizes##* } jn=1000 rss_be=vxlan
	q && jn=100
	md "$f" "- one node joins among $jn (vxlan): programmed after ${AG["vxlan join $jn"]:-?} ms; host-gw: ${AG["host-gw join $jn"]:-?} ms (includes the etcd write and weftd's 20 ms debounce)"
	md "$f" "- weftd RSS idle (ready, 0 remote nodes): $AGENT_IDLE_RSS ($AGENT_IDLE_SPLIT). The file-backed"
	md "$f" "  part is shared-library pages (libcurl with OpenSSL, and GnuTLS/Kerberos/LDAP through its"
	md "$f" "  dependencies, libnftables), shared with other processes; the anonymous part is weftd's own."
	md "$f" "  Loading and relocating libcurl's tree maps ~8 MiB of library pages (libcrypto alone ~3 MiB);"
	md "$f" "  they count in VmRSS as they are (weftd no longer drops them with MADV_DONTNEED: they stayed"
	md "$f" "  in the page cache and faulted back in). PSS charges shared pages pro rata; private dirty"
	md "$f" "  is what weftd alone costs."
	md "$f" "- weftd RSS at $jn remote nodes: vxlan ${AG["vxlan rss $jn"]:-?}; host-gw ${AG["host-gw rss $jn"]:-?}"
	md "$f" ""
	md "$f" "![agent](agent.png)"
	md "$f" ""
	gnuplot <<EOF 2>>"$W/gnuplot.log" || true
set terminal pngcairo size 900,500 font "sans,10"
set output "$OUT/agent.png"
set title "weftd: time until the kernel shows all remote nodes"
set xlabel "remote nodes"; set ylabel "ms"; set logscale x; set grid; set key top left
plot "< grep '^vxlan' $W/s3.dat" using 2:3 with linespoints lw 2 pt 7 title "vxlan warm", \
     "< grep '^vxlan' $W/s3.dat" using 2:4 with linespoints lw 2 pt 5 dt 2 title "vxlan cold", \
     "< grep '^host-gw' $W/s3.dat" using 2:3 with linespoints lw 2 pt 7 title "host-gw warm", \
     "< grep '^host-gw' $W/s3.dat" using 2:4 with linespoints lw 2 pt 5 dt 2 title "host-gw cold", \
     2000 with lines lc rgb "red" dt 3 title "target 2 s"
EOF
	local wv=${AG["vxlan $big warm"]} cv=${AG["vxlan $big cold"]} v av=met
	if ((wv < 2000 && cv < 2000)); then v=met; else v="not met" av=missed; fi
	q && v="$v (quick: $big nodes, not 5000)"
	target "$big remote nodes programmed in < 2 s" "vxlan warm $wv ms, cold $cv ms; host-gw warm ${AG["host-gw $big warm"]} ms, cold ${AG["host-gw $big cold"]} ms" "$v" "kernel counts via ip/bridge"
	local kib=${AG["$rss_be rsskib $jn"]:-0} ikib=${AGENT_IDLE_KIB:-0}
	if ((kib > 0 && kib < 10240 && ikib > 0 && ikib < 10240)); then v=met; else v="not met" av=missed; fi
	q && v="$v (quick: $jn nodes)"
	target "weftd RSS < 10 MiB idle and at 1000 nodes" "at $jn nodes (vxlan): ${AG["$rss_be rss $jn"]:-?}; idle: $AGENT_IDLE_RSS" "$v" "VmRSS from /proc/PID/status, PSS from smaps_rollup; VmHWM includes the loader's peak before main()"
	verdict agent "$av" "(no reference agent: $big remote nodes programmed in $wv ms warm, $cv ms cold on vxlan, target < 2 s; VmRSS ${kib} KiB at $jn nodes, target < 10 MiB)"
	return 0
}
