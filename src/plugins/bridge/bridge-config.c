/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Config parsing for the bridge plugin. Every key of the reference plugin; types are as strict
 * as Go's encoding/json (a string where a bool belongs is an error), and every error is code 7
 * naming the key and the offending value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "bridge.h"
#include "shared/pod/pod-conf.h"

/* Keys match exactly (pod_conf_bool() & co. would also take another case). */
static int conf_bool(CniRequest *req, json_t *obj, const char *key, bool *ret) {
	return pod_conf_value_bool(req, key, json_object_get(obj, key), ret);
}

/* `name` is how the key is shown in errors (NULL: the key itself). */
static int conf_int(CniRequest *req, json_t *obj, const char *key, const char *name, json_int_t *ret, bool *ret_set) {
	return pod_conf_value_int(req, name ?: key, json_object_get(obj, key), ret, ret_set);
}

/* Bridge names: what the kernel's dev_valid_name() accepts. */
static bool bridge_name_valid(const char *s) {
	if (isempty(s) || strlen(s) >= IFNAMSIZ || streq(s, ".") || streq(s, ".."))
		return false;
	for (const char *c = s; *c; c++)
		if (*c == '/' || *c == ':' || (unsigned char) *c <= ' ' || *c == 0x7f)
			return false;
	return true;
}

static int parse_trunk(CniRequest *req, BridgeConf *c, json_t *arr) {
	_cleanup_free_ uint8_t *set = NULL;
	size_t i, n = 0;
	json_t *item;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return pod_conf_invalid(req, "vlanTrunk", arr,
					"must be a list of {\"id\"} or {\"minID\",\"maxID\"} objects");
	c->has_trunk = true;
	set = calloc(4095, 1);
	if (!set)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	json_array_foreach(arr, i, item) {
		json_int_t min = 0, max = 0, id = 0;
		bool has_min, has_max, has_id;
		char key[64];
		int r;

		if (!json_is_object(item)) {
			snprintf(key, sizeof(key), "vlanTrunk[%zu]", i);
			return pod_conf_invalid(req, key, item, "must be an object");
		}
		snprintf(key, sizeof(key), "vlanTrunk[%zu].minID", i);
		if ((r = conf_int(req, item, "minID", key, &min, &has_min)) < 0)
			return r;
		snprintf(key, sizeof(key), "vlanTrunk[%zu].maxID", i);
		if ((r = conf_int(req, item, "maxID", key, &max, &has_max)) < 0)
			return r;
		snprintf(key, sizeof(key), "vlanTrunk[%zu].id", i);
		if ((r = conf_int(req, item, "id", key, &id, &has_id)) < 0)
			return r;

		if (has_min && has_max) {
			if (min <= 0 || min > 4094)
				return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
						"incorrect trunk minID parameter: \"vlanTrunk\"[%zu].minID %lld (must be 1..4094)",
						i, (long long) min);
			if (max <= 0 || max > 4094)
				return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
						"incorrect trunk maxID parameter: \"vlanTrunk\"[%zu].maxID %lld (must be 1..4094)",
						i, (long long) max);
			if (max < min)
				return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
						"minID is greater than maxID in trunk parameter: \"vlanTrunk\"[%zu] %lld > %lld",
						i, (long long) min, (long long) max);
			for (json_int_t v = min; v <= max; v++)
				set[v] = 1;
		} else if (has_max)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"minID and maxID should be configured simultaneously, minID is missing in \"vlanTrunk\"[%zu]",
					i);
		else if (has_min)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"minID and maxID should be configured simultaneously, maxID is missing in \"vlanTrunk\"[%zu]",
					i);
		if (has_id) {
			if (id <= 0 || id > 4094)
				return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
						"incorrect trunk id parameter: \"vlanTrunk\"[%zu].id %lld (must be 1..4094)",
						i, (long long) id);
			set[id] = 1;
		}
	}

	for (unsigned v = 1; v <= 4094; v++)
		n += set[v];
	if (n == 0)
		return 0;
	c->trunk = calloc(n, sizeof(uint16_t));
	if (!c->trunk)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (unsigned v = 1; v <= 4094; v++)
		if (set[v])
			c->trunk[c->n_trunk++] = (uint16_t) v;
	return 0;
}

