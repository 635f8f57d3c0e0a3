#!/usr/bin/env bash
# weft-test: serial
# `weft service explain` against the datapath: every answer is cross-checked with real probes in a
# 3-node dual-stack cluster (vxlan, IPv6 pods overlaid):
#
#   node1 (pod p1, server "p1")  node2 (pod p2, server "p2")  node3 (pod p3, the client)
#   outside 10.99.0.200 (a host outside the cluster)
#
# For a ClusterIP (IPv4 and IPv6), a NodePort and an externalIP (externalTrafficPolicy Cluster),
# a LoadBalancer IP and a NodePort with externalTrafficPolicy Local, internalTrafficPolicy Local
# (this node's view and another's with --node), sessionAffinity ClientIP, no endpoints (TCP and
# UDP), a terminating endpoint beside a ready one and alone, a not-ready one, hairpin, a refused
# externalIP, a ClusterIP conflict, an address of the range no Service holds and an undefined port:
# the endpoints explain names are exactly the ones several probes reach, "masquerade: yes|no"
# matches the source the server sees, "rejected" a refused connection, "dropped" a timeout,
# "refused" no answer from any endpoint; exit status 0 when a Service answers, 1 when none does.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
WEFT_TOOL=$WEFT_BUILD/tool/weft
require_built "$WEFT_TOOL"
SVC=$TOP/test/netns/service/svc.py
RANGE4=10.96.0.0/16 RANGE6=fd00:10:96::/112
CLUSTER_NETWORK6=fd00:10:244::/56
cluster_init 3 vxlan
for i in 1 2 3; do
	ip netns exec "$(node_ns "$i")" sysctl -qw net.ipv6.conf.all.forwarding=1
	weftd_start "$i" --objects-datastore etcd --relist-interval 0 --service-external-ip-cidrs 192.0.2.0/24 \
		--service-cluster-ip-range "$RANGE4,$RANGE6"
done
weftd_wait_ready 1 2 3

pod_ip6() { python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[10])' "$(lease_var "$1" WEFT_SUBNET6)"; }
gw6() { local g; g=$(lease_var "$1" WEFT_SUBNET6); echo "${g%/*}"; }
for i in 1 2 3; do
	pod_create "$i"
	ip -n "$(node_ns "$i")" link set "veth-p$i" type bridge_slave hairpin on
	ip -n "$(node_ns "$i")" addr add "$(lease_var "$i" WEFT_SUBNET6)" dev cni0 nodad
	ip -n "$(pod_ns "$i")" addr add "$(pod_ip6 "$i")/64" dev eth0 nodad
	ip -n "$(pod_ns "$i")" route add default via "$(gw6 "$i")"
done
P1=$(pod_ip 1) P2=$(pod_ip 2) P3=$(pod_ip 3)
P1v6=$(pod_ip6 1) P2v6=$(pod_ip6 2) P3v6=$(pod_ip6 3)
N1=$(node_ip 1) N2=$(node_ip 2)
info "pods: p1 $P1 $P1v6, p2 $P2 $P2v6, p3 $P3 $P3v6"
SERVERS=()
kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_servers
for i in 1 2; do
	ip netns exec "$(pod_ns "$i")" python3 "$SVC" serve "p$i" >"$T/serve.$i" 2>&1 &
	SERVERS+=($!)
done
for i in 1 2; do wait_for 30 grep -q ready "$T/serve.$i" || fail "server p$i did not start"; done

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
# service NAME SPEC-JSON [STATUS-JSON]
service() {
	put "services/shop/$1" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\"},\"spec\":$2,\"status\":${3:-{\}}}"
}
# endpoint IP NODE [CONDITIONS-JSON]
endpoint() { echo "{\"addresses\":[\"$1\"],\"nodeName\":\"$2\",\"conditions\":${3:-{\"ready\":true\}}}"; }
# slice NAME SERVICE IPv4|IPv6 ENDPOINTS PORTS
slice() {
	put "endpointslices/shop/$1" "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"shop\",\"name\":\"$1\",\"labels\":{\"kubernetes.io/service-name\":\"$2\"}},\"addressType\":\"$3\",\"endpoints\":[$4],\"ports\":[$5]}"
}
HTTP='{"name":"http","port":8080,"protocol":"TCP"}'
P8080='{"port":8080}'
TERMINATING='{"ready":false,"serving":true,"terminating":true}'

