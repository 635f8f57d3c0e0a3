#!/usr/bin/env bash
# Services: weft's nftables sync (test-service-model --bench: the model, the renderer and
# libnftables, as weftd runs them) against kube-proxy's iptables mechanism for the same Services
# (KUBE-SERVICES -> KUBE-SVC-* -> KUBE-SEP-* generated here, loaded with iptables-restore, nft
# backend), each in its own throwaway namespace, in the same run. N Services x 5 endpoints.
#   bench/services.sh [N...]   (default 1000 3000 10000); WEFT_BUILD as for the tests
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
