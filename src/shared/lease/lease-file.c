/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/lease/lease-file.h"

int lease_subnet_gateway(const IpPrefix *subnet, IpPrefix *ret) {
	IpPrefix net, gw;

	if (!ip_addr_is_set(&subnet->addr) || subnet->len >= ip_family_bits(subnet->addr.family))
		return -EINVAL;
	net = ip_prefix_mask(subnet);
	gw.len = subnet->len;
	if (!ip_addr_next(&net.addr, &gw.addr))
		return -EINVAL;
	*ret = gw;
	return 0;
}

int lease_file_render(const LeaseFile *lf, char **ret) {
	char a[IP_PREFIX_STRLEN], b[IP_PREFIX_STRLEN], buf[512];
	bool v4 = ip_addr_is_set(&lf->network.addr), v6 = ip_addr_is_set(&lf->network6.addr);
	size_t n = 0;
	char *s;

	if ((!v4 && !v6) || lf->mtu == 0)
		return -EINVAL;
	if ((v4 && lf->subnet.addr.family != AF_INET) || (v6 && lf->subnet6.addr.family != AF_INET6))
		return -EINVAL;

	/* Bounded: 4 prefixes of at most 50 characters plus keys fit in buf with room to spare. */
	if (v4)
		n += (size_t) snprintf(buf + n, sizeof(buf) - n, "WEFT_NETWORK=%s\nWEFT_SUBNET=%s\n",
				       ip_prefix_to_string(&lf->network, a), ip_prefix_to_string(&lf->subnet, b));
	if (v6)
		n += (size_t) snprintf(buf + n, sizeof(buf) - n, "WEFT_NETWORK6=%s\nWEFT_SUBNET6=%s\n",
				       ip_prefix_to_string(&lf->network6, a), ip_prefix_to_string(&lf->subnet6, b));
	snprintf(buf + n, sizeof(buf) - n, "WEFT_MTU=%u\nWEFT_IPMASQ=%s\n", lf->mtu, lf->ipmasq ? "true" : "false");

	s = strdup(buf);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

static int parse_bool(const char *v, bool *ret) {
	if (streq(v, "true") || streq(v, "1") || streq(v, "yes"))
		*ret = true;
	else if (streq(v, "false") || streq(v, "0") || streq(v, "no"))
		*ret = false;
	else
		return -EINVAL;
	return 0;
}

int lease_file_parse(const char *text, LeaseFile *ret) {
	LeaseFile lf = {};
	bool have_mtu = false, have_net = false, have_sub = false, have_net6 = false, have_sub6 = false;
	const char *p = text;

	while (*p) {
		size_t n = strcspn(p, "\n");
		char line[256], *eq, *k, *v;

		if (n >= sizeof(line))
			return -EINVAL;
		memcpy(line, p, n);
		line[n] = 0;
		p += n;
		if (*p)
			p++;

		/* trim */
		k = line + strspn(line, " \t\r");
		for (char *e = k + strlen(k); e > k && strchr(" \t\r", e[-1]); e--)
			e[-1] = 0;
		if (*k == 0 || *k == '#')
			continue;
		eq = strchr(k, '=');
		if (!eq)
			return -EINVAL;
		*eq = 0;
		v = eq + 1;

		if (streq(k, "WEFT_NETWORK")) {
			if (ip_prefix_parse_network(v, &lf.network) < 0 || lf.network.addr.family != AF_INET)
				return -EINVAL;
			have_net = true;
		} else if (streq(k, "WEFT_SUBNET")) {
			if (ip_prefix_parse(v, &lf.subnet) < 0 || lf.subnet.addr.family != AF_INET)
				return -EINVAL;
			have_sub = true;
		} else if (streq(k, "WEFT_NETWORK6")) {
			if (ip_prefix_parse_network(v, &lf.network6) < 0 || lf.network6.addr.family != AF_INET6)
				return -EINVAL;
			have_net6 = true;
		} else if (streq(k, "WEFT_SUBNET6")) {
			if (ip_prefix_parse(v, &lf.subnet6) < 0 || lf.subnet6.addr.family != AF_INET6)
				return -EINVAL;
			have_sub6 = true;
		} else if (streq(k, "WEFT_MTU")) {
			if (safe_atou32(v, &lf.mtu) < 0 || lf.mtu < 68 || lf.mtu > 65535)
				return -EINVAL;
			have_mtu = true;
		} else if (streq(k, "WEFT_IPMASQ")) {
			if (parse_bool(v, &lf.ipmasq) < 0)
				return -EINVAL;
		}
		/* unknown keys: ignored (forward compatibility) */
	}

	if (!have_mtu || have_net != have_sub || have_net6 != have_sub6 || (!have_net && !have_net6))
		return -EINVAL;
	if (have_net && (lf.subnet.len < lf.network.len || !ip_prefix_contains(&lf.network, &lf.subnet.addr)))
		return -EINVAL;
	if (have_net6 && (lf.subnet6.len < lf.network6.len || !ip_prefix_contains(&lf.network6, &lf.subnet6.addr)))
		return -EINVAL;
	*ret = lf;
	return 0;
}

int lease_file_write(const char *path, const LeaseFile *lf) {
	_cleanup_free_ char *s = NULL;
	int r;

	r = lease_file_render(lf, &s);
	if (r < 0)
		return r;
	return write_file_atomic(path, s, strlen(s), 0644);
}

int lease_file_read(const char *path, LeaseFile *ret) {
	_cleanup_free_ char *s = NULL;
	int r;

	r = read_full_file(path, &s, NULL);
	if (r < 0)
		return r;
	return lease_file_parse(s, ret);
}
