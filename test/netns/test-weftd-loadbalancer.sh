#!/usr/bin/env bash
# LoadBalancer address assignment (LB-IPAM) in etcd mode: three weftd, one of them elected, give
# LoadBalancer Services addresses from the network config's pools and write them to
# status.loadBalancer.ingress; every node then programs them.
#
#   pools: public 192.0.2.0/28 (auto: .1-.14), gold 198.51.100.0/30 (tier=gold only; auto .1-.2),
#          manual 203.0.113.0/28 (AutoAssign false)
#
# Cases: the next free address, written with ipMode VIP and reached from a node; an address asked
# for by annotation (manual pool) and by spec.loadBalancerIP; the ServiceSelector; refusals (outside
# every pool, held by another Service, a malformed annotation) leave the ingress empty with the
# reason in the leader's log, the refused gauge and the status condition
# weft.dev/LoadBalancerAddressAssigned (False with the reason; True/Assigned once assigned; another
# writer's condition kept; lastTransitionTime moved only by a flip; nothing rewritten by a pass that
# changes nothing); the allow-shared-ip rule (same key, disjoint ports share; a port clash is
# refused); another loadBalancerClass is left alone; pool exhaustion (pending, PoolExhausted, then
# assigned when an address frees); exactly one leader, whose key holds its name; failover after the
# leader is killed with -9 (measured) and no address held twice afterwards.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
SVC=$TOP/test/netns/service/svc.py
WEFT=$WEFT_BUILD/tool/weft

cluster_init 3 host-gw
etcdctl_ put "$ETCD_PREFIX/config" '{"Network": "10.244.0.0/16", "SubnetLen": 24, "Backend": {"Type": "host-gw"},
 "LoadBalancer": {"Pools": [
   {"Name": "public", "CIDRs": ["192.0.2.0/28"]},
   {"Name": "gold", "CIDRs": ["198.51.100.0/30"], "ServiceSelector": {"matchLabels": {"tier": "gold"}}},
   {"Name": "manual", "CIDRs": ["203.0.113.0/28"], "AutoAssign": false}],
  "Announce": "l2"}}' >/dev/null
for i in 1 2 3; do
	weftd_start "$i" --objects-datastore etcd --relist-interval 0
done
weftd_wait_ready 1 2 3
pod_create 1
P1=$(pod_ip 1)
ip netns exec "$(pod_ns 1)" python3 "$SVC" serve p1 >"$T/serve.1" 2>&1 &
SERVER=$!
kill_server() { kill "$SERVER" 2>/dev/null; return 0; }
on_exit kill_server
wait_for 30 grep -q ready "$T/serve.1" || fail "server did not start"

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
del() { etcdctl_ del "$ETCD_PREFIX/objects/$1" >/dev/null; }
# lb NAME CLUSTER-IP [EXTRA-SPEC-MEMBERS] [METADATA-MEMBERS]: a LoadBalancer Service on port 80
lb() {
	put "services/shop/$1" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"${4:+,$4}},\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"$2\",\"ports\":[{\"port\":80,\"targetPort\":8080}]${3:+,$3}}}"
}
# ingress NAME: the ingress IPs status holds ("" if none)
ingress() { etcdctl_ get --print-value-only "$ETCD_PREFIX/objects/services/shop/$1" | jq -r '[.status.loadBalancer.ingress[]?.ip] | join(",")'; }
ipmode() { etcdctl_ get --print-value-only "$ETCD_PREFIX/objects/services/shop/$1" | jq -r '[.status.loadBalancer.ingress[]?.ipMode] | join(",")'; }
# wait_ingress NAME WANT
wait_ingress() { wait_for 20 sh -c "[ \"\$(ip netns exec $ETCD_NS etcdctl --endpoints $ETCD_URL get --print-value-only $ETCD_PREFIX/objects/services/shop/$1 | jq -r '[.status.loadBalancer.ingress[]?.ip] | join(\",\")')\" = '$2' ]"; }
COND=weft.dev/LoadBalancerAddressAssigned
# cond NAME: our condition(s) in status.conditions, as "status|reason|message" (";" between several)
cond() {
	etcdctl_ get --print-value-only "$ETCD_PREFIX/objects/services/shop/$1" |
		jq -r --arg t "$COND" '[.status.conditions[]? | select(.type == $t) | "\(.status)|\(.reason)|\(.message)"] | join(";")'
}
cond_is() { [ "$(cond "$1")" = "$2" ]; }
# wait_cond NAME WANT
wait_cond() { wait_for 20 cond_is "$1" "$2" || check_fail "$1: condition '$(cond "$1")', expected '$2'"; }
# field NAME JQ: a field of the stored Service
field() { etcdctl_ get --print-value-only "$ETCD_PREFIX/objects/services/shop/$1" | jq -r "$2"; }
mod_rev() { etcdctl_ get -w json "$ETCD_PREFIX/objects/services/shop/$1" | jq -r '.kvs[0].mod_revision'; }
metric() { http_get "$1" /metrics; awk -v m="$2" '$1 == m { print $2 }' <<<"$HTTP_BODY"; }
leader() {
	local i
	for i in 1 2 3; do weftd_alive "$i" && [ "$(metric "$i" weft_loadbalancer_leader)" = 1 ] && echo "$i"; done
	return 0
}
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }

