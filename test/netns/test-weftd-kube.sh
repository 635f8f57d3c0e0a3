#!/usr/bin/env bash
# shellcheck disable=SC2317 # helper functions below are called through wait_for
# weftd with the Kubernetes datastore end to end: 3 nodes on one underlay, the fake API server
# (test/kube/fake-apiserver.py, https with a self-signed CA when openssl is there) in its own
# namespace where etcd would be, nodes pre-created with podCIDRs as kube-controller-manager would.
# Runs itself once per backend (host-gw, vxlan), each in fresh namespaces.
#
#   [pod1]--cni0--(node1)--eth0 -+                        +- eth0--(node3)--cni0--[pod3]
#                               br0 (underlay 10.99.0.0/24)
#   [pod2]--cni0--(node2)--eth0 -+-- fake-apiserver 10.99.0.2:6443
#
# Checks: each node's lease is its Node's podCIDR; weftd publishes its annotations (public IP,
# backend, VTEP MAC); routes / neighbours / FDB to the other two nodes; pod <-> pod ping across
# nodes; a Node deleted from the API loses its routes everywhere; a weftd stopped without
# --keep-lease withdraws its annotations and the others drop it.
if [ -z "${WEFT_BACKEND_CASE:-}" ]; then
	rc=0 skipped=0
	for c in host-gw vxlan; do
		echo "# ---- backend case: $c"
		WEFT_BACKEND_CASE=$c bash "$0"
		r=$?
		if [ $r = 77 ]; then skipped=1; elif [ $r != 0 ]; then rc=1; fi
	done
	((rc == 0 && skipped == 1)) && exit 77
	exit $rc
fi

. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
TEST_NAME="${TEST_NAME}[$WEFT_BACKEND_CASE]"
backend=$WEFT_BACKEND_CASE

require_root
require_cmd ip bridge jq curl nft python3
require_built "$WEFTD"
[ "$backend" = vxlan ] && require_kind vxlan

FIXTURE=$TOP/test/kube/fake-apiserver.py
API_IP=$ETCD_IP
TOKEN=weft-netns-token
KUBECONFIG_FILE=$T/kubeconfig
NET_CONF=$T/net-conf.json

cluster_init 3 "$backend" --no-etcd

# ---- the API server, where etcd would be
scheme=http
cert_args=()
ca_line=""
if command -v openssl >/dev/null; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
		-subj /CN=fake-apiserver -addext "subjectAltName=IP:$API_IP" \
		-keyout "$T/apiserver.key" -out "$T/apiserver.crt" >"$T/openssl.log" 2>&1 ||
		fail "openssl could not make a certificate: $(cat "$T/openssl.log")"
	scheme=https
	cert_args=(--cert "$T/apiserver.crt" --key "$T/apiserver.key")
	ca_line="    certificate-authority: $T/apiserver.crt"
else
	info "no openssl: the API server speaks plain http"
fi
API_URL=$scheme://$API_IP:6443
ip netns exec "$ETCD_NS" python3 "$FIXTURE" --bind "$API_IP" --port 6443 --token "$TOKEN" "${cert_args[@]}" \
	--node node1=10.244.1.0/24 --node node2=10.244.2.0/24 --node node3=10.244.3.0/24 \
	>"$T/fixture.log" 2>&1 &
FIXTURE_PID=$!
on_exit "kill $FIXTURE_PID; wait $FIXTURE_PID"

# api METHOD PATH [CURL ARGS...]: a request to the API server from its namespace
api() {
	local m=$1 p=$2
	shift 2
	ip netns exec "$ETCD_NS" curl -sk -m 3 -X "$m" -H "Authorization: Bearer $TOKEN" "$@" "$API_URL$p"
}
wait_for 30 api GET /version || { cat "$T/fixture.log" >&2; fail "fake-apiserver did not come up"; }

cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $API_URL
$ca_line
contexts:
- name: weft@test
  context: {cluster: test, user: weft}
