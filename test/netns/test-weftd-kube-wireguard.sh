#!/usr/bin/env bash
# shellcheck disable=SC2317 # helper functions below are called through wait_for
# The wireguard backend with the Kubernetes datastore (issue 20, item 2: "a weft.dev/public-key
# annotation in Kubernetes mode"): 3 nodes over wireguard-go (no wireguard module here; each weftd in
# a private mount namespace for its UAPI socket, tools/demo-wireguard.sh's wrapper), the fake API
# server (test/kube/fake-apiserver.py, https) where etcd would be, Nodes pre-created with podCIDRs.
#
#   [pod1]--cni0--(node1: weft-wg)--eth0 -+                   +- eth0--(node3: weft-wg)--cni0--[pod3]
#                                        br0 (underlay 10.99.0.0/24)
#   [pod2]--cni0--(node2: weft-wg)--eth0 -+-- fake-apiserver 10.99.0.2:6443 (kubectl reads it)
#
# Checks: every weftd publishes its public key as the annotation weft.dev/public-key (read with
# kubectl; it is the key derived from the node's 0600 private key file, and the private key is
# nowhere in the Node), backend-type wireguard; each node's wireguard-go has the other two nodes as
# peers with exactly the keys of their annotations, endpoints and podCIDRs; routes dev weft-wg; pods
# reach each other across the tunnel (ping, TCP with the pod address kept). Hostile Nodes (a garbage
# key, an all-zero key, a younger Node with node2's key) are refused: a "Refusing lease" log line
# and weft_leases_rejected_total{reason} on every node, no peer and no route for them, and the pods
# still reach each other. A weftd that stops withdraws its key annotation and its peer goes.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
require_root
require_cmd ip jq curl python3 kubectl openssl unshare wg tcpdump # wg: inspection only (wg show, wg pubkey)
require_built "$WEFTD"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v wireguard-go >/dev/null || skip "wireguard-go is not installed (and the test does not use the kernel module)"
# WEFTD becomes the wrapper that runs weftd in a private mount namespace; demo_wg I ARGS: wg in node I
# shellcheck source=../../tools/demo-wireguard.sh
. "$TOP/tools/demo-wireguard.sh"

FIXTURE=$TOP/test/kube/fake-apiserver.py
API_IP=$ETCD_IP
API_URL=https://$API_IP:6443
TOKEN=weft-kube-wireguard-token
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json

cluster_init 3 wireguard --no-etcd
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=fake-apiserver \
	-addext "subjectAltName=IP:$API_IP" -keyout "$T/apiserver.key" -out "$T/apiserver.crt" >"$T/openssl.log" 2>&1 ||
	fail "openssl could not make a certificate: $(cat "$T/openssl.log")"
ip netns exec "$ETCD_NS" python3 "$FIXTURE" --bind "$API_IP" --port 6443 --token "$TOKEN" \
	--cert "$T/apiserver.crt" --key "$T/apiserver.key" \
	--node node1=10.244.1.0/24 --node node2=10.244.2.0/24 --node node3=10.244.3.0/24 >"$T/fixture.log" 2>&1 &
FIXTURE_PID=$!
on_exit "kill $FIXTURE_PID 2>/dev/null; wait $FIXTURE_PID 2>/dev/null"
wait_listen "$ETCD_NS" 6443 || { cat "$T/fixture.log" >&2; fail "fake-apiserver did not come up"; }
cluster_kubeconfig "$KUBECONFIG_FILE" "$API_URL" "$TOKEN"
sed -i "s|^    server: .*|&\n    certificate-authority: $T/apiserver.crt|" "$KUBECONFIG_FILE"
cluster_config_json >"$NET_CONF"

