#!/usr/bin/env bash
# weftd's /metrics read by Prometheus' own code (Debian's prometheus package), 2 dual-stack nodes,
# vxlan backend (topology: weft-cluster-lib.sh):
#
#   1. `promtool check metrics` (Prometheus' text parser + its naming lint) passes on both nodes,
#      once right after start and once after a node joined, left and routes were repaired
#   2. our own conventions on top of promtool's lint: every family has HELP and TYPE, names are
#      weft_ + snake_case, counters and only counters end in _total, durations are _seconds
#      histograms, no family is exposed twice
#   3. a real Prometheus server (in node 1's namespace, scraping 127.0.0.1:9876 every second)
#      reports the target up with no scrape error and answers PromQL over weft's series
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2317 # helpers are called through wait_for
# shellcheck source=../lib/lib.sh
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/weft-cluster-lib.sh
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
cluster_require
require_cmd promtool prometheus
# shellcheck disable=SC2034 # read by weft-cluster-lib.sh
CLUSTER_NETWORK6=fd00:10:244::/56

cluster_init 3 vxlan
weftd_start 1
weftd_start 2
weftd_wait_ready 1 2

# check_metrics I WHEN: promtool and our conventions on node I's /metrics
check_metrics() {
	local i=$1 when=$2 f="$T/metrics.$1" out
	http_get "$i" /metrics
	[ "$HTTP_CODE" = 200 ] || { check_fail "$when: node $i /metrics answered $HTTP_CODE"; return 0; }
	printf '%s\n' "$HTTP_BODY" >"$f"
	if ! grep -q "^weft_" "$f"; then check_fail "$when: node $i /metrics has no weft_ series"; return 0; fi
	if ! out=$(promtool check metrics <"$f" 2>&1); then
		check_fail "$when: promtool check metrics rejects node $i's /metrics:"
		printf '    %s\n' "$out" >&2
	fi
	# Families: "name type" from TYPE lines; every sample's family must have HELP and TYPE.
	if ! out=$(python3 - "$f" <<'PY'
import re, sys
helps, types, errs = {}, {}, []
samples = []
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if not line:
        continue
    m = re.match(r"# (HELP|TYPE) (\S+) (.*)$", line)
    if m:
        kind, name, rest = m.groups()
        d = helps if kind == "HELP" else types
        if name in d:
            errs.append(f"{kind} for {name} given twice")
        d[name] = rest
        continue
    if line.startswith("#"):
        continue
    samples.append(re.match(r"[^{ ]+", line).group(0))
for name, t in types.items():
    if not re.fullmatch(r"weft_[a-z0-9]+(_[a-z0-9]+)*", name):
        errs.append(f"{name}: not weft_ + snake_case")
    if name not in helps or not helps[name].strip():
        errs.append(f"{name}: no HELP text")
    if t == "counter" and not name.endswith("_total"):
        errs.append(f"{name}: counter without _total")
    if t != "counter" and name.endswith("_total"):
        errs.append(f"{name}: {t} named _total")
    if re.search(r"_(duration|latency|time)$", name) or re.search(r"_(ms|msec|milliseconds|us|usec|minutes|hours)(_|$)", name):
        errs.append(f"{name}: durations are in seconds and say so (_seconds)")
    if name.endswith("_seconds") and t not in ("histogram", "gauge", "summary"):
        errs.append(f"{name}: _seconds with type {t}")
for s in samples:
    fam = s
    for suf in ("_bucket", "_sum", "_count"):
        if s.endswith(suf) and s[: -len(suf)] in types and types[s[: -len(suf)]] in ("histogram", "summary"):
            fam = s[: -len(suf)]
    if fam not in types:
        errs.append(f"sample {s}: no TYPE line for its family")
print("\n".join(errs))
sys.exit(1 if errs else 0)
PY
	); then
		check_fail "$when: node $i's /metrics breaks naming conventions:"
		printf '    %s\n' "$out" >&2
	fi
	return 0
}

info "1+2. promtool and naming on a fresh node"
check_metrics 1 "fresh"
check_metrics 2 "fresh"
assert_eq "$(grep -c '^weft_lease_info{' "$T/metrics.1")" 2 "one weft_lease_info series per family (dual-stack)"

