# shellcheck shell=bash
# The NetworkPolicy truth table that test-policy-truth-table.sh and test-policy-e2e.sh (and their
# -vxlan variants) run their cases on. Source lib.sh and weft-cluster-lib.sh first, then this file:
#
#   tt_setup                     2 nodes (POLICY_BACKEND=host-gw|vxlan, default host-gw), weftd on
#                                each with its objects in etcd, namespaces x, y, z × pods a, b, c
#   case_ NAME POLICIES_JSON     etcd holds exactly these policies; the probed table must equal the
#                                model's, and weft policy explain must agree with the model
#   pod_label, ns_label          label changes between cases
#   tt_finish                    metrics check, summary, finish
#
# Pods x/a on node 2, x/b on node 1, ... (k % 2 + 1), so pairs are same-node and cross-node. Every
# pod serves TCP and UDP on 80 and 81 and declares the container ports serve-80-tcp, serve-81-tcp,
# serve-80-udp and serve-81-udp. Pod labels pod=a|b|c; namespace labels ns=NAME and
# kubernetes.io/metadata.name=NAME. Objects go into etcd (--objects-datastore etcd) as `weft apply`
# writes them. After each change every ordered pair of distinct pods is probed on 80/81 × TCP/UDP
# (9 × 8 × 4 = 288 cells) and compared with the table that an independent model (netpol.py, written
# from the spec, not from weft) computes for the same policies, pods and labels; a cell that differs
# is printed with both values. Which upstream e2e case each case stands for: E2E-CASES.md.

BACKEND=${POLICY_BACKEND:-host-gw}
NETPOL=$TOP/test/netns/policy/netpol.py
WEFT=$WEFT_BUILD/tool/weft
CURRENT=()  # resource paths of the policies in etcd
N_CASES=0
SERVERS=()
declare -A WANT_REV=()

