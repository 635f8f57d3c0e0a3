#!/usr/bin/env bash
# bridge plugin: every bad input gets the right error code, a message naming the key/value, and
# leaves nothing behind (no link in the host or pod namespace, no reservation, no nft element).
#
#   pod (eth0?) ──veth?── br0 (namespace "host")      pod0 holds the only address of a 1-IP range
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip nft jq
require_plugins bridge host-local

HOSTNS=$(mk_netns host)
POD=$(mk_netns pod)
STORE=$T/store
# shellcheck disable=SC2034 # the CNI_PATH of lib.sh's hcni
IPAM_PATH=$WEFT_BIN

nft_elems() { ip netns exec "$HOSTNS" nft -j list ruleset | jq '[.nftables[] | select(.set?.name? | tostring | startswith("br-")) | .set.elem[]?] | length'; }

# Baseline for "nothing left behind" (pod0 below holds one attachment on purpose).
BASE_VETH=0 BASE_RES=0 BASE_NFT=0
assert_clean() {
	local what=$1
	assert_eq "$(veths_in "$HOSTNS")" "$BASE_VETH" "$what: host veths"
	assert_eq "$(links_in "$POD")" "${POD_LINKS:-lo }" "$what: pod links"
	assert_eq "$(reservations_in "$STORE")" "$BASE_RES" "$what: IPAM reservations"
	assert_eq "$(nft_elems)" "$BASE_NFT" "$what: nft elements"
}

# A good config that we break one key at a time. macspoofchk+ipMasq make every rollback path
# carry nft state.
GOOD=$(jq -c -n --arg store "$STORE" '{"cniVersion":"1.0.0","name":"errs","type":"bridge","bridge":"br0",
	"isGateway":true,"ipMasq":true,"macspoofchk":true,
	"ipam":{"type":"host-local","dataDir":$store,"ranges":[[{"subnet":"10.40.0.0/24"}]]}}')
bad() { jq -c "$1" <<<"$GOOD"; }
P=$(nspath "$POD")

info "config errors → code 7 naming key and value"
hcni_expect 6 "" "malformed JSON" bridge ADD c1 "$P" eth0 '{"cniVersion":"1.0.0","name":"errs","type":"bridge",'
hcni_expect 7 '"mtu": 10' "mtu too small" bridge ADD c1 "$P" eth0 "$(bad '.mtu = 10')"
hcni_expect 7 '"mtu": "1500"' "mtu as a string" bridge ADD c1 "$P" eth0 "$(bad '.mtu = "1500"')"
hcni_expect 7 "5000" "vlan out of range" bridge ADD c1 "$P" eth0 "$(bad '.vlan = 5000')"
hcni_expect 7 "-1" "negative vlan" bridge ADD c1 "$P" eth0 "$(bad '.vlan = -1')"
hcni_expect 7 "minID 0" "trunk minID 0" bridge ADD c1 "$P" eth0 "$(bad '.vlanTrunk = [{"minID":0,"maxID":5}]')"
hcni_expect 7 "maxID 4095" "trunk maxID 4095" bridge ADD c1 "$P" eth0 "$(bad '.vlanTrunk = [{"minID":1,"maxID":4095}]')"
hcni_expect 7 "20 > 10" "trunk minID > maxID" bridge ADD c1 "$P" eth0 "$(bad '.vlanTrunk = [{"minID":20,"maxID":10}]')"
hcni_expect 7 "minID is missing" "trunk maxID alone" bridge ADD c1 "$P" eth0 "$(bad '.vlanTrunk = [{"maxID":10}]')"
hcni_expect 7 "id 4095" "trunk id 4095" bridge ADD c1 "$P" eth0 "$(bad '.vlanTrunk = [{"id":4095}]')"
hcni_expect 7 "vlanTrunk[0].id" "trunk id as string" bridge ADD c1 "$P" eth0 "$(bad '.vlanTrunk = [{"id":"5"}]')"
hcni_expect 7 "vlanTrunk" "vlan and vlanTrunk" bridge ADD c1 "$P" eth0 "$(bad '.vlan = 3 | .vlanTrunk = [{"id":5}]')"
hcni_expect 7 "hairpinMode" "hairpin + promisc" bridge ADD c1 "$P" eth0 "$(bad '.hairpinMode = true | .promiscMode = true')"
hcni_expect 7 '"isGateway": "yes"' "bool as string" bridge ADD c1 "$P" eth0 "$(bad '.isGateway = "yes"')"
hcni_expect 7 'a/b' "bridge name with /" bridge ADD c1 "$P" eth0 "$(bad '.bridge = "a/b"')"
hcni_expect 7 "disableContainerInterface" "disableContainerInterface with IPAM" bridge ADD c1 "$P" eth0 "$(bad '.disableContainerInterface = true')"
hcni_expect 7 "zz:11" "bad runtimeConfig.mac" bridge ADD c1 "$P" eth0 "$(bad '.runtimeConfig = {"mac":"zz:11:22:33:44:55"}')"

