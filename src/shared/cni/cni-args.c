/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"

void cni_args_done(CniArgs *a) {
	if (!a)
		return;
	free(a->ips);
	free(a->mac);
	free(a->k8s_pod_name);
	free(a->k8s_pod_namespace);
	free(a->k8s_pod_infra_container_id);
	free(a->k8s_pod_uid);
	*a = (CniArgs) {};
}

/* "a.b.c.d" or "a.b.c.d/len" (the length is dropped, as the reference does for requested IPs). */
int cni_parse_requested_ip(const char *s, IpAddr *ret) {
	IpPrefix p;

	if (strchr(s, '/')) {
		if (ip_prefix_parse(s, &p) < 0)
			return -EINVAL;
		*ret = p.addr;
		return 0;
	}
	return ip_addr_parse(s, ret);
}

static int parse_bool(const char *s, bool *ret) {
	/* Go's UnmarshallableBool: "1"/"true" and "0"/"false", case-insensitive. */
	if (streq(s, "1") || strcasecmp(s, "true") == 0)
		*ret = true;
	else if (streq(s, "0") || strcasecmp(s, "false") == 0)
		*ret = false;
	else
		return -EINVAL;
	return 0;
}

static int set_string(char **field, const char *v) {
	char *c = strdup(v);

	if (!c)
		return -ENOMEM;
	free(*field);
	*field = c;
	return 0;
}

int cni_args_parse(const char *s, CniArgs *ret, CniError *err) {
	_cleanup_strv_free_ char **pairs = NULL;
	CniArgs a = {};
	int r;

	if (isempty(s)) {
		cni_args_done(ret);
		return 0;
	}
	r = strv_split(s, ";", &pairs);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");

	/* Pass 1: syntax, and IgnoreUnknown, which applies whatever its position. */
	for (char **p = pairs; *p; p++) {
		const char *eq = strchr(*p, '=');

		if (!eq || eq == *p || strchr(eq + 1, '='))
			return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV,
					     "CNI_ARGS \"%s\" is invalid: expected KEY=VALUE pairs separated by ';'",
					     *p);
		if (startswith(*p, "IgnoreUnknown=") && parse_bool(eq + 1, &a.ignore_unknown) < 0)
			return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV,
					     "CNI_ARGS IgnoreUnknown \"%s\" is invalid: expected 1/true or 0/false",
					     eq + 1);
	}

	for (char **p = pairs; *p; p++) {
		char *eq = strchr(*p, '=');
		const char *v = eq + 1;

		*eq = '\0';
		if (streq(*p, "IgnoreUnknown"))
			r = 0;
		else if (streq(*p, "IP")) {
			_cleanup_strv_free_ char **l = NULL;
			IpAddr *n;

			r = strv_split(v, ",", &l);
			if (r < 0)
				goto fail_oom;
			n = reallocarray(a.ips, a.n_ips + strv_length(l) + 1, sizeof(IpAddr));
			if (!n) {
				r = -ENOMEM;
				goto fail_oom;
			}
			a.ips = n;
			for (char **i = l; *i; i++) {
				if (cni_parse_requested_ip(*i, &a.ips[a.n_ips]) < 0) {
					r = cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV,
							  "CNI_ARGS IP \"%s\" is invalid: not an IP address", *i);
					goto fail;
				}
				a.n_ips++;
			}
		} else if (streq(*p, "MAC")) {
			unsigned char mac[6];
			char buf[18];

			if (ether_addr_parse(v, mac) < 0) {
				r = cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV,
						  "CNI_ARGS MAC \"%s\" is invalid: not a MAC address", v);
				goto fail;
			}
			r = set_string(&a.mac, ether_addr_format(mac, buf));
		} else if (streq(*p, "K8S_POD_NAME"))
			r = set_string(&a.k8s_pod_name, v);
		else if (streq(*p, "K8S_POD_NAMESPACE"))
			r = set_string(&a.k8s_pod_namespace, v);
		else if (streq(*p, "K8S_POD_INFRA_CONTAINER_ID"))
			r = set_string(&a.k8s_pod_infra_container_id, v);
		else if (streq(*p, "K8S_POD_UID"))
			r = set_string(&a.k8s_pod_uid, v);
		else if (streq(*p, "GATEWAY"))
			/* static IPAM's key (gateways for the CNI_ARGS IPs); the plugin reads it from
			 * req->args_raw. Known here so that static works without IgnoreUnknown. */
			r = 0;
		else if (a.ignore_unknown)
			r = 0;
		else {
			r = cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV,
					  "CNI_ARGS key \"%s\" is unknown (set IgnoreUnknown=1 to ignore it)", *p);
			goto fail;
		}
		if (r < 0)
			goto fail_oom;
	}
	cni_args_done(ret);
	*ret = a;
	return 0;
fail_oom:
	r = cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
fail:
	cni_args_done(&a);
	return r;
}
