# shellcheck shell=bash
# shellcheck disable=SC2034 # variables set here are read by the tests that source this file
# A throwaway weft cluster in network namespaces, for the weftd tests, the demo and the benchmarks.
# Source lib.sh first, then this file:
#
#   . "$(dirname "$0")/../lib/lib.sh"; . "$(dirname "$0")/../lib/weft-cluster-lib.sh"
#   cluster_init 3 vxlan                  # underlay, 3 node namespaces, etcd, config in etcd
#   weftd_start 1; weftd_start 2; weftd_start 3
#   weftd_wait_ready 1 2 3
#
#   underlay netns (w-ul-PID): bridge br0, no address
#     |-- veth -- node i  (w-nI-PID)   eth0 10.99.0.(10+i)/24, weftd, cni0 + pod netns (w-pI-PID)
#     |-- veth -- etcd    (w-etcd-PID) eth0 10.99.0.2/24, /usr/bin/etcd on :2379, data in $T/etcd
#     `-- veth -- outside (w-out-PID)  eth0 10.99.0.200/24 (a host outside the cluster network)
#
# Pods use 10.244.0.0/16 (only inside these namespaces). Everything is removed by lib.sh's trap:
# weftd and etcd are killed (on_exit), then the namespaces deleted.
#
# Knobs (environment): CLUSTER_NETWORK (10.244.0.0/16), CLUSTER_SUBNET_LEN (24),
# CLUSTER_MASQ (true), CLUSTER_EXTRA_BACKEND (extra JSON members for "Backend", e.g. '"DirectRouting": true'),
# CLUSTER_EXTRA_CONFIG (extra top-level JSON members, e.g. '"LoadBalancer": {...}'),
# WEFTD_ARGS (extra weftd args for every node), WEFTD_LEASE_TTL (default 10),
# CLUSTER_UNDERLAY (first three octets of the underlay /24, default 10.99.0; set before sourcing).

CLUSTER_NETWORK=${CLUSTER_NETWORK:-10.244.0.0/16}
CLUSTER_NETWORK6=${CLUSTER_NETWORK6:-}   # e.g. fd00:10:244::/56 for dual-stack (SubnetLen6 64)
CLUSTER_SUBNET_LEN=${CLUSTER_SUBNET_LEN:-24}
CLUSTER_MASQ=${CLUSTER_MASQ:-true}
CLUSTER_EXTRA_BACKEND=${CLUSTER_EXTRA_BACKEND:-}
CLUSTER_EXTRA_CONFIG=${CLUSTER_EXTRA_CONFIG:-}
WEFTD_LEASE_TTL=${WEFTD_LEASE_TTL:-10}
WEFTD=${WEFTD:-$WEFT_BIN/weftd}
CLUSTER_UNDERLAY=${CLUSTER_UNDERLAY:-10.99.0}
ETCD_IP=$CLUSTER_UNDERLAY.2
ETCD_URL=http://$ETCD_IP:2379
OUTSIDE_IP=$CLUSTER_UNDERLAY.200
ETCD_PREFIX=/weft/network
CLUSTER_N=0
CLUSTER_BACKEND=
UL_NS=
ETCD_NS=
OUT_NS=
ETCD_PID=
declare -a WEFTD_PID=()

cluster_require() {
	require_root
	require_cmd ip bridge jq curl nft etcd etcdctl python3
	require_built "$WEFTD"
	require_kind vxlan
}

node_ns() { echo "w-n$1-$$"; }
pod_ns() { echo "w-p$1-$$"; }
node_ip() { echo "$CLUSTER_UNDERLAY.$((10 + $1))"; }
node_dir() { echo "$T/n$1"; }

# _attach NS IFNAME ADDR: veth from NS (as eth0) to the underlay bridge
_attach() {
	local ns=$1 tag=$2 addr=$3
	ip link add "ul-$tag" netns "$UL_NS" type veth peer name eth0 netns "$ns"
	ip -n "$UL_NS" link set "ul-$tag" master br0 up
	ip -n "$ns" addr add "$addr/24" dev eth0
	ip -n "$ns" link set eth0 up
}

# cluster_config_json: the network config for the chosen backend
# cluster_kubeconfig FILE URL TOKEN: a kubeconfig for weftd that reaches the fake API server
# (test/kube/fake-apiserver.py) at URL with a bearer token
cluster_kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $2
contexts:
- name: weft@test
  context: {cluster: test, user: weft}
current-context: weft@test
users:
- name: weft
  user:
    token: $3
EOF
}

