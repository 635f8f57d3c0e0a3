#!/usr/bin/env bash
# weftd must not trust the datastore blindly (etcd). The reproductions of issue 7, items 1-6, on a
# vxlan cluster with the issue's addresses: underlay 10.250.100.0/24, Network 10.250.128.0/17.
#
#   underlay br0 10.250.100.0/24 -- node1 (.11, + dummy0 10.250.200.1/24) -- node2 (.12, + a static
#   route 10.250.201.0/24) -- node3 (.13, a 120-character node name) -- node4 (.14, started late)
#   -- etcd (.2)
#
#   1. a lease outside the Network (the underlay's own /24) is refused everywhere; the connected
#      route stays the kernel's, etcd stays reachable, also after the key is deleted; a lease
#      covering a network connected to one node is refused there only; a route weft did not
#      install is never replaced or deleted
#   2. a /25 inside node2's (or node1's) /24 is refused everywhere: node2's neighbour, FDB and
#      route stay; a second lease with node2's VTEP MAC loses to node2's older lease
#   3. another key claiming "node2" is refused and its deletion leaves node2 alone
#   5. public IP loopback / multicast MAC / invalid node name refused; long names (> 63) work
#   4. node3's own key deleted: put back at once (same subnet), /healthz stays 200; node4 gets
#      another subnet
#   6. etcd wiped: node1 keeps its routes to node2 and node3 without a gap
#   4. node3's key overwritten by another node: node3 goes unhealthy, says so, stays up
#
# HOSTILE_STEPS (default "1 2 3 5 4 6 4b") runs a subset, e.g. to see each step fail on its own
# against an older weftd (step 1 cuts that one's underlay, and everything after fails with it).
# shellcheck disable=SC2317 # helpers are called through wait_for
CLUSTER_UNDERLAY=10.250.100
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
cluster_require
CLUSTER_NETWORK=10.250.128.0/17
WEFTD_LEASE_TTL=6
WEFTD_ARGS="--resync-interval 1s --relist-interval 2s"
LONG3=${HOSTILE_NODE3_NAME:-"node3-$(printf 'long%.0s' {1..28})"} # 118 characters
SUB=$ETCD_PREFIX/subnets

cluster_init 4 vxlan
# KEEP_LOGS=DIR: keep the weftd logs there (the test directory is removed at exit)
[ -z "${KEEP_LOGS:-}" ] || on_exit "mkdir -p '$KEEP_LOGS'; (for n in 1 2 3 4; do cp '$T'/n\$n/weftd.log '$KEEP_LOGS'/weftd-n\$n.log; done)"
ip -n "$(node_ns 1)" link add dummy0 type bridge # no dummy kind on every kernel
ip -n "$(node_ns 1)" addr add 10.250.200.1/24 dev dummy0
ip -n "$(node_ns 1)" link set dummy0 up
ip -n "$(node_ns 2)" route add 10.250.201.0/24 via 10.250.100.99 proto static

weftd_start 1
weftd_start 2
weftd_start 3 --node-name "$LONG3"
weftd_wait_ready 1 2 3
two_each() { local i; for i in 1 2 3; do [ "$(routes_weft "$i" | wc -l)" = 2 ] || return 1; done; }
wait_for 10 two_each || fail "cluster not programmed: $(routes_weft 1 | tr '\n' ';')"
n1=$(node_subnet 1) n2=$(node_subnet 2) n3=$(node_subnet 3)
mac2=$(vtep_mac 2)
info "subnets: node1 $n1, node2 $n2, node3 (${#LONG3}-character name) $n3"
snapshot() { # the kernel state of node I that must not change
	echo "routes: $(routes_weft "$1" | tr '\n' ';')"
	echo "neigh: $(ip -n "$(node_ns "$1")" -j neigh show dev weft.1 nud permanent | jq -c 'map([.dst, .lladdr]) | sort')"
	echo "fdb: $(bridge -n "$(node_ns "$1")" -j fdb show dev weft.1 | jq -c 'map(select(.dst)) | map([.mac, .dst]) | sort')"
}
before1=$(snapshot 1) before2=$(snapshot 2) before3=$(snapshot 3)

