/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The etcd datastore. Layout under the prefix (default /weft/network):
 *
 *   <prefix>/config                 the cluster network config JSON (network-config.h)
 *   <prefix>/subnets/10.244.3.0-24  {"node": "n1", "publicIP": "192.0.2.1", "backend": "vxlan",
 *                                    "vtepMAC": "aa:bb:cc:dd:ee:ff", "subnet6": "fd00:0:0:3::/64"}
 *
 * Each subnet key is attached to an etcd lease of lease_ttl_sec that this node keeps alive from
 * dispatch() every TTL/3; when a node dies its key expires and watchers see a DELETE. Allocation is
 * a txn "create only if the key does not exist", so concurrent nodes never share a subnet.
 *
 * Everything after start-up is non-blocking: renewals and the watch are transfers on the client's
 * curl multi handle, and our own timers (renewal, watch retry) are the client's wakeup.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "daemon/datastore/datastore.h"
#include "daemon/wireguard/wg-key.h"
#include "shared/client/etcd-client.h"

#define DEFAULT_PREFIX "/weft/network"
#define DEFAULT_TTL_SEC 60
#define WATCH_BACKOFF_MIN_MS 100u
#define WATCH_BACKOFF_MAX_MS 2000u
#define RENEW_RETRY_MIN_MS 250u
#define RENEW_RETRY_MAX_MS 2000u
#define ACQUIRE_MAX_ATTEMPTS 3

typedef struct CachedLease {
	char *key;
	NodeLease lease;
} CachedLease;

typedef enum RenewState {
	RENEW_IDLE,
	RENEW_KEEPALIVE, /* keepalive in flight */
	RENEW_GRANT,     /* lease expired: granting a new one */
	RENEW_PUT,       /* re-creating our key on the new lease */
} RenewState;

typedef enum WatchState {
	WATCH_OFF,
	WATCH_RANGE,   /* listing everything (for RESYNC) */
	WATCH_STREAM,  /* streaming deltas */
	WATCH_BACKOFF, /* waiting to retry */
} WatchState;

struct Datastore {
	EtcdClient *client;
	char *prefix;         /* no trailing '/' */
	char *subnets_prefix; /* <prefix>/subnets/ */
	char *subnets_end;
	int ttl_sec;
	IpAddr subnet_min, subnet_max;
	IpPrefix network6; /* dual-stack: AF_UNSPEC = off */
	unsigned subnet_len6;
	char error[512];

	/* Our lease. */
	bool have_lease;
	NodeLease self;
	char *key;
	char *value;
	int64_t lease_id;
	int64_t granted_ttl;
	RenewState renew_state;
	EtcdRequest *renew_req;
	uint64_t renew_at;
	unsigned renew_failures;
	int pending_error;
	bool lost_key;         /* our key vanished from the store: being put back */
	uint64_t settle_until; /* after putting it back: no RESYNC before this (others re-create theirs) */

	/* The watch. */
	DatastoreEventFn cb;
	void *userdata;
	WatchState watch_state;
	EtcdRequest *watch_req;
	uint64_t watch_retry_at;
	unsigned watch_backoff_ms;
	bool connected;
	CachedLease *cache;
	size_t n_cache;
};

static void ds_set_error(Datastore *d, int r, const char *what) {
	snprintf(d->error, sizeof(d->error), "%s: %s (%s)", what, etcd_client_last_error(d->client), strerror(-r));
}

static const char *etcd_last_error(Datastore *d) {
	return d ? d->error : "";
}

static void update_wakeup(Datastore *d) {
	uint64_t w = d->renew_at;

	if (d->watch_retry_at && (!w || d->watch_retry_at < w))
		w = d->watch_retry_at;
	etcd_client_set_wakeup(d->client, w);
}

/* ---- lease (de)serialization ---- */

/* For messages only: a prefix as text in a rotating static buffer. */
static const char *pstr6(const IpPrefix *p) {
	static char buf[2][IP_PREFIX_STRLEN];
	static unsigned i;

	return ip_prefix_to_string(p, buf[i++ % 2]);
}

static char *subnet_key(Datastore *d, const IpPrefix *p) {
	char a[IP_ADDR_STRLEN];

	return strdup_printf("%s%s-%u", d->subnets_prefix, ip_addr_to_string(&p->addr, a), p->len);
}