cluster_config_json() {
	local be extra=""
	be="\"Type\": \"$CLUSTER_BACKEND\""
	[ -n "$CLUSTER_EXTRA_BACKEND" ] && extra=", $CLUSTER_EXTRA_BACKEND"
	local net6=""
	[ -n "$CLUSTER_NETWORK6" ] && net6=$(printf ', "Network6": "%s", "SubnetLen6": 64' "$CLUSTER_NETWORK6")
	printf '{"Network": "%s", "SubnetLen": %s%s, "Backend": {%s%s}, "Masquerade": %s%s}\n' \
		"$CLUSTER_NETWORK" "$CLUSTER_SUBNET_LEN" "$net6" "$be" "$extra" "$CLUSTER_MASQ" "${CLUSTER_EXTRA_CONFIG:+, $CLUSTER_EXTRA_CONFIG}"
}

etcdctl_() { ip netns exec "$ETCD_NS" etcdctl --endpoints "$ETCD_URL" --dial-timeout 2s "$@"; }

# cluster_etcd_start: (re)starts etcd in its namespace (same data dir) and waits until it answers
cluster_etcd_start() {
	mkdir -p "$T/etcd"
	# shellcheck disable=SC2086 # ETCD_ARGS: extra flags (--max-txn-ops 3000), split on purpose
	ip netns exec "$ETCD_NS" etcd --name weft-test --data-dir "$T/etcd/data" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster weft-test=http://127.0.0.1:2380 --log-level error ${ETCD_ARGS:-} \
		>>"$T/etcd/etcd.log" 2>&1 &
	ETCD_PID=$!
	local i
	for i in $(seq 100); do
		etcdctl_ endpoint health >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$T/etcd/etcd.log" >&2
	fail "etcd did not come up"
}

cluster_etcd_stop() {
	[ -n "$ETCD_PID" ] || return 0
	kill "$ETCD_PID" 2>/dev/null || true
	wait "$ETCD_PID" 2>/dev/null || true
	ETCD_PID=
}

# cluster_init N BACKEND [--no-etcd] [--no-config]: builds the topology; starts etcd and stores the
# config unless told not to.
cluster_init() {
	local n=$1 i start_etcd=1 put_config=1
	CLUSTER_BACKEND=$2
	shift 2
	for a in "$@"; do
		case $a in
		--no-etcd) start_etcd=0 ;;
		--no-config) put_config=0 ;;
		esac
	done
	CLUSTER_N=$n
	UL_NS=$(mk_netns ul)
	ip -n "$UL_NS" link add br0 type bridge
	ip -n "$UL_NS" link set br0 up
	ETCD_NS=$(mk_netns etcd)
	_attach "$ETCD_NS" etcd "$ETCD_IP"
	OUT_NS=$(mk_netns out)
	_attach "$OUT_NS" out "$OUTSIDE_IP"
	for ((i = 1; i <= n; i++)); do
		cluster_add_node "$i"
	done
	on_exit cluster_teardown
	if [ $start_etcd = 1 ]; then
		cluster_etcd_start
		[ $put_config = 1 ] && etcdctl_ put "$ETCD_PREFIX/config" "$(cluster_config_json)" >/dev/null
	fi
	return 0
}

# cluster_add_node I: one more node namespace on the underlay (weftd not started)
cluster_add_node() {
	local i=$1 ns
	ns=$(mk_netns "n$i")
	_attach "$ns" "n$i" "$(node_ip "$i")"
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
	mkdir -p "$(node_dir "$i")"/{cni,run,state,bin}
	((i > CLUSTER_N)) && CLUSTER_N=$i
	return 0
}

# objects_put KEY JSON: writes the object <prefix>/objects/KEY to etcd (what `weft apply` does)
objects_put() { etcdctl_ put "$ETCD_PREFIX/objects/$1" "$2" >/dev/null; }
# nth_addr CIDR N: the Nth address of CIDR's network
nth_addr() { python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network[int(sys.argv[2])])' "$1" "$2"; }

# node_bridge_dual I: node I's pod bridge cni0 with the gateway addresses of its IPv4 and IPv6
# subnets, and forwarding on (what the CNI plugin does on ADD), for tests that attach pods by hand
node_bridge_dual() {
	local i=$1 gw s6 ns
	ns=$(node_ns "$i")
	gw=$(lease_var "$i" WEFT_SUBNET) s6=$(lease_var "$i" WEFT_SUBNET6)
	[ -n "$s6" ] || fail "node $i has no IPv6 subnet"
	ip -n "$ns" link add cni0 type bridge
	ip -n "$ns" addr add "$gw" dev cni0
	ip -n "$ns" addr add "$(nth_addr "$s6" 1)/${s6#*/}" dev cni0 nodad
	ip -n "$ns" link set cni0 up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv4.ip_forward=1
}

