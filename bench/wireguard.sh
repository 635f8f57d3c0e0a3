# shellcheck shell=bash
# Section "wireguard" (issue 20, item 6): pod ↔ pod across two nodes over the wireguard backend
# (wireguard-go: this machine has no wireguard module), vxlan and host-gw (the plain underlay's
# routes), each beside the physical floor, node ↔ node over the same underlay, in the same cluster.
#
#   throughput  iperf3 TCP, 1 stream, WG_TIME s (full 5, --quick 1), pod1 → pod2 and node1 → node2
#   CPU         CPU seconds per Gbit moved: iperf3's own getrusage figures at both ends (with the
#               kernel's softirq work done in their context: tick accounting, no IRQ time
#               accounting here) plus wireguard-go's utime + stime on both nodes (/proc/PID/stat).
#               Not the machine's /proc/stat busy time: other jobs share these 2 cores and give way
#               to the bench, so the machine is busy whatever the bench costs.
#   latency     mean RTT of WG_PINGS pings (-i 0.01), and a TCP request/response loop (1 byte each
#               way, one connection, WG_RR round trips, Python at both ends): median and p99 µs
#
# The cluster is bench/datapath.sh's kind, built by this file run as a script (below): 2 nodes,
# weftd + etcd from test/lib/weft-cluster-lib.sh, one pod per node (pod_create). wireguard: each
# weftd in a private mount namespace with its own /run/wireguard (wireguard-go's UAPI socket
# directory is compiled in), as test/netns/test-weftd-wireguard.sh does. --quick: wireguard only.

# wg_gbit BPS: Gbit/s, 2 decimals; wg_x A B: "A/B×", 1 decimal
wg_gbit() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1e9 }'; }
wg_x() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.1f×", a / b; else print "n/a" }'; }

sec_wireguard() {
	local f=$W/md/96-wireguard.md be bes csv t rr pings key bps dur cc cs cwg rtt rrm rr99
	local -A R=()
	md "$f" "### wireguard: WireGuard (wireguard-go) beside vxlan, host-gw and the underlay"
	md "$f" ""
	if [ ! -x "$WEFT_BIN/weftd" ]; then skipped "$f" "weftd not built"; return 77; fi
	for c in iperf3 etcd etcdctl python3 unshare wireguard-go; do
		command -v "$c" >/dev/null || { skipped "$f" "needs $c"; return 77; }
	done
	[ -c /dev/net/tun ] || { skipped "$f" "no /dev/net/tun"; return 77; }
	t=5 rr=5000 pings=100
	q && t=1 rr=500 pings=20
	bes="wireguard vxlan host-gw"
	q && bes=wireguard
	csv=$OUT/wireguard.csv
	echo "backend,path,bps,seconds,cpu_client_s,cpu_server_s,cpu_wireguard_go_s,rtt_ms,rr_median_us,rr_p99_us" >"$csv"
	for be in $bes; do
		if ! WEFT_BUILD=$WEFT_BUILD WG_TIME=$t WG_RR=$rr WG_PINGS=$pings bash "$BENCH/wireguard.sh" "$be" "$W/wg-$be.csv" \
			>"$W/wg-$be.log" 2>&1; then
			log "  FAILED: bench/wireguard.sh $be:"; tail -15 "$W/wg-$be.log" >&2
			return 1
		fi
		while IFS=, read -r key bps dur cc cs cwg rtt rrm rr99; do
			echo "$be,$key,$bps,$dur,$cc,$cs,$cwg,$rtt,$rrm,$rr99" >>"$csv"
			R["$be $key"]="$bps $dur $cc $cs $cwg $rtt $rrm $rr99"
		done <"$W/wg-$be.csv"
	done
	md "$f" "Pod ↔ pod across two nodes, each backend in its own 2-node cluster (weftd + etcd, one pod per node),"
	md "$f" "beside the physical floor measured in the same cluster: node1 → node2 over the same veth/bridge"
	md "$f" "underlay. iperf3 TCP, 1 stream, $t s; CPU = CPU seconds per Gbit moved, iperf3's getrusage at both"
	md "$f" "ends (the kernel's softirq work done in their context included) plus wireguard-go's utime + stime"
	md "$f" "on both nodes (not the machine's busy time: other jobs share these 2 cores). Ping: mean RTT of $pings pings (-i 0.01);"
	md "$f" "TCP RR: $rr round trips of 1 byte each way on one connection, Python at both ends. Least"
	md "$f" "favourable first."
	md "$f" ""
	md "$f" "**wireguard-go is WireGuard in userspace** (Go, a TUN device, every packet copied to and from the"
	md "$f" "process): these figures are not kernel WireGuard's, which encrypts in the kernel without those"
	md "$f" "copies. This machine has no wireguard module, so kernel WireGuard was not measured."
	md "$f" ""
	md "$f" "| backend | pod ↔ pod Gbit/s | underlay Gbit/s | % of underlay | CPU s/Gbit pod ↔ pod (of which wireguard-go) | underlay | × underlay |"
	md "$f" "|---|---|---|---|---|---|---|"
	local order pb ub pd ud pcc pcs ucc ucs pcpu ucpu pwg pct_ wgpart
	# least favourable first: ascending share of the underlay's throughput
	order=$(for be in $bes; do
		read -r pb _ <<<"${R["$be cross-node"]}"
		read -r ub _ <<<"${R["$be underlay"]}"
		echo "$(pct "$pb" "$ub") $be"
	done | sort -n | awk '{ print $2 }')
	for be in $order; do
		read -r pb pd pcc pcs pwg _ <<<"${R["$be cross-node"]}"
		read -r ub ud ucc ucs _ <<<"${R["$be underlay"]}"
		pcpu=$(wg_cpu_per_gbit "$pb" "$pd" "$pcc" "$pcs" "$pwg")
		ucpu=$(wg_cpu_per_gbit "$ub" "$ud" "$ucc" "$ucs" 0)
		pct_=$(pct "$pb" "$ub")
		wgpart=""
		[ "$be" = wireguard ] && wgpart=" ($(wg_cpu_per_gbit "$pb" "$pd" 0 0 "$pwg"))"
		md "$f" "| $be | $(wg_gbit "$pb") | $(wg_gbit "$ub") | $pct_ % | $pcpu$wgpart | $ucpu | $(wg_x "$pcpu" "$ucpu") |"
		verdict_pct wireguard "$pct_" "least favourable: $be pod ↔ pod, 1 stream"
		say "   $be: pod ↔ pod $(wg_gbit "$pb") Gbit/s ($pct_ % of the underlay), $pcpu CPU s/Gbit (underlay $ucpu)"
	done
	md "$f" ""
	md "$f" "| backend | ping RTT ms pod ↔ pod | underlay | × underlay | TCP RR µs pod ↔ pod, median (p99) | underlay | × underlay |"
	md "$f" "|---|---|---|---|---|---|---|"
	local prtt urtt prr prr99 urr urr99
	for be in $order; do
		read -r _ _ _ _ _ prtt prr prr99 <<<"${R["$be cross-node"]}"
		read -r _ _ _ _ _ urtt urr urr99 <<<"${R["$be underlay"]}"
		md "$f" "| $be | $prtt | $urtt | $(wg_x "$prtt" "$urtt") | $prr ($prr99) | $urr ($urr99) | $(wg_x "$prr" "$urr") |"
	done
	md "$f" ""
	md "$f" "Raw figures: wireguard.csv (CPU in seconds over the iperf3 run; bps as iperf3's receiver counted)."
	q && md "$f" "(quick mode: wireguard only, $t s runs; numbers are indicative only)"
	md "$f" ""
	return 0
}

