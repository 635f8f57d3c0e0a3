#!/usr/bin/env bash
# shellcheck disable=SC2317 # helper functions below are called through wait_for / converge
# weftd's object cache with etcd as the objects' source (--objects-datastore etcd), leases in the
# same etcd: one node, etcd in its own namespace. Objects are written straight into etcd under
# <prefix>/objects/ per the key schema (test/kube/objects-feed.py: txn batches, as `weft apply` would
# put them). After each step /debug/objects must equal what etcd holds (namespace/name, labels, pod
# IPs, compared sorted):
#   1,000 pods created in bursts of 100; 500 deleted in bursts; 500 relabelled;
#   malformed values (not JSON, a bad pod IP, a name that is not its key's) refused, counted, logged
#     once, never cached;
#   etcd restarted while a burst of 1,000 more is being written (the writer retries);
#   a compaction while weftd is cut off (stopped, etcd restarted): its watch gets "compacted", the
#     cache lists again (weft_cache_expired_total) and the deletes made meanwhile reach it;
#   --relist-interval lists every kind again, with no deltas for an unchanged store; the weft_cache_*
#   metrics pass promtool; unsupported --objects-datastore combinations exit 2.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

require_root
require_cmd ip jq curl python3 etcd etcdctl
require_built "$WEFTD"

FEED=$TOP/test/kube/objects-feed.py
cluster_init 1 host-gw

feed() { ip netns exec "$ETCD_NS" python3 "$FEED" --etcd "$ETCD_URL" --prefix "$ETCD_PREFIX" "$@" >/dev/null; }

# The comparable view of a list of pods: sorted namespace/name with labels and IPs.
NORM='[.[] | {ns: .metadata.namespace, name: .metadata.name, labels: (.metadata.labels // {}),
	ips: [.status.podIPs[]?.ip]}] | sort_by(.ns, .name)'
