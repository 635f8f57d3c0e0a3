#!/usr/bin/env bash
# kubectl (v1.32, a client nobody here wrote) against test/kube/fake-apiserver.py, for every kind
# weft caches: if kubectl can discover, apply, get, select, patch, watch and delete through the
# fixture, the fixture speaks the real wire format and weft's client tests mean something.
#
#   kubectl --kubeconfig (https, bearer token) ---> fake-apiserver 127.0.0.1:<free port>
#   curl (as the kubelet: pods/status; raw watches) ---^
#
# Objects: test/kube/objects/cluster.yaml (Namespaces, Pods, NetworkPolicies, Services of every type,
# EndpointSlices). What was applied is compared with what comes back by a small jq model
# (subset match; expected selections computed from the YAML, not written down). Watches run in the
# background during the changes and must show each change as ADDED/MODIFIED/DELETED, filtered by
# their selectors; a compaction must show kubectl and a raw watch a 410 Expired.
. "$(dirname "$0")/../lib/lib.sh"
# shellcheck source=../lib/kube-fixture-lib.sh
. "$TOP/test/lib/kube-fixture-lib.sh"
require_cmd kubectl python3 jq curl

# a deleted Namespace stays Terminating for 15 s: long enough to try creating in it, even when each
# kubectl call takes seconds on a busy machine
fixture_start --node node1=10.244.1.0/24 --node node2=10.244.2.0/24 --namespace-deletion-delay 15
[ -n "$FIXTURE_TOKEN" ] || info "no openssl: plain http, no token"
# (a request timeout also ends a watch: the background watches get a longer one)
k() { kubectl --kubeconfig "$FIXTURE_KUBECONFIG" --cache-dir "$T/kcache" --request-timeout="${KTIMEOUT:-10s}" "$@"; }
YAML=$FIXTURE_OBJECTS/cluster.yaml

# ---- discovery: the server's version and every kind with its names, scope and short names
k version -o json >"$T/version.json" 2>"$T/version.err" || check_fail "kubectl version: $(cat "$T/version.err")"
assert_eq "$(jq -r .serverVersion.gitVersion "$T/version.json")" v1.32.0-fake "server version"
k api-resources --no-headers -o wide >"$T/api-resources" || fail "kubectl api-resources failed"
for want in "namespaces ns v1 false Namespace" "nodes no v1 false Node" "pods po v1 true Pod" \
	"services svc v1 true Service" "networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy" \
	"endpointslices discovery.k8s.io/v1 true EndpointSlice"; do
	sed 's/ *create,delete.*//' "$T/api-resources" | tr -s ' ' | grep_q -x "$want" ||
		check_fail "api-resources lacks '$want': $(cat "$T/api-resources")"
done
grep -q "create,delete,deletecollection,get,list,patch,update,watch" "$T/api-resources" ||
	check_fail "api-resources -o wide shows no verbs"

# ---- apply: every document created, then a second apply changes nothing that matters
# The applied documents as JSON, converted by kubectl itself (client dry run: nothing is sent).
k apply --dry-run=client -f "$YAML" -o json | jq -c '[.items[]? // .] | map(del(.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]))' >"$T/applied.json"
ndocs=$(jq length "$T/applied.json")
((ndocs >= 15)) || fail "only $ndocs documents in $YAML"
k apply -f "$YAML" >"$T/apply1" 2>&1 || fail "kubectl apply: $(cat "$T/apply1")"
assert_eq "$(grep -c ' created$' "$T/apply1")" "$ndocs" "objects created by kubectl apply"
k apply -f "$YAML" >"$T/apply2" 2>&1 || fail "second kubectl apply: $(cat "$T/apply2")"
grep -q ' created$' "$T/apply2" && check_fail "second apply created objects again: $(cat "$T/apply2")"
assert_eq "$(grep -c ' unchanged$\| configured$' "$T/apply2")" "$ndocs" "objects unchanged/configured by the second apply"

