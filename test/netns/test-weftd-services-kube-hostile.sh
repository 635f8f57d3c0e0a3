#!/usr/bin/env bash
# weft-test: serial
# Issue 17, items 1 and 2 in Kubernetes mode, through the fake API server: only what kube-apiserver
# would accept from a user who may create Services in a namespace. weftd --datastore kubernetes
# (leases and objects from the API server at 10.99.0.2:6443).
#
#   underlay 10.99.0.0/24 -- fake-apiserver 10.99.0.2:6443 (in the etcd namespace)
#                         -- node1 (pod p1: server "p1")
#                         -- node2 (pod p2: the attacker's pod, server "evil")
#                         -- outside 10.99.0.200
#
# 1. attacker/api-grab: externalIPs [the API server] port 6443 -> the attacker's pod: never
#    programmed (even with the underlay in --service-external-ip-cidrs), the API server still
#    answers nodes and pods, weftd stays healthy and keeps applying Service changes.
#    attacker/api-ep: an EndpointSlice pointing at the API server: that endpoint is refused, while
#    default/kubernetes, whose endpoints ARE the API server, works from a pod.
# 2. Two Services with the same externalIP:port: the older creationTimestamp wins although its
#    name sorts last; when it goes, the other takes over.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

require_root
require_cmd ip jq curl python3 nft
require_built "$WEFTD"

FIXTURE=$TOP/test/kube/fake-apiserver.py
SVC=$TOP/test/netns/service/svc.py
API_IP=$ETCD_IP
API_URL=http://$API_IP:6443
TOKEN=weft-svc-hostile-token
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json

cluster_init 2 host-gw --no-etcd
ip netns exec "$ETCD_NS" python3 "$FIXTURE" --bind "$API_IP" --port 6443 --token "$TOKEN" \
	--node node1=10.244.1.0/24 --node node2=10.244.2.0/24 >>"$T/fixture.log" 2>&1 &
FIXTURE_PID=$!
on_exit "kill $FIXTURE_PID 2>/dev/null; wait $FIXTURE_PID 2>/dev/null"
wait_listen "$ETCD_NS" 6443 || { cat "$T/fixture.log" >&2; fail "fake-apiserver did not come up"; }
api() { # api METHOD PATH [CURL ARGS...]
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -s -m 5 -X "$m" -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' "$@" "$API_URL$p"
}
cluster_kubeconfig "$KUBECONFIG_FILE" "$API_URL" "$TOKEN"
cluster_config_json >"$NET_CONF"

for ns in victim attacker; do
	api POST /api/v1/namespaces -d "{\"metadata\":{\"name\":\"$ns\"}}" >/dev/null
done
for i in 1 2; do
	weftd_start "$i" --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF" \
		--relist-interval 0 --service-cluster-ip-range 10.96.0.0/16 \
		--service-external-ip-cidrs "192.0.2.0/24,$CLUSTER_UNDERLAY.0/24"
done
weftd_wait_ready 1 2
for i in 1 2; do pod_create "$i"; done
P1=$(pod_ip 1) P2=$(pod_ip 2) N1=$(node_ip 1)
SERVERS=()
kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_servers
ip netns exec "$(pod_ns 1)" python3 "$SVC" serve p1 >"$T/serve.1" 2>&1 &
SERVERS+=($!)
ip netns exec "$(pod_ns 2)" python3 "$SVC" serve evil >"$T/serve.2" 2>&1 &
SERVERS+=($!)
for i in 1 2; do wait_for 30 grep -q ready "$T/serve.$i" || fail "server $i did not start"; done
ip -n "$OUT_NS" route add 192.0.2.0/24 via "$N1"

# service NS NAME SPEC-JSON
service() { api POST "/api/v1/namespaces/$1/services" -d "{\"metadata\":{\"name\":\"$2\"},\"spec\":$3}" >/dev/null; }
# backend NS SERVICE IP PORT: one ready endpoint
backend() {
	api POST "/apis/discovery.k8s.io/v1/namespaces/$1/endpointslices" -d "{\"metadata\":{\"name\":\"$2-1\",\"labels\":{\"kubernetes.io/service-name\":\"$2\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"$3\"],\"conditions\":{\"ready\":true}}],\"ports\":[{\"port\":$4}]}" >/dev/null
}
map_of() { ip netns exec "$(node_ns "$1")" nft list map inet weft "$2" 2>/dev/null; }
metric() {
	http_get "$1" /metrics >/dev/null
	awk -v k="$2" '$1 == k { v = $2 } END { print v + 0 }' <<<"$HTTP_BODY"
}
api_ok() { ip netns exec "$1" curl -s -m 3 "$2/version" | grep_q '"gitVersion"'; }
outside() { ip netns exec "$OUT_NS" python3 "$SVC" "$@"; }
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }

# default/kubernetes as the API server has it: its endpoint is the API server itself
service default kubernetes '{"clusterIP":"10.96.0.1","ports":[{"name":"https","port":443,"targetPort":6443}]}'
api POST /apis/discovery.k8s.io/v1/namespaces/default/endpointslices -d "{\"metadata\":{\"name\":\"kubernetes\",\"labels\":{\"kubernetes.io/service-name\":\"kubernetes\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"$API_IP\"],\"conditions\":{\"ready\":true}}],\"ports\":[{\"name\":\"https\",\"port\":6443}]}" >/dev/null
service attacker api-grab "{\"clusterIP\":\"10.96.5.1\",\"externalIPs\":[\"$API_IP\"],\"ports\":[{\"port\":6443,\"targetPort\":8080}]}"
backend attacker api-grab "$P2" 8080
service attacker api-ep '{"clusterIP":"10.96.5.2","ports":[{"port":80,"targetPort":6443}]}'
backend attacker api-ep "$API_IP" 6443
# 2: the older one (by creationTimestamp: whole seconds) has the name that sorts last
service victim zz-old '{"clusterIP":"10.96.5.10","externalIPs":["192.0.2.10"],"ports":[{"port":80,"targetPort":8080}]}'
backend victim zz-old "$P1" 8080
sleep 1.5
service attacker aa-new '{"clusterIP":"10.96.5.11","externalIPs":["192.0.2.10"],"ports":[{"port":80,"targetPort":8080}]}'
backend attacker aa-new "$P2" 8080
for i in 1 2; do
	wait_for 15 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-ips4 | grep -q '10.96.5.11 . tcp . 80'" ||
		fail "node$i: Services not programmed: $(tail -5 "$(node_dir "$i")/weftd.log")"
done

case_ "1: externalIP = the API server: not programmed, the API server still answers, weftd healthy"
for i in 1 2; do
	if map_of "$i" svc-ips4 | grep_q -F "$API_IP . tcp . 6443"; then check_fail "node$i programmed the API server's address"; fi
	api_ok "$(node_ns "$i")" "$API_URL" || check_fail "node$i: the API server's address answers from someone else"
	[ "$(metric "$i" 'weft_service_rejected_total{reason="infrastructure"}')" -ge 2 ] ||
		check_fail "node$i: infrastructure refusals not counted"
	http_get "$i" /healthz
	assert_eq "$HTTP_CODE" 200 "node$i /healthz"
done
api_ok "$(pod_ns 1)" "$API_URL" || check_fail "pod p1: the API server's address answers from someone else"
r=$(ip netns exec "$(pod_ns 1)" python3 "$SVC" tcp 10.96.5.1 6443)
info "  p1 -> api-grab's clusterIP: $r"
[[ $r =~ ^evil\  ]] || check_fail "the rest of attacker/api-grab does not work: $r"

case_ "1: an endpoint at the API server: refused for attacker/api-ep, kept for default/kubernetes"
for i in 1 2; do
	wait_for 10 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-noep4 | grep -qF '10.96.5.2 . tcp . 80'" ||
		check_fail "node$i: attacker/api-ep still has its API-server endpoint: $(map_of "$i" svc-ips4 | grep -F 10.96.5.2) $(grep -F api-ep "$(node_dir "$i")/weftd.log")"
done
api_ok "$(pod_ns 1)" "http://10.96.0.1:443" || check_fail "pod p1 cannot reach the API through default/kubernetes"

case_ "2: the same externalIP:port: the older creationTimestamp wins, not the smaller name"
r=$(outside tcp 192.0.2.10 80)
info "  outside -> 192.0.2.10:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "externalIP conflict: $r"
for i in 1 2; do
	[ "$(metric "$i" 'weft_service_rejected_total{reason="conflict"}')" -ge 1 ] || check_fail "node$i: conflict not counted"
done
grep -q 'attacker/aa-new: externalIP 192.0.2.10 TCP/80 refused: conflict' "$(node_dir 1)/weftd.log" ||
	check_fail "node1 did not log the lost conflict"

case_ "2: a Service change is applied during the conflict"
service victim later '{"clusterIP":"10.96.5.20","ports":[{"port":80,"targetPort":8080}]}'
backend victim later "$P1" 8080
wait_for 30 bash -c "[[ \$(ip netns exec $(pod_ns 2) python3 $SVC tcp 10.96.5.20 80) =~ ^p1\  ]]" ||
	check_fail "a new Service is not programmed during a conflict"

case_ "2: the older one goes: the other takes over on every node"
api DELETE /api/v1/namespaces/victim/services/zz-old >/dev/null
for i in 1 2; do
	wait_for 10 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-ips4 | grep -qE '192.0.2.10 . tcp . 80 : goto \"?svc-attacker/aa-new/'" ||
		check_fail "node$i: attacker/aa-new did not take over"
done
r=$(outside tcp 192.0.2.10 80)
info "  outside -> 192.0.2.10:80 after victim/zz-old is gone: $r"
[[ $r =~ ^evil\  ]] || check_fail "the remaining Service does not hold the address: $r"

for i in 1 2; do
	[ "$(metric "$i" weft_service_sync_failures_total)" = 0 ] || check_fail "node$i: failed Service syncs"
done
info "$N_CASES cases"
finish