# put/del PATH: one object under the objects prefix; the etcd revision of the last write to each
# kind is kept, so that a case can wait until both weftds have seen it (wait_synced).
put() { WANT_REV[${1%%/*}]=$(etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" -w json | jq .header.revision); }
del() { WANT_REV[${1%%/*}]=$(etcdctl_ del "$ETCD_PREFIX/objects/$1" -w json | jq .header.revision); }

# wait_synced: until each node's object cache (/debug/objects) is at or past every revision we wrote
# (3 s at most: a node that is slower only costs the case a second probe round), then a little for
# the policy agent's 2 ms debounce and its batch.
wait_synced() {
	local want i t k
	want=$(for k in "${!WANT_REV[@]}"; do echo "$k ${WANT_REV[$k]}"; done |
		jq -Rnc '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | add // {}')
	for i in 1 2; do
		for ((t = 0; t < 150; t++)); do
			http_get "$i" /debug/objects
			jq -e --argjson w "$want" '.kinds as $k | all($w | to_entries[]; ($k[.key].resourceVersion | tonumber) >= .value)' \
				<<<"$HTTP_BODY" >/dev/null 2>&1 && break
			sleep 0.02
		done
	done
	sleep 0.1
}

kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }

tt_setup() {
	local i gw k=0 ns p node ip pns nslabels cluster='{"namespaces":{},"pods":[]}' targets='[]'
	local cports='[{"name":"serve-80-tcp","containerPort":80},{"name":"serve-81-tcp","containerPort":81},
		{"name":"serve-80-udp","containerPort":80,"protocol":"UDP"},{"name":"serve-81-udp","containerPort":81,"protocol":"UDP"}]'
	cluster_require
	require_built "$WEFT"
	[ -d /proc/sys/net/bridge ] || skip "br_netfilter is not loaded (same-node traffic would not be policed)"

	cluster_init 2 "$BACKEND"
	weftd_start 1 --objects-datastore etcd --relist-interval 0
	weftd_start 2 --objects-datastore etcd --relist-interval 0
	weftd_wait_ready 1 2

	on_exit kill_servers
	for i in 1 2; do
		gw=$(lease_var "$i" WEFT_SUBNET)
		ip -n "$(node_ns "$i")" link add cni0 type bridge
		ip -n "$(node_ns "$i")" addr add "$gw" dev cni0
		ip -n "$(node_ns "$i")" link set cni0 up
	done
	for ns in x y z; do
		# the API server gives every namespace kubernetes.io/metadata.name = its name; etcd has no
		# such admission, so we write it ourselves (upstream's cases select namespaces by it)
		nslabels=$(jq -nc --arg ns "$ns" '{ns: $ns, "kubernetes.io/metadata.name": $ns}')
		put "namespaces/$ns" "$(jq -nc --arg ns "$ns" --argjson l "$nslabels" \
			'{apiVersion: "v1", kind: "Namespace", metadata: {name: $ns, labels: $l}}')"
		cluster=$(jq -c --arg ns "$ns" --argjson l "$nslabels" '.namespaces[$ns] = $l' <<<"$cluster")
		for p in a b c; do
			k=$((k + 1))
			node=$((k % 2 + 1))
			gw=$(lease_var "$node" WEFT_SUBNET)
			ip=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[10 + int(sys.argv[2])])' "$gw" "$k")
			pns=$(mk_netns "p$ns$p")
			ip -n "$(node_ns "$node")" link add "v$ns$p" type veth peer name eth0 netns "$pns"
			ip -n "$(node_ns "$node")" link set "v$ns$p" master cni0 up
			ip -n "$pns" addr add "$ip/${gw#*/}" dev eth0
			ip -n "$pns" link set eth0 up
			ip -n "$pns" route add default via "${gw%/*}"
			ip netns exec "$pns" python3 "$NETPOL" serve >"$T/serve.$ns$p" 2>&1 &
			SERVERS+=($!)
			put "pods/$ns/$p" "$(jq -nc --arg ns "$ns" --arg p "$p" --arg node "node$node" --arg ip "$ip" --argjson ports "$cports" \
				'{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$p,labels:{pod:$p}},
				spec:{nodeName:$node,containers:[{name:"c",ports:$ports}]},status:{phase:"Running",podIP:$ip,podIPs:[{ip:$ip}]}}')"
			cluster=$(jq -c --arg ns "$ns" --arg p "$p" --arg ip "$ip" --argjson ports "$cports" \
				'.pods += [{name: ($ns + "/" + $p), ns: $ns, labels: {pod: $p}, ip: $ip,
				ports: [$ports[] | {name, port: .containerPort, protocol: (.protocol // "TCP")}]}]' <<<"$cluster")
			targets=$(jq -c --arg n "$ns/$p" --arg ip "$ip" --arg path "$(nspath "$pns")" '. + [[$n, $ip, $path]]' <<<"$targets")
		done
	done
	echo "$cluster" >"$T/cluster.json"
	echo "$targets" >"$T/targets.json"
	for ns in x y z; do
		for p in a b c; do
			wait_for 30 grep -q ready "$T/serve.$ns$p" || fail "server in $ns/$p did not start"
		done
	done
}

# probe: every pod probes every other at once (one process that opens each source's sockets inside
# its pod's namespace); the table on stdout, as compact JSON with sorted keys like the model's
probe() { python3 "$NETPOL" probe "$T/targets.json"; }

# case_ NAME POLICIES_JSON: makes etcd hold exactly these policies ([{ns, name, spec}]; one already
# there under the same ns/name is updated in place, the others are deleted), waits until both nodes
# have seen the writes, then probes until the table equals the model's (enforcement is
# asynchronous), 4 rounds at most.
case_() {
	local name=$1 pols=$2 want got t start keys p obj
	N_CASES=$((N_CASES + 1))
	echo "$pols" >"$T/pols.json"
	want=$(python3 "$NETPOL" model "$T/cluster.json" "$T/pols.json")
	start=$(date +%s.%N)
	keys=$(jq -r '.[] | "networkpolicies/\(.ns)/\(.name)"' <<<"$pols")
	for p in "${CURRENT[@]}"; do
		grep -qxF "$p" <<<"$keys" || del "$p"
	done
	CURRENT=()
	while read -r p obj; do
		CURRENT+=("$p")
		put "$p" "$obj"
	done < <(jq -r '.[] | "networkpolicies/\(.ns)/\(.name) \({apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy",
		metadata: {namespace: .ns, name: .name}, spec: .spec} | tojson)"' <<<"$pols")
	wait_synced
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
	explain_check "$name" "$want"
	info "case '$name': $(jq -r '"\([.[] | select(.)] | length)/\(length)"' <<<"$want") cells allowed, as the model says ($(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s, probes: $((t + 1)))"
}

# explain_check NAME TABLE: weft policy explain (weftd's own model, asked on node 1) agrees with the
# model on every cell of x/b to every other pod on 80/TCP and 81/UDP, and of x/a to every other pod
# on 80/TCP (24 questions, asked at once)
explain_check() {
	local name=$1 from to port exp n=0 rc mism=0 node1
	local -a cells=() pids=()
	node1=$(nspath "$(node_ns 1)")
	while read -r from to port exp; do
		n=$((n + 1))
		cells+=("$from $to $port $exp")
		{
			rc=0
			nsenter --net="$node1" "$WEFT" policy explain "$from" "$to" "$port" >"$T/explain.$n" 2>&1 || rc=$?
			echo $rc >"$T/explain.$n.rc"
		} &
		pids+=($!)
	done < <(jq -r 'to_entries[] | select((.key | test("^x/b>.* (80/TCP|81/UDP)$")) or (.key | test("^x/a>.* 80/TCP$")))
		| "\(.key | split(">")[0]) \(.key | split(">")[1]) \(.value)"' <<<"$2")
	wait "${pids[@]}"
	for ((n = 1; n <= ${#cells[@]}; n++)); do
		read -r from to port exp <<<"${cells[n - 1]}"
		rc=$(cat "$T/explain.$n.rc")
		[ "$rc" = 1 ] && { echo "(case '$name')"; cat "$T/explain.$n"; } >"$T/explain-denied.txt"
		if [ "$rc" -gt 1 ] || { [ "$rc" = 0 ] && [ "$exp" = false ]; } || { [ "$rc" = 1 ] && [ "$exp" = true ]; }; then
			mism=$((mism + 1))
			[ $mism -le 2 ] && { echo "  model says $exp for $from > $to $port; weft policy explain (rc $rc):"; sed 's/^/    /' "$T/explain.$n"; } >&2
		fi
	done
	[ $mism = 0 ] || check_fail "case '$name': weft policy explain disagrees with the model on $mism cells"
	return 0
}

# pod_label NS/P KEY VALUE|-, ns_label NS KEY VALUE|-: sets (with -, removes) a label on the object in
# etcd and in the model's cluster.json alike; the next case waits for it and probes.
pod_label() {
	local ns=${1%/*} p=${1#*/} v
	v=$(etcdctl_ get "$ETCD_PREFIX/objects/pods/$ns/$p" --print-value-only | jq -c --arg k "$2" --arg v "$3" \
		'if $v == "-" then del(.metadata.labels[$k]) else .metadata.labels[$k] = $v end')
	put "pods/$ns/$p" "$v"
	jq -c --arg n "$1" --arg k "$2" --arg v "$3" '(.pods[] | select(.name == $n) | .labels) |=
		(if $v == "-" then del(.[$k]) else .[$k] = $v end)' "$T/cluster.json" >"$T/c.json" && mv "$T/c.json" "$T/cluster.json"
}
ns_label() {
	local v
	v=$(etcdctl_ get "$ETCD_PREFIX/objects/namespaces/$1" --print-value-only | jq -c --arg k "$2" --arg v "$3" \
		'if $v == "-" then del(.metadata.labels[$k]) else .metadata.labels[$k] = $v end')
	put "namespaces/$1" "$v"
	jq -c --arg n "$1" --arg k "$2" --arg v "$3" '.namespaces[$n] |= (if $v == "-" then del(.[$k]) else .[$k] = $v end)' \
		"$T/cluster.json" >"$T/c.json" && mv "$T/c.json" "$T/cluster.json"
}

# P NS NAME SPEC: one policy for case_; ip_of NS/P: the pod's address
P() { jq -nc --arg ns "$1" --arg name "$2" --argjson spec "$3" '{ns: $ns, name: $name, spec: $spec}'; }
ip_of() { jq -r --arg n "$1" '.pods[] | select(.name == $n) | .ip' "$T/cluster.json"; }
# specs and peers the cases share (NAME_*: by kubernetes.io/metadata.name, as upstream selects);
# the scripts that source this file use them
# shellcheck disable=SC2034
{
	ALL='{"podSelector":{}}'
	SEL_A='{"matchLabels":{"pod":"a"}}'
	NS_Y='{"namespaceSelector":{"matchLabels":{"ns":"y"}}}'
	NAME_Y='{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"y"}}}'
	NAME_X_PODS_A='{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"x"}},"podSelector":{"matchLabels":{"pod":"a"}}}'
	NAME_Y_PODS_A='{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"y"}},"podSelector":{"matchLabels":{"pod":"a"}}}'
}

# tt_finish: an example of weft policy explain's output (the last denied cell it was asked about),
# no failed policy sync on either node, the count of cases; then finish
tt_finish() {
	local i
	info "the last denied cell weft policy explain was asked about:"
	sed 's/^/#   /' "$T/explain-denied.txt"
	for i in 1 2; do
		http_get "$i" /metrics
		info "node $i: $(grep -E '^weft_policy_(syncs_total|sync_failures_total|max_sync_seconds) ' <<<"$HTTP_BODY" | tr '\n' ' ')"
		[ "$(awk '$1 == "weft_policy_sync_failures_total" { print $2 }' <<<"$HTTP_BODY")" = 0 ] || check_fail "node $i: failed policy syncs"
	done
	info "$N_CASES cases, backend $BACKEND"
	finish
}
