# shellcheck shell=bash
# Start test/kube/fake-apiserver.py on loopback and fill it with test/kube/objects/: what a test of
# weft's Kubernetes client (or of kubectl against the fixture) needs. Source after test/lib/lib.sh
# (uses $T, $TOP, on_exit, fail).
#
#   fixture_start [FIXTURE ARGS...]   https on 127.0.0.1, a free port, a bearer token (plain http and
#                                     no token without openssl); sets FIXTURE_URL, FIXTURE_TOKEN,
#                                     FIXTURE_CA (empty on http), FIXTURE_KUBECONFIG, FIXTURE_PID
#   fixture_start_ns NS IP TOKEN [FIXTURE ARGS...]
#                                     https on IP:6443 inside namespace NS (a weftd cluster's etcd
#                                     namespace, reached over the underlay), with a certificate for IP
#                                     ($T/apiserver.crt) and the bearer token TOKEN; sets the same
#                                     FIXTURE_* variables (the kubeconfig is $T/kubeconfig)
#   fixture_api METHOD PATH [CURL ARGS...]   one API request (token, CA); prints the body
#   fixture_populate                  every object of objects/cluster.yaml through /fixture/apply (no
#                                     kubectl needed), then the pod IPs of objects/pod-ips.txt through
#                                     pods/status, as the kubelet would
#   fixture_set_pod_ips NS NAME IP... PATCH pods/status: status.podIPs (podIP follows)
FIXTURE_SCRIPT=${FIXTURE_SCRIPT:-$TOP/test/kube/fake-apiserver.py}
FIXTURE_OBJECTS=$TOP/test/kube/objects

fixture_start() {
	local scheme=http cert_args=() token_args=() i
	FIXTURE_TOKEN=""
	FIXTURE_CA=""
	if command -v openssl >/dev/null; then
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
			-subj /CN=fake-apiserver -addext "subjectAltName=IP:127.0.0.1" \
			-keyout "$T/fixture.key" -out "$T/fixture.crt" >"$T/openssl.log" 2>&1 ||
			fail "openssl could not make a certificate: $(cat "$T/openssl.log")"
		scheme=https
		cert_args=(--cert "$T/fixture.crt" --key "$T/fixture.key")
		FIXTURE_CA=$T/fixture.crt
		# client-go sends a bearer token only over TLS
		FIXTURE_TOKEN=fixture-token-$$
		token_args=(--token "$FIXTURE_TOKEN")
	fi
	rm -f "$T/fixture.port"
	python3 "$FIXTURE_SCRIPT" --bind 127.0.0.1 --port 0 --port-file "$T/fixture.port" \
		"${token_args[@]}" "${cert_args[@]}" "$@" >"$T/fixture.log" 2>&1 &
	FIXTURE_PID=$!
	on_exit "kill $FIXTURE_PID 2>/dev/null; wait $FIXTURE_PID 2>/dev/null"
	# up to 30 s: a busy machine can take seconds to start Python and import the fixture
	for ((i = 0; i < 600; i++)); do
		[ -s "$T/fixture.port" ] && break
		kill -0 "$FIXTURE_PID" 2>/dev/null || fail "fake-apiserver exited: $(cat "$T/fixture.log")"
		sleep 0.05
	done
	[ -s "$T/fixture.port" ] || fail "fake-apiserver did not come up: $(cat "$T/fixture.log")"
	FIXTURE_URL=$scheme://127.0.0.1:$(cat "$T/fixture.port")
	fixture_kubeconfig
}

# fixture_kubeconfig: $T/kubeconfig for FIXTURE_URL, FIXTURE_CA and FIXTURE_TOKEN
fixture_kubeconfig() {
	FIXTURE_KUBECONFIG=$T/kubeconfig
	{
		echo "apiVersion: v1"
		echo "kind: Config"
		echo "clusters:"
		echo "- name: fixture"
		echo "  cluster:"
		echo "    server: $FIXTURE_URL"
		[ -n "$FIXTURE_CA" ] && echo "    certificate-authority: $FIXTURE_CA"
		echo "users:"
		echo "- name: fixture"
		echo "  user:"
		[ -n "$FIXTURE_TOKEN" ] && echo "    token: $FIXTURE_TOKEN"
		[ -z "$FIXTURE_TOKEN" ] && echo "    {}"
		echo "contexts:"
		echo "- name: fixture"
		echo "  context: {cluster: fixture, user: fixture}"
		echo "current-context: fixture"
	} >"$FIXTURE_KUBECONFIG"
}

fixture_start_ns() {
	local ns=$1 ip=$2
	FIXTURE_TOKEN=$3
	shift 3
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=fake-apiserver \
		-addext "subjectAltName=IP:$ip" -keyout "$T/apiserver.key" -out "$T/apiserver.crt" >"$T/openssl.log" 2>&1 ||
		fail "openssl could not make a certificate: $(cat "$T/openssl.log")"
	ip netns exec "$ns" python3 "$FIXTURE_SCRIPT" --bind "$ip" --port 6443 --token "$FIXTURE_TOKEN" \
		--cert "$T/apiserver.crt" --key "$T/apiserver.key" "$@" >"$T/fixture.log" 2>&1 &
	FIXTURE_PID=$!
	on_exit "kill $FIXTURE_PID 2>/dev/null; wait $FIXTURE_PID 2>/dev/null"
	wait_listen "$ns" 6443 || { cat "$T/fixture.log" >&2; fail "fake-apiserver did not come up"; }
	FIXTURE_URL=https://$ip:6443
	FIXTURE_CA=$T/apiserver.crt
	fixture_kubeconfig
}

fixture_api() {
	local m=$1 p=$2 auth=() ca=()
	shift 2
	[ -n "$FIXTURE_TOKEN" ] && auth=(-H "Authorization: Bearer $FIXTURE_TOKEN")
	[ -n "$FIXTURE_CA" ] && ca=(--cacert "$FIXTURE_CA")
	curl -sS -m 10 -X "$m" "${auth[@]}" "${ca[@]}" "$@" "$FIXTURE_URL$p"
}

fixture_set_pod_ips() {
	local ns=$1 name=$2 ips
	shift 2
	ips=$(printf '%s\n' "$@" | jq -R '{ip: .}' | jq -sc .)
	fixture_api PATCH "/api/v1/namespaces/$ns/pods/$name/status" \
		-H 'Content-Type: application/strategic-merge-patch+json' \
		-d "{\"status\": {\"phase\": \"Running\", \"podIPs\": $ips}}"
}

fixture_populate() {
	local ns name ips
	fixture_api POST /fixture/apply -H 'Content-Type: application/yaml' \
		--data-binary "@$FIXTURE_OBJECTS/cluster.yaml" >"$T/populate.json" ||
		fail "fixture_populate: /fixture/apply failed"
	jq -e '.applied | length > 0' "$T/populate.json" >/dev/null || fail "fixture_populate: $(cat "$T/populate.json")"
	while read -r ns name ips; do
		[[ -z $ns || $ns == \#* ]] && continue
		# shellcheck disable=SC2086 # one argument per IP
		fixture_set_pod_ips "$ns" "$name" $ips >/dev/null
	done <"$FIXTURE_OBJECTS/pod-ips.txt"
}
