#!/usr/bin/env bash
# weft-test: no-san (5,000 nodes in one pass, a run at size; the sanitizer pass takes the same reconcile code in test-weftd-backends and -hostile-leases)
# weftd at scale: WEFT_SCALE_NODES (default 5000) remote vxlan leases are written straight into etcd,
# then weftd starts on one node and must program all of them (neighbour + FDB + route each) in one
# reconcile pass. The pass time is weftd's own measurement (its log line and
# weft_reconcile_duration_seconds); the kernel state is counted with ip -j / bridge -j. The bound
# here is loose (5 s x WEFT_TEST_SLACK: about 1.3 s idle, 2.8 s seen at a load average of 17); the
# tight figure is bench/'s (section agent: 100, 1000 and 5000 remote nodes, warm and cold).
#
#   underlay br0 -- node1 (weftd) ; etcd 10.99.0.2    (remote nodes exist only as leases)
# shellcheck disable=SC2317 # helpers are called through wait_for
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
cluster_require
N=${WEFT_SCALE_NODES:-5000}
CLUSTER_NETWORK=100.64.0.0/10    # 16384 /24 subnets, no overlap with the 10.99.0.0/24 underlay
cluster_init 1 vxlan

# N leases: subnet 100.64.0.0/24 + i, public IP 198.18.x.y, MAC 02:00:00:00:hi:lo
ip netns exec "$ETCD_NS" python3 - "$ETCD_URL" "$ETCD_PREFIX" "$N" <<'PY'
import base64, http.client, json, sys, urllib.parse
url, prefix, n = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection(url.hostname, url.port)
b64 = lambda s: base64.b64encode(s.encode()).decode()
for i in range(1, n + 1):
    net = 0x64400000 + (i << 8)
    subnet = "%d.%d.%d.0" % (net >> 24, (net >> 16) & 255, (net >> 8) & 255)
    val = json.dumps({"node": "fake%d" % i, "publicIP": "198.18.%d.%d" % (i >> 8, i & 255),
                      "backend": "vxlan", "vtepMAC": "02:00:00:00:%02x:%02x" % (i >> 8, i & 255)})
    c.request("POST", "/v3/kv/put", json.dumps({"key": b64("%s/subnets/%s-24" % (prefix, subnet)), "value": b64(val)}))
    r = c.getresponse(); r.read()
    if r.status != 200: sys.exit("put failed: %d" % r.status)
PY
info "$N leases stored"

t0=$(date +%s%N)
weftd_start 1
WAIT_TIMEOUT=60 weftd_wait_ready 1
info "weftd ready after $((($(date +%s%N) - t0) / 1000000)) ms (start, lease, watch, first pass)"
line=$(grep -m1 "Reconciled $N remote nodes" "$(node_dir 1)/weftd.log" || true)
[ -n "$line" ] || fail "no reconcile pass over $N nodes logged: $(tail -5 "$(node_dir 1)/weftd.log")"
ms=$(sed -n 's/.* in \([0-9.]*\) ms$/\1/p' <<<"$line")
info "SCALE: first reconcile pass programmed $N remote nodes in $ms ms"
awk -v ms="$ms" -v lim=$((5000 * WEFT_TEST_SLACK)) 'BEGIN { exit !(ms < lim) }' ||
	check_fail "programming $N nodes took $ms ms (limit $((5000 * WEFT_TEST_SLACK)))"

ns=$(node_ns 1)
assert_eq "$(ip -n "$ns" -j route show proto 252 | jq length)" "$N" "weft routes"
assert_eq "$(ip -n "$ns" -j neigh show dev weft.1 nud permanent | jq length)" "$N" "permanent neighbours"
assert_eq "$(bridge -n "$ns" -j fdb show dev weft.1 | jq 'map(select(.dst)) | length')" "$N" "FDB entries"
http_get 1 /metrics
assert_eq "$(sed -n 's/^weft_routes_programmed //p' <<<"$HTTP_BODY")" "$N" "weft_routes_programmed"

# a full resync with nothing to do, and one repair among N
ip -n "$ns" route del 100.64.7.0/24
t0=$(date +%s%N)
restore_ok() { [ -n "$(ip -n "$ns" -j route show 100.64.7.0/24 proto 252 | jq -r '.[].dst')" ]; }
wait_for 2 restore_ok || check_fail "route deleted among $N not restored within 2 s"
info "one deleted route among $N restored in $((($(date +%s%N) - t0) / 1000000)) ms"
weftd_stop 1
assert_eq "$WEFTD_RC" 0 "exit status"
finish
