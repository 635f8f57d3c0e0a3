/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/ipam/ipam-alloc.h"
#include "shared/ipam/ipam-host-local.h"
#include "shared/ipam/ipam-store.h"

/* Closes the store, first logging what its scan skipped: entries named like addresses that are
 * not reservations (a FIFO, a symlink...). Somebody put them there; the operator should know. */
static void store_closep(IpamStore **s) {
	char *const *skipped = ipam_store_skipped(*s);

	for (size_t i = 0; skipped && skipped[i]; i++)
		log_warning("host-local: ignoring %s: named like an address, but not a reservation", skipped[i]);
	*s = ipam_store_free(*s);
}

static int host_local_parse(CniRequest *req, void *userdata) {
	HostLocalConf *conf = userdata;
	IpamError err = {};
	int r;

	if (!req->ipam)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "IPAM config missing 'ipam' key");
	r = ipam_config_parse(req->ipam, req->rc_ip_ranges, req->name, req->version, &conf->ipam, &err);
	if (r == -ENOMEM)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");
	/* Only where addresses are handed out or judged: DEL and GC must still release what an
	 * older version allocated from a subnet we now refuse. */
	if (r >= 0 && req->command != CNI_CMD_DEL && req->command != CNI_CMD_GC)
		r = ipam_config_check_subnets(conf->ipam, &err);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INVALID_NETCONF, "%s", err.msg);
	return 0;
}

static void host_local_conf_done(void *userdata) {
	HostLocalConf *conf = userdata;

	conf->ipam = ipam_config_free(conf->ipam);
}

/*
 * A failure of the store itself (the filesystem), never to be confused with a full range: a full
 * disk (ENOSPC from writing the reservation) is reported as what it is, with the store's path.
 * Code 5 ("I/O failure") rather than 999 or 11: the spec has a code for exactly this, every other
 * store failure already uses it, and a full disk is not transient in the sense of 11 (nothing
 * clears it by waiting; the runtime retries a failed ADD anyway, whatever the code).
 */
static int store_fail(CniRequest *req, const IpamConfig *c, int r, const char *what) {
	return cni_fail(req, r, CNI_ERR_IO, "host-local: failed to %s in store %s/%s: %s", what, c->data_dir, c->name,
			strerror(-r));
}

typedef struct ReserveCtx {
	IpamStore *store;
	const char *cid, *ifname;
	unsigned set;
	int store_err; /* the store's own failure (ENOSPC, EIO...), kept apart from "range full" */
} ReserveCtx;

/* is_taken that claims: a cheap stat first (no fsync for addresses obviously in use), then
 * the exclusive create, which is the real arbiter. */
static int reserve_candidate(const IpAddr *a, size_t range_idx, void *userdata) {
	ReserveCtx *c = userdata;
	int r = ipam_store_is_reserved(c->store, a);

	if (r == 0) {
		r = ipam_store_reserve(c->store, a, c->cid, c->ifname, c->set);
		if (r == -EEXIST)
			return 1;
	}
	/* ipam_alloc_next() answers -ENOSPC for an exhausted range; the filesystem's ENOSPC (a
	 * full disk) must not pass for that, so the store's errors are remembered here. */
	if (r < 0)
		c->store_err = r;
	return r;
}

static int stat_candidate(const IpAddr *a, size_t range_idx, void *userdata) {
	return ipam_store_is_reserved(userdata, a);
}

/* Undoes this ADD: releases its reservations and puts the round-robin hints of the sets it
 * touched back, so a failed ADD leaves the store exactly as it found it. */
static void rollback_add(IpamStore *store, const IpAddr *ips, size_t n, const IpAddr *prev_last) {
	for (size_t i = 0; i < n; i++) {
		(void) ipam_store_release(store, &ips[i]);
		(void) ipam_store_set_last_reserved(store, (unsigned) i, &prev_last[i]);
	}
}