# rejected I REASON: weft_leases_rejected_total{reason=REASON} of node I
rejected() {
	http_get "$1" /metrics
	sed -n "s/^weft_leases_rejected_total{reason=\"$2\"} //p" <<<"$HTTP_BODY"
}
rejected_on() { # rejected_on REASON I...: every node I counted it
	local r=$1 i v
	shift
	for i in "$@"; do v=$(rejected "$i" "$r"); [ -n "$v" ] && ((v >= ${MIN:-1})) || return 1; done
}
expect_rejected() { # expect_rejected REASON I...
	local r=$1
	shift
	wait_for 5 rejected_on "$r" "$@" || check_fail "reason $r not counted on node(s) $* (node$1: $(rejected "$1" "$r"))"
}
# kroute I DST: "protocol dev gateway" of the main-table route to DST in node I (any protocol)
kroute() {
	ip -n "$(node_ns "$1")" -j route show table main "$2" | jq -r '.[] | "\(.protocol // "boot") \(.dev) \(.gateway // "-")"'
}
put() { etcdctl_ put "$SUB/$1" "$2" >/dev/null; }
del() { etcdctl_ del "$SUB/$1" >/dev/null; }
lease_json() { # lease_json NODE PUBLIC-IP MAC
	printf '{"backend":"vxlan","node":"%s","publicIP":"%s","vtepMAC":"%s"}' "$1" "$2" "$3"
}
has_route() { [ -n "$(route_to "$1" "$2")" ]; } # has_route I DST
neigh_is() { [ "$(neigh_on "$1" "$2")" = "$3" ]; } # neigh_is I IP "MAC STATE"
no_weft_route() { # no_weft_route DST I...
	local d=$1 i
	shift
	for i in "$@"; do
		[ -z "$(route_to "$i" "$d")" ] || check_fail "node$i installed a route to $d: $(route_to "$i" "$d")"
	done
}
net_of() { echo "${1%/*}"; } # 10.250.129.0/24 -> 10.250.129.0
step() { [[ " ${HOSTILE_STEPS:-1 2 3 5 4 6 4b} " == *" $1 "* ]]; }
key3="$SUB/$(net_of "$n3")-${n3#*/}"
nodes_up=3

# ---- 1. a lease outside the Network: the underlay's own subnet
if step 1; then
	put 10.250.100.0-24 "$(lease_json fake 10.250.100.50 02:00:00:00:00:50)"
	expect_rejected outside_network 1 2 3
	for i in 1 2 3; do
		assert_eq "$(kroute "$i" 10.250.100.0/24)" "kernel eth0 -" "node$i connected underlay route with the lease stored"
		assert_ping "$(node_ns "$i")" "$ETCD_IP"
	done
	del 10.250.100.0-24
	sleep 1.5
	for i in 1 2 3; do
		assert_eq "$(kroute "$i" 10.250.100.0/24)" "kernel eth0 -" "node$i connected underlay route after the key is deleted"
		assert_ping "$(node_ns "$i")" "$ETCD_IP"
	done

	# ... a lease covering a network connected to node1 only (dummy0, inside the Network)
	put 10.250.200.0-24 "$(lease_json inside 10.250.100.51 02:00:00:00:00:51)"
	expect_rejected connected_network 1
	wait_for 5 has_route 2 10.250.200.0/24 || check_fail "node2 did not install 10.250.200.0/24 (not connected there)"
	assert_eq "$(kroute 1 10.250.200.0/24)" "kernel dummy0 -" "node1's connected dummy0 route"
	del 10.250.200.0-24

	# ... a lease whose route node2 already has from someone else (proto static): left alone
	put 10.250.201.0-24 "$(lease_json static 10.250.100.52 02:00:00:00:00:52)"
	expect_rejected route_conflict 2
	wait_for 5 has_route 1 10.250.201.0/24 || check_fail "node1 did not install 10.250.201.0/24"
	assert_eq "$(kroute 2 10.250.201.0/24)" "static eth0 10.250.100.99" "node2's static route with the lease stored"
	del 10.250.201.0-24
	sleep 1.5
	assert_eq "$(kroute 2 10.250.201.0/24)" "static eth0 10.250.100.99" "node2's static route after the key is deleted"
fi

