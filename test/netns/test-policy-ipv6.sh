#!/usr/bin/env bash
# NetworkPolicy over IPv6 in a dual-stack cluster (vxlan, Network6 as in test-weftd-dualstack):
# pods x/a, y/a on node 1 and x/b, y/b on node 2, each with an IPv4 and an IPv6 address. Before any
# policy every IPv6 probe passes (so a denial below is the policy, not broken IPv6); then x gets a
# default deny ingress plus an allow from pods a of namespace y on port 80 TCP, and each IPv6 pair
# is checked same-node and cross-node, the allowed port and the other one.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
[ -d /proc/sys/net/bridge ] || skip "br_netfilter is not loaded (same-node traffic would not be policed)"

CLUSTER_NETWORK6=fd00:10:244::/56
cluster_init 2 vxlan
weftd_start 1 --objects-datastore etcd --relist-interval 0
weftd_start 2 --objects-datastore etcd --relist-interval 0
weftd_wait_ready 1 2

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
declare -A PNS PIP6
PIDS=()
kill_bg() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_bg
nth() { python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[int(sys.argv[2])])' "$1" "$2"; }
for i in 1 2; do
	s4=$(lease_var "$i" WEFT_SUBNET) s6=$(lease_var "$i" WEFT_SUBNET6)
	[ -n "$s6" ] || fail "node $i has no IPv6 subnet"
	ip -n "$(node_ns "$i")" link add cni0 type bridge
	ip -n "$(node_ns "$i")" addr add "$s4" dev cni0
	ip -n "$(node_ns "$i")" addr add "$(nth "$s6" 1)/${s6#*/}" dev cni0 nodad
	ip -n "$(node_ns "$i")" link set cni0 up
	# what the CNI plugin does on ADD (pod_forwarding_enable), in the node namespace this test made
	ip netns exec "$(node_ns "$i")" sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv4.ip_forward=1
done
K=0
mkpod() { # mkpod NS P NODE
	local ns=$1 p=$2 node=$3 s4 s6 ip4 ip6 pns
	K=$((K + 1))
	s4=$(lease_var "$node" WEFT_SUBNET) s6=$(lease_var "$node" WEFT_SUBNET6)
	ip4=$(nth "$s4" $((10 + K))) ip6=$(nth "$s6" $((10 + K)))
	pns=$(mk_netns "p$ns$p")
	PNS[$ns/$p]=$pns PIP6[$ns/$p]=$ip6
	ip -n "$(node_ns "$node")" link add "v$ns$p" type veth peer name eth0 netns "$pns"
	ip -n "$(node_ns "$node")" link set "v$ns$p" master cni0 up
	ip -n "$pns" addr add "$ip4/${s4#*/}" dev eth0
	ip -n "$pns" addr add "$ip6/${s6#*/}" dev eth0 nodad
	ip -n "$pns" link set eth0 up
	ip -n "$pns" route add default via "${s4%/*}"
	ip -n "$pns" -6 route add default via "$(nth "$s6" 1)"
	ip netns exec "$pns" python3 -c 'import select, socket
ls = []
for port in (80, 81):
    s = socket.create_server(("::", port), family=socket.AF_INET6, dualstack_ipv6=True); ls.append(s)
print("ready", flush=True)
while True:
    for s in select.select(ls, [], [])[0]:
        c = s.accept()[0]; c.sendall(b"ok"); c.close()' >"$T/serve.$ns$p" 2>&1 &
	PIDS+=($!)
	wait_for 30 grep -q ready "$T/serve.$ns$p" || fail "server in $ns/$p did not start"
	put "pods/$ns/$p" "$(jq -nc --arg ns "$ns" --arg p "$p" --arg node "node$node" --arg ip4 "$ip4" --arg ip6 "$ip6" \
		'{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$p,labels:{pod:$p}},
		spec:{nodeName:$node,containers:[{name:"c"}]},status:{phase:"Running",podIP:$ip4,podIPs:[{ip:$ip4},{ip:$ip6}]}}')"
}
for ns in x y; do
	put "namespaces/$ns" "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\",\"labels\":{\"ns\":\"$ns\"}}}"
done
mkpod x a 1
mkpod x b 2
mkpod y a 1
mkpod y b 2
tcp6() { # tcp6 FROM TO PORT: 0 if "ok" comes back over IPv6
	ip netns exec "${PNS[$1]}" python3 -c 'import socket,sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=0.5); s.settimeout(0.5)
    sys.exit(0 if s.recv(2) == b"ok" else 1)
except OSError:
    sys.exit(1)' "${PIP6[$2]}" "$3"
}
PAIRS="y/a>x/a y/a>x/b y/b>x/a y/b>x/b x/b>x/a x/a>x/b"
for pr in $PAIRS; do
	for port in 80 81; do
		wait_for 5 tcp6 "${pr%>*}" "${pr#*>}" "$port" || fail "no policy: $pr $port/TCP over IPv6 fails (IPv6 datapath broken)"
	done
done
info "no policy: every IPv6 pair reachable on 80 and 81"

put networkpolicies/x/deny '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"x","name":"deny"},"spec":{"podSelector":{}}}'
put networkpolicies/x/from-ya '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"namespace":"x","name":"from-ya"},
	"spec":{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"y"}},"podSelector":{"matchLabels":{"pod":"a"}}}],"ports":[{"port":80}]}]}}'
# expected: only y/a on port 80 (y/a -> x/a same node, y/a -> x/b cross node)
want() { [ "${1%>*}" = y/a ] && [ "$2" = 80 ]; }
wait_for 5 bash -c "! ip netns exec ${PNS[y/b]} python3 -c 'import socket; socket.create_connection((\"${PIP6[x/a]}\", 80), timeout=0.3)'" ||
	check_fail "y/b -> x/a over IPv6 not denied 5 s after the default deny"
# the two policies may land in different syncs: wait until the allow is in force on both nodes
wait_for 5 tcp6 y/a x/a 80 || check_fail "y/a -> x/a on 80 over IPv6 not allowed 5 s after from-ya"
wait_for 5 tcp6 y/a x/b 80 || check_fail "y/a -> x/b on 80 over IPv6 not allowed 5 s after from-ya"
n=0
for pr in $PAIRS; do
	for port in 80 81; do
		n=$((n + 1))
		got=false want_=false
		tcp6 "${pr%>*}" "${pr#*>}" "$port" && got=true
		want "$pr" "$port" && want_=true
		[ $got = $want_ ] || check_fail "$pr $port/TCP over IPv6: allowed=$got, the policy says $want_"
	done
done
ip netns exec "$(node_ns 1)" nft list map inet weft np-ingress6 >"$T/map6" 2>&1 || check_fail "node 1 has no np-ingress6 map"
grep -qF "${PIP6[x/a]}" "$T/map6" || check_fail "node 1: x/a's IPv6 address is not in np-ingress6"
info "default deny + allow y/a on 80 over IPv6: $n cells as specified (same-node and cross-node)"
finish
