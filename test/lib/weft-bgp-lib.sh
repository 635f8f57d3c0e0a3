# shellcheck shell=bash
# shellcheck disable=SC2034 # BIRD_PID is read by the tests that source this file
# BIRD on the nodes and FRR on a router, for the bgp tests. Source after weft-cluster-lib.sh.
#
#   bird_start I        BIRD in node I's namespace on weftd's bird.conf and control socket
#   bird_kill I         kill -9 and reap it; bird_stop_all (for on_exit) every one started
#   birdc_ I CMD...     birdc on node I's control socket
#   frr_dir DIR         DIR for FRR's files (FRR drops to user frr), with an empty zebra.conf
#   frr_start NS DIR    zebra and bgpd in NS on DIR/bgpd.conf (the caller writes it), stopped on exit
#   rt_two_segments A B  a second underlay bridge br1 and a router namespace $RT_NS, forwarding
#                        between br0 (its eth0, address A/24) and br1 (its eth1, address B/24)
#   ext_host IP GW [IP6 GW6]  a host $EXT_NS on br1 (IP/24, IP6/64) routed through GW (GW6)
#   frr_lb_conf DIR ROUTER-ID N [ipv6]  DIR/bgpd.conf for the LoadBalancer tests: AS 65000 peering
#                        with nodes 1..N (AS 64600), ECMP, no graceful restart, hold time 3 s;
#                        with ipv6, IPv6 unicast activated on those IPv4 sessions too

declare -a BIRD_PID=()
bird_start() {
	local d
	d=$(node_dir "$1")
	ip netns exec "$(node_ns "$1")" bird -f -c "$d/run/bird.conf" -s "$d/run/bird.ctl" -P "$d/run/bird.pid" \
		>>"$d/bird.log" 2>&1 &
	BIRD_PID[$1]=$!
	wait_for 30 test -S "$d/run/bird.ctl" || fail "BIRD on node$1 did not come up: $(tail -3 "$d/bird.log")"
}
bird_kill() { kill -KILL "${BIRD_PID[$1]}" 2>/dev/null; wait "${BIRD_PID[$1]}" 2>/dev/null || true; BIRD_PID[$1]=; }
bird_stop_all() { local i; for i in "${!BIRD_PID[@]}"; do [ -n "${BIRD_PID[$i]}" ] && kill -KILL "${BIRD_PID[$i]}" 2>/dev/null; done; return 0; }
birdc_() { birdc -s "$(node_dir "$1")/run/bird.ctl" "${@:2}"; }

frr_dir() {
	mkdir -p "$1"
	# FRR drops to its own user (frr, in group frrvty): let it into the test's directory
	chmod o+x "$T"
	chown frr:frr "$1"
	: >"$1/zebra.conf"
}
frr_start() {
	local ns=$1 f=$2
	ip netns exec "$ns" /usr/lib/frr/zebra -d -u frr -g frr -f "$f/zebra.conf" -i "$f/zebra.pid" -z "$f/zserv.api" --vty_socket "$f" >"$f/zebra.out" 2>&1 ||
		fail "zebra did not start: $(cat "$f/zebra.out")"
	on_exit "kill \$(cat $f/zebra.pid 2>/dev/null) 2>/dev/null"
	wait_for 5 test -S "$f/zserv.api" || fail "zebra socket missing"
	ip netns exec "$ns" /usr/lib/frr/bgpd -d -u frr -g frr -f "$f/bgpd.conf" -i "$f/bgpd.pid" -z "$f/zserv.api" --vty_socket "$f" >"$f/bgpd.out" 2>&1 ||
		fail "bgpd did not start: $(cat "$f/bgpd.out")"
	on_exit "kill \$(cat $f/bgpd.pid 2>/dev/null) 2>/dev/null"
}

rt_two_segments() {
	ip -n "$UL_NS" link add br1 type bridge
	ip -n "$UL_NS" link set br1 up
	RT_NS=$(mk_netns rt)
	_rt_attach br0 eth0 "$1"
	_rt_attach br1 eth1 "$2"
	ip netns exec "$RT_NS" sysctl -qw net.ipv4.ip_forward=1
}
_rt_attach() { # _rt_attach BRIDGE IFNAME ADDR
	ip link add "ul-rt-$2" netns "$UL_NS" type veth peer name "$2" netns "$RT_NS"
	ip -n "$UL_NS" link set "ul-rt-$2" master "$1" up
	ip -n "$RT_NS" addr add "$3/24" dev "$2"
	ip -n "$RT_NS" link set "$2" up
}

ext_host() {
	EXT_NS=$(mk_netns ext)
	ip link add ul-ext netns "$UL_NS" type veth peer name eth0 netns "$EXT_NS"
	ip -n "$UL_NS" link set ul-ext master br1 up
	ip -n "$EXT_NS" addr add "$1/24" dev eth0
	[ -n "${3:-}" ] && ip -n "$EXT_NS" addr add "$3/64" dev eth0 nodad
	ip -n "$EXT_NS" link set eth0 up
	ip -n "$EXT_NS" route add default via "$2"
	[ -n "${4:-}" ] && ip -n "$EXT_NS" -6 route add default via "$4"
	return 0
}

# Multipath over the nodes (same AS path); no graceful restart, so a node whose session ends is
# dropped rather than kept as stale for 120 s; hold time 3 s (BIRD agrees to the lower one): a dead
# node is noticed within it (BFD would make it sub-second).
frr_lb_conf() {
	local i af
	{
		echo "frr defaults traditional"
		echo "hostname rt"
		echo "log file $1/bgpd.log"
		echo "router bgp 65000"
		echo " bgp router-id $2"
		echo " no bgp ebgp-requires-policy"
		echo " bgp graceful-restart-disable"
		echo " timers bgp 1 3"
		for i in $(seq "$3"); do
			echo " neighbor $(node_ip "$i") remote-as 64600"
			echo " neighbor $(node_ip "$i") timers connect 5"
		done
		for af in ipv4 ${4:-}; do
			echo " address-family $af unicast"
			if [ "$af" = ipv6 ]; then for i in $(seq "$3"); do echo "  neighbor $(node_ip "$i") activate"; done; fi
			echo "  maximum-paths 8"
			echo " exit-address-family"
		done
	} >"$1/bgpd.conf"
}