put namespaces/shop '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}'
service web '{"type":"NodePort","ipFamilyPolicy":"RequireDualStack","ipFamilies":["IPv4","IPv6"],
	"clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10","fd00:10:96::10"],"externalIPs":["192.0.2.7"],
	"ports":[{"name":"http","port":80,"targetPort":"http","nodePort":30080}]}'
slice web-v4 web IPv4 "$(endpoint "$P1" node1),$(endpoint "$P2" node2),$(endpoint "$P3" node3 '{"ready":false}')" "$HTTP"
slice web-v6 web IPv6 "$(endpoint "$P1v6" node1),$(endpoint "$P2v6" node2)" "$HTTP"
service empty '{"clusterIP":"10.96.0.11","ports":[{"port":80},{"name":"u","port":53,"protocol":"UDP"}]}'
service solo '{"clusterIP":"10.96.0.12","ports":[{"port":80,"targetPort":8080}]}'
slice solo-1 solo IPv4 "$(endpoint "$P1" node1)" "$P8080"
service lb '{"type":"LoadBalancer","clusterIP":"10.96.0.13","externalTrafficPolicy":"Local","ports":[{"port":80,"targetPort":8080,"nodePort":30081}]}' \
	'{"loadBalancer":{"ingress":[{"ip":"192.0.2.9"}]}}'
slice lb-1 lb IPv4 "$(endpoint "$P2" node2)" "$P8080"
service itl '{"clusterIP":"10.96.0.14","internalTrafficPolicy":"Local","ports":[{"port":80,"targetPort":8080}]}'
slice itl-1 itl IPv4 "$(endpoint "$P2" node2)" "$P8080"
service aff '{"clusterIP":"10.96.0.16","sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":60}},"ports":[{"port":80,"targetPort":8080}]}'
slice aff-1 aff IPv4 "$(endpoint "$P1" node1),$(endpoint "$P2" node2)" "$P8080"
service term '{"clusterIP":"10.96.0.17","ports":[{"port":80,"targetPort":8080}]}'
slice term-1 term IPv4 "$(endpoint "$P1" node1),$(endpoint "$P2" node2 "$TERMINATING")" "$P8080"
service termonly '{"clusterIP":"10.96.0.18","ports":[{"port":80,"targetPort":8080}]}'
slice termonly-1 termonly IPv4 "$(endpoint "$P2" node2 "$TERMINATING")" "$P8080"
service badext '{"clusterIP":"10.96.0.19","externalIPs":["198.51.100.7"],"ports":[{"port":80,"targetPort":8080}]}'
slice badext-1 badext IPv4 "$(endpoint "$P1" node1)" "$P8080"
# created after solo: loses 10.96.0.12 . tcp . 80 (the older wins); its endpoint p2 must never answer
service dup '{"clusterIP":"10.96.0.12","ports":[{"port":80,"targetPort":8080}]}'
slice dup-1 dup IPv4 "$(endpoint "$P2" node2)" "$P8080"

# explain NODE ARGS...: the report of node NODE's weftd in $OUT, its exit status in $RC
explain() {
	local n=$1
	shift
	RC=0
	OUT=$(ip netns exec "$(node_ns "$n")" "$WEFT_TOOL" service explain "$@" 2>&1) || RC=$?
	printf '%s\n' "$OUT" | sed 's/^/    | /'
}
for i in 1 2 3; do
	wait_for 20 sh -c "ip netns exec $(node_ns "$i") $WEFT_TOOL service explain 10.96.0.12:80 | grep -q 'conflict'" ||
		fail "node$i: Services not programmed: $(tail -5 "$(node_dir "$i")/weftd.log")"