# k ARGS...: kubectl from the API server's namespace (the underlay is not reachable from the host)
k() { ip netns exec "$ETCD_NS" kubectl --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$T/kcache" --request-timeout=10s "$@"; }
api() { # api METHOD PATH [CURL ARGS...]
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -s -m 3 --cacert "$T/apiserver.crt" -H "Authorization: Bearer $TOKEN" -X "$m" "$@" "$API_URL$p"
}
annotation() { k get node "$1" -o "jsonpath={.metadata.annotations.weft\.dev/$2}" 2>/dev/null; } # annotation NODE NAME
metric() { http_get "$1" /metrics; sed -n "s/^$2 //p" <<<"$HTTP_BODY"; }
peers() { http_get "$1" /metrics; grep -c '^weft_wireguard_peer_last_handshake_seconds{' <<<"$HTTP_BODY"; }
is() { [ "$("${@:2}")" = "$1" ]; }

for i in 1 2 3; do
	weftd_start "$i" --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF" \
		--resync-interval 1s --relist-interval 0
done
weftd_wait_ready 1 2 3
routes_ok() {
	local i j
	for i in 1 2 3; do
		for j in 1 2 3; do
			[ "$i" = "$j" ] || [ "$(route_to "$i" "10.244.$j.0/24")" = "- weft-wg " ] || return 1
		done
		[ "$(routes_weft "$i" | wc -l)" = 2 ] || return 1
	done
}
wait_for 15 routes_ok || fail "routes not programmed: node1: $(routes_weft 1 | tr '\n' ';') node2: $(routes_weft 2 | tr '\n' ';')"

# ---- the public key, as kubectl reads it from the Node
declare -A KEY
for i in 1 2 3; do
	KEY[$i]=$(annotation "node$i" public-key)
	keyfile=$(node_dir "$i")/state/wireguard.key
	assert_eq "${KEY[$i]}" "$(wg pubkey <"$keyfile")" "node$i weft.dev/public-key (kubectl) = the public half of its key file"
	assert_eq "${#KEY[$i]}" 44 "node$i public-key annotation length"
	assert_eq "$(stat -c %a "$keyfile")" 600 "node$i private key file mode"
	assert_eq "$(annotation "node$i" backend-type)" wireguard "node$i weft.dev/backend-type (kubectl)"
	assert_eq "$(annotation "node$i" public-ip)" "$(node_ip "$i")" "node$i weft.dev/public-ip (kubectl)"
	k get node "node$i" -o json | grep_q -F "$(head -c 43 "$keyfile")" && check_fail "node$i's private key is in its Node object"
	grep -qF "$(head -c 43 "$keyfile")" "$(node_dir "$i")/weftd.log" && check_fail "node$i logged its private key"
	assert_eq "$(lease_var "$i" WEFT_MTU)" 1440 "node$i lease MTU (1500 - 60)"
done
assert_eq "$(printf '%s\n' "${KEY[@]}" | sort -u | wc -l)" 3 "three distinct public keys"
info "kubectl get nodes -o custom-columns (public-key annotations):"
k get nodes -o 'custom-columns=NAME:.metadata.name,PODCIDR:.spec.podCIDR,PUBLIC-IP:.metadata.annotations.weft\.dev/public-ip,PUBLIC-KEY:.metadata.annotations.weft\.dev/public-key' |
	sed 's/^/#   /'

# ---- each node's wireguard-go: the other two nodes, with the keys of their annotations
# want_peers I: "key endpoint allowed-ips" of the other nodes, sorted
want_peers() {
	local i=$1 j
	for j in 1 2 3; do [ "$i" = "$j" ] || echo "${KEY[$j]} $(node_ip "$j"):51820 10.244.$j.0/24"; done | sort
}
have_peers() { demo_wg "$1" show weft-wg dump | awk 'NR > 1 { print $1, $3, $4 }' | sort; }
for i in 1 2 3; do
	assert_eq "$(have_peers "$i")" "$(want_peers "$i")" "node$i wireguard-go peers (wg show dump)"
	assert_eq "$(demo_wg "$i" show weft-wg public-key)" "${KEY[$i]}" "node$i device key = its annotation"
	assert_eq "$(peers "$i")" 2 "node$i /metrics peers"
done

# ---- the datapath across the tunnel
for i in 1 2 3; do pod_create "$i"; done
pods_ping_all 3
assert_eq "$(seen_peer "$(pod_ns 2)" "$(pod_ip 2)" 8081 "$(pod_ns 1)")" "$(pod_ip 1)" "TCP pod1 -> pod2 keeps the pod address"
assert_eq "$(seen_peer "$(pod_ns 1)" "$(pod_ip 1)" 8082 "$(pod_ns 3)")" "$(pod_ip 3)" "TCP pod3 -> pod1 keeps the pod address"
handshaken() { [ "$(demo_wg "$1" show weft-wg latest-handshakes | awk '$2 > 0' | wc -l)" = 2 ]; }
for i in 1 2 3; do wait_for 5 handshaken "$i" || check_fail "node$i: not every peer has a handshake after the pings"; done

# ---- hostile Nodes: refused (log line, counter), no peer, no route; the rest keeps working
ALL_ZERO=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
now=$(date -u +%Y-%m-%dT%H:%M:%SZ) # younger than node1..3, created when the fixture started
# hostile NAME PODCIDR PUBLIC-IP KEY
hostile() {
	local ann
	ann=$(jq -nc --arg ip "$3" --arg key "$4" '{"weft.dev/public-ip": $ip, "weft.dev/backend-type": "wireguard", "weft.dev/public-key": $key}')
	api POST /fixture/nodes -d "$(jq -nc --arg n "$1" --arg c "$now" --arg p "$2" --argjson a "$ann" \
		'{metadata: {name: $n, creationTimestamp: $c, annotations: $a}, spec: {podCIDRs: [$p], podCIDR: $p}}')" >/dev/null
}
rejected() { metric "$1" "weft_leases_rejected_total{reason=\"$2\"}"; }
atleast() { local v; v=$(rejected "$1" "$2"); [ -n "$v" ] && ((v >= $3)); } # atleast I REASON N
expect_rejected() { # expect_rejected REASON N I...
	local r=$1 n=$2 i
	shift 2
	for i in "$@"; do
		wait_for 5 atleast "$i" "$r" "$n" || check_fail "node$i: reason $r counted $(rejected "$i" "$r") times, want >= $n"
	done
}
logged() { grep -q "Refusing lease .* of node \"$2\": .*\[$3\]" "$(node_dir "$1")/weftd.log"; } # logged I NODE REASON
hostile evil-garbage 10.244.201.0/24 "$CLUSTER_UNDERLAY.71" not-a-key
hostile evil-zero 10.244.202.0/24 "$CLUSTER_UNDERLAY.72" "$ALL_ZERO"
# zz-dup: node2's key on a younger Node (the older lease wins; equal timestamps go by name, node2 first)
hostile zz-dup 10.244.203.0/24 "$CLUSTER_UNDERLAY.73" "${KEY[2]}"
assert_eq "$(annotation zz-dup public-key)" "${KEY[2]}" "kubectl reads the duplicate key on Node zz-dup"
expect_rejected public_key 2 1 3
expect_rejected public_key 3 2 # node2 also refuses its own key
expect_rejected duplicate_public_key 1 1 3
for i in 1 2 3; do
	wait_for 5 logged "$i" evil-garbage public_key || check_fail "node$i did not log refusing evil-garbage"
	wait_for 5 logged "$i" evil-zero public_key || check_fail "node$i did not log refusing evil-zero"
done
for i in 1 3; do wait_for 5 logged "$i" zz-dup duplicate_public_key || check_fail "node$i did not log refusing zz-dup as a duplicate key"; done
wait_for 5 logged 2 zz-dup public_key || check_fail "node2 did not log refusing zz-dup (its own key)"
info "node1 refused: public_key $(rejected 1 public_key), duplicate_public_key $(rejected 1 duplicate_public_key); its log:"
grep 'Refusing lease' "$(node_dir 1)/weftd.log" | sed 's/^/#   /'
for i in 1 2 3; do
	assert_eq "$(have_peers "$i")" "$(want_peers "$i")" "node$i peers after the hostile Nodes (none added, none replaced)"
	assert_eq "$(routes_weft "$i" | wc -l)" 2 "node$i routes after the hostile Nodes"
	for s in 201 202 203; do assert_eq "$(route_to "$i" "10.244.$s.0/24")" "" "node$i route to hostile 10.244.$s.0/24"; done
done
pods_ping_all 3
for n in evil-garbage evil-zero zz-dup; do api DELETE "/api/v1/nodes/$n" >/dev/null; done

# ---- node3's weftd stops (no --keep-lease): its key annotation is withdrawn, its peer goes
weftd_stop 3
assert_eq "$WEFTD_RC" 0 "node3 exit status after SIGTERM"
assert_eq "$(annotation node3 public-key)" "" "node3 public-key annotation after it stopped"
for i in 1 2; do
	wait_for 10 is 1 peers "$i" || check_fail "node$i still has $(peers "$i") peers 10 s after node3 left"
	assert_eq "$(demo_wg "$i" show weft-wg peers | grep -c -- "${KEY[3]}" || true)" 0 "node$i has no peer with node3's key"
done
assert_ping "$(pod_ns 1)" "$(pod_ip 2)"
assert_ping "$(pod_ns 2)" "$(pod_ip 1)"

for i in 1 2; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status after SIGTERM"
done
finish
