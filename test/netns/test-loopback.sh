#!/usr/bin/env bash
# loopback plugin: ADD -> CHECK -> DEL -> DEL -> GC/STATUS in a throwaway namespace, and our ADD
# output compared with the reference loopback's for cniVersion 1.0.0 and 0.4.0.
#
#   [ w-lo-PID ]  lo (down at start)     [ w-loref-PID ]  lo, for the reference plugin
#
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq ping

conf() { printf '{"cniVersion":"%s","name":"lo-net","type":"loopback"}' "$1"; }

# fresh_ns VAR NAME: a new namespace whose lo is down (mk_netns brings it up), name in $VAR.
# mk_netns must run in this shell, not in $(...): it registers the namespace for cleanup.
fresh_ns() { mk_netns "$2" >/dev/null; printf -v "$1" '%s' "w-$2-$$"; ip -n "w-$2-$$" link set lo down; }
lo_up() { ip -n "$1" -j link show lo | jq -r '.[0].flags | index("UP") != null'; }

fresh_ns NS lo
[ "$(lo_up "$NS")" = false ] || fail "lo is up before ADD"
assert_no_ping "$NS" 127.0.0.1

# ADD
cni_ok loopback ADD ctr1 "$NS" eth0 "$(conf 1.0.0)"
assert_eq "$(lo_up "$NS")" true "lo up after ADD"
assert_ping "$NS" 127.0.0.1
assert_ping "$NS" ::1
assert_eq "$(jqr '.cniVersion')" 1.0.0 "result version"
assert_eq "$(jqr '.interfaces[0].name')" lo "interface name"
assert_eq "$(jqr '.interfaces[0].sandbox')" "$(nspath "$NS")" "sandbox"
assert_eq "$(jqr '[.ips[].address] | join(",")')" "127.0.0.1/8,::1/128" "addresses"
assert_eq "$(jqr '[.ips[].interface] | join(",")')" "0,0" "ips[].interface"
[ -z "$CNI_ERR" ] || check_fail "ADD wrote to stderr: $CNI_ERR"

# CHECK (0.4.0+), and CHECK notices lo going down
cni_ok loopback CHECK ctr1 "$NS" eth0 "$(conf 1.0.0)"
assert_eq "$CNI_OUT" "" "CHECK prints nothing"
ip -n "$NS" link set lo down
cni_err 999 loopback CHECK ctr1 "$NS" eth0 "$(conf 1.0.0)"
assert_ne "$(jqr '.msg' | grep -c down)" 0 "CHECK message says lo is down"
ip -n "$NS" link set lo up

# DEL sets lo down; DEL again is fine; DEL without/with a vanished netns is fine
cni_ok loopback DEL ctr1 "$NS" eth0 "$(conf 1.0.0)"
assert_eq "$CNI_OUT" "" "DEL prints nothing"
assert_eq "$(lo_up "$NS")" false "lo down after DEL"
cni_ok loopback DEL ctr1 "$NS" eth0 "$(conf 1.0.0)"
cni_ok loopback DEL ctr1 "" eth0 "$(conf 1.0.0)"
cni_ok loopback DEL ctr1 /run/netns/w-gone-$$ eth0 "$(conf 1.0.0)"

# GC and STATUS (1.1.0)
cni_ok loopback GC "" "" "" '{"cniVersion":"1.1.0","name":"lo-net","type":"loopback","cni.dev/valid-attachments":[]}'
cni_ok loopback STATUS "" "" "" "$(conf 1.1.0)"

# Every version: ADD works and prints that version's shape.
for v in 0.1.0 0.2.0 0.3.0 0.3.1 0.4.0 1.0.0 1.1.0; do
	fresh_ns ns "lov${v//./}"
	cni_ok loopback ADD "c$v" "$ns" lo "$(conf "$v")"
	assert_eq "$(jqr '.cniVersion')" "$v" "ADD $v version"
	case $v in
	0.1.0 | 0.2.0) assert_eq "$(jqr '.ip4.ip + " " + .ip6.ip')" "127.0.0.1/8 ::1/128" "ADD $v ip4/ip6" ;;
	0.3.*|0.4.0) assert_eq "$(jqr '[.ips[].version] | join(",")')" "4,6" "ADD $v ips[].version" ;;
	*) assert_eq "$(jqr '[.ips[] | has("version")] | any')" false "ADD $v has no ips[].version" ;;
	esac
	assert_eq "$(lo_up "$ns")" true "lo up after ADD $v"
done

# Against the reference plugin, same namespace path shape: sandbox differs only by name.
fresh_ns REFNS loref
fresh_ns OURNS loours
for v in 1.0.0 0.4.0; do
	REF=1 cni_ok loopback ADD cref "$REFNS" lo "$(conf "$v")"
	ref=$(jq -S --arg p "$(nspath "$REFNS")" 'walk(if . == $p then "SANDBOX" else . end)' <<<"$CNI_OUT")
	cni_ok loopback ADD cours "$OURNS" lo "$(conf "$v")"
	ours=$(jq -S --arg p "$(nspath "$OURNS")" 'walk(if . == $p then "SANDBOX" else . end)' <<<"$CNI_OUT")
	if [ "$v" = 0.4.0 ]; then
		# The reference prints its 1.0.0-shaped result relabelled, without the "version" that
		# SPEC 0.4.0 requires in ips[] (current.Result.GetAsVersion returns early when the
		# versions already match). We print the spec's shape; compare the rest.
		assert_eq "$(jq -c '[.ips[].version]' <<<"$ours")" '["4","6"]' "0.4.0 ips[].version"
		ours=$(jq -S 'del(.ips[].version)' <<<"$ours")
	fi
	assert_eq "$ours" "$ref" "ADD $v output equals the reference's"
	REF=1 cni_ok loopback DEL cref "$REFNS" lo "$(conf "$v")"
	cni_ok loopback DEL cours "$OURNS" lo "$(conf "$v")"
	assert_eq "$(lo_up "$OURNS")" "$(lo_up "$REFNS")" "lo state after DEL matches the reference"
done

# VERSION
cni_ok loopback VERSION "" "" "" '{"cniVersion":"0.4.0"}'
assert_eq "$(jqr '.cniVersion')" 0.4.0 "VERSION echoes the request's version"
assert_eq "$(jqr '.supportedVersions | join(",")')" "0.1.0,0.2.0,0.3.0,0.3.1,0.4.0,1.0.0,1.1.0" "supportedVersions"

finish
