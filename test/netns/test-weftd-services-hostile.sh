#!/usr/bin/env bash
# weft-test: serial
# Issue 17, items 1-4, as an attacker who may write under the objects prefix in etcd (no API server
# validates anything): Services that try to take infrastructure addresses and ports, duplicates,
# clusterIPs outside the Service range, nodePorts outside the nodePort range. Each is checked with
# real traffic and the table contents: nothing is hijacked, the rest of each Service still works,
# the refusals are counted (weft_service_rejected_total), an unrelated Service keeps syncing during
# a conflict, a deleted winner lets the previous loser win, and a weftd restarted while the hostile
# Services exist comes up healthy.
#
#   underlay 10.99.0.0/24 -- etcd 10.99.0.2:2379
#                         -- node1 (pod p1: the victim, server "p1")
#                         -- node2 (pod p2: the attacker's pod, server "evil")
#                         -- node3 (pod p3: a client)
#                         -- outside 10.99.0.200
#   3-node vxlan cluster, weftd --objects-datastore etcd --service-cluster-ip-range 10.96.0.0/16
#   --service-external-ip-cidrs 192.0.2.0/24,10.99.0.0/24,<node3>/32 (node3's address listed exactly)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
SVC=$TOP/test/netns/service/svc.py

cluster_init 3 vxlan
N1=$(node_ip 1) N2=$(node_ip 2) N3=$(node_ip 3)
# the underlay too, as an operator might list it: etcd's address and node1's are inside it, and
# still refused (infrastructure; a node address needs an exact listing)
ALLOW="192.0.2.0/24,$CLUSTER_UNDERLAY.0/24,$N3/32"
start_node() {
	weftd_start "$1" --objects-datastore etcd --relist-interval 0 --service-cluster-ip-range 10.96.0.0/16 \
		--service-external-ip-cidrs "$ALLOW"
}
for i in 1 2 3; do start_node "$i"; done
weftd_wait_ready 1 2 3
for i in 1 2 3; do pod_create "$i"; done
P1=$(pod_ip 1) P2=$(pod_ip 2)
SERVERS=()
kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_servers
ip netns exec "$(pod_ns 1)" python3 "$SVC" serve p1 >"$T/serve.1" 2>&1 &
SERVERS+=($!)
ip netns exec "$(pod_ns 2)" python3 "$SVC" serve evil >"$T/serve.2" 2>&1 &
SERVERS+=($!)
for i in 1 2; do wait_for 30 grep -q ready "$T/serve.$i" || fail "server $i did not start"; done
ip -n "$OUT_NS" route add 192.0.2.0/24 via "$N1"

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
del() { etcdctl_ del "$ETCD_PREFIX/objects/$1" >/dev/null; }
# service NS NAME SPEC-JSON [STATUS-JSON] [EXTRA-METADATA-MEMBERS]
service() {
	put "services/$1/$2" "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":\"$1\",\"name\":\"$2\"${5:+,$5}},\"spec\":$3,\"status\":${4:-{\}}}"
}
# backend NS SERVICE POD-IP NODE [PORT-NAMES...]: one ready endpoint, each port name -> 8080
backend() {
	local ns=$1 name=$2 ip=$3 node=$4 ports="" p
	shift 4
	for p in "${@:-}"; do
		ports+="${ports:+,}{\"port\":8080${p:+,\"name\":\"$p\"}}"
	done
	put "endpointslices/$ns/$name-1" "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"namespace\":\"$ns\",\"name\":\"$name-1\",\"labels\":{\"kubernetes.io/service-name\":\"$name\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"$ip\"],\"nodeName\":\"$node\",\"conditions\":{\"ready\":true}}],\"ports\":[$ports]}"
}
in_pod() { ip netns exec "$(pod_ns "$1")" python3 "$SVC" "${@:2}"; }
outside() { ip netns exec "$OUT_NS" python3 "$SVC" "$@"; }
map_of() { ip netns exec "$(node_ns "$1")" nft list map inet weft "$2" 2>/dev/null; }
# metric I NAME{LABELS}: its value on node I (0 if absent)
metric() {
	http_get "$1" /metrics >/dev/null
	awk -v k="$2" '$1 == k { v = $2 } END { print v + 0 }' <<<"$HTTP_BODY"
}
rejected() { metric "$1" "weft_service_rejected_total{reason=\"$2\"}"; }
# etcd_ok NS: etcd itself answers (its /version JSON), not a pod behind a Service
etcd_ok() { ip netns exec "$1" curl -s -m 3 "$ETCD_URL/version" | grep_q '"etcdserver"'; }
N_CASES=0
case_() { N_CASES=$((N_CASES + 1)); info "case: $*"; }