info "node 3 joins and leaves, a route is deleted by hand and restored"
weftd_start 3
weftd_wait_ready 3
has_route() { [ -n "$(route_to 1 "$1")" ]; }
wait_for 10 has_route "$(node_subnet 3)" || check_fail "node 1 never programmed node 3"
S2=$(node_subnet 2)
ip -n "$(node_ns 1)" route del "$S2" proto 252 2>/dev/null || check_fail "could not delete node 1's route to $S2"
wait_for 10 has_route "$S2" || check_fail "node 1 did not restore its route to $S2"
weftd_stop 3
check_metrics 1 "after churn"
check_metrics 2 "after churn"
RECONCILES=$(awk '$1 == "weft_reconcile_total" {print $2}' "$T/metrics.1")
[ "${RECONCILES:-0}" -ge 2 ] || check_fail "weft_reconcile_total should count the passes after churn, got '$RECONCILES'"

info "3. a Prometheus server scrapes node 1"
cat >"$T/prometheus.yml" <<'EOF'
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: weft
    static_configs:
      - targets: ["127.0.0.1:9876"]
EOF
promtool check config "$T/prometheus.yml" >/dev/null || fail "promtool rejects the test's own prometheus.yml"
N1=$(node_ns 1)
ip netns exec "$N1" prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
	--web.listen-address=127.0.0.1:9090 --log.level=warn >"$T/prometheus.log" 2>&1 &
PROM_PID=$!
on_exit "kill $PROM_PID; wait $PROM_PID"
# promql QUERY: the result vector of an instant query, as JSON
promql() {
	ip netns exec "$N1" curl -s -m 2 -G http://127.0.0.1:9090/api/v1/query --data-urlencode "query=$1" |
		jq -c '.data.result'
}
target_health() {
	ip netns exec "$N1" curl -s -m 2 http://127.0.0.1:9090/api/v1/targets |
		jq -r '.data.activeTargets[] | select(.labels.job == "weft") | "\(.health) \(.lastError)"'
}
scraped() { [ "$(target_health)" = "up " ] && [ "$(promql 'weft_ready' | jq length)" = 1 ]; }
if ! wait_for 30 scraped; then
	check_fail "Prometheus did not scrape weftd: target '$(target_health)'"
	tail -20 "$T/prometheus.log" >&2
fi
assert_eq "$(target_health)" "up " "Prometheus: target up, no scrape error"
assert_eq "$(promql 'weft_ready' | jq -r '.[0].value[1]')" 1 "PromQL weft_ready"
assert_eq "$(promql 'count(weft_lease_info)' | jq -r '.[0].value[1]')" 2 "PromQL count(weft_lease_info)"
assert_eq "$(promql 'weft_nodes' | jq -r '.[0].value[1]')" 1 "PromQL weft_nodes (node 2 left: 1 remote)"
HIST=$(promql 'histogram_quantile(0.5, weft_reconcile_duration_seconds_bucket)' | jq -r '.[0].value[1] // "none"')
[[ $HIST =~ ^[0-9.e+-]+$ ]] || check_fail "PromQL histogram_quantile over weft_reconcile_duration_seconds: '$HIST'"
# Prometheus' own counters of what it refused while ingesting (its /metrics, not the TSDB)
ip netns exec "$N1" curl -s -m 2 http://127.0.0.1:9090/metrics >"$T/prom-self" || check_fail "Prometheus' own /metrics"
BAD=$(awk '/^prometheus_target_scrapes_(sample_out_of_order|sample_duplicate_timestamp|sample_out_of_bounds|exceeded_sample_limit)_total / {n += $2; seen++} END {print seen ? n : "none"}' "$T/prom-self")
assert_eq "$BAD" 0 "Prometheus rejected no scraped sample"
assert_ne "$(awk '$1 == "prometheus_sd_discovered_targets{config=\"weft\",name=\"scrape\"}" {print $2}' "$T/prom-self")" "" "Prometheus discovered the weft job"
finish
