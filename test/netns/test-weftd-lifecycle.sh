#!/usr/bin/env bash
# weftd over a node's life, vxlan backend, 4 node namespaces + etcd (topology: weft-cluster-lib.sh).
#
#   1. bad configs (file and store): exit 2 with a clear error, nothing programmed
#   2. etcd unreachable at start: retries (logged), /healthz 503, nothing programmed; comes up
#      when etcd and the config appear; /healthz 200, /metrics parses
#   3. node join: the others program it; convergence time printed
#   4. hand-deleted route / neighbour / FDB entry restored within 2 s
#   5. restart with --keep-lease: a pod ping (-i 0.05) loses nothing; a stale weft route planted
#      while it was down is pruned, a foreign route is not touched
#   6. node leaves (SIGTERM): its routes/neighbours/FDB gone everywhere
#   7. lease expiry (SIGKILL): gone everywhere after the TTL
#   8. etcd down for ETCD_OUTAGE seconds (default 30): no route lost; leases renewed afterwards
#   9. weftd uninstall removes chains, VTEP, routes, conflist and lease file
# shellcheck disable=SC2317 # helpers are called through wait_for
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
cluster_require
ETCD_OUTAGE=${ETCD_OUTAGE:-30}
WEFTD_LEASE_TTL=6

ms_now() { echo $(($(date +%s%N) / 1000000)); }
nothing_programmed() { # nothing_programmed I WHAT
	local ns
	ns=$(node_ns "$1")
	ip -n "$ns" link show weft.1 >/dev/null 2>&1 && check_fail "$2: VTEP exists"
	ip netns exec "$ns" nft list table inet weft >/dev/null 2>&1 && check_fail "$2: nft table exists"
	[ -e "$(node_dir "$1")/cni/10-weft.conflist" ] && check_fail "$2: conflist written"
	[ -e "$(node_dir "$1")/run/subnet.env" ] && check_fail "$2: lease file written"
	[ -z "$(routes_weft "$1")" ] || check_fail "$2: weft routes exist"
	return 0
}
# programmed_for I J: node I has route + neighbour + FDB for node J
programmed_for() {
	[ -n "$(route_to "$1" "$(node_subnet "$2")")" ] && [ -n "$(neigh_on "$1" "$(vtep_ip "$2")")" ] &&
		[ -n "$(fdb_on "$1" "$(vtep_mac "$2")")" ]
}
# gone_for I SUBNET VTEP_IP MAC: node I has nothing left for that node
gone_for() {
	[ -z "$(route_to "$1" "$2")" ] && [ -z "$(neigh_on "$1" "$3")" ] && [ -z "$(fdb_on "$1" "$4")" ]
}

cluster_init 4 vxlan --no-etcd

# ---- 1. bad configs
bad_config() { # bad_config NAME JSON EXPECTED-MESSAGE-REGEX
	local f="$T/bad-$1.json" rc=0 out
	printf '%s\n' "$2" >"$f"
	_weftd_argv 4 --node-name node4 --iface eth0 --etcd-endpoints "$ETCD_URL" --net-config "$f" --listen 127.0.0.1:9876
	out=$(timeout 20 "${WEFTD_ARGV[@]}" 2>&1) || rc=$?
	assert_eq "$rc" 2 "bad config '$1': exit code"
	grep -Eq "$3" <<<"$out" || check_fail "bad config '$1': message should match /$3/, got: $out"
	nothing_programmed 4 "bad config '$1'"
}
bad_config overlap '{"Network": "10.96.0.0/11", "Backend": {"Type": "vxlan"}}' "10\\.96\\.0\\.0/11.*overlaps|overlaps.*10\\.96\\.0\\.0/11"
bad_config subnetlen '{"Network": "10.244.0.0/16", "SubnetLen": 8, "Backend": {"Type": "vxlan"}}' "SubnetLen"
bad_config backend '{"Network": "10.244.0.0/16", "Backend": {"Type": "ipsec-magic"}}' "ipsec-magic"
bad_config json '{"Network": ' "."