for ns in victim attacker; do
	put "namespaces/$ns" "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}"
done
# the legitimate Services first (older by creation order). Its creationTimestamp is later than
# the attacker's backdated one: in etcd mode only the keys' create revisions may decide.
service victim web '{"type":"NodePort","clusterIP":"10.96.2.1","externalIPs":["192.0.2.10"],"ports":[{"port":80,"targetPort":8080,"nodePort":30100}]}' \
	'' '"creationTimestamp":"2026-01-01T00:00:00Z"'
backend victim web "$P1" node1
# 1: externalIPs / LB ingress IPs of the infrastructure, backed by the attacker's pod
service attacker etcd-ext "{\"clusterIP\":\"10.96.1.1\",\"externalIPs\":[\"$ETCD_IP\"],\"ports\":[{\"port\":2379,\"targetPort\":8080}]}"
backend attacker etcd-ext "$P2" node2
service attacker etcd-lb '{"type":"LoadBalancer","clusterIP":"10.96.1.2","ports":[{"port":2379,"targetPort":8080,"nodePort":30379}]}' \
	"{\"loadBalancer\":{\"ingress\":[{\"ip\":\"$ETCD_IP\"}]}}"
backend attacker etcd-lb "$P2" node2
service attacker metadata '{"clusterIP":"10.96.1.6","externalIPs":["169.254.169.254"],"ports":[{"port":80,"targetPort":8080}]}'
backend attacker metadata "$P2" node2
service attacker node1-grab "{\"clusterIP\":\"10.96.1.3\",\"externalIPs\":[\"$N1\"],\"ports\":[{\"name\":\"h\",\"port\":9876,\"targetPort\":8080},{\"name\":\"s\",\"port\":22,\"targetPort\":8080},{\"name\":\"v\",\"port\":4789,\"protocol\":\"UDP\",\"targetPort\":8080}]}"
backend attacker node1-grab "$P2" node2 h s
service attacker node3-grab "{\"clusterIP\":\"10.96.1.4\",\"externalIPs\":[\"$N3\"],\"ports\":[{\"name\":\"w\",\"port\":80,\"targetPort\":8080},{\"name\":\"h\",\"port\":9876,\"targetPort\":8080},{\"name\":\"v\",\"port\":4789,\"protocol\":\"UDP\",\"targetPort\":5353}]}"
backend attacker node3-grab "$P2" node2 w h
# 2: the same externalIP:port, clusterIP:port and nodePort as victim/web, backdated (etcd mode: the
# creation order is etcd's create revision, whatever metadata says)
service attacker dup '{"type":"NodePort","clusterIP":"10.96.2.2","externalIPs":["192.0.2.10"],"ports":[{"port":80,"targetPort":8080,"nodePort":30100}]}' \
	'' '"creationTimestamp":"2000-01-01T00:00:00Z"'
backend attacker dup "$P2" node2
service attacker dup-cip '{"clusterIP":"10.96.2.1","ports":[{"port":80,"targetPort":8080}]}' '' '"creationTimestamp":"2000-01-01T00:00:00Z"'
backend attacker dup-cip "$P2" node2
# 3: clusterIPs outside the Service range
for c in "victim-pod $P1 8080" "loopback 127.0.0.1 9876" "zero 0.0.0.0 80" "mcast 224.0.0.1 80" "etcd $ETCD_IP 2379" "outside 10.97.0.1 80"; do
	read -r name ip port <<<"$c"
	service attacker "cip-$name" "{\"clusterIP\":\"$ip\",\"ports\":[{\"port\":$port,\"targetPort\":8080}]}"
	backend attacker "cip-$name" "$P2" node2
done
# 4: nodePorts outside 30000-32767 (the clusterIP itself is fine)
service attacker np '{"type":"NodePort","clusterIP":"10.96.1.5","ports":[{"name":"h","port":80,"targetPort":8080,"nodePort":9876},{"name":"s","port":81,"targetPort":8080,"nodePort":22}]}'
backend attacker np "$P2" node2 h s

for i in 1 2 3; do
	wait_for 15 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-ips4 | grep -q '10.96.1.5 . tcp . 81'" ||
		fail "node$i: Services not programmed: $(tail -5 "$(node_dir "$i")/weftd.log")"
