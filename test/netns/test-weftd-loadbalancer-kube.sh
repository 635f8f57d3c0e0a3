#!/usr/bin/env bash
# weft-test: serial
# LoadBalancer address assignment in Kubernetes mode: three weftd --datastore kubernetes against the
# fake API server elect one assigner through a coordination.k8s.io/v1 Lease (kube-system/
# weft-loadbalancer), which writes the addresses with PUT .../services/NAME/status.
#
#   underlay 10.99.0.0/24 -- fake-apiserver https://10.99.0.2:6443 (in the etcd namespace)
#                         -- node1, node2, node3 (weftd, Lease TTL 6 s)
#
#   pools: public 192.0.2.0/28 (auto), manual 203.0.113.0/28 (AutoAssign false),
#          batch 198.51.100.0/28 (tier=batch only: 14 addresses)
#
# Cases: exactly one Lease holder, which is the one leader (kubectl get lease shows it); the next
# free address written to status (kubectl get svc shows it as EXTERNAL-IP, <pending> for a
# LoadBalancer Service nobody serves, <none> for a ClusterIP); an address asked for; refusals as in
# etcd mode, with the status condition weft.dev/LoadBalancerAddressAssigned (and another writer's
# condition kept by the status PUT); the leader killed with -9: another takes the Lease once it expires (measured) and
# assigns a new Service; then issue 21 item 5, a handover mid-assignment: the leader is stopped
# (SIGSTOP) with status writes queued (the fixture slows them down to catch it mid-way), the Lease
# expires, the other node takes over and gives those addresses to Services that ask for them; the
# old leader resumes (SIGCONT): the Lease's deadline by its own clock has passed, so its queued
# writes are not sent, and no address is ever held twice.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/kube-fixture-lib.sh"

require_root
require_cmd ip jq curl python3 kubectl openssl
require_built "$WEFTD"

API_IP=$ETCD_IP
API_URL=https://$API_IP:6443
TOKEN=weft-lb-kube-token
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json
LEASE=/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/weft-loadbalancer

cluster_init 3 host-gw --no-etcd
fixture_start_ns "$ETCD_NS" "$API_IP" "$TOKEN" \
	--node node1=10.244.1.0/24 --node node2=10.244.2.0/24 --node node3=10.244.3.0/24
cat >"$NET_CONF" <<EOF
{"Network": "10.244.0.0/16", "SubnetLen": 24, "Backend": {"Type": "host-gw"},
 "LoadBalancer": {"Pools": [
   {"Name": "public", "CIDRs": ["192.0.2.0/28"]},
   {"Name": "manual", "CIDRs": ["203.0.113.0/28"], "AutoAssign": false},
   {"Name": "batch", "CIDRs": ["198.51.100.0/28"], "ServiceSelector": {"matchLabels": {"tier": "batch"}}}],
  "Announce": "l2"}}
EOF
api() { # api METHOD PATH [CURL ARGS...]
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -sS -m 10 --cacert "$T/apiserver.crt" -X "$m" -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' "$@" "$API_URL$p"
}
kubectl_() { ip netns exec "$ETCD_NS" kubectl --kubeconfig "$KUBECONFIG_FILE" --request-timeout 10s "$@"; }
api POST /api/v1/namespaces -d '{"metadata":{"name":"shop"}}' >/dev/null
for i in 1 2 3; do
	weftd_start "$i" --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF" \
		--relist-interval 0 --service-cluster-ip-range 10.96.0.0/16
done
weftd_wait_ready 1 2 3

