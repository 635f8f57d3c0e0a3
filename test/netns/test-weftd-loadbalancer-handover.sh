#!/usr/bin/env bash
# Issue 21 item 5 in etcd mode: two weftd never assign the same address, even with a handover of
# the leader key mid-assignment.
#
#   node1: weftd --etcd-endpoints 127.0.0.1:2399 -> http-delay-proxy.py -> etcd 10.99.0.2:2379
#   node2, node3: weftd -> etcd directly
#
#   pool: batch 198.51.100.0/28 (tier=batch only: 14 addresses)
#
# node1 starts first and holds the leader key. 14 batch Services land in one transaction; node1's
# transactions are slowed (0.15 s) so it is stopped (SIGSTOP) with status writes queued. Its lease
# expires, node2 or node3 takes the key and gives the addresses node1 had not written yet to 14
# Services that ask for them by name (the batch Services still without one stay pending). node1
# resumes with its lease keepalive and election transaction slowed (3 s) and its watches and lists
# held back, so for a while it
# still believes it leads and assigns from what it knew: every such write carries the guard "the
# leader key's create_revision is still mine" and is refused. Replaying every version of every Service (etcdctl watch from revision 1)
# finds no address ever held by two; without the guard node1's writes land and it does.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
PROXY=$TOP/test/netns/service/http-delay-proxy.py
RULES=$T/delay.json

cluster_init 3 host-gw
etcdctl_ put "$ETCD_PREFIX/config" '{"Network": "10.244.0.0/16", "SubnetLen": 24, "Backend": {"Type": "host-gw"},
 "LoadBalancer": {"Pools": [
   {"Name": "batch", "CIDRs": ["198.51.100.0/28"], "ServiceSelector": {"matchLabels": {"tier": "batch"}}}],
  "Announce": "l2"}}' >/dev/null
# set_rules: stdin becomes the proxy's rules at once (it reads the file at every step: never half-written)
set_rules() { cat >"$RULES.new" && mv "$RULES.new" "$RULES"; }
echo '[]' | set_rules
ip netns exec "$(node_ns 1)" python3 "$PROXY" 127.0.0.1:2399 "$ETCD_IP:2379" "$RULES" >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
on_exit "kill $PROXY_PID 2>/dev/null"
wait_for 30 grep -q ready "$T/proxy.log" || fail "the delay proxy did not start: $(cat "$T/proxy.log")"
metric() { http_get "$1" /metrics; awk -v m="$2" '$1 == m { print $2 }' <<<"$HTTP_BODY"; }
weftd_start 1 --objects-datastore etcd --relist-interval 0 --etcd-endpoints http://127.0.0.1:2399
weftd_wait_ready 1
wait_for 30 sh -c "ip netns exec $(node_ns 1) curl -s http://127.0.0.1:9876/metrics | grep -q '^weft_loadbalancer_leader 1'" ||
	fail "node1 did not become the leader"
for i in 2 3; do weftd_start "$i" --objects-datastore etcd --relist-interval 0; done
weftd_wait_ready 2 3

etcdctl_ put "$ETCD_PREFIX/objects/namespaces/shop" '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}' >/dev/null
# svc NAME CLUSTER-IP [METADATA-MEMBERS]: "KEY<TAB>VALUE" of a batch LoadBalancer Service
svc() {
	printf '%s\t{"apiVersion":"v1","kind":"Service","metadata":{"namespace":"shop","name":"%s","labels":{"tier":"batch"}%s},"spec":{"type":"LoadBalancer","clusterIP":"%s","ports":[{"port":80,"targetPort":8080}]}}\n' \
		"$ETCD_PREFIX/objects/services/shop/$1" "$1" "${3:+,$3}" "$2"
}
txn() { ip netns exec "$ETCD_NS" python3 "$TOP/test/netns/service/etcd-txn.py" "$ETCD_URL" >/dev/null; }
assigned() { # assigned PREFIX: how many Services named PREFIX* hold an address
	etcdctl_ get --prefix --print-value-only "$ETCD_PREFIX/objects/services/shop/$1" |
		jq -s '[.[] | select(.status.loadBalancer.ingress)] | length'
}
leader() {
	local i
	for i in 1 2 3; do weftd_alive "$i" && [ "$(metric "$i" weft_loadbalancer_leader)" = 1 ] && echo "$i"; done
	return 0
}

