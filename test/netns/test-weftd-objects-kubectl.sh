#!/usr/bin/env bash
# shellcheck disable=SC2317 # helper functions below are called through wait_for
# weft-test: no-san (kubectl against the fixture for a minute; the sanitizer pass takes the same Kubernetes object source and cache in test-weftd-objects-kube and -kube-hostile)
# kubectl (v1.32, a client nobody here wrote) writes the cluster's objects into the fake API server
# while weftd caches them: after every step, for every kind weft caches, what `kubectl get KIND -A`
# lists, what a `kubectl get --watch` that ran all along adds up to, and what weftd's
# /debug/objects?kind=KIND holds must be the same (the fields weft keeps, normalised by one jq model
# applied to all three).
#
#   kubectl (https, bearer token) --+
#                                   +--> fake-apiserver 10.99.0.2:6443 (test/kube/fake-apiserver.py)
#   node1: weftd --datastore kubernetes (leases and objects; the kubeconfig loaded once) --+
#
# Steps: kubectl apply -f test/kube/objects/cluster.yaml; pod IPs through pods/status (kubectl patch
# --subresource=status, as the kubelet would); label, strategic/JSON/merge patches, deletes and a new
# pod (each kind's cache from before them must differ: the comparison can fail); kubectl delete -f.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/kube-fixture-lib.sh"

require_root
require_cmd ip jq curl python3 kubectl openssl # client-go sends a bearer token only over TLS
require_built "$WEFTD"

OBJECTS=$TOP/test/kube/objects
API_IP=$ETCD_IP
API_URL=https://$API_IP:6443
TOKEN=weft-kubectl-token
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json
KINDS="namespaces pods networkpolicies services endpointslices"

cluster_init 1 host-gw --no-etcd

fixture_start_ns "$ETCD_NS" "$API_IP" "$TOKEN" --node node1=10.244.1.0/24 --namespace-deletion-delay 0.2
cluster_config_json >"$NET_CONF"

# k ARGS...: kubectl from the API server's namespace (the underlay is not reachable from the host)
k() {
	ip netns exec "$ETCD_NS" kubectl --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$T/kcache" \
		--request-timeout="${KTIMEOUT:-10s}" "$@"
}
stats() { ip netns exec "$ETCD_NS" curl -s -m 3 --cacert "$T/apiserver.crt" -H "Authorization: Bearer $TOKEN" "$API_URL/fixture/stats"; }

weftd_start 1 --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF" --relist-interval 0
weftd_wait_ready 1
all_synced() {
	http_get 1 /debug/objects && [ "$(jq '[.kinds[].synced] | all' <<<"$HTTP_BODY")" = true ]
}
wait_for 10 all_synced || fail "weftd's object cache never synced: $HTTP_BODY"
# leases and objects both from Kubernetes: one load (the datastore's), the object cache copies it
assert_eq "$(grep -c "Loaded kubeconfig $KUBECONFIG_FILE\$" "$(node_dir 1)/weftd.log")" 1 "kubeconfig loads"

