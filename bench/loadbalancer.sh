# shellcheck shell=bash
# Section "loadbalancer": LoadBalancer Services (issue 21, docs/loadbalancer.md).
#
#   assignment   bench/lb-assign.sh: three etcd-mode weftd, N Services created one after the other,
#                each timed from its put to status.loadBalancer.ingress (the elected assigner's
#                write): median, p99, max. --quick: N = 20, else 200.
#   failover     (full mode only: two minutes each) the end-to-end tests with the outside host,
#                whose summary lines carry the figures: test-weftd-lb-l2.sh (the announcing node
#                dies: takeover after its member lease expires, the outside's interruption) and
#                test-weftd-lb-bgp.sh (withdraw when the last local endpoint goes; weftd -9; the
#                node dying: the router's hold time, the outside's interruption).
# Those scripts make their own namespaces (named with their PIDs) and remove them on exit.

sec_loadbalancer() {
	local f=$W/md/10-loadbalancer.md n line t
	md "$f" "### loadbalancer: LoadBalancer assignment and announcement (\`bench/loadbalancer.sh\`)"
	md "$f" ""
	for c in /usr/bin/etcd etcdctl python3; do
		command -v "$c" >/dev/null || { skipped "$f" "needs $c"; return 77; }
	done
	# shellcheck disable=SC2153 # WEFT_BIN is set by bench/run
	[ -x "$WEFT_BIN/weftd" ] || { skipped "$f" "weftd not built"; return 77; }
	n=200
	q && n=20
	line=$(WEFT_BUILD=$WEFT_BUILD bash "$BENCH/lb-assign.sh" "$n" 2>"$W/lb-assign.err" | grep '^assign ') ||
		{ log "  lb-assign.sh failed: $(tail -5 "$W/lb-assign.err")"; return 1; }
	read -r _ n med p99 max <<<"$line"
	md "$f" "| Measure | Figure |"
	md "$f" "|---|---|"
	md "$f" "| assignment latency, Service put → status ingress written ($n Services, 3 nodes) | median $med ms, p99 $p99 ms, max $max ms |"
	say "   assignment: median $med ms, p99 $p99 ms over $n Services"
	if q; then
		md "$f" ""
		md "$f" "Failover: not in --quick (run \`bench/run --only loadbalancer\`)."
		md "$f" ""
		verdict loadbalancer met "assignment median $med ms"
		return 0
	fi
	for t in l2 bgp; do
		line=$(WEFT_BUILD=$WEFT_BUILD bash "$TOP/test/netns/test-weftd-lb-$t.sh" 2>&1 | tee "$W/lb-$t.log" | grep "^# $t: ") || {
			log "  test-weftd-lb-$t failed: $(grep FAIL "$W/lb-$t.log" | head -3)"
			return 1
		}
		md "$f" "| failover, $t (test-weftd-lb-$t.sh) | ${line#\# "$t": } |"
		say "   $t: ${line#\# "$t": }"
	done
	md "$f" ""
	verdict loadbalancer met "assignment median $med ms; failover in the table"
	return 0
}
