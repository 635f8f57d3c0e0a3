#!/usr/bin/env bash
# `weft apply/get/delete` and the pod records of `weft cni add/del`, against a real etcd.
#
#   node namespace w-apply-PID (lo only)
#     |-- etcd on 127.0.0.1:<free port>       (the cluster datastore, <prefix>/objects/...)
#     |-- weft apply -f / get / delete -f     (the tool, as a user runs it)
#     `-- weft cni add recnet <pod netns>     bridge + host-local (10.77.0.0/24, fd77::/64)
#            `-- pod namespace w-apod-PID     records shop/<pod> with its IPs and labels
#
# Checks: every kind of test/kube/objects/cluster.yaml (+ a List, a JSON stream, a Node) lands under
# the contract's keys and reads back equal to an independent YAML parser's view (PyYAML); no
# resourceVersion stored, and get's resourceVersion is the key's mod_revision; a second apply keeps
# uid and creationTimestamp, changes only what changed ("unchanged" keeps the mod_revision); invalid
# documents (bad operator, bad IP, unknown kind, a YAML 1.1 boolean where a string is needed,
# malformed YAML, a namespace clash) are refused with the document named and nothing written;
# delete -f, NotFound exit codes, namespace deletion takes its objects; pod records at ADD/DEL,
# DEL twice, a record that would be refused and an unreachable etcd both undo the ADD.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd jq ip python3 etcd etcdctl
python3 -c 'import yaml' 2>/dev/null || skip "needs python3-yaml (the independent YAML parser)"
. "$TOP/test/lib/etcd-lib.sh"

WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFT"
require_plugins bridge host-local loopback
OBJ=$TOP/test/kube/objects/cluster.yaml

NODE=$(mk_netns apply)
on_exit "ip netns del $NODE"
ip -n "$NODE" link set lo up
etcd_start "$T" "$NODE" 127.0.0.1
PREFIX=/weft/test
export WEFT_ETCD_ENDPOINTS=$ETCD_ENDPOINT WEFT_ETCD_PREFIX=$PREFIX

