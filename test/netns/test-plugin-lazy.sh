#!/usr/bin/env bash
# Start-up work a command does not need stays undone: a DEL with nothing to remove sets up no
# nftables context (no libnftables, none of the files nft_ctx_new() reads), only the raw netlink
# dump that answers "anything of this attachment?" (nft-raw.h).
#
#   node "host" (plugins run here) ── pod1 (bridge, ipMasq + macspoofchk)
#
# Traced with strace: nft_ctx_new() opens /etc/iproute2/* (and a dynamic suite first opens
# libnftables.so.1). The positive control - the DEL right after an ADD, which has elements to
# remove - must show it, so the marker is known to work.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd strace jq
require_plugins bridge portmap host-local

HOSTNS=$(mk_netns host)
POD=$(mk_netns pod1)
IPAM_PATH=$WEFT_BIN
CONF=$(jq -nc --arg store "$T/store" '{cniVersion: "1.0.0", name: "lazy", type: "bridge", bridge: "br0", ipMasq: true,
  macspoofchk: true, ipam: {type: "host-local", dataDir: $store, ranges: [[{subnet: "10.21.0.0/24"}]]}}')
PM='{"cniVersion":"1.0.0","name":"lazy","type":"portmap","capabilities":{"portMappings":true}}'

# traced PLUGIN CMD CID NETNS CONF: hcni under strace; NFT_CTX=1 if it set up an nftables context
traced() {
	local plugin=$1
	shift
	# LeakSanitizer cannot run under ptrace (the sanitizer pass): leaks are checked by every other
	# test that runs these plugins, so here only the trace matters
	cat >"$T/wrap" <<WRAP
#!/bin/sh
ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0" exec strace -f -qq -e trace=openat -o "$T/trace" "$WEFT_BIN/$plugin"
WRAP
	chmod +x "$T/wrap"
	: >"$T/trace"
	_cni_run "$HOSTNS" "$T" "$WEFT_BIN" wrap "$@"
	[ "$CNI_RC" = 0 ] || fail "$plugin $1 exited $CNI_RC: $CNI_OUT $CNI_ERR"
	NFT_CTX=0
	if grep -qE 'libnftables\.so|/etc/iproute2/' "$T/trace"; then NFT_CTX=1; fi
}

info "DEL of a pod that was never added: no nftables context"
traced bridge DEL never "$POD" eth0 "$CONF"
assert_eq "$NFT_CTX" 0 "bridge DEL with nothing to remove set up nftables: $(grep -E 'libnftables|iproute2' "$T/trace" | head -3)"
traced portmap DEL never "$POD" eth0 "$PM"
assert_eq "$NFT_CTX" 0 "portmap DEL without mappings set up nftables"

info "ADD, then DEL (elements to remove: the context is needed, and the marker shows it)"
hcni_ok bridge ADD c1 "$POD" eth0 "$CONF"
traced bridge DEL c1 "$POD" eth0 "$CONF"
assert_eq "$NFT_CTX" 1 "bridge DEL after ADD (positive control) shows no nftables context: the marker is broken"
info "DEL again: nothing left, no context"
traced bridge DEL c1 "$POD" eth0 "$CONF"
assert_eq "$NFT_CTX" 0 "second bridge DEL set up nftables"
assert_eq "$(ip netns exec "$HOSTNS" nft -j list ruleset | jq '[.nftables[] | .set?.elem? // [] | length] | add // 0')" 0 \
	"no set elements left"
finish