done
in_pod() { ip netns exec "$(pod_ns "$1")" python3 "$SVC" "${@:2}"; }
in_node() { ip netns exec "$(node_ns "$1")" python3 "$SVC" "${@:2}"; }
outside() { ip netns exec "$OUT_NS" python3 "$SVC" "$@"; }
ip -n "$OUT_NS" route add 192.0.2.7 via "$N1"
ip -n "$OUT_NS" route add 192.0.2.9 via "$N2"
ip -n "$OUT_NS" route add 198.51.100.7 via "$N1"
TO=$((2 * WEFT_TEST_SLACK))
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }

# the pod names of the endpoints explain's verdict line names ("p1 p2"), sorted
name_of() {
	case $1 in
	"$P1" | "[$P1v6]") echo p1 ;;
	"$P2" | "[$P2v6]") echo p2 ;;
	"$P3" | "[$P3v6]") echo p3 ;;
	*) echo "?$1" ;;
	esac
}
explained_eps() {
	local line ep
	line=$(grep '^  verdict: forwarded to' <<<"$OUT" || true)
	grep -oE '(\[[0-9a-f:]+\]|[0-9.]+):[0-9]+' <<<"$line" | while read -r ep; do name_of "${ep%:*}"; done | sort -u | xargs
}
# probes N CMD...: the servers that answered N probes, sorted ("p1 p2"), in $s, and the sources
# they saw in $SOURCES; any other answer (timeout, refused) is listed as itself
probes() {
	local n=$1 out
	shift
	out=$(for _ in $(seq "$n"); do "$@"; done)
	SOURCES=$(awk 'NF > 1 { print $2 }' <<<"$out" | sort -u | xargs)
	s=$(awk '{ print $1 }' <<<"$out" | sort -u | xargs)
}
# expect_eps WHAT PROBED: explain's endpoints are the probed ones
expect_eps() {
	local e
	e=$(explained_eps)
	info "  explain: [$e], probes: [$2] (sources seen: $SOURCES)"
	if [ -z "$e" ] || [ "$e" != "$2" ]; then check_fail "$1: explain names [$e], the probes reached [$2]"; fi
	return 0
}
# expect_masq WHAT CLIENT: explain's "masquerade:" line against the sources the servers saw
expect_masq() {
	local m
	m=$(sed -n 's/^  masquerade: \(yes\|no\).*/\1/p' <<<"$OUT")
	case $m in
	yes) [[ " $SOURCES " != *" $2 "* ]] || check_fail "$1: explain says masqueraded, the server saw the client $2" ;;
	no) [ "$SOURCES" = "$2" ] || check_fail "$1: explain says not masqueraded, the server saw [$SOURCES], not $2" ;;
	*) check_fail "$1: no masquerade line" ;;
	esac
}
expect_verdict() { grep -q "^  verdict: $2" <<<"$OUT" || check_fail "$1: explain's verdict is not '$2'"; }
expect_rc() { [ "$RC" = "$2" ] || check_fail "$1: exit status $RC, expected $2"; }

case_ "ClusterIP from a pod: both ready endpoints, the not-ready one excluded, source kept"
explain 3 10.96.0.10:80 --from "$P3"
expect_rc "ClusterIP" 0
grep -q "^10.96.0.10:80/TCP: ClusterIP of Service shop/web" <<<"$OUT" || check_fail "ClusterIP: not named"
grep -q "^  endpoint $P3:8080 (node node3): not chosen: not ready" <<<"$OUT" || check_fail "ClusterIP: the not-ready endpoint not explained"
probes 20 in_pod 3 tcp 10.96.0.10 80 "$TO"
expect_eps "ClusterIP" "$s"
expect_masq "ClusterIP" "$P3"

case_ "ClusterIP over IPv6"
explain 3 "[fd00:10:96::10]:80" --from "$P3v6"
expect_rc "IPv6 ClusterIP" 0
probes 20 in_pod 3 tcp fd00:10:96::10 80 "$TO"
expect_eps "IPv6 ClusterIP" "$s"
expect_masq "IPv6 ClusterIP" "$P3v6"

