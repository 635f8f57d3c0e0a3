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

lb_config() {
	etcdctl_ put "$ETCD_PREFIX/config" "$(cluster_config_json | jq -c --argjson p "$1" '. + {LoadBalancer: {Pools: $p}}')" >/dev/null
}
lb_put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
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
lb_ingress() { etcdctl_ get --print-value-only "$ETCD_PREFIX/objects/services/shop/$1" | jq -r '[.status.loadBalancer.ingress[]?.ip] | join(",")'; }
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
