# shellcheck shell=bash
# LoadBalancer Services in etcd mode, for the announcement tests (test-weftd-lb-*.sh). Source after
# weft-cluster-lib.sh. Objects live in namespace "shop"; pods are weft-cluster-lib.sh's (pod_ip I).
#
#   lb_config JSON-POOLS          the cluster's network config with a LoadBalancer section
#   lb_put RESOURCE/NS/NAME JSON  an object under <prefix>/objects/
#   lb_service NAME CLUSTER-IP ETP       a LoadBalancer Service on port 80 (target 8080)
#   lb_slice NAME SERVICE READY NODE...  its EndpointSlice: node I's pod, ready true|false
#   lb_ingress NAME               the ingress IPs status holds ("" if none)
#   weftd_metric I FAMILY         a sample's value from node I's /metrics
#   lb_servers NODE...            a pod on each node running svc.py's server named pI (killed on exit)
#   lb_use_kube API-FN            Kubernetes mode: lb_put and lb_ingress go to the fake API server
#                                 through API-FN METHOD PATH [CURL ARGS...] (objects by /fixture/apply)
# L2, probed from the outside host ($OUT_NS, $OUTSIDE_IP; route the pool there first):
#   mac_of I                      node I's underlay MAC
#   answers IP                    the MACs that answer an ARP request for IP on the segment
#   owners I...                   those of nodes I... whose metric says they announce an address in L2
#   out_neigh                     the outside host's neighbour entry for 192.0.2.1 (its MAC)

lb_config() {
	etcdctl_ put "$ETCD_PREFIX/config" "$(cluster_config_json | jq -c --argjson p "$1" '. + {LoadBalancer: {Pools: $p}}')" >/dev/null
}
lb_put() {
	if [ -n "${LB_KUBE_API:-}" ]; then
		"$LB_KUBE_API" POST /fixture/apply -d "$2" >/dev/null
		return
	fi
	etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null
}
lb_use_kube() { LB_KUBE_API=$1; }
lb_service() {
	lb_put "services/shop/$1" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"},\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"$2\",\"externalTrafficPolicy\":\"$3\",\"ports\":[{\"port\":80,\"targetPort\":8080}]}}"
}
lb_slice() {
	local eps="" n
	for n in "${@:4}"; do
		eps+="${eps:+,}{\"addresses\":[\"$(pod_ip "$n")\"],\"nodeName\":\"node$n\",\"conditions\":{\"ready\":$3}}"
	done
	lb_put "endpointslices/shop/$1" "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\",\"labels\":{\"kubernetes.io/service-name\":\"$2\"}},\"addressType\":\"IPv4\",\"endpoints\":[$eps],\"ports\":[{\"port\":8080}]}"
}
lb_ingress() {
	if [ -n "${LB_KUBE_API:-}" ]; then
		"$LB_KUBE_API" GET "/api/v1/namespaces/shop/services/$1" | jq -r '[.status.loadBalancer.ingress[]?.ip] | join(",")'
		return
	fi
	etcdctl_ get --print-value-only "$ETCD_PREFIX/objects/services/shop/$1" | jq -r '[.status.loadBalancer.ingress[]?.ip] | join(",")'; }
weftd_metric() { http_get "$1" /metrics; awk -v m="$2" '$1 == m { print $2 }' <<<"$HTTP_BODY"; }

declare -a LB_SERVER=()
lb_servers() {
	local i
	for i in "$@"; do
		pod_create "$i"
		ip netns exec "$(pod_ns "$i")" python3 "$TOP/test/netns/service/svc.py" serve "p$i" >"$T/serve.$i" 2>&1 &
		LB_SERVER[i]=$!
	done
	on_exit lb_servers_kill
	for i in "$@"; do wait_for 30 grep -q ready "$T/serve.$i" || fail "server $i did not start"; done
}
lb_servers_kill() { kill "${LB_SERVER[@]}" 2>/dev/null; return 0; }

LB_PROBE=$TOP/test/netns/service/arp-probe.py
mac_of() { ip -n "$(node_ns "$1")" -j link show eth0 | jq -r '.[0].address'; }
answers() { ip netns exec "$OUT_NS" python3 "$LB_PROBE" eth0 "$OUTSIDE_IP" "$1" 0.5 | tr '\n' ' ' | sed 's/ $//'; }
owners() {
	local i v
	for i in "$@"; do
		weftd_alive "$i" || continue
		v=$(weftd_metric "$i" 'weft_loadbalancer_announcements{mode="l2"}')
		[ "${v:-0}" -ge 1 ] && echo "$i"
	done
	return 0
}
out_neigh() { ip -n "$OUT_NS" -j neigh show 192.0.2.1 | jq -r '.[0].lladdr // empty'; }