# wg_cpu_per_gbit BPS SECONDS CPU_S...: CPU seconds (the sum) per Gbit moved, 3 decimals
wg_cpu_per_gbit() {
	local bps=$1 s=$2
	shift 2
	awk -v b="$bps" -v s="$s" -v c="$*" 'BEGIN {
		n = split(c, a, " "); t = 0; for (i = 1; i <= n; i++) t += a[i]
		if (b + 0 > 0 && s + 0 > 0) printf "%.3f", t / (b * s / 1e9); else print "n/a" }'
}

# ---- bench/wireguard.sh BACKEND CSV (run, not sourced): one 2-node cluster, both paths measured,
# "path,bps,seconds,cpu_client_s,cpu_server_s,cpu_wireguard_go_s,rtt_ms,rr_median_us,rr_p99_us"
# lines (path: underlay, cross-node). Exit 0 only if the checks passed and everything measured.

# wg_go_ticks: utime + stime (clock ticks) of every wireguard-go process in the nodes' namespaces
wg_go_ticks() {
	local i p sum=0 comm
	for i in 1 2; do
		for p in $(ip netns pids "$(node_ns "$i")" 2>/dev/null); do
			comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
			[ "$comm" = wireguard-go ] || continue
			sum=$((sum + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat")))
		done
	done
	echo "$sum"
}

# wg_measure KEY SERVER_NS SERVER_IP CLIENT_NS: one CSV line
wg_measure() {
	local key=$1 sns=$2 sip=$3 cns=$4 pid json hz bps dur cc cs w0 w1 rtt rr
	hz=$(getconf CLK_TCK)
	ip netns exec "$sns" iperf3 -s -1 -B "$sip" -p 5201 >/dev/null 2>&1 &
	pid=$!
	wait_listen "$sns" 5201 || wait_listen "$sns" 5201 || true
	w0=$(wg_go_ticks)
	json=$(ip netns exec "$cns" timeout $((WG_TIME + 15)) iperf3 -c "$sip" -p 5201 -t "$WG_TIME" -J 2>/dev/null) || true
	w1=$(wg_go_ticks)
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	bps=$(jq -r '.end.sum_received.bits_per_second // 0' <<<"$json" 2>/dev/null)
	dur=$(jq -r '.end.sum_received.seconds // 0' <<<"$json" 2>/dev/null)
	cc=$(jq -r --arg d "$dur" '(.end.cpu_utilization_percent.host_total // 0) / 100 * ($d | tonumber)' <<<"$json" 2>/dev/null)
	cs=$(jq -r --arg d "$dur" '(.end.cpu_utilization_percent.remote_total // 0) / 100 * ($d | tonumber)' <<<"$json" 2>/dev/null)
	rtt=$(ip netns exec "$cns" ping -q -c "$WG_PINGS" -i 0.01 "$sip" | awk -F/ '/^rtt/ { print $5 }')
	rr=$(wg_rr "$sns" "$sip" "$cns")
	echo "$key,${bps:-0},${dur:-0},${cc:-0},${cs:-0},$(awk -v w=$((w1 - w0)) -v hz="$hz" 'BEGIN { printf "%.3f", w / hz }'),${rtt:-0},${rr/ /,}" >>"$WG_CSV"
	if [ "${bps:-0}" = 0 ] || [ -z "$rtt" ] || [ -z "$rr" ]; then check_fail "$WG_BACKEND $key: no throughput, RTT or RR"; fi
}

# wg_rr SERVER_NS SERVER_IP CLIENT_NS: "median p99" µs of WG_RR 1-byte round trips on one TCP connection
wg_rr() {
	local pid out
	ip netns exec "$1" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5202)); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while True:
    b = c.recv(1)
    if not b: break
    c.sendall(b)' "$2" &
	pid=$!
	wait_listen "$1" 5202 || wait_listen "$1" 5202 || true
	out=$(ip netns exec "$3" python3 -c '
import socket, sys, time
n = int(sys.argv[2]); c = socket.create_connection((sys.argv[1], 5202), timeout=10)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for _ in range(50): c.sendall(b"x"); c.recv(1)
v = []
for _ in range(n):
    t = time.perf_counter_ns(); c.sendall(b"x"); c.recv(1); v.append(time.perf_counter_ns() - t)
c.close(); v.sort()
print("%.0f %.0f" % (v[n // 2] / 1e3, v[min(n - 1, (99 * n) // 100)] / 1e3))' "$2" "$WG_RR") || out=""
	wait "$pid" 2>/dev/null || true
	echo "$out"
}

wg_cluster() {
	local i
	cluster_init 2 "$WG_BACKEND"
	for i in 1 2; do weftd_start "$i"; done
	weftd_wait_ready 1 2
	two() { [ "$(routes_weft 1 | wc -l)" = 1 ] && [ "$(routes_weft 2 | wc -l)" = 1 ]; }
	wait_for 20 two || { tail -5 "$(node_dir 1)/weftd.log" >&2; fail "$WG_BACKEND: nodes did not converge"; }
	for i in 1 2; do pod_create "$i"; done
	assert_ping "$(pod_ns 1)" "$(pod_ip 2)"
	assert_ping "$(pod_ns 2)" "$(pod_ip 1)"
	[ "$(seen_peer "$(pod_ns 2)" "$(pod_ip 2)" 7002 "$(pod_ns 1)")" = "$(pod_ip 1)" ] ||
		check_fail "$WG_BACKEND: pod1 -> pod2 does not arrive from the pod's address"
	if [ "$WG_BACKEND" = wireguard ]; then
		ip netns pids "$(node_ns 1)" | xargs -r -I{} cat /proc/{}/comm 2>/dev/null | grep_q -x wireguard-go ||
			check_fail "no wireguard-go in node1 (the kernel driver? this bench measures wireguard-go)"
		http_get 1 '/healthz?verbose'
		grep -q "wireguard driver: wireguard-go" <<<"$HTTP_BODY" || check_fail "node1 does not run wireguard-go: $HTTP_BODY"
	fi
	: >"$WG_CSV"
	wg_measure underlay "$(node_ns 2)" "$(node_ip 2)" "$(node_ns 1)"
	wg_measure cross-node "$(pod_ns 2)" "$(pod_ip 2)" "$(pod_ns 1)"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	WG_BACKEND=$1 WG_CSV=$2
	WG_TIME=${WG_TIME:-1} WG_RR=${WG_RR:-500} WG_PINGS=${WG_PINGS:-20}
	# shellcheck source=../test/lib/lib.sh
	. "$(dirname "$0")/../test/lib/lib.sh"
	# shellcheck source=../test/lib/weft-cluster-lib.sh
	. "$TOP/test/lib/weft-cluster-lib.sh"
	# wireguard: weftd in a private mount namespace with the node's own /run/wireguard, as the demo runs it
	# shellcheck source=../tools/demo-wireguard.sh
	[ "$WG_BACKEND" = wireguard ] && . "$TOP/tools/demo-wireguard.sh"
	wg_cluster
	exit 0
fi