case_ "NodePort (externalTrafficPolicy Cluster) from outside: masqueraded"
explain 1 "$N1:30080" --from "$OUTSIDE_IP"
expect_rc "NodePort" 0
grep -q "NodePort of Service shop/web" <<<"$OUT" || check_fail "NodePort: not named"
probes 16 outside tcp "$N1" 30080 "$TO"
expect_eps "NodePort" "$s"
expect_masq "NodePort" "$OUTSIDE_IP"

case_ "externalIP from outside: masqueraded"
explain 1 192.0.2.7:80
expect_rc "externalIP" 0
grep -q "^192.0.2.7:80/TCP: externalIP of Service shop/web" <<<"$OUT" || check_fail "externalIP: not named"
probes 16 outside tcp 192.0.2.7 80 "$TO"
expect_eps "externalIP" "$s"
expect_masq "externalIP" "$OUTSIDE_IP"

case_ "LoadBalancer IP, externalTrafficPolicy Local, on the endpoint's node: source kept"
explain 2 192.0.2.9:80 --from "$OUTSIDE_IP"
expect_rc "LB IP" 0
grep -q "^192.0.2.9:80/TCP: LoadBalancer IP of Service shop/lb" <<<"$OUT" || check_fail "LB IP: not named"
probes 6 outside tcp 192.0.2.9 80 "$TO"
expect_eps "LB IP (Local)" "$s"
expect_masq "LB IP (Local)" "$OUTSIDE_IP"

case_ "LoadBalancer IP, externalTrafficPolicy Local, from a pod on another node: every endpoint, source kept"
explain 3 192.0.2.9:80 --from "$P3"
probes 4 in_pod 3 tcp 192.0.2.9 80 "$TO"
expect_eps "LB IP (Local) from a pod" "$s"
expect_masq "LB IP (Local) from a pod" "$P3"

case_ "NodePort, externalTrafficPolicy Local, on a node without a local endpoint: dropped"
explain 1 "$N1:30081" --from "$OUTSIDE_IP"
expect_verdict "eTP Local elsewhere" dropped
grep -q "^  endpoint $P2:8080 (node node2): not chosen: not on this node" <<<"$OUT" || check_fail "eTP Local: the remote endpoint not explained"
r=$(outside tcp "$N1" 30081 "$TO")
info "  probe: $r"
assert_eq "$r" timeout "eTP Local on a node without a local endpoint (explain: dropped)"

case_ "internalTrafficPolicy Local: dropped on node3, forwarded on node2 (asked with --node)"
explain 3 10.96.0.14:80
expect_verdict "iTP Local on node3" dropped
r=$(in_pod 3 tcp 10.96.0.14 80 "$TO")
info "  probe from p3: $r"
assert_eq "$r" timeout "iTP Local from a node without a local endpoint (explain: dropped)"
explain 3 10.96.0.14:80 --node node2
grep -q "^  node: node2" <<<"$OUT" || check_fail "--node node2: not node2's view"
probes 4 in_node 2 tcp 10.96.0.14 80 "$TO"
expect_eps "iTP Local on node2" "$s"

case_ "sessionAffinity ClientIP: one endpoint for one client, among those explained"
explain 3 10.96.0.16:80
grep -q "^  session affinity: ClientIP, timeout 60 s" <<<"$OUT" || check_fail "affinity: not explained"
e=$(explained_eps)
[ "$e" = "p1 p2" ] || check_fail "affinity: explain names [$e]"
probes 12 in_pod 3 tcp 10.96.0.16 80 "$TO"
info "  probes: [$s]"
[[ $s =~ ^p[12]$ ]] || check_fail "affinity: 12 connections of one client reached [$s]"