static int host_local_add(CniRequest *req, void *userdata, CniResult **ret) {
	HostLocalConf *conf = userdata;
	const IpamConfig *c = conf->ipam;
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_(store_closep) IpamStore *store = NULL;
	_cleanup_free_ IpAddr *got = NULL, *held = NULL, *prev_last = NULL;
	_cleanup_free_ ssize_t *want = NULL; /* requested IP index per set, -1 = none */
	size_t n_got = 0, n_held = 0;
	CniDns dns = {};
	IpamError err = {};
	char a[IP_ADDR_STRLEN], b[1024];
	int r;

	if (isempty(req->container_id) || isempty(req->ifname))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV,
				"host-local: CNI_CONTAINERID and CNI_IFNAME are required");

	if (c->resolv_conf) {
		r = ipam_resolv_conf_parse(c->resolv_conf, &dns);
		if (r < 0)
			return cni_fail(req, r, CNI_ERR_INVALID_NETCONF, "ipam.resolvConf: cannot read \"%s\": %s",
					c->resolv_conf, strerror(-r));
	}
	res = cni_result_new(req->version);
	if (!res || cni_dns_merge(&res->dns, &dns) < 0) {
		ipam_dns_done(&dns);
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	}
	ipam_dns_done(&dns);

	/* Every requested address goes to the one set that contains it; decided before touching
	 * the store, so a bad request leaves no trace. */
	want = malloc(sizeof(*want) * c->n_range_sets);
	got = calloc(c->n_range_sets, sizeof(*got));
	prev_last = calloc(c->n_range_sets, sizeof(*prev_last));
	if (!want || !got || !prev_last)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	r = ipam_alloc_assign_requested(c->range_sets, c->n_range_sets, req->req_ips, req->n_req_ips, want, &err);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "%s", err.msg);

	r = ipam_store_open(c->data_dir, c->name, 0, &store);
	if (r < 0)
		return store_fail(req, c, r, "open");
	/* SPEC: an attachment gets its addresses once. */
	r = ipam_store_get_by_id(store, req->container_id, req->ifname, false, &held, &n_held);
	if (r < 0)
		return store_fail(req, c, r, "look up reservations");

	for (size_t i = 0; i < c->n_range_sets; i++) {
		const IpamRangeSet *set = &c->range_sets[i];
		IpAddr ip = {};
		ssize_t ri;

		/* Read before reserving (which overwrites it): the hint and what rollback restores. */
		if (ipam_store_last_reserved(store, (unsigned) i, &prev_last[i]) < 0)
			prev_last[i] = (IpAddr) {};

		if (want[i] >= 0) {
			ip = req->req_ips[want[i]];
			r = ipam_store_reserve(store, &ip, req->container_id, req->ifname, (unsigned) i);
			if (r == -EEXIST) {
				r = cni_fail(req, r, CNI_ERR_INTERNAL,
					     "failed to allocate for range %zu: requested IP address %s is not available in range set %s",
					     i, ip_addr_to_string(&ip, a), ipam_range_set_to_string(set, b, sizeof(b)));
				goto rollback;
			}
			if (r < 0) {
				store_fail(req, c, r, "reserve an address");
				goto rollback;
			}
		} else {
			ReserveCtx ctx = {
				.store = store, .cid = req->container_id, .ifname = req->ifname, .set = (unsigned) i
			};

			for (size_t k = 0; k < n_held; k++)
				if (ipam_range_set_contains(set, &held[k])) {
					r = cni_fail(req, -EEXIST, CNI_ERR_INTERNAL,
						     "failed to allocate for range %zu: %s has been allocated to %s, duplicate allocation is not allowed",
						     i, ip_addr_to_string(&held[k], a), req->container_id);
					goto rollback;
				}
			/* A missing or garbled hint just restarts the round robin at the start. */
			r = ipam_alloc_next(set, &prev_last[i], reserve_candidate, &ctx, &ip, NULL);
			if (r < 0 && ctx.store_err < 0) {
				store_fail(req, c, ctx.store_err, "reserve an address");
				r = ctx.store_err;
				goto rollback;
			}
			if (r == -ENOSPC) {
				r = cni_fail(req, r, CNI_ERR_INTERNAL,
					     "failed to allocate for range %zu: no IP addresses available in range set: %s",
					     i, ipam_range_set_to_string(set, b, sizeof(b)));
				goto rollback;
			}
			if (r < 0) {
				store_fail(req, c, r, "reserve an address");
				goto rollback;
			}
		}
		got[n_got++] = ip;

		ri = ipam_range_set_find(set, &ip);
		IpPrefix p = { .addr = ip, .len = set->ranges[ri].subnet.len };
		if (cni_result_add_ip(res, &p, &set->ranges[ri].gateway, -1) < 0) {
			r = cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
			goto rollback;
		}
	}

	for (size_t i = 0; i < c->n_routes; i++)
		if (cni_result_add_route(res, &c->routes[i]) < 0) {
			r = cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
			goto rollback;
		}

	r = ipam_store_flush(store);
	(void) r; /* the index is a cache; a failed write is repaired by the next scan */
	*ret = TAKE_PTR(res);
	return 0;

rollback:
	rollback_add(store, got, n_got, prev_last);
	return r;
}