put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'

case_ "one leader, named by its key"
t0=$(date +%s%N)
for _ in $(seq 150); do [ -n "$(leader)" ] && break; sleep 0.2; done
L=$(leader)
[ "$(wc -w <<<"$L")" = 1 ] || fail "expected exactly one leader, got '$L'"
assert_eq "$(etcdctl_ get --print-value-only "$ETCD_PREFIX/loadbalancer/leader")" "node$L" "leader key"
info "  leader: node$L after $((($(date +%s%N) - t0) / 1000000)) ms"

case_ "the next free address, ipMode VIP, reached from a node"
lb web 10.96.0.20
put endpointslices/shop/web-1 "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"web-1\",\"labels\":{\"kubernetes.io/service-name\":\"web\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"$P1\"],\"nodeName\":\"node1\",\"conditions\":{\"ready\":true}}],\"ports\":[{\"port\":8080}]}"
wait_ingress web 192.0.2.1 || check_fail "web: ingress '$(ingress web)', expected 192.0.2.1"
assert_eq "$(ipmode web)" VIP "web ipMode"
out=$(WEFT_ETCD_ENDPOINTS=$ETCD_URL WEFT_ETCD_PREFIX=$ETCD_PREFIX ip netns exec "$ETCD_NS" "$WEFT" get svc -n shop)
info "  $(grep web <<<"$out")"
grep_q -E '^web +LoadBalancer +10\.96\.0\.20 +192\.0\.2\.1 ' <<<"$out" || check_fail "weft get svc: $out"
ip -n "$(node_ns 3)" route add 192.0.2.0/24 dev eth0
wait_for 20 sh -c "ip netns exec $(node_ns 3) python3 $SVC tcp 192.0.2.1 80 1 | grep -q '^p1 '" ||
	check_fail "node3 -> 192.0.2.1:80: $(ip netns exec "$(node_ns 3)" python3 "$SVC" tcp 192.0.2.1 80 1)"

case_ "addresses asked for: annotation (a pool without AutoAssign) and spec.loadBalancerIP"
lb pinned 10.96.0.21 '' '"annotations":{"weft.dev/loadbalancer-ips":"203.0.113.5"}'
lb legacy 10.96.0.22 '"loadBalancerIP":"192.0.2.6"'
wait_ingress pinned 203.0.113.5 || check_fail "pinned: '$(ingress pinned)'"
wait_ingress legacy 192.0.2.6 || check_fail "legacy: '$(ingress legacy)'"

case_ "ServiceSelector: a gold Service from the gold pool, the rest never"
lb shiny 10.96.0.23 '' '"labels":{"tier":"gold"}'
lb plain 10.96.0.24
wait_ingress shiny 198.51.100.1 || check_fail "shiny: '$(ingress shiny)'"
wait_ingress plain 192.0.2.2 || check_fail "plain: '$(ingress plain)'"