/* "<subnets_prefix>10.244.3.0-24" -> 10.244.3.0/24 (host bits kept: the caller checks them). */
static int subnet_from_key(const char *subnets_prefix, const char *key, IpPrefix *ret) {
	const char *s = startswith(key, subnets_prefix), *dash;
	char buf[IP_ADDR_STRLEN];
	unsigned len;
	IpPrefix p = {};

	if (!s)
		return -EINVAL;
	dash = strrchr(s, '-');
	if (!dash || (size_t) (dash - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, (size_t) (dash - s));
	buf[dash - s] = 0;
	if (ip_addr_parse(buf, &p.addr) < 0 || safe_atou32(dash + 1, &len) < 0 || len > ip_family_bits(p.addr.family))
		return -EINVAL;
	p.len = (uint8_t) len;
	*ret = p;
	return 0;
}

static char *lease_to_json(const NodeLease *l) {
	char a[IP_PREFIX_STRLEN], mac[18];
	json_t *o = json_object();
	char *s;

	if (!o)
		return NULL;
	json_object_set_new(o, "node", json_string(l->node_name));
	if (ip_addr_is_set(&l->public_ip))
		json_object_set_new(o, "publicIP", json_string(ip_addr_to_string(&l->public_ip, a)));
	if (l->public_ip6.family == AF_INET6)
		json_object_set_new(o, "publicIPv6", json_string(ip_addr_to_string(&l->public_ip6, a)));
	if (l->backend[0])
		json_object_set_new(o, "backend", json_string(l->backend));
	if (l->has_vtep_mac)
		json_object_set_new(o, "vtepMAC", json_string(ether_addr_format(l->vtep_mac, mac)));
	if (l->has_public_key) {
		char key[WG_KEY_B64_LEN + 1];
		WgKey k;

		memcpy(k.b, l->public_key, WG_KEY_LEN);
		wg_key_to_base64(&k, key);
		json_object_set_new(o, "publicKey", json_string(key));
	}
	if (l->subnet6.addr.family == AF_INET6)
		json_object_set_new(o, "subnet6", json_string(ip_prefix_to_string(&l->subnet6, a)));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

static void set_invalid(NodeLease *l, LeaseReject why, const char *detail) {
	if (l->invalid == LEASE_ACCEPTED) {
		l->invalid = why;
		l->invalid_detail = detail;
	}
}

/* The one place a stored key/value becomes a NodeLease. The key alone is enough (DELETE events
 * carry no value). Everything wrong with the value is recorded in ->invalid, for the filter. */
int datastore_etcd_lease_parse(const char *subnets_prefix, const char *key, const char *value, NodeLease *ret) {
	NodeLease l = {};
	json_t *o, *v;

	if (!subnets_prefix || !key || !startswith(key, subnets_prefix))
		return -EINVAL;
	if (subnet_from_key(subnets_prefix, key, &l.subnet) < 0) {
		l.subnet = (IpPrefix) {};
		set_invalid(&l, LEASE_REJECT_MALFORMED, "the key is not <prefix>/subnets/<network address>-<length>");
	} else {
		IpPrefix m = ip_prefix_mask(&l.subnet);
		if (!ip_prefix_equal(&m, &l.subnet))
			/* 10.244.3.5-24 would be a second key for 10.244.3.0-24 */
			set_invalid(&l, LEASE_REJECT_MALFORMED,
				    "the key's address is not the network address of its subnet");
	}
	if (value && *value) {
		o = json_loads(value, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(o)) {
			json_decref(o);
			set_invalid(&l, LEASE_REJECT_MALFORMED, "the value is not a JSON object");
			*ret = l;
			return 0;
		}
		v = json_object_get(o, "node");
		if (json_is_string(v) && json_string_length(v) <= NODE_NAME_MAX &&
		    strlen(json_string_value(v)) == json_string_length(v)) {
			if (node_lease_set_name(&l, json_string_value(v)) < 0) {
				json_decref(o);
				return -ENOMEM;
			}
		} else
			set_invalid(&l, LEASE_REJECT_NODE_NAME,
				    json_is_string(v) ? "\"node\" is longer than 253 characters (or holds a NUL)"
						      : "\"node\" is missing or not a string");
		v = json_object_get(o, "publicIP");
		if (!json_is_string(v) || ip_addr_parse(json_string_value(v), &l.public_ip) < 0) {
			l.public_ip = (IpAddr) {};
			set_invalid(&l, LEASE_REJECT_PUBLIC_IP, "\"publicIP\" is missing or not an IP address");
		}
		v = json_object_get(o, "publicIPv6");
		if (v && (!json_is_string(v) || ip_addr_parse(json_string_value(v), &l.public_ip6) < 0 ||
			  l.public_ip6.family != AF_INET6)) {
			l.public_ip6 = (IpAddr) {};
			set_invalid(&l, LEASE_REJECT_PUBLIC_IP, "\"publicIPv6\" is not an IPv6 address");
		}
		v = json_object_get(o, "backend");
		if (json_is_string(v)) {
			if (json_string_length(v) < sizeof(l.backend))
				snprintf(l.backend, sizeof(l.backend), "%s", json_string_value(v));
			else
				set_invalid(&l, LEASE_REJECT_MALFORMED, "\"backend\" is not a backend name");
		}
		v = json_object_get(o, "vtepMAC");
		if (v) {
			if (json_is_string(v) && ether_addr_parse(json_string_value(v), l.vtep_mac) >= 0)
				l.has_vtep_mac = true;
			else
				set_invalid(&l, LEASE_REJECT_VTEP_MAC, "\"vtepMAC\" is not a MAC address");
		}
		v = json_object_get(o, "publicKey");
		if (v) {
			if (json_is_string(v) && lease_public_key_parse(json_string_value(v), &l) >= 0)
				l.has_public_key = true;
			else
				set_invalid(&l, LEASE_REJECT_PUBLIC_KEY,
					    "\"publicKey\" is not a WireGuard key (32 bytes of base64)");
		}
		v = json_object_get(o, "subnet6");
		if (v && (!json_is_string(v) || ip_prefix_parse(json_string_value(v), &l.subnet6) < 0 ||
			  l.subnet6.addr.family != AF_INET6)) {
			l.subnet6 = (IpPrefix) {};
			set_invalid(&l, LEASE_REJECT_MALFORMED, "\"subnet6\" is not an IPv6 prefix");
		}
		json_decref(o);
	}
	*ret = l;
	return 0;
}

static int lease_from_kv(Datastore *d, const char *key, const char *value, NodeLease *ret) {
	return datastore_etcd_lease_parse(d->subnets_prefix, key, value, ret);
}

/* ---- the cache behind RESYNC and DELETE events ---- */

static void cache_clear(Datastore *d) {
	for (size_t i = 0; i < d->n_cache; i++) {
		free(d->cache[i].key);
		node_lease_done(&d->cache[i].lease);
	}
	d->cache = mfree(d->cache);
	d->n_cache = 0;
}

static CachedLease *cache_find(Datastore *d, const char *key) {
	for (size_t i = 0; i < d->n_cache; i++)
		if (streq(d->cache[i].key, key))
			return &d->cache[i];
	return NULL;
}

/* Stores *l under key, taking over what it owns (also on failure: *l is released then). */
static int cache_put(Datastore *d, const char *key, NodeLease *l, const NodeLease **ret) {
	CachedLease *c = cache_find(d, key), *n;

	if (!c) {
		char *k = strdup(key);

		if (!k) {
			node_lease_done(l);
			return -ENOMEM;
		}
		n = realloc(d->cache, (d->n_cache + 1) * sizeof(CachedLease));
		if (!n) {
			free(k);
			node_lease_done(l);
			return -ENOMEM;
		}
		d->cache = n;
		c = &d->cache[d->n_cache++];
		c->key = k;
		c->lease = (NodeLease) {};
	}
	node_lease_done(&c->lease);
	c->lease = *l;
	*l = (NodeLease) {};
	c->lease.key = c->key; /* strings do not move when the array does */
	*ret = &c->lease;
	return 0;
}

/* Drops the entry; its lease (and what it owns) is the caller's now, in c->lease before the call. */
static void cache_remove(Datastore *d, CachedLease *c) {
	free(c->key);
	*c = d->cache[--d->n_cache];
}

static void emit(Datastore *d, const DatastoreEvent *ev) {
	if (d->cb)
		d->cb(ev, d->userdata);
}

static void set_connected(Datastore *d, bool connected) {
	if (d->connected == connected)
		return;
	d->connected = connected;
	if (connected)
		log_info("etcd: connected to %s", etcd_client_current_endpoint(d->client));
	else
		log_warning("etcd: lost connection: %s", d->error);
	emit(d, &(DatastoreEvent) { .type = DS_EVENT_CONNECTION, .connected = connected });
}

/* ---- watch ---- */

static void watch_start_range(Datastore *d);
static void renew_lost(Datastore *d, const EtcdKv *holder);

/* How long after putting our key back no list is trusted: by then every live node has noticed
 * (its keepalive runs every TTL/3) and put its own key back. */
static uint64_t settle_usec(Datastore *d) {
	return (uint64_t) MAX(d->granted_ttl, (int64_t) 1) * 1000000u / 3 + 1000000u;
}

/* Our key is not in the store (deleted by hand, or the store was wiped): put the same subnet back
 * at once, create-if-absent, so nobody else is given it meanwhile. */
static void own_key_missing(Datastore *d, const char *why) {
	if (!d->have_lease || d->lost_key)
		return;
	log_warning("etcd: our subnet key %s %s: putting it back (keeping what is programmed)", d->key, why);
	d->lost_key = true;
	etcd_request_cancel(TAKE_PTR(d->renew_req));
	/* Not from here: this runs inside curl's callbacks, where no transfer may be started.
	 * dispatch() starts the put right after. */
	d->renew_state = RENEW_PUT;
	d->renew_at = etcd_now_usec();
	update_wakeup(d);
}

static void watch_failed(Datastore *d, int r) {
	d->watch_req = NULL;
	ds_set_error(d, r, "watch");
	/* A compacted or cancelled watch is not a lost connection: just list again. */
	if (r != -ERANGE && r != -ECANCELED)
		set_connected(d, false);
	d->watch_state = WATCH_BACKOFF;
	d->watch_retry_at = etcd_now_usec() + (uint64_t) d->watch_backoff_ms * 1000u;
	d->watch_backoff_ms = MIN(d->watch_backoff_ms * 2, WATCH_BACKOFF_MAX_MS);
	update_wakeup(d);
}

/* Our key holds another node's lease (overwritten): the lease is lost, reported through
 * renew_lost(). Checked on every watch event and on every list, since an overwrite that lands
 * while the watch is down or listing again shows only in the next list, never as an event. */
static bool own_key_taken(Datastore *d, const EtcdKv *kv) {
	_cleanup_(node_lease_done) NodeLease l = {};

	if (!d->have_lease || !d->key || !streq(kv->key, d->key))
		return false;
	if (lease_from_kv(d, kv->key, kv->value, &l) >= 0 && streq_ptr(l.node_name, d->self.node_name))
		return false;
	renew_lost(d, kv);
	return true;
}

static void handle_watch_event(Datastore *d, const json_t *ev) {
	const json_t *type = json_object_get(ev, "type");
	bool del = json_is_string(type) && streq(json_string_value(type), "DELETE");
	_cleanup_(etcd_kv_done) EtcdKv kv = {};
	_cleanup_(node_lease_done) NodeLease l = {};

	if (etcd_kv_decode(json_object_get(ev, "kv"), &kv) < 0)
		return;

	if (del && d->have_lease && d->key && streq(kv.key, d->key)) {
		own_key_missing(d, "was deleted");
		return;
	}
	if (!del && own_key_taken(d, &kv))
		return;

	if (del) {
		CachedLease *c = cache_find(d, kv.key);

		if (c) {
			l = c->lease; /* ours to release now */
			cache_remove(d, c);
			l.key = kv.key; /* the cache's copy is gone */
		} else if (lease_from_kv(d, kv.key, NULL, &l) < 0)
			return;
		else
			l.key = kv.key;
		emit(d, &(DatastoreEvent) { .type = DS_EVENT_NODE_DELETE, .node = &l });
	} else {
		const NodeLease *stored;

		if (lease_from_kv(d, kv.key, kv.value, &l) < 0)
			return; /* not under our prefix: cannot happen with our watch range */
		l.created = kv.create_revision;
		if (cache_put(d, kv.key, &l, &stored) < 0)
			return;
		emit(d, &(DatastoreEvent) { .type = DS_EVENT_NODE_UPSERT, .node = stored });
	}
}

static int on_watch_message(EtcdClient *c, json_t *msg, void *userdata) {
	Datastore *d = userdata;
	const json_t *res = json_object_get(msg, "result"), *evs;
	size_t i;
	json_t *ev;

	if (!json_is_object(res))
		return -EIO;
	if (json_is_true(json_object_get(res, "canceled"))) {
		/* Compacted past our start revision, or the server cancelled: list everything again. */
		return etcd_json_int64(res, "compact_revision") > 0 ? -ERANGE : -ECANCELED;
	}
	if (json_is_true(json_object_get(res, "created")))
		d->watch_backoff_ms = WATCH_BACKOFF_MIN_MS;
	evs = json_object_get(res, "events");
	json_array_foreach(evs, i, ev)
		handle_watch_event(d, ev);
	return 0;
}

static void on_watch_done(EtcdClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;

	watch_failed(d, error < 0 ? error : -ECONNRESET);
}

static void on_range_done(EtcdClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;
	EtcdKv *kvs = NULL;
	NodeLease *list = NULL;
	size_t n = 0, n_list = 0;
	int64_t rev = 0;
	json_t *req;
	int r;

	d->watch_req = NULL;
	r = error < 0 ? error : etcd_range_parse(resp, &kvs, &n, &rev);
	if (r < 0) {
		watch_failed(d, r);
		return;
	}

	cache_clear(d);
	list = calloc(MAX(n, (size_t) 1), sizeof(NodeLease));
	if (!list) {
		etcd_kvs_free(kvs, n);
		watch_failed(d, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const NodeLease *stored;
		NodeLease l;

		if (own_key_taken(d, &kvs[i]))
			continue;
		if (lease_from_kv(d, kvs[i].key, kvs[i].value, &l) < 0)
			continue;
		l.created = kvs[i].create_revision;
		if (cache_put(d, kvs[i].key, &l, &stored) < 0)
			continue;
		list[n_list++] = *stored; /* a view: the cache owns the name */
	}
	etcd_kvs_free(kvs, n);

	set_connected(d, true);
	/*
	 * A list without our own key comes from a store that lost its data (wiped, or restored from
	 * an old snapshot): the other nodes' keys are missing too until they put them back. Pruning
	 * against it would cut this node off everyone for a while. Put ours back, wait until the
	 * others have had time to do the same, and list again; until then nothing changes here.
	 */
	if (d->have_lease && d->key && (!cache_find(d, d->key) || etcd_now_usec() < d->settle_until)) {
		uint64_t at = etcd_now_usec() + 500000u;

		if (!cache_find(d, d->key))
			own_key_missing(d, "is missing from the store (wiped or restored?)");
		if (d->settle_until > at)
			at = d->settle_until;
		log_debug("etcd: not trusting this list of %zu leases yet; listing again in %.1f s", n_list,
			  (double) (at - etcd_now_usec()) / 1e6);
		free(list);
		d->watch_state = WATCH_BACKOFF;
		d->watch_retry_at = at;
		update_wakeup(d);
		return;
	}
	emit(d, &(DatastoreEvent) { .type = DS_EVENT_RESYNC, .nodes = list, .n_nodes = n_list });
	free(list);
	if (d->watch_state != WATCH_RANGE) /* the callback stopped us */
		return;

	req = json_pack("{s:{s:o, s:o, s:o, s:b}}", "create_request", "key",
			etcd_json_bytes(d->subnets_prefix, strlen(d->subnets_prefix)), "range_end",
			etcd_json_bytes(d->subnets_end, strlen(d->subnets_end)), "start_revision",
			etcd_json_int64_new(rev + 1), "prev_kv", 1);
	if (!req) {
		watch_failed(d, -ENOMEM);
		return;
	}
	d->watch_state = WATCH_STREAM;
	r = etcd_client_stream(d->client, "/v3/watch", req, on_watch_message, on_watch_done, d, &d->watch_req);
	json_decref(req);
	if (r < 0)
		watch_failed(d, r);
}

static void watch_start_range(Datastore *d) {
	json_t *req = etcd_range_request(d->subnets_prefix, d->subnets_end);
	int r;

	d->watch_state = WATCH_RANGE;
	d->watch_retry_at = 0;
	if (!req) {
		watch_failed(d, -ENOMEM);
		return;
	}
	r = etcd_client_call_async(d->client, "/v3/kv/range", req, on_range_done, d, &d->watch_req);
	json_decref(req);
	if (r < 0)
		watch_failed(d, r);
}

static int etcd_watch(Datastore *d, DatastoreEventFn cb, void *userdata) {
	if (!d || !cb)
		return -EINVAL;
	etcd_request_cancel(TAKE_PTR(d->watch_req));
	d->cb = cb;
	d->userdata = userdata;
	d->watch_backoff_ms = WATCH_BACKOFF_MIN_MS;
	watch_start_range(d);
	update_wakeup(d);
	return 0;
}

/* ---- renewal ---- */

static void renew_start(Datastore *d);

static void renew_schedule(Datastore *d, uint64_t delay_usec) {
	d->renew_state = RENEW_IDLE;
	d->renew_req = NULL;
	d->renew_at = etcd_now_usec() + delay_usec;
	update_wakeup(d);
}

static void renew_ok(Datastore *d, int64_t ttl) {
	if (ttl > 0)
		d->granted_ttl = ttl;
	d->self.expiration = (int64_t) time(NULL) + d->granted_ttl;
	if (d->renew_failures > 0)
		log_info("etcd: lease for %s renewed again", d->key);
	d->renew_failures = 0;
	renew_schedule(d, (uint64_t) MAX(d->granted_ttl, (int64_t) 1) * 1000000u / 3);
}

static void renew_failed(Datastore *d, int r, const char *what) {
	unsigned ms = MIN(RENEW_RETRY_MIN_MS << MIN(d->renew_failures, 4u), RENEW_RETRY_MAX_MS);

	ds_set_error(d, r, what);
	if (d->renew_failures++ == 0)
		log_warning("etcd: %s", d->error);
	/* Keep the state: a failed grant/put is retried as such, not as a keepalive. */
	d->renew_req = NULL;
	d->renew_at = etcd_now_usec() + (uint64_t) ms * 1000u;
	update_wakeup(d);
}

static void renew_lost(Datastore *d, const EtcdKv *holder) {
	_cleanup_(node_lease_done) NodeLease other = {};

	(void) lease_from_kv(d, holder->key, holder->value, &other);
	snprintf(d->error, sizeof(d->error), "our subnet key %s is held by node \"%s\" now", d->key,
		 other.node_name ?: "");
	log_error("etcd: %s", d->error);
	d->have_lease = false;
	d->lost_key = false;
	d->renew_state = RENEW_IDLE;
	etcd_request_cancel(TAKE_PTR(d->renew_req));
	d->renew_at = 0;
	d->pending_error = -EADDRINUSE;
	update_wakeup(d);
}

static void renew_grant(Datastore *d);
static void renew_put(Datastore *d, const char *target, int64_t rev);

static void on_put_done(EtcdClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;
	_cleanup_(etcd_kv_done) EtcdKv existing = {};
	bool ok = false;
	int r;

	d->renew_req = NULL;
	r = error < 0 ? error : etcd_txn_parse(resp, &ok, &existing);
	if (r == -ENOENT) {
		/* "requested lease not found": the store lost our lease too (wiped): get a new one */
		log_info("etcd: our lease %" PRIx64 " is gone as well; granting a new one", (uint64_t) d->lease_id);
		return renew_grant(d);
	}
	if (r < 0)
		return renew_failed(d, r, "re-creating our subnet key");
	if (ok || existing.lease == d->lease_id) {
		log_info("etcd: re-created %s (lease %" PRIx64 ")", d->key, (uint64_t) d->lease_id);
		d->lost_key = false;
		d->settle_until = etcd_now_usec() + settle_usec(d);
		emit(d, &(DatastoreEvent) { .type = DS_EVENT_SELF_RECREATED });
		return renew_ok(d, 0);
	}
	if (!existing.key) /* gone between our txn's compare and read: try again */
		return renew_put(d, "CREATE", 0);
	{
		_cleanup_(node_lease_done) NodeLease other = {};

		if (lease_from_kv(d, existing.key, existing.value, &other) >= 0 &&
		    streq_ptr(other.node_name, d->self.node_name))
			/* Still ours (e.g. written by our previous incarnation): move it to our lease. */
			return renew_put(d, "MOD", existing.mod_revision);
	}
	renew_lost(d, &existing);
}

static void renew_put(Datastore *d, const char *target, int64_t rev) {
	json_t *req = etcd_txn_put_if_request(d->key, target, rev, d->value, d->lease_id);
	int r;

	d->renew_state = RENEW_PUT;
	if (!req)
		return renew_failed(d, -ENOMEM, "re-creating our subnet key");
	r = etcd_client_call_async(d->client, "/v3/kv/txn", req, on_put_done, d, &d->renew_req);
	json_decref(req);
	if (r < 0)
		renew_failed(d, r, "re-creating our subnet key");
}

static void on_grant_done(EtcdClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;
	int64_t id;

	d->renew_req = NULL;
	if (error < 0)
		return renew_failed(d, error, "granting a new lease");
	id = etcd_json_int64(resp, "ID");
	if (id == 0)
		return renew_failed(d, -EIO, "granting a new lease");
	d->lease_id = id;
	d->granted_ttl = etcd_json_int64(resp, "TTL") ?: d->ttl_sec;
	renew_put(d, "CREATE", 0);
}

static void renew_grant(Datastore *d) {
	json_t *req = json_pack("{s:o}", "TTL", etcd_json_int64_new(d->ttl_sec));
	int r;

	d->renew_state = RENEW_GRANT;
	if (!req)
		return renew_failed(d, -ENOMEM, "granting a new lease");
	r = etcd_client_call_async(d->client, "/v3/lease/grant", req, on_grant_done, d, &d->renew_req);
	json_decref(req);
	if (r < 0)
		renew_failed(d, r, "granting a new lease");
}

static void on_keepalive_done(EtcdClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;
	int64_t ttl = 0;
	int r;

	d->renew_req = NULL;
	r = error < 0 ? error : etcd_lease_keepalive_parse(resp, &ttl);
	if (r == -ENOENT)
		ttl = 0;
	else if (r < 0)
		return renew_failed(d, r, "renewing our lease");
	if (ttl > 0)
		return renew_ok(d, ttl);

	/* The lease expired (etcd was away longer than the TTL), taking our key with it. Get a new
	 * lease and put the SAME subnet back: switching subnets under running pods is never right. */
	log_warning("etcd: lease %" PRIx64 " for %s expired; re-creating it", (uint64_t) d->lease_id, d->key);
	renew_grant(d);
}

static void renew_start(Datastore *d) {
	json_t *req;
	int r;

	d->renew_at = 0;
	if (!d->have_lease)
		return;
	switch (d->renew_state) {
	case RENEW_GRANT: return renew_grant(d);
	case RENEW_PUT: return renew_put(d, "CREATE", 0);
	default: break;
	}
	d->renew_state = RENEW_KEEPALIVE;
	req = json_pack("{s:o}", "ID", etcd_json_int64_new(d->lease_id));
	if (!req)
		return renew_failed(d, -ENOMEM, "renewing our lease");
	r = etcd_client_call_async(d->client, "/v3/lease/keepalive", req, on_keepalive_done, d, &d->renew_req);
	json_decref(req);
	if (r < 0)
		renew_failed(d, r, "renewing our lease");
}

/* ---- lifecycle ---- */

static Datastore *etcd_free(Datastore *d) {
	if (!d)
		return NULL;
	/* Requests reference d as userdata: drop them with the client, before d. */
	d->client = etcd_client_free(d->client);
	cache_clear(d);
	node_lease_done(&d->self);
	free(d->prefix);
	free(d->subnets_prefix);
	free(d->subnets_end);
	free(d->key);
	free(d->value);
	free(d);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Datastore *, etcd_free);

static int etcd_open(const DatastoreConfig *cfg, Datastore **ret) {
	_cleanup_(etcd_freep) Datastore *d = NULL;
	const char *prefix;
	size_t n;
	int r;

	if (!cfg || isempty(cfg->endpoints))
		return -EINVAL;
	prefix = isempty(cfg->prefix) ? DEFAULT_PREFIX : cfg->prefix;
	if (prefix[0] != '/')
		return -EINVAL;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->connected = true;
	d->ttl_sec = cfg->lease_ttl_sec > 0 ? cfg->lease_ttl_sec : DEFAULT_TTL_SEC;
	n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	d->prefix = strndup(prefix, n);
	if (!d->prefix)
		return -ENOMEM;
	d->subnets_prefix = strdup_printf("%s/subnets/", streq(d->prefix, "/") ? "" : d->prefix);
	if (!d->subnets_prefix)
		return -ENOMEM;
	d->subnets_end = etcd_prefix_range_end(d->subnets_prefix);
	if (!d->subnets_end)
		return -ENOMEM;

	r = etcd_client_new(cfg->endpoints, &d->client);
	if (r < 0) {
		snprintf(d->error, sizeof(d->error), "invalid etcd endpoints \"%s\"", cfg->endpoints);
		return r;
	}

	/* Fail early (and with a useful message) if no endpoint answers. */
	r = etcd_range(d->client, d->prefix, NULL, NULL, NULL, NULL);
	if (r < 0) {
		ds_set_error(d, r, "connecting to etcd");
		/* What etcd answers is retried; -EINVAL from open() means a configuration error. */
		return r == -EINVAL ? -EIO : r;
	}

	*ret = TAKE_PTR(d);
	return 0;
}

static int etcd_get_network_config(Datastore *d, char **ret_json) {
	_cleanup_free_ char *key = strdup_printf("%s/config", streq(d->prefix, "/") ? "" : d->prefix);
	EtcdKv *kvs = NULL;
	size_t n = 0;
	char *s;
	int r;

	if (!key)
		return -ENOMEM;
	r = etcd_range(d->client, key, NULL, &kvs, &n, NULL);
	if (r < 0) {
		ds_set_error(d, r, "reading the network config");
		return r;
	}
	if (n == 0) {
		snprintf(d->error, sizeof(d->error), "no network config at %s", key);
		return -ENOENT;
	}
	s = TAKE_PTR(kvs[0].value);
	etcd_kvs_free(kvs, n);
	*ret_json = s;
	return 0;
}

static int etcd_set_subnet_range(Datastore *d, const IpAddr *min, const IpAddr *max) {
	d->subnet_min = min ? *min : (IpAddr) {};
	d->subnet_max = max ? *max : (IpAddr) {};
	return 0;
}

static int etcd_set_network6(Datastore *d, const IpPrefix *network6, unsigned subnet_len6) {
	if (!network6) {
		d->network6 = (IpPrefix) {};
		return 0;
	}
	if (network6->addr.family != AF_INET6 || subnet_len6 < network6->len || subnet_len6 > 128)
		return -EINVAL;
	d->network6 = ip_prefix_mask(network6);
	d->subnet_len6 = subnet_len6;
	return 0;
}

/* ---- acquire ---- */

/* The IPv6 subnet paired with IPv4 subnet p of network: same index. */
static int subnet6_for(Datastore *d, const IpPrefix *network, const IpPrefix *p, IpPrefix *ret) {
	IpPrefix base = ip_prefix_mask(network), r6 = d->network6;
	unsigned index_bits6 = d->subnet_len6 - d->network6.len, shift = 128 - d->subnet_len6;
	uint64_t idx;

	if (p->addr.family != AF_INET)
		return -EINVAL;
	idx = (uint64_t) (ntohl(p->addr.in.s_addr) - ntohl(base.addr.in.s_addr)) >> (32 - p->len);
	if (index_bits6 < 64 && idx >> index_bits6)
		return -ENOSPC;
	for (unsigned k = 0; k < 64 && (idx >> k); k++)
		if ((idx >> k) & 1) {
			unsigned bit = shift + k; /* counted from the least significant end */
			r6.addr.bytes[15 - bit / 8] |= (uint8_t) (1u << (bit % 8));
		}
	r6.len = (uint8_t) d->subnet_len6;
	*ret = r6;
	return 0;
}

typedef struct Existing {
	EtcdKv *kvs;
	size_t n;
	NodeLease *leases; /* parsed; subnet.addr.family AF_UNSPEC if unparseable */
} Existing;

static void existing_done(Existing *e) {
	node_leases_free(e->leases, e->n);
	etcd_kvs_free(e->kvs, e->n);
	*e = (Existing) {};
}

static int existing_load(Datastore *d, Existing *ret) {
	Existing e = {};
	int r;

	r = etcd_range(d->client, d->subnets_prefix, d->subnets_end, &e.kvs, &e.n, NULL);
	if (r < 0)
		return r;
	e.leases = calloc(MAX(e.n, (size_t) 1), sizeof(NodeLease));
	if (!e.leases) {
		existing_done(&e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < e.n; i++)
		if (lease_from_kv(d, e.kvs[i].key, e.kvs[i].value, &e.leases[i]) < 0)
			e.leases[i] = (NodeLease) {};
	*ret = e;
	return 0;
}

static bool existing_taken(const Existing *e, const IpPrefix *p) {
	for (size_t i = 0; i < e->n; i++)
		if (e->leases[i].subnet.addr.family == p->addr.family && ip_prefix_overlaps(&e->leases[i].subnet, p))
			return true;
	return false;
}

/* Advances p to the next subnet of its length; false when it leaves the address space. */
static bool subnet_next(IpPrefix *p) {
	unsigned bit = p->len - 1u; /* the subnet's lowest network bit */
	int i = (int) (bit / 8);
	unsigned carry = 1u << (7 - bit % 8);

	if (p->len == 0)
		return false;
	for (; i >= 0 && carry; i--) {
		unsigned v = p->addr.bytes[i] + carry;
		p->addr.bytes[i] = (uint8_t) v;
		carry = v >> 8;
	}
	return carry == 0;
}

static bool subnet_allowed(Datastore *d, const IpPrefix *network, const IpPrefix *p) {
	if (p->addr.family != network->addr.family || !ip_prefix_contains(network, &p->addr))
		return false;
	if (d->subnet_min.family == p->addr.family && ip_addr_cmp(&p->addr, &d->subnet_min) < 0)
		return false;
	if (d->subnet_max.family == p->addr.family && ip_addr_cmp(&p->addr, &d->subnet_max) > 0)
		return false;
	return true;
}

typedef struct AcquireCtx {
	Datastore *d;
	const NodeLease *self;
	const IpPrefix *network;
	IpPrefix subnet6; /* what try_put stored */
	int64_t lease_id; /* granted lazily, revoked on failure unless adopted */
	int64_t ttl;
	bool lease_reused;
} AcquireCtx;

static int ctx_lease(AcquireCtx *x) {
	int r;

	if (x->lease_id)
		return 0;
	r = etcd_lease_grant(x->d->client, x->d->ttl_sec, &x->lease_id, &x->ttl);
	if (r < 0)
		ds_set_error(x->d, r, "granting a lease");
	return r;
}

/* Try to create (target CREATE, rev 0) or take over (MOD, rev) the key for p. 1 = ours, 0 = lost race. */
static int try_put(AcquireCtx *x, const IpPrefix *p, const char *target, int64_t rev, char **ret_key,
		   char **ret_value) {
	_cleanup_(etcd_kv_done) EtcdKv existing = {};
	_cleanup_free_ char *key = NULL, *value = NULL;
	NodeLease l = *x->self; /* a view: only read */
	bool ok = false;
	int r;

	l.subnet = *p;
	if (x->d->network6.addr.family == AF_INET6) {
		r = subnet6_for(x->d, x->network, p, &l.subnet6);
		if (r < 0) {
			snprintf(x->d->error, sizeof(x->d->error), "Network6 %s has no /%u subnet to pair with %s",
				 pstr6(&x->d->network6), x->d->subnet_len6, pstr6(p));
			return r;
		}
	}
	r = ctx_lease(x);
	if (r < 0)
		return r;
	key = subnet_key(x->d, p);
	value = lease_to_json(&l);
	if (!key || !value)
		return -ENOMEM;
	r = etcd_txn_put_if(x->d->client, key, target, rev, value, x->lease_id, &ok, &existing);
	if (r < 0) {
		ds_set_error(x->d, r, "creating a subnet key");
		return r;
	}
	/* A retried txn (timeout, fail-over) may have succeeded the first time: ours if on our lease. */
	if (!ok && !(existing.key && existing.lease == x->lease_id))
		return 0;
	*ret_key = TAKE_PTR(key);
	*ret_value = TAKE_PTR(value);
	x->subnet6 = l.subnet6;
	return 1;
}

static int acquire_once(AcquireCtx *x, const IpPrefix *network, unsigned subnet_len, const IpPrefix *prev,
			IpPrefix *ret_subnet, char **ret_key, char **ret_value) {
	_cleanup_(existing_done) Existing e = {};
	Datastore *d = x->d;
	IpPrefix p;
	int r;

	r = existing_load(d, &e);
	if (r < 0) {
		ds_set_error(d, r, "listing subnets");
		return r;
	}

	/* 1. Our own live lease (a restart): keep the subnet, and its etcd lease if still alive. */
	for (size_t i = 0; i < e.n; i++) {
		NodeLease *l = &e.leases[i];
		int64_t ttl = 0;

		if (!streq_ptr(l->node_name, x->self->node_name) || l->subnet.len != subnet_len ||
		    !subnet_allowed(d, network, &l->subnet))
			continue;
		if (!x->lease_id && e.kvs[i].lease && etcd_lease_keepalive(d->client, e.kvs[i].lease, &ttl) >= 0 &&
		    ttl > 0) {
			x->lease_id = e.kvs[i].lease;
			x->ttl = ttl;
			x->lease_reused = true;
		}
		r = try_put(x, &l->subnet, "MOD", e.kvs[i].mod_revision, ret_key, ret_value);
		if (r != 0) {
			if (r > 0)
				*ret_subnet = l->subnet;
			return r;
		}
		return -EAGAIN; /* changed under us: list again */
	}

	/* 2. The subnet weftd remembers, if nobody took it. */
	if (prev && prev->len == subnet_len && subnet_allowed(d, network, prev)) {
		p = ip_prefix_mask(prev);
		if (!existing_taken(&e, &p)) {
			r = try_put(x, &p, "CREATE", 0, ret_key, ret_value);
			if (r != 0) {
				if (r > 0)
					*ret_subnet = p;
				return r;
			}
		}
	}

	/* 3. The lowest free one. */
	p = (IpPrefix) { .addr = network->addr, .len = (uint8_t) subnet_len };
	p = ip_prefix_mask(&p);
	if (d->subnet_min.family == p.addr.family && ip_prefix_contains(network, &d->subnet_min)) {
		IpPrefix m = { .addr = d->subnet_min, .len = (uint8_t) subnet_len };
		p = ip_prefix_mask(&m);
	}
	for (;;) {
		if (!subnet_allowed(d, network, &p))
			break;
		if (!existing_taken(&e, &p)) {
			r = try_put(x, &p, "CREATE", 0, ret_key, ret_value);
			if (r != 0) {
				if (r > 0)
					*ret_subnet = p;
				return r;
			}
			/* Lost a race: someone else has it now; go on with the next. */
		}
		if (!subnet_next(&p))
			break;
	}
	snprintf(d->error, sizeof(d->error), "no free /%u subnet left in the network", subnet_len);
	return -ENOSPC;
}

/* Best-effort: our own keys from an earlier config (other length/network) would block addresses. */
static void delete_stale_own(Datastore *d, const char *node, const char *keep) {
	_cleanup_(existing_done) Existing e = {};

	if (existing_load(d, &e) < 0)
		return;
	for (size_t i = 0; i < e.n; i++)
		if (streq_ptr(e.leases[i].node_name, node) && !streq(e.kvs[i].key, keep)) {
			log_info("etcd: deleting our stale subnet key %s", e.kvs[i].key);
			(void) etcd_delete(d->client, e.kvs[i].key, NULL);
		}
}

static int etcd_acquire(Datastore *d, const IpPrefix *network, unsigned subnet_len, const NodeLease *self,
			const IpPrefix *prev, NodeLease *ret) {
	AcquireCtx x = { .d = d, .self = self, .network = network };
	_cleanup_free_ char *key = NULL, *value = NULL;
	_cleanup_(node_lease_done) NodeLease mine = {}, theirs = {};
	IpPrefix subnet = {};
	int r = -EAGAIN;

	if (!network || !self || isempty(self->node_name) || !ip_addr_size(network->addr.family) ||
	    subnet_len < network->len || subnet_len > ip_family_bits(network->addr.family)) {
		snprintf(d->error, sizeof(d->error), "invalid acquire arguments");
		return -EINVAL;
	}
	/* Our copy and the caller's, made before anything changes. */
	if (node_lease_copy(&mine, self) < 0 || node_lease_copy(&theirs, self) < 0)
		return -ENOMEM;

	for (int attempt = 0; attempt < ACQUIRE_MAX_ATTEMPTS && r == -EAGAIN; attempt++)
		r = acquire_once(&x, network, subnet_len, prev, &subnet, &key, &value);
	if (r == -EAGAIN)
		snprintf(d->error, sizeof(d->error), "our subnet key kept changing under us");
	if (r < 0) {
		if (x.lease_id && !x.lease_reused)
			(void) etcd_lease_revoke(d->client, x.lease_id);
		return r;
	}

	/* A previous lease of ours that we are not adopting: stop renewing it. */
	etcd_request_cancel(TAKE_PTR(d->renew_req));
	if (d->have_lease && d->lease_id != x.lease_id)
		(void) etcd_lease_revoke(d->client, d->lease_id);

	delete_stale_own(d, self->node_name, key);

	free(d->key);
	free(d->value);
	d->key = TAKE_PTR(key);
	d->value = TAKE_PTR(value);
	d->lease_id = x.lease_id;
	d->granted_ttl = x.ttl > 0 ? x.ttl : d->ttl_sec;
	node_lease_done(&d->self);
	d->self = mine;
	mine = (NodeLease) {};
	d->self.subnet = subnet;
	d->self.subnet6 = x.subnet6;
	d->have_lease = true;
	d->renew_failures = 0;
	renew_ok(d, d->granted_ttl);
	*ret = d->self;
	ret->node_name = TAKE_PTR(theirs.node_name);
	return 0;
}

static int etcd_release(Datastore *d) {
	int r;

	if (!d->have_lease)
		return 0;
	etcd_request_cancel(TAKE_PTR(d->renew_req));
	d->renew_at = 0;
	d->renew_state = RENEW_IDLE;
	update_wakeup(d);
	r = etcd_lease_revoke(d->client, d->lease_id);
	if (r == -ENOENT) /* already expired: the key is gone too */
		r = 0;
	if (r < 0) {
		ds_set_error(d, r, "revoking our lease");
		return r;
	}
	d->have_lease = false;
	d->lease_id = 0;
	return 0;
}

static int etcd_relist(Datastore *d) {
	/* A list already under way or scheduled does the job. */
	if (!d->cb || d->watch_state != WATCH_STREAM)
		return 0;
	etcd_request_cancel(TAKE_PTR(d->watch_req));
	watch_start_range(d);
	update_wakeup(d);
	return 0;
}

static int etcd_get_fd(Datastore *d) {
	return etcd_client_get_fd(d->client);
}

static int etcd_dispatch(Datastore *d) {
	uint64_t now;
	int r;

	r = etcd_client_dispatch(d->client);
	if (r < 0)
		return r;

	now = etcd_now_usec();
	if (d->renew_at && d->renew_at <= now && !d->renew_req)
		renew_start(d);
	if (d->watch_retry_at && d->watch_retry_at <= now && d->watch_state == WATCH_BACKOFF)
		watch_start_range(d);
	update_wakeup(d);

	if (d->pending_error < 0) {
		r = d->pending_error;
		d->pending_error = 0;
		return r;
	}
	return 0;
}

static int etcd_next_timeout_ms(Datastore *d) {
	return etcd_client_next_timeout_ms(d->client);
}

const DatastoreOps datastore_etcd_ops = {
	.kind = DATASTORE_ETCD,
	.open = etcd_open,
	.free = etcd_free,
	.get_network_config = etcd_get_network_config,
	.acquire = etcd_acquire,
	.release = etcd_release,
	.watch = etcd_watch,
	.get_fd = etcd_get_fd,
	.dispatch = etcd_dispatch,
	.next_timeout_ms = etcd_next_timeout_ms,
	.set_subnet_range = etcd_set_subnet_range,
	.set_network6 = etcd_set_network6,
	.relist = etcd_relist,
	.last_error = etcd_last_error,
};