current-context: weft@test
users:
- name: weft
  user:
    token: $TOKEN
EOF
cluster_config_json >"$NET_CONF"

# ---- a kubeconfig that cannot be loaded is a configuration error: exit 2 at once, no retry,
# nothing written (whichever of its users loads it first says so: the datastore, or the object cache)
sed 's/^current-context: .*/current-context: nosuch/' "$KUBECONFIG_FILE" >"$T/kubeconfig-bad-context"
for bad in "$T/kubeconfig-missing" "$T/kubeconfig-bad-context"; do
	for objects in kubernetes none; do # none: the lease datastore alone loads it
		rc=0
		_weftd_argv 1 --node-name node1 --iface eth0 --listen 127.0.0.1:9876 --datastore kubernetes \
			--objects-datastore "$objects" --kubeconfig "$bad" --net-config "$NET_CONF"
		out=$(timeout 10 "${WEFTD_ARGV[@]}" 2>&1) || rc=$?
		assert_eq "$rc" 2 "broken kubeconfig $(basename "$bad") (objects $objects): exit code"
		grep -Eq "$(basename "$bad"): (cannot read|context \"nosuch\")" <<<"$out" ||
			check_fail "broken kubeconfig $(basename "$bad") (objects $objects): message should name the file and the fault, got: $out"
		grep -q "attempt" <<<"$out" && check_fail "broken kubeconfig $(basename "$bad") (objects $objects): retried: $out"
		[ -e "$(node_dir 1)/cni/10-weft.conflist" ] && check_fail "broken kubeconfig $(basename "$bad") (objects $objects): conflist written"
		[ -e "$(node_dir 1)/run/subnet.env" ] && check_fail "broken kubeconfig $(basename "$bad") (objects $objects): lease file written"
	done
done

# leases from etcd (none here), objects from Kubernetes: the object cache loads the kubeconfig, before
# any datastore retry; broken, that is exit 2 too; sound, it is loaded once while etcd is retried
_weftd_argv 1 --node-name node1 --iface eth0 --listen 127.0.0.1:9876 --datastore etcd --etcd-endpoints http://127.0.0.1:9 \
	--objects-datastore kubernetes --kubeconfig "$T/kubeconfig-bad-context" --net-config "$NET_CONF"
rc=0
out=$(timeout 10 "${WEFTD_ARGV[@]}" 2>&1) || rc=$?
assert_eq "$rc" 2 "broken kubeconfig (leases from etcd, objects from kubernetes): exit code"
grep -q 'kubeconfig-bad-context: context "nosuch"' <<<"$out" || check_fail "broken kubeconfig (objects only): message: $out"
_weftd_argv 1 --node-name node1 --iface eth0 --listen 127.0.0.1:9876 --datastore etcd --etcd-endpoints http://127.0.0.1:9 \
	--objects-datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF"
rc=0
out=$(timeout 3 "${WEFTD_ARGV[@]}" 2>&1) || rc=$?
assert_eq "$rc" 124 "etcd leases + kubernetes objects, etcd unreachable: weftd still up after 3 s"
assert_eq "$(grep -c "Loaded kubeconfig $KUBECONFIG_FILE\$" <<<"$out")" 1 "kubeconfig loads (leases from etcd, objects from kubernetes)"

for i in 1 2 3; do
	weftd_start "$i" --datastore kubernetes --kubeconfig "$KUBECONFIG_FILE" --net-config "$NET_CONF"
done
weftd_wait_ready 1 2 3
# leases and objects from Kubernetes: the datastore loads the kubeconfig, the object cache copies it
for i in 1 2 3; do
	assert_eq "$(grep -c "Loaded kubeconfig $KUBECONFIG_FILE\$" "$(node_dir "$i")/weftd.log")" 1 "node$i kubeconfig loads"
