#!/usr/bin/env bash
# weft-test: serial
# shellcheck disable=SC2317 # helpers below are called through wait_for
# Hostile objects in etcd (--objects-datastore etcd: no API server checks anything), on a 3-node
# host-gw cluster, asserted with real traffic (issue 17):
#
#   node1: victim/iso (app=iso)     node2: victim/cli (app=cli)     node3: victim/other (app=other)
#                                                                          attacker/cli (app=cli)
#   victim/deny-iso: default deny ingress for app=iso
#   victim/allow-cli: app=iso from {namespaceSelector kubernetes.io/metadata.name=victim, app=cli}
#
#   7. namespace `attacker` labelled kubernetes.io/metadata.name=victim: its app=cli pod must not
#      pass allow-cli (the label is pinned to the name); victim/cli does.
#   6. both policies, then the iso and cli pods and the victim namespace, overwritten with values
#      weft cannot decode (podSelector: "app=iso", ingress: {"from": 1}, ...): the last good versions
#      stay in force (iso unreachable from other/attacker, reachable from cli), counted
#      (weft_cache_rejected_objects_total, weft_cache_stale_objects), logged once across relists,
#      shown in /debug/objects and `weft policy explain`; then real deletes really remove them.
#   5. EndpointSlices with loopback / link-local endpoints refused, naming the field and value.
#   8. a policy with 5,000 ipBlocks refused, naming the limit.
#  11. apiVersion v2 Service refused; a key with an extra segment refused and counted; a value
#      that is no object refused naming its etcd key (no fake label in the message).
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
WEFT_TOOL=$WEFT_BUILD/tool/weft
require_built "$WEFT_TOOL"
NETPOL=$TOP/test/netns/policy/netpol.py
[ -d /proc/sys/net/bridge ] || skip "br_netfilter is not loaded (same-node traffic would not be policed)"

cluster_init 3 host-gw
for i in 1 2 3; do
	weftd_start "$i" --objects-datastore etcd --relist-interval 1s
done
weftd_wait_ready 1 2 3

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
del() { etcdctl_ del "$ETCD_PREFIX/objects/$1" >/dev/null; }
metric() { # metric NODE NAME{LABELS}
	http_get "$1" /metrics
	awk -v m="$2" '$1 == m { print $2 }' <<<"$HTTP_BODY"
}
metric_ge() { local v; v=$(metric "$1" "$2"); [ -n "$v" ] && [ "$v" -ge "$3" ]; }
metric_eq() { [ "$(metric "$1" "$2")" = "$3" ]; }
log_of() { cat "$(node_dir "$1")/weftd.log"; }
declare -A PNS PIP
PIDS=()
kill_bg() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_bg
for i in 1 2 3; do
	gw=$(lease_var "$i" WEFT_SUBNET)
	ip -n "$(node_ns "$i")" link add cni0 type bridge
	ip -n "$(node_ns "$i")" addr add "$gw" dev cni0
	ip -n "$(node_ns "$i")" link set cni0 up
done
pod_json() { # pod_json NS P APP NODE IP
	jq -nc --arg ns "$1" --arg p "$2" --arg app "$3" --arg node "node$4" --arg ip "$5" \
		'{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$p,labels:{app:$app}},
		spec:{nodeName:$node,containers:[{name:"c"}]},status:{phase:"Running",podIP:$ip,podIPs:[{ip:$ip}]}}'
}
K=0
mkpod() { # mkpod NS P APP NODE: netns on the node's bridge, netpol.py serving "ok" on 80
	local ns=$1 p=$2 node=$4 gw pns ip
	K=$((K + 1))
	gw=$(lease_var "$node" WEFT_SUBNET)
	ip=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[10 + int(sys.argv[2])])' "$gw" "$K")
	pns=$(mk_netns "p$ns$p")
	PNS[$ns/$p]=$pns PIP[$ns/$p]=$ip
	ip -n "$(node_ns "$node")" link add "v$K" type veth peer name eth0 netns "$pns"
	ip -n "$(node_ns "$node")" link set "v$K" master cni0 up
	ip -n "$pns" addr add "$ip/${gw#*/}" dev eth0
	ip -n "$pns" link set eth0 up
	ip -n "$pns" route add default via "${gw%/*}"
	ip netns exec "$pns" python3 "$NETPOL" serve >"$T/serve.$ns$p" 2>&1 &
	PIDS+=($!)
	wait_for 30 grep -q ready "$T/serve.$ns$p" || fail "server in $ns/$p did not start"
	put "pods/$ns/$p" "$(pod_json "$ns" "$p" "$3" "$node" "$ip")"
}
tcp() { ip netns exec "$1" python3 -c 'import socket,sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=0.5); s.settimeout(0.5)
    sys.exit(0 if s.recv(2) == b"ok" else 1)
except OSError:
    sys.exit(1)' "$2" "$3"; }
allowed() { tcp "${PNS[$1]}" "${PIP[$2]}" 80; }
denied() { ! allowed "$@"; }
# The truth this whole test defends: iso reachable from victim/cli only.
expect_isolated() { # expect_isolated WHEN
	allowed victim/cli victim/iso || check_fail "$1: victim/cli -> victim/iso (allowed by allow-cli) denied"
	denied victim/other victim/iso || check_fail "$1: victim/other -> victim/iso allowed (the default deny is gone)"
	denied attacker/cli victim/iso || check_fail "$1: attacker/cli -> victim/iso allowed"
}

# The victim namespace carries no labels: kubernetes.io/metadata.name comes from its name.
put namespaces/victim '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"victim"}}'
put namespaces/attacker '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"attacker","labels":{"kubernetes.io/metadata.name":"victim"}}}'
mkpod victim iso iso 1
mkpod victim cli cli 2
mkpod victim other other 3
mkpod attacker cli cli 3
DENY='{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"victim","name":"deny-iso"},
	"spec":{"podSelector":{"matchLabels":{"app":"iso"}},"policyTypes":["Ingress"]}}'
