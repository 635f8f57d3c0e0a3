/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Config parsing for the portmap plugin: every key of the reference plugin, as strictly typed as
 * Go's encoding/json, each error code 7 naming the key and value. runtimeConfig.portMappings is
 * parsed (and its ports/protocols validated) by cni-request.c.
 *
 * The reference has two backends; weft always programs nftables. Keys that only mean something
 * to iptables are accepted and validated like the reference does (markMasqBit 0..31, not together
 * with externalSetMarkChain), then ignored: our snat uses `ct status dnat` and a set, no mark.
 * conditionsV4/V6 are raw iptables (or nft) match fragments spliced into rules; we do not splice
 * user text into our table, so a non-empty list is refused rather than silently ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/pod/pod-conf.h"
#include "portmap.h"

#define DEFAULT_MARK_BIT 13 /* the reference's: Kubernetes uses 14 and 15, Calico 20-31 */

/* Keys match exactly, as they always did here. */
static int conf_bool(CniRequest *req, const char *key, bool *ret) {
	return pod_conf_value_bool(req, key, json_object_get(req->config, key), ret);
}

static int conf_conditions(CniRequest *req, const char *key) {
	json_t *v = json_object_get(req->config, key), *e;
	_cleanup_free_ char *s = NULL;
	size_t i;

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return pod_conf_invalid(req, key, v, "must be a list of strings");
	json_array_foreach(v, i, e)
		if (!json_is_string(e))
			return pod_conf_invalid(req, key, v, "must be a list of strings");
	if (json_array_size(v) == 0)
		return 0;
	s = json_dumps(v, JSON_COMPACT);
	return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INVALID_NETCONF,
			"\"%s\" %s is not supported: weft programs nftables maps and does not splice match conditions into its rules",
			key, s ?: "?");
}

int portmap_parse_config(CniRequest *req, void *userdata) {
	PortmapConf *c = userdata;
	json_t *cfg = req->config, *v;
	int r;

	*c = (PortmapConf) { .snat = true, .mark_masq_bit = DEFAULT_MARK_BIT };

	if ((r = conf_bool(req, "snat", &c->snat)) < 0 || (r = conf_bool(req, "masqAll", &c->masq_all)) < 0)
		return r;

	v = json_object_get(cfg, "markMasqBit");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v))
			return pod_conf_invalid(req, "markMasqBit", v, "must be an integer");
		if (json_integer_value(v) < 0 || json_integer_value(v) > 31)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"invalid \"markMasqBit\": %lld (MasqMarkBit must be between 0 and 31)",
					(long long) json_integer_value(v));
		c->mark_masq_bit = (int) json_integer_value(v);
		c->has_mark_masq_bit = true;
	}
	v = json_object_get(cfg, "externalSetMarkChain");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return pod_conf_invalid(req, "externalSetMarkChain", v, "must be a string");
		c->has_external_set_mark_chain = true;
	}
	if (c->has_mark_masq_bit && c->has_external_set_mark_chain)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"Cannot specify \"externalSetMarkChain\" and \"markMasqBit\"");

	if ((r = conf_conditions(req, "conditionsV4")) < 0 || (r = conf_conditions(req, "conditionsV6")) < 0)
		return r;

	v = json_object_get(cfg, "backend");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return pod_conf_invalid(req, "backend", v, "must be a string");
		/* Both accepted: the rules land in nftables either way. "" = auto, as the reference. */
		if (!isempty(json_string_value(v)) && !streq(json_string_value(v), "iptables") &&
		    !streq(json_string_value(v), "nftables"))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"invalid \"backend\": \"%s\" (must be \"iptables\" or \"nftables\")",
					json_string_value(v));
	}
	return 0;
}