# ---- the model: one object as the fields weft keeps, from an API object or from weftd's dump.
# Selectors become matchExpressions (matchLabels k: v is k In (v), as weft stores them); defaults the
# API server leaves out are filled in as Kubernetes defines them.
# shellcheck disable=SC2016 # jq's $variables, not the shell's
MODEL='
def or_default($d): if . == null then $d else . end; # (jq: false // $d is $d)
def sel: if . == null then null else
  [(.matchLabels // {} | to_entries[] | {key: .key, operator: "In", values: [.value]}),
   (.matchExpressions // [] | .[] | {key, operator, values: ((.values // []) | sort)})] | sort end;
def ports: map({protocol: (.protocol // "TCP"), port: (.port // null), endPort: (.endPort // null)});
def peers: map({ipBlock: (if .ipBlock then {cidr: .ipBlock.cidr, except: (.ipBlock.except // [])} else null end),
  podSelector: (.podSelector | sel), namespaceSelector: (.namespaceSelector | sel)});
def meta: {ns: (.metadata.namespace // ""), name: .metadata.name, labels: (.metadata.labels // {})};
def norm($kind):
  meta + if $kind == "pods" then
    {uid: .metadata.uid, node: (.spec.nodeName // null), hostNetwork: (.spec.hostNetwork | or_default(false)),
     phase: (.status.phase // "Pending"), ips: [.status.podIPs[]?.ip],
     ports: ([.spec.containers[]?.ports[]? | {name: (.name // null), port: .containerPort, protocol: (.protocol // "TCP")}] | sort)}
  elif $kind == "networkpolicies" then
    {podSelector: (.spec.podSelector | sel), policyTypes: ((.spec.policyTypes // []) | sort),
     ingress: [.spec.ingress[]? | {from: ((.from // []) | peers), ports: ((.ports // []) | ports)}],
     egress: [.spec.egress[]? | {to: ((.to // []) | peers), ports: ((.ports // []) | ports)}]}
  elif $kind == "services" then
    {type: (.spec.type // "ClusterIP"),
     clusterIPs: (.spec.clusterIPs // (if .spec.clusterIP then [.spec.clusterIP] else [] end)),
     ports: [.spec.ports[]? | {name: (.name // null), protocol: (.protocol // "TCP"), port,
       targetPort: (.targetPort // .port), nodePort: (.nodePort // null)}],
     externalIPs: (.spec.externalIPs // []), sessionAffinity: (.spec.sessionAffinity // "None"),
     lb: [.status.loadBalancer.ingress[]?.ip]}
  elif $kind == "endpointslices" then
    {addressType, ports: [.ports[]? | {name: (.name // null), port: (.port // null), protocol: (.protocol // "TCP")}],
     endpoints: [.endpoints[]? | {addresses, nodeName: (.nodeName // null), ready: (.conditions.ready | or_default(true)),
       serving: (.conditions.serving | or_default(true)), terminating: (.conditions.terminating | or_default(false))}]}
  else {} end;
'
# model KIND < LIST-JSON: the list's items through the model, sorted by namespace/name, one per line
model() { jq -c --arg kind "$1" "$MODEL"'[.items[] | norm($kind)] | sort_by(.ns, .name) | .[]'; }
from_kubectl() { k get "$1" -A -o json | model "$1"; }
from_weftd() {
	http_get 1 "/debug/objects?kind=$1"
	[ "$HTTP_CODE" = 200 ] || return 1
	model "$1" <<<"$HTTP_BODY"
}
# from_watch KIND: the state kubectl's watch of KIND adds up to (ADDED/MODIFIED set, DELETED removes)
from_watch() {
	jq -s '{items: (reduce .[] as $e ({}; "\($e.object.metadata.namespace // "")/\($e.object.metadata.name)" as $key
		| if $e.type == "DELETED" then del(.[$key]) else .[$key] = $e.object end) | [.[]])}' "$T/w-$1" | model "$1"
}
# same KIND: kubectl's list = weftd's cache (and = kubectl's watch, when WATCHED)
same() {
	local a b c
	a=$(from_kubectl "$1") && b=$(from_weftd "$1") || return 1
	[ "$a" = "$b" ] || return 1
	[ -z "${WATCHED:-}" ] && return 0
	c=$(from_watch "$1") && [ "$a" = "$c" ]
}
# converge WHAT: every kind the same within 10 s, else the diffs
converge() {
	local kind n
	for kind in $KINDS; do
		if ! wait_for 10 same "$kind"; then
			echo "# $kind: kubectl get (<) vs weftd /debug/objects (>):" >&2
			diff <(from_kubectl "$kind") <(from_weftd "$kind") | head -20 >&2 || true
			if [ -n "${WATCHED:-}" ]; then
				echo "# $kind: kubectl get (<) vs kubectl get --watch (>):" >&2
				diff <(from_kubectl "$kind") <(from_watch "$kind") | head -20 >&2 || true
			fi
			check_fail "$1: $kind differ"
			continue
		fi
		n=$(from_kubectl "$kind" | wc -l)
		[ "$n" -gt 0 ] || check_fail "$1: no $kind listed (the model would compare nothing)"
	done
	info "$1: kubectl = weftd${WATCHED:+ = kubectl --watch} for $KINDS"
}

# ---- kubectl get --watch of every kind, all along
watches0=$(stats | jq .watches)
for kind in $KINDS; do
	KTIMEOUT=300s k get "$kind" -A --watch --output-watch-events -o json >"$T/w-$kind" 2>"$T/w-$kind.err" &
	on_exit "kill $! 2>/dev/null"
done
watches_open() { [ "$(stats | jq .watches)" -ge $((watches0 + 5)) ]; }
wait_for 10 watches_open || fail "kubectl watches did not open: $(cat "$T"/w-*.err)"
WATCHED=1

# ---- apply, then the kubelet's part: pod IPs through pods/status
k apply -f "$OBJECTS/cluster.yaml" >"$T/apply.out" 2>&1 || fail "kubectl apply: $(cat "$T/apply.out")"
while read -r ns name ips; do
	[[ $ns == \#* || -z $ns ]] && continue
	k get pod "$name" -n "$ns" >/dev/null 2>&1 || continue # (weftd's own pod is not in cluster.yaml)
	k patch pod "$name" -n "$ns" --subresource=status --type merge \
		-p "$(jq -cn --arg ips "$ips" '{status: {phase: "Running", podIPs: [$ips | split(" ")[] | {ip: .}]}}')" \
		>/dev/null || check_fail "kubectl patch pods/status of $ns/$name"
done <"$OBJECTS/pod-ips.txt"
converge "cluster.yaml applied, pod IPs set"

# ---- changes of every kind (weftd's cache before them: a stale cache the comparison must tell apart)
for kind in $KINDS; do from_weftd "$kind" >"$T/before-$kind"; done
k label pod web-1 -n shop canary=true >/dev/null || check_fail "kubectl label pod"
k label pod web-2 -n shop app=web-old --overwrite >/dev/null || check_fail "kubectl label --overwrite"
k label namespace tools team=tools --overwrite >/dev/null || check_fail "kubectl label namespace"
k patch service web -n shop -p '{"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}' >/dev/null ||
	check_fail "kubectl patch service (strategic merge)"
k patch networkpolicy web-allow -n shop --type json \
	-p '[{"op": "replace", "path": "/spec/podSelector/matchLabels/app", "value": "web-v2"}]' >/dev/null ||
	check_fail "kubectl patch networkpolicy (JSON patch)"
k patch endpointslice web-abc12 -n shop --type merge \
	-p '{"endpoints": [{"addresses": ["10.244.1.10"], "conditions": {"ready": false, "terminating": true}, "nodeName": "node1"}]}' \
	>/dev/null || check_fail "kubectl patch endpointslice (merge patch)"
k delete pod db-0 -n shop >/dev/null || check_fail "kubectl delete pod"
k delete service upstream -n shop >/dev/null || check_fail "kubectl delete service"
k delete networkpolicy default-deny -n shop >/dev/null || check_fail "kubectl delete networkpolicy"
k delete endpointslice db-xyz89 -n shop >/dev/null || check_fail "kubectl delete endpointslice"
k apply -f - >/dev/null <<EOF || check_fail "kubectl apply of a new pod"
apiVersion: v1
kind: Pod
metadata: {name: late, namespace: shop, labels: {app: late}}
spec: {nodeName: node1, containers: [{name: c, image: busybox:1.36, ports: [{name: web, containerPort: 8080, protocol: UDP}]}]}
EOF
k patch pod late -n shop --subresource=status --type merge -p '{"status": {"podIPs": [{"ip": "10.244.1.20"}]}}' >/dev/null ||
	check_fail "kubectl patch pods/status of the new pod"
converge "labels, patches, deletes, a new pod"
# the changes are really there (the model did not normalise them away)
assert_eq "$(from_weftd pods | jq -r 'select(.name == "web-1") | .labels.canary')" true "web-1's new label in weftd's cache"
assert_eq "$(from_weftd services | jq -c 'select(.name == "web") | [.ports[] | [.port, .targetPort]]')" '[[80,"http"],[443,8443]]' \
	"web's ports in weftd's cache"
assert_eq "$(from_weftd endpointslices | jq -c 'select(.name == "web-abc12") | .endpoints[0] | [.ready, .terminating]')" \
	'[false,true]' "web-abc12's conditions in weftd's cache"

# every kind changed in a field the model keeps: a cache that missed the changes would differ
for kind in $KINDS; do
	[ "$(from_kubectl "$kind")" != "$(cat "$T/before-$kind")" ] ||
		check_fail "$kind: the model does not see the changes (a stale cache would pass)"
done

# ---- kubectl delete -f: everything the YAML made is gone from weftd too
k delete -f "$OBJECTS/cluster.yaml" --ignore-not-found --wait=true >"$T/delete.out" 2>&1 ||
	check_fail "kubectl delete -f: $(cat "$T/delete.out")"
gone() { [ "$(k get namespaces -o name | grep -c 'namespace/\(shop\|tools\)$')" = 0 ]; }
wait_for 10 gone || check_fail "namespaces shop and tools not deleted"
for kind in $KINDS; do
	wait_for 10 same "$kind" || check_fail "kubectl delete -f: $kind differ"
	assert_eq "$(from_weftd "$kind" | jq -r 'select(.ns == "shop" or .ns == "tools" or .name == "shop" or .name == "tools") | .name')" "" \
		"$kind of cluster.yaml left in weftd after kubectl delete -f"
done
info "kubectl delete -f cluster.yaml: kubectl = weftd = kubectl --watch for $KINDS"

weftd_alive 1 || fail "weftd exited"
finish