# What etcd holds (values that are not JSON, and the deliberately bad objects, left out).
src_pods() {
	etcdctl_ get --prefix "$ETCD_PREFIX/objects/pods/" --print-value-only |
		jq -cRs "split(\"\n\") | map(fromjson? // empty) | map(select(.metadata.name | startswith(\"bad\") | not)) | $NORM"
}
cache_pods() {
	http_get 1 "/debug/objects?kind=pods"
	[ "$HTTP_CODE" = 200 ] || return 1
	jq -c ".items | $NORM" <<<"$HTTP_BODY"
}
metric() { # metric NAME{LABELS}: its value on node 1
	http_get 1 /metrics
	awk -v m="$1" '$1 == m { print $2 }' <<<"$HTTP_BODY"
}
test_cached_eq() { [ "$(http_get 1 "/debug/objects?kind=$1" && jq -c "$KEYS" <<<"$HTTP_BODY")" = "$2" ]; }
metric_ge() { local v; v=$(metric "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; } # for wait_for
# converge WHAT [SECONDS]: the cache equals etcd within the time
converge() {
	local what=$1 t src cache
	for ((t = 0; t < ${2:-15} * 5; t++)); do
		src=$(src_pods) && cache=$(cache_pods) && [ "$src" = "$cache" ] && break
		sleep 0.2
	done
	if [ "$src" != "$cache" ]; then
		diff <(jq -c '.[]' <<<"$src") <(jq -c '.[]' <<<"${cache:-[]}") | head -10 >&2
		fail "$what: the cache differs from etcd ($(jq length <<<"$src") in etcd, $(jq length <<<"${cache:-[]}") cached)"
	fi
	info "$what: cache = etcd ($(jq length <<<"$src") pods)"
}

weftd_start 1 --objects-datastore etcd --relist-interval 0
weftd_wait_ready 1
wait_for 10 metric_ge 'weft_cache_synced{kind="pods"}' 1 || fail "pods never synced"
http_get 1 /debug/objects
assert_eq "$(jq -r .source <<<"$HTTP_BODY")" etcd "/debug/objects source"

# ---- bursts
feed --batch 100 pods create 0 999
converge "1,000 pods created in bursts"
[ "$(jq length <<<"$(cache_pods)")" = 1000 ] || fail "expected 1,000 cached pods"
feed --batch 100 pods delete 0 499
converge "500 deleted in bursts"
feed --batch 50 pods create 500 999 tier=db
converge "500 relabelled"
[ "$(cache_pods | jq '[.[] | select(.labels.tier == "db")] | length')" = 500 ] || fail "relabel not seen"
http_get 1 "/debug/objects?kind=pods&namespace=ns3"
if [ "$(jq '[.items[] | select(.metadata.namespace != "ns3")] | length' <<<"$HTTP_BODY")" != 0 ] ||
	[ "$(jq '.items | length' <<<"$HTTP_BODY")" != 50 ]; then
	fail "namespace filter: $(jq -c '.items | length' <<<"$HTTP_BODY") items"
fi

# ---- malformed objects
P=$ETCD_PREFIX/objects/pods
rejected0=$(metric 'weft_cache_rejected_objects_total{kind="pods"}')
feed raw-etcd "$P/ns0/bad-json" 'not json {'
feed raw-etcd "$P/ns0/bad-ip" '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad-ip","namespace":"ns0"},"status":{"podIPs":[{"ip":"10.1.2.300"}]}}'
feed raw-etcd "$P/ns0/bad-name" '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad-other","namespace":"ns0"}}'
wait_for 5 metric_ge 'weft_cache_rejected_objects_total{kind="pods"}' $((rejected0 + 3)) ||
	fail "malformed pods not counted: $(metric 'weft_cache_rejected_objects_total{kind="pods"}') (was $rejected0)"
[ "$(cache_pods | jq '[.[] | select(.name | startswith("bad"))] | length')" = 0 ] || fail "a malformed pod was cached"
converge "malformed values refused"

# ---- etcd restarted in the middle of a burst
failures0=$(metric 'weft_cache_failures_total{kind="pods"}')
ip netns exec "$ETCD_NS" python3 "$FEED" --etcd "$ETCD_URL" --prefix "$ETCD_PREFIX" --retry --batch 20 --pause 0.02 \
	pods create 1000 1999 >/dev/null &
feeder=$!
on_exit "kill $feeder 2>/dev/null"
sleep 0.4
cluster_etcd_stop
sleep 0.5
cluster_etcd_start
wait $feeder || fail "the writer failed"
converge "etcd restarted mid-burst" 20
[ "$(metric 'weft_cache_failures_total{kind="pods"}')" -gt "$failures0" ] || fail "weftd never saw etcd go away"

# ---- compaction while weftd is cut off: its watch resumes at a compacted revision -> list again
expired0=$(metric 'weft_cache_expired_total{kind="pods"}')
kill -STOP "${WEFTD_PID[1]}"
cluster_etcd_stop
cluster_etcd_start
feed --batch 100 pods delete 1000 1499
rev=$(etcdctl_ endpoint status -w json | jq '.[0].Status.header.revision')
etcdctl_ compact "$rev" >/dev/null || fail "compaction failed"
kill -CONT "${WEFTD_PID[1]}"
converge "after a compaction" 20
[ "$(metric 'weft_cache_expired_total{kind="pods"}')" -gt "$expired0" ] || fail "no 410 (compacted) was seen"
# The relist met the malformed values again; the log names each once.
n=$(grep -c "refused Pod ns0/bad-json" "$(node_dir 1)/weftd.log")
assert_eq "$n" 1 "log lines for one refused object"

# ---- every kind, written by `weft apply -f` (the same YAML a user gives kubectl): each one cached
WEFT_TOOL=$WEFT_BUILD/tool/weft
if [ -x "$WEFT_TOOL" ]; then
	wt() { ip netns exec "$ETCD_NS" env WEFT_ETCD_ENDPOINTS="$ETCD_URL" WEFT_ETCD_PREFIX="$ETCD_PREFIX" "$WEFT_TOOL" "$@"; }
	wt apply -f "$TOP/test/kube/objects/cluster.yaml" >/dev/null || fail "weft apply -f cluster.yaml"
	KEYS='[.items[] | "\(.metadata.namespace // "")/\(.metadata.name)"] | sort'
	for kind in namespaces networkpolicies services endpointslices; do
		src=$(wt get "$kind" -A -o json | jq -c "$KEYS")
		[ "$(jq length <<<"$src")" -gt 0 ] || fail "weft get $kind: nothing applied"
		cached_kind() { http_get 1 "/debug/objects?kind=$1" && jq -c "$KEYS" <<<"$HTTP_BODY"; }
		wait_for 5 test_cached_eq "$kind" "$src" || fail "$kind: cache $(cached_kind "$kind") != weft get $src"
	done
	info "weft apply -f cluster.yaml: every kind cached"
else
	info "no $WEFT_TOOL: weft apply step skipped"
fi

# ---- the periodic relist (--relist-interval) lists every kind again; what it finds changes nothing
weftd_stop 1
weftd_start 1 --objects-datastore etcd --relist-interval 1s
wait_for 10 metric_ge 'weft_cache_lists_total{kind="pods"}' 3 ||
	fail "no periodic relist: weft_cache_lists_total{pods} = $(metric 'weft_cache_lists_total{kind="pods"}')"
[ "$(metric 'weft_cache_lists_total{kind="namespaces"}')" -ge 2 ] || fail "namespaces not relisted"
converge "after periodic relists"
deltas=$(metric 'weft_cache_deltas_total{kind="pods",type="updated"}')
assert_eq "$deltas" 0 "updates fired by relists of an unchanged store"

# ---- options: Kubernetes leases with objects in etcd is refused, as is an unknown source
for bad in "--datastore kubernetes --objects-datastore etcd" "--objects-datastore consul"; do
	rc=0
	# shellcheck disable=SC2086 # word splitting wanted
	_weftd_argv 1 --node-name node1 --iface eth0 --listen 127.0.0.1:9877 $bad
	out=$(timeout 10 "${WEFTD_ARGV[@]}" 2>&1) || rc=$?
	assert_eq "$rc" 2 "weftd $bad: exit code ($out)"
done

# The cache's metrics pass Prometheus' own linter (names, types, _total counters).
if command -v promtool >/dev/null; then
	http_get 1 /metrics
	grep -q '^weft_cache_synced{kind="pods"} 1$' <<<"$HTTP_BODY" || fail "no weft_cache_synced in /metrics"
	lint=$(grep -E '^(# (HELP|TYPE) )?weft_cache_' <<<"$HTTP_BODY" | promtool check metrics 2>&1) ||
		fail "promtool check metrics (weft_cache_*): $lint"
fi

weftd_alive 1 || fail "weftd exited"
finish
