#!/usr/bin/env bash
# NetworkPolicy enforced by weftd across nodes, checked against the upstream conformance model:
# namespaces x, y, z × pods a, b, c (spread over 2 nodes, so pairs are same-node and cross-node),
# every pod serving TCP and UDP on 80 and 81. Objects go into etcd (--objects-datastore etcd) as
# `weft apply` writes them; after each policy change every ordered pair of distinct pods is probed
# on 80/81 × TCP/UDP (9 × 8 × 4 = 288 cells) and compared with the table that an independent model
# (policy/netpol.py, written from the spec, not from weft) computes for the same policies and pods.
# A cell that differs is printed with both values. Cases follow Kubernetes' netpol e2e suite.
#   POLICY_BACKEND=host-gw|vxlan (default host-gw)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/weft-cluster-lib.sh"

cluster_require
BACKEND=${POLICY_BACKEND:-host-gw}
NETPOL=$TOP/test/netns/policy/netpol.py
WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFT"
[ -d /proc/sys/net/bridge ] || skip "br_netfilter is not loaded (same-node traffic would not be policed)"

cluster_init 2 "$BACKEND"
weftd_start 1 --objects-datastore etcd --relist-interval 0
weftd_start 2 --objects-datastore etcd --relist-interval 0
weftd_wait_ready 1 2

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
del() { etcdctl_ del "$ETCD_PREFIX/objects/$1" >/dev/null; }

# ---- pods: x/a on node 2, x/b on node 1, ... (k % 2 + 1)
declare -A PNS
PODS=()
SERVERS=()
kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_servers
for i in 1 2; do
	gw=$(lease_var "$i" WEFT_SUBNET)
	ip -n "$(node_ns "$i")" link add cni0 type bridge
	ip -n "$(node_ns "$i")" addr add "$gw" dev cni0
	ip -n "$(node_ns "$i")" link set cni0 up
done
CPORTS='[{"name":"serve-80-tcp","containerPort":80},{"name":"serve-81-tcp","containerPort":81},
	{"name":"serve-80-udp","containerPort":80,"protocol":"UDP"},{"name":"serve-81-udp","containerPort":81,"protocol":"UDP"}]'
