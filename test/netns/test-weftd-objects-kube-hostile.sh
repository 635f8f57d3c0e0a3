#!/usr/bin/env bash
# weft-test: serial
# shellcheck disable=SC2317 # helpers below are called through wait_for
# Hostile objects in Kubernetes mode, through the fake API server (test/kube/fake-apiserver.py),
# asserted with real traffic on one node (pods on its bridge; br_netfilter polices same-node
# traffic). The API server validates what it stores, so only what it accepts and weft refuses can
# reach weft's fail-closed path: weft's own limits (docs/object-limits.md) (issue 17, item 6):
#
#   victim/iso (app=iso), victim/cli (app=cli), victim/other (app=other), attacker/cli (app=cli)
#   victim/deny-iso: default deny ingress for app=iso
#   victim/allow-cli: app=iso from {namespaceSelector kubernetes.io/metadata.name=victim, app=cli}
#
#   - namespace attacker written with kubernetes.io/metadata.name=victim: attacker/cli denied (7)
#   - deny-iso updated with 1,001 ipBlock peers, allow-cli with a rule of 101 ports: the API server
#     takes both, weft refuses both, and keeps the last good versions in force: iso still denied to
#     other/attacker, still open to cli; counted, held, shown in /debug/objects
#   - a decodable update replaces the held version (allow-cli on port 81 only: cli denied on 80)
#   - deletes through the API really remove the policies (iso open to everyone)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

require_root
require_cmd ip jq curl python3
require_built "$WEFTD"
NETPOL=$TOP/test/netns/policy/netpol.py
[ -d /proc/sys/net/bridge ] || skip "br_netfilter is not loaded (same-node traffic would not be policed)"

FIXTURE=$TOP/test/kube/fake-apiserver.py
API_IP=$ETCD_IP
API_URL=http://$API_IP:6443
TOKEN=weft-hostile-token
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json

cluster_init 1 host-gw --no-etcd
ip netns exec "$ETCD_NS" python3 "$FIXTURE" --bind "$API_IP" --port 6443 --token "$TOKEN" \
	--node node1=10.244.1.0/24 >>"$T/fixture.log" 2>&1 &
FIXTURE_PID=$!
on_exit "kill $FIXTURE_PID 2>/dev/null; wait $FIXTURE_PID 2>/dev/null"
wait_listen "$ETCD_NS" 6443 || { cat "$T/fixture.log" >&2; fail "fake-apiserver did not come up"; }
api() { # api METHOD PATH [CURL ARGS...]
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -s -m 5 -X "$m" -H "Authorization: Bearer $TOKEN" "$@" "$API_URL$p"
}
apply() { # apply FILE|-: one object or a List, through /fixture/apply (created or merged)
	local out
	out=$(api POST /fixture/apply -H 'Content-Type: application/json' --data-binary "@$1") || fail "apply: curl failed"
	jq -e '.kind != "Status"' <<<"$out" >/dev/null 2>&1 || fail "the API server refused an apply: $out"
}
cluster_kubeconfig "$KUBECONFIG_FILE" "$API_URL" "$TOKEN"
cluster_config_json >"$NET_CONF"
weftd_start 1 --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF" --relist-interval 1s
weftd_wait_ready 1

metric() {
	http_get 1 /metrics
	awk -v m="$1" '$1 == m { print $2 }' <<<"$HTTP_BODY"
}
metric_eq() { [ "$(metric "$1")" = "$2" ]; }
metric_ge() { local v; v=$(metric "$1"); [ -n "$v" ] && [ "$v" -ge "$2" ]; }
declare -A PNS PIP
PIDS=()
kill_bg() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_bg
gw=$(lease_var 1 WEFT_SUBNET)
ip -n "$(node_ns 1)" link add cni0 type bridge
ip -n "$(node_ns 1)" addr add "$gw" dev cni0
ip -n "$(node_ns 1)" link set cni0 up
K=0
mkpod() { # mkpod NS P APP
	local ns=$1 p=$2 pns ip
	K=$((K + 1))
	ip=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[10 + int(sys.argv[2])])' "$gw" "$K")
	pns=$(mk_netns "p$ns$p")
	PNS[$ns/$p]=$pns PIP[$ns/$p]=$ip
	ip -n "$(node_ns 1)" link add "v$K" type veth peer name eth0 netns "$pns"
	ip -n "$(node_ns 1)" link set "v$K" master cni0 up
	ip -n "$pns" addr add "$ip/${gw#*/}" dev eth0
	ip -n "$pns" link set eth0 up
	ip -n "$pns" route add default via "${gw%/*}"
	ip netns exec "$pns" python3 "$NETPOL" serve >"$T/serve.$ns$p" 2>&1 &
	PIDS+=($!)
	wait_for 30 grep -q ready "$T/serve.$ns$p" || fail "server in $ns/$p did not start"
	jq -nc --arg ns "$ns" --arg p "$p" --arg app "$3" --arg ip "$ip" \
		'{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$p,labels:{app:$app}},
		spec:{nodeName:"node1",containers:[{name:"c",image:"x"}]},status:{phase:"Running",podIP:$ip,podIPs:[{ip:$ip}]}}' >"$T/pod.json"
	apply "$T/pod.json"
}
tcp() { ip netns exec "$1" python3 -c 'import socket,sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=0.5); s.settimeout(0.5)
    sys.exit(0 if s.recv(2) == b"ok" else 1)
except OSError:
    sys.exit(1)' "$2" "$3"; }
allowed() { tcp "${PNS[$1]}" "${PIP[$2]}" 80; }
denied() { ! allowed "$@"; }
expect_isolated() {
	allowed victim/cli victim/iso || check_fail "$1: victim/cli -> victim/iso (allowed by allow-cli) denied"
	denied victim/other victim/iso || check_fail "$1: victim/other -> victim/iso allowed (the default deny is gone)"
	denied attacker/cli victim/iso || check_fail "$1: attacker/cli -> victim/iso allowed"
}

echo '{"apiVersion":"v1","kind":"List","items":[
	{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"victim"}},
	{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"attacker","labels":{"kubernetes.io/metadata.name":"victim"}}}]}' >"$T/ns.json"
