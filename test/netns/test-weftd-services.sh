#!/usr/bin/env bash
# Services without kube-proxy: weftd programs Services + EndpointSlices (from etcd, as `weft apply`
# writes them) into table inet weft, and real traffic checks each feature across nodes:
#
#   underlay 10.99.0.0/24 -- node1 (pod p1 10.244.x.10, server "p1")
#                         -- node2 (pod p2, server "p2")
#                         -- node3 (pod p3, the client)
#                         -- outside 10.99.0.200 (a host outside the cluster)
#
# Each case fails without its feature: ClusterIP TCP/UDP from a pod and from a node (output hook),
# both endpoints used, NodePort from outside on a node address (masqueraded) but not on 127.0.0.1,
# externalIPs, no endpoints -> refused (TCP reset / ICMP) instead of a timeout, hairpin, headless
# gets nothing, externalTrafficPolicy Local (source kept; a node without a local endpoint drops;
# healthCheckNodePort 200/503 with localEndpoints),
# internalTrafficPolicy Local, sessionAffinity ClientIP (sticky, free again after timeoutSeconds),
# endpoint churn under a running client (no connection to the removed
# endpoint once the node has synced), and a restart's full sync removing a Service deleted meanwhile.
#   SERVICES_BACKEND=host-gw|vxlan (default host-gw)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
BACKEND=${SERVICES_BACKEND:-host-gw}
SVC=$TOP/test/netns/service/svc.py

cluster_init 3 "$BACKEND"
for i in 1 2 3; do weftd_start "$i" --objects-datastore etcd --relist-interval 0 --service-external-ip-cidrs 192.0.2.0/24; done
weftd_wait_ready 1 2 3
for i in 1 2 3; do
	pod_create "$i"
	# as the weft plugin wires pods (hairpinMode true): with br_netfilter, a pod's packet DNATed back
	# to itself is bridged out of the port it came in on
	ip -n "$(node_ns "$i")" link set "veth-p$i" type bridge_slave hairpin on
	# what a node needs to reach a Service IP itself (the route lookup comes before the output hook)
	ip -n "$(node_ns "$i")" route add 10.96.0.0/12 dev eth0
done
P1=$(pod_ip 1) P2=$(pod_ip 2)
N1=$(node_ip 1) N2=$(node_ip 2)
SERVERS=()
kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_servers
for i in 1 2; do
	ip netns exec "$(pod_ns "$i")" python3 "$SVC" serve "p$i" >"$T/serve.$i" 2>&1 &
	SERVERS+=($!)
done
for i in 1 2; do wait_for 30 grep -q ready "$T/serve.$i" || fail "server p$i did not start"; done

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
del() { etcdctl_ del "$ETCD_PREFIX/objects/$1" >/dev/null; }
# service NAME SPEC-JSON [STATUS-JSON]
service() {
	put "services/shop/$1" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"},\"spec\":$2,\"status\":${3:-{\}}}"
}
# endpoint IP NODE: one ready endpoint
endpoint() { echo "{\"addresses\":[\"$1\"],\"nodeName\":\"$2\",\"conditions\":{\"ready\":true}}"; }
# slice NAME SERVICE ENDPOINTS-JSON-ARRAY-MEMBERS PORTS-JSON-ARRAY-MEMBERS
slice() {
	put "endpointslices/shop/$1" "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\",\"labels\":{\"kubernetes.io/service-name\":\"$2\"}},\"addressType\":\"IPv4\",\"endpoints\":[$3],\"ports\":[$4]}"
}
WEB_PORTS='{"name":"http","port":8080,"protocol":"TCP"},{"name":"dns","port":5353,"protocol":"UDP"}'

put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'
service web '{"type":"NodePort","clusterIP":"10.96.0.10","externalIPs":["192.0.2.7"],"ports":[
	{"name":"http","port":80,"targetPort":"http","nodePort":30080},
	{"name":"dns","port":53,"protocol":"UDP","targetPort":5353}]}'
slice web-1 web "$(endpoint "$P1" node1)" "$WEB_PORTS"
slice web-2 web "$(endpoint "$P2" node2)" "$WEB_PORTS"
service empty '{"clusterIP":"10.96.0.11","ports":[{"port":80},{"name":"u","port":53,"protocol":"UDP"}]}'
service solo '{"clusterIP":"10.96.0.12","ports":[{"port":80,"targetPort":8080}]}'
slice solo-1 solo "$(endpoint "$P1" node1)" '{"port":8080}'
service local '{"type":"LoadBalancer","clusterIP":"10.96.0.13","externalTrafficPolicy":"Local","healthCheckNodePort":32000,"ports":[{"port":80,"targetPort":8080,"nodePort":30081}]}'
slice local-1 local "$(endpoint "$P2" node2)" '{"port":8080}'
service itl '{"clusterIP":"10.96.0.14","internalTrafficPolicy":"Local","ports":[{"port":80,"targetPort":8080}]}'
slice itl-1 itl "$(endpoint "$P2" node2)" '{"port":8080}'
service dns '{"clusterIP":"10.96.0.15","ports":[{"port":53,"protocol":"UDP","targetPort":5353}]}'
slice dns-1 dns "$(endpoint "$P1" node1)" '{"port":5353,"protocol":"UDP"}'
service headless '{"clusterIP":"None","ports":[{"port":80,"targetPort":8080}]}'
slice headless-1 headless "$(endpoint "$P1" node1)" '{"port":8080}'