# covered(applied; live): every field that was applied is in the live object with the same value
# (lists element by element), whatever the server added.
# shellcheck disable=SC2016 # jq's $variables, not the shell's
JQ_MODEL='
def covered($a; $b):
  if ($a|type) == "object" then ($b|type) == "object" and all($a|keys[]; . as $k | covered($a[$k]; $b[$k]))
  elif ($a|type) == "array" then ($b|type) == "array" and ($a|length) == ($b|length) and
    all(range($a|length); . as $i | covered($a[$i]; $b[$i]))
  else $a == $b end;
def key: "\(.kind)/\(.metadata.namespace // "")/\(.metadata.name)";
'
# ---- get -A -o json per kind: everything applied is there, with what the server fills in
for kind in namespaces pods networkpolicies services endpointslices; do
	k get "$kind" -A -o json >"$T/get-$kind.json" || { check_fail "kubectl get $kind -A failed"; continue; }
done
jq -s '[.[].items[]]' "$T"/get-*.json >"$T/live.json"
# kubectl get prints items with kind and apiVersion (it fills them in from the List)
missing=$(jq -rn --slurpfile a "$T/applied.json" --slurpfile l "$T/live.json" "$JQ_MODEL"'
	($l[0] | map({key: key, value: .}) | from_entries) as $live
	| $a[0][] | select(covered(.; $live[key]) | not) | key')
[ -z "$missing" ] || check_fail "applied objects not served back as applied: $missing"
bad=$(jq -r '.[] | select((.metadata.uid | test("^[0-9a-f-]{36}$") | not)
	or (.metadata.creationTimestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$") | not)
	or (.metadata.resourceVersion | test("^[0-9]+$") | not)) | .metadata.name' "$T/live.json")
[ -z "$bad" ] || check_fail "objects without uid/creationTimestamp/resourceVersion: $bad"
assert_eq "$(jq '[.[] | .metadata.uid] | unique | length' "$T/live.json")" "$(jq length "$T/live.json")" "distinct uids"
bad=$(jq -r '.[] | select(.kind == "NetworkPolicy" or .kind == "EndpointSlice") | select(.metadata.generation != 1) | .metadata.name' "$T/live.json")
[ -z "$bad" ] || check_fail "generation is not 1 after create: $bad"
bad=$(jq -r '.[] | select(.kind == "Namespace") | select(.metadata.labels["kubernetes.io/metadata.name"] != .metadata.name or .status.phase != "Active") | .metadata.name' "$T/live.json")
[ -z "$bad" ] || check_fail "namespaces without their name label or phase: $bad"
# Services: a clusterIP for ClusterIP/NodePort/LoadBalancer, None kept, none for ExternalName;
# nodePorts kept or allocated in range for NodePort/LoadBalancer only.
bad=$(jq -r '.[] | select(.kind == "Service") | .spec as $s | select(
	if $s.type == "ExternalName" then $s.clusterIP != null
	elif $s.clusterIP == "None" then $s.type != "ClusterIP"
	else ($s.clusterIP | test("^10\\.96\\.[0-9]+\\.[0-9]+$") | not) end
	or any($s.ports[]?; if ($s.type == "NodePort" or $s.type == "LoadBalancer")
		then (.nodePort < 30000 or .nodePort > 32767) else .nodePort != null end)
	or any($s.ports[]?; .protocol != "TCP")) | .metadata.name' "$T/live.json")
[ -z "$bad" ] || check_fail "services not defaulted/allocated as the API server does: $bad"
assert_eq "$(jq '[.[] | select(.kind == "Service" and .spec.clusterIP != null and .spec.clusterIP != "None") | .spec.clusterIP] | (unique | length) == length' "$T/live.json")" true "distinct clusterIPs"
bad=$(jq -r '.[] | select(.kind == "NetworkPolicy") | select(.spec.policyTypes == null or any(.spec.ingress[]?.ports[]?; .protocol == null)) | .metadata.name' "$T/live.json")
[ -z "$bad" ] || check_fail "network policies without policyTypes or port protocols: $bad"

# ---- selections: -n, -l and --field-selector against the same selection computed from the YAML
# sel_check DESC EXPECTED-JQ-FILTER KUBECTL-GET-ARGS...: the names kubectl lists vs the applied
# documents (plus the live ones the YAML does not hold: system namespaces, nodes) the filter keeps
sel_check() {
	local desc=$1 filter=$2 got want
	shift 2
	got=$(k get "$@" -o json | jq -r '[.items[] | "\(.metadata.namespace // "")/\(.metadata.name)"] | sort | join(" ")') ||
		{ check_fail "$desc: kubectl get $* failed"; return; }
	want=$(jq -r "[.[] | select($filter) | \"\(.metadata.namespace // \"\")/\(.metadata.name)\"] | sort | join(\" \")" "$T/live.json")
	[ -n "$want" ] || check_fail "$desc: the model selects nothing (test bug)"
	assert_eq "$got" "$want" "$desc"
}
sel_check "pods -n shop" '.kind == "Pod" and .metadata.namespace == "shop"' pods -n shop
sel_check "pods -A" '.kind == "Pod"' pods -A
sel_check "pods -l app=web" '.kind == "Pod" and .metadata.labels.app == "web"' pods -A -l app=web
sel_check "pods -l 'app in (web,db),tier!=backend'" \
	'.kind == "Pod" and (.metadata.labels.app == "web" or .metadata.labels.app == "db") and .metadata.labels.tier != "backend"' \
	pods -A -l 'app in (web,db),tier!=backend'
sel_check "pods -l '!tier'" '.kind == "Pod" and (.metadata.labels | has("tier") | not)' pods -A -l '!tier'
sel_check "pods -l 'tier,version notin (v2)'" '.kind == "Pod" and (.metadata.labels | has("tier")) and .metadata.labels.version != "v2"' \
	pods -A -l 'tier,version notin (v2)'
sel_check "pods spec.nodeName=node1" '.kind == "Pod" and .spec.nodeName == "node1"' pods -A --field-selector spec.nodeName=node1
sel_check "pods spec.nodeName!=node1,metadata.namespace=shop" '.kind == "Pod" and .spec.nodeName != "node1" and .metadata.namespace == "shop"' \
	pods -A --field-selector 'spec.nodeName!=node1,metadata.namespace=shop'
sel_check "pods metadata.name=web-1" '.kind == "Pod" and .metadata.name == "web-1"' pods -A --field-selector metadata.name=web-1
sel_check "pods spec.hostNetwork=true" '.kind == "Pod" and .spec.hostNetwork == true' pods -A --field-selector spec.hostNetwork=true
sel_check "namespaces -l team=ops" '.kind == "Namespace" and .metadata.labels.team == "ops"' namespaces -l team=ops
sel_check "services spec.type=NodePort" '.kind == "Service" and .spec.type == "NodePort"' services -A --field-selector spec.type=NodePort
sel_check "endpointslices of service web" '.kind == "EndpointSlice" and .metadata.labels["kubernetes.io/service-name"] == "web"' \
	endpointslices -n shop -l kubernetes.io/service-name=web
sel_check "networkpolicies -n shop" '.kind == "NetworkPolicy" and .metadata.namespace == "shop"' networkpolicies -n shop
k get pods -A --field-selector spec.bogus=x -o json >/dev/null 2>"$T/bad-field.err" &&
	check_fail "an unsupported field selector was accepted"
grep -q "field label not supported: spec.bogus" "$T/bad-field.err" || check_fail "bad field selector error: $(cat "$T/bad-field.err")"
# chunked lists: kubectl follows continue tokens; the result is the same as one list
assert_eq "$(k get pods -A --chunk-size=2 -o name | sort | tr '\n' ' ')" "$(k get pods -A -o name | sort | tr '\n' ' ')" "chunked list"
page=$(fixture_api GET '/api/v1/pods?limit=2')
assert_eq "$(jq '.items | length' <<<"$page")" 2 "items in a limit=2 page"
assert_eq "$(jq '.metadata.remainingItemCount' <<<"$page")" "$(($(jq '[.[] | select(.kind == "Pod")] | length' "$T/live.json") - 2))" "remainingItemCount"
# the table kubectl prints by default (as=Table): one row per pod, columns from the server
k get pods -n shop >"$T/table.txt" || check_fail "kubectl get pods (table) failed"
# the "all" category: pods and services
assert_eq "$(k get all -n shop -o name | sort | tr '\n' ' ')" "$( (k get pods -n shop -o name; k get services -n shop -o name) | sort | tr '\n' ' ')" "kubectl get all"
head -1 "$T/table.txt" | grep_q '^NAME  *STATUS  *IP  *NODE  *AGE$' || check_fail "table header: $(head -1 "$T/table.txt")"
assert_eq "$(tail -n +2 "$T/table.txt" | awk '{print $1}' | sort | tr '\n' ' ')" \
	"$(jq -r '[.[] | select(.kind == "Pod" and .metadata.namespace == "shop") | .metadata.name] | sort | join(" ") + " "' "$T/live.json")" "table rows"

# ---- watches in the background while things change
# watch NAME KUBECTL-GET-ARGS...: kubectl get --watch --output-watch-events -o json into $T/w-NAME
WATCHERS=()
watch() {
	local name=$1
	shift
	KTIMEOUT=120s k get "$@" --watch --output-watch-events -o json >"$T/w-$name" 2>"$T/w-$name.err" &
	WATCHERS+=($!)
	on_exit "kill $! 2>/dev/null"
}
watches_open() { [ "$(fixture_api GET /fixture/stats | jq .watches)" -ge "$1" ]; }
watch pods-shop pods -n shop
watch pods-node1 pods -A --field-selector spec.nodeName=node1
watch pods-web pods -A -l app=web
watch ns namespaces
watch nodes nodes
watch svc services -A
watch netpol networkpolicies -n shop
watch eps endpointslices -A
for ((i = 0; i < 200; i++)); do watches_open ${#WATCHERS[@]} && break; sleep 0.05; done
watches_open ${#WATCHERS[@]} || fail "kubectl watches did not open: $(cat "$T"/w-*.err)"

k label pod web-1 -n shop canary=true >/dev/null || check_fail "kubectl label pod"
k label pod web-2 -n shop app=web-old --overwrite >/dev/null || check_fail "kubectl label --overwrite"
k label namespace tools team=tools --overwrite >/dev/null || check_fail "kubectl label namespace"
k annotate node node1 weft.dev/test=yes >/dev/null || check_fail "kubectl annotate node"
# strategic merge: Service ports merge by port (443 changes, 80 stays)
k patch service web -n shop -p '{"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}' >/dev/null || check_fail "kubectl patch service"
# JSON patch, then merge patch
k patch networkpolicy web-allow -n shop --type json \
	-p '[{"op": "replace", "path": "/spec/podSelector/matchLabels/app", "value": "web-v2"}]' >/dev/null || check_fail "kubectl patch --type json"
k patch endpointslice web-abc12 -n shop --type merge \
	-p '{"endpoints": [{"addresses": ["10.244.1.10"], "conditions": {"ready": true}, "nodeName": "node1"}]}' >/dev/null || check_fail "kubectl patch --type merge"
# the kubelet sets the pod's IPs through the status subresource
fixture_set_pod_ips shop web-1 10.244.1.10 fd00:10:244:1::a >"$T/status.json" || check_fail "PATCH pods/status"
assert_eq "$(jq -r .status.podIP "$T/status.json")" 10.244.1.10 "podIP follows podIPs[0]"
k delete pod db-0 -n shop >/dev/null || check_fail "kubectl delete pod"
k delete service upstream -n shop >/dev/null || check_fail "kubectl delete service"
k delete networkpolicy default-deny -n shop >/dev/null || check_fail "kubectl delete networkpolicy"
k delete endpointslice db-xyz89 -n shop >/dev/null || check_fail "kubectl delete endpointslice"
# one new pod on each node: only node1's reaches the spec.nodeName=node1 watch
for n in node1 node2; do
	k apply -f - >/dev/null <<EOF || check_fail "kubectl apply of pod late-$n"
apiVersion: v1
kind: Pod
metadata: {name: late-$n, namespace: shop, labels: {app: late}}
spec: {nodeName: $n, containers: [{name: c, image: busybox:1.36}]}
EOF
done
# server-side apply changes a field and creates an object
k apply --server-side -f - >/dev/null <<EOF || check_fail "kubectl apply --server-side"
apiVersion: v1
kind: Namespace
metadata: {name: ssa, labels: {made-by: ssa}}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop, labels: {app: db, ssa: "yes"}}
spec: {clusterIP: None, selector: {app: db}, ports: [{name: pg, port: 5432}]}
EOF
k delete namespace ssa >/dev/null || check_fail "kubectl delete namespace"

# events_in NAME: the "TYPE kind/ns/name" lines a watch printed (the initial list comes as ADDED)
events_in() { jq -r '"\(.type) \(.object.kind)/\(.object.metadata.namespace // "")/\(.object.metadata.name)"' "$T/w-$1" 2>/dev/null; }
# expect_events NAME EVENT...: each EVENT ("TYPE Kind/ns/name") in the watch, in this order
expect_events() {
	local name=$1 ev got rest
	shift
	got=$(events_in "$name")
	rest=$got
	for ev in "$@"; do
		if ! grep -qxF "$ev" <<<"$rest"; then
			check_fail "watch $name: no '$ev' (in order) in: $(tr '\n' ';' <<<"$got") $(cat "$T/w-$name.err")"
			return
		fi
		rest=$(awk -v e="$ev" 'f { print } !f && $0 == e { f = 1 }' <<<"$rest")
	done
}
# the last event each watch must see has arrived
for ((i = 0; i < 200; i++)); do
	events_in eps | grep_q -x "DELETED EndpointSlice/shop/db-xyz89" && events_in ns | grep_q -x "DELETED Namespace//ssa" &&
		events_in pods-shop | grep_q -x "ADDED Pod/shop/late-node2" && events_in svc | grep_q -x "MODIFIED Service/shop/db" && break
	sleep 0.05
done
expect_events pods-shop "ADDED Pod/shop/db-0" "ADDED Pod/shop/web-1" "MODIFIED Pod/shop/web-1" "MODIFIED Pod/shop/web-2" \
	"MODIFIED Pod/shop/web-1" "DELETED Pod/shop/db-0" "ADDED Pod/shop/late-node1" "ADDED Pod/shop/late-node2"
expect_events pods-node1 "ADDED Pod/kube-system/weftd-node1" "MODIFIED Pod/shop/web-1" "ADDED Pod/shop/late-node1"
events_in pods-node1 | grep_q "Pod/shop/web-2\|Pod/shop/db-0\|late-node2" && check_fail "node2's pods in the spec.nodeName=node1 watch"
# web-2 stops matching app=web: a DELETED for that watch (as the real server sends)
expect_events pods-web "ADDED Pod/shop/web-1" "ADDED Pod/shop/web-2" "MODIFIED Pod/shop/web-1" "DELETED Pod/shop/web-2" "MODIFIED Pod/shop/web-1"
expect_events ns "ADDED Namespace//default" "ADDED Namespace//shop" "MODIFIED Namespace//tools" "ADDED Namespace//ssa" "MODIFIED Namespace//ssa" "DELETED Namespace//ssa"
expect_events nodes "ADDED Node//node1" "ADDED Node//node2" "MODIFIED Node//node1"
expect_events svc "ADDED Service/shop/web" "MODIFIED Service/shop/web" "DELETED Service/shop/upstream" "MODIFIED Service/shop/db"
expect_events netpol "ADDED NetworkPolicy/shop/default-deny" "MODIFIED NetworkPolicy/shop/web-allow" "DELETED NetworkPolicy/shop/default-deny"
expect_events eps "ADDED EndpointSlice/shop/web-abc12" "MODIFIED EndpointSlice/shop/web-abc12" "DELETED EndpointSlice/shop/db-xyz89"
assert_eq "$(events_in pods-node1 | grep -c '^MODIFIED Pod/shop/web-1$')" 2 "web-1 changes (label, status) seen once each"
for w in "${WATCHERS[@]}"; do kill "$w" 2>/dev/null; done

# ---- the changes as the objects now read
svc=$(k get service web -n shop -o json)
assert_eq "$(jq -c '[.spec.ports[] | [.port, .targetPort]]' <<<"$svc")" '[[80,"http"],[443,8443]]' "Service ports after the strategic merge patch"
np=$(k get networkpolicy web-allow -n shop -o json)
assert_eq "$(jq -r '.spec.podSelector.matchLabels.app, .metadata.generation' <<<"$np" | tr '\n' ' ')" "web-v2 2 " "NetworkPolicy after the JSON patch (generation bumped)"
assert_eq "$(k get pod web-1 -n shop -o jsonpath='{.status.podIPs[*].ip} {.metadata.labels.canary}')" "10.244.1.10 fd00:10:244:1::a true" "web-1's IPs and label"
assert_eq "$(k get service db -n shop -o jsonpath='{.metadata.labels.ssa}')" yes "server-side apply merged the label"
# kubectl's own way to the status subresource; a status in a patch of the pod itself is ignored
k patch pod web-2 -n shop --subresource=status --type merge -p '{"status": {"podIPs": [{"ip": "10.244.2.10"}]}}' >/dev/null ||
	check_fail "kubectl patch --subresource=status"
assert_eq "$(k patch pod web-2 -n shop --type merge -p '{"status": {"podIP": "192.0.2.1"}}')" "pod/web-2 patched (no change)" "status patched through the pod"
assert_eq "$(k get pod web-2 -n shop --subresource=status -o jsonpath='{.status.podIP}')" 10.244.2.10 "web-2's IP through pods/status"
k get pod db-0 -n shop >/dev/null 2>"$T/gone.err" && check_fail "db-0 still there after kubectl delete"
grep -q 'pods "db-0" not found' "$T/gone.err" || check_fail "NotFound error: $(cat "$T/gone.err")"

# ---- conflicts: create of an existing object, replace with a stale resourceVersion
k create -f - >/dev/null 2>"$T/exists.err" <<EOF && check_fail "kubectl create of an existing namespace succeeded"
apiVersion: v1
kind: Namespace
metadata: {name: shop}
EOF
grep -q 'namespaces "shop" already exists' "$T/exists.err" || check_fail "AlreadyExists error: $(cat "$T/exists.err")"
k get pod web-1 -n shop -o json >"$T/stale.json"
k label pod web-1 -n shop canary=false --overwrite >/dev/null
jq '.metadata.labels.stale = "yes"' "$T/stale.json" | k replace -f - >/dev/null 2>"$T/conflict.err" &&
	check_fail "kubectl replace with a stale resourceVersion succeeded"
grep -q 'the object has been modified' "$T/conflict.err" || check_fail "Conflict error: $(cat "$T/conflict.err")"
k get pod web-1 -n shop -o json | jq '.metadata.labels.fresh = "yes"' | k replace -f - >/dev/null || check_fail "kubectl replace"
assert_eq "$(k get pod web-1 -n shop -o jsonpath='{.metadata.labels.fresh}/{.status.podIP}')" "yes/10.244.1.10" "replace kept status"

# ---- compaction: a watch or a continued list from before it is 410 Expired
old_rv=$(fixture_api GET /api/v1/namespaces/shop/pods | jq -r .metadata.resourceVersion)
token=$(fixture_api GET '/api/v1/pods?limit=1' | jq -r .metadata.continue)
k label pod web-1 -n shop after=compaction >/dev/null
fixture_api POST /fixture/compact >/dev/null
raw=$(fixture_api GET "/api/v1/namespaces/shop/pods?watch=1&resourceVersion=$old_rv&timeoutSeconds=2" -N || true)
assert_eq "$(jq -c '[.type, .object.code, .object.reason]' <<<"$raw")" '["ERROR",410,"Expired"]' "raw watch from a compacted resourceVersion"
# every kind's watch, namespaced and cluster-wide
for p in /api/v1/nodes /api/v1/namespaces /api/v1/pods /api/v1/namespaces/shop/services \
	/apis/networking.k8s.io/v1/namespaces/shop/networkpolicies /apis/discovery.k8s.io/v1/endpointslices; do
	raw=$(fixture_api GET "$p?watch=true&resourceVersion=$old_rv&timeoutSeconds=2" -N || true)
	assert_eq "$(jq -c '[.type, .object.code]' <<<"$raw")" '["ERROR",410]' "watch $p from a compacted resourceVersion"
done
raw=$(k get --raw "/api/v1/namespaces/shop/pods?watch=1&resourceVersion=$old_rv&timeoutSeconds=2" || true)
assert_eq "$(jq -c '[.type, .object.code]' <<<"$raw")" '["ERROR",410]' "kubectl --raw watch from a compacted resourceVersion"
k get --raw "/api/v1/pods?limit=1&continue=$token" >/dev/null 2>"$T/expired.err" && check_fail "a continue token from before the compaction was accepted"
grep -q 'Error from server (Expired)' "$T/expired.err" || check_fail "kubectl on a stale continue token: $(cat "$T/expired.err")"
# a watch from now still works and the compaction did not lose the state
new_rv=$(fixture_api GET /api/v1/namespaces/shop/pods | jq -r .metadata.resourceVersion)
((new_rv > old_rv)) || check_fail "resourceVersion did not move: $old_rv -> $new_rv"
raw=$(fixture_api GET "/api/v1/namespaces/shop/pods?watch=1&resourceVersion=$new_rv&timeoutSeconds=1" -N)
[ -z "$raw" ] || check_fail "a watch from the current resourceVersion got: $raw"

# a watch-list (sendInitialEvents, as client-go's WatchList): the state as ADDED, the end of it as a
# bookmark, then bookmarks of the watched kind on request
fixture_api GET "/apis/discovery.k8s.io/v1/namespaces/shop/endpointslices?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=3" \
	-N >"$T/watchlist.json" &
wl=$!
for ((i = 0; i < 100; i++)); do [ -s "$T/watchlist.json" ] && break; sleep 0.05; done
fixture_api POST /fixture/bookmark >/dev/null
fixture_api POST /fixture/end-watches >/dev/null
wait $wl || check_fail "the watch-list request failed"
assert_eq "$(jq -r '[.type, .object.kind, .object.metadata.name // .object.metadata.annotations["k8s.io/initial-events-end"]] | join(" ")' "$T/watchlist.json" | tr '\n' ';')" \
	"$(k get endpointslices -n shop -o json | jq -r '.items[] | "ADDED EndpointSlice \(.metadata.name);"' | tr -d '\n')BOOKMARK EndpointSlice true;BOOKMARK EndpointSlice ;" \
	"watch-list events"

# ---- kubectl delete -f: namespaces Terminating (nothing new in them), then gone with their objects
k delete -f "$YAML" --ignore-not-found --wait=false >"$T/delete.out" 2>&1 || check_fail "kubectl delete -f: $(cat "$T/delete.out")"
assert_eq "$(grep -c ' deleted$' "$T/delete.out")" "$(($(jq length "$T/applied.json") - 4))" "objects deleted by kubectl delete -f (4 went earlier)"
assert_eq "$(k get namespace shop -o jsonpath='{.status.phase}')" Terminating "phase of a namespace being deleted"
k apply -f - >/dev/null 2>"$T/terminating.err" <<EOF && check_fail "a pod was created in a terminating namespace"
apiVersion: v1
kind: Pod
metadata: {name: too-late, namespace: shop}
spec: {containers: [{name: c, image: busybox:1.36}]}
EOF
grep -q "because it is being terminated" "$T/terminating.err" || check_fail "create in a terminating namespace: $(cat "$T/terminating.err")"
k wait --for=delete namespace/shop namespace/tools --timeout=60s >/dev/null || check_fail "kubectl wait --for=delete namespace/shop"
for kind in pods services networkpolicies endpointslices; do
	assert_eq "$(k get "$kind" -A -o json | jq '[.items[] | select(.metadata.namespace == "shop" or .metadata.namespace == "tools")] | length')" 0 "$kind left in a deleted namespace"
done

# ---- the populate helper other tests use: the same objects without kubectl, with pod IPs
fixture_populate
assert_eq "$(k get pods -A -o json | jq -r '[.items[] | select(.status.podIP != null)] | length')" \
	"$(grep -c '^[a-z]' "$FIXTURE_OBJECTS/pod-ips.txt")" "pods with IPs after fixture_populate"
assert_eq "$(k get pod db-0 -n shop -o jsonpath='{.status.podIPs[1].ip}')" fd00:10:244:2::b "db-0's second IP"
finish
