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
# writes them (the keys and JSON; a case's policy writes in one transaction). After each change every
# ordered pair of distinct pods is probed on 80/81 × TCP/UDP (9 × 8 × 4 = 288 cells) and compared with
# the table that an independent model (netpol.py, written from the spec, not from weft) computes for
# the same policies, pods and labels; a cell that differs is printed with both values. Which upstream
# e2e case each case stands for: E2E-CASES.md.
#
# A case costs a few seconds, most of it the probe's 1 s timeout for denied cells: no fixed sleeps but
# 0.1 s for the policy agent's batch, the model computed while the writes sync, one curl for the 24
# explain questions and the explain check beside the first probe round (about 100 processes per
# case before, about 15 now).

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
# txn KIND... <REQUEST: one etcd transaction (etcd's JSON gateway, /v3/kv/txn: REQUEST is its body, keys
# and values base64) that writes objects of these kinds, in one process and one revision, kept for
# wait_synced like put's
txn() {
	local resp k
	resp=$(ip netns exec "$ETCD_NS" curl -s -m 10 -X POST --data-binary @- "$ETCD_URL/v3/kv/txn")
	[[ $resp =~ \"succeeded\":true && $resp =~ \"revision\":\"([0-9]+)\" ]] || fail "etcd transaction failed: $resp"
	for k in "$@"; do WANT_REV[$k]=${BASH_REMATCH[1]}; done
}

# wait_synced: until each node's object cache (/debug/objects) is at or past every revision we wrote
# (3 s at most: a node that is slower only costs the case a second probe round), then a little for
# the policy agent's 2 ms debounce and its batch.
wait_synced() {
	local i t k ok
	for i in 1 2; do
		for ((t = 0; t < 150; t++)); do
			http_get "$i" /debug/objects
			ok=1
			for k in "${!WANT_REV[@]}"; do
				# "kinds":{"pods":{"objects":9,...,"resourceVersion":"16",...},...}: no braces inside a kind
				if ! [[ $HTTP_BODY =~ \"$k\":\{[^}]*\"resourceVersion\":\"([0-9]+)\" ]] ||
					((BASH_REMATCH[1] < WANT_REV[$k])); then
					ok=0
					break
				fi
			done
			((ok)) && break
			sleep 0.02
		done
	done
	sleep 0.1
}

kill_servers() { local p; for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }

# host_ip VAR GW N: sets VAR to address N of the network of GW (10.244.3.1/24 7 -> 10.244.3.7)
host_ip() {
	local a b c d len=${2#*/} n
	IFS=. read -r a b c d <<<"${2%/*}"
	n=$((((a << 24 | b << 16 | c << 8 | d) & (0xffffffff << (32 - len)) & 0xffffffff) + $3))
	printf -v "$1" '%d.%d.%d.%d' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255))
}

tt_setup() {
	local i k=0 ns p node ip pns out req cluster targets
	local -a gw=() pods=()
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
		gw[i]=$(lease_var "$i" WEFT_SUBNET)
		ip -n "$(node_ns "$i")" link add cni0 type bridge
		ip -n "$(node_ns "$i")" addr add "${gw[i]}" dev cni0
		ip -n "$(node_ns "$i")" link set cni0 up
	done
	for ns in x y z; do
		for p in a b c; do
			k=$((k + 1))
			node=$((k % 2 + 1))
			host_ip ip "${gw[node]}" $((10 + k))
			pns=$(mk_netns "p$ns$p")
			ip -n "$(node_ns "$node")" link add "v$ns$p" type veth peer name eth0 netns "$pns"
			ip -n "$(node_ns "$node")" link set "v$ns$p" master cni0 up
			ip -n "$pns" addr add "$ip/${gw[node]#*/}" dev eth0
			ip -n "$pns" link set eth0 up
			ip -n "$pns" route add default via "${gw[node]%/*}"
			ip netns exec "$pns" python3 "$NETPOL" serve >"$T/serve.$ns$p" 2>&1 &
			SERVERS+=($!)
			pods+=("$ns $p $node $ip $(nspath "$pns")")
		done
	done
	# every object, and the model's view of them, from one jq: the namespaces (the API server gives
	# every namespace kubernetes.io/metadata.name = its name; etcd has no such admission, so we write
	# it ourselves: upstream's cases select namespaces by it) and the pods go into etcd in one
	# transaction; cluster.json for the model, targets.json for the probe
	out=$(printf '%s\n' "${pods[@]}" | jq -Rnrc --arg pre "$ETCD_PREFIX/objects/" --argjson ports "$cports" '
		[inputs | split(" ") | {ns: .[0], p: .[1], node: .[2], ip: .[3], path: .[4]}] as $pods
		| ([$pods[].ns] | unique | map({key: ., value: {ns: ., "kubernetes.io/metadata.name": .}}) | from_entries) as $nsl
		| ([$nsl | keys[] | {k: "namespaces/\(.)", v: {apiVersion: "v1", kind: "Namespace", metadata: {name: ., labels: $nsl[.]}}}]
		   + [$pods[] | {k: "pods/\(.ns)/\(.p)", v: {apiVersion: "v1", kind: "Pod", metadata: {namespace: .ns, name: .p, labels: {pod: .p}},
			spec: {nodeName: "node\(.node)", containers: [{name: "c", ports: $ports}]},
			status: {phase: "Running", podIP: .ip, podIPs: [{ip: .ip}]}}}]) as $objs
		| ({success: [$objs[] | {requestPut: {key: ($pre + .k | @base64), value: (.v | tojson | @base64)}}]} | tojson),
		  ({namespaces: $nsl, pods: [$pods[] | {name: "\(.ns)/\(.p)", ns, labels: {pod: .p}, ip,
			ports: [$ports[] | {name, port: .containerPort, protocol: (.protocol // "TCP")}]}]} | tojson),
		  ([$pods[] | ["\(.ns)/\(.p)", .ip, .path]] | tojson)')
	{ read -r req; read -r cluster; read -r targets; } <<<"$out"
	txn namespaces pods <<<"$req"
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
# there under the same ns/name is updated in place, the others are deleted: one transaction), waits
# until both nodes have seen it, then probes until the table equals the model's (enforcement is
# asynchronous), 4 rounds at most. The model computes its table meanwhile, and weft policy explain's
# cross-check (explain_check) runs beside the first probe round.
case_() {
	local name=$1 pols=$2 want got t start out req mpid epid us allowed cells
	N_CASES=$((N_CASES + 1))
	start=$EPOCHREALTIME
	echo "$pols" >"$T/pols.json"
	python3 "$NETPOL" model "$T/cluster.json" "$T/pols.json" >"$T/want.json" &
	mpid=$!
	# the transaction's body (deletes of the policies no longer listed, puts of the listed ones), then
	# the listed ones' paths
	out=$(jq -rc --arg pre "$ETCD_PREFIX/objects/" --arg cur "$(printf '%s\n' "${CURRENT[@]}")" '
		[.[] | {k: "networkpolicies/\(.ns)/\(.name)", v: {apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy",
			metadata: {namespace: .ns, name: .name}, spec: .spec}}] as $new
		| [$new[].k] as $keys
		| ([$cur | split("\n")[] | select(. != "") | select(. as $c | $keys | any(.[]; . == $c) | not)
			| {requestDeleteRange: {key: ($pre + . | @base64)}}]
		   + [$new[] | {requestPut: {key: ($pre + .k | @base64), value: (.v | tojson | @base64)}}]) as $ops
		| (if $ops == [] then "" else {success: $ops} | tojson end), $keys[]' <<<"$pols")
	{ read -r req; mapfile -t CURRENT; } <<<"$out"
	[ -z "$req" ] || txn networkpolicies <<<"$req"
	wait_synced
	wait "$mpid" || fail "case '$name': netpol.py model failed"
	want=$(<"$T/want.json")
	explain_check "$name" "$want" >"$T/explain.log" 2>&1 &
	epid=$!
	for ((t = 0; t < 4; t++)); do
		got=$(probe)
		[ "$got" = "$want" ] && break
		sleep 0.5
	done
	wait "$epid" || check_fail "case '$name': the explain check stopped (status $?)"
	cat "$T/explain.log" >&2
	[ -e "$T/explain.done" ] || check_fail "case '$name': the explain check did not finish"
	rm -f "$T/explain.done"
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
	# {"x/a>x/b 80/TCP":true,...}: 288 cells, one ":" each
	allowed=${want//:true/}
	allowed=$(((${#want} - ${#allowed}) / 5))
	cells=${want//[^:]/}
	us=$((${EPOCHREALTIME/./} - ${start/./}))
	info "case '$name': $allowed/${#cells} cells allowed, as the model says ($((us / 1000000)).$((us / 100000 % 10)) s, probes: $((t + 1)))"
}

# explain_check NAME TABLE: weftd's own model (GET /debug/policy/explain on node 1, what weft policy
# explain asks) agrees with the model on every cell of x/b to every other pod on 80/TCP and 81/UDP,
# and of x/a to every other pod on 80/TCP (24 questions, one curl); and weft policy explain itself,
# asked about the first allowed and the first denied of those cells, exits 0 for ALLOW, 1 for DENY
# as the model says. Touches $T/explain.done when it got to its end (it runs in the background).
explain_check() {
	local name=$1 from to port exp n rc code body mism=0 node1 first_allow='' first_deny=''
	local -a cells=() args=() codes=()
	node1=$(nspath "$(node_ns 1)")
	while read -r from to port exp; do
		cells+=("$from $to $port $exp")
		n=${#cells[@]}
		args+=(-o "$T/explain.$n" "http://127.0.0.1:9876/debug/policy/explain?from=${from//\//%2F}&to=${to//\//%2F}&port=${port%/*}&proto=${port#*/}")
		[ "$exp" = true ] && [ -z "$first_allow" ] && first_allow=$n
		[ "$exp" = false ] && [ -z "$first_deny" ] && first_deny=$n
	done < <(jq -r 'to_entries[] | select((.key | test("^x/b>.* (80/TCP|81/UDP)$")) or (.key | test("^x/a>.* 80/TCP$")))
		| "\(.key | split(">")[0]) \(.key | split(">")[1]) \(.value)"' <<<"$2")
	((${#cells[@]} == 24)) || check_fail "case '$name': ${#cells[@]} cells to ask weft policy explain about, not 24"
	for n in $first_allow $first_deny; do
		read -r from to port exp <<<"${cells[n - 1]}"
		{
			rc=0
			nsenter --net="$node1" "$WEFT" policy explain "$from" "$to" "$port" >"$T/explain-tool.$n" 2>&1 || rc=$?
			echo $rc >"$T/explain-tool.$n.rc"
		} &
	done
	mapfile -t codes < <(nsenter --net="$node1" curl -s -m 10 -w '%{http_code}\n' "${args[@]}" || true)
	wait
	for ((n = 1; n <= ${#cells[@]}; n++)); do
		read -r from to port exp <<<"${cells[n - 1]}"
		body=
		IFS= read -rd '' body <"$T/explain.$n" || true
		code=${codes[n - 1]:-none}
		# the verdict as weft policy explain gives it (policy-cmd.c): 0 ALLOW, 1 DENY, 2 no such pod, 3 error
		if [ "$code" = 200 ]; then
			[[ $body == *$'\n'ALLOW$'\n'* ]] && rc=0 || rc=1
		elif [ "$code" = 404 ] && [[ $body == *"no such"* || $body == *"not ns/pod"* ]]; then
			rc=2
		else
			rc=3
		fi
		[ "$rc" = 1 ] && { echo "(case '$name')"; printf '%s' "$body"; } >"$T/explain-denied.txt"
		_explain_verdict "$name" "$from > $to $port" "$exp" "$rc" "HTTP $code" "$T/explain.$n" || mism=$((mism + 1))
		if [ -e "$T/explain-tool.$n.rc" ]; then
			_explain_verdict "$name" "$from > $to $port" "$exp" "$(<"$T/explain-tool.$n.rc")" "weft policy explain" \
				"$T/explain-tool.$n" || mism=$((mism + 1))
			rm -f "$T/explain-tool.$n.rc"
		fi
	done
	[ $mism = 0 ] || check_fail "case '$name': weft policy explain disagrees with the model on $mism cells"
	touch "$T/explain.done"
}
# _explain_verdict NAME CELL EXPECTED RC HOW FILE: 0 when RC (0 ALLOW, 1 DENY) is what the model
# says (EXPECTED true|false); else 1, with the answer (FILE) shown
_explain_verdict() {
	if [ "$4" -gt 1 ] || { [ "$4" = 0 ] && [ "$3" = false ]; } || { [ "$4" = 1 ] && [ "$3" = true ]; }; then
		{ echo "  (case '$1') model says $3 for $2; $5 (rc $4):"; sed 's/^/    /' "$6"; } >&2
		return 1
	fi
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
