#!/usr/bin/env bash
# shellcheck disable=SC2317 # helper functions below are called through wait_for / converge
# weftd's object cache with the Kubernetes API as the objects' source (--datastore kubernetes, whose
# default --objects-datastore is kubernetes): one node, the fake API server
# (test/kube/fake-apiserver.py) in its own namespace. Pods are written through the fixture
# (test/kube/objects-feed.py: /fixture/apply Lists with status, as the kubelet would have it, and
# DELETEs). After each step /debug/objects must equal what the API server lists (namespace/name,
# labels, pod IPs, compared sorted):
#   1,000 pods created in bursts of 100; 500 deleted one by one; 500 relabelled;
#   malformed pods (a bad pod IP, an invalid label key) refused, counted, never cached;
#   the API server restarted while a burst of 1,000 more is being written (the writer retries). The
#     fixture keeps its objects across the restart (dumped and reloaded) and is moved on to the
#     resourceVersion it had, as a real API server over etcd would be;
#   a compaction while weftd's watches are cut: the resumed watch gets 410 Gone, the cache lists
#     again (weft_cache_expired_total) and the deletes made meanwhile reach it;
#   test/kube/objects/cluster.yaml applied: every kind's cache holds what the API server lists.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

require_root
require_cmd ip jq curl python3
require_built "$WEFTD"

FIXTURE=$TOP/test/kube/fake-apiserver.py
FEED=$TOP/test/kube/objects-feed.py
API_IP=$ETCD_IP
API_URL=http://$API_IP:6443
TOKEN=weft-objects-token
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json

cluster_init 1 host-gw --no-etcd

FIXTURE_PID=
fixture_start() { # fixture_start [--objects FILE]
	ip netns exec "$ETCD_NS" python3 "$FIXTURE" --bind "$API_IP" --port 6443 --token "$TOKEN" \
		--node node1=10.244.1.0/24 "$@" >>"$T/fixture.log" 2>&1 &
	FIXTURE_PID=$!
	wait_listen "$ETCD_NS" 6443 || { cat "$T/fixture.log" >&2; fail "fake-apiserver did not come up"; }
}
fixture_stop() {
	[ -n "$FIXTURE_PID" ] || return 0
	kill "$FIXTURE_PID" 2>/dev/null || true
	wait "$FIXTURE_PID" 2>/dev/null || true
	FIXTURE_PID=
}
on_exit 'fixture_stop'
api() { # api METHOD PATH [CURL ARGS...]
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -s -m 5 -X "$m" -H "Authorization: Bearer $TOKEN" "$@" "$API_URL$p"
}
feed() { ip netns exec "$ETCD_NS" python3 "$FEED" --api "$API_URL" --token "$TOKEN" "$@" >/dev/null; }

fixture_start
cluster_kubeconfig "$KUBECONFIG_FILE" "$API_URL" "$TOKEN"
cluster_config_json >"$NET_CONF"
feed namespaces create 0 9

NORM='[.[] | {ns: .metadata.namespace, name: .metadata.name, labels: (.metadata.labels // {}),
	ips: [.status.podIPs[]?.ip]}] | sort_by(.ns, .name)'
