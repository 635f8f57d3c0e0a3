# shellcheck shell=bash
# For the wireguard netns tests, after weft-cluster-lib.sh: wg_private_run_wrapper makes WEFTD a
# wrapper that runs weftd in a private mount namespace whose /run/wireguard is the node's own
# directory (<node dir>/wg). wireguard-go's UAPI socket directory is compiled in, and the nodes'
# weft-wg.sock (and weft-wg-v6.sock) must not meet.
wg_private_run_wrapper() {
	local real=$WEFTD
	WEFTD=$T/weftd-wrapper
	cat >"$WEFTD" <<EOF
#!/bin/sh
prev= d=
for a; do [ "\$prev" = --state-dir ] && d=\$a; prev=\$a; done
mkdir -p "\$d/../wg"
exec unshare -m --propagation private sh -c 'mount -t tmpfs tmpfs /run && mkdir /run/wireguard && mount --bind "\$0" /run/wireguard && exec "\$@"' "\$d/../wg" "$real" "\$@"
EOF
	chmod +x "$WEFTD"
}
