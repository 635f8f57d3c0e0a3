# shellcheck shell=bash
# Section 6: weftd's object cache (--objects-datastore etcd). One node namespace running weftd, etcd
# from section 3's underlay (agent.sh: ul_setup, node_attach), objects written straight into etcd
# per the key schema by test/kube/objects-feed.py (txn batches of 1000).
#
#   delta latency   a pod put into etcd -> the delta in weftd, at 0, 1k and 10k existing pods: the
#                   writer prints CLOCK_REALTIME just before its request, weftd stamps each delta's
#                   receipt (weft_cache_last_delta_timestamp_seconds); the difference is the figure
#                   (same clock, same host; how often /metrics is polled does not enter it)
#   initial sync    weftd restarted over 10k pods, then over 10k pods + 1k namespaces + 1k policies
#                   + 5k services (+ 5k EndpointSlices): "every kind synced ... in X s" from its log
#   RSS             VmRSS after a SIGHUP (full pass, malloc_trim), with the objects minus without
# --quick: 0/200/1000 pods, 100 namespaces, 100 policies, 500 services, 5 samples per point.

OBJ_NODE=objnode
OBJ_IP=10.99.0.60

obj_feed() { ip netns exec "$NSP-etcd" python3 "$TOP/test/kube/objects-feed.py" --etcd "$ETCD_URL" --prefix "$OBJ_PREFIX" --batch 1000 "$@"; }
obj_metric() { # obj_metric NAME{LABELS}
	ip netns exec "$NSP-$OBJ_NODE" curl -s -m 2 http://127.0.0.1:9876/metrics 2>/dev/null | awk -v m="$1" '$1 == m { print $2 }'
}
obj_start() {
	local d=$W/weftd-$OBJ_NODE
	mkdir -p "$d"/{cni,run,state,bin,ipam}
	: >"$d/weftd.log"
	ip netns exec "$NSP-$OBJ_NODE" env WEFT_LOG_LEVEL=info "$WEFTD_BIN" --node-name "$OBJ_NODE" --iface eth0 \
		--etcd-endpoints "$ETCD_URL" --etcd-prefix "$OBJ_PREFIX" --objects-datastore etcd --listen 127.0.0.1:9876 \
		--cni-conf-dir "$d/cni" --cni-bin-dir "$d/bin" --run-dir "$d/run" --state-dir "$d/state" \
		--ipam-data-dir "$d/ipam" --relist-interval 0 >>"$d/weftd.log" 2>&1 &
	WEFTD_PID=$!
	track_pid "$WEFTD_PID"
}
obj_synced() { grep -q "every kind synced" "$W/weftd-$OBJ_NODE/weftd.log"; }
obj_sync_s() { sed -n 's/.*every kind synced from etcd in \([0-9.]*\) s.*/\1/p' "$W/weftd-$OBJ_NODE/weftd.log" | tail -1; }
obj_count_is() { [ "$(obj_metric 'weft_cache_objects{kind="pods"}')" = "$1" ]; }
obj_rss() { # VmRSS (KiB) after a full pass with malloc_trim
	kill -HUP "$WEFTD_PID"
	sleep 0.5
	vm "$WEFTD_PID" VmRSS
}
# obj_latency N SAMPLES: ms from put to delta for SAMPLES new pods (indexes from 900000 + N*10); prints
# "median p95 max"
obj_latency() {
	local k t0 got i=$((900000 + $1 * 10)) out=()
	for ((k = 0; k < $2; k++, i++)); do
		t0=$(obj_feed pods create "$i" "$i") || return 1
		wait_until 5 obj_delta_after "$t0" || { log "  no delta for pod p$i"; return 1; }
		got=$(obj_metric 'weft_cache_last_delta_timestamp_seconds{kind="pods"}')
		out+=("$(awk -v a="$got" -v b="$t0" 'BEGIN { printf "%.2f", (a - b) * 1000 }')")
		sleep 0.05
	done
	printf '%s\n' "${out[@]}" | sort -g | awk '{ v[NR] = $1 } END { i95 = int(NR * 0.95 + 0.999); if (i95 > NR) i95 = NR;
		printf "%s %s %s\n", v[int((NR + 1) / 2)], v[i95], v[NR] }'
}
obj_delta_after() { awk -v a="$(obj_metric 'weft_cache_last_delta_timestamp_seconds{kind="pods"}')" -v b="$1" 'BEGIN { exit !(a + 0 > b + 0) }'; }

