#!/usr/bin/env bash
# weft-test: no-san (1,000 pods under load; the sanitizer pass takes the same pod/policy updates in test-policy-lifecycle and -drops)
# NetworkPolicy under pod churn: 1,000 pods (records in etcd with addresses in the two nodes'
# subnets, addresses reused as pods come and go) are created and deleted under 100 policies while
# four real pods (x/a, y/a on node 1; x/b, y/b on node 2) probe each other on 80/TCP without pause.
# No probe may ever pass that the independent model (policy/netpol.py, over the real pods and the
# policies: the churned pods' labels can only add allowances for their own addresses) denies; after
# the churn every pair is again as the model says.
#   CHURN_PODS (default 1000), CHURN_LIVE (pods alive at once, default 200)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"

cluster_require
NETPOL=$TOP/test/netns/policy/netpol.py
[ -d /proc/sys/net/bridge ] || skip "br_netfilter is not loaded (same-node traffic would not be policed)"
CHURN_PODS=${CHURN_PODS:-1000}
CHURN_LIVE=${CHURN_LIVE:-200}

cluster_init 2 host-gw
weftd_start 1 --objects-datastore etcd --relist-interval 0
weftd_start 2 --objects-datastore etcd --relist-interval 0
weftd_wait_ready 1 2

put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
declare -A PNS
PIDS=()
kill_bg() { local p; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; return 0; }
on_exit kill_bg
for i in 1 2; do
	gw=$(lease_var "$i" WEFT_SUBNET)
	ip -n "$(node_ns "$i")" link add cni0 type bridge
	ip -n "$(node_ns "$i")" addr add "$gw" dev cni0
	ip -n "$(node_ns "$i")" link set cni0 up
done
for ns in x y z; do
	put "namespaces/$ns" "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\",\"labels\":{\"ns\":\"$ns\"}}}"
done
cluster='{"namespaces":{"x":{"ns":"x"},"y":{"ns":"y"},"z":{"ns":"z"}},"pods":[]}'
targets='[]'
K=0
for pp in x/a:1 x/b:2 y/a:1 y/b:2; do
	pod=${pp%:*} node=${pp#*:}
	ns=${pod%/*} p=${pod#*/}
	K=$((K + 1))
	gw=$(lease_var "$node" WEFT_SUBNET)
	ip=$(python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[10 + int(sys.argv[2])])' "$gw" "$K")
	pns=$(mk_netns "p$ns$p")
	PNS[$pod]=$pns
	ip -n "$(node_ns "$node")" link add "v$ns$p" type veth peer name eth0 netns "$pns"
	ip -n "$(node_ns "$node")" link set "v$ns$p" master cni0 up
	ip -n "$pns" addr add "$ip/${gw#*/}" dev eth0
	ip -n "$pns" link set eth0 up
	ip -n "$pns" route add default via "${gw%/*}"
	ip netns exec "$pns" python3 "$NETPOL" serve >"$T/serve.$ns$p" 2>&1 &
	PIDS+=($!)
	wait_for 30 grep -q ready "$T/serve.$ns$p" || fail "server in $pod did not start"
	put "pods/$pod" "$(jq -nc --arg ns "$ns" --arg p "$p" --arg node "node$node" --arg ip "$ip" \
		'{apiVersion:"v1",kind:"Pod",metadata:{namespace:$ns,name:$p,labels:{pod:$p}},
		spec:{nodeName:$node,containers:[{name:"c"}]},status:{phase:"Running",podIP:$ip,podIPs:[{ip:$ip}]}}')"
	cluster=$(jq -c --arg n "$pod" --arg ns "$ns" --arg p "$p" --arg ip "$ip" '.pods += [{name: $n, ns: $ns, labels: {pod: $p}, ip: $ip, ports: []}]' <<<"$cluster")
	targets=$(jq -c --arg n "$pod" --arg ip "$ip" '. + [[$n, $ip]]' <<<"$targets")
	nstargets=$(jq -c --arg n "$pod" --arg ip "$ip" --arg ns "/run/netns/$pns" '. + [[$n, $ip, $ns]]' <<<"${nstargets:-[]}")
done
echo "$cluster" >"$T/cluster.json"
echo "$targets" >"$T/targets.json"
echo "$nstargets" >"$T/nstargets.json" # netpol.py probe: every pair from one process