done

case_ "1: externalIP / LB IP = etcd:2379: not programmed, etcd still answers, the clusterIPs still work"
for i in 1 2 3; do
	if map_of "$i" svc-ips4 | grep_q -F "$ETCD_IP . tcp . 2379"; then check_fail "node$i programmed etcd's address"; fi
	if map_of "$i" svc-ips4 | grep_q -F "169.254.169.254 . tcp . 80"; then check_fail "node$i programmed 169.254.169.254"; fi
	etcd_ok "$(node_ns "$i")" || check_fail "node$i: etcd's address answers from someone else"
done
etcd_ok "$(pod_ns 3)" || check_fail "pod p3: etcd's address answers from someone else"
r=$(in_pod 3 tcp 10.96.1.1 2379)
info "  p3 -> etcd-ext's clusterIP 10.96.1.1:2379: $r"
[[ $r =~ ^evil\  ]] || check_fail "the rest of etcd-ext does not work: $r"
r=$(in_pod 3 tcp 10.96.1.2 2379)
[[ $r =~ ^evil\  ]] || check_fail "the rest of etcd-lb does not work: $r"
for i in 1 2 3; do
	[ "$(rejected "$i" infrastructure)" -ge 3 ] || check_fail "node$i: infrastructure refusals not counted: $(rejected "$i" infrastructure)"
done

case_ "1: a node's address: unlisted node1 refused; listed node3 only off the reserved ports"
for i in 1 2 3; do
	m=$(map_of "$i" svc-ips4)$(map_of "$i" svc-noep4)
	for k in "$N1 . tcp . 9876" "$N1 . tcp . 22" "$N1 . udp . 4789" "$N3 . tcp . 9876" "$N3 . udp . 4789"; do
		if grep -qF "$k" <<<"$m"; then check_fail "node$i programmed $k"; fi
	done
	grep -qF "$N3 . tcp . 80" <<<"$m" || check_fail "node$i: the listed node address $N3:80 is not programmed"
	[ "$(rejected "$i" node-address)" -ge 2 ] || check_fail "node$i: node-address refusals not counted"
	[ "$(rejected "$i" reserved-port)" -ge 2 ] || check_fail "node$i: reserved-port refusals not counted"
done
r=$(outside tcp "$N1" 22 2)
info "  outside -> $N1:22: $r"
[[ $r =~ ^evil ]] && check_fail "node1:22 answers from the attacker's pod"
r=$(outside tcp "$N3" 80)
info "  outside -> $N3:80 (listed exactly): $r"
[[ $r =~ ^evil\  ]] || check_fail "an explicitly listed node address does not work: $r"
r=$(in_pod 3 tcp "$P1" 8080)
info "  p3 -> p1 across the vxlan overlay: $r"
[[ $r =~ ^p1\  ]] || check_fail "cross-node pod traffic broken: $r"
http_get 1 /healthz
assert_eq "$HTTP_CODE" 200 "node1 /healthz"

case_ "2: duplicates: the older by creation order wins, backdating changes nothing"
r=$(outside tcp 192.0.2.10 80)
info "  outside -> 192.0.2.10:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "externalIP conflict: $r"
r=$(in_pod 3 tcp 10.96.2.1 80)
info "  p3 -> 10.96.2.1:80: $r"
[[ $r =~ ^p1\  ]] || check_fail "clusterIP conflict: $r"
r=$(outside tcp "$N2" 30100)
info "  outside -> $N2:30100: $r"
[[ $r =~ ^p1\  ]] || check_fail "nodePort conflict: $r"
r=$(in_pod 3 tcp 10.96.2.2 80)
[[ $r =~ ^evil\  ]] || check_fail "the rest of attacker/dup (its own clusterIP) does not work: $r"
for i in 1 2 3; do
	[ "$(rejected "$i" conflict)" -ge 3 ] || check_fail "node$i: conflicts not counted: $(rejected "$i" conflict)"
done

case_ "2: an unrelated Service change is applied during the conflict"
service victim later '{"clusterIP":"10.96.2.5","ports":[{"port":80,"targetPort":8080}]}'
backend victim later "$P1" node1
wait_for 30 bash -c "[[ \$(ip netns exec $(pod_ns 3) python3 $SVC tcp 10.96.2.5 80) =~ ^p1\  ]]" ||
	check_fail "a new Service is not programmed while two others conflict"