cluster_teardown() {
	local i
	for i in "${!WEFTD_PID[@]}"; do
		[ -n "${WEFTD_PID[$i]}" ] || continue
		kill -KILL "${WEFTD_PID[$i]}" 2>/dev/null || true
		# reap it here, quietly: bash would otherwise print "Killed" with the job's command line
		wait "${WEFTD_PID[$i]}" 2>/dev/null || true # 137: killed, as asked (errexit must not end the caller)
	done
	cluster_etcd_stop
	return 0
}

# _weftd_argv I ARGS...: sets WEFTD_ARGV to the command that runs weftd in node I's namespace
_weftd_argv() {
	local i=$1 d
	shift
	d=$(node_dir "$i")
	WEFTD_ARGV=(ip netns exec "$(node_ns "$i")" env WEFT_LOG_LEVEL="${WEFT_LOG_LEVEL:-info}"
		ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" "$WEFTD" "$@"
		--cni-conf-dir "$d/cni" --cni-bin-dir "$d/bin" --run-dir "$d/run" --state-dir "$d/state")
}

# weftd_cmd I ARGS...: runs weftd in the foreground in node I's namespace with that node's dirs
weftd_cmd() {
	_weftd_argv "$@"
	"${WEFTD_ARGV[@]}"
}

# weftd_start I [ARGS...]: starts weftd in the background (log: $T/nI/weftd.log). WEFTD_PID[I] is
# weftd's own PID (ip netns exec and env exec, they do not fork).
weftd_start() {
	local i=$1
	shift
	# shellcheck disable=SC2086
	_weftd_argv "$i" --node-name "node$i" --iface eth0 --etcd-endpoints "$ETCD_URL" \
		--etcd-prefix "$ETCD_PREFIX" --listen 127.0.0.1:9876 --lease-ttl "$WEFTD_LEASE_TTL" \
		${WEFTD_ARGS:-} "$@"
	"${WEFTD_ARGV[@]}" >>"$(node_dir "$i")/weftd.log" 2>&1 &
	WEFTD_PID[i]=$!
}

# weftd_stop I [SIGNAL]: signals weftd and waits for it; its exit code is left in WEFTD_RC
weftd_stop() {
	local i=$1 sig=${2:-TERM} pid=${WEFTD_PID[$1]:-}
	WEFTD_RC=0
	[ -n "$pid" ] || return 0
	kill -"$sig" "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || WEFTD_RC=$?
	WEFTD_PID[i]=
}

weftd_alive() { [ -n "${WEFTD_PID[$1]:-}" ] && kill -0 "${WEFTD_PID[$1]}" 2>/dev/null; }