info "node1 leads; 14 batch Services, node1's transactions slowed to catch it mid-way"
echo '[{"path": "^/v3/kv/txn", "seconds": 0.15}]' | set_rules
for k in $(seq -w 1 14); do svc "b$k" "10.96.1.$((10#$k))"; done | txn
for _ in $(seq $((200 * WEFT_TEST_SLACK))); do [ "$(assigned b)" -ge 3 ] && break; sleep 0.05; done
kill -STOP "${WEFTD_PID[1]}"
on_exit "kill -CONT ${WEFTD_PID[1]} 2>/dev/null"
t0=$(date +%s%N)
# from now on what node1 is told by its watches and lists waits (a stalled stream), until after it
# resumes
echo '[{"path": "^/v3/(watch|kv/range)", "hold": true}]' | set_rules
sleep 0.5 # a write in flight lands
before=$(assigned b)
info "  node1 stopped with $before of 14 batch Services written"
[ "$before" -lt 14 ] || fail "node1 wrote the whole batch before it was stopped"

info "node1's lease expires; the new leader gives the free addresses to Services asking for them"
for k in $(seq 1 14); do svc "z$k" "10.96.2.$k" "\"annotations\":{\"weft.dev/loadbalancer-ips\":\"198.51.100.$k\"}"; done | txn
L=
for _ in $(seq $((200 * WEFT_TEST_SLACK))); do L=$(leader); [ -n "$L" ] && break; sleep 0.1; done
[ -n "$L" ] || fail "nobody took over from the stopped node1"
HANDOVER_MS=$((($(date +%s%N) - t0) / 1000000))
info "  node$L took the leader key $HANDOVER_MS ms after node1 stopped"
wait_for 20 sh -c "[ \"\$(ip netns exec $ETCD_NS etcdctl --endpoints $ETCD_URL get --prefix --print-value-only $ETCD_PREFIX/objects/services/shop/z | jq -s '[.[] | select(.status.loadBalancer.ingress)] | length')\" = $((14 - before)) ]" ||
	check_fail "node$L gave $(assigned z) addresses to the asking Services, expected $((14 - before))"

info "node1 resumes, learning late (keepalive slowed, watch held back) that its lease is gone"
# (the election's own transaction, "is the leader key still the one I created?", is slowed too)
leader_b64=$(printf %s "$ETCD_PREFIX/loadbalancer/leader" | base64 -w0)
set_rules <<EOF
[{"path": "^/v3/lease/keepalive", "seconds": 3},
 {"path": "^/v3/kv/txn", "body": "request_range\"\\\\s*:\\\\s*\\\\{\\\\s*\"key\"\\\\s*:\\\\s*\"$leader_b64\"", "seconds": 3},
 {"path": "^/v3/(watch|kv/range)", "hold": true}]
EOF
kill -CONT "${WEFTD_PID[1]}"
wait_for 15 sh -c "[ \"\$(ip netns exec $(node_ns 1) curl -s http://127.0.0.1:9876/metrics | awk '\$1 == \"weft_loadbalancer_leader\" { print \$2 }')\" = 0 ]" ||
	check_fail "node1 still believes it leads"
echo '[]' | set_rules
sleep 1
conflicts=$(metric 1 'weft_loadbalancer_status_writes_total{result="conflict"}')
info "  node1: $conflicts writes refused by the guard"
[ "$conflicts" -gt 0 ] || check_fail "node1 had no write to refuse: the case proves nothing"
assert_eq "$(assigned b)$(assigned z)" "$before$((14 - before))" "batch and asking Services with an address"

info "no address ever held twice"
ip netns exec "$ETCD_NS" timeout 5 etcdctl --endpoints "$ETCD_URL" watch --prefix --rev 1 -w json \
	"$ETCD_PREFIX/objects/services/" >"$T/history.json" 2>/dev/null || true
dups=$(python3 "$TOP/test/netns/service/lb-ingress-history.py" etcd "$T/history.json" 2>"$T/history.err") ||
	fail "lb-ingress-history.py: $(cat "$T/history.err")"
info "  every status since the start: $(cat "$T/history.err"), $(grep -c . <<<"$dups") addresses ever held twice"
[ -z "$dups" ] || check_fail "addresses held twice at some point: $dups"
info "handover ${HANDOVER_MS} ms"
finish