nft_in() { ip netns exec "$(node_ns "$1")" nft "${@:2}"; }
for i in 1 2 3; do
	wait_for 10 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-ips4 | grep -q '10.96.0.15 . udp . 53'" ||
		wait_for 1 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-noep4 | grep -q '10.96.0.15 . udp . 53'" ||
		fail "node$i: Services not programmed: $(tail -5 "$(node_dir "$i")/weftd.log")"
done
in_pod() { ip netns exec "$(pod_ns "$1")" python3 "$SVC" "${@:2}"; }
in_node() { ip netns exec "$(node_ns "$1")" python3 "$SVC" "${@:2}"; }
outside() { ip netns exec "$OUT_NS" python3 "$SVC" "$@"; }
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }

# answers of N probes, as "p1 x, p2 y"
spread() {
	local n=$1 out
	shift
	out=$(for _ in $(seq "$n"); do "$@"; done)
	awk '{ print $1 }' <<<"$out" | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }'
}

case_ "ClusterIP TCP from a pod on another node reaches both endpoints"
s=$(spread 30 in_pod 3 tcp 10.96.0.10 80)
info "  p3 -> 10.96.0.10:80 x30: $s"
[[ $s =~ ^p1\ [0-9]+,\ p2\ [0-9]+$ ]] || check_fail "pod -> ClusterIP: $s"

case_ "ClusterIP TCP from a node (output hook)"
s=$(spread 30 in_node 3 tcp 10.96.0.10 80)
info "  node3 -> 10.96.0.10:80 x30: $s"
[[ $s =~ ^p1\ [0-9]+,\ p2\ [0-9]+$ ]] || check_fail "node -> ClusterIP: $s"

case_ "ClusterIP UDP, targetPort by number"
s=$(spread 10 in_pod 3 udp 10.96.0.10 53)
info "  p3 -> 10.96.0.10:53/udp x10: $s"
[[ $s =~ ^p1\ [0-9]+,\ p2\ [0-9]+$ ]] || check_fail "pod -> ClusterIP UDP: $s"

case_ "NodePort from outside on a node address, masqueraded"
r=$(outside tcp "$N1" 30080)
info "  outside -> $N1:30080: $r"
[[ $r =~ ^p[12]\  ]] || check_fail "NodePort from outside: $r"
[[ $r != *" $OUTSIDE_IP" ]] || check_fail "NodePort (Cluster policy) kept the client's source: $r"
r=$(in_node 1 tcp "$N1" 30080)
[[ $r =~ ^p[12]\  ]] || check_fail "NodePort from the node itself on its address: $r"

case_ "NodePort not on 127.0.0.1"
r=$(in_node 1 tcp 127.0.0.1 30080 1)
info "  node1 -> 127.0.0.1:30080: $r"
assert_eq "$r" refused "NodePort on loopback"

case_ "externalIPs"
ip -n "$OUT_NS" route add 192.0.2.7 via "$N1"
r=$(outside tcp 192.0.2.7 80)
info "  outside -> 192.0.2.7:80: $r"
[[ $r =~ ^p[12]\  ]] || check_fail "externalIP: $r"

case_ "no endpoints: TCP reset and ICMP port unreachable, not a timeout"
r=$(in_pod 3 tcp 10.96.0.11 80 3)
info "  p3 -> 10.96.0.11:80: $r"
assert_eq "$r" refused "Service without endpoints (TCP)"
r=$(in_pod 3 udp 10.96.0.11 53 3)
info "  p3 -> 10.96.0.11:53/udp: $r"
assert_eq "$r" refused "Service without endpoints (UDP)"

case_ "hairpin: a pod reaching itself through its Service"
r=$(in_pod 1 tcp 10.96.0.12 80 3)
info "  p1 -> 10.96.0.12:80 (endpoint p1): $r"
[[ $r =~ ^p1\  ]] || check_fail "hairpin: $r"
[[ $r != "p1 $P1" ]] || check_fail "hairpin not masqueraded: $r"

case_ "headless Service: no rules"
if nft_in 1 list chains inet | grep 'svc-shop/headless' >/dev/null; then check_fail "headless Service got chains"; fi