# ---- 2. etcd unreachable at start
weftd_start 1 --keep-lease
sleep 2
http_get 1 /healthz
assert_eq "$HTTP_CODE" 503 "/healthz before ready"
grep -q "unreachable (attempt 2)" "$(node_dir 1)/weftd.log" || check_fail "no retry logged while etcd is down"
nothing_programmed 1 "etcd unreachable"
weftd_alive 1 || fail "weftd gave up while etcd was unreachable"
cluster_etcd_start
sleep 1.5
nothing_programmed 1 "no config in etcd yet"
grep -q "No network config" "$(node_dir 1)/weftd.log" || check_fail "missing config not logged"
etcdctl_ put "$ETCD_PREFIX/config" "$(cluster_config_json)" >/dev/null
WAIT_TIMEOUT=20 weftd_wait_ready 1
http_get 1 /metrics
assert_eq "$HTTP_CODE" 200 "/metrics status"
metric_re='^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? ([-+]?[0-9.]+([eE][-+]?[0-9]+)?|[-+]Inf|NaN)$'
bad_lines=$(grep -v '^#' <<<"$HTTP_BODY" | grep -Ev "$metric_re" || true)
assert_eq "$bad_lines" "" "/metrics lines that do not parse"
assert_eq "$(grep -c "^# TYPE " <<<"$HTTP_BODY")" 14 "/metrics TYPE lines (one per metric family)"
grep -q '^weft_datastore_connected 1$' <<<"$HTTP_BODY" || check_fail "weft_datastore_connected not 1"
grep -q "^weft_lease_info{subnet=\"$(node_subnet 1)\"} 1$" <<<"$HTTP_BODY" || check_fail "weft_lease_info missing"

# bad config in the store (another prefix): same treatment as a bad file
etcdctl_ put /weft/bad/config '{"Network": "10.244.0.0/16", "SubnetLen": 12}' >/dev/null
rc=0
out=$(timeout 20 ip netns exec "$(node_ns 4)" "$WEFTD" --node-name node4 --iface eth0 --etcd-endpoints "$ETCD_URL" \
	--etcd-prefix /weft/bad --listen 127.0.0.1:9877 --cni-conf-dir "$(node_dir 4)/cni" --run-dir "$(node_dir 4)/run" \
	--state-dir "$(node_dir 4)/state" 2>&1) || rc=$?
assert_eq "$rc" 2 "bad config in etcd: exit code"
grep -q "SubnetLen" <<<"$out" || check_fail "bad config in etcd: message should name SubnetLen: $out"
nothing_programmed 4 "bad config in etcd"

# ---- 3. node join
weftd_start 2
weftd_wait_ready 2
wait_for 5 programmed_for 1 2 || check_fail "node1 did not program node2"
wait_for 5 programmed_for 2 1 || check_fail "node2 did not program node1"
t0=$(ms_now)
weftd_start 3
two_remote() { [ "$(routes_weft 1 | wc -l)" = 2 ] && [ "$(routes_weft 2 | wc -l)" = 2 ]; }
wait_for 10 two_remote || check_fail "node3 not programmed on node1/node2 within 10 s"
t1=$(ms_now)
weftd_wait_ready 3
info "CONVERGENCE: node3 join -> routes on node1 and node2 in $((t1 - t0)) ms (from weftd start, lease acquisition included)"
programmed_for 1 3 || check_fail "node1 lacks neighbour/FDB for node3"
programmed_for 2 3 || check_fail "node2 lacks neighbour/FDB for node3"

# ---- 4. hand-deleted objects come back within 2 s
s2=$(node_subnet 2) v2=$(vtep_ip 2) m2=$(vtep_mac 2)
restored() { # restored WHAT CHECK-CMD...
	local what=$1 t0r
	shift
	t0r=$(ms_now)
	if wait_for 2 "$@"; then
		info "$what restored in $(($(ms_now) - t0r)) ms"
	else
		check_fail "$what not restored within 2 s"
	fi
}
ip -n "$(node_ns 1)" route del "$s2"
restored "route $s2" programmed_for 1 2
ip -n "$(node_ns 1)" neigh del "$v2" dev weft.1
restored "neighbour $v2" programmed_for 1 2
bridge -n "$(node_ns 1)" fdb del "$m2" dev weft.1 dst "$(node_ip 2)"
restored "FDB $m2" programmed_for 1 2

# ---- 5. restart with --keep-lease: no pod traffic lost; stale weft route pruned
pod_create 1
pod_create 2
subnet1=$(node_subnet 1)
ip netns exec "$(pod_ns 1)" ping -i 0.05 -c 120 -W 1 "$(pod_ip 2)" >"$T/ping.out" 2>&1 &
ping_pid=$!
sleep 1
weftd_stop 1
assert_eq "$WEFTD_RC" 0 "node1 exit status on SIGTERM"
grep -q "Keeping lease" "$(node_dir 1)/weftd.log" || check_fail "--keep-lease not logged"
programmed_for 2 1 || check_fail "node2 dropped node1 while it restarts with --keep-lease"
ip -n "$(node_ns 1)" route add 10.244.250.0/24 via 10.244.250.0 dev weft.1 onlink proto 252
ip -n "$(node_ns 1)" route add 10.244.251.0/24 via "$(node_ip 2)" proto static
weftd_start 1 --keep-lease
weftd_wait_ready 1
wait "$ping_pid" || true
info "ping across restart: $(grep -o '[0-9]* packets transmitted.*loss' "$T/ping.out")"
grep -q ' 0% packet loss' "$T/ping.out" || check_fail "pod ping lost packets across the restart: $(tail -2 "$T/ping.out")"
wait_for 3 test -z "$(route_to 1 10.244.250.0/24)" || check_fail "stale weft route not pruned"
[ -n "$(ip -n "$(node_ns 1)" -j route show 10.244.251.0/24 | jq -r '.[].dst')" ] || check_fail "foreign route was removed"
assert_eq "$(node_subnet 1)" "$subnet1" "node1 kept its subnet across the restart"
programmed_for 1 2 || check_fail "node1 lost node2 across the restart"
programmed_for 1 3 || check_fail "node1 lost node3 across the restart"

