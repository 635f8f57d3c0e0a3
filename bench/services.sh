#!/usr/bin/env bash
# Services: weft's nftables sync (test-service-model --bench: the model, the renderer and
# libnftables, as weftd runs them) against kube-proxy's iptables mechanism for the same Services
# (KUBE-SERVICES -> KUBE-SVC-* -> KUBE-SEP-* generated here, loaded with iptables-restore, nft
# backend), each in its own throwaway namespace, in the same run. N Services x 5 endpoints.
#   bench/services.sh [N...]   (default 1000 3000 10000); WEFT_BUILD as for the tests
#   bench/services.sh --latency [N...]   (default 100 1000 10000): TCP connect time to a Service
#                                         with N other Services loaded, weft vs iptables
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEFT_BUILD:-$TOP/build}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
NS=w-svcbench-$$
trap 'ip netns del $NS 2>/dev/null || true' EXIT

# kube-proxy's iptables-mode ruleset for N Services (one port, 5 endpoints each; the KUBE-SEP
# chains DNAT, KUBE-SVC chains pick with statistic mode random, as kube-proxy writes them)
iptables_ruleset() {
	python3 - "$1" "${2:-}" <<'PY'
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
eps = 5 if not only else 4
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

ms() { echo "$(($(date +%s%N) / 1000))"; } # microseconds

# Connection setup against the number of Services: a namespace holds N Services plus one more,
# 10.99.99.99:80 -> 10.77.0.1:8080 (a local address of a veth device, where a server listens), and
# a client times connect() to 10.99.99.99:80 (the first packet is NATed by the output hook: weft's
# svc-output map lookup, or kube-proxy's KUBE-SERVICES rule list, where the target Service is the
# last rule, as a Service created after the others is in iptables-restore's order).
# Prints "<mode> services=N connects=C connect_us_median=.. connect_us_p90=..".
connect_probe() { # NS LABEL N
	ip netns exec "$1" python3 - "$2" "$3" <<'PY'
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
	for n1 in "$@"; do
		latency_ns "$NS"
		ip netns exec "$NS" "$BUILD/test/test-service-model" --bench "$n1" 10.77.0.1 >/dev/null
		[ "$(ip netns exec "$NS" nft list map inet weft svc-ips4 | grep -c '10.99.99.99 . tcp . 80')" = 1 ] ||
			{ echo "weft: the target Service is not programmed" >&2; exit 1; }
		connect_probe "$NS" weft-nft "$n1"
		ip netns del "$NS"
		latency_ns "$NS"
		{
			iptables_ruleset "$n1" | sed '$d'
			echo ":KUBE-SVC-TARGET - [0:0]"
			echo ":KUBE-SEP-TARGET - [0:0]"
			echo "-A KUBE-SERVICES -d 10.99.99.99/32 -p tcp -m comment --comment \"bench/target\" -m tcp --dport 80 -j KUBE-SVC-TARGET"
			echo "-A KUBE-SVC-TARGET -j KUBE-SEP-TARGET"
			echo "-A KUBE-SEP-TARGET -s 10.77.0.1/32 -j KUBE-MARK-MASQ"
			echo "-A KUBE-SEP-TARGET -p tcp -m tcp -j DNAT --to-destination 10.77.0.1:8080"
			echo COMMIT
		} | ip netns exec "$NS" iptables-restore -w
		ip netns exec "$NS" iptables -t nat -S KUBE-SERVICES | tail -1 | grep -q 10.99.99.99 ||
			{ echo "iptables: the target Service is not the last rule" >&2; exit 1; }
		connect_probe "$NS" iptables "$n1"
		ip netns del "$NS"
	done
	exit 0
fi

for n in "${@:-1000 3000 10000}"; do
	for n1 in $n; do
		ip netns add "$NS"
		w=$(ip netns exec "$NS" "$BUILD/test/test-service-model" --bench "$n1")
		ip netns del "$NS"
		ip netns add "$NS"
		iptables_ruleset "$n1" >"/tmp/svcbench-$$.rules"
		iptables_ruleset "$n1" $((n1 / 2)) >"/tmp/svcbench-$$.one"
		t0=$(ms)
		ip netns exec "$NS" iptables-restore -w <"/tmp/svcbench-$$.rules"
		t1=$(ms)
		# kube-proxy's partial sync: the changed Service's chains only (--noflush)
		ip netns exec "$NS" iptables-restore -w --noflush <"/tmp/svcbench-$$.one"
		t2=$(ms)
		ip netns del "$NS"
		rm -f "/tmp/svcbench-$$.rules" "/tmp/svcbench-$$.one"
		echo "weft-nft $w"
		printf 'iptables-restore services=%s endpoints=5 full_sync_ms=%.1f one_service_sync_ms=%.2f\n' "$n1" \
			"$(python3 -c "print(($t1 - $t0) / 1000)")" "$(python3 -c "print(($t2 - $t1) / 1000)")"
	done
done
