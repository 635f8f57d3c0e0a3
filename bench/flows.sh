#!/usr/bin/env bash
# The flow log's cost (weftd --flow-log, docs/flows.md): one node (test/lib's cluster: etcd, weftd
# host-gw, objects in etcd), two pods on its bridge; a client opens and closes TCP connections to
# the other pod at a fixed rate (python, paced), timing each connect(). weftd runs without the flow
# log, then with it (--flow-log-rate high enough to keep every record), in interleaved rounds;
# each round reads weftd's user + system CPU (/proc/PID/stat) over the window.
#   bench/flows.sh [RATE [SECONDS [ROUNDS]]]   (default 1000 connections/s, 10 s, 3 rounds)
# Output: one line per round, "mode=off|on rate=R conns=N cpu_ms=C cpu_ms_per_1k=X
# connect_us_median=M connect_us_p90=P records=K", then "ratio ..." lines (on / off).
# Sourced by bench/run (section "flows", sec_flows below), it only defines the section.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	flw_kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1; }
	flw_med() { # MODE KEY FILE: median over the rounds
		grep "^mode=$1 " "$3" | while IFS= read -r l; do flw_kv "$l" "$2"; done | sort -g |
			awk '{v[NR] = $1} END { if (NR) printf "%s", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
	}
	sec_flows() {
		local f=$W/md/97-flows.md out=$W/flows.out rate=1000 secs=10 rounds=3 rc k
		md "$f" "### flows: the flow log's cost (weftd --flow-log)"
		md "$f" ""
		command -v etcd >/dev/null || { skipped "$f" "needs etcd"; return 77; }
		q && { secs=2 rounds=1; }
		WEFT_BUILD=$WEFT_BUILD "$BENCH/flows.sh" "$rate" "$secs" "$rounds" >"$out" 2>"$W/flows.err"
		rc=$?
		((rc == 0)) || { log "  FAILED: bench/flows.sh (rc $rc):"; tail -5 "$W/flows.err" >&2; return 1; }
		for k in cpu_ms_per_1k connect_us_median; do
			if [ -z "$(flw_med off $k "$out")" ] || [ -z "$(flw_med on $k "$out")" ]; then log "  FAILED: no $k"; return 1; fi
		done
		md "$f" "\`bench/flows.sh $rate $secs $rounds\`: one node, two pods on its bridge; the client opens and closes"
		md "$f" "$rate TCP connections a second for $secs s (each a conntrack NEW and DESTROY), weftd without and"
		md "$f" "with --flow-log in $rounds interleaved round(s); medians of the rounds. CPU: weftd's user + system"
		md "$f" "time over the window, per 1,000 connections. Connect: the client's connect() time."
		md "$f" ""
		md "$f" "| flow log | connections/s achieved | weftd CPU ms per 1,000 connections | connect median µs | connect p90 µs |"
		md "$f" "|---|---:|---:|---:|---:|"
		for k in off on; do
			md "$f" "| $k | $(flw_med $k achieved "$out") | $(flw_med $k cpu_ms_per_1k "$out") | $(flw_med $k connect_us_median "$out") | $(flw_med $k connect_us_p90 "$out") |"
		done
		md "$f" ""
		md "$f" "$(grep '^ratio' "$out" | sed 's/^ratio //')"
		md "$f" ""
		say "   $(grep '^ratio' "$out")"
		return 0
	}
	return 0
fi

. "$(dirname "$0")/../test/lib/lib.sh"
. "$(dirname "$0")/../test/lib/weft-cluster-lib.sh"
RATE=${1:-1000} SECS=${2:-10} ROUNDS=${3:-3}
cluster_require
PY=$T/flows-bench.py
cat >"$PY" <<'PYEOF'
import socket, sys, time
if sys.argv[1] == "serve":
    s = socket.create_server(("0.0.0.0", 80), backlog=4096)
    print("ready", flush=True)
    while True:
        s.accept()[0].close()
host, rate, secs = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
lat, t0 = [], time.time()
i = 0
while True:
    due = t0 + i / rate
    now = time.time()
    if now - t0 >= secs:
        break
    if due > now:
        time.sleep(due - now)
    c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    a = time.perf_counter(); c.connect((host, 80)); lat.append(time.perf_counter() - a); c.close()
    i += 1
