#!/usr/bin/env bash
# `weft cni` (the runtime-side tool, libcni + cnitool in C) against a recording test plugin
# (test/data/tool/weft-test-recorder: logs every call and the config it got) and real plugins.
#
#   weft cni add|check|del|gc|status NET NETNS
#        |  NETCONFPATH=$T/net.d  CNI_CACHE_DIR=$T/cache  RECORD_DIR=$T/rec
#        v
#   recorder / loopback / host-local  ----->  netns w-tool-PID (only lo, nothing leaves it)
#
# Covers: conflist loading order, .conf/.json fallback, broken files; capability injection;
# prevResult chaining and version conversion; rollback of a failed ADD; the cache file (libcni
# format) and its removal; CHECK from the cache; DEL twice; GC (stale DELs with the cached config,
# GC with the valid list); STATUS; VERSION; a real loopback + host-local chain.
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd jq ip base64 sha512sum

WEFT=$WEFT_BUILD/tool/weft
require_built "$WEFT"
# Real plugins: ours (the reference ones are for test/interop/test-tool-cnitool.sh).
require_plugins loopback host-local
PLUGBIN=$WEFT_BIN

CONF=$T/net.d
CACHE=$T/cache
REC=$T/rec
mkdir -p "$CONF" "$REC"
export RECORD_DIR=$REC NETCONFPATH=$CONF CNI_CACHE_DIR=$CACHE
export CNI_PATH="$TOP/test/data/tool:$PLUGBIN"
unset CNI_ARGS CAP_ARGS CNI_IFNAME CNI_CONTAINERID
NS=$(mk_netns tool)
# mk_netns runs in the $(...) subshell, so its own cleanup registration is lost: register here.
on_exit "ip netns del $NS"
NSP=$(nspath "$NS")
# cnitool's container ID: "cnitool-" + first 10 bytes of sha512(netns path), hex
CID="cnitool-$(printf '%s' "$NSP" | sha512sum | cut -c1-20)"
REC_T=weft-test-recorder

