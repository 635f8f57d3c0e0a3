#!/usr/bin/env bash
# bench/lb-assign.sh N: LoadBalancer assignment latency (bench/loadbalancer.sh). A three-node etcd-mode
# cluster in namespaces of its own (test/lib/weft-cluster-lib.sh: named with this script's PID,
# removed on exit), a pool of 4094 addresses; bench/lb-assign.py creates N Services one after the
# other and times each from its put to status.loadBalancer.ingress written by the elected weftd.
# Prints "assign N MEDIAN_MS P99_MS MAX_MS".
. "$(dirname "$0")/../test/lib/lib.sh"
. "$(dirname "$0")/../test/lib/weft-cluster-lib.sh"
cluster_require
N=${1:-100}
cluster_init 3 host-gw --no-config
etcdctl_ put "$ETCD_PREFIX/config" "$(cluster_config_json |
	jq -c '. + {LoadBalancer: {Pools: [{Name: "bench", CIDRs: ["198.18.0.0/20"]}]}}')" >/dev/null
for i in 1 2 3; do weftd_start "$i" --objects-datastore etcd --relist-interval 0; done
weftd_wait_ready 1 2 3
etcdctl_ put "$ETCD_PREFIX/objects/namespaces/bench" '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}' >/dev/null
leader() { etcdctl_ get --print-value-only "$ETCD_PREFIX/loadbalancer/leader"; }
wait_for 30 sh -c "[ -n \"\$(ip netns exec $ETCD_NS etcdctl --endpoints $ETCD_URL get --print-value-only $ETCD_PREFIX/loadbalancer/leader)\" ]" ||
	fail "no leader"
ip netns exec "$ETCD_NS" python3 "$TOP/bench/lb-assign.py" "$ETCD_URL" "$ETCD_PREFIX" "$N" >"$T/lat" || fail "lb-assign.py failed"
sort -n "$T/lat" | awk -v n="$N" '{ v[NR] = $1 } END {
	p99 = int(0.99 * NR + 0.999); if (p99 < 1) p99 = 1
	printf "assign %d %.1f %.1f %.1f\n", n, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[p99], v[NR] }'
for i in 1 2 3; do weftd_stop "$i"; done
finish