case_ "externalTrafficPolicy Local: source kept where an endpoint is local, dropped elsewhere"
r=$(outside tcp "$N2" 30081 3)
info "  outside -> $N2:30081: $r"
assert_eq "$r" "p2 $OUTSIDE_IP" "eTP Local on the endpoint's node"
r=$(outside tcp "$N1" 30081 2)
info "  outside -> $N1:30081: $r"
assert_eq "$r" timeout "eTP Local on a node without a local endpoint"
r=$(in_pod 3 tcp 10.96.0.13 80 3)
[[ $r =~ ^p2\  ]] || check_fail "eTP Local: the ClusterIP still reaches every endpoint: $r"

case_ "healthCheckNodePort: 200 where an endpoint is local, 503 elsewhere, with localEndpoints"
for n in 1 2; do
	hc=$(ip netns exec "$OUT_NS" curl -s -m 3 -w ' %{http_code}' "http://$(node_ip "$n"):32000/healthz" || true)
	info "  outside -> node$n:32000: $hc"
	case $n in
	1) assert_eq "$hc" '{"service":{"namespace":"shop","name":"local"},"localEndpoints":0,"serviceProxyHealthy":true} 503' "health check on node1" ;;
	2) assert_eq "$hc" '{"service":{"namespace":"shop","name":"local"},"localEndpoints":1,"serviceProxyHealthy":true} 200' "health check on node2" ;;
	esac
done

case_ "internalTrafficPolicy Local: only this node's endpoints"
r=$(in_pod 3 tcp 10.96.0.14 80 2)
info "  p3 (node3) -> 10.96.0.14:80 (endpoint on node2): $r"
assert_eq "$r" timeout "iTP Local from a node without a local endpoint"
r=$(in_node 2 tcp 10.96.0.14 80 2)
[[ $r =~ ^p2\  ]] || check_fail "iTP Local from the endpoint's node: $r"

case_ "sessionAffinity ClientIP: one client sticks to one endpoint, free again after timeoutSeconds"
AFF_SPEC='"clusterIP":"10.96.0.16","ports":[{"port":80,"targetPort":8080}]'
service aff "{$AFF_SPEC,\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":3}}}"
slice aff-1 aff "$(endpoint "$P1" node1),$(endpoint "$P2" node2)" '{"port":8080}'
wait_for 10 sh -c "ip netns exec $(node_ns 3) nft list sets inet | grep -q 'svc-shop/aff/tcp/80/ip4/ep/$P2/8080/aff3'" ||
	fail "node3: no affinity sets for shop/aff"
s=$(spread 20 in_pod 3 tcp 10.96.0.16 80)
info "  p3 -> 10.96.0.16:80 x20 with affinity: $s"
[[ $s =~ ^p[12]\ 20$ ]] || check_fail "affinity: 20 connections of one client did not all reach one endpoint: $s"
first=${s%% *}
# the timeout: a client that waits longer than timeoutSeconds is chosen at random again (each
# connection re-arms the affinity, so probe once per timeout until the other endpoint answers)
seen=""
for round in $(seq 10); do
	sleep 3.5
	r=$(in_pod 3 tcp 10.96.0.16 80)
	r=${r%% *}
	[ "$r" = p1 ] || [ "$r" = p2 ] || { check_fail "affinity: a connection after the timeout failed: $r"; break; }
	[ "$r" != "$first" ] && { seen=$r; break; }
done
info "  after the timeout: $first -> ${seen:-$first only} (round $round)"
[ -n "$seen" ] || check_fail "affinity: still on $first after 10 timeouts"
# and without affinity, the same client spreads
service aff "{$AFF_SPEC}"
wait_for 10 sh -c "! ip netns exec $(node_ns 3) nft list sets inet | grep -q 'svc-shop/aff/'" ||
	check_fail "node3 kept the affinity sets of shop/aff"
s=$(spread 20 in_pod 3 tcp 10.96.0.16 80)
info "  p3 -> 10.96.0.16:80 x20 without affinity: $s"
[[ $s =~ ^p1\ [0-9]+,\ p2\ [0-9]+$ ]] || check_fail "no affinity: one client did not reach both endpoints: $s"

# chosen_lacks NODE CHAIN ADDR: a shell test that the Service chain chooses some endpoint, not ADDR
# (service/chosen.py reads the choice from the kernel's table, whatever shape it has)
chosen_lacks() {
	printf '%s' "out=\$(ip netns exec $(node_ns "$1") nft -j list table inet weft | python3 $TOP/test/netns/service/chosen.py $2) && [ -n \"\$out\" ] && ! printf '%s\\n' \"\$out\" | grep_q '^$3 '"
}

