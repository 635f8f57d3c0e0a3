/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes weftd's network config (net-conf.json, from a file or the datastore's <prefix>/config
 * key, which any node can write): network_config_parse. A rejected config must say why; an
 * accepted one must satisfy what the rest of weftd takes for granted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/network-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (16 * 1024)

static void check(const NetworkConfig *c) {
	static const char *const others[] = { "10.0.0.0/8", "10.244.1.0/24", "fd00::/8", "0.0.0.0/0" };
	bool v4 = c->network.addr.family == AF_INET, v6 = c->network6.addr.family == AF_INET6;

	if (!v4 && !v6)
		abort();
	if (c->network.addr.family != AF_UNSPEC && !v4)
		abort();
	if (c->network6.addr.family != AF_UNSPEC && !v6)
		abort();
	if (v4 && (c->subnet_len < c->network.len || c->subnet_len > 32))
		abort();
	if (v6 && (c->subnet_len6 < c->network6.len || c->subnet_len6 > 128))
		abort();
	if (c->subnet_min.family != AF_UNSPEC && !(v4 && ip_prefix_contains(&c->network, &c->subnet_min)))
		abort();
	if (c->subnet_max.family != AF_UNSPEC && !(v4 && ip_prefix_contains(&c->network, &c->subnet_max)))
		abort();
	if (c->backend.vni > 16777215 || !network_backend_type_to_string(c->backend.type))
		abort();
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		IpPrefix p;
		char *err = NULL;
		int r;

		if (ip_prefix_parse(others[i], &p) < 0)
			abort();
		r = network_config_check_overlap(c, &p, "fuzz", &err);
		if (r < 0 && !err)
			abort();
		free(err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	NetworkConfig *cfg = NULL;
	char *text, *err = NULL;
	int r;

	if (size > MAX_INPUT)
		return 0;
	text = strndup((const char *) data, size);
	if (!text)
		return 0;
	r = network_config_parse(text, &cfg, &err);
	if (r < 0) {
		if (r != -ENOMEM && !err)
			abort(); /* errors name the key and the value */
	} else
		check(cfg);
	network_config_free(cfg);
	free(err);
	free(text);
	return 0;
}