# w ARGS...: weft in the node namespace; sets OUT, ERR, RC
w() {
	set +e
	OUT=$(ip netns exec "$NODE" "$WEFT" "$@" 2>"$T/.err")
	RC=$?
	set -e
	ERR=$(cat "$T/.err")
}
w_ok() { w "$@"; [ "$RC" = 0 ] || check_fail "weft $*: rc=$RC err=$ERR out=$OUT"; }
keys() { etcd_keys "$PREFIX/" | sort; }
# mod KEY: the key's mod_revision
mod() { _etcd_in env ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINT" get "$1" -w json | jq -r '.kvs[0].mod_revision'; }
strip() { jq -S 'del(.metadata.uid, .metadata.creationTimestamp, .metadata.resourceVersion)'; }

# ---------------------------------------------------------------- apply every kind
info "apply: every kind, multi-document YAML, a List, a JSON stream"
cat >"$T/more.yaml" <<'EOF'
# a List as `kubectl get -o yaml` prints it, and a cluster-scoped Node
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: listed
    labels: {app: listed, "on": "yes"}
  spec:
    nodeName: node2
- apiVersion: v1
  kind: Node
  metadata:
    name: node9
  spec:
    podCIDRs: [10.244.9.0/24]
---
---
# comments only, then an empty document: both skipped
EOF
printf '%s\n' '{"apiVersion":"v1","kind":"Service","metadata":{"name":"from-json","namespace":"tools"},"spec":{"ports":[{"port":53,"protocol":"UDP"}]}}' \
	'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"json2"}}' >"$T/stream.json"
w_ok apply -f "$OBJ" -f "$T/more.yaml"
assert_eq "$(grep -c ' created$' <<<"$OUT")" 19 "apply: created lines ($OUT)"
assert_eq "$(sed -n 1p <<<"$OUT")" "namespace/shop created" "first line"
grep -qx 'networkpolicy.networking.k8s.io/web-allow created' <<<"$OUT" || check_fail "netpol line missing: $OUT"
w_ok apply -f - <"$T/stream.json"
assert_eq "$OUT" $'service/from-json created\nnamespace/json2 created' "JSON stream from stdin"

# the contract's keys, exactly
expect_keys=$(python3 - "$OBJ" "$PREFIX" <<'EOF'
import sys, yaml
res = {"Pod": "pods", "Namespace": "namespaces", "NetworkPolicy": "networkpolicies", "Service": "services",
       "EndpointSlice": "endpointslices", "Node": "nodes"}
out = []
for d in yaml.safe_load_all(open(sys.argv[1])):
    md = d["metadata"]
    if d["kind"] in ("Namespace", "Node"):
        out.append("%s/objects/%s/%s" % (sys.argv[2], res[d["kind"]], md["name"]))
    else:
        out.append("%s/objects/%s/%s/%s" % (sys.argv[2], res[d["kind"]], md.get("namespace", "default"), md["name"]))
p = sys.argv[2]
out += [p + "/objects/pods/default/listed", p + "/objects/nodes/node9", p + "/objects/services/tools/from-json",
        p + "/objects/namespaces/json2"]
print("\n".join(sorted(out)))
EOF
)
assert_eq "$(keys)" "$expect_keys" "etcd keys"
v=$(etcd_get "$PREFIX/objects/pods/shop/web-1")
assert_eq "$(jq -c 'has("metadata") and (.metadata | has("resourceVersion") | not) and (.metadata.uid | test("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"))' <<<"$v")" true \
	"stored value: uid set, no resourceVersion ($v)"
assert_eq "$(jq -c . <<<"$v")" "$v" "stored compact"

info "get -o json equals an independent parser's reading of the same file"
python3 - "$OBJ" "$T/want" <<'EOF'
import sys, yaml, json, os
os.makedirs(sys.argv[2], exist_ok=True)
for d in yaml.safe_load_all(open(sys.argv[1])):
    md = d["metadata"]
    if d["kind"] not in ("Namespace", "Node"):
        md.setdefault("namespace", "default")
    json.dump(d, open("%s/%s_%s_%s.json" % (sys.argv[2], d["kind"], md.get("namespace", "-"), md["name"]), "w"))
EOF
n=0
for f in "$T"/want/*.json; do
	b=$(basename "$f" .json)
	kind=${b%%_*}; rest=${b#*_}; ns=${rest%%_*}; name=${rest#*_}
	nsarg=(); [ "$ns" != - ] && nsarg=(-n "$ns")
	w_ok get "$kind" "$name" "${nsarg[@]}" -o json
	got=$(strip <<<"$OUT")
	assert_eq "$got" "$(jq -S . "$f")" "get $kind $ns/$name -o json"
	n=$((n + 1))
done
assert_eq "$n" 17 "objects compared"
w_ok get pod web-1 -n shop -o json
assert_eq "$(jq -r .metadata.resourceVersion <<<"$OUT")" "$(mod "$PREFIX/objects/pods/shop/web-1")" "resourceVersion = mod_revision"
w_ok get pod listed -o json
assert_eq "$(jq -c .metadata.labels <<<"$OUT")" '{"app":"listed","on":"yes"}' "quoted YAML 1.1 words stay strings"

info "get: lists, names, kinds by every name, tables"
w_ok get pods -n shop -o json
assert_eq "$(jq -r '.kind, (.items | map(.metadata.name) | join(","))' <<<"$OUT")" $'List\ndb-0,dns-probe,web-1,web-2' "pods -n shop"
for k in po pod pods Pod pods.v1; do
	w_ok get "$k" -A -o name
	assert_eq "$(wc -l <<<"$OUT")" 7 "get $k -A -o name"
done
assert_eq "$(head -2 <<<"$OUT" | tr '\n' ' ')" "pod/listed pod/weftd-node1 " "-o name sorted by namespace"
for k in netpol networkpolicy networkpolicies networkpolicies.networking.k8s.io; do
	w_ok get "$k" -n shop -o name
	assert_eq "$OUT" $'networkpolicy.networking.k8s.io/default-deny\nnetworkpolicy.networking.k8s.io/web-allow' "get $k"
done
w_ok get svc -n shop
assert_eq "$(awk 'NR==1 {print $1,$2,$3,$4,$5}' <<<"$OUT")" "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S)" "svc header"
assert_eq "$(awk '$1=="web-nodeport" {print $2,$5}' <<<"$OUT")" "NodePort 8080:30080/TCP" "svc row"
w_ok get endpointslices -n shop
assert_eq "$(awk '$1=="web-abc12" {print $2,$3,$4}' <<<"$OUT")" "IPv4 80,443 10.244.1.10,10.244.2.10" "eps row"
w_ok get ns
assert_eq "$(awk 'NR>1 {print $1}' <<<"$OUT" | tr '\n' ' ')" "json2 shop tools " "namespaces"
w_ok get nodes -o name
assert_eq "$OUT" "node/node9" "nodes"
w get pods -n empty
assert_eq "$RC/$OUT/$ERR" "0//No resources found in empty namespace." "get on an empty namespace"
w get pod nope -n shop
assert_eq "$RC/$ERR" '1/Error from server (NotFound): pods "nope" not found' "get a missing pod"
w get pod nope -n shop --ignore-not-found
assert_eq "$RC/$OUT" "0/" "get --ignore-not-found"
w get deployments
assert_eq "$RC/$ERR" '1/error: the server doesn'"'"'t have a resource type "deployments"' "get an unknown kind"

info "get svc: EXTERNAL-IP as kube-apiserver prints it, AGE from the creationTimestamp apply stamps"
cat >"$T/lb.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: lbview}
---
apiVersion: v1
kind: Service
metadata: {name: lb-pending, namespace: lbview}
spec: {type: LoadBalancer, clusterIP: 10.96.7.1, ports: [{port: 80, nodePort: 30701}]}
---
apiVersion: v1
kind: Service
metadata: {name: lb-two, namespace: lbview}
spec: {type: LoadBalancer, clusterIP: 10.96.7.2, ports: [{port: 80, nodePort: 30702}]}
status: {loadBalancer: {ingress: [{ip: 192.0.2.9}, {ip: 192.0.2.10}, {ip: 192.0.2.9}]}}
---
apiVersion: v1
kind: Service
metadata: {name: lb-ext, namespace: lbview}
spec: {type: LoadBalancer, clusterIP: 10.96.7.3, externalIPs: [198.51.100.7], ports: [{port: 80, nodePort: 30703}]}
status: {loadBalancer: {ingress: [{ip: 192.0.2.1, ipMode: VIP}]}}
---
apiVersion: v1
kind: Service
metadata: {name: cip-ext, namespace: lbview}
spec: {clusterIP: 10.96.7.4, externalIPs: [198.51.100.8, 198.51.100.9], ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ip: 192.0.2.2}]}}
---
apiVersion: v1
kind: Service
metadata: {name: np, namespace: lbview}
spec: {type: NodePort, clusterIP: 10.96.7.5, ports: [{port: 80, nodePort: 30705}]}
EOF
w_ok apply -f "$T/lb.yaml"
w_ok get svc -n lbview
for row in "lb-pending <pending>" "lb-two 192.0.2.10,19..." "lb-ext 192.0.2.1,198.51.100.7" \
	"cip-ext 198.51.100.8,198.51.100.9" "np <none>"; do
	assert_eq "$(awk -v n="${row%% *}" '$1 == n {print $1, $4}' <<<"$OUT")" "$row" "get svc EXTERNAL-IP"
done
grep_q -E '^lb-two +LoadBalancer +10\.96\.7\.2 +192\.0\.2\.10,19\.\.\. +80:30702/TCP +[0-9]+s$' <<<"$OUT" ||
	check_fail "get svc: lb-two's row (AGE in seconds): $OUT"
w_ok delete -f "$T/lb.yaml"

# ---------------------------------------------------------------- apply again, with changes
info "apply again: uid and creationTimestamp kept, changed values stored, the rest unchanged"
before_uid=$(etcd_get "$PREFIX/objects/networkpolicies/shop/web-allow" | jq -r .metadata.uid)
before_ts=$(etcd_get "$PREFIX/objects/networkpolicies/shop/web-allow" | jq -r .metadata.creationTimestamp)
svc_mod=$(mod "$PREFIX/objects/services/shop/web")
sed -e 's/port: 5432$/port: 5433/' -e 's/^    owner: shop$/    owner: shop2/' "$OBJ" >"$T/changed.yaml"
sleep 1 # a new creationTimestamp would differ
w_ok apply -f "$T/changed.yaml"
assert_eq "$(grep -c ' configured$' <<<"$OUT")" 3 "configured: web-allow, db service, db slice ($OUT)"
assert_eq "$(grep -c ' unchanged$' <<<"$OUT")" 14 "unchanged"
v=$(etcd_get "$PREFIX/objects/networkpolicies/shop/web-allow")
assert_eq "$(jq -r .metadata.uid <<<"$v")" "$before_uid" "uid kept"
assert_eq "$(jq -r .metadata.creationTimestamp <<<"$v")" "$before_ts" "creationTimestamp kept"
assert_eq "$(jq -r '.metadata.labels.owner, .spec.egress[0].ports[0].port' <<<"$v")" $'shop2\n5433' "values changed"
assert_eq "$(mod "$PREFIX/objects/services/shop/web")" "$svc_mod" "an unchanged object is not rewritten"

# ---------------------------------------------------------------- refusals
info "invalid documents: refused with the document named, nothing written"
nkeys=$(keys | wc -l)
refuse() { # refuse NAME EXPECTED-STDERR-LINE [apply args]  (input in $T/bad.yaml)
	local name=$1 want=$2
	shift 2
	w apply "$@"
	[ "$RC" != 0 ] || check_fail "$name: accepted: $OUT"
	grep -qxF -- "$want" <<<"$ERR" || check_fail "$name: stderr lacks '$want': $ERR"
	assert_eq "$(keys | wc -l)" "$nkeys" "$name: keys written"
	assert_eq "$OUT" "" "$name: stdout"
}
good='apiVersion: v1
kind: Namespace
metadata:
  name: fresh
---'
printf '%s\n%s\n' "$good" 'apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: bad-op
  namespace: shop
spec:
  podSelector:
    matchExpressions:
    - {key: app, operator: Equals, values: [web]}' >"$T/bad.yaml"
refuse "bad operator" "error: $T/bad.yaml document 2 (line 5): NetworkPolicy \"bad-op\" in namespace shop: spec.podSelector.matchExpressions[0].operator: \"Equals\" is not In, NotIn, Exists or DoesNotExist" -f "$T/bad.yaml"
printf '%s\n%s\n' "$good" 'apiVersion: v1
kind: Pod
metadata: {name: bad-ip}
status:
  podIPs: [{ip: 10.244.1.300}]' >"$T/bad.yaml"
refuse "bad pod IP" "error: $T/bad.yaml document 2 (line 5): Pod \"bad-ip\" in namespace default: status.podIPs[0].ip: \"10.244.1.300\" is not an IP address" -f "$T/bad.yaml"
printf '%s\n%s\n' "$good" 'apiVersion: apps/v1
kind: Deployment
metadata: {name: web}' >"$T/bad.yaml"
refuse "unknown kind" "error: $T/bad.yaml document 2 (line 5): no matches for kind \"Deployment\" in version \"apps/v1\" (weft stores v1 Pod, Namespace, Service, Node; networking.k8s.io/v1 NetworkPolicy; discovery.k8s.io/v1 EndpointSlice)" -f "$T/bad.yaml"
printf '%s\n%s\n' "$good" 'apiVersion: v1
kind: Service
metadata:
  name: typed
  labels: {enabled: yes}' >"$T/bad.yaml"
refuse "YAML 1.1 boolean as a label value" "error: $T/bad.yaml document 2 (line 5): Service \"typed\" in namespace default: metadata.labels[enabled]: not a valid label value" -f "$T/bad.yaml"
printf '%s\n%s\n' "$good" 'apiVersion: v1
kind: Namespace
metadata:
  name: x
  labels: {a: b' >"$T/bad.yaml"
refuse "malformed YAML" "error: error parsing $T/bad.yaml: line 11: did not find expected ',' or '}' while parsing a flow mapping" -f "$T/bad.yaml"
printf '%s\n%s\n' "$good" 'apiVersion: v1
kind: Pod
metadata: {name: clash, namespace: shop}' >"$T/bad.yaml"
refuse "namespace clash" "error: $T/bad.yaml document 2 (line 5): Pod \"clash\": the namespace from the provided object \"shop\" does not match the namespace \"tools\". You must pass '--namespace=shop' to perform this operation." -n tools -f "$T/bad.yaml"
refuse "missing file" "error: the path \"$T/nope.yaml\" cannot be read: No such file or directory" -f "$T/nope.yaml"

# ---------------------------------------------------------------- delete
info "delete -f, NotFound, namespaces take their objects"
w_ok delete -f "$T/more.yaml"
assert_eq "$OUT" $'pod "listed" deleted\nnode "node9" deleted' "delete -f"
w delete -f "$T/more.yaml"
assert_eq "$RC" 1 "delete of missing objects: exit code"
assert_eq "$ERR" "Error from server (NotFound): error when deleting \"$T/more.yaml\": pods \"listed\" not found
Error from server (NotFound): error when deleting \"$T/more.yaml\": nodes \"node9\" not found" "delete of missing objects: messages"
w delete -f "$T/more.yaml" --ignore-not-found
assert_eq "$RC/$OUT/$ERR" "0//" "delete --ignore-not-found"
w_ok delete svc from-json -n tools
assert_eq "$OUT" 'service "from-json" deleted' "delete KIND NAME"
w_ok delete ns tools
[ -z "$(etcd_keys "$PREFIX/objects/pods/tools/")" ] || check_fail "namespace tools deleted, its pods remain"
[ -n "$(etcd_keys "$PREFIX/objects/pods/kube-system/")" ] || check_fail "other namespaces' pods went too"
printf '%s\n' 'apiVersion: v1' 'kind: Namespace' 'metadata: {name: cascade}' '---' \
	'apiVersion: v1' 'kind: Pod' 'metadata: {name: p, namespace: cascade}' >"$T/cascade.yaml"
w_ok apply -f "$T/cascade.yaml"
w delete -f "$T/cascade.yaml"
assert_eq "$RC/$OUT/$ERR" $'0/pod "p" deleted\nnamespace "cascade" deleted/' "a namespace and its pod in one file"
mkdir "$T/dir"
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: d2}\n' >"$T/dir/b.yaml"
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"d1"}}' >"$T/dir/a.json"
echo 'not a manifest' >"$T/dir/notes.txt"
w_ok apply -f "$T/dir"
assert_eq "$OUT" $'namespace/d1 created\nnamespace/d2 created' "apply -f DIR: its .json/.yaml files in name order"
w_ok delete -f "$T/dir"
assert_eq "$OUT" $'namespace "d1" deleted\nnamespace "d2" deleted' "delete -f DIR"

# ---------------------------------------------------------------- pod records
info "pod records: weft cni add/del with K8S_POD_* in CNI_ARGS"
mkdir -p "$T/net.d" "$T/bin"
ln -sf "$WEFT_BIN"/{bridge,host-local,loopback} "$T/bin/"
cat >"$T/net.d/10-rec.conflist" <<EOF
{"cniVersion":"1.0.0","name":"recnet","plugins":[{"type":"bridge","bridge":"rec0","isGateway":true,
 "ipam":{"type":"host-local","dataDir":"$T/ipam","ranges":[[{"subnet":"10.77.0.0/24"}],[{"subnet":"fd77::/64"}]]}}]}
EOF
POD=$(mk_netns apod)
on_exit "ip netns del $POD"
# cni ACTION POD-NAME [weft cni options]: sets OUT, ERR, RC
cni() {
	local action=$1 name=$2
	shift 2
	set +e
	OUT=$(ip netns exec "$NODE" env NETCONFPATH="$T/net.d" CNI_PATH="$T/bin" CNI_CACHE_DIR="$T/cache" \
		CNI_CONTAINERID="sandbox-$name" CNI_ARGS="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=$name;K8S_POD_UID=0c6d8a0e-6f1e-4c3e-9a51-5d0f2b7b4e11" \
		WEFT_POD_LABELS=tier=frontend,team=shop "$WEFT" cni "$action" recnet "/run/netns/$POD" --node-name node1 "$@" 2>"$T/.err")
	RC=$?
	set -e
	ERR=$(cat "$T/.err")
}
cni add web-1 --label app=web --label version=v2
assert_eq "$RC" 0 "cni add: $ERR $OUT"
ip4=$(jq -r '.ips[] | .address | select(test("\\.")) | split("/")[0]' <<<"$OUT")
ip6=$(jq -r '.ips[] | .address | select(test(":")) | split("/")[0]' <<<"$OUT")
w_ok get pod web-1 -n shop -o json
assert_eq "$(jq -c '[.status.podIP, [.status.podIPs[].ip], .status.phase, .spec.nodeName, .metadata.uid]' <<<"$OUT")" \
	"[\"$ip4\",[\"$ip4\",\"$ip6\"],\"Running\",\"node1\",\"0c6d8a0e-6f1e-4c3e-9a51-5d0f2b7b4e11\"]" "recorded status"
# labels: the applied object's, then WEFT_POD_LABELS, then --label (last wins)
assert_eq "$(jq -cS .metadata.labels <<<"$OUT")" '{"app":"web","team":"shop","tier":"frontend","version":"v2"}' "recorded labels"
assert_eq "$(jq -r '.spec.containers[0].name, .metadata.annotations["weft.dev/container-id"]' <<<"$OUT")" \
	$'nginx\nsandbox-web-1' "the applied spec kept, the sandbox noted"
w_ok get pods -n shop
assert_eq "$(awk '$1=="web-1" {print $2,$3,$4}' <<<"$OUT")" "Running $ip4,$ip6 node1" "table row of the recorded pod"
# re-applying the manifest keeps the recorded status (status is not the manifest's)
w_ok apply -f "$OBJ"
w_ok get pod web-1 -n shop -o json
assert_eq "$(jq -r .status.podIP <<<"$OUT")" "$ip4" "status kept across apply"

cni del web-1
assert_eq "$RC" 0 "cni del: $ERR"
w get pod web-1 -n shop
assert_eq "$RC" 1 "record gone after DEL"
cni del web-1
assert_eq "$RC" 0 "cni del twice: $ERR"

info "pod records: a late DEL of an older sandbox leaves the newer record"
cni add fresh-pod
assert_eq "$RC" 0 "cni add fresh-pod: $ERR"
set +e
ip netns exec "$NODE" env NETCONFPATH="$T/net.d" CNI_PATH="$T/bin" CNI_CACHE_DIR="$T/cache" CNI_CONTAINERID=sandbox-old \
	CNI_ARGS="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=fresh-pod" "$WEFT" cni del recnet --container-id sandbox-old 2>"$T/.err"
rc=$?
set -e
assert_eq "$rc" 0 "DEL of an unknown older sandbox: $(cat "$T/.err")"
w get pod fresh-pod -n shop
assert_eq "$RC" 0 "the newer sandbox's record stays"
cni del fresh-pod
assert_eq "$RC" 0 "cni del fresh-pod"

info "pod records: refusals undo the ADD"
cni add bad-label --label 'app=not valid'
assert_eq "$RC" 1 "a label weftd would refuse: rc"
assert_eq "$(jq -r .code <<<"$OUT")" 4 "a label weftd would refuse: code ($OUT)"
grep -qF 'recording the pod failed, the ADD was undone: pod shop/bad-label: metadata.labels[app]: not a valid label value' <<<"$ERR" ||
	check_fail "bad label message: $ERR"
assert_eq "$(ip -n "$POD" -br link show eth0 2>/dev/null)" "" "eth0 removed after the refused record"
assert_eq "$(find "$T/ipam" -type f -name '10.77.*' | wc -l)" 0 "no address left reserved"
cni add no-etcd --etcd-endpoints http://127.0.0.1:1
assert_eq "$(jq -r .code <<<"$OUT")" 11 "unreachable etcd: code 11 (try again later) ($OUT)"
assert_eq "$(ip -n "$POD" -br link show eth0 2>/dev/null)" "" "eth0 removed after the failed record"
w get pods -n shop -o name
assert_eq "$OUT" $'pod/db-0\npod/dns-probe\npod/web-2' "no record of the refused pods (web-1 went with its DEL)"

finish