# 100 policies: x default deny; x from pods a of y on 80; 98 that isolate pods a/b of x and y and
# allow only pods labelled churn=cN (which only churned pods carry) on 80 or 81
pols=$(python3 - <<-'PY'
	import json
	p = [{"ns": "x", "name": "deny", "spec": {"podSelector": {}}},
	     {"ns": "x", "name": "from-ya", "spec": {"podSelector": {}, "ingress": [{"from": [
	         {"namespaceSelector": {"matchLabels": {"ns": "y"}}, "podSelector": {"matchLabels": {"pod": "a"}}}],
	         "ports": [{"port": 80}]}]}}]
	for k in range(98):
	    p.append({"ns": "xy"[k % 2], "name": "churn-%d" % k, "spec": {
	        "podSelector": {"matchLabels": {"pod": "ab"[k // 2 % 2]}},
	        "ingress": [{"from": [{"podSelector": {"matchLabels": {"churn": "c%d" % (k % 10)}}},
	                              {"namespaceSelector": {"matchLabels": {"ns": "z"}},
	                               "podSelector": {"matchLabels": {"churn": "c%d" % (k % 7)}}}],
	                     "ports": [{"port": 80 + k % 2}]}]}})
	print(json.dumps(p))
	PY
)
echo "$pols" >"$T/pols.json"
jq -c '.[]' "$T/pols.json" | while read -r p; do
	put "networkpolicies/$(jq -r '"\(.ns)/\(.name)"' <<<"$p")" "$(jq -c '{apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy",
		metadata: {namespace: .ns, name: .name}, spec: .spec}' <<<"$p")"
done
python3 "$NETPOL" model "$T/cluster.json" "$T/pols.json" | jq -c 'with_entries(select(.key | endswith(" 80/TCP")))' >"$T/want.json"
n_allowed=$(jq '[.[] | select(.)] | length' "$T/want.json")
{ [ "$n_allowed" -gt 0 ] && [ "$n_allowed" -lt 12 ]; } || fail "the model allows $n_allowed of 12 pairs: not a useful case"

# probe loop: every real pod probes every other on 80/TCP, one line per probe "PAIR ok|fail"
probe_all() {
	local s
	for s in "${!PNS[@]}"; do
		ip netns exec "${PNS[$s]}" python3 -u -c 'import json, socket, sys, time
src, targets, stop = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
import os
while True:
    for name, ip in targets:
        if name == src:
            continue
        try:
            c = socket.create_connection((ip, 80), timeout=0.3); c.settimeout(0.3); ok = c.recv(2) == b"ok"; c.close()
        except OSError:
            ok = False
        print("%s>%s %s" % (src, name, "ok" if ok else "fail"), flush=True)
    if os.path.exists(stop):
        break' "$s" "$T/targets.json" "$T/stop" >"$T/probes.${s/\//}" 2>&1 &
		PIDS+=($!)
	done
}
check_probes() { # check_probes WHAT: every "ok" line must be allowed by the model
	local bad
	bad=$(cat "$T"/probes.* | python3 -c 'import json, sys
want = json.load(open(sys.argv[1]))
bad = {}
for line in sys.stdin:
    pair, res = line.rsplit(" ", 1)
    if res.strip() == "ok" and not want[pair + " 80/TCP"]:
        bad[pair] = bad.get(pair, 0) + 1
print(" ".join("%s(%d)" % kv for kv in sorted(bad.items())))' "$T/want.json")
	[ -z "$bad" ] || check_fail "$1: pairs the model denies were allowed: $bad"
	info "$1: $(cat "$T"/probes.* | wc -l) probes, $(cat "$T"/probes.* | grep -c ' ok$') allowed, none the model denies"
}
# wait until the policies are in force (the model's table reached once), then start probing
want_now() {
	local got
	got=$(python3 "$NETPOL" probe "$T/nstargets.json" | jq -c 'with_entries(select(.key | endswith(" 80/TCP")))')
	[ "$(jq -S -c . <<<"$got")" = "$(jq -S -c . "$T/want.json")" ]
}
wait_for 15 want_now || fail "100 policies not in force after 15 s"

probe_all
t0=$(date +%s.%N)
ip netns exec "$ETCD_NS" python3 - "$ETCD_URL" "$ETCD_PREFIX/objects/pods" "$CHURN_PODS" "$CHURN_LIVE" \
	"$(lease_var 1 WEFT_SUBNET)" "$(lease_var 2 WEFT_SUBNET)" <<-'PY' || fail "the churn writer failed"
	import base64, ipaddress, json, random, sys, time, urllib.request
	url, prefix, total, live = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
	subnets = [ipaddress.ip_interface(s).network for s in sys.argv[5:7]]
	b64 = lambda s: base64.b64encode(s.encode()).decode()
	def call(path, body):
	    urllib.request.urlopen(urllib.request.Request(url + path, json.dumps(body).encode()), timeout=5).read()
	rnd = random.Random(9)
	free = [(n, subnets[n][i]) for n in (0, 1) for i in range(30, 250)]
	alive = []
	for k in range(total):
	    if len(alive) >= live:
	        key, addr = alive.pop(rnd.randrange(len(alive)))
	        call("/v3/kv/deleterange", {"key": b64(key)})
	        free.append(addr)
	    node, ip = free.pop(rnd.randrange(len(free)))
	    ns = rnd.choice("xyz")
	    key = "%s/%s/churn-%d" % (prefix, ns, k)
	    pod = {"apiVersion": "v1", "kind": "Pod",
	           "metadata": {"namespace": ns, "name": "churn-%d" % k,
	                        "labels": {"pod": rnd.choice("abc"), "churn": "c%d" % rnd.randrange(10)}},
	           "spec": {"nodeName": "node%d" % (node + 1), "containers": [{"name": "c"}]},
	           "status": {"phase": "Running", "podIP": str(ip), "podIPs": [{"ip": str(ip)}]}}
	    call("/v3/kv/put", {"key": b64(key), "value": b64(json.dumps(pod))})
	    alive.append((key, (node, ip)))
	    time.sleep(0.015)  # ~20 s of churn: the probes sample it, not only its end
	for key, _ in alive:
	    call("/v3/kv/deleterange", {"key": b64(key)})
	PY
churn_s=$(echo "$(date +%s.%N) - $t0" | bc)
sleep 1
touch "$T/stop"
sleep 1
info "churned $CHURN_PODS pods (at most $CHURN_LIVE alive, addresses reused) in $(printf '%.1f' "$churn_s") s"
check_probes "during the churn"
wait_for 10 want_now || check_fail "after the churn the table differs from the model"
for i in 1 2; do
	http_get "$i" /metrics
	info "node $i: $(grep -E '^weft_policy_(syncs_total|sync_failures_total|max_sync_seconds) ' <<<"$HTTP_BODY" | tr '\n' ' ')"
	[ "$(awk '$1 == "weft_policy_sync_failures_total" { print $2 }' <<<"$HTTP_BODY")" = 0 ] ||
		check_fail "node $i: failed policy syncs: $(grep -m3 'Policy' "$(node_dir "$i")/weftd.log" | grep -v programmed)"
done
finish