case_ "refused: outside every pool, held by another Service, a malformed annotation"
lb outside 10.96.0.25 '"loadBalancerIP":"10.1.2.3"'
lb thief 10.96.0.26 '' '"annotations":{"weft.dev/loadbalancer-ips":"192.0.2.1"}'
lb garbled 10.96.0.27 '' '"annotations":{"weft.dev/loadbalancer-ips":"192.0.2.300"}'
lb marker 10.96.0.28
wait_ingress marker 192.0.2.3 || check_fail "marker: '$(ingress marker)'"
for s in outside thief garbled; do assert_eq "$(ingress $s)" "" "$s ingress"; done
LOG=$(node_dir "$L")/weftd.log
grep_q 'Service shop/outside refused: requested address 10.1.2.3 is outside every LoadBalancer pool' <"$LOG" ||
	check_fail "no refusal logged for outside: $(grep LoadBalancer "$LOG" | tail -5)"
grep_q 'Service shop/thief refused: requested address 192.0.2.1 is held by shop/web' <"$LOG" ||
	check_fail "no refusal logged for thief"
grep_q 'Service shop/garbled refused: weft.dev/loadbalancer-ips: "192.0.2.300" is not a list of IP addresses' <"$LOG" ||
	check_fail "no refusal logged for garbled"
assert_eq "$(metric "$L" 'weft_loadbalancer_services{state="refused"}')" 3 "refused gauge"
assert_eq "$(grep -c 'Service shop/thief refused' "$LOG")" 1 "the refusal is logged once"
for i in 1 2 3; do
	nft_out=$(ip netns exec "$(node_ns "$i")" nft list map inet weft svc-ips4 2>/dev/null || true)
	[[ $nft_out != *10.1.2.3* ]] || check_fail "node$i programmed the refused address 10.1.2.3"
done

case_ "the status condition: False with the reason and the key on each refused Service, True on assigned ones"
wait_cond outside 'False|OutsidePools|spec.loadBalancerIP: requested address 10.1.2.3 is outside every LoadBalancer pool'
wait_cond thief 'False|AddressInUse|weft.dev/loadbalancer-ips: requested address 192.0.2.1 is held by shop/web'
wait_cond garbled 'False|BadRequest|weft.dev/loadbalancer-ips: "192.0.2.300" is not a list of IP addresses'
wait_cond web 'True|Assigned|status.loadBalancer.ingress 192.0.2.1 (pool public)'
wait_cond pinned 'True|Assigned|status.loadBalancer.ingress 203.0.113.5 (pool manual)'
field outside '.status.conditions[0].lastTransitionTime' | grep_q -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' ||
	check_fail "outside: lastTransitionTime '$(field outside '.status.conditions[0].lastTransitionTime')' is not RFC 3339"
assert_eq "$(field outside '.status.conditions[0] | has("observedGeneration")')" false "observedGeneration without metadata.generation"

case_ "the condition beside another writer's: theirs kept; lastTransitionTime only moves when the status flips"
FOREIGN='{"type":"example.com/Checked","status":"True","lastTransitionTime":"2020-01-02T03:04:05Z","reason":"Fine","message":"theirs"}'
put services/shop/keeper "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"keeper\",\"generation\":3},\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.29\",\"ports\":[{\"port\":80,\"targetPort\":8080}],\"loadBalancerIP\":\"10.1.2.4\"},\"status\":{\"conditions\":[$FOREIGN]}}"
wait_cond keeper 'False|OutsidePools|spec.loadBalancerIP: requested address 10.1.2.4 is outside every LoadBalancer pool'
assert_eq "$(field keeper '.status.conditions[0] | tojson')" "$(jq -c . <<<"$FOREIGN")" "the foreign condition after the refusal was written"
assert_eq "$(field keeper ".status.conditions[] | select(.type == \"$COND\") | .observedGeneration")" 3 "observedGeneration"
ltt0=$(field keeper ".status.conditions[] | select(.type == \"$COND\") | .lastTransitionTime")
sleep 1.1 # a new lastTransitionTime would differ
# respec: keeper now asks for a pool address (False -> True), then for another (True -> True)
respec() { put services/shop/keeper "$(field keeper ".spec.loadBalancerIP = \"$1\" | .metadata.generation += 1 | tojson")"; }
respec 192.0.2.9
wait_cond keeper 'True|Assigned|status.loadBalancer.ingress 192.0.2.9 (pool public)'
ltt1=$(field keeper ".status.conditions[] | select(.type == \"$COND\") | .lastTransitionTime")
[ "$ltt1" != "$ltt0" ] || check_fail "lastTransitionTime did not move when the status flipped ($ltt0)"
respec 192.0.2.10
wait_cond keeper 'True|Assigned|status.loadBalancer.ingress 192.0.2.10 (pool public)'
assert_eq "$(field keeper ".status.conditions[] | select(.type == \"$COND\") | .lastTransitionTime")" "$ltt1" "lastTransitionTime across a rewrite with the same status"
assert_eq "$(field keeper ".status.conditions[] | select(.type == \"$COND\") | .observedGeneration")" 5 "observedGeneration after two respecs"
assert_eq "$(field keeper '.status.conditions[0] | tojson')" "$(jq -c . <<<"$FOREIGN")" "the foreign condition after two more writes"
assert_eq "$(field keeper '.status.conditions | length')" 2 "conditions (theirs and ours)"
# passes that change nothing write nothing (the assigner's tick runs one every 2 s)
rev=$(mod_rev keeper)
writes=$(metric "$L" 'weft_loadbalancer_status_writes_total{result="ok"}')
lb nudge 10.96.0.39 '"loadBalancerIP":"10.1.2.5"' # a pass for sure
wait_cond nudge 'False|OutsidePools|spec.loadBalancerIP: requested address 10.1.2.5 is outside every LoadBalancer pool'
sleep 4
assert_eq "$(mod_rev keeper)" "$rev" "keeper's mod_revision across passes that change nothing"
assert_eq "$(field keeper ".status.conditions[] | select(.type == \"$COND\") | .lastTransitionTime")" "$ltt1" "lastTransitionTime across passes that change nothing"
assert_eq "$(metric "$L" 'weft_loadbalancer_status_writes_total{result="ok"}')" "$((writes + 1))" "status writes (nudge's only)"
del services/shop/nudge