int bridge_parse_config(CniRequest *req, void *userdata) {
	BridgeConf *c = userdata;
	json_t *cfg = req->config, *v;
	json_int_t n;
	bool set;
	int r;

	*c = (BridgeConf) { .preserve_default_vlan = true };
	strcpy(c->br_name, BRIDGE_DEFAULT_NAME);

	v = json_object_get(cfg, "bridge");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return pod_conf_invalid(req, "bridge", v, "must be a string");
		if (!bridge_name_valid(json_string_value(v)))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"invalid \"bridge\": \"%s\" is not a valid interface name",
					json_string_value(v));
		strcpy(c->br_name, json_string_value(v));
	}

	if ((r = conf_bool(req, cfg, "isGateway", &c->is_gw)) < 0 ||
	    (r = conf_bool(req, cfg, "isDefaultGateway", &c->is_default_gw)) < 0 ||
	    (r = conf_bool(req, cfg, "forceAddress", &c->force_address)) < 0 ||
	    (r = conf_bool(req, cfg, "ipMasq", &c->ip_masq)) < 0 ||
	    (r = conf_bool(req, cfg, "hairpinMode", &c->hairpin)) < 0 ||
	    (r = conf_bool(req, cfg, "promiscMode", &c->promisc)) < 0 ||
	    (r = conf_bool(req, cfg, "preserveDefaultVlan", &c->preserve_default_vlan)) < 0 ||
	    (r = conf_bool(req, cfg, "macspoofchk", &c->macspoofchk)) < 0 ||
	    (r = conf_bool(req, cfg, "enabledad", &c->enable_dad)) < 0 ||
	    (r = conf_bool(req, cfg, "disableContainerInterface", &c->disable_container_iface)) < 0 ||
	    (r = conf_bool(req, cfg, "portIsolation", &c->port_isolation)) < 0)
		return r;
	if (c->is_default_gw)
		c->is_gw = true;

	if ((r = pod_conf_value_mtu(req, json_object_get(cfg, "mtu"), &c->mtu)) < 0)
		return r;

	if ((r = conf_int(req, cfg, "vlan", NULL, &n, &set)) < 0)
		return r;
	if (set && (n < 0 || n > 4094))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid VLAN ID %lld (\"vlan\" must be between 0 and 4094)", (long long) n);
	c->vlan = set ? (uint16_t) n : 0;

	r = parse_trunk(req, c, json_object_get(cfg, "vlanTrunk"));
	if (r < 0)
		return r;
	if (c->vlan > 0 && c->n_trunk > 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"cannot set \"vlan\" (%u) and \"vlanTrunk\" at the same time", c->vlan);

	if (c->hairpin && c->promisc)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"cannot set \"hairpinMode\" and \"promiscMode\" at the same time");

	c->is_layer3 = pod_conf_has_ipam(req);
	if (c->disable_container_iface && c->is_layer3)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"cannot use IPAM (\"ipam\" type \"%s\") when \"disableContainerInterface\" is set",
				json_string_value(json_object_get(req->ipam, "type")));

	if (!isempty(req->req_mac)) {
		r = ether_addr_parse(req->req_mac, c->mac);
		if (r < 0) {
			/* CNI_ARGS problems are the environment's (code 4), config ones code 7. */
			bool from_env = streq_ptr(req->args.mac, req->req_mac);
			return cni_fail(req, -EINVAL, from_env ? CNI_ERR_INVALID_ENV : CNI_ERR_INVALID_NETCONF,
					"invalid MAC address \"%s\" (%s)", req->req_mac,
					from_env ? "CNI_ARGS MAC" : "args.cni.mac / runtimeConfig.mac");
		}
		c->has_mac = true;
	}
	return 0;
}

void bridge_conf_done(void *userdata) {
	BridgeConf *c = userdata;

	c->trunk = mfree(c->trunk);
	c->n_trunk = 0;
}