done
pods_synced() { http_get 1 /debug/objects && [ "$(jq -r .kinds.pods.synced <<<"$HTTP_BODY")" = true ]; }
wait_for 10 pods_synced || check_fail "node1's object cache (on the datastore's kubeconfig) never synced pods: $HTTP_BODY"

# ---- leases come from podCIDRs; annotations are published
declare -A MAC
for i in 1 2 3; do
	assert_eq "$(node_subnet "$i")" "10.244.$i.0/24" "node$i lease is its podCIDR"
	node=$(api GET "/api/v1/nodes/node$i")
	assert_eq "$(jq -r '.metadata.annotations["weft.dev/public-ip"]' <<<"$node")" "$(node_ip "$i")" "node$i public-ip annotation"
	assert_eq "$(jq -r '.metadata.annotations["weft.dev/backend-type"]' <<<"$node")" "$backend" "node$i backend-type annotation"
	if [ "$backend" = vxlan ]; then
		MAC[$i]=$(vtep_mac "$i")
		assert_eq "$(jq -r '.metadata.annotations["weft.dev/vtep-mac"]' <<<"$node")" "${MAC[$i]}" "node$i vtep-mac annotation"
	fi
done

# every node reaches the other two
routes_ok() {
	local i j got
	for i in 1 2 3; do
		[ "$(routes_weft "$i" | wc -l)" = 2 ] || return 1
		for j in 1 2 3; do
			[ "$i" = "$j" ] && continue
			got=$(route_to "$i" "10.244.$j.0/24")
			case $backend in
			host-gw) [ "$got" = "$(node_ip "$j") eth0 " ] || return 1 ;;
			vxlan) [ "$got" = "10.244.$j.0 weft.1 onlink" ] || return 1 ;;
			esac
		done
	done
}
wait_for 10 routes_ok || check_fail "routes not programmed as expected"
for i in 1 2 3; do
	info "node$i routes: $(routes_weft "$i" | tr '\n' ';')"
	[ "$backend" = vxlan ] || continue
	for j in 1 2 3; do
		[ "$i" = "$j" ] && continue
		assert_eq "$(neigh_on "$i" "10.244.$j.0")" "${MAC[$j]} PERMANENT" "node$i neighbour for node$j"
		assert_eq "$(fdb_on "$i" "${MAC[$j]}")" "$(node_ip "$j")" "node$i FDB for node$j"
	done
done

# ---- datapath
for i in 1 2 3; do pod_create "$i"; done
pods_ping_all 3

# ---- a Node deleted from the API loses its routes everywhere
api DELETE /api/v1/nodes/node3 >/dev/null
no_route_to_3() { [ -z "$(route_to 1 10.244.3.0/24)" ] && [ -z "$(route_to 2 10.244.3.0/24)" ]; }
wait_for 10 no_route_to_3 || check_fail "routes to deleted node3 remain: node1: $(routes_weft 1 | tr '\n' ';') node2: $(routes_weft 2 | tr '\n' ';')"
if [ "$backend" = vxlan ]; then
	assert_eq "$(fdb_on 1 "${MAC[3]}")" "" "node1 FDB for deleted node3 removed"
fi
assert_no_ping "$(pod_ns 1)" "$(pod_ip 3)"
assert_ping "$(pod_ns 1)" "$(pod_ip 2)"

# ---- weftd on node2 stops (no --keep-lease): annotations withdrawn, node1 drops node2
weftd_stop 2
assert_eq "$WEFTD_RC" 0 "node2 exit status after SIGTERM"
assert_eq "$(api GET /api/v1/nodes/node2 | jq -r '.metadata.annotations["weft.dev/public-ip"] // "none"')" none \
	"node2 annotations removed on shutdown"
no_route_1_to_2() { [ -z "$(route_to 1 10.244.2.0/24)" ]; }
wait_for 10 no_route_1_to_2 || check_fail "node1 still routes to stopped node2"

for i in 1 3; do
	weftd_stop "$i"
	assert_eq "$WEFTD_RC" 0 "node$i exit status after SIGTERM"
done
finish