# ---- 6. node leaves (SIGTERM, lease released)
s3=$(node_subnet 3) v3=$(vtep_ip 3) m3=$(vtep_mac 3)
t0=$(ms_now)
weftd_stop 3
assert_eq "$WEFTD_RC" 0 "node3 exit status on SIGTERM"
grep -q "Released lease" "$(node_dir 3)/weftd.log" || check_fail "node3 did not log the release"
both_gone() { gone_for 1 "$s3" "$v3" "$m3" && gone_for 2 "$s3" "$v3" "$m3"; }
wait_for 5 both_gone || check_fail "node3's objects still present after it left"
info "node3 leave -> removed everywhere in $(($(ms_now) - t0)) ms"
# node3's own kernel state stays (pod traffic must survive a restart)
[ -n "$(routes_weft 3)" ] || check_fail "node3 removed its routes on shutdown"

# ---- 7. lease expiry (SIGKILL)
weftd_start 3
weftd_wait_ready 3
wait_for 5 programmed_for 1 3 || check_fail "node3 not programmed again"
s3=$(node_subnet 3) v3=$(vtep_ip 3) m3=$(vtep_mac 3)
weftd_stop 3 KILL
t0=$(ms_now)
wait_for $((WEFTD_LEASE_TTL + 10)) both_gone || check_fail "node3's objects still present after its lease expired"
info "node3 SIGKILL -> removed everywhere after $(($(ms_now) - t0)) ms (TTL ${WEFTD_LEASE_TTL}s)"

# ---- 8. etcd outage
before1=$(routes_weft 1) before2=$(routes_weft 2)
cluster_etcd_stop
info "etcd stopped for ${ETCD_OUTAGE}s"
for ((k = 0; k < ETCD_OUTAGE; k++)); do
	[ "$(routes_weft 1)" = "$before1" ] || { check_fail "node1 routes changed during the etcd outage (t=${k}s)"; break; }
	[ "$(routes_weft 2)" = "$before2" ] || { check_fail "node2 routes changed during the etcd outage (t=${k}s)"; break; }
	sleep 1
done
weftd_alive 1 || check_fail "node1 weftd died during the etcd outage"
grep -q "connection lost" "$(node_dir 1)/weftd.log" || check_fail "node1 did not log the lost datastore"
cluster_etcd_start
sleep $((WEFTD_LEASE_TTL * 2))
keys=$(etcdctl_ get --prefix "$ETCD_PREFIX/subnets/" --keys-only | grep -c . || true)
assert_eq "$keys" 2 "both leases still in etcd two TTLs after the outage (renewed)"
assert_eq "$(routes_weft 1)" "$before1" "node1 routes after the outage"
assert_eq "$(routes_weft 2)" "$before2" "node2 routes after the outage"
http_get 1 /metrics
grep -q '^weft_datastore_connected 1$' <<<"$HTTP_BODY" || check_fail "weft_datastore_connected not 1 after the outage"
assert_ping "$(pod_ns 1)" "$(pod_ip 2)"

# ---- 9. uninstall
weftd_stop 1
weftd_cmd 1 uninstall >"$T/uninstall.log" 2>&1 || check_fail "weftd uninstall failed: $(cat "$T/uninstall.log")"
ip -n "$(node_ns 1)" link show weft.1 >/dev/null 2>&1 && check_fail "uninstall left the VTEP"
[ -z "$(routes_weft 1)" ] || check_fail "uninstall left weft routes"
[ -n "$(ip -n "$(node_ns 1)" -j route show 10.244.251.0/24 | jq -r '.[].dst')" ] || check_fail "uninstall removed a foreign route"
[ "$(ip netns exec "$(node_ns 1)" nft -j list table inet weft 2>/dev/null | jq '[.nftables[] | select(.chain)] | length')" = 0 ] ||
	check_fail "uninstall left node-* chains"
[ -e "$(node_dir 1)/cni/10-weft.conflist" ] && check_fail "uninstall left the conflist"
[ -e "$(node_dir 1)/run/subnet.env" ] && check_fail "uninstall left the lease file"
weftd_stop 2
finish