apply "$T/ns.json"
mkpod victim iso iso
mkpod victim cli cli
mkpod victim other other
mkpod attacker cli cli
DENY='{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"victim","name":"deny-iso"},
	"spec":{"podSelector":{"matchLabels":{"app":"iso"}},"policyTypes":["Ingress"]}}'
ALLOW='{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"victim","name":"allow-cli"},
	"spec":{"podSelector":{"matchLabels":{"app":"iso"}},"ingress":[{"from":[{
	"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"victim"}},"podSelector":{"matchLabels":{"app":"cli"}}}]}]}}'
echo "$DENY" >"$T/deny.json"
echo "$ALLOW" >"$T/allow.json"
apply "$T/deny.json"
apply "$T/allow.json"
wait_for 10 denied victim/other victim/iso || fail "victim/other -> victim/iso not denied 10 s after the default deny"
wait_for 5 allowed victim/cli victim/iso || fail "victim/cli -> victim/iso not allowed by allow-cli"
expect_isolated "before any hostile update"
info "the API server's namespace label and weft's agree: attacker/cli denied, victim/cli allowed"

# ---- updates the API server accepts and weft refuses (its own limits)
rej0=$(metric 'weft_cache_rejected_objects_total{kind="networkpolicies"}')
jq -c '.spec.ingress = [{"from": [range(1001) | {"ipBlock": {"cidr": "10.\(. / 250 | floor).\(. % 250).0/24"}}]}]' \
	<<<"$DENY" >"$T/deny-big.json"
jq -c '.spec.ingress[0].ports = [range(101) | {"port": (. + 1), "protocol": "TCP"}]' <<<"$ALLOW" >"$T/allow-ports.json"
apply "$T/deny-big.json"
apply "$T/allow-ports.json"
[ "$(api GET /apis/networking.k8s.io/v1/namespaces/victim/networkpolicies/deny-iso | jq '.spec.ingress[0].from | length')" = 1001 ] ||
	fail "the API server did not store the 1,001-peer update"
wait_for 5 metric_eq 'weft_cache_stale_objects{kind="networkpolicies"}' 2 ||
	fail "weft_cache_stale_objects{kind=\"networkpolicies\"} = $(metric 'weft_cache_stale_objects{kind="networkpolicies"}'), want 2"
metric_ge 'weft_cache_rejected_objects_total{kind="networkpolicies"}' $((rej0 + 2)) || check_fail "the refused updates were not counted"
sleep 1.5
expect_isolated "updates past weft's limits"
sleep 2 # relists (every 1 s) find the same versions: no new log line, no new count
assert_eq "$(grep -c 'refused NetworkPolicy victim/deny-iso' "$(node_dir 1)/weftd.log")" 1 "log lines for the refused deny-iso"
assert_eq "$(metric 'weft_cache_rejected_objects_total{kind="networkpolicies"}')" $((rej0 + 2)) "refusals counted over relists"
grep -q 'refused NetworkPolicy victim/deny-iso: spec.ingress\[0\].from: the policy has more than the limit of 1000 peers (keeping the last version' \
	"$(node_dir 1)/weftd.log" || check_fail "deny-iso refusal: $(grep 'deny-iso' "$(node_dir 1)/weftd.log")"
grep -q 'refused NetworkPolicy victim/allow-cli: spec.ingress\[0\].ports: 101 ports, more than the limit of 100' "$(node_dir 1)/weftd.log" ||
	check_fail "allow-cli refusal: $(grep 'allow-cli' "$(node_dir 1)/weftd.log")"
http_get 1 "/debug/objects?kind=networkpolicies&namespace=victim"
jq -e '[.items[] | select(.weftHeld.lastGoodVersion)] | length == 2' <<<"$HTTP_BODY" >/dev/null ||
	check_fail "/debug/objects does not mark both policies held: $HTTP_BODY"
jq -e '.items[] | select(.metadata.name == "deny-iso") | (.spec.ingress // []) | length == 0' <<<"$HTTP_BODY" >/dev/null ||
	check_fail "deny-iso is not cached at its last good version: $HTTP_BODY"
info "updates past weft's limits refused; the last good versions stay in force"

# ---- a decodable version replaces the held one; deletes remove
jq -c '.spec.ingress[0].ports = [{"port": 81, "protocol": "TCP"}]' <<<"$ALLOW" >"$T/allow-81.json"
apply "$T/allow-81.json"
wait_for 5 denied victim/cli victim/iso || check_fail "victim/cli -> victim/iso:80 still allowed after allow-cli moved to port 81"
metric_eq 'weft_cache_stale_objects{kind="networkpolicies"}' 1 || check_fail "allow-cli still held after a decodable update"
api DELETE /apis/networking.k8s.io/v1/namespaces/victim/networkpolicies/deny-iso >/dev/null
api DELETE /apis/networking.k8s.io/v1/namespaces/victim/networkpolicies/allow-cli >/dev/null
wait_for 5 allowed victim/other victim/iso || check_fail "victim/other -> victim/iso still denied after both policies were deleted"
metric_eq 'weft_cache_stale_objects{kind="networkpolicies"}' 0 || check_fail "held policies left after the deletes"
info "a decodable update and real deletes take effect"
weftd_alive 1 || fail "weftd died"
finish