# lb NAME [EXTRA-SPEC-MEMBERS] [METADATA-MEMBERS]: a LoadBalancer Service on port 80 in shop
lb_json() {
	echo "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"${3:+,$3}},\"spec\":{\"type\":\"LoadBalancer\",\"ports\":[{\"port\":80,\"targetPort\":8080}]${2:+,$2}}}"
}
lb() { api POST /api/v1/namespaces/shop/services -d "$(lb_json "$@")" >/dev/null; }
ingress() { api GET "/api/v1/namespaces/shop/services/$1" | jq -r '[.status.loadBalancer.ingress[]?.ip] | join(",")'; }
wait_ingress() { # wait_ingress NAME WANT
	local i got
	for ((i = 0; i < 100 * WEFT_TEST_SLACK; i++)); do
		got=$(ingress "$1")
		[ "$got" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
metric() { http_get "$1" /metrics; awk -v m="$2" '$1 == m { print $2 }' <<<"$HTTP_BODY"; }
leader() {
	local i
	for i in 1 2 3; do weftd_alive "$i" && [ "$(metric "$i" weft_loadbalancer_leader)" = 1 ] && echo "$i"; done
	return 0
}
holder() { api GET "$LEASE" | jq -r '.spec.holderIdentity // ""'; }
# every ingress IP of every Service, one a line (shared ones excepted): none may repeat
no_address_twice() {
	local all dups
	all=$(api GET /api/v1/services |
		jq -r '.items[] | select(.metadata.annotations["weft.dev/allow-shared-ip"] == null) | .status.loadBalancer.ingress[]?.ip' | sort)
	dups=$(uniq -d <<<"$all")
	[ -z "$dups" ] || check_fail "addresses held twice: $(tr '\n' ' ' <<<"$dups")"
	info "  $(grep -c . <<<"$all") addresses held, none twice"
}
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }

case_ "one leader, the Lease's holder"
t0=$(date +%s%N)
for _ in $(seq $((150 * WEFT_TEST_SLACK))); do [ -n "$(leader)" ] && break; sleep 0.2; done
L=$(leader)
[ "$(wc -w <<<"$L")" = 1 ] || fail "expected exactly one leader, got '$L'"
info "  leader: node$L after $((($(date +%s%N) - t0) / 1000000)) ms"
lease=$(api GET "$LEASE")
assert_eq "$(jq -r .spec.holderIdentity <<<"$lease")" "node$L" "Lease holderIdentity"
assert_eq "$(jq -r .spec.leaseDurationSeconds <<<"$lease")" 6 "Lease leaseDurationSeconds"
assert_eq "$(jq -r .spec.leaseTransitions <<<"$lease")" 0 "Lease leaseTransitions"
jq -e '.spec.renewTime | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}Z$")' <<<"$lease" >/dev/null ||
	check_fail "renewTime is not a MicroTime: $(jq -c .spec <<<"$lease")"
rv0=$(jq -r .metadata.resourceVersion <<<"$lease")
wait_for 10 sh -c "[ \"\$(ip netns exec $ETCD_NS curl -s --cacert $T/apiserver.crt -H 'Authorization: Bearer $TOKEN' $API_URL$LEASE | jq -r .metadata.resourceVersion)\" != $rv0 ]" ||
	check_fail "the leader does not renew the Lease"
out=$(kubectl_ get lease -n kube-system 2>&1) || check_fail "kubectl get lease: $out"
info "  $(grep weft-loadbalancer <<<"$out")"
grep_q -E "^weft-loadbalancer +node$L " <<<"$out" || check_fail "kubectl get lease -n kube-system: $out"

case_ "the next free address, written to status (ipMode VIP); kubectl shows it"
lb web
api POST /api/v1/namespaces/shop/services -d '{"metadata":{"name":"inside"},"spec":{"ports":[{"port":80}]}}' >/dev/null
lb foreign '"loadBalancerClass":"example.com/other"'
wait_ingress web 192.0.2.1 || check_fail "web: ingress '$(ingress web)', expected 192.0.2.1"
assert_eq "$(api GET /api/v1/namespaces/shop/services/web | jq -r '.status.loadBalancer.ingress[0].ipMode')" VIP "web ipMode"
out=$(kubectl_ get svc -n shop 2>&1) || check_fail "kubectl get svc: $out"
while IFS= read -r line; do info "    $line"; done <<<"$out"
grep_q -E '^web +LoadBalancer +10\.96\.[0-9.]+ +192\.0\.2\.1 +80:[0-9]+/TCP ' <<<"$out" || check_fail "kubectl: web"
grep_q -E '^foreign +LoadBalancer +10\.96\.[0-9.]+ +<pending> ' <<<"$out" || check_fail "kubectl: foreign"
grep_q -E '^inside +ClusterIP +10\.96\.[0-9.]+ +<none> ' <<<"$out" || check_fail "kubectl: inside"

case_ "addresses asked for: annotation (a pool without AutoAssign) and spec.loadBalancerIP"
lb pinned '' '"annotations":{"weft.dev/loadbalancer-ips":"203.0.113.5"}'
lb legacy '"loadBalancerIP":"192.0.2.6"'
wait_ingress pinned 203.0.113.5 || check_fail "pinned: '$(ingress pinned)'"
wait_ingress legacy 192.0.2.6 || check_fail "legacy: '$(ingress legacy)'"

case_ "refused: outside every pool, held by another Service, a malformed annotation"
lb outside '"loadBalancerIP":"10.1.2.3"'
lb thief '' '"annotations":{"weft.dev/loadbalancer-ips":"192.0.2.1"}'
lb garbled '' '"annotations":{"weft.dev/loadbalancer-ips":"192.0.2.300"}'
lb marker
wait_ingress marker 192.0.2.2 || check_fail "marker: '$(ingress marker)'"
for s in outside thief garbled foreign; do assert_eq "$(ingress $s)" "" "$s ingress"; done
LOG=$(node_dir "$L")/weftd.log
while IFS='|' read -r svc why; do
	grep_q -F "Service shop/$svc refused: $why" <"$LOG" ||
		check_fail "no refusal logged for $svc: $(grep "shop/$svc" "$LOG" | tail -2)"
done <<'EOF'
outside|requested address 10.1.2.3 is outside every LoadBalancer pool
thief|requested address 192.0.2.1 is held by shop/web
garbled|weft.dev/loadbalancer-ips: "192.0.2.300" is not a list of IP addresses
EOF
assert_eq "$(metric "$L" 'weft_loadbalancer_services{state="refused"}')" 3 "refused gauge"

case_ "the status condition (kubectl get svc -o json); another writer's condition kept by the status PUT"
# kcond NAME: our condition as "status|reason|message"
kcond() {
	kubectl_ get svc -n shop "$1" -o json |
		jq -r '[.status.conditions[]? | select(.type == "weft.dev/LoadBalancerAddressAssigned") | "\(.status)|\(.reason)|\(.message)"] | join(";")'
}
kcond_is() { [ "$(kcond "$1")" = "$2" ]; }
want='False|OutsidePools|spec.loadBalancerIP: requested address 10.1.2.3 is outside every LoadBalancer pool'
wait_for 20 kcond_is outside "$want" || check_fail "outside: condition '$(kcond outside)', expected '$want'"
FOREIGN='{"type":"example.com/Checked","status":"True","lastTransitionTime":"2020-01-02T03:04:05Z","reason":"Fine","message":"theirs"}'
api POST /fixture/apply -d "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[$(lb_json kept '"loadBalancerIP":"192.0.2.9"' | jq -c --argjson f "$FOREIGN" '.status = {conditions: [$f]}')]}" >/dev/null
wait_ingress kept 192.0.2.9 || check_fail "kept: '$(ingress kept)'"
want='True|Assigned|status.loadBalancer.ingress 192.0.2.9 (pool public)'
wait_for 20 kcond_is kept "$want" || check_fail "kept: condition '$(kcond kept)', expected '$want'"
assert_eq "$(kubectl_ get svc -n shop kept -o json | jq -cS '.status.conditions[0]')" "$(jq -cS . <<<"$FOREIGN")" "the foreign condition after the status PUT"
for i in 1 2 3; do
	[ "$i" = "$L" ] && continue
	[ "$(metric "$i" 'weft_loadbalancer_status_writes_total{result="ok"}')" = 0 ] ||
		check_fail "node$i, not the leader, wrote status"
done

case_ "failover: the leader killed with -9; another takes the Lease once it expires"
OLD=$L
weftd_stop "$OLD" KILL
t0=$(date +%s%N)
wait_for $((30 * WEFT_TEST_SLACK)) sh -c "[ -n \"\$(ip netns exec $ETCD_NS curl -s --cacert $T/apiserver.crt -H 'Authorization: Bearer $TOKEN' $API_URL$LEASE | jq -r '.spec.holderIdentity | select(. != \"node$OLD\")')\" ]" ||
	fail "nobody took the Lease after node$OLD was killed"
FAILOVER_MS=$((($(date +%s%N) - t0) / 1000000))
L=$(holder)
L=${L#node}
wait_for 5 sh -c "ip netns exec $(node_ns "$L") curl -s http://127.0.0.1:9876/metrics | grep -q '^weft_loadbalancer_leader 1'" ||
	check_fail "node$L holds the Lease but does not say it leads"
info "  node$L took the Lease $FAILOVER_MS ms after the kill (leaseDurationSeconds 6)"
[ "$FAILOVER_MS" -ge 3000 ] || check_fail "node$L took the Lease after $FAILOVER_MS ms, before it could expire"
lease=$(api GET "$LEASE")
assert_eq "$(jq -r .spec.holderIdentity <<<"$lease")" "node$L" "Lease holderIdentity after failover"
assert_eq "$(jq -r .spec.leaseTransitions <<<"$lease")" 1 "Lease leaseTransitions after failover"
lb late
wait_ingress late 192.0.2.3 || check_fail "late (after failover): '$(ingress late)'"
info "  a Service created after the failover has its address $((($(date +%s%N) - t0) / 1000000)) ms after the kill"
no_address_twice

case_ "handover mid-assignment: the stopped leader's queued writes are fenced off"
OTHER=
for i in 1 2 3; do weftd_alive "$i" && [ "$i" != "$L" ] && OTHER=$i; done
fenced0=$(metric "$L" 'weft_loadbalancer_status_writes_total{result="fenced"}')
# every version of every Service from here on, to find an address held twice even for a moment
ip netns exec "$ETCD_NS" curl -sSN --cacert "$T/apiserver.crt" -H "Authorization: Bearer $TOKEN" \
	"$API_URL/api/v1/services?watch=1&resourceVersion=0" >"$T/watch.json" 2>"$T/watch.err" &
WATCH_PID=$!
on_exit "kill $WATCH_PID 2>/dev/null"
# 14 Services for the 14 addresses of the batch pool, written slowly (0.3 s each)
api POST /fixture/delay -d '{"rules": [{"seconds": 0.3, "method": "PUT", "path": "/status([?]|$)"}]}' >/dev/null
batch='{"apiVersion":"v1","kind":"List","items":['
for k in $(seq -w 1 14); do
	batch+="$(lb_json "b$k" '' '"labels":{"tier":"batch"}'),"
done
api POST /fixture/apply -d "${batch%,}]}" >/dev/null
batch_assigned() { api GET '/api/v1/namespaces/shop/services?labelSelector=tier%3Dbatch' | jq '[.items[] | select(.status.loadBalancer.ingress)] | length'; }
for _ in $(seq $((200 * WEFT_TEST_SLACK))); do [ "$(batch_assigned)" -ge 3 ] && break; sleep 0.05; done
kill -STOP "${WEFTD_PID[$L]}"
on_exit "kill -CONT ${WEFTD_PID[$L]} 2>/dev/null"
t0=$(date +%s%N)
api POST /fixture/delay -d '{"rules": []}' >/dev/null
sleep 0.5 # the write in flight when it stopped lands
before=$(batch_assigned)
info "  node$L stopped with $before of 14 batch Services written"
[ "$before" -lt 14 ] || fail "node$L wrote the whole batch before it was stopped"
# Services asking for each batch address by name: those still free go to them
asks='{"apiVersion":"v1","kind":"List","items":['
for k in $(seq 1 14); do
	asks+="$(lb_json "z$k" '' "\"labels\":{\"tier\":\"batch\"},\"annotations\":{\"weft.dev/loadbalancer-ips\":\"198.51.100.$k\"}"),"
done
api POST /fixture/apply -d "${asks%,}]}" >/dev/null
for _ in $(seq $((200 * WEFT_TEST_SLACK))); do [ "$(holder)" = "node$OTHER" ] && break; sleep 0.1; done
assert_eq "$(holder)" "node$OTHER" "Lease holder while node$L is stopped"
HANDOVER_MS=$((($(date +%s%N) - t0) / 1000000))
info "  node$OTHER took the Lease $HANDOVER_MS ms after node$L stopped"
zs() { api GET '/api/v1/namespaces/shop/services?labelSelector=tier%3Dbatch' | jq '[.items[] | select(.metadata.name | startswith("z")) | select(.status.loadBalancer.ingress)] | length'; }
wait_for 20 sh -c "[ \"\$(ip netns exec $ETCD_NS curl -s --cacert $T/apiserver.crt -H 'Authorization: Bearer $TOKEN' '$API_URL/api/v1/namespaces/shop/services?labelSelector=tier%3Dbatch' | jq '[.items[] | select(.metadata.name | startswith(\"z\")) | select(.status.loadBalancer.ingress)] | length')\" = $((14 - before)) ]" ||
	check_fail "node$OTHER gave $(zs) addresses to the asking Services, expected $((14 - before))"
no_address_twice
# When it resumes, the old leader's read of the Lease is slow (3 s): until then only its own clock
# can tell it that it may no longer write. Without that fence it sends its queued writes, giving
# the addresses of the asking Services to the batch Services they were planned for.
api POST /fixture/delay -d "{\"rules\": [{\"seconds\": 3, \"method\": \"GET\", \"path\": \"/leases/\", \"client\": \"$(node_ip "$L")\"}]}" >/dev/null
kill -CONT "${WEFTD_PID[$L]}"
wait_for 10 sh -c "[ \"\$(ip netns exec $(node_ns "$L") curl -s http://127.0.0.1:9876/metrics | awk '\$1 == \"weft_loadbalancer_leader\" { print \$2 }')\" = 0 ]" ||
	check_fail "node$L still believes it leads after it resumed"
sleep 3 # what the old leader would write, it has had time to
api POST /fixture/delay -d '{"rules": []}' >/dev/null
fenced=$(metric "$L" 'weft_loadbalancer_status_writes_total{result="fenced"}')
info "  node$L resumed: $((fenced - fenced0)) queued writes not sent (the Lease past its deadline)"
[ "$((fenced - fenced0))" -gt 0 ] || check_fail "node$L had no write to fence off: the case proves nothing"
grep_q 'status writes\? not sent: ' <"$(node_dir "$L")/weftd.log" ||
	check_fail "node$L did not log the fenced writes"
assert_eq "$(holder)" "node$OTHER" "Lease holder after node$L resumed"
no_address_twice
kill "$WATCH_PID"
dups=$(python3 "$TOP/test/netns/service/lb-ingress-history.py" kube "$T/watch.json" 2>"$T/history.err") ||
	fail "lb-ingress-history.py: $(cat "$T/history.err")"
info "  every status since the batch: $(cat "$T/history.err"), $(grep -c . <<<"$dups") addresses ever held twice"
[ -z "$dups" ] || check_fail "addresses held twice at some point: $dups"
assert_eq "$(batch_assigned)" 14 "batch Services with an address (the pool's 14)"

info "$N_CASES LoadBalancer cases in Kubernetes mode; failover ${FAILOVER_MS} ms, handover ${HANDOVER_MS} ms"
finish
