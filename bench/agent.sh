# shellcheck shell=bash
# 3. Agent: weftd programming remote nodes fed through the real datastore (etcd).
#
#   node netns $NSP-ag: eth0 10.99.0.1/16 (a veth to $NSP-agul, so every 10.99.x.y "remote node"
#   is on a directly connected network, as host-gw requires), etcd on 127.0.0.1, weftd.
#
# The remote nodes' leases are written into etcd in weftd's own format
# (<prefix>/subnets/<net>-<len> = {"node","publicIP","backend","vtepMAC"}, see datastore-etcd.c) over
# one keep-alive HTTP connection to etcd's JSON gateway, then weftd is started and we time until the
# kernel shows every entry (routes with weft's protocol 252; for vxlan also the neighbour and FDB
# entry on weft.1). Sub-second timing is read by polling netlink every 20 ms; weftd's own
# reconcile duration comes from its /metrics. There is no reference agent to compare with here
# (flannel is not packaged in Debian 12): absolute numbers, judged against the targets.

AG_PREFIX=/weft/bench
AG_PORT=9899

# ag_put_leases FROM TO BACKEND: remote nodes FROM..TO (the i-th /26 of 172.16.0.0/12 — the local
# node takes the 0th — public IP 10.99.(i/250).(i%250+2), a MAC derived from i) written into etcd
ag_put_leases() {
	ip netns exec "$NSP-ag" python3 - "$1" "$2" "$3" "$AG_PREFIX" <<'EOF'
import base64, http.client, ipaddress, json, sys
lo, hi, backend, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", 2379, timeout=10)
b64 = lambda s: base64.b64encode(s.encode()).decode()
for i in range(lo, hi + 1):
    sub = str(ipaddress.ip_address("172.16.0.0") + 64 * i)
    val = {"node": "remote%d" % i, "publicIP": "10.99.%d.%d" % (i // 250, i % 250 + 2),
           "backend": backend, "vtepMAC": "02:77:%02x:%02x:%02x:01" % ((i >> 16) & 255, (i >> 8) & 255, i & 255)}
    body = json.dumps({"key": b64("%s/subnets/%s-26" % (prefix, sub)), "value": b64(json.dumps(val))})
    c.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 200:
        sys.exit("etcd put failed: %d" % r.status)
import time
print(time.time_ns())   # when etcd acknowledged the last put
EOF
}

# ag_count BACKEND: programmed entries (routes; vxlan: min of routes, neighbours, fdb)
ag_count() {
	local r n f
	r=$(ip -n "$NSP-ag" route show proto 252 | grep -c . || true)
	if [ "$1" = vxlan ]; then
		n=$(ip -n "$NSP-ag" neigh show dev weft.1 nud permanent 2>/dev/null | grep -c . || true)
		f=$(bridge -n "$NSP-ag" fdb show dev weft.1 2>/dev/null | grep -c ' dst ' || true)
		((n < r)) && r=$n
		((f < r)) && r=$f
	fi
	echo "$r"
}
# ag_wait BACKEND N TIMEOUT_S: polls until N entries; prints elapsed ms, or fails
ag_wait() {
	local be=$1 n=$2 t0 end
	t0=$(date +%s%N)
	end=$((t0 + $3 * 1000000000))
	while (($(date +%s%N) < end)); do
		if (($(ag_count "$be") >= n)); then echo $((($(date +%s%N) - t0) / 1000000)); return 0; fi
		sleep "${AG_POLL:-0.02}"
	done
	log "  FAILED: $be: $(ag_count "$be") of $n entries after $3 s"
	return 1
}
ag_metric() { ip netns exec "$NSP-ag" curl -s -m 2 "http://127.0.0.1:$AG_PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
ag_rss_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

ag_weftd_start() { # BACKEND -> sets AG_PID
	local d=$W/ag/weftd
	rm -rf "$d"; mkdir -p "$d"/{cni,run,state,bin}
	ip netns exec "$NSP-ag" env WEFT_LOG_LEVEL=warning "$WEFT_BIN/weftd" --node-name benchnode --iface eth0 \
		--etcd-endpoints http://127.0.0.1:2379 --etcd-prefix "$AG_PREFIX" --listen "127.0.0.1:$AG_PORT" \
		--cni-conf-dir "$d/cni" --cni-bin-dir "$d/bin" --run-dir "$d/run" --state-dir "$d/state" \
		--resync-interval 60s >>"$W/ag/weftd.log" 2>&1 &
	AG_PID=$!
	track_pid "$AG_PID"
}
ag_weftd_stop() { untrack_kill "$AG_PID"; }

ag_reset() { # BACKEND: fresh etcd contents (config only), no weft state in the node
	ip netns exec "$NSP-ag" etcdctl --endpoints http://127.0.0.1:2379 del --prefix "$AG_PREFIX/" >/dev/null
	ip netns exec "$NSP-ag" etcdctl --endpoints http://127.0.0.1:2379 put "$AG_PREFIX/config" \
		"{\"Network\": \"172.16.0.0/12\", \"SubnetLen\": 26, \"Backend\": {\"Type\": \"$1\"}, \"Masquerade\": true}" >/dev/null
	ip netns exec "$NSP-ag" "$WEFT_BIN/weftd" uninstall --cni-conf-dir "$W/ag/weftd/cni" --run-dir "$W/ag/weftd/run" \
		--state-dir "$W/ag/weftd/state" >/dev/null 2>&1 || true
	ip -n "$NSP-ag" route flush proto 252 2>/dev/null || true
}

sec_agent() {
	local f=$W/md/3-agent.md sizes be n ms rec idle_rss rss hwm join
	md "$f" "## 3. Agent (weftd)"
	md "$f" ""
	if ! ours_has weftd; then skipped "$f" "weftd not built in $WEFT_BIN"; return 77; fi
	for c in etcd etcdctl python3 curl bridge; do
		command -v "$c" >/dev/null || { skipped "$f" "needs $c"; return 77; }
	done
	sizes="100 1000 5000"
	q && sizes="100"
	mkdir -p "$W/ag"
	ns_add ag >/dev/null
	ns_add agul >/dev/null
	ip link add ag-eth0 netns "$NSP-ag" type veth peer name eth0 netns "$NSP-agul"
	ip -n "$NSP-ag" link set ag-eth0 name eth0
	ip -n "$NSP-ag" addr add 10.99.0.1/16 dev eth0
	ip -n "$NSP-ag" link set eth0 up
	ip -n "$NSP-agul" link set eth0 up
	ip netns exec "$NSP-ag" etcd --name bench --data-dir "$W/ag/etcd" --listen-client-urls http://127.0.0.1:2379 \
		--advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster bench=http://127.0.0.1:2380 \
		--log-level error >"$W/ag/etcd.log" 2>&1 &
	track_pid $!
	local i
	for ((i = 0; i < 100; i++)); do
		ip netns exec "$NSP-ag" etcdctl --endpoints http://127.0.0.1:2379 endpoint health >/dev/null 2>&1 && break
		sleep 0.1
	done
	echo "backend,remote_nodes,start_to_programmed_ms,reconcile_s,rss_kb,hwm_kb" >"$OUT/agent.csv"
	md "$f" "weftd started with N remote leases already in etcd; time until the kernel shows every entry"
	md "$f" "(host-gw: a route each; vxlan: neighbour + FDB entry + route each), polled every 20 ms, and"
	md "$f" "weftd's own first reconcile pass (from /metrics: weft_reconcile_duration_seconds_sum)."
	md "$f" ""
	md "$f" "| backend | remote nodes | start → all programmed | weftd reconcile time | weftd RSS / peak |"
	md "$f" "|---|---|---|---|---|"
	declare -A AG
	for be in host-gw vxlan; do
		for n in $sizes; do
			ag_reset "$be"
			ag_put_leases 1 "$n" "$be" >/dev/null || { log "  FAILED: writing $n leases"; return 1; }
			ag_weftd_start "$be"
			ms=$(ag_wait "$be" "$n" 60) || { tail -5 "$W/ag/weftd.log" >&2; return 1; }
			sleep 0.3 # let /metrics settle
			rec=$(ag_metric weft_reconcile_duration_seconds_sum)
			rss=$(ag_rss_kb "$AG_PID" VmRSS); hwm=$(ag_rss_kb "$AG_PID" VmHWM)
			AG_ANON=$(ag_rss_kb "$AG_PID" RssAnon); AG_FILE=$(ag_rss_kb "$AG_PID" RssFile)
			AG["$be $n"]="$ms $rec $rss $hwm"
			echo "$be,$n,$ms,$rec,$rss,$hwm" >>"$OUT/agent.csv"
			md "$f" "| $be | $n | $ms ms | ${rec:-n/a} s | $((rss / 1024)) / $((hwm / 1024)) MiB (anon $((AG_ANON / 1024)), file $((AG_FILE / 1024))) |"
			say "   $be $n nodes: $ms ms (reconcile ${rec:-?} s), RSS $((rss / 1024)) MiB"
			# one node joins among n: time until the kernel has it
			if [ "$n" -ge 1000 ] || q; then
				local t0
				t0=$(ag_put_leases $((n + 1)) $((n + 1)) "$be") || return 1
				AG_POLL=0.005 ag_wait "$be" $((n + 1)) 10 >/dev/null || return 1
				join=$((($(date +%s%N) - t0) / 1000000))
				AG["$be join $n"]=$join
				md "$f" "| $be | +1 joins among $n | $join ms (put → programmed) | | |"
			fi
			ag_weftd_stop
		done
	done
	# idle: no remote node
	ag_reset vxlan
	ag_weftd_start vxlan
	for ((i = 0; i < 100; i++)); do
		[ -f "$W/ag/weftd/run/subnet.env" ] && break
		sleep 0.05
	done
	sleep 0.5
	idle_rss=$(ag_rss_kb "$AG_PID" VmRSS)
	local ianon ifile
	ianon=$(ag_rss_kb "$AG_PID" RssAnon); ifile=$(ag_rss_kb "$AG_PID" RssFile)
	ag_weftd_stop
	md "$f" ""
	md "$f" "weftd RSS idle (vxlan, no remote node): $((idle_rss / 1024)) MiB ($idle_rss KiB: anonymous $ianon KiB,"
	md "$f" "file-backed $ifile KiB — mostly shared library pages: libcurl with its TLS stack, libnftables)."
	md "$f" ""
	echo "footprint,weftd_idle_rss_kb,$idle_rss" >>"$OUT/agent.csv"
	AGENT_IDLE_RSS=$idle_rss

	local top=${sizes##* } v note
	read -r ms _ _ _ <<<"${AG["vxlan $top"]}"
	if [ "$top" = 5000 ]; then
		((ms < 2000)) && v=met || v="not met"
		note="start → all programmed, includes weftd start-up and lease"
	else
		v="n/a (quick: $top nodes)"; note=""
	fi
	target "5000 remote nodes programmed in < 2 s (vxlan)" "$ms ms for $top" "$v" "$note"
	if [ -n "${AG["vxlan 1000"]:-}" ]; then
		read -r _ _ rss _ <<<"${AG["vxlan 1000"]}"
		((rss < 10240)) && v=met || v="not met"
		target "weftd RSS < 10 MiB at 1000 nodes" "$((rss / 1024)) MiB ($rss KiB)" "$v" "VmRSS, vxlan"
	else
		target "weftd RSS < 10 MiB at 1000 nodes" "n/a" "n/a (quick)" ""
	fi
	ns_del_prefix ag
	return 0
}