# ---- 2. overlapping leases: a /25 inside node2's /24 and one inside node1's
if step 2; then
	put "$(net_of "$n2")-25" "$(lease_json intruder 10.250.100.53 02:00:00:00:00:53)"
	put "$(net_of "$n1")-25" "$(lease_json intruder1 10.250.100.54 02:00:00:00:00:54)"
	MIN=2 expect_rejected prefix_length 1 2 3
	no_weft_route "$(net_of "$n2")/25" 1 3
	no_weft_route "$(net_of "$n1")/25" 2 3
	assert_eq "$(neigh_on 1 "$(vtep_ip 2)")" "$mac2 PERMANENT" "node1's neighbour for node2 with the /25 stored"
	assert_eq "$(route_to 1 "$n2")" "$(vtep_ip 2) weft.1 onlink" "node1's route to node2 with the /25 stored"
	# ... a younger lease with node2's VTEP MAC loses to node2's
	put 10.250.250.0-24 "$(lease_json copycat 10.250.100.55 "$mac2")"
	expect_rejected duplicate_vtep_mac 1 3
	assert_eq "$(fdb_on 1 "$mac2")" "$(node_ip 2)" "node1's FDB for node2's MAC (one destination)"
	no_weft_route 10.250.250.0/24 1 2 3
	del "$(net_of "$n2")-25"
	del "$(net_of "$n1")-25"
	del 10.250.250.0-24
fi

# ---- 3. another key claiming node2's name
if step 3; then
	put 10.250.251.0-24 "$(lease_json node2 10.250.100.56 02:00:00:00:00:56)"
	expect_rejected duplicate_node_name 1 3
	no_weft_route 10.250.251.0/24 1 3
	assert_eq "$(route_to 1 "$n2")" "$(vtep_ip 2) weft.1 onlink" "node1's route to node2 with the impostor stored"
	del 10.250.251.0-24
	sleep 2.5 # a resync and a re-list
	for i in 1 3; do
		assert_eq "$(route_to "$i" "$n2")" "$(vtep_ip 2) weft.1 onlink" "node$i's route to node2 after the impostor's key is deleted"
	done
fi

# ---- 5. the rest of a lease; names longer than 63 characters
if step 5; then
	put 10.250.252.0-24 "$(lease_json loop 127.0.0.1 02:00:00:00:00:57)"
	put 10.250.253.0-24 "$(lease_json mcast 10.250.100.58 01:00:5e:00:00:01)"
	put 10.250.254.0-24 "$(lease_json Bad_Name 10.250.100.59 02:00:00:00:00:59)"
	put 10.250.255.0-24 "$(lease_json ownip "$(node_ip 1)" 02:00:00:00:00:5a)"
	expect_rejected public_ip 1 2 3
	expect_rejected vtep_mac 1 2 3
	expect_rejected node_name 1 2 3
	no_weft_route 10.250.252.0/24 1 2 3
	no_weft_route 10.250.253.0/24 1 2 3
	no_weft_route 10.250.254.0/24 1 2 3
	no_weft_route 10.250.255.0/24 1
	long_a="$(printf 'l%.0s' {1..70})-a" long_b="$(printf 'l%.0s' {1..70})-b" # equal in their first 63
	put 10.250.240.0-24 "$(lease_json "$long_a" 10.250.100.61 02:00:00:00:00:61)"
	put 10.250.241.0-24 "$(lease_json "$long_b" 10.250.100.62 02:00:00:00:00:62)"
	both_long() { [ -n "$(route_to 1 10.250.240.0/24)" ] && [ -n "$(route_to 1 10.250.241.0/24)" ]; }
	wait_for 5 both_long || check_fail "two nodes whose names agree in 63 characters are not both installed: $(routes_weft 1 | tr '\n' ';')"
	# ... and our own name: refused with exit 2 (config error) before anything is programmed
	for bad in Bad_Name "$(printf 'n%.0s' {1..254})"; do
		rc=0
		_weftd_argv 4 --node-name "$bad" --iface eth0 --etcd-endpoints "$ETCD_URL" --listen 127.0.0.1:9876
		out=$(timeout 10 "${WEFTD_ARGV[@]}" 2>&1) || rc=$?
		assert_eq "$rc" 2 "weftd --node-name of ${#bad} characters ($(cut -c1-20 <<<"$bad")...): exit code"
		grep -q "Invalid node name" <<<"$out" || check_fail "weftd --node-name $bad: no clear message: $out"
	done
	ip -n "$(node_ns 4)" link show weft.1 >/dev/null 2>&1 && check_fail "weftd with a bad node name created the VTEP"
	for k in 10.250.252.0-24 10.250.253.0-24 10.250.254.0-24 10.250.255.0-24 10.250.240.0-24 10.250.241.0-24; do del "$k"; done
	sleep 1.5
	assert_eq "$(snapshot 1)" "$before1" "node1's kernel state after all hostile leases are gone"
	assert_eq "$(snapshot 2)" "$before2" "node2's kernel state after all hostile leases are gone"
	assert_eq "$(snapshot 3)" "$before3" "node3's kernel state after all hostile leases are gone"