case_ "allow-shared-ip: same key and disjoint ports share, a clash is refused"
SH='"annotations":{"weft.dev/allow-shared-ip":"dns"}'
lb dns-udp 10.96.0.30 '"ports":[{"port":53,"protocol":"UDP","targetPort":5353}]' "$SH"
wait_for 20 sh -c "[ -n \"\$(ip netns exec $ETCD_NS etcdctl --endpoints $ETCD_URL get --print-value-only $ETCD_PREFIX/objects/services/shop/dns-udp | jq -r '.status.loadBalancer.ingress[0].ip // empty')\" ]" ||
	check_fail "dns-udp got nothing"
DNS_IP=$(ingress dns-udp)
lb dns-tcp 10.96.0.31 '"ports":[{"port":53,"protocol":"TCP","targetPort":5353}]' "$SH"
lb dns-clash 10.96.0.32 "\"ports\":[{\"port\":53,\"protocol\":\"UDP\",\"targetPort\":5353}],\"loadBalancerIP\":\"$DNS_IP\"" "$SH"
wait_ingress dns-tcp "$DNS_IP" || check_fail "dns-tcp: '$(ingress dns-tcp)', expected the shared $DNS_IP"
wait_for 10 grep -q "Service shop/dns-clash refused: requested address $DNS_IP is held by shop/dns-udp (same sharing key, but a port is used by both)" "$LOG" ||
	check_fail "dns-clash not refused: $(grep dns-clash "$LOG" | tail -2)"
assert_eq "$(ingress dns-clash)" "" "dns-clash ingress"

case_ "another loadBalancerClass is left alone"
lb foreign 10.96.0.33 '"loadBalancerClass":"example.com/other"'
lb marker2 10.96.0.34
wait_for 20 sh -c "[ -n \"\$(ip netns exec $ETCD_NS etcdctl --endpoints $ETCD_URL get --print-value-only $ETCD_PREFIX/objects/services/shop/marker2 | jq -r '.status.loadBalancer.ingress[0].ip // empty')\" ]" ||
	check_fail "marker2 got nothing"
assert_eq "$(ingress foreign)" "" "foreign ingress"