k=0
cluster='{"namespaces":{},"pods":[]}'
targets='[]'
for ns in x y z; do
	put "namespaces/$ns" "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\",\"labels\":{\"ns\":\"$ns\"}}}"
	cluster=$(jq -c --arg ns "$ns" '.namespaces[$ns] = {ns: $ns}' <<<"$cluster")
	for p in a b c; do
		k=$((k + 1))
		node=$((k % 2 + 1))
		gw=$(lease_var "$node" WEFT_SUBNET)
		ip=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[10 + int(sys.argv[2])])' "$gw" "$k")
		pns=$(mk_netns "p$ns$p")
		PNS[$ns/$p]=$pns
		PODS+=("$ns/$p")
		ip -n "$(node_ns "$node")" link add "v$ns$p" type veth peer name eth0 netns "$pns"
		ip -n "$(node_ns "$node")" link set "v$ns$p" master cni0 up
		ip -n "$pns" addr add "$ip/${gw#*/}" dev eth0
		ip -n "$pns" link set eth0 up
		ip -n "$pns" route add default via "${gw%/*}"
		ip netns exec "$pns" python3 "$NETPOL" serve >"$T/serve.$ns$p" 2>&1 &
		SERVERS+=($!)
		put "pods/$ns/$p" "$(jq -nc --arg ns "$ns" --arg p "$p" --arg node "node$node" --arg ip "$ip" --argjson ports "$CPORTS" \
			'{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$p,labels:{pod:$p}},
			spec:{nodeName:$node,containers:[{name:"c",ports:$ports}]},status:{phase:"Running",podIP:$ip,podIPs:[{ip:$ip}]}}')"
		cluster=$(jq -c --arg ns "$ns" --arg p "$p" --arg ip "$ip" --argjson ports "$CPORTS" \
			'.pods += [{name: ($ns + "/" + $p), ns: $ns, labels: {pod: $p}, ip: $ip,
			ports: [$ports[] | {name, port: .containerPort, protocol: (.protocol // "TCP")}]}]' <<<"$cluster")
		targets=$(jq -c --arg n "$ns/$p" --arg ip "$ip" '. + [[$n, $ip]]' <<<"$targets")
	done
done
echo "$cluster" >"$T/cluster.json"
echo "$targets" >"$T/targets.json"
for s in "${PODS[@]}"; do
	wait_for 5 grep -q ready "$T/serve.${s/\//}" || fail "server in $s did not start"
done

# probe: every pod probes every other in parallel; the merged table on stdout
probe() {
	local s pids=() files=()
	for s in "${PODS[@]}"; do
		ip netns exec "${PNS[$s]}" python3 "$NETPOL" probe "$s" "$T/targets.json" >"$T/probe.${s/\//}" &
		pids+=($!)
		files+=("$T/probe.${s/\//}")
	done
	wait "${pids[@]}"
	jq -s -S -c 'add' "${files[@]}"
}

CURRENT=()  # resource paths of the policies in etcd
N_CASES=0
# case NAME POLICIES_JSON: makes etcd hold exactly these policies ([{ns, name, spec}]), then probes
# until the table equals the model's (enforcement is asynchronous), 6 s at most.
case_() {
	local name=$1 pols=$2 want got t start keys p
	N_CASES=$((N_CASES + 1))
	echo "$pols" >"$T/pols.json"
	want=$(python3 "$NETPOL" model "$T/cluster.json" "$T/pols.json" | jq -S -c .)
	start=$(date +%s.%N)
	keys=$(jq -r '.[] | "networkpolicies/\(.ns)/\(.name)"' <<<"$pols")
	for p in "${CURRENT[@]}"; do
		grep -qxF "$p" <<<"$keys" || del "$p"
	done
	CURRENT=()
	while read -r p; do
		[ -n "$p" ] || continue
		CURRENT+=("networkpolicies/$(jq -r '"\(.ns)/\(.name)"' <<<"$p")")
		put "${CURRENT[-1]}" "$(jq -c '{apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy",
			metadata: {namespace: .ns, name: .name}, spec: .spec}' <<<"$p")"
	done < <(jq -c '.[]' <<<"$pols")
	for ((t = 0; t < 4; t++)); do
		got=$(probe)
		[ "$got" = "$want" ] && break
		sleep 0.5
	done
	if [ "$got" != "$want" ]; then
		python3 - "$want" "$got" <<-'PY' >&2
			import json, sys
			w, g = json.loads(sys.argv[1]), json.loads(sys.argv[2])
			for k in sorted(w):
			    if w[k] != g.get(k):
			        print("  %-24s model %-5s weft %s" % (k, w[k], g.get(k)))
		PY
		check_fail "case '$name': the table differs from the model"
		return 0
	fi
	# weft policy explain (weftd's model, asked on node 1) agrees with the model on every cell of
	# x/b to every other pod, 80/TCP and 81/UDP
	local cell from to port rc mism=0
	for cell in $(jq -r 'keys[] | select(startswith("x/b>")) | select(endswith("80/TCP") or endswith("81/UDP")) | gsub(" "; "_")' <<<"$want"); do
		from=${cell%%>*} to=${cell#*>} port=${to#*_} to=${to%%_*}
		rc=0
		ip netns exec "$(node_ns 1)" "$WEFT" policy explain "$from" "$to" "$port" >"$T/explain.out" 2>&1 || rc=$?
		[ $rc = 1 ] && { echo "(case '$name')"; cat "$T/explain.out"; } >"$T/explain-denied.txt"
		if [ "$rc" -gt 1 ] || [ "$([ $rc = 0 ] && echo true || echo false)" != "$(jq -r --arg k "${cell/_/ }" '.[$k]' <<<"$want")" ]; then
			mism=$((mism + 1))
			[ $mism -le 2 ] && sed 's/^/    /' "$T/explain.out" >&2
		fi
	done
	[ $mism = 0 ] || check_fail "case '$name': weft policy explain disagrees with the model on $mism cells"
	info "case '$name': $(jq '[.[] | select(. == true)] | length' <<<"$want")/$(jq length <<<"$want") cells allowed, as the model says ($(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s)"
}

P() { jq -nc --arg ns "$1" --arg name "$2" --argjson spec "$3" '{ns: $ns, name: $name, spec: $spec}'; }
ALL='{"podSelector":{}}'

case_ "no policy: everything" '[]'
case_ "default deny ingress in x" "[$(P x deny "$ALL")]"
case_ "default deny egress in y" "[$(P y deny '{"podSelector":{},"policyTypes":["Egress"]}')]"
case_ "default deny both in z" "[$(P z deny '{"podSelector":{},"policyTypes":["Ingress","Egress"]}')]"
case_ "allow all ingress in x (empty rule) over a deny" "[$(P x deny "$ALL"),$(P x all '{"podSelector":{},"ingress":[{}]}')]"
case_ "x/a from pods b of x only" "[$(P x a-from-b '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"podSelector":{"matchLabels":{"pod":"b"}}}]}]}')]"
case_ "x/a from namespace y" "[$(P x a-from-y '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"y"}}}]}]}')]"
case_ "x/a from pods c in namespaces y or z (one peer: AND)" "[$(P x a-and '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"ns","operator":"In","values":["y","z"]}]},"podSelector":{"matchLabels":{"pod":"c"}}}]}]}')]"
case_ "x/a from namespaces y,z or pods c of x (two peers: OR)" "[$(P x a-or '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"ns","operator":"In","values":["y","z"]}]}},{"podSelector":{"matchLabels":{"pod":"c"}}}]}]}')]"
case_ "x from namespaces NotIn (y)" "[$(P x notin '{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"ns","operator":"NotIn","values":["y"]}]}}]}]}')]"
case_ "x/a only on port 81 TCP" "[$(P x p81 '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"ports":[{"port":81}]}]}')]"
case_ "x on named port serve-80-udp" "[$(P x named '{"podSelector":{},"ingress":[{"ports":[{"port":"serve-80-udp","protocol":"UDP"}]}]}')]"
case_ "x on 80-81 UDP (endPort)" "[$(P x range '{"podSelector":{},"ingress":[{"ports":[{"port":80,"endPort":81,"protocol":"UDP"}]}]}')]"
case_ "x/a SCTP-only rule still isolates it" "[$(P x sctp '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"ports":[{"port":80,"protocol":"SCTP"}]}]}')]"
ipb=$(jq -r '.pods[] | select(.name == "y/b") | .ip' "$T/cluster.json")
case_ "x from 10.244.0.0/16 except y/b" "[$(P x block "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.244.0.0/16\",\"except\":[\"$ipb/32\"]}}]}]}")]"
case_ "y egress only to x on 80 TCP" "[$(P y out '{"podSelector":{},"policyTypes":["Egress"],"egress":[{"to":[{"namespaceSelector":{"matchLabels":{"ns":"x"}}}],"ports":[{"port":80}]}]}')]"
case_ "y egress to ipBlock of y/b only" "[$(P y out-b "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"$ipb/32\"}}]}]}")]"
case_ "egress named port serve-81-tcp from z" "[$(P z named-out '{"podSelector":{},"policyTypes":["Egress"],"egress":[{"ports":[{"port":"serve-81-tcp"}]}]}')]"
case_ "policies combine: ingress from y + egress of y only to x/a" "[$(P x from-y '{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"y"}}}]}]}'),$(P y to-xa '{"podSelector":{},"policyTypes":["Egress"],"egress":[{"to":[{"namespaceSelector":{"matchLabels":{"ns":"x"}},"podSelector":{"matchLabels":{"pod":"a"}}}]}]}')]"
case_ "policy update: x/a from y becomes from z" "[$(P x from-y '{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"z"}}}]}]}')]"
case_ "policy removed: everything again" '[]'