src_pods() {
	local l
	l=$(api GET /api/v1/pods) || return 1
	jq -ce ".items | map(select(.metadata.name | startswith(\"bad\") | not)) | $NORM" <<<"$l"
}
cache_pods() {
	http_get 1 "/debug/objects?kind=pods"
	[ "$HTTP_CODE" = 200 ] || return 1
	jq -c ".items | $NORM" <<<"$HTTP_BODY"
}
metric() {
	http_get 1 /metrics
	awk -v m="$1" '$1 == m { print $2 }' <<<"$HTTP_BODY"
}
metric_ge() { local v; v=$(metric "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; } # for wait_for
converge() {
	local what=$1 t src cache
	for ((t = 0; t < ${2:-15} * 5; t++)); do
		src=$(src_pods) && cache=$(cache_pods) && [ "$src" = "$cache" ] && break
		sleep 0.2
	done
	if [ "$src" != "$cache" ]; then
		diff <(jq -c '.[]' <<<"${src:-[]}") <(jq -c '.[]' <<<"${cache:-[]}") | head -10 >&2
		fail "$what: the cache differs from the API server ($(jq length <<<"${src:-[]}") listed, $(jq length <<<"${cache:-[]}") cached)"
	fi
	info "$what: cache = API server ($(jq length <<<"$src") pods)"
}

weftd_start 1 --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF" --relist-interval 0
weftd_wait_ready 1
wait_for 10 metric_ge 'weft_cache_synced{kind="pods"}' 1 || fail "pods never synced"
http_get 1 /debug/objects
assert_eq "$(jq -r .source <<<"$HTTP_BODY")" kubernetes "/debug/objects source (the default with --datastore kubernetes)"
assert_eq "$(jq -r .kinds.namespaces.objects <<<"$HTTP_BODY")" 14 "namespaces cached (4 built in + 10)"

# ---- bursts
feed --batch 100 pods create 0 999
converge "1,000 pods created in bursts"
[ "$(jq length <<<"$(cache_pods)")" = 1000 ] || fail "expected 1,000 cached pods"
feed --batch 100 pods delete 0 499
converge "500 deleted"
feed --batch 50 pods create 500 999 tier=db
converge "500 relabelled"
[ "$(cache_pods | jq '[.[] | select(.labels.tier == "db")] | length')" = 500 ] || fail "relabel not seen"

# ---- malformed pods
rejected0=$(metric 'weft_cache_rejected_objects_total{kind="pods"}')
api POST /fixture/apply -H 'Content-Type: application/json' -d '{"apiVersion":"v1","kind":"List","items":[
	{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad-ip","namespace":"ns0"},"spec":{"nodeName":"node1"},
	 "status":{"podIP":"10.1.2.300","podIPs":[{"ip":"10.1.2.300"}]}},
	{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad-label","namespace":"ns0","labels":{"no spaces please":"x"}}}]}' >/dev/null
wait_for 5 metric_ge 'weft_cache_rejected_objects_total{kind="pods"}' $((rejected0 + 2)) ||
	fail "malformed pods not counted: $(metric 'weft_cache_rejected_objects_total{kind="pods"}') (was $rejected0)"
[ "$(cache_pods | jq '[.[] | select(.name | startswith("bad"))] | length')" = 0 ] || fail "a malformed pod was cached"
converge "malformed pods refused"

# ---- the API server restarted in the middle of a burst
failures0=$(metric 'weft_cache_failures_total{kind="pods"}')
ip netns exec "$ETCD_NS" python3 "$FEED" --api "$API_URL" --token "$TOKEN" --retry --batch 20 --pause 0.02 \
	pods create 1000 1999 >/dev/null &
feeder=$!
on_exit "kill -CONT $feeder 2>/dev/null; kill $feeder 2>/dev/null"
sleep 0.4
kill -STOP "$feeder"
api GET /fixture/objects | jq '{apiVersion: "v1", kind: "List", items: [.[][]]}' >"$T/objects.json"
old_rv=$(api GET /fixture/stats | jq -r .resourceVersion)
fixture_stop
kill -CONT "$feeder"
sleep 0.3
kill -STOP "$feeder"
info "restart: API server down at $(date +%T.%N)"
fixture_start --objects "$T/objects.json"
info "restart: up again at $(date +%T.%N)"
feed rv advance-to "$old_rv"
kill -CONT "$feeder"
info "restart: resourceVersion moved on to $old_rv at $(date +%T.%N)"
wait $feeder || fail "the writer failed"
info "restart: burst written at $(date +%T.%N)"
converge "API server restarted mid-burst" 20
[ "$(metric 'weft_cache_failures_total{kind="pods"}')" -gt "$failures0" ] || fail "weftd never saw the API server go away"

# ---- 410 Gone: watches cut, a compaction, then the watch resumes at a compacted resourceVersion
expired0=$(metric 'weft_cache_expired_total{kind="pods"}')
kill -STOP "${WEFTD_PID[1]}"
feed --batch 100 pods delete 1000 1499
api POST /fixture/compact >/dev/null
api POST /fixture/drop-watches >/dev/null
kill -CONT "${WEFTD_PID[1]}"
converge "after a compaction" 20
[ "$(metric 'weft_cache_expired_total{kind="pods"}')" -gt "$expired0" ] || fail "no 410 Gone was seen"

# ---- every kind, from the YAML a user gives kubectl: the cache holds what the API server lists
api POST /fixture/apply -H 'Content-Type: application/yaml' --data-binary @"$TOP/test/kube/objects/cluster.yaml" >/dev/null ||
	fail "fixture apply of cluster.yaml"
KEYS='[.items[] | "\(.metadata.namespace // "")/\(.metadata.name)"] | sort'
test_cached_eq() { [ "$(http_get 1 "/debug/objects?kind=$1" && jq -c "$KEYS" <<<"$HTTP_BODY")" = "$2" ]; }
for kind in namespaces:/api/v1/namespaces networkpolicies:/apis/networking.k8s.io/v1/networkpolicies \
	services:/api/v1/services endpointslices:/apis/discovery.k8s.io/v1/endpointslices; do
	src=$(api GET "${kind#*:}" | jq -c "$KEYS")
	[ "$(jq length <<<"$src")" -gt 0 ] || fail "${kind%%:*}: nothing listed"
	wait_for 5 test_cached_eq "${kind%%:*}" "$src" || fail "${kind%%:*}: the cache differs from the API server ($src)"
done
info "cluster.yaml: every kind cached"

weftd_alive 1 || fail "weftd exited"
finish