el = time.time() - t0
lat.sort()
print("conns=%d achieved=%.0f connect_us_median=%.1f connect_us_p90=%.1f" % (len(lat), len(lat) / el,
      lat[len(lat) // 2] * 1e6, lat[len(lat) * 9 // 10] * 1e6))
PYEOF
cluster_init 1 host-gw
cpu_ms() { awk '{ print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
start() { # MODE
	if [ "$1" = on ]; then
		weftd_start 1 --objects-datastore etcd --relist-interval 0 --flow-log --flow-log-rate 1000000
	else
		weftd_start 1 --objects-datastore etcd --relist-interval 0
	fi
	weftd_wait_ready 1
}
start off
gw=$(lease_var 1 WEFT_SUBNET)
ip -n "$(node_ns 1)" link add cni0 type bridge
ip -n "$(node_ns 1)" addr add "$gw" dev cni0
ip -n "$(node_ns 1)" link set cni0 up
nth() { python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[int(sys.argv[2])])' "$1" "$2"; }
declare -A PNS PIP
k=10
for p in cli srv; do
	k=$((k + 1))
	PNS[$p]=$(mk_netns "fb$p") PIP[$p]=$(nth "$gw" $k)
	ip -n "$(node_ns 1)" link add "vfb$p" type veth peer name eth0 netns "${PNS[$p]}"
	ip -n "$(node_ns 1)" link set "vfb$p" master cni0 up
	ip -n "${PNS[$p]}" addr add "${PIP[$p]}/${gw#*/}" dev eth0
	ip -n "${PNS[$p]}" link set eth0 up
	ip -n "${PNS[$p]}" link set lo up
	ip -n "${PNS[$p]}" route add default via "${gw%/*}"
	etcdctl_ put "$ETCD_PREFIX/objects/pods/b/$p" "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"b\",\"name\":\"$p\"},
		\"spec\":{\"nodeName\":\"node1\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"${PIP[$p]}\",\"podIPs\":[{\"ip\":\"${PIP[$p]}\"}]}}" >/dev/null
done
# conntrack sees bridged traffic only with br_netfilter's hook (as with a policy or the flow log)
ip netns exec "$(node_ns 1)" sysctl -qw net.bridge.bridge-nf-call-iptables=1 || fail "br_netfilter is not loaded"
ip netns exec "${PNS[srv]}" python3 "$PY" serve >"$T/serve" 2>&1 &
SRV=$!
on_exit "kill $SRV"
wait_for 10 grep -q ready "$T/serve" || fail "server did not start"
declare -A SUM
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in off on; do
		weftd_stop 1
		start $mode
		sleep 1
		c0=$(cpu_ms "${WEFTD_PID[1]}")
		res=$(ip netns exec "${PNS[cli]}" python3 "$PY" probe "${PIP[srv]}" "$RATE" "$SECS")
		sleep 0.5
		c1=$(cpu_ms "${WEFTD_PID[1]}")
		http_get 1 /metrics
		recs=$(awk '$1 == "weft_flow_log_records_total" { print $2 }' <<<"$HTTP_BODY")
		conns=$(sed -n 's/.*conns=\([0-9]*\).*/\1/p' <<<"$res")
		line="mode=$mode rate=$RATE $res cpu_ms=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.0f", b - a }')"
		line+=" cpu_ms_per_1k=$(awk -v a="$c0" -v b="$c1" -v n="$conns" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }') records=${recs:-0}"
		echo "$line"
		SUM[$mode.cpu]="${SUM[$mode.cpu]:-} $(awk -v a="$c0" -v b="$c1" -v n="$conns" 'BEGIN { printf "%.3f", (b - a) * 1000 / n }')"
		SUM[$mode.lat]="${SUM[$mode.lat]:-} $(sed -n 's/.*connect_us_median=\([0-9.]*\).*/\1/p' <<<"$res")"
	done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END { printf "%s", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
co=$(med <<<"${SUM[off.cpu]}") cn=$(med <<<"${SUM[on.cpu]}") lo=$(med <<<"${SUM[off.lat]}") ln=$(med <<<"${SUM[on.lat]}")
echo "ratio weftd CPU per 1,000 connections: off $co ms, on $cn ms (+$(awk -v a="$co" -v b="$cn" 'BEGIN { printf "%.1f", b - a }') ms); connect median: off $lo µs, on $ln µs (on/off $(awk -v a="$lo" -v b="$ln" 'BEGIN { printf "%.2f", b / a }'))"
weftd_stop 1
finish
