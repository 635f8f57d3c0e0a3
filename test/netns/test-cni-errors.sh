#!/usr/bin/env bash
# Bad input to a plugin (build/bin/loopback): each case must fail with the right CNI error code,
# a message naming the offending key/value, JSON on stdout, exit 1 - and change nothing in the
# namespace (its lo stays down).
#
#   [ w-err-PID ]  lo down, must stay down
#
. "$(dirname "$0")/../lib/lib.sh"
require_root
require_cmd ip jq

mk_netns err >/dev/null # not in $(...): mk_netns registers the namespace for cleanup
NS=w-err-$$
ip -n "$NS" link set lo down
GOOD='{"cniVersion":"1.0.0","name":"lo-net","type":"loopback"}'

# expect CODE SUBSTRING PLUGIN CMD CID NETNS IFNAME CONF [ARGS]
expect() {
	local code=$1 sub=$2; shift 2
	cni_err "$code" "$@"
	[ "$CNI_RC" = 1 ] || check_fail "$2 ${*:6}: exit status $CNI_RC, expected 1"
	jq -e 'has("cniVersion") and has("code") and has("msg")' <<<"$CNI_OUT" >/dev/null 2>&1 ||
		check_fail "error JSON lacks cniVersion/code/msg: $CNI_OUT"
	grep -qF -- "$sub" <<<"$(jqr .msg 2>/dev/null)" || check_fail "msg does not mention '$sub': $CNI_OUT"
}

# Config problems
expect 6 "failed to decode config" loopback ADD c1 "$NS" eth0 '{"cniVersion":"1.0.0",'
expect 6 "line 1" loopback ADD c1 "$NS" eth0 '{"cniVersion" "1.0.0"}'
expect 6 "not a JSON object" loopback ADD c1 "$NS" eth0 '["cniVersion"]'
expect 6 "failed to decode config" loopback ADD c1 "$NS" eth0 ''
expect 1 '"9.9.9"' loopback ADD c1 "$NS" eth0 '{"cniVersion":"9.9.9","name":"n","type":"loopback"}'
expect 7 '"name"' loopback ADD c1 "$NS" eth0 '{"cniVersion":"1.0.0","type":"loopback"}'
expect 7 '"../etc"' loopback ADD c1 "$NS" eth0 '{"cniVersion":"1.0.0","name":"../etc","type":"loopback"}'
expect 7 '"type"' loopback ADD c1 "$NS" eth0 '{"cniVersion":"1.0.0","name":"n"}'
expect 7 'runtimeConfig.mac' loopback ADD c1 "$NS" eth0 '{"cniVersion":"1.0.0","name":"n","type":"loopback","runtimeConfig":{"mac":"xyz"}}'
# Command/version rules
expect 1 "CHECK" loopback CHECK c1 "$NS" eth0 '{"cniVersion":"0.3.1","name":"n","type":"loopback"}'
expect 1 "GC" loopback GC c1 "$NS" eth0 "$GOOD"
expect 1 "STATUS" loopback STATUS c1 "$NS" eth0 "$GOOD"
assert_eq "$(jqr .cniVersion)" 1.0.0 "error printed in the config's version"

# Environment problems
expect 4 '"FOO"' loopback FOO c1 "$NS" eth0 "$GOOD"
expect 4 '"add"' loopback add c1 "$NS" eth0 "$GOOD"
expect 4 "CNI_CONTAINERID" loopback ADD "" "$NS" eth0 "$GOOD"
expect 4 '"../../etc"' loopback ADD ../../etc "$NS" eth0 "$GOOD"
expect 4 '"a/b"' loopback ADD a/b "$NS" eth0 "$GOOD"
expect 4 '"a/b"' loopback DEL a/b "$NS" eth0 "$GOOD"
expect 4 "CNI_IFNAME" loopback ADD c1 "$NS" "" "$GOOD"
expect 4 'longer than 15' loopback ADD c1 "$NS" abcdefghijklmnop "$GOOD"
expect 4 "contains '/'" loopback ADD c1 "$NS" a/b "$GOOD"
expect 4 'is . or ..' loopback ADD c1 "$NS" .. "$GOOD"
expect 4 "CNI_NETNS" loopback ADD c1 "" eth0 "$GOOD"
expect 4 "CNI_NETNS" loopback CHECK c1 "" eth0 "$GOOD"
expect 4 '"/run/netns/w-missing-'"$$"'"' loopback ADD c1 "/run/netns/w-missing-$$" eth0 "$GOOD"
expect 4 "not a network namespace" loopback ADD c1 /etc/hostname eth0 "$GOOD"
expect 4 '"FOO"' loopback ADD c1 "$NS" eth0 "$GOOD" "FOO=bar"
expect 4 '"300.0.0.1"' loopback ADD c1 "$NS" eth0 "$GOOD" "IP=300.0.0.1"
assert_eq "$(jqr .cniVersion)" 1.0.0 "environment error printed in the config's version"
# CNI_PATH unset (the cni helper always sets it): still required for GC (ADD/CHECK/DEL without it
# are covered by test-plugin-hardening.sh: optional there since spec 1.0.0)
set +e
out=$(jq -c '.cniVersion = "1.1.0"' <<<"$GOOD" | env -i CNI_COMMAND=GC "$WEFT_BIN/loopback")
rc=$?
set -e
assert_eq "$rc" 1 "GC without CNI_PATH exit status"
assert_eq "$(jqr .code "$out")" 4 "GC without CNI_PATH code"
grep -q CNI_PATH <<<"$(jqr .msg "$out")" || check_fail "msg does not name CNI_PATH: $out"

# An unknown CNI_ARGS key is fine with IgnoreUnknown, and K8S_* keys are always known.
cni_ok loopback DEL c1 "$NS" eth0 "$GOOD" "FOO=bar;IgnoreUnknown=1;K8S_POD_NAME=p;K8S_POD_NAMESPACE=ns"

# Nothing above changed the namespace: lo is still down, no addresses were added.
assert_eq "$(ip -n "$NS" -j link show lo | jq -r '.[0].flags | index("UP") != null')" false "lo untouched"
assert_eq "$(ip -n "$NS" -j link show | jq length)" 1 "no links created"

# No CNI_COMMAND: about text on stderr, nothing on stdout, exit 0.
set +e
out=$(env -i PATH="$PATH" "$WEFT_BIN/loopback" </dev/null 2>"$T/about")
rc=$?
set -e
assert_eq "$rc" 0 "no CNI_COMMAND exit status"
assert_eq "$out" "" "no CNI_COMMAND stdout"
grep -q "CNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0" "$T/about" ||
	check_fail "about text lacks the version list: $(cat "$T/about")"

# VERSION needs no environment and no config.
set +e
out=$(env -i PATH="$PATH" CNI_COMMAND=VERSION "$WEFT_BIN/loopback" </dev/null)
rc=$?
set -e
assert_eq "$rc" 0 "VERSION exit status"
assert_eq "$(jqr .cniVersion "$out")" 1.1.0 "VERSION without config: latest"
assert_eq "$(jqr '.supportedVersions | length' "$out")" 7 "VERSION lists 7 versions"

finish
