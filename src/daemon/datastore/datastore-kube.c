/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes datastore (modelled on flannel's kube subnet manager). kube-controller-manager
 * (--allocate-node-cidrs) owns the subnets: each Node's spec.podCIDRs is its lease, and weftd never
 * allocates in this mode. What other nodes need to reach us is published as annotations on our own
 * Node object:
 *
 *   weft.dev/public-ip     192.0.2.1            (underlay address; weft.dev/public-ip6 if IPv6)
 *   weft.dev/public-ip6    2001:db8::1          (with public-ip: the IPv6 underlay address, wireguard)
 *   weft.dev/backend-type  vxlan | host-gw
 *   weft.dev/vtep-mac      aa:bb:cc:dd:ee:ff    (vxlan)
 *   weft.dev/public-key    <base64 of 32 bytes> (wireguard)
 *
 * A node with podCIDRs AND a public-ip(6) annotation is a NodeLease; others are not ready yet and
 * ignored, and a node that loses either is reported deleted. The watch is client-go's reflector in
 * small: LIST /api/v1/nodes, then WATCH from the list's resourceVersion (bookmarks on); a watch the
 * server ends normally (timeoutSeconds) resumes from the last resourceVersion; 410 Gone or a
 * broken stream means LIST again, which is a RESYNC. Everything after start-up is non-blocking, on
 * the client's one fd.
 *
 * The network config is not here: in Kubernetes it is a ConfigMap mounted as --net-config.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "daemon/datastore/datastore.h"
#include "daemon/wireguard/wg-key.h"
#include "shared/client/http-multi.h"
#include "shared/client/kube-client.h"
#include "shared/client/kubeconfig.h"

#define ANNOTATION_PUBLIC_IP "weft.dev/public-ip"
#define ANNOTATION_PUBLIC_IP6 "weft.dev/public-ip6"
#define ANNOTATION_BACKEND "weft.dev/backend-type"
#define ANNOTATION_VTEP_MAC "weft.dev/vtep-mac"
#define ANNOTATION_PUBLIC_KEY "weft.dev/public-key"

#define WATCH_BACKOFF_MIN_MS 100u
#define WATCH_BACKOFF_MAX_MS 5000u
/* Like client-go: ask the server to end each watch after 5-10 minutes, so a silently stuck stream
 * cannot last forever; a normal end resumes from the last resourceVersion without a LIST. */
#define WATCH_TIMEOUT_MIN_SEC 300u

typedef enum WatchState {
	WATCH_OFF,
	WATCH_LIST,    /* listing every node (for RESYNC) */
	WATCH_STREAM,  /* streaming deltas */
	WATCH_BACKOFF, /* waiting to list again */
} WatchState;

struct Datastore {
	KubeClient *client;
	char error[1024];

	bool have_lease;
	NodeLease self;

	DatastoreEventFn cb;
	void *userdata;
	WatchState watch_state;
	KubeRequest *watch_req;
	char *resource_version;
	uint64_t retry_at;
	unsigned backoff_ms;
	bool connected;
	NodeLease *cache; /* ready nodes, as last reported */
	size_t n_cache;

	/* Our own annotations were removed or changed by someone else: publish them again. */
	bool republish;
	uint64_t republish_at;
	KubeRequest *patch_req;
};

static void ds_set_error(Datastore *d, int r, const char *what) {
	snprintf(d->error, sizeof(d->error), "%s: %s (%s)", what, kube_client_last_error(d->client), strerror(-r));
}

static const char *kube_last_error(Datastore *d) {
	return d ? d->error : "";
}

static void update_wakeup(Datastore *d) {
	uint64_t w = d->watch_state == WATCH_BACKOFF ? d->retry_at : 0;

	if (d->republish && !d->patch_req && (!w || d->republish_at < w))
		w = d->republish_at;
	kube_client_set_wakeup(d->client, w);
}

static void emit(Datastore *d, const DatastoreEvent *ev) {
	if (d->cb)
		d->cb(ev, d->userdata);
}

/* ---- Node objects ---- */

static const char *json_path_str(const json_t *o, const char *a, const char *b) {
	const json_t *v = json_object_get(json_object_get(o, a), b);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static const char *annotation(const json_t *node, const char *key) {
	const json_t *v = json_object_get(json_object_get(json_object_get(node, "metadata"), "annotations"), key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void set_invalid(NodeLease *l, LeaseReject why, const char *detail) {
	if (l->invalid == LEASE_ACCEPTED) {
		l->invalid = why;
		l->invalid_detail = detail;
	}
}

/* spec.podCIDRs (spec.podCIDR on old servers) split by family; the first of each family counts.
 * False if an entry is not a prefix (set ret_bad). */
static void node_pod_cidrs(const json_t *node, IpPrefix *ret4, IpPrefix *ret6, bool *ret_bad) {
	const json_t *spec = json_object_get(node, "spec"), *l = json_object_get(spec, "podCIDRs"), *v;
	bool bad = false;
	size_t i;

	*ret4 = *ret6 = (IpPrefix) {};
	if (!json_is_array(l) || json_array_size(l) == 0) {
		IpPrefix p;
		v = json_object_get(spec, "podCIDR");
		if (json_is_string(v) && ip_prefix_parse(json_string_value(v), &p) >= 0)
			*(p.addr.family == AF_INET ? ret4 : ret6) = ip_prefix_mask(&p);
		else if (v && !json_is_null(v))
			bad = true;
		if (ret_bad)
			*ret_bad = bad;
		return;
	}
	json_array_foreach(l, i, v) {
		IpPrefix p;

		if (!json_is_string(v) || ip_prefix_parse(json_string_value(v), &p) < 0) {
			bad = true;
			continue;
		}
		if (p.addr.family == AF_INET && ret4->addr.family == AF_UNSPEC)
			*ret4 = ip_prefix_mask(&p);
		else if (p.addr.family == AF_INET6 && ret6->addr.family == AF_UNSPEC)
			*ret6 = ip_prefix_mask(&p);
	}
	if (ret_bad)
		*ret_bad = bad;
}

/* metadata.creationTimestamp (RFC 3339, "2024-01-02T03:04:05Z") as unix seconds; 0 if absent. */
static int64_t node_created(const json_t *node) {
	const char *s = json_path_str(node, "metadata", "creationTimestamp");
	struct tm tm = {};
	const char *end;

	if (!s)
		return 0;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return 0;
	return (int64_t) timegm(&tm);
}

/*
 * 1 and *ret filled if the node is a lease (podCIDRs + public IP annotation), 0 if not ready yet,
 * < 0 if it cannot be one at all (no name, or a name no API server would accept: longer than a
 * NodeLease holds; -ENOMEM). ret->node_name is set (owned by *ret) in every case >= 0. What is
 * wrong with a ready node's fields is recorded in ret->invalid, for the import filter.
 */
int datastore_kube_node_parse(const json_t *node, NodeLease *ret) {
	const char *name = json_path_str(node, "metadata", "name"), *s;
	IpPrefix p4, p6;
	NodeLease l = {};
	bool bad_cidr;

	if (!name || strlen(name) > NODE_NAME_MAX)
		return -EINVAL;
	if (node_lease_set_name(&l, name) < 0)
		return -ENOMEM;
	l.created = node_created(node);
	node_pod_cidrs(node, &p4, &p6, &bad_cidr);
	if (bad_cidr)
		set_invalid(&l, LEASE_REJECT_MALFORMED, "spec.podCIDRs holds something that is not a prefix");
	if (p4.addr.family == AF_INET) {
		l.subnet = p4;
		l.subnet6 = p6;
	} else
		l.subnet = p6; /* IPv6-only cluster */

	s = annotation(node, ANNOTATION_PUBLIC_IP);
	if (!s)
		s = annotation(node, ANNOTATION_PUBLIC_IP6);
	if (s && ip_addr_parse(s, &l.public_ip) < 0) {
		l.public_ip = (IpAddr) {};
		if (ip_addr_is_set(&l.subnet.addr)) {
			/* present but unreadable: a lease, refused (counted), not a node "not ready yet" */
			set_invalid(&l, LEASE_REJECT_PUBLIC_IP, "annotation weft.dev/public-ip is not an IP address");
			*ret = l;
			return 1;
		}
	}
	/* with both annotations, public-ip6 is the node's second (IPv6) underlay address */
	s = annotation(node, ANNOTATION_PUBLIC_IP6);
	if (s && annotation(node, ANNOTATION_PUBLIC_IP) &&
	    (ip_addr_parse(s, &l.public_ip6) < 0 || l.public_ip6.family != AF_INET6)) {
		l.public_ip6 = (IpAddr) {};
		set_invalid(&l, LEASE_REJECT_PUBLIC_IP, "annotation weft.dev/public-ip6 is not an IPv6 address");
	}
	s = annotation(node, ANNOTATION_BACKEND);
	if (s) {
		if (strlen(s) < sizeof(l.backend))
			snprintf(l.backend, sizeof(l.backend), "%s", s);
		else
			set_invalid(&l, LEASE_REJECT_MALFORMED,
				    "annotation weft.dev/backend-type is not a backend name");
	}
	s = annotation(node, ANNOTATION_VTEP_MAC);
	if (s) {
		if (ether_addr_parse(s, l.vtep_mac) >= 0)
			l.has_vtep_mac = true;
		else
			set_invalid(&l, LEASE_REJECT_VTEP_MAC, "annotation weft.dev/vtep-mac is not a MAC address");
	}
	s = annotation(node, ANNOTATION_PUBLIC_KEY);
	if (s) {
		if (lease_public_key_parse(s, &l) >= 0)
			l.has_public_key = true;
		else
			set_invalid(&l, LEASE_REJECT_PUBLIC_KEY,
				    "annotation weft.dev/public-key is not a WireGuard key (32 bytes of base64)");
	}

	*ret = l;
	return ip_addr_is_set(&l.subnet.addr) && ip_addr_is_set(&l.public_ip);
}

static int node_to_lease(const json_t *node, NodeLease *ret) {
	return datastore_kube_node_parse(node, ret);
}

/* ---- the cache behind RESYNC, and the deltas ---- */

static NodeLease *cache_find(Datastore *d, const char *name) {
	for (size_t i = 0; i < d->n_cache; i++)
		if (streq_ptr(d->cache[i].node_name, name))
			return &d->cache[i];
	return NULL;
}

static void node_deleted(Datastore *d, const char *name) {
	NodeLease *c = cache_find(d, name), l;

	if (!c)
		return;
	l = *c; /* the cache's entry, ours to release now */
	*c = d->cache[--d->n_cache];
	emit(d, &(DatastoreEvent) { .type = DS_EVENT_NODE_DELETE, .node = &l });
	node_lease_done(&l);
}

/* Our own Node: if what other nodes need from us is no longer in its annotations (removed by hand,
 * overwritten), schedule publishing it again; the other nodes would drop us otherwise. */
static void check_own_node(Datastore *d, const NodeLease *l) {
	const NodeLease *s = &d->self;

	if (!d->have_lease || !streq_ptr(l->node_name, s->node_name))
		return;
	if (ip_addr_equal(&l->public_ip, &s->public_ip) && ip_addr_equal(&l->public_ip6, &s->public_ip6) &&
	    streq(l->backend, s->backend) && l->has_vtep_mac == s->has_vtep_mac &&
	    (!s->has_vtep_mac || memcmp(l->vtep_mac, s->vtep_mac, 6) == 0) && l->has_public_key == s->has_public_key &&
	    (!s->has_public_key || memcmp(l->public_key, s->public_key, sizeof(s->public_key)) == 0))
		return;
	if (!d->republish)
		log_warning("kubernetes: the weft.dev annotations of our Node \"%s\" were removed or changed: "
			    "publishing them again",
			    s->node_name);
	d->republish = true;
	d->republish_at = http_now_usec();
	update_wakeup(d);
}

static void node_changed(Datastore *d, const json_t *node) {
	_cleanup_(node_lease_done) NodeLease l = {};
	NodeLease *c;
	int r;

	r = node_to_lease(node, &l);
	if (r < 0)
		return;
	check_own_node(d, &l);
	if (r == 0) {
		/* Not (or no longer) ready: podCIDRs or our annotations are missing. */
		node_deleted(d, l.node_name);
		return;
	}
	c = cache_find(d, l.node_name);
	if (c) {
		/* Kubelet heartbeats modify Nodes every few seconds: only real changes are events. */
		if (node_lease_equal(c, &l))
			return;
		node_lease_done(c);
		*c = l;
		l = (NodeLease) {}; /* moved into the cache */
	} else {
		NodeLease *n = reallocarray(d->cache, d->n_cache + 1, sizeof(NodeLease));

		if (!n)
			return;
		d->cache = n;
		c = &d->cache[d->n_cache++];
		*c = l;
		l = (NodeLease) {}; /* moved into the cache */
	}
	emit(d, &(DatastoreEvent) { .type = DS_EVENT_NODE_UPSERT, .node = c });
}

static void set_resource_version(Datastore *d, const json_t *obj) {
	const char *rv = json_path_str(obj, "metadata", "resourceVersion");
	char *s;

	if (isempty(rv))
		return;
	s = strdup(rv);
	if (!s)
		return;
	free(d->resource_version);
	d->resource_version = s;
}

static void set_connected(Datastore *d, bool connected) {
	if (d->connected == connected)
		return;
	d->connected = connected;
	if (connected)
		log_info("kubernetes: connected to %s", kube_client_config(d->client)->server);
	else
		log_warning("kubernetes: lost connection: %s", d->error);
	emit(d, &(DatastoreEvent) { .type = DS_EVENT_CONNECTION, .connected = connected });
}

/* ---- list + watch ---- */

static void watch_start_list(Datastore *d);

static void watch_failed(Datastore *d, int r, const char *what) {
	d->watch_req = NULL;
	if (what) /* NULL: d->error already says it */
		ds_set_error(d, r, what);
	set_connected(d, false);
	d->watch_state = WATCH_BACKOFF;
	d->retry_at = http_now_usec() + (uint64_t) d->backoff_ms * 1000u;
	d->backoff_ms = MIN(d->backoff_ms * 2, WATCH_BACKOFF_MAX_MS);
	update_wakeup(d);
}

static int on_watch_event(KubeClient *c, const char *type, json_t *obj, void *userdata) {
	Datastore *d = userdata;

	if (streq(type, "ERROR")) {
		/* A Status object. 410 Gone: our resourceVersion is older than what the server (etcd)
		 * still has; the only way on is a fresh LIST. */
		const json_t *code = json_object_get(obj, "code"), *msg = json_object_get(obj, "message");

		snprintf(d->error, sizeof(d->error), "watch ERROR event %lld: %s",
			 json_is_integer(code) ? (long long) json_integer_value(code) : 0LL,
			 json_is_string(msg) ? json_string_value(msg) : "(no message)");
		return json_is_integer(code) && json_integer_value(code) == 410 ? -ESTALE : -EIO;
	}
	set_resource_version(d, obj);
	if (streq(type, "ADDED") || streq(type, "MODIFIED"))
		node_changed(d, obj);
	else if (streq(type, "DELETED")) {
		const char *name = json_path_str(obj, "metadata", "name");
		if (name)
			node_deleted(d, name);
	}
	/* BOOKMARK: only the resourceVersion. Unknown types: ignore (a newer server may send more). */
	d->backoff_ms = WATCH_BACKOFF_MIN_MS;
	return 0;
}

static void watch_start_stream(Datastore *d);

static void on_watch_done(KubeClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;

	d->watch_req = NULL;
	if (error == 0) {
		/* The server ended the watch (timeoutSeconds): resume where we were. */
		watch_start_stream(d);
		return;
	}
	if (error == -ESTALE) {
		log_info("kubernetes: %s; listing nodes again", d->error);
		watch_start_list(d);
		return;
	}
	if (error == -EIO && startswith(d->error, "watch ERROR event"))
		watch_failed(d, error, NULL);
	else
		watch_failed(d, error, "watching nodes");
}

static void watch_start_stream(Datastore *d) {
	_cleanup_free_ char *path = NULL;
	int r;

	path = strdup_printf("/api/v1/nodes?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%u",
			     d->resource_version,
			     WATCH_TIMEOUT_MIN_SEC + (unsigned) (random() % WATCH_TIMEOUT_MIN_SEC));
	if (!path)
		return watch_failed(d, -ENOMEM, "watching nodes");
	d->watch_state = WATCH_STREAM;
	r = kube_client_watch(d->client, path, on_watch_event, on_watch_done, d, &d->watch_req);
	if (r < 0)
		watch_failed(d, r, "watching nodes");
}

static void on_list_done(KubeClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;
	const json_t *items = json_object_get(resp, "items"), *node;
	const char *rv = json_path_str(resp, "metadata", "resourceVersion");
	NodeLease *list;
	size_t i, n = 0;

	d->watch_req = NULL;
	if (error < 0)
		return watch_failed(d, error, "listing nodes");
	if (!json_is_array(items) || isempty(rv)) {
		snprintf(d->error, sizeof(d->error), "listing nodes: malformed NodeList (no items or resourceVersion)");
		return watch_failed(d, -EBADMSG, NULL);
	}
	list = calloc(MAX(json_array_size(items), (size_t) 1), sizeof(NodeLease));
	if (!list)
		return watch_failed(d, -ENOMEM, "listing nodes");
	json_array_foreach(items, i, node) {
		int r = node_to_lease(node, &list[n]);

		if (r >= 0)
			check_own_node(d, &list[n]);
		if (r > 0)
			n++;
		else if (r == 0)
			node_lease_done(&list[n]); /* not a lease yet: the slot is reused */
	}
	node_leases_free(d->cache, d->n_cache);
	d->cache = list;
	d->n_cache = n;
	free(d->resource_version);
	d->resource_version = strdup(rv);
	if (!d->resource_version)
		return watch_failed(d, -ENOMEM, "listing nodes");

	set_connected(d, true);
	emit(d, &(DatastoreEvent) { .type = DS_EVENT_RESYNC, .nodes = d->cache, .n_nodes = d->n_cache });
	if (d->watch_state != WATCH_LIST) /* the callback stopped us */
		return;
	watch_start_stream(d);
}

static void watch_start_list(Datastore *d) {
	int r;

	d->watch_state = WATCH_LIST;
	d->retry_at = 0;
	update_wakeup(d);
	r = kube_client_call_async(d->client, "GET", "/api/v1/nodes", NULL, NULL, on_list_done, d, &d->watch_req);
	if (r < 0)
		watch_failed(d, r, "listing nodes");
}

static int kube_watch(Datastore *d, DatastoreEventFn cb, void *userdata) {
	if (!d || !cb)
		return -EINVAL;
	kube_request_cancel(TAKE_PTR(d->watch_req));
	d->cb = cb;
	d->userdata = userdata;
	d->backoff_ms = WATCH_BACKOFF_MIN_MS;
	watch_start_list(d);
	return 0;
}

/* ---- lifecycle ---- */

static Datastore *kube_free(Datastore *d) {
	if (!d)
		return NULL;
	/* Requests reference d as userdata: drop them with the client, before d. */
	kube_client_free(d->client);
	free(d->resource_version);
	node_leases_free(d->cache, d->n_cache);
	node_lease_done(&d->self);
	free(d);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Datastore *, kube_free);

static int kube_open(const DatastoreConfig *cfg, Datastore **ret) {
	_cleanup_(kube_freep) Datastore *d = NULL;
	_cleanup_(kubeconfig_freep) KubeConfig *k = NULL;
	_cleanup_free_ char *err = NULL;
	int r;

	if (!cfg)
		return -EINVAL;
	/* With leases from Kubernetes, the one place weftd loads the kubeconfig (the object cache
	 * copies it through ->kube_config). A broken one is a configuration error (-EINVAL: weftd
	 * exits instead of retrying), whatever the file's own errno. */
	r = cfg->kubeconfig ? kubeconfig_load(cfg->kubeconfig, &k, &err) : kubeconfig_load_in_cluster(NULL, &k, &err);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		log_error("Invalid Kubernetes client config: %s", err ?: strerror(-r));
		return -EINVAL;
	}
	log_info("Loaded kubeconfig %s", k->source);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->connected = true;
	d->backoff_ms = WATCH_BACKOFF_MIN_MS;
	r = kube_client_new(&k, &d->client);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(d);
	return 0;
}

static const KubeConfig *kube_kube_config(Datastore *d) {
	return kube_client_config(d->client);
}

static int kube_get_network_config(Datastore *d, char **ret_json) {
	snprintf(d->error, sizeof(d->error),
		 "the kubernetes datastore has no network config: mount the ConfigMap and pass --net-config");
	return -ENOENT;
}

static char *node_path(const char *name) {
	char *e = curl_easy_escape(NULL, name, 0), *p;

	p = e ? strdup_printf("/api/v1/nodes/%s", e) : NULL;
	curl_free(e);
	return p;
}

/* A merge patch of our annotations; self NULL = remove them (null deletes a key in a merge patch). */
static char *annotations_patch(const NodeLease *self) {
	char a[IP_ADDR_STRLEN], mac[18];
	json_t *ann = json_object(), *o;
	bool v6 = self && self->public_ip.family == AF_INET6;
	char *s;

	if (!ann)
		return NULL;
	json_object_set_new(ann, ANNOTATION_PUBLIC_IP,
			    self && !v6 ? json_string(ip_addr_to_string(&self->public_ip, a)) : json_null());
	json_object_set_new(ann, ANNOTATION_PUBLIC_IP6,
			    self && v6 ? json_string(ip_addr_to_string(&self->public_ip, a))
			    : self && self->public_ip6.family == AF_INET6
					    ? json_string(ip_addr_to_string(&self->public_ip6, a))
					    : json_null());
	json_object_set_new(ann, ANNOTATION_BACKEND,
			    self && self->backend[0] ? json_string(self->backend) : json_null());
	json_object_set_new(ann, ANNOTATION_VTEP_MAC,
			    self && self->has_vtep_mac ? json_string(ether_addr_format(self->vtep_mac, mac))
						       : json_null());
	if (self && self->has_public_key) {
		char key[WG_KEY_B64_LEN + 1];
		WgKey k;

		memcpy(k.b, self->public_key, WG_KEY_LEN);
		wg_key_to_base64(&k, key);
		json_object_set_new(ann, ANNOTATION_PUBLIC_KEY, json_string(key));
	} else
		json_object_set_new(ann, ANNOTATION_PUBLIC_KEY, json_null());
	o = json_pack("{s:{s:o}}", "metadata", "annotations", ann);
	if (!o)
		return NULL;
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/*
 * Cloud route controllers mark new Nodes NetworkUnavailable=True (which taints them) until pod
 * routes exist; with weft the routes are ours, so say so, as flannel does. Best-effort: a
 * ClusterRole without nodes/status patch only costs a warning. Conditions merge by type, which
 * needs a strategic merge patch.
 */
static void set_network_available(Datastore *d, const char *path) {
	_cleanup_free_ char *status_path = strdup_printf("%s/status", path), *body = NULL;
	char now[32];
	time_t t = time(NULL);
	struct tm tm;
	json_t *o;
	int r;

	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	o = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type", "NetworkUnavailable",
		      "status", "False", "reason", "WeftIsUp", "message", "weftd is running on this node",
		      "lastTransitionTime", now, "lastHeartbeatTime", now);
	body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!status_path || !body)
		return;
	r = kube_client_call(d->client, "PATCH", status_path, "application/strategic-merge-patch+json", body, NULL);
	if (r < 0)
		log_warning("kubernetes: could not clear the NetworkUnavailable condition of our Node: %s",
			    kube_client_last_error(d->client));
}

/* Whether the Node already says NetworkUnavailable=False (then there is nothing to patch). */
static bool network_available(const json_t *node) {
	const json_t *conds = json_object_get(json_object_get(node, "status"), "conditions"), *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (streq_ptr(json_string_value(json_object_get(c, "type")), "NetworkUnavailable"))
			return streq_ptr(json_string_value(json_object_get(c, "status")), "False");
	return false;
}

static int kube_acquire(Datastore *d, const IpPrefix *network, unsigned subnet_len, const NodeLease *self,
			const IpPrefix *prev, NodeLease *ret) {
	_cleanup_free_ char *path = NULL, *patch = NULL;
	char a[IP_PREFIX_STRLEN], b[IP_PREFIX_STRLEN];
	json_t *node = NULL;
	IpPrefix p4, p6;
	bool network_ok;
	NodeLease l, mine;
	int r;

	if (!self || isempty(self->node_name)) {
		snprintf(d->error, sizeof(d->error), "invalid acquire arguments");
		return -EINVAL;
	}
	path = node_path(self->node_name);
	if (!path)
		return -ENOMEM;

	r = kube_client_call(d->client, "GET", path, NULL, NULL, &node);
	if (r == -ENOENT) {
		snprintf(d->error, sizeof(d->error),
			 "there is no Node \"%s\" in the cluster (--node-name must be the "
			 "Kubernetes node name)",
			 self->node_name);
		return -EAGAIN;
	}
	if (r < 0) {
		ds_set_error(d, r, "reading our Node");
		return r;
	}
	node_pod_cidrs(node, &p4, &p6, NULL);
	network_ok = network_available(node);
	json_decref(node);

	l = *self; /* a view: copied below once it is ours */
	l.expiration = 0;
	if (!network || network->addr.family != AF_INET6) {
		l.subnet = p4;
		l.subnet6 = p6;
	} else {
		l.subnet = p6;
		l.subnet6 = (IpPrefix) {};
	}
	if (!ip_addr_is_set(&l.subnet.addr)) {
		snprintf(d->error, sizeof(d->error),
			 "Node \"%s\" has no %s spec.podCIDRs yet (assigned by kube-controller-manager with "
			 "--allocate-node-cidrs)",
			 self->node_name, network && network->addr.family == AF_INET6 ? "IPv6" : "IPv4");
		return -EAGAIN;
	}
	if (network && ip_addr_is_set(&network->addr) && !ip_prefix_contains(network, &l.subnet.addr)) {
		/* Routes and masquerading are built from the Network: a mismatch would half work. */
		snprintf(d->error, sizeof(d->error),
			 "Node \"%s\" podCIDR %s is outside the Network %s of the net config (it must match "
			 "kube-controller-manager's --cluster-cidr)",
			 self->node_name, ip_prefix_to_string(&l.subnet, a), ip_prefix_to_string(network, b));
		return -EINVAL;
	}

	if (l.subnet.len != subnet_len) {
		/* Every other node would refuse our lease (and we theirs): say so now. */
		snprintf(d->error, sizeof(d->error),
			 "Node \"%s\" podCIDR %s is not a /%u subnet (SubnetLen%s of the net config must match "
			 "kube-controller-manager's --node-cidr-mask-size)",
			 self->node_name, ip_prefix_to_string(&l.subnet, a), subnet_len,
			 l.subnet.addr.family == AF_INET6 ? "6" : "");
		return -EINVAL;
	}

	patch = annotations_patch(&l);
	if (!patch)
		return -ENOMEM;
	r = kube_client_call(d->client, "PATCH", path, "application/merge-patch+json", patch, NULL);
	if (r < 0) {
		ds_set_error(d, r, "annotating our Node");
		return r;
	}
	if (!network_ok)
		set_network_available(d, path);
	r = node_lease_copy(&mine, &l);
	if (r < 0)
		return r;
	r = node_lease_copy(ret, &l);
	if (r < 0) {
		node_lease_done(&mine);
		return r;
	}
	node_lease_done(&d->self);
	d->self = mine;
	d->have_lease = true;
	return 0;
}

static int kube_release(Datastore *d) {
	_cleanup_free_ char *path = NULL, *patch = NULL;
	int r;

	if (!d->have_lease)
		return 0;
	d->republish = false;
	kube_request_cancel(TAKE_PTR(d->patch_req));
	path = node_path(d->self.node_name);
	patch = annotations_patch(NULL);
	if (!path || !patch)
		return -ENOMEM;
	/* The subnet stays with the Node (the controller owns it); withdrawing our annotations makes
	 * every other node drop its routes to us. */
	r = kube_client_call(d->client, "PATCH", path, "application/merge-patch+json", patch, NULL);
	if (r == -ENOENT)
		r = 0;
	if (r < 0) {
		ds_set_error(d, r, "removing our Node annotations");
		return r;
	}
	d->have_lease = false;
	return 0;
}

static int kube_relist(Datastore *d) {
	if (!d->cb || d->watch_state != WATCH_STREAM)
		return 0;
	kube_request_cancel(TAKE_PTR(d->watch_req));
	watch_start_list(d);
	return 0;
}

static void on_republish_done(KubeClient *c, int error, json_t *resp, void *userdata) {
	Datastore *d = userdata;

	d->patch_req = NULL;
	if (error < 0) {
		ds_set_error(d, error, "publishing our Node annotations again");
		log_warning("kubernetes: %s", d->error);
		d->republish_at = http_now_usec() + 1000000u;
	} else {
		log_info("kubernetes: published the annotations of our Node again");
		d->republish = false;
		emit(d, &(DatastoreEvent) { .type = DS_EVENT_SELF_RECREATED });
	}
	update_wakeup(d);
}

static void republish_start(Datastore *d) {
	_cleanup_free_ char *path = node_path(d->self.node_name), *patch = annotations_patch(&d->self);
	int r;

	if (!path || !patch) {
		d->republish_at = http_now_usec() + 1000000u;
		return;
	}
	r = kube_client_call_async(d->client, "PATCH", path, "application/merge-patch+json", patch, on_republish_done,
				   d, &d->patch_req);
	if (r < 0)
		d->republish_at = http_now_usec() + 1000000u;
}

static int kube_get_fd(Datastore *d) {
	return kube_client_get_fd(d->client);
}

static int kube_dispatch(Datastore *d) {
	int r;

	r = kube_client_dispatch(d->client);
	if (r < 0)
		return r;
	if (d->watch_state == WATCH_BACKOFF && d->retry_at && d->retry_at <= http_now_usec())
		watch_start_list(d);
	if (d->republish && d->have_lease && !d->patch_req && d->republish_at <= http_now_usec())
		republish_start(d);
	update_wakeup(d);
	return 0;
}

static int kube_next_timeout_ms(Datastore *d) {
	return kube_client_next_timeout_ms(d->client);
}

const DatastoreOps datastore_kube_ops = {
	.kind = DATASTORE_KUBERNETES,
	.open = kube_open,
	.free = kube_free,
	.get_network_config = kube_get_network_config,
	.acquire = kube_acquire,
	.release = kube_release,
	.watch = kube_watch,
	.get_fd = kube_get_fd,
	.dispatch = kube_dispatch,
	.next_timeout_ms = kube_next_timeout_ms,
	.relist = kube_relist,
	.last_error = kube_last_error,
	.kube_config = kube_kube_config,
};