case_ "pool addresses are programmed without --service-external-ip-cidrs; an ingress IP outside them is not"
put services/shop/elsewhere '{"apiVersion":"v1","kind":"Service","metadata":{"namespace":"shop","name":"elsewhere"},"spec":{"type":"LoadBalancer","clusterIP":"10.96.0.38","loadBalancerClass":"example.com/other","ports":[{"port":80,"targetPort":8080}]},"status":{"loadBalancer":{"ingress":[{"ip":"10.55.0.1"}]}}}'
for i in 1 2 3; do
	# marker2 has no endpoints: its address is in the no-endpoint map (answered with a reject)
	wait_for 20 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-noep4 | grep -q '192.0.2.5 . tcp . 80'" ||
		check_fail "node$i: the pool address 192.0.2.5 (marker2) is not programmed"
	# elsewhere is programmed (its ClusterIP), without the ingress IP outside the pools
	wait_for 20 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-noep4 | grep -q '10.96.0.38 . tcp . 80'" ||
		check_fail "node$i: elsewhere's ClusterIP is not programmed"
	nft_out=$(ip netns exec "$(node_ns "$i")" nft list table inet weft 2>/dev/null || true)
	[[ $nft_out != *10.55.0.1* ]] || check_fail "node$i programmed 10.55.0.1, outside every pool"
done

case_ "pool exhaustion: pending, then assigned when an address frees"
lb gold2 10.96.0.35 '' '"labels":{"tier":"gold"}'
wait_ingress gold2 198.51.100.2 || check_fail "gold2: '$(ingress gold2)'"
lb gold3 10.96.0.36 '' '"labels":{"tier":"gold"}'
wait_for 10 grep -q 'Service shop/gold3 pending: no free IPv4 address in a pool open to this Service' "$LOG" ||
	check_fail "gold3 not reported pending"
wait_cond gold3 'False|PoolExhausted|no free IPv4 address in a pool open to this Service (with AutoAssign)'
wait_cond gold2 'True|Assigned|status.loadBalancer.ingress 198.51.100.2 (pool gold)'
assert_eq "$(ingress gold3)" "" "gold3 ingress while the pool is full"
[ "$(metric "$L" 'weft_loadbalancer_pool_addresses{pool="gold",state="free"}')" = 0 ] ||
	check_fail "gold pool free gauge: $(metric "$L" 'weft_loadbalancer_pool_addresses{pool="gold",state="free"}')"
del services/shop/shiny
wait_ingress gold3 198.51.100.1 || check_fail "gold3 after shiny left: '$(ingress gold3)'"
wait_cond gold3 'True|Assigned|status.loadBalancer.ingress 198.51.100.1 (pool gold)'

case_ "failover: the leader killed with -9"
OLD=$L
weftd_stop "$OLD" KILL
t0=$(date +%s%N)
L=
for _ in $(seq $((150 * WEFT_TEST_SLACK))); do L=$(leader); [ -n "$L" ] && break; sleep 0.2; done
[ -n "$L" ] || fail "no new leader after node$OLD was killed"
FAILOVER_MS=$((($(date +%s%N) - t0) / 1000000))
info "  node$L took over after $FAILOVER_MS ms (leader key TTL 6 s)"
lb late 10.96.0.37
wait_ingress late 192.0.2.7 || check_fail "late (after failover): '$(ingress late)'"
info "  a Service created after the failover has its address $((($(date +%s%N) - t0) / 1000000)) ms after the kill"

case_ "the leader's /metrics pass promtool, and every weft_loadbalancer_ family is documented"
http_get "$L" /metrics
if command -v promtool >/dev/null; then
	out=$(promtool check metrics <<<"$HTTP_BODY" 2>&1) || check_fail "promtool: $out"
fi
while read -r _ _ fam _; do
	grep_q "\`$fam\`" <"$TOP/docs/metrics.md" || check_fail "$fam is not in docs/metrics.md"
done < <(grep '^# TYPE weft_loadbalancer_' <<<"$HTTP_BODY")
[ "$(grep -c '^# TYPE weft_loadbalancer_' <<<"$HTTP_BODY")" = 9 ] || check_fail "expected 9 weft_loadbalancer_ families (5 of the assigner, 4 of the announcement)"

case_ "no address held twice (shared ones excepted)"
all=$(etcdctl_ get --prefix --print-value-only "$ETCD_PREFIX/objects/services/shop/" |
	jq -r 'select(.metadata.annotations["weft.dev/allow-shared-ip"] == null) | .status.loadBalancer.ingress[]?.ip' | sort)
dups=$(uniq -d <<<"$all")
[ -z "$dups" ] || check_fail "addresses held twice: $dups"
info "  $(wc -l <<<"$all") addresses, none twice"

info "$N_CASES LoadBalancer cases; failover ${FAILOVER_MS} ms"
finish
