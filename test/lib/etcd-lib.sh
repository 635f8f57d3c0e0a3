# shellcheck shell=bash
# A private etcd for shell tests. Source it after test/lib/lib.sh (uses skip/on_exit when present):
#   . "$TOP/test/lib/etcd-lib.sh"
#   etcd_start "$T"                  # 127.0.0.1, free ports, data in $T/etcd
#   etcd_start "$T" "$ns" 10.0.0.1   # inside network namespace $ns, listening on 10.0.0.1
#   ... weftd --etcd-endpoints "$ETCD_ENDPOINT" ...
#   etcd_restart                     # stop + start on the same ports and data dir
#   etcd_stop                        # also done automatically at exit
#   etcd_put KEY VALUE, etcd_get KEY  # via etcdctl (v3 API)
#
# Sets ETCD_ENDPOINT (http://IP:PORT), ETCD_PID, ETCD_DIR. Skips (exit 77) if etcd is not installed.
# Never listens on anything but the given address (default loopback).

ETCD_BIN=${ETCD_BIN:-/usr/bin/etcd}
ETCDCTL_BIN=${ETCDCTL_BIN:-/usr/bin/etcdctl}
ETCD_PID=
ETCD_ENDPOINT=
ETCD_DIR=
_ETCD_NETNS=
_ETCD_IP=
_ETCD_CLIENT_PORT=
_ETCD_PEER_PORT=
_ETCD_CLEANUP_SET=0

_etcd_skip() {
	if declare -F skip >/dev/null; then skip "$*"; fi
	echo "SKIP: $*"
	exit 77
}

# Run a command in the etcd's namespace (or here).
_etcd_in() {
	if [ -n "$_ETCD_NETNS" ]; then ip netns exec "$_ETCD_NETNS" "$@"; else "$@"; fi
}

# A TCP port nobody listens on (in the target namespace), from the ephemeral-free range.
_etcd_free_port() {
	local p used
	used=$(_etcd_in ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://')
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % 12000))
		grep -qx "$p" <<<"$used" || { echo "$p"; return 0; }
	done
	return 1
}

_etcd_launch() {
	local client="http://$_ETCD_IP:$_ETCD_CLIENT_PORT" peer="http://$_ETCD_IP:$_ETCD_PEER_PORT"
	local -a pre=()
	# Not through a shell function: `f &` forks a subshell and $! would not be etcd's pid.
	# `ip netns exec` execs in place, so its pid is etcd's.
	[ -n "$_ETCD_NETNS" ] && pre=(ip netns exec "$_ETCD_NETNS")
	"${pre[@]}" "$ETCD_BIN" --name weft-test --data-dir "$ETCD_DIR/data" \
		--listen-client-urls "$client" --advertise-client-urls "$client" \
		--listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
		--initial-cluster "weft-test=$peer" \
		--heartbeat-interval 50 --election-timeout 500 \
		--logger zap --log-level error >>"$ETCD_DIR/etcd.log" 2>&1 &
	ETCD_PID=$!
	ETCD_ENDPOINT=$client
	for _ in $(seq 1 300); do
		if _etcd_in curl -sf -m 1 --noproxy '*' "$client/health" 2>/dev/null | grep_q '"health":"true"'; then
			return 0
		fi
		kill -0 "$ETCD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "etcd did not start; log:" >&2
	tail -n 20 "$ETCD_DIR/etcd.log" >&2
	return 1
}

# etcd_start DIR [NETNS [IP]]
etcd_start() {
	local dir=$1
	[ -x "$ETCD_BIN" ] || _etcd_skip "needs etcd ($ETCD_BIN)"
	command -v curl >/dev/null || _etcd_skip "needs curl"
	_ETCD_NETNS=${2:-}
	_ETCD_IP=${3:-127.0.0.1}
	ETCD_DIR=$dir/etcd
	mkdir -p "$ETCD_DIR"
	_ETCD_CLIENT_PORT=$(_etcd_free_port) || return 1
	_ETCD_PEER_PORT=$(_etcd_free_port) || return 1
	while [ "$_ETCD_PEER_PORT" = "$_ETCD_CLIENT_PORT" ]; do _ETCD_PEER_PORT=$(_etcd_free_port); done
	if [ "$_ETCD_CLEANUP_SET" = 0 ]; then
		_ETCD_CLEANUP_SET=1
		if declare -F on_exit >/dev/null; then on_exit etcd_stop; else trap etcd_stop EXIT; fi
	fi
	_etcd_launch
}

etcd_stop() {
	[ -n "$ETCD_PID" ] || return 0
	kill "$ETCD_PID" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 "$ETCD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$ETCD_PID" 2>/dev/null || true
	wait "$ETCD_PID" 2>/dev/null || true
	ETCD_PID=
}

# Same ports, same data: leases and keys survive, clients reconnect.
etcd_restart() {
	etcd_stop
	_etcd_launch
}

etcd_put() { _etcd_in env ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints "$ETCD_ENDPOINT" put "$1" "$2" >/dev/null; }
etcd_get() { _etcd_in env ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints "$ETCD_ENDPOINT" get --print-value-only "$1"; }
# etcd_keys PREFIX: the keys under PREFIX, one per line
etcd_keys() { _etcd_in env ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints "$ETCD_ENDPOINT" get --prefix --keys-only "$1" | sed '/^$/d'; }