info "environment errors → code 4"
hcni_expect 4 "CNI_NETNS" "missing netns" bridge ADD c1 - eth0 "$GOOD"
hcni_expect 4 "/run/netns/nonexistent-$$" "netns path that does not exist" bridge ADD c1 "/run/netns/nonexistent-$$" eth0 "$GOOD"
hcni_expect 4 "garbage" "malformed CNI_ARGS" bridge ADD c1 "$P" eth0 "$GOOD" "garbage"
hcni_expect 4 "xx:yy" "bad MAC in CNI_ARGS" bridge ADD c1 "$P" eth0 "$GOOD" "IgnoreUnknown=1;MAC=xx:yy"
hcni_expect 4 "../../etc" "container ID with path tricks" bridge ADD "../../etc" "$P" eth0 "$GOOD"
hcni_expect 4 "CNI_IFNAME" "ifname with a slash" bridge ADD c1 "$P" "eth/0" "$GOOD"

info "runtime failures roll back everything"
hcni_expect 999 "nope-ipam" "IPAM type not found" bridge ADD c1 "$P" eth0 "$(bad '.ipam.type = "nope-ipam"')"

# (veth pairs stand in for "some other link": this kernel may have no dummy module)
ip -n "$HOSTNS" link add br9 type veth peer name br9p
BASE_VETH=2 hcni_expect 999 "br9 already exists but is not a bridge" "bridge name taken by a veth" bridge ADD c1 "$P" eth0 "$(bad '.bridge = "br9"')"
ip -n "$HOSTNS" link del br9

ip -n "$POD" link add eth0 type veth peer name eth0p
POD_LINKS="eth0 eth0p lo " hcni_expect 999 "eth0" "ifname already exists in the pod" bridge ADD c1 "$P" eth0 "$GOOD"
ip -n "$POD" link del eth0

info "IPAM exhausted: a 1-address range already taken"
ONE=$(bad '.ipam.ranges = [[{"subnet":"10.41.0.0/24","rangeStart":"10.41.0.10","rangeEnd":"10.41.0.10"}]] | .name = "one" | .bridge = "br1"')
POD0=$(mk_netns pod0)
hcni bridge ADD c0 "$(nspath "$POD0")" eth0 "$ONE"
[ "$CNI_RC" = 0 ] || fail "first ADD on the 1-IP range failed: $CNI_OUT"
BASE_VETH=1 BASE_RES=1 BASE_NFT=$(nft_elems)
[ "$BASE_NFT" -gt 0 ] || check_fail "first ADD installed no nft elements"
hcni_expect 999 "10.41.0.10" "IPAM exhausted" bridge ADD c1 "$P" eth0 "$ONE"
if [ ! -e "$STORE/one/10.41.0.10" ] || [ "$(head -n1 "$STORE/one/10.41.0.10" | tr -d "\r")" != c0 ]; then
	check_fail "the exhausted ADD's rollback released pod0's address"
fi

info "failure after IPAM (gateway conflict on the bridge) releases the address and the veth"
ip -n "$HOSTNS" link add br2 type bridge
ip -n "$HOSTNS" addr add 192.168.77.1/24 dev br2
hcni_expect 999 "already has an IP address different from" "gateway conflict" bridge ADD c1 "$P" eth0 "$(bad '.bridge = "br2"')"

info "DEL of something that never existed succeeds"
hcni bridge DEL never "$P" eth0 "$GOOD"
[ "$CNI_RC" = 0 ] || check_fail "DEL of unknown attachment failed: $CNI_OUT"
hcni bridge DEL never "/run/netns/nonexistent-$$" eth0 "$GOOD"
[ "$CNI_RC" = 0 ] || check_fail "DEL with a vanished netns failed: $CNI_OUT"
hcni_expect 7 "prevResult" "CHECK without prevResult" bridge CHECK c0 "$(nspath "$POD0")" eth0 "$ONE"


finish