case_ "3: clusterIPs outside the Service range are never programmed"
for i in 1 2 3; do
	m=$(map_of "$i" svc-ips4)$(map_of "$i" svc-noep4)
	for k in "$P1 . tcp . 8080" "127.0.0.1 . tcp . 9876" "0.0.0.0 . tcp . 80" "224.0.0.1 . tcp . 80" "$ETCD_IP . tcp . 2379" "10.97.0.1 . tcp . 80"; do
		if grep -qF "$k" <<<"$m"; then check_fail "node$i programmed clusterIP $k"; fi
	done
	for reason in pod-network loopback unspecified multicast outside-service-range; do
		[ "$(rejected "$i" "$reason")" -ge 1 ] || check_fail "node$i: no $reason refusal counted"
	done
done
r=$(in_pod 3 tcp "$P1" 8080)
[[ $r =~ ^p1\  ]] || check_fail "p3 -> the victim pod's own address: $r"
http_get 2 /healthz
assert_eq "$HTTP_CODE" 200 "node2 /healthz (127.0.0.1:9876 as a clusterIP)"

case_ "4: nodePorts 9876 and 22 are never programmed"
for i in 1 2 3; do
	m=$(map_of "$i" svc-nodeports4)$(map_of "$i" svc-noep-nodeports4)
	for k in "tcp . 9876" "tcp . 22"; do
		if grep -qE "(^|[ {,])$k " <<<"$m"; then check_fail "node$i programmed nodePort $k"; fi
	done
	[ "$(rejected "$i" node-port-range)" -ge 2 ] || check_fail "node$i: node-port-range refusals not counted"
done
r=$(outside tcp "$N2" 22 2)
info "  outside -> $N2:22: $r"
[[ $r =~ ^evil ]] && check_fail "node2:22 answers from the attacker's pod"
r=$(in_pod 3 tcp 10.96.1.5 81)
[[ $r =~ ^evil\  ]] || check_fail "the rest of attacker/np does not work: $r"

case_ "a refusal is logged once, not at every sync"
n=$(grep -c 'attacker/dup: externalIP 192.0.2.10 TCP/80 refused: conflict' "$(node_dir 1)/weftd.log")
assert_eq "$n" 1 "node1 log lines for attacker/dup's lost externalIP"

case_ "restart while the hostile Services exist: healthy, nothing hijacked"
weftd_stop 1
start_node 1
weftd_wait_ready 1
wait_for 10 sh -c "ip netns exec $(node_ns 1) nft list map inet weft svc-ips4 | grep -q '10.96.2.5 . tcp . 80'" ||
	check_fail "node1 did not program its Services after the restart"
if map_of 1 svc-ips4 | grep_q -F "$ETCD_IP . tcp . 2379"; then check_fail "node1 programmed etcd's address after a restart"; fi
etcd_ok "$(node_ns 1)" || check_fail "node1 cannot reach etcd after the restart"
r=$(outside tcp 192.0.2.10 80)
[[ $r =~ ^p1\  ]] || check_fail "after restart, externalIP conflict: $r"

case_ "2: the winner goes: the previous loser wins at the next sync, on every node"
del services/victim/web
for i in 1 2 3; do
	wait_for 10 sh -c "ip netns exec $(node_ns "$i") nft list map inet weft svc-nodeports4 | grep -qE 'tcp . 30100 : goto \"?svc-attacker/dup/'" ||
		check_fail "node$i: attacker/dup's nodePort did not take over"
done
r=$(outside tcp 192.0.2.10 80)
info "  outside -> 192.0.2.10:80 after victim/web is gone: $r"
[[ $r =~ ^evil\  ]] || check_fail "the loser did not win after the winner went: $r"
r=$(in_pod 3 tcp 10.96.2.1 80)
[[ $r =~ ^evil\  ]] || check_fail "attacker/dup-cip did not take the freed clusterIP: $r"

for i in 1 2 3; do
	http_get "$i" /healthz
	assert_eq "$HTTP_CODE" 200 "node$i /healthz at the end"
	http_get "$i" /metrics
	info "node $i: sync failures $(metric "$i" weft_service_sync_failures_total), rejected: $(grep '^weft_service_rejected_total' <<<"$HTTP_BODY" | sed 's/weft_service_rejected_total//' | tr '\n' ' ')"
	[ "$(metric "$i" weft_service_sync_failures_total)" = 0 ] || check_fail "node$i: failed Service syncs"
done
info "$N_CASES cases"
finish