# wcni ARGS...: run weft cni; sets OUT, ERR, RC
wcni() {
	set +e
	OUT=$("$WEFT" cni "$@" 2>"$T/.err")
	RC=$?
	set -e
	ERR=$(cat "$T/.err")
}
wcni_ok() { wcni "$@"; [ "$RC" = 0 ] || check_fail "weft cni $*: rc=$RC out=$OUT err=$ERR"; }
wcni_err() { # CODE ARGS...
	local code=$1; shift
	wcni "$@"
	[ "$RC" != 0 ] || { check_fail "weft cni $*: expected failure, got success: $OUT"; return 0; }
	assert_eq "$(jq -r .code <<<"$OUT" 2>/dev/null || echo not-json)" "$code" "weft cni $*: error code ($OUT)"
}
# calls: "CMD name,CMD name,..." of the recorder since the last reset
calls() { [ -f "$REC/log" ] && awk '{printf "%s%s %s", (NR>1?",":""), $1, $2}' "$REC/log"; true; }
reset_rec() { rm -f "$REC"/*; }
# got CMD NAME: the config the recorder last received for CMD from plugin NAME
got() {
	local f
	f=$(find "$REC" -maxdepth 1 -name "*-$1-$2.json" -printf '%f\n' | sort -n | tail -1)
	if [ -n "$f" ]; then cat "$REC/$f"; else echo '{}'; fi
}
cachefile() { echo "$CACHE/results/$1-$2-${3:-eth0}"; }
rec() { # rec NAME [EXTRA-JSON-MEMBERS]
	echo "{\"type\":\"$REC_T\",\"recName\":\"$1\"${2:+,$2}}"
}

# ---------------------------------------------------------------- loading
info "loading order, fallback, broken files"
echo '{not json' >"$CONF/00-broken.conflist"
cat >"$CONF/05-dup.conf" <<EOF
{"cniVersion":"1.0.0","name":"dup","type":"$REC_T","recName":"fromconf"}
EOF
cat >"$CONF/10-dup.conflist" <<EOF
{"cniVersion":"1.0.0","name":"dup","plugins":[$(rec from10)]}
EOF
cat >"$CONF/20-dup.conflist" <<EOF
{"cniVersion":"1.0.0","name":"dup","plugins":[$(rec from20)]}
EOF
mkdir "$CONF/dir.conflist"
cat >"$CONF/single.conf" <<EOF
{"cniVersion":"0.4.0","name":"single","type":"$REC_T","recName":"single"}
EOF
cat >"$CONF/other.json" <<EOF
{"cniVersion":"1.0.0","name":"jsonnet","type":"$REC_T","recName":"json"}
EOF
cat >"$CONF/30-badnamed.conflist" <<EOF
{"cniVersion":"1.0.0","name":"badnet","plugins":[]}
EOF
cat >"$CONF/31-badver.conflist" <<EOF
{"cniVersion":"9.9.9","name":"badver","plugins":[$(rec x)]}
EOF
cat >"$CONF/32-notype.conflist" <<EOF
{"cniVersion":"1.0.0","name":"notype","plugins":[{"recName":"x"}]}
EOF

wcni_ok add dup "$NSP"
assert_eq "$(calls)" "ADD from10" "conflists in sorted order, before .conf, broken file skipped"
wcni_ok del dup "$NSP"
reset_rec
wcni_ok add single "$NSP"
assert_eq "$(calls)" "ADD single" ".conf fallback"
assert_eq "$(got ADD single | jq -c '[.name, .cniVersion, .type]')" "[\"single\",\"0.4.0\",\"$REC_T\"]" ".conf injected name/version"
assert_eq "$(jq -r .config "$(cachefile single "$CID")" | base64 -d | jq -c '[.name, .cniVersion, (.plugins|length), .plugins[0].recName]')" \
	'["single","0.4.0",1,"single"]' "cached config of a .conf is the wrapped list"
wcni_ok del single "$NSP"
reset_rec
wcni_ok add jsonnet "$NSP"
assert_eq "$(calls)" "ADD json" ".json fallback"
wcni_ok del jsonnet "$NSP"

wcni_err 7 add nosuchnet "$NSP"
grep -q "00-broken.conflist" <<<"$OUT" || check_fail "not-found error does not report the broken file: $OUT"
wcni_err 7 add badnet "$NSP"
grep -q "no plugins" <<<"$OUT" || check_fail "invalid file for the network not reported: $OUT"
wcni_err 1 add badver "$NSP"
wcni_err 7 add notype "$NSP"
grep -q "type" <<<"$OUT" || check_fail "missing type not named: $OUT"
wcni_err 7 add nosuchnet "$NSP" --conf-dir "$T/empty"
grep -q "no net configurations found" <<<"$OUT" || check_fail "empty dir message: $OUT"
rm -rf "${CONF:?}"/* && mkdir -p "$CONF"
reset_rec

# ---------------------------------------------------------------- injection
info "capability injection"
cat >"$CONF/caps.conflist" <<EOF
{"cniVersion":"1.0.0","name":"caps","plugins":[
 $(rec capA '"capabilities":{"portMappings":true,"mac":false,"bandwidth":true}'),
 $(rec capB '"runtimeConfig":{"keep":1}'),
 $(rec capC '"capabilities":{"ips":true},"runtimeConfig":{"dropped":1}')]}
EOF
PM='[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":5353,"containerPort":53,"protocol":"udp","hostIP":"127.0.0.1"}]'
export CAP_ARGS="{\"portMappings\":$PM,\"mac\":\"0a:58:0a:00:00:09\",\"bandwidth\":{\"ingressRate\":1000},\"ips\":[\"10.1.2.3/24\"],\"unknown\":1}"
wcni_ok add caps "$NSP"
unset CAP_ARGS
assert_eq "$(got ADD capA | jq -c '.runtimeConfig | keys')" '["bandwidth","portMappings"]' "only declared+true caps"
assert_eq "$(got ADD capA | jq -c .runtimeConfig.portMappings)" "$(jq -c . <<<"$PM")" "portMappings passed through"
assert_eq "$(got ADD capB | jq -c .runtimeConfig)" '{"keep":1}' "no caps: runtimeConfig of the file untouched"
assert_eq "$(got ADD capC | jq -c .runtimeConfig)" '{"ips":["10.1.2.3/24"]}' "injected runtimeConfig replaces the file's"
assert_eq "$(got ADD capA | jq -r '.name + " " + .cniVersion')" "caps 1.0.0" "name/cniVersion injected"
assert_eq "$(got ADD capA | jq 'has("prevResult")')" false "first plugin has no prevResult"
# DEL without CAP_ARGS gets the cached capability args
reset_rec
wcni_ok del caps "$NSP"
assert_eq "$(calls)" "DEL capC,DEL capB,DEL capA" "DEL in reverse order"
assert_eq "$(got DEL capA | jq -c '.runtimeConfig | keys')" '["bandwidth","portMappings"]' "DEL uses cached capability args"
reset_rec

# ---------------------------------------------------------------- chaining + versions
info "prevResult chaining and version conversion"
cat >"$CONF/chain04.conflist" <<EOF
{"cniVersion":"0.4.0","name":"chain04","plugins":[$(rec c1 '"resultVersion":"1.0.0","ip":"10.99.0.5/24"'),$(rec c2)]}
EOF
cat >"$CONF/chain10.conflist" <<EOF
{"cniVersion":"1.0.0","name":"chain10","plugins":[$(rec d1 '"resultVersion":"0.2.0","ip":"10.99.0.6/24"'),$(rec d2),$(rec d3)]}
EOF
export CNI_ARGS="K8S_POD_NAME=p1;IgnoreUnknown=1"
wcni_ok add chain04 "$NSP"
OUT04=$OUT
unset CNI_ARGS
P=$(got ADD c2 | jq -c .prevResult)
assert_eq "$(jq -r .cniVersion <<<"$P")" 0.4.0 "1.0.0 result converted to 0.4.0 prevResult"
assert_eq "$(jq -r '.ips[0].version + " " + .ips[0].address' <<<"$P")" "4 10.99.0.5/24" "0.4.0 prevResult has ips[].version"
assert_eq "$(jq -r .cniVersion <<<"$OUT")" 0.4.0 "printed result"
assert_eq "$(jq -r .ips[0].address <<<"$OUT")" 10.99.0.5/24 "printed result address"
assert_eq "$(awk '{print $3, $4, $5, $6}' "$REC/log" | sort -u)" "$CID eth0 $NSP K8S_POD_NAME=p1;IgnoreUnknown=1" "plugin environment"
wcni_ok add chain10 "$NSP"
P=$(got ADD d2 | jq -c .prevResult)
assert_eq "$(jq -r .cniVersion <<<"$P")" 1.0.0 "0.2.0 result converted to 1.0.0 prevResult"
assert_eq "$(jq -r '.ips[0].address' <<<"$P")" 10.99.0.6/24 "converted address"
assert_eq "$(jq '.ips[0] | has("version")' <<<"$P")" false "1.0.0 prevResult has no ips[].version"
assert_eq "$(got ADD d3 | jq -c .prevResult)" "$P" "plugin 3 gets plugin 2's result"

# ---------------------------------------------------------------- cache
info "cache format"
F=$(cachefile chain04 "$CID")
[ -f "$F" ] || fail "no cache file $F"
assert_eq "$(stat -c %a "$F")" 600 "cache file mode"
assert_eq "$(jq -c '[.kind, .containerId, .ifName, .networkName, .netns]' "$F")" "[\"cniCacheV1\",\"$CID\",\"eth0\",\"chain04\",\"$NSP\"]" "cache header"
assert_eq "$(jq -c .cniArgs "$F")" '[["K8S_POD_NAME","p1"],["IgnoreUnknown","1"]]' "cached cniArgs"
assert_eq "$(jq 'has("capabilityArgs")' "$F")" false "no CAP_ARGS: capabilityArgs omitted"
jq -r .config "$F" | base64 -d | cmp -s - "$CONF/chain04.conflist" || check_fail "cached config is not the conflist's bytes"
assert_eq "$(jq -c .result "$F")" "$(jq -c . <<<"$OUT04")" "cached result == printed result"
[ -z "$(find "$CACHE/results" -name '.*' -type f)" ] || check_fail "temporary files left in the cache dir"

# ---------------------------------------------------------------- check
info "CHECK"
reset_rec
wcni_ok check chain04 "$NSP"
assert_eq "$(calls)" "CHECK c1,CHECK c2" "CHECK in order"
assert_eq "$(got CHECK c1 | jq -c .prevResult)" "$(jq -c .result "$F")" "CHECK gets the cached result"
wcni_err 3 check chain04 "$NSP" --container-id nothing-cached
cat >"$CONF/old.conflist" <<EOF
{"cniVersion":"0.3.1","name":"old","plugins":[$(rec o1)]}
EOF
wcni_err 1 check old "$NSP"
cat >"$CONF/nocheck.conflist" <<EOF
{"cniVersion":"1.0.0","name":"nocheck","disableCheck":true,"plugins":[$(rec n1)]}
EOF
reset_rec
wcni_ok check nocheck "$NSP"
assert_eq "$(calls)" "" "disableCheck: no plugin called"

# ---------------------------------------------------------------- del
info "DEL, DEL again"
reset_rec
wcni_ok del chain04 "$NSP"
assert_eq "$(calls)" "DEL c2,DEL c1" "DEL reverse order"
assert_eq "$(got DEL c1 | jq -r .prevResult.ips[0].address)" 10.99.0.5/24 "DEL gets the cached result"
assert_eq "$(awk '{print $6}' "$REC/log" | sort -u)" "K8S_POD_NAME=p1;IgnoreUnknown=1" "DEL uses cached CNI_ARGS"
[ -e "$F" ] && check_fail "cache file not removed by DEL"
reset_rec
wcni_ok del chain04 "$NSP"
assert_eq "$(calls)" "DEL c2,DEL c1" "second DEL still calls the plugins"
assert_eq "$(got DEL c1 | jq 'has("prevResult")')" false "second DEL: nothing cached, no prevResult"
wcni_ok del chain10 "$NSP"
# DEL after the network config was removed: the cached config is used
wcni_ok add chain10 "$NSP" --container-id gone1
rm "$CONF/chain10.conflist"
reset_rec
wcni_ok del chain10 --container-id gone1
assert_eq "$(calls)" "DEL d3,DEL d2,DEL d1" "DEL of a removed network uses the cached config"
[ -e "$(cachefile chain10 gone1)" ] && check_fail "cache of removed network not cleaned"
# a failing DEL keeps going and keeps the cache
cat >"$CONF/delfail.conflist" <<EOF
{"cniVersion":"1.0.0","name":"delfail","plugins":[$(rec f1),$(rec f2 '"fail":["DEL"]'),$(rec f3)]}
EOF
wcni_ok add delfail "$NSP"
reset_rec
wcni_err 100 del delfail "$NSP"
assert_eq "$(calls)" "DEL f3,DEL f2,DEL f1" "DEL best effort past a failing plugin"
[ -f "$(cachefile delfail "$CID")" ] || check_fail "cache removed although DEL failed"
rm -f "$(cachefile delfail "$CID")"

# ---------------------------------------------------------------- add failure
info "ADD failure rolls back"
cat >"$CONF/failing.conflist" <<EOF
{"cniVersion":"1.0.0","name":"failing","plugins":[$(rec g1),$(rec g2 '"fail":["ADD"]'),$(rec g3)]}
EOF
reset_rec
wcni_err 100 add failing "$NSP"
assert_eq "$(jq -r .msg <<<"$OUT")" "ADD failed as asked" "plugin's error message passed through"
assert_eq "$(jq -r .details <<<"$OUT")" "recorder g2" "plugin's error details passed through"
assert_eq "$(calls)" "ADD g1,ADD g2,DEL g1" "plugin 1 DELeted after plugin 2 failed, plugin 3 never run"
assert_eq "$(got DEL g1 | jq -r .prevResult.ips[0].address)" 10.99.0.2/24 "rollback DEL gets the result so far"
[ -e "$(cachefile failing "$CID")" ] && check_fail "cache written for a failed ADD"
cat >"$CONF/missing.conflist" <<EOF
{"cniVersion":"1.0.0","name":"missing","plugins":[$(rec m1),{"type":"no-such-plugin-$$"}]}
EOF
reset_rec
wcni "add" missing "$NSP"
assert_ne "$RC" 0 "missing plugin fails ADD"
grep -q "no-such-plugin" <<<"$OUT" || check_fail "missing plugin not named: $OUT"
assert_eq "$(calls)" "ADD m1,DEL m1" "rollback after a missing plugin"
# bad input
CNI_ARGS="novalue" wcni_err 4 add caps "$NSP"
CAP_ARGS="[1]" wcni_err 4 add caps "$NSP"
CNI_IFNAME="bad/name" wcni_err 4 add caps "$NSP"
wcni_err 4 add caps "$NSP" --container-id "-bad"
wcni add caps
assert_ne "$RC" 0 "add without netns"

# ---------------------------------------------------------------- gc
info "GC"
cat >"$CONF/gcnet.conflist" <<EOF
{"cniVersion":"1.1.0","name":"gcnet","plugins":[$(rec old1),$(rec old2)]}
EOF
for c in keep1 stale1 stale2; do
	CNI_ARGS="WHO=$c" wcni_ok add gcnet "$NSP" --container-id "$c"
done
CNI_IFNAME=eth1 wcni_ok add gcnet "$NSP" --container-id keep1
# a different network whose name starts the same must not be touched
cat >"$CONF/gcnet-x.conflist" <<EOF
{"cniVersion":"1.1.0","name":"gcnet-x","plugins":[$(rec x1)]}
EOF
wcni_ok add gcnet-x "$NSP" --container-id stale1
# the network's config changes afterwards: stale DELs must use the cached one
cat >"$CONF/gcnet.conflist" <<EOF
{"cniVersion":"1.1.0","name":"gcnet","plugins":[$(rec new1),$(rec new2)]}
EOF
reset_rec
wcni_ok gc gcnet --valid keep1/eth0 --valid keep1/eth1
assert_eq "$(calls)" "DEL old2,DEL old1,DEL old2,DEL old1,GC new1,GC new2" "GC: stale DELs (cached config), then GC to every plugin"
assert_eq "$(grep '^DEL' "$REC/log" | awk '{print $3, $6}' | sort -u | tr '\n' ' ')" "stale1 WHO=stale1 stale2 WHO=stale2 " "stale DELs with cached container ID and args"
assert_eq "$(got DEL old1 | jq -r .prevResult.ips[0].address)" 10.99.0.2/24 "stale DEL gets the cached result"
assert_eq "$(got GC new1 | jq -c '."cni.dev/valid-attachments"')" '[{"containerID":"keep1","ifname":"eth0"},{"containerID":"keep1","ifname":"eth1"}]' "GC valid attachments"
assert_eq "$(got GC new2 | jq -r '.name + " " + .cniVersion')" "gcnet 1.1.0" "GC config name/version"
assert_eq "$(cd "$CACHE/results" && printf '%s ' gcnet-*)" "gcnet-keep1-eth0 gcnet-keep1-eth1 gcnet-x-stale1-eth0 " "GC removed exactly the stale cache entries"
reset_rec
wcni_ok gc gcnet
assert_eq "$(calls)" "DEL old2,DEL old1,DEL old2,DEL old1,GC new1,GC new2" "GC without --valid: everything is stale"
assert_eq "$(got GC new1 | jq -c '."cni.dev/valid-attachments"')" '[]' "empty valid list"
wcni_ok del gcnet-x "$NSP" --container-id stale1
# pre-1.1.0 lists: only the stale DELs, no GC command
cat >"$CONF/gcold.conflist" <<EOF
{"cniVersion":"1.0.0","name":"gcold","plugins":[$(rec q1)]}
EOF
wcni_ok add gcold "$NSP" --container-id s1
reset_rec
wcni_ok gc gcold
assert_eq "$(calls)" "DEL q1" "1.0.0 list: stale DEL only"
cat >"$CONF/gcoff.conflist" <<EOF
{"cniVersion":"1.1.0","name":"gcoff","disableGC":true,"plugins":[$(rec z1)]}
EOF
wcni_ok add gcoff "$NSP" --container-id s1
reset_rec
wcni_ok gc gcoff
assert_eq "$(calls)" "" "disableGC: nothing"
wcni_ok del gcoff "$NSP" --container-id s1

# ---------------------------------------------------------------- status, version
info "STATUS, VERSION"
cat >"$CONF/st.conflist" <<EOF
{"cniVersion":"1.1.0","name":"st","plugins":[$(rec s1),$(rec s2),$(rec s3)]}
EOF
reset_rec
wcni_ok status st
assert_eq "$(calls)" "STATUS s1,STATUS s2,STATUS s3" "STATUS every plugin"
cat >"$CONF/st.conflist" <<EOF
{"cniVersion":"1.1.0","name":"st","plugins":[$(rec s1),$(rec s2 '"fail":["STATUS"]'),$(rec s3)]}
EOF
reset_rec
wcni_err 100 status st
assert_eq "$(calls)" "STATUS s1,STATUS s2" "STATUS: first error wins"
reset_rec
wcni_ok status old
assert_eq "$(calls)" "" "STATUS: pre-1.1.0 list is a no-op"
wcni_ok version loopback
assert_eq "$(jq -r '.supportedVersions | index("1.0.0") != null' <<<"$OUT")" true "VERSION of loopback"
wcni version no-such-plugin-$$
assert_ne "$RC" 0 "VERSION of a missing plugin"

# ---------------------------------------------------------------- real plugins
info "real loopback + host-local chain ($PLUGBIN)"
if [ -x "$PLUGBIN/host-local" ]; then
	cat >"$CONF/real.conflist" <<EOF
{"cniVersion":"1.0.0","name":"real","plugins":[{"type":"loopback"},
 {"type":"host-local","ipam":{"type":"host-local","dataDir":"$T/ipam","ranges":[[{"subnet":"10.231.0.0/24"}]]}}]}
EOF
	ip -n "$NS" link set lo down
	wcni_ok add real "$NSP"
	assert_eq "$(jq -r '.ips[0].address' <<<"$OUT")" 10.231.0.2/24 "host-local address"
	ip -n "$NS" -j link show lo | jq -e '.[0].flags | index("UP")' >/dev/null || check_fail "loopback did not bring lo up"
	[ -f "$T/ipam/real/10.231.0.2" ] || check_fail "host-local reservation missing"
	wcni_ok check real "$NSP"
	wcni_ok del real "$NSP"
	[ -f "$T/ipam/real/10.231.0.2" ] && check_fail "host-local reservation not released"
	wcni_ok del real "$NSP"
fi

left=$(ls -A "$CACHE/results")
assert_eq "$left" "" "cache entries left behind"
finish
