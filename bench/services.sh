#!/usr/bin/env bash
# Services: weft's nftables sync (test-service-compile --bench: the model, the renderer and
# libnftables, as weftd runs them) against kube-proxy's iptables mechanism for the same Services
# (KUBE-SERVICES -> KUBE-SVC-* -> KUBE-SEP-* generated here, loaded with iptables-restore, nft
# backend), each in its own throwaway namespace, in the same run. N Services x 5 endpoints.
#   bench/services.sh [N...]   (default 1000 3000 10000); WEFT_BUILD as for the tests
#   bench/services.sh --latency [N...]   (default 100 1000 10000): TCP connect time to a Service
#                                         with N other Services loaded, weft vs iptables
# Environment: SVC_ROUNDS (--latency: rounds over one namespace per size and mode, interleaved,
# default 1; one line per round), SVC_NS (the namespace's name, default w-svcbench-PID).
# Output: one line per measurement, "<mode> key=value ...", modes weft-nft and iptables(-restore).
# Sourced by bench/run (section "services", sec_services below), it only defines the section.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# svc_kv LINE KEY: the value of KEY in a "key=value ..." line (empty if absent)
	svc_kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1; }
	# svc_med MODE N KEY FILE: median of KEY over the lines of MODE with services=N
	svc_med() {
		local line
		while IFS= read -r line; do
			[ "${line%% *}" = "$1" ] && [ "$(svc_kv "$line" services)" = "$2" ] && svc_kv "$line" "$3"
		done <"$4" | sort -g | awk '{v[NR] = $1} END { if (NR) printf "%s", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
	}
	# svc_x A B: B/A ("n/a" without both): how many times faster A (weft) is than B (iptables)
	svc_x() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "n/a" }'; }
	# svc_cpu MODE N METRIC FILE: "wall (CPU)" from METRIC_ms and METRIC_cpu_ms ("wall" without CPU)
	svc_cpu() {
		local c
		c=$(svc_med "$1" "$2" "$3_cpu_ms" "$4")
		printf '%s%s' "$(svc_med "$1" "$2" "$3_ms" "$4")" "${c:+ ($c)}"
	}
	svc_fmt() { [ -n "$1" ] && printf '%s' "$1" || printf 'n/a'; }
	sec_services() {
		local f=$W/md/95-services.md csv=$OUT/services.csv sizes lsizes rounds n c rc t0 sync lat w i wi
		local v worst base dev ref
		md "$f" "### services: weft's nftables sync and connection setup against kube-proxy's iptables"
		md "$f" ""
		if [ ! -x "$WEFT_BUILD/test/test-service-compile" ]; then skipped "$f" "test/test-service-compile not built"; return 77; fi
		for c in iptables-restore iptables nft python3; do command -v "$c" >/dev/null || { skipped "$f" "needs $c"; return 77; }; done
		sizes="1000 10000 30000" lsizes="100 1000 10000 30000" rounds=5
		q && { sizes=1000 lsizes=1000 rounds=1; }
		sync=$W/svc-sync.out lat=$W/svc-lat.out
		t0=$SECONDS
		# shellcheck disable=SC2086 # word lists of sizes
		SVC_NS=$NSP-svc WEFT_BUILD=$WEFT_BUILD "$BENCH/services.sh" $sizes >"$sync" 2>"$W/svc-sync.err"
		rc=$?
		say "   sync ($sizes Services): $((SECONDS - t0)) s"
		((rc == 0)) || { log "  FAILED: bench/services.sh $sizes (rc $rc):"; tail -5 "$W/svc-sync.err" >&2; return 1; }
		t0=$SECONDS
		# shellcheck disable=SC2086
		SVC_NS=$NSP-svc SVC_ROUNDS=$rounds WEFT_BUILD=$WEFT_BUILD "$BENCH/services.sh" --latency $lsizes >"$lat" 2>"$W/svc-lat.err"
		rc=$?
		say "   connection setup ($lsizes Services, $rounds round(s)): $((SECONDS - t0)) s"
		((rc == 0)) || { log "  FAILED: bench/services.sh --latency $lsizes (rc $rc):"; tail -5 "$W/svc-lat.err" >&2; return 1; }
		# every size measured in both modes, or the section fails
		for n in $sizes; do
			for c in weft-nft:full_sync_ms weft-nft:one_service_sync_ms iptables-restore:full_sync_ms iptables-restore:one_service_sync_ms; do
				[ -n "$(svc_med "${c%%:*}" "$n" "${c#*:}" "$sync")" ] || { log "  FAILED: no ${c#*:} for ${c%%:*} at $n Services"; return 1; }
			done
		done
		for n in $lsizes; do
			for c in weft-nft iptables; do
				[ -n "$(svc_med "$c" "$n" connect_us_median "$lat")" ] || { log "  FAILED: no connect time for $c at $n Services"; return 1; }
			done
		done
		echo "mode,services,metric,value" >"$csv"
		while IFS= read -r w; do
			for v in $w; do [[ $v == *=* ]] && [[ $v != services=* ]] && echo "${w%% *},$(svc_kv "$w" services),${v%%=*},${v#*=}"; done
		done < <(cat "$sync" "$lat") >>"$csv"

		md "$f" "Sync: \`bench/services.sh N\`. weft: \`test-service-compile --bench N\`, the model, the renderer and"
		md "$f" "libnftables as weftd runs them, N ClusterIP Services × 5 endpoints in a fresh namespace: the initial"
		md "$f" "(full) sync, then one Service's endpoints change nine times (median; the batch is that Service's"
		md "$f" "diff). iptables: kube-proxy's iptables-mode ruleset for the same Services (KUBE-SERVICES →"
		md "$f" "KUBE-SVC-* → KUBE-SEP-*, statistic-mode random, as kube-proxy writes it) loaded by"
		md "$f" "\`iptables-restore\` (nft backend) in another fresh namespace, then its partial sync of the changed"
		md "$f" "Service's chains (\`--noflush\`), nine times over different Services likewise (median). CPU: user +"
		md "$f" "system time of the process (weft: the bench program; iptables: iptables-restore), the fairer figure"
		md "$f" "on a shared machine. The \"×\" columns are iptables wall time / weft wall time (> 1: weft faster), both"
		md "$f" "from the same run. Rows: least favourable to weft first (by the one-Service ratio)."
		md "$f" ""
		md "$f" "| Services | weft initial ms (CPU) | iptables-restore ms (CPU) | × | weft one Service ms (CPU) | iptables --noflush ms (CPU) | × |"
		md "$f" "|---:|---:|---:|---:|---:|---:|---:|"
		for n in $sizes; do
			local wf wi1 if_ ii
			wf=$(svc_med weft-nft "$n" full_sync_ms "$sync") wi1=$(svc_med weft-nft "$n" one_service_sync_ms "$sync")
			if_=$(svc_med iptables-restore "$n" full_sync_ms "$sync") ii=$(svc_med iptables-restore "$n" one_service_sync_ms "$sync")
			echo "$(svc_x "$wi1" "$ii") | $n | $(svc_cpu weft-nft "$n" full_sync "$sync") | $(svc_cpu iptables-restore "$n" full_sync "$sync") | $(svc_x "$wf" "$if_") |" \
				"$(svc_cpu weft-nft "$n" one_service_sync "$sync") | $(svc_cpu iptables-restore "$n" one_service_sync "$sync") | $(svc_x "$wi1" "$ii") |"
			say "   $n Services: initial weft $wf ms vs iptables-restore $if_ ms; one Service weft $wi1 ms vs iptables $ii ms" >&2
			verdict_ratio services "$(svc_x "$wf" "$if_")" "$(svc_x "$wf" "$if_")" "iptables / weft, least favourable row: initial sync of $n Services"
			verdict_ratio services "$(svc_x "$wi1" "$ii")" "$(svc_x "$wi1" "$ii")" "iptables / weft, least favourable row: one Service's sync at $n Services"
		done | sort -g | cut -d'|' -f2- | sed 's/^/|/' >>"$f"
		md "$f" ""

		md "$f" "Connection setup: \`bench/services.sh --latency N\`. A namespace holds N Services (5 endpoints each)"
		md "$f" "plus a target Service 10.99.99.99:80 → 10.77.0.1:8080 (a local veth address with a server); a client"
		md "$f" "times 2,000 TCP \`connect()\`s to it after 200 warm-up connects (the first packet is NATed in the"
		md "$f" "output hook: weft's objects as weftd renders them, or kube-proxy's KUBE-SERVICES list with the"
		md "$f" "target as its last rule, a Service created after the others). One namespace per size and mode,"
		md "$f" "probed in $rounds interleaved rounds of 2,000 connects; the figure is the median of the rounds' medians (p90 likewise)."
		md "$f" ""
		md "$f" "| Services | weft median µs | weft p90 µs | iptables median µs | iptables p90 µs | iptables / weft (median) |"
		md "$f" "|---:|---:|---:|---:|---:|---:|"
		for n in $lsizes; do
			local wm wp im ip_
			wm=$(svc_med weft-nft "$n" connect_us_median "$lat") wp=$(svc_med weft-nft "$n" connect_us_p90 "$lat")
			im=$(svc_med iptables "$n" connect_us_median "$lat") ip_=$(svc_med iptables "$n" connect_us_p90 "$lat")
			echo "$(svc_x "$wm" "$im") | $n | $wm | $wp | $im | $ip_ | $(svc_x "$wm" "$im") |"
			say "   $n Services: connect weft $wm µs vs iptables $im µs (median)" >&2
			verdict_ratio services "$(svc_x "$wm" "$im")" "$(svc_x "$wm" "$im")" "iptables / weft, least favourable row: connection setup at $n Services"
		done | sort -g | cut -d'|' -f2- | sed 's/^/|/' >>"$f"
		md "$f" ""

		# targets (from the issue), judged on weft's measured figures
		if [[ " $sizes " == *" 10000 "* ]]; then
			wi=$(svc_med weft-nft 10000 one_service_sync_ms "$sync")
			awk -v a="$wi" 'BEGIN { exit !(a + 0 <= 50) }' && v=met || v="not met"
			target "Services: incremental sync ≤ 50 ms at 10k Services" "$wi ms (iptables --noflush $(svc_med iptables-restore 10000 one_service_sync_ms "$sync") ms)" "$v" "one Service's endpoints change, median of 9"
			wi=$(svc_med weft-nft 10000 full_sync_ms "$sync")
			awk -v a="$wi" 'BEGIN { exit !(a + 0 <= 2000) }' && v=met || v="not met"
			target "Services: initial sync of 10k ≤ 2 s" "$(awk -v a="$wi" 'BEGIN { printf "%.2f", a / 1000 }') s (iptables-restore $(awk -v a="$(svc_med iptables-restore 10000 full_sync_ms "$sync")" 'BEGIN { printf "%.2f", a / 1000 }') s)" "$v" "5 endpoints per Service"
		else
			target "Services: incremental sync ≤ 50 ms at 10k Services" "$(svc_fmt "$(svc_med weft-nft 1000 one_service_sync_ms "$sync")") ms at 1k" "not judged" "quick mode: 1,000 Services only"
			target "Services: initial sync of 10k ≤ 2 s" "$(svc_fmt "$(svc_med weft-nft 1000 full_sync_ms "$sync")") ms at 1k" "not judged" "quick mode: 1,000 Services only"
		fi
		if [ "$(wc -w <<<"$lsizes")" -ge 2 ]; then
			# least favourable: the size whose median is furthest from the smallest size's
			n=${lsizes%% *}
			# and the largest growth (a slower connect with more Services), beside it
			local grow=-1000 gat=""
			base=$(svc_med weft-nft "$n" connect_us_median "$lat") worst="" dev=-1
			for i in $lsizes; do
				wi=$(svc_med weft-nft "$i" connect_us_median "$lat")
				v=$(awk -v a="$wi" -v b="$base" 'BEGIN { d = 100 * (a - b) / b; printf "%.1f", d < 0 ? -d : d }')
				awk -v a="$v" -v b="$dev" 'BEGIN { exit !(a + 0 > b + 0) }' && { dev=$v worst=$i; }
				[ "$i" = "$n" ] && continue
				v=$(awk -v a="$wi" -v b="$base" 'BEGIN { printf "%+.1f", 100 * (a - b) / b }')
				awk -v a="$v" -v b="$grow" 'BEGIN { exit !(a + 0 > b + 0) }' && { grow=$v gat=$i; }
			done
			ref=$(svc_x "$(svc_med iptables "$n" connect_us_median "$lat")" "$(svc_med iptables "${lsizes##* }" connect_us_median "$lat")")
			awk -v a="$dev" 'BEGIN { exit !(a + 0 <= 10) }' && v=met || v="not met"
			target "Services: connection setup flat (within 10 %) from ${n} to ${lsizes##* } Services" \
				"largest deviation either way ${dev} % at $worst ($(svc_med weft-nft "$worst" connect_us_median "$lat") vs $base µs); largest growth $grow % at $gat; iptables ×$ref from $n to ${lsizes##* }" \
				"$v" "median of $rounds interleaved rounds' medians per size"
		else
			target "Services: connection setup flat (within 10 %) from 100 to 30k Services" "$(svc_fmt "$(svc_med weft-nft 1000 connect_us_median "$lat")") µs at 1k" "not judged" "quick mode: 1,000 Services only"
		fi
		q && md "$f" "(quick mode: 1,000 Services, one round; numbers are indicative only)"
		return 0
	}
	return 0
fi
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEFT_BUILD:-$TOP/build}
ROUNDS=${SVC_ROUNDS:-1}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
NS=${SVC_NS:-w-svcbench-$$}
TMP=$(mktemp -d /tmp/svcbench.XXXXXX)
LAT_NS=()
trap 'ip netns del $NS 2>/dev/null || true; for n in "${LAT_NS[@]}"; do ip netns del "$n" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT

# kube-proxy's iptables-mode ruleset for N Services (one port, 5 endpoints each; the KUBE-SEP
# chains DNAT, KUBE-SVC chains pick with statistic mode random, as kube-proxy writes them);
# iptables_ruleset N I E: only Service I's chains, with E endpoints (kube-proxy's partial sync)
iptables_ruleset() {
	python3 - "$1" "${2:-}" "${3:-4}" <<'PY'
import sys
n = int(sys.argv[1]); only = sys.argv[2]
out = ["*nat"]
ids = range(n) if not only else [int(only)]
if not only:
    out += [":KUBE-SERVICES - [0:0]", ":KUBE-MARK-MASQ - [0:0]", ":KUBE-POSTROUTING - [0:0]",
            "-A PREROUTING -j KUBE-SERVICES", "-A OUTPUT -j KUBE-SERVICES", "-A POSTROUTING -j KUBE-POSTROUTING",
            "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
            "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
            "-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0",
            "-A KUBE-POSTROUTING -j MASQUERADE --random-fully"]
eps = 5 if not only else int(sys.argv[3])
for i in ids:
    svc = f"KUBE-SVC-{i:016X}"
    out.append(f":{svc} - [0:0]")
    seps = [f"KUBE-SEP-{i:011X}{e:05X}" for e in range(eps)]
    for s in seps:
        out.append(f":{s} - [0:0]")
    if not only:
        out.append(f"-A KUBE-SERVICES -d 10.100.{(i >> 8) & 255}.{i & 255}/32 -p tcp -m comment --comment \"bench/s{i}\" -m tcp --dport 80 -j {svc}")
    for e, s in enumerate(seps):
        left = eps - e
        prob = "" if left == 1 else f" -m statistic --mode random --probability {1 / left:.10f}"
        out.append(f"-A {svc} -m comment --comment \"bench/s{i} -> 10.{128 + e}.{(i >> 8) & 255}.{i & 255}:8080\"{prob} -j {s}")
        ip = f"10.{128 + e}.{(i >> 8) & 255}.{i & 255}"
        out.append(f"-A {s} -s {ip}/32 -j KUBE-MARK-MASQ")
        out.append(f"-A {s} -p tcp -m tcp -j DNAT --to-destination {ip}:8080")
out.append("COMMIT")
print("\n".join(out))
PY
}

us() { echo "$(($(date +%s%N) / 1000))"; } # microseconds

# Connection setup against the number of Services: a namespace holds N Services plus one more,
# 10.99.99.99:80 -> 10.77.0.1:8080 (a local address of a veth device, where a server listens), and
# a client times connect() to 10.99.99.99:80 (the first packet is NATed by the output hook: weft's
# lookup of the Service, or kube-proxy's KUBE-SERVICES rule list, where the target Service is the
# last rule, as a Service created after the others is in iptables-restore's order).
# Prints "<mode> services=N connects=C connect_us_median=.. connect_us_p90=..".
connect_probe() { # NS LABEL N
	# pinned to one CPU: client, server thread and softirq on the same core (unpinned, the median
	# jumped between ~27 and ~45 µs for one ruleset with where the scheduler put them)
	taskset -c 0 ip netns exec "$1" python3 - "$2" "$3" <<'PY'
import socket, statistics, sys, threading, time
label, n = sys.argv[1], int(sys.argv[2])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("10.77.0.1", 8080)); srv.listen(1024)
def serve():
    while True:
        c, _ = srv.accept(); c.close()
threading.Thread(target=serve, daemon=True).start()
lat = []
for i in range(2200):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    s.settimeout(3) # not NATed: the SYN goes nowhere
    t = time.perf_counter_ns(); s.connect(("10.99.99.99", 80)); d = time.perf_counter_ns() - t
    s.close()
    if i >= 200: # warm-up
        lat.append(d / 1000)
lat.sort()
print(f"{label} services={n} connects={len(lat)} connect_us_median={statistics.median(lat):.1f} "
      f"connect_us_p90={lat[int(len(lat) * 0.9)]:.1f}")
PY
}
latency_ns() { # NS: a veth with the endpoint address, a route for the Service IP
	ip netns add "$1"
	ip -n "$1" link set lo up
	ip -n "$1" link add d0 type veth peer name d1
	ip -n "$1" link set d1 up
	ip -n "$1" addr add 10.77.0.1/24 dev d0
	ip -n "$1" link set d0 up
	ip -n "$1" route add 10.99.99.99/32 dev d0
}
if [ "${1:-}" = --latency ]; then
	shift
	(($#)) || set -- 100 1000 10000
	# one namespace per size and mode, loaded once; then ROUNDS rounds that probe each in turn, so
	# a slow or fast spell of the shared machine falls on every size alike
	for n1 in "$@"; do
		latency_ns "$NS-w$n1"
		LAT_NS+=("$NS-w$n1")
		ip netns exec "$NS-w$n1" "$BUILD/test/test-service-compile" --bench "$n1" 10.77.0.1 >/dev/null
		latency_ns "$NS-i$n1"
		LAT_NS+=("$NS-i$n1")
		{
			iptables_ruleset "$n1" | sed '$d'
			echo ":KUBE-SVC-TARGET - [0:0]"
			echo ":KUBE-SEP-TARGET - [0:0]"
			echo "-A KUBE-SERVICES -d 10.99.99.99/32 -p tcp -m comment --comment \"bench/target\" -m tcp --dport 80 -j KUBE-SVC-TARGET"
			echo "-A KUBE-SVC-TARGET -j KUBE-SEP-TARGET"
			echo "-A KUBE-SEP-TARGET -s 10.77.0.1/32 -j KUBE-MARK-MASQ"
			echo "-A KUBE-SEP-TARGET -p tcp -m tcp -j DNAT --to-destination 10.77.0.1:8080"
			echo COMMIT
		} >"$TMP/rules"
		ip netns exec "$NS-i$n1" iptables-restore -w <"$TMP/rules"
		[[ $(ip netns exec "$NS-i$n1" iptables -t nat -S KUBE-SERVICES | tail -1) == *10.99.99.99* ]] ||
			{ echo "iptables: the target Service is not the last rule" >&2; exit 1; }
	done
	for ((r = 1; r <= ROUNDS; r++)); do
		for n1 in "$@"; do
			# no listing of weft's objects (slow at 30k, and their names are weft's to change):
			# connect_probe fails if a connect is not DNATed to the server
			connect_probe "$NS-w$n1" weft-nft "$n1"
			connect_probe "$NS-i$n1" iptables "$n1"
		done
	done
	exit 0
fi

(($#)) || set -- 1000 3000 10000
# timed FILE CMD...: CMD with FILE as stdin; prints "wall_ms cpu_ms" (CPU: user + system of CMD)
timed() {
	# (a difference: python3's start-up may already count children, pyenv's for one)
	python3 -c 'import resource, subprocess, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN); return r.ru_utime + r.ru_stime
c = cpu(); t = time.perf_counter(); subprocess.run(sys.argv[2:], stdin=open(sys.argv[1]), check=True)
w = time.perf_counter() - t
print("%.2f %.2f" % (w * 1000, (cpu() - c) * 1000))' "$@"
}
# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for n1 in "$@"; do
	ip netns add "$NS"
	w=$(ip netns exec "$NS" "$BUILD/test/test-service-compile" --bench "$n1")
	ip netns del "$NS"
	ip netns add "$NS"
	iptables_ruleset "$n1" >"$TMP/rules"
	# kube-proxy's partial sync (--noflush: the changed Service's chains only), nine times over
	# different Services as weft's bench does: one loses an endpoint, the next gets its fifth back
	for ((c = 0; c < 9; c++)); do
		iptables_ruleset "$n1" $(((n1 / 2 + c * (n1 / 9 + 1)) % n1)) $((c % 2 ? 5 : 4)) >"$TMP/one.$c"
	done
	read -r full full_cpu < <(timed "$TMP/rules" ip netns exec "$NS" iptables-restore -w)
	for ((c = 0; c < 9; c++)); do timed "$TMP/one.$c" ip netns exec "$NS" iptables-restore -w --noflush; done >"$TMP/changes"
	# every Service is in KUBE-SERVICES
	got=$(ip netns exec "$NS" iptables -w -t nat -S KUBE-SERVICES | grep -c -- '-j KUBE-SVC-')
	[ "$got" = "$n1" ] || { echo "iptables: $got of $n1 Services in KUBE-SERVICES" >&2; exit 1; }
	ip netns del "$NS"
	echo "weft-nft $w"
	echo "iptables-restore services=$n1 endpoints=5 full_sync_ms=$full one_service_sync_ms=$(cut -d' ' -f1 "$TMP/changes" | median)" \
		"one_service_sync_max_ms=$(cut -d' ' -f1 "$TMP/changes" | sort -g | tail -1) first_change_ms=$(head -1 "$TMP/changes" | cut -d' ' -f1)" \
		"full_sync_cpu_ms=$full_cpu one_service_sync_cpu_ms=$(cut -d' ' -f2 "$TMP/changes" | median)"
done