ALLOW='{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"victim","name":"allow-cli"},
	"spec":{"podSelector":{"matchLabels":{"app":"iso"}},"ingress":[{"from":[{
	"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"victim"}},"podSelector":{"matchLabels":{"app":"cli"}}}]}]}}'
put networkpolicies/victim/deny-iso "$DENY"
put networkpolicies/victim/allow-cli "$ALLOW"
wait_for 10 denied victim/other victim/iso || fail "victim/other -> victim/iso not denied 10 s after the default deny"
wait_for 20 allowed victim/cli victim/iso || fail "victim/cli -> victim/iso not allowed by allow-cli"

# ---- 7. the namespace name label is pinned
denied attacker/cli victim/iso ||
	check_fail "attacker/cli (namespace attacker labelled kubernetes.io/metadata.name=victim) passes allow-cli"
http_get 1 "/debug/objects?kind=namespaces"
[ "$(jq -r '.items[] | select(.metadata.name == "attacker") | .metadata.labels["kubernetes.io/metadata.name"]' <<<"$HTTP_BODY")" = attacker ] ||
	check_fail "namespace attacker cached with kubernetes.io/metadata.name != attacker: $HTTP_BODY"
expect_isolated "before any bad write"
info "7: kubernetes.io/metadata.name pinned: attacker/cli denied, victim/cli allowed"

# ---- 6. undecodable updates keep the last good version
rej0=$(metric 1 'weft_cache_rejected_objects_total{kind="networkpolicies"}')
put networkpolicies/victim/deny-iso "$(jq -c '.spec.podSelector = "app=iso"' <<<"$DENY")"
put networkpolicies/victim/allow-cli "$(jq -c '.spec.ingress = {"from": 1}' <<<"$ALLOW")"
for i in 1 2 3; do
	wait_for 20 metric_ge "$i" 'weft_cache_rejected_objects_total{kind="networkpolicies"}' $((rej0 + 2)) ||
		fail "node $i: the two refused policy versions were not counted"
done
sleep 1.5 # a sync a consumer might still run
expect_isolated "policies overwritten with undecodable values"
for i in 1 2 3; do
	metric_eq "$i" 'weft_cache_stale_objects{kind="networkpolicies"}' 2 ||
		check_fail "node $i: weft_cache_stale_objects{kind=\"networkpolicies\"} = $(metric "$i" 'weft_cache_stale_objects{kind="networkpolicies"}'), want 2"
done
# Pods and namespaces that feed selectors: the same.
rej0=$(metric 1 'weft_cache_rejected_objects_total{kind="pods"}')
put pods/victim/iso '{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"victim","name":"iso","labels":{"app":5}}}'
put pods/victim/cli 'this is not JSON'
put namespaces/victim '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"victim","labels":{"-bad":"x"}}}'
wait_for 20 metric_ge 1 'weft_cache_rejected_objects_total{kind="pods"}' $((rej0 + 2)) || fail "bad pods not counted"
sleep 1.5
expect_isolated "pods victim/iso, victim/cli and namespace victim overwritten with undecodable values"
metric_eq 1 'weft_cache_stale_objects{kind="pods"}' 2 || check_fail "pods not held: $(metric 1 'weft_cache_stale_objects{kind="pods"}')"
metric_eq 1 'weft_cache_stale_objects{kind="namespaces"}' 1 || check_fail "namespace not held"
# Logged once, though relists (every 1 s) keep finding the same values.
sleep 2.5
rej1=$(metric 1 'weft_cache_rejected_objects_total{kind="networkpolicies"}')
n=$(log_of 1 | grep -c "refused NetworkPolicy victim/deny-iso")
assert_eq "$n" 1 "log lines for the refused version of victim/deny-iso over several relists"
assert_eq "$rej1" $((rej0 + 2)) "refusals counted for the two policies over several relists"
log_of 1 | grep "refused NetworkPolicy victim/deny-iso" | grep_q "spec.podSelector.*keeping the last version that decoded in force" ||
	check_fail "the refusal log line does not say the last good version is kept: $(log_of 1 | grep 'refused NetworkPolicy victim/deny-iso')"
log_of 1 | grep_q "refused Pod victim/cli: etcd key $ETCD_PREFIX/objects/pods/victim/cli: value is not a Kubernetes object (keeping" ||
	check_fail "no refusal naming the etcd key of victim/cli: $(log_of 1 | grep 'victim/cli')"
log_of 1 | grep_q "is not a valid label key" && log_of 1 | grep "valid label key" | grep_q "etcd" &&
	check_fail "a source refusal still poses as a label key"
# /debug/objects
http_get 1 /debug/objects
jq -e '[.held[] | select(.kind == "NetworkPolicy")] | length == 2' <<<"$HTTP_BODY" >/dev/null ||
	check_fail "/debug/objects does not list the two held policies: $HTTP_BODY"
jq -e '.kinds.networkpolicies.held == 2 and .kinds.pods.held == 2' <<<"$HTTP_BODY" >/dev/null ||
	check_fail "/debug/objects held counts wrong: $HTTP_BODY"
http_get 1 "/debug/objects?kind=networkpolicies&namespace=victim"
jq -e '.items[] | select(.metadata.name == "deny-iso") | .weftHeld.lastGoodVersion and (.weftHeld.reason | test("podSelector"))' \
	<<<"$HTTP_BODY" >/dev/null || check_fail "/debug/objects?kind=networkpolicies: deny-iso not marked held: $HTTP_BODY"
jq -e '.items[] | select(.metadata.name == "deny-iso") | .spec.podSelector.matchExpressions' <<<"$HTTP_BODY" >/dev/null ||
	check_fail "deny-iso not cached at its last good version: $HTTP_BODY"
# weft policy explain
out=$(ip netns exec "$(node_ns 1)" "$WEFT_TOOL" policy explain victim/other victim/iso 80 --weftd http://127.0.0.1:9876 2>&1) || true
grep -q "NetworkPolicy victim/deny-iso is held at its last good version: its newest version was refused: spec.podSelector" <<<"$out" ||
	check_fail "weft policy explain does not say deny-iso is held: $out"
grep -q "Pod victim/iso is held at its last good version" <<<"$out" || check_fail "weft policy explain does not say pod victim/iso is held: $out"
grep -q "^DENY" <<<"$out" || check_fail "weft policy explain: victim/other -> victim/iso not DENY: $out"
info "6: undecodable policies, pods and namespace held at their last good versions; traffic unchanged"

# A good version written again is current again; a delete really removes.
put namespaces/victim '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"victim"}}'
put pods/victim/iso "$(pod_json victim iso iso 1 "${PIP[victim/iso]}")"
put pods/victim/cli "$(pod_json victim cli cli 2 "${PIP[victim/cli]}")"
wait_for 20 metric_eq 1 'weft_cache_stale_objects{kind="pods"}' 0 || fail "pods still held after good versions"
metric_eq 1 'weft_cache_stale_objects{kind="namespaces"}' 0 || check_fail "namespace still held after a good version"
expect_isolated "good pods and namespace written back"
del networkpolicies/victim/allow-cli
wait_for 10 denied victim/cli victim/iso || check_fail "victim/cli -> victim/iso still allowed 10 s after allow-cli was deleted"
del networkpolicies/victim/deny-iso
wait_for 10 allowed victim/other victim/iso || check_fail "victim/other -> victim/iso still denied 10 s after deny-iso was deleted"
for i in 1 2 3; do
	metric_eq "$i" 'weft_cache_stale_objects{kind="networkpolicies"}' 0 || check_fail "node $i: held policies after the deletes"
done
info "6: deletes of held policies remove them (iso open again)"

# ---- 5. EndpointSlice address rules (what kube-apiserver refuses)
slice() { # slice NAME ADDRESS_TYPE ADDRESS
	jq -nc --arg n "$1" --arg t "$2" --arg a "$3" '{apiVersion:"discovery.k8s.io/v1",kind:"EndpointSlice",
		metadata:{namespace:"attacker",name:$n,labels:{"kubernetes.io/service-name":"evil"}},addressType:$t,
		endpoints:[{addresses:["10.244.9.9"]},{addresses:[$a]}],ports:[{port:9876,protocol:"TCP"}]}'
}
rej0=$(metric 1 'weft_cache_rejected_objects_total{kind="endpointslices"}')
put endpointslices/attacker/lo "$(slice lo IPv4 127.0.0.1)"
put endpointslices/attacker/meta "$(slice meta IPv4 169.254.169.254)"
put endpointslices/attacker/mc "$(slice mc IPv4 224.0.0.1)"
put endpointslices/attacker/v6lo "$(slice v6lo IPv6 ::1)"
put endpointslices/attacker/node "$(slice node IPv4 "$(node_ip 2)")" # a hostNetwork backend: fine
wait_for 20 metric_ge 1 'weft_cache_rejected_objects_total{kind="endpointslices"}' $((rej0 + 4)) ||
	fail "hostile EndpointSlices not counted"
for want in 'EndpointSlice attacker/lo: endpoints\[1\].addresses\[0\]: "127.0.0.1" is loopback' \
	'EndpointSlice attacker/meta: endpoints\[1\].addresses\[0\]: "169.254.169.254" is link-local' \
	'EndpointSlice attacker/mc: endpoints\[1\].addresses\[0\]: "224.0.0.1" is multicast' \
	'EndpointSlice attacker/v6lo: endpoints\[0\].addresses\[0\]: "10.244.9.9" is not of the slice.s addressType IPv6'; do
	log_of 1 | grep_q "refused $want" || check_fail "no refusal \"$want\" in weftd's log"
done
http_get 1 "/debug/objects?kind=endpointslices&namespace=attacker"
assert_eq "$(jq -c '[.items[].metadata.name]' <<<"$HTTP_BODY")" '["node"]' "cached attacker EndpointSlices"
info "5: loopback, link-local, multicast and mistyped endpoints refused; a node address kept"

# ---- 8. a policy with 5,000 ipBlocks
rej0=$(metric 1 'weft_cache_rejected_objects_total{kind="networkpolicies"}')
jq -nc '{apiVersion:"networking.k8s.io/v1",kind:"NetworkPolicy",
	metadata:{namespace:"attacker",name:"big"},spec:{podSelector:{},
	ingress:[{from:[range(5000) | {ipBlock:{cidr:"10.\(. / 250 | floor).\(. % 250).0/24"}}]}]}}' >"$T/big.json"
etcdctl_ put "$ETCD_PREFIX/objects/networkpolicies/attacker/big" <"$T/big.json" >/dev/null
wait_for 20 metric_ge 1 'weft_cache_rejected_objects_total{kind="networkpolicies"}' $((rej0 + 1)) || fail "the 5,000-peer policy not counted"
log_of 1 | grep_q "refused NetworkPolicy attacker/big: spec.ingress\[0\].from: the policy has more than the limit of 1000 peers" ||
	check_fail "the 5,000-peer refusal does not name the field and the limit: $(log_of 1 | grep attacker/big)"
info "8: a policy with 5,000 ipBlocks refused at the 1,000-peer limit"

# ---- 11. apiVersion, keys, source refusals
rej0=$(metric 1 'weft_cache_rejected_objects_total{kind="services"}')
put services/attacker/v2 '{"apiVersion":"v2","kind":"Service","metadata":{"namespace":"attacker","name":"v2"},"spec":{"ports":[{"port":80}]}}'
put services/attacker/a/extra '{"apiVersion":"v1","kind":"Service","metadata":{"namespace":"attacker","name":"a"},"spec":{"ports":[{"port":80}]}}'
put services/attacker/junk '[1, 2]'
wait_for 20 metric_ge 1 'weft_cache_rejected_objects_total{kind="services"}' $((rej0 + 3)) ||
	fail "services refusals counted: $(metric 1 'weft_cache_rejected_objects_total{kind="services"}') (was $rej0; want +3)"
log_of 1 | grep_q 'refused Service attacker/v2: apiVersion: "v2" is not v1' || check_fail "apiVersion v2 Service not refused by name"
log_of 1 | grep_q "refused Service (unnamed): etcd key $ETCD_PREFIX/objects/services/attacker/a/extra: names no object" ||
	check_fail "the key with an extra segment is not refused naming the key: $(log_of 1 | grep extra)"
log_of 1 | grep_q "refused Service attacker/junk: etcd key $ETCD_PREFIX/objects/services/attacker/junk: value is not a Kubernetes object$" ||
	check_fail "a value that is no object is not refused naming its key: $(log_of 1 | grep junk)"
http_get 1 "/debug/objects?kind=services&namespace=attacker"
assert_eq "$(jq -c '.items | length' <<<"$HTTP_BODY")" 0 "cached attacker Services"
info "11: apiVersion v2, an extra key segment and a non-object value refused, counted, named by key"

for i in 1 2 3; do
	weftd_alive "$i" || fail "weftd on node $i died"
done
finish