case_ "endpoint churn under a running client"
in_pod 3 loop 10.96.0.10 80 6 >"$T/loop" &
LOOP=$!
sleep 2
slice web-2 web "" "$WEB_PORTS"
wait_for 5 sh -c "$(chosen_lacks 3 svc-shop/web/tcp/80/ip4 "$P2")" ||
	fail "node3 did not drop the removed endpoint"
synced=$(python3 -c 'import time; print(f"{time.monotonic():.4f}")')
wait "$LOOP"
total=$(wc -l <"$T/loop")
before=$(awk -v t="$synced" '$1 < t && $2 == "p2"' "$T/loop" | wc -l)
after=$(awk -v t="$synced" '$1 >= t && $2 == "p2"' "$T/loop" | wc -l)
failed=$(awk '$2 != "p1" && $2 != "p2"' "$T/loop" | wc -l)
info "  $total connections; to p2 before the sync: $before, after: $after; failed: $failed"
[ "$before" -gt 0 ] || check_fail "churn: the client never reached p2 before the change"
assert_eq "$after" 0 "churn: connections to the removed endpoint after the sync"
assert_eq "$failed" 0 "churn: failed connections"

case_ "UDP conntrack: a flow keeping its source port moves off a removed endpoint within one sync"
# 8 s: the sync may take seconds on a busy machine, and the flow must run on after it
in_pod 3 uloop 10.96.0.15 53 8 >"$T/uloop" &
LOOP=$!
sleep 1.5
slice dns-1 dns "$(endpoint "$P2" node2)" '{"port":5353,"protocol":"UDP"}'
wait_for 5 sh -c "$(chosen_lacks 3 svc-shop/dns/udp/53/ip4 "$P1")" ||
	fail "node3 did not drop the removed UDP endpoint"
synced=$(python3 -c 'import time; print(f"{time.monotonic():.4f}")')
wait "$LOOP"
before=$(awk -v t="$synced" '$1 < t && $2 == "p1"' "$T/uloop" | wc -l)
late=$(awk -v t="$synced" '$1 >= t + 0.5 && $2 == "p1"' "$T/uloop" | wc -l)
moved=$(awk -v t="$synced" '$1 >= t && $2 == "p2"' "$T/uloop" | wc -l)
info "  datagrams answered by p1 before the sync: $before, by p1 0.5 s after it: $late, by p2 after it: $moved"
[ "$before" -gt 0 ] || check_fail "UDP flow never reached p1"
assert_eq "$late" 0 "UDP flow still on the removed endpoint (stale conntrack entry)"
[ "$moved" -gt 0 ] || check_fail "UDP flow did not move to p2"

case_ "restart: the full sync removes what was deleted meanwhile and keeps the rest"
weftd_stop 3
del services/shop/solo
weftd_start 3 --objects-datastore etcd --relist-interval 0 --service-external-ip-cidrs 192.0.2.0/24
weftd_wait_ready 3
wait_for 10 sh -c "! ip netns exec $(node_ns 3) nft list chains inet | grep -q 'svc-shop/solo/'" ||
	check_fail "node3 kept the chains of a Service deleted while it was down"
r=$(in_pod 3 tcp 10.96.0.10 80)
[[ $r =~ ^p1\  ]] || check_fail "after restart: $r"

case_ "weftd uninstall removes every svc-* chain, map and set"
weftd_stop 3
n=$(ip netns exec "$(node_ns 3)" nft -j list table inet weft | jq '[.nftables[] | (.chain // .map // .set) | select(. != null and (.name | startswith("svc-")))] | length')
weftd_cmd 3 uninstall >"$T/uninstall.log" 2>&1 || check_fail "weftd uninstall failed: $(cat "$T/uninstall.log")"
m=$(ip netns exec "$(node_ns 3)" nft -j list table inet weft 2>/dev/null | jq '[.nftables[] | (.chain // .map // .set) | select(. != null and (.name | startswith("svc-")))] | length')
info "  svc-* objects: $n before, ${m:-0} after"
[ "$n" -gt 0 ] || check_fail "no svc-* objects before uninstall"
[ "${m:-0}" = 0 ] || check_fail "weftd uninstall left ${m} svc-* objects"

for i in 1 2 3; do
	[ "$i" = 3 ] && continue # uninstalled
	http_get "$i" /metrics >/dev/null
	info "node $i: $(grep -E '^weft_service(s|_syncs_total|_sync_failures_total|_last_full_sync_seconds|_max_sync_seconds) ' <<<"$HTTP_BODY" | tr '\n' ' ')"
	[ "$(awk '$1 == "weft_service_sync_failures_total" { print $2 }' <<<"$HTTP_BODY")" = 0 ] || check_fail "node $i: failed Service syncs"
done
info "$N_CASES cases, backend $BACKEND"
finish