# label changes: pod z/b relabelled pod=a while x/a allows only pods a of z
ZA="[$(P x a-from-za '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"z"}},"podSelector":{"matchLabels":{"pod":"a"}}}]}]}')]"
case_ "x/a from pods a of z" "$ZA"
relabel_pod() { # relabel_pod NS/P NEWLABEL
	local ns=${1%/*} p=${1#*/} v
	v=$(etcdctl_ get "$ETCD_PREFIX/objects/pods/$ns/$p" --print-value-only | jq -c --arg l "$2" '.metadata.labels.pod = $l')
	put "pods/$ns/$p" "$v"
	jq -c --arg n "$1" --arg l "$2" '(.pods[] | select(.name == $n) | .labels.pod) = $l' "$T/cluster.json" >"$T/c.json" && mv "$T/c.json" "$T/cluster.json"
}
relabel_pod z/b a
case_ "after z/b is relabelled pod=a" "$ZA"
relabel_pod z/b b
v=$(etcdctl_ get "$ETCD_PREFIX/objects/namespaces/y" --print-value-only | jq -c '.metadata.labels.ns = "z"')
put namespaces/y "$v"
jq -c '.namespaces.y.ns = "z"' "$T/cluster.json" >"$T/c.json" && mv "$T/c.json" "$T/cluster.json"
case_ "after namespace y is relabelled ns=z" "$ZA"
case_ "cleanup" '[]'

info "the last denied cell weft policy explain was asked about:"
sed 's/^/#   /' "$T/explain-denied.txt"
for i in 1 2; do
	http_get "$i" /metrics
	info "node $i: $(grep -E '^weft_policy_(syncs_total|sync_failures_total|max_sync_seconds) ' <<<"$HTTP_BODY" | tr '\n' ' ')"
	[ "$(awk '$1 == "weft_policy_sync_failures_total" { print $2 }' <<<"$HTTP_BODY")" = 0 ] || check_fail "node $i: failed policy syncs"
done
info "$N_CASES cases, backend $BACKEND"
finish