int host_local_release_store(CniRequest *req, const char *data_dir) {
	_cleanup_(store_closep) IpamStore *store = NULL;
	int r;

	if (isempty(req->container_id))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "host-local: CNI_CONTAINERID is required");
	r = ipam_store_open(data_dir, req->name, IPAM_STORE_NO_CREATE, &store);
	if (r == -ENOENT)
		return 0; /* nothing was ever allocated here */
	if (r >= 0)
		r = ipam_store_release_by_id(store, req->container_id, req->ifname ?: "");
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_IO, "host-local: failed to release addresses in store %s/%s: %s",
				data_dir, req->name, strerror(-r));
	return 0;
}

static int host_local_del(CniRequest *req, void *userdata) {
	HostLocalConf *conf = userdata;

	return host_local_release_store(req, conf->ipam->data_dir);
}

static int host_local_check(CniRequest *req, void *userdata) {
	HostLocalConf *conf = userdata;
	const IpamConfig *c = conf->ipam;
	_cleanup_(store_closep) IpamStore *store = NULL;
	_cleanup_free_ IpAddr *held = NULL;
	size_t n = 0;
	int r;

	r = ipam_store_open(c->data_dir, c->name, IPAM_STORE_NO_CREATE, &store);
	if (r >= 0)
		r = ipam_store_get_by_id(store, req->container_id ?: "", req->ifname ?: "", true, &held, &n);
	if (r < 0 && r != -ENOENT)
		return store_fail(req, c, r, "look up reservations");
	if (n == 0)
		return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL,
				"host-local: Failed to find address added by container %s (ifname %s) in %s/%s",
				req->container_id ?: "", req->ifname ?: "", c->data_dir, c->name);
	return 0;
}

static bool gc_keep(const IpamReservation *res, void *userdata) {
	const CniRequest *req = userdata;

	for (size_t i = 0; i < req->n_valid_attachments; i++) {
		const CniAttachment *at = &req->valid_attachments[i];

		/* Legacy files carry no ifname: any attachment of the container keeps them. */
		if (streq_ptr(at->container_id, res->container_id) &&
		    (!res->ifname || streq_ptr(at->ifname, res->ifname)))
			return true;
	}
	return false;
}

int host_local_gc_store(CniRequest *req, const char *data_dir) {
	_cleanup_(store_closep) IpamStore *store = NULL;
	int r;

	r = ipam_store_open(data_dir, req->name, IPAM_STORE_NO_CREATE, &store);
	if (r == -ENOENT)
		return 0;
	if (r >= 0)
		r = ipam_store_gc(store, gc_keep, req);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_IO, "host-local: failed to garbage-collect store %s/%s: %s", data_dir,
				req->name, strerror(-r));
	return 0;
}

static int host_local_gc(CniRequest *req, void *userdata) {
	HostLocalConf *conf = userdata;

	return host_local_gc_store(req, conf->ipam->data_dir);
}

static int host_local_status(CniRequest *req, void *userdata) {
	HostLocalConf *conf = userdata;
	const IpamConfig *c = conf->ipam;
	_cleanup_(store_closep) IpamStore *store = NULL;
	char b[1024];
	int r;

	r = ipam_store_open(c->data_dir, c->name, IPAM_STORE_NO_CREATE, &store);
	if (r == -ENOENT)
		return 0; /* empty store: everything is free */
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_PLUGIN_NOT_AVAILABLE, "host-local: cannot open store %s/%s: %s",
				c->data_dir, c->name, strerror(-r));
	for (size_t i = 0; i < c->n_range_sets; i++) {
		r = ipam_alloc_next(&c->range_sets[i], NULL, stat_candidate, store, NULL, NULL);
		if (r == -ENOSPC)
			return cni_fail(req, r, CNI_ERR_PLUGIN_NOT_AVAILABLE,
					"host-local: no IP addresses available in range set %zu: %s", i,
					ipam_range_set_to_string(&c->range_sets[i], b, sizeof(b)));
		if (r < 0)
			return cni_fail(req, r, CNI_ERR_PLUGIN_NOT_AVAILABLE, "host-local: cannot read store %s/%s: %s",
					c->data_dir, c->name, strerror(-r));
	}
	return 0;
}

const PluginOps host_local_ops = {
	.name = "host-local",
	.about = "CNI host-local IPAM plugin (weft)",
	.conf_size = sizeof(HostLocalConf),
	.parse = host_local_parse,
	.conf_done = host_local_conf_done,
	.add = host_local_add,
	.del = host_local_del,
	.check = host_local_check,
	.gc = host_local_gc,
	.status = host_local_status,
};