case_ "no endpoints: rejected (TCP reset, ICMP port unreachable), every port listed without one"
explain 3 10.96.0.11
expect_rc "no endpoints" 0
grep -q "^10.96.0.11:80/TCP: ClusterIP" <<<"$OUT" || check_fail "a DEST without a port does not list port 80/TCP"
grep -q "^10.96.0.11:53/UDP: ClusterIP" <<<"$OUT" || check_fail "a DEST without a port does not list port 53/UDP"
explain 3 10.96.0.11:80
expect_verdict "no endpoints (TCP)" "rejected (.*TCP reset"
r=$(in_pod 3 tcp 10.96.0.11 80 "$TO")
assert_eq "$r" refused "no endpoints, TCP (explain: rejected)"
explain 3 10.96.0.11:53/udp
expect_verdict "no endpoints (UDP)" "rejected (.*ICMP port unreachable"
r=$(in_pod 3 udp 10.96.0.11 53 "$TO")
assert_eq "$r" refused "no endpoints, UDP (explain: rejected)"

case_ "a terminating endpoint beside a ready one: not chosen"
explain 3 10.96.0.17:80
grep -q "^  endpoint $P2:8080 (node node2): not chosen: terminating: ready endpoints exist" <<<"$OUT" ||
	check_fail "terminating: not explained"
probes 12 in_pod 3 tcp 10.96.0.17 80 "$TO"
expect_eps "terminating + ready" "$s"

case_ "only a terminating, serving endpoint: chosen"
explain 3 10.96.0.18:80
grep -q "^  endpoint $P2:8080 (node node2): chosen (terminating but serving" <<<"$OUT" || check_fail "terminating only: not explained"
probes 4 in_pod 3 tcp 10.96.0.18 80 "$TO"
expect_eps "terminating only" "$s"

case_ "hairpin: a pod reaching itself through its Service is masqueraded"
explain 1 10.96.0.12:80 --from "$P1"
grep -q "^  masquerade: yes (hairpin" <<<"$OUT" || check_fail "hairpin: not explained"
probes 3 in_pod 1 tcp 10.96.0.12 80 "$TO"
expect_masq "hairpin" "$P1"

case_ "a ClusterIP conflict: the younger Service is refused, only the older one's endpoints answer"
explain 3 10.96.0.12:80
grep -A2 "^10.96.0.12:80/TCP: ClusterIP of Service shop/dup" <<<"$OUT" | grep -q "verdict: refused: .*conflict, held by the older shop/solo" ||
	check_fail "conflict: the loser not explained as refused"
probes 12 in_pod 3 tcp 10.96.0.12 80 "$TO"
expect_eps "conflict (the winner)" "$s"

case_ "a refused externalIP: explained as refused, no answer"
explain 1 198.51.100.7:80
expect_rc "refused externalIP" 1
expect_verdict "refused externalIP" "refused: .*external-ip-not-allowed\|refused: .*not allowed"
r=$(outside tcp 198.51.100.7 80 "$TO")
info "  probe: $r"
[[ $r != p[0-9]* ]] || check_fail "a refused externalIP answered: $r"

case_ "an address of the range no Service holds: dropped; an undefined port of a ClusterIP: rejected"
explain 3 10.96.0.99:80
expect_rc "no Service" 1
grep -q "no Service answers" <<<"$OUT" || check_fail "no Service: not said"
grep -q "drops it" <<<"$OUT" || check_fail "no Service: the drop not explained"
r=$(in_pod 3 tcp 10.96.0.99 80 "$TO")
assert_eq "$r" timeout "an address of the range no Service holds (explain: drops)"
explain 3 10.96.0.10:81
expect_rc "undefined port" 1
grep -q "rejects it" <<<"$OUT" || check_fail "undefined port: not explained as rejected"
r=$(in_pod 3 tcp 10.96.0.10 81 "$TO")
assert_eq "$r" refused "an undefined port of a ClusterIP (explain: rejects)"

case_ "usage errors"
explain 3 not-an-address
expect_rc "bad DEST" 2
explain 3 10.96.0.10:80 --from nosuch/pod
expect_rc "unknown --from" 2

info "$N_CASES cases"
finish