# http_get I PATH: status code and body of weftd's HTTP endpoint (body to stdout, code to $HTTP_CODE)
http_get() {
	local out
	out=$(ip netns exec "$(node_ns "$1")" curl -s -m 2 -w '\n%{http_code}' "http://127.0.0.1:9876$2" 2>/dev/null) || true
	HTTP_CODE=${out##*$'\n'}
	HTTP_BODY=${out%$'\n'*}
}

# weftd_wait_ready I... [TIMEOUT via WAIT_TIMEOUT, default 30 s]: /healthz 200 on every node
weftd_wait_ready() {
	local i t
	for i in "$@"; do
		for ((t = 0; t < ${WAIT_TIMEOUT:-30} * 10; t++)); do
			http_get "$i" /healthz
			[ "$HTTP_CODE" = 200 ] && break
			weftd_alive "$i" || { tail -20 "$(node_dir "$i")/weftd.log" >&2; fail "weftd on node $i exited"; }
			sleep 0.1
		done
		[ "$HTTP_CODE" = 200 ] || { tail -30 "$(node_dir "$i")/weftd.log" >&2; fail "node $i not ready"; }
	done
}

# pods_ping_all N: every pod of nodes 1..N pings every other one (assert_ping: a miss is a check failure)
pods_ping_all() {
	local i j
	for ((i = 1; i <= $1; i++)); do
		for ((j = 1; j <= $1; j++)); do
			[ "$i" = "$j" ] || assert_ping "$(pod_ns "$i")" "$(pod_ip "$j")"
		done
	done
}

# lease_var I KEY: a value from node I's subnet.env
lease_var() { sed -n "s/^$2=//p" "$(node_dir "$1")/run/subnet.env"; }
# node_subnet I: node I's pod subnet as network/len (10.244.3.0/24)
node_subnet() {
	local gw
	gw=$(lease_var "$1" WEFT_SUBNET)
	python3 -c 'import ipaddress,sys; print(ipaddress.ip_interface(sys.argv[1]).network)' "$gw"
}
# vtep_ip I: network address of node I's subnet (its VTEP address)
vtep_ip() { local s; s=$(node_subnet "$1"); echo "${s%/*}"; }

# pod_create I: bridge cni0 (lease gateway) in node I + one pod netns with an address from the subnet
pod_create() {
	local i=$1 ns pns gw len mtu podip
	ns=$(node_ns "$i")
	gw=$(lease_var "$i" WEFT_SUBNET)
	mtu=$(lease_var "$i" WEFT_MTU)
	len=${gw#*/}
	podip=$(pod_ip "$i")
	pns=$(mk_netns "p$i")
	ip -n "$ns" link add cni0 type bridge
	ip -n "$ns" addr add "$gw" dev cni0
	ip -n "$ns" link set cni0 up
	ip -n "$ns" link add "veth-p$i" mtu "$mtu" type veth peer name eth0 netns "$pns" mtu "$mtu"
	ip -n "$ns" link set "veth-p$i" master cni0 up
	ip -n "$pns" addr add "$podip/$len" dev eth0
	ip -n "$pns" link set eth0 up
	ip -n "$pns" route add default via "${gw%/*}"
}
# pod_ip I: the pod's address (.10 of the node subnet)
pod_ip() {
	local s
	s=$(node_subnet "$1")
	python3 -c 'import ipaddress,sys; print(ipaddress.ip_network(sys.argv[1])[10])' "$s"
}

# peer_listen NS PORT OUTFILE: accepts one TCP connection and writes the peer's address to OUTFILE.
# Sets LISTEN_PID.
peer_listen() {
	ip netns exec "$1" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); s.settimeout(10)
c, a = s.accept(); open(sys.argv[2], "w").write(a[0] + "\n"); c.close()' "$2" "$3" &
	LISTEN_PID=$!
	local t
	for t in $(seq 50); do
		ip netns exec "$1" ss -ltnH "sport = :$2" 2>/dev/null | grep_q . && return 0
		sleep 0.05
	done
}
# tcp_connect NS ADDR PORT: one TCP connection (bash /dev/tcp), 3 s limit
tcp_connect() {
	ip netns exec "$1" timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3; echo hi >&3" 2>/dev/null
}
# seen_peer NS ADDR PORT: address the listener on ADDR saw when NS connected to it
seen_peer() {
	local lns=$1 addr=$2 port=$3 from=$4 f="$T/peer.$RANDOM"
	peer_listen "$lns" "$port" "$f"
	tcp_connect "$from" "$addr" "$port" || true
	wait "$LISTEN_PID" 2>/dev/null || true
	cat "$f" 2>/dev/null || echo none
}

# loop_outage FILE: "failures window_ms" of a `svc.py loop` log (window: from the last success
# before the first failure to the first success after the last one; "0 0" if nothing failed)
loop_outage() {
	python3 - "$1" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ok = [(float(r[0]), len(r) > 1 and r[1].startswith("p")) for r in rows]
fails = [i for i, (_, g) in enumerate(ok) if not g]
if not fails:
    print(0, 0)
    sys.exit()
before = max([t for t, g in ok[: fails[0]] if g] or [ok[0][0]])
after = min([t for t, g in ok[fails[-1] :] if g] or [ok[-1][0]])
print(len(fails), int((after - before) * 1000))
EOF
}

# Kernel state helpers (JSON through jq)
# routes_weft I: "dst via gw dev" lines of weft routes (protocol 0xfc = 252) in node I
routes_weft() {
	ip -n "$(node_ns "$1")" -j route show proto 252 | jq -r '.[] | "\(.dst) \(.gateway // "-") \(.dev)"' | sort
}
route_to() { # route_to I DST -> "gw dev flags" or empty
	ip -n "$(node_ns "$1")" -j route show proto 252 | jq -r --arg d "$2" '.[] | select(.dst == $d) | "\(.gateway // "-") \(.dev) \(.flags | join(","))"'
}
neigh_on() { # neigh_on I IP -> "mac state"
	ip -n "$(node_ns "$1")" -j neigh show dev "weft.1" | jq -r --arg d "$2" '.[] | select(.dst == $d) | "\(.lladdr) \(.state | join(","))"'
}
fdb_on() { # fdb_on I MAC -> dst
	bridge -n "$(node_ns "$1")" -j fdb show dev weft.1 | jq -r --arg m "$2" '.[] | select(.mac == $m) | .dst // empty'
}
vtep_mac() { ip -n "$(node_ns "$1")" -j link show weft.1 | jq -r '.[0].address'; }

# wait_for SECONDS CMD...: polls CMD every 20 ms until it succeeds; 1 on timeout. SECONDS is
# multiplied by WEFT_TEST_SLACK (lib.sh; tools/run-tests raises it for the sanitizer pass).
wait_for() {
	local t=$1 end
	shift
	end=$(($(date +%s%N) + t * WEFT_TEST_SLACK * 1000000000))
	while (($(date +%s%N) < end)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.02
	done
	return 1
}