sec_objects() {
	local f=$W/md/6-objects.md csv=$OUT/objects.csv n1 n2 nns npol nsvc samples lat0 lat1 lat2 rss0 rss_pods rss_all
	local sync_pods sync_all per_pod v
	md "$f" "### objects: Object cache (weftd --objects-datastore etcd)"
	md "$f" ""
	# shellcheck disable=SC2153 # WEFT_BIN is bench/run's
	WEFTD_BIN=$WEFT_BIN/weftd
	if [ ! -x "$WEFTD_BIN" ] || [ ! -x /usr/bin/etcd ]; then skipped "$f" "needs weftd and /usr/bin/etcd"; return 77; fi
	if q; then n1=200 n2=1000 nns=100 npol=100 nsvc=500 samples=5; else n1=1000 n2=10000 nns=1000 npol=1000 nsvc=5000 samples=20; fi
	OBJ_PREFIX=/bench-objects
	ul_setup || { skipped "$f" "etcd did not start"; return 77; }
	node_attach "$OBJ_NODE" "$OBJ_IP" || return 1
	etcd_put_config "$OBJ_PREFIX" host-gw

	obj_start
	wait_until 20 obj_synced || { log "  weftd never synced"; tail "$W/weftd-$OBJ_NODE/weftd.log" >&2; return 1; }
	rss0=$(obj_rss)
	lat0=$(obj_latency 0 "$samples") || return 1
	obj_feed pods create 0 $((n1 - 1)) >/dev/null || return 1
	wait_until 20 obj_count_is $((n1 + samples)) || { log "  $n1 pods never cached"; return 1; }
	lat1=$(obj_latency "$n1" "$samples") || return 1
	obj_feed pods create "$n1" $((n2 - 1)) >/dev/null || return 1
	wait_until 60 obj_count_is $((n2 + 2 * samples)) || { log "  $n2 pods never cached"; return 1; }
	lat2=$(obj_latency "$n2" "$samples") || return 1

	# Restart over the pods: initial sync and RSS per pod.
	untrack_kill "$WEFTD_PID"
	obj_start
	wait_until 60 obj_synced || { log "  weftd never synced over $n2 pods"; return 1; }
	sync_pods=$(obj_sync_s)
	obj_count_is $((n2 + 3 * samples)) || { log "  after the restart: $(obj_metric 'weft_cache_objects{kind="pods"}') pods cached"; return 1; }
	rss_pods=$(obj_rss)
	per_pod=$(awk -v a="$rss_pods" -v b="$rss0" -v n="$n2" 'BEGIN { printf "%.0f", (a - b) * 1024 / n }')

	# Everything else the issue sizes, then a restart over all of it.
	obj_feed namespaces create 0 $((nns - 1)) >/dev/null && obj_feed policies create 0 $((npol - 1)) >/dev/null &&
		obj_feed services create 0 $((nsvc - 1)) >/dev/null || return 1
	untrack_kill "$WEFTD_PID"
	obj_start
	wait_until 60 obj_synced || { log "  weftd never synced over everything"; return 1; }
	sync_all=$(obj_sync_s)
	if [ "$(obj_metric 'weft_cache_objects{kind="services"}')" != "$nsvc" ] ||
		[ "$(obj_metric 'weft_cache_objects{kind="endpointslices"}')" != "$nsvc" ] ||
		[ "$(obj_metric 'weft_cache_objects{kind="networkpolicies"}')" != "$npol" ]; then
		log "  not everything cached"
		return 1
	fi
	rss_all=$(obj_rss)
	untrack_kill "$WEFTD_PID"

	{
		echo "what,existing_pods,median_ms,p95_ms,max_ms"
		echo "delta,0,${lat0// /,}"
		echo "delta,$n1,${lat1// /,}"
		echo "delta,$n2,${lat2// /,}"
		echo "sync_s,$n2,$sync_pods,,"
		echo "sync_all_s,$n2,$sync_all,,"
		echo "rss_kib,0,$rss0,,"
		echo "rss_kib,$n2,$rss_pods,,"
		echo "rss_all_kib,$n2,$rss_all,,"
	} >"$csv"
	md "$f" "Objects written straight into etcd (txn batches), weftd on the same host; delta = put (writer's"
	md "$f" "CLOCK_REALTIME just before the request) to weftd's receipt stamp, $samples pods per point."
	md "$f" ""
	md "$f" "| existing pods | delta median | p95 | max |"
	md "$f" "|---|---|---|---|"
	read -r a b c <<<"$lat0"; md "$f" "| 0 | $a ms | $b ms | $c ms |"
	read -r a b c <<<"$lat1"; md "$f" "| $n1 | $a ms | $b ms | $c ms |"
	read -r a b c <<<"$lat2"; md "$f" "| $n2 | $a ms | $b ms | $c ms |"
	md "$f" ""
	md "$f" "- initial sync (weftd restarted; every kind listed and indexed): $n2 pods: $sync_pods s; $n2 pods +"
	md "$f" "  $nns namespaces + $npol policies + $nsvc services + $nsvc EndpointSlices: $sync_all s"
	md "$f" "- VmRSS after a full pass: empty cache $rss0 KiB; $n2 pods $rss_pods KiB (≈ $per_pod bytes per pod);"
	md "$f" "  with everything $rss_all KiB"
	md "$f" ""
	read -r _ b _ <<<"$lat2"
	v=FAIL; awk -v a="$b" 'BEGIN { exit !(a <= 50) }' && v=PASS
	target "object delta ≤ 50 ms at $n2 pods" "p95 $b ms" "$v" "etcd put -> weftd's delta stamp"
	v=FAIL; awk -v a="$sync_pods" 'BEGIN { exit !(a <= 2) }' && v=PASS
	target "initial sync of $n2 pods ≤ 2 s" "$sync_pods s" "$v" "weftd's 'every kind synced' log line"
	v=FAIL; [ "$per_pod" -le 300 ] && v=PASS
	q && v="n/a (--quick: $n2 pods are a few pages; judged at 10k)"
	target "≤ 300 bytes RSS per pod object" "$per_pod B" "$v" "VmRSS difference after malloc_trim / $n2"
	if grep -q '| FAIL |' "$W/targets.md"; then v=missed; else v=met; fi
	verdict objects "$v" "(no reference cache: delta p95 $b ms at $n2 pods, target ≤ 50 ms; initial sync $sync_pods s, target ≤ 2 s; $per_pod B per pod, target ≤ 300)"
	return 0
}