fi

# ---- 4. node3's own key deleted under it
if step 4; then
	etcdctl_ del "$key3" >/dev/null
	back3() { # (jq -e succeeds on empty input: look at the value first)
		local v
		v=$(etcdctl_ get "$key3" --print-value-only)
		[ -n "$v" ] && jq -e --arg n "$LONG3" '.node == $n' <<<"$v" >/dev/null
	}
	wait_for 3 back3 || check_fail "node3 did not put its deleted key $key3 back"
	http_get 3 /healthz
	assert_eq "$HTTP_CODE" 200 "node3 /healthz after its key was put back"
	http_get 3 /metrics
	grep -q '^weft_lease_recreated_total [1-9]' <<<"$HTTP_BODY" || check_fail "weft_lease_recreated_total not counted on node3"
	grep -q "had vanished from the datastore" "$(node_dir 3)/weftd.log" || check_fail "node3 did not log that its key vanished"
	weftd_start 4
	weftd_wait_ready 4
	nodes_up=4
	assert_ne "$(node_subnet 4)" "$n3" "node4's subnet (node3 still holds $n3)"
	n4=$(node_subnet 4)
	wait_for 5 has_route 1 "$n4" || check_fail "node1 did not program node4"
fi

# ---- 6. etcd wiped: node1 keeps node2 and node3 without a gap
if step 6; then
	gapfile=$T/gaps
	sampler() { # records every moment node1 lacks a route to node2 or node3
		local end=$(($(date +%s) + $1)) r
		while (($(date +%s) < end)); do
			r=$(ip -n "$(node_ns 1)" route show proto 252)
			[[ $r == *"$n2 "* && $r == *"$n3 "* ]] || echo "$(date +%s.%N) $(tr '\n' ';' <<<"$r")" >>"$gapfile"
			sleep 0.01
		done
	}
	: >"$gapfile"
	sampler 16 &
	sampler_pid=$!
	sleep 0.5
	cluster_etcd_stop
	rm -rf "$T/etcd/data"
	cluster_etcd_start
	etcdctl_ put "$ETCD_PREFIX/config" "$(cluster_config_json)" >/dev/null
	all_keys() { [ "$(etcdctl_ get --prefix "$SUB/" --keys-only | grep -c .)" = "$nodes_up" ]; }
	wait_for 12 all_keys || check_fail "the nodes did not put their keys back after the wipe: $(etcdctl_ get --prefix "$SUB/" --keys-only | tr '\n' ' ')"
	wait "$sampler_pid" || true
	if [ -s "$gapfile" ]; then
		check_fail "node1 lost routes to node2/node3 after the etcd wipe ($(wc -l <"$gapfile") samples), first: $(head -1 "$gapfile")"
	fi
	assert_eq "$(node_subnet 3)" "$n3" "node3 kept its subnet across the wipe"
	for ((i = 1; i <= nodes_up; i++)); do http_get "$i" /healthz; assert_eq "$HTTP_CODE" 200 "node$i /healthz after the wipe"; done
fi

# ---- 4. node3's key taken over by another node
if step 4b; then
	etcdctl_ put "$key3" "$(lease_json thief 10.250.100.70 02:00:00:00:00:70)" >/dev/null
	unhealthy3() { http_get 3 /healthz; [ "$HTTP_CODE" = 503 ]; }
	wait_for 5 unhealthy3 || check_fail "node3 /healthz is $HTTP_CODE after another node took its subnet"
	http_get 3 /metrics
	grep -q '^weft_lease_lost 1$' <<<"$HTTP_BODY" || check_fail "weft_lease_lost not 1 on node3"
	grep -q "LEASE LOST" "$(node_dir 3)/weftd.log" || check_fail "node3 did not say that its lease is lost"
	weftd_alive 3 || check_fail "node3's weftd exited (it must stay, keeping what is programmed)"
	[ -n "$(route_to 3 "$n2")" ] || check_fail "node3 dropped its routes after losing its lease"
fi

for i in 1 2 3 4; do weftd_stop "$i"; done
finish
