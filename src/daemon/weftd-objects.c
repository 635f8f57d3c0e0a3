/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster's objects in weftd: the watched object cache (cache/object-cache.h) for Pods,
 * Namespaces, NetworkPolicies, Services and EndpointSlices, from --objects-datastore (kubernetes:
 * the API server; etcd: <prefix>/objects/, see README "Cluster objects in etcd"). The cache runs on
 * weftd's loop over its own client (its own connections, so a slow lease datastore never holds the
 * objects back and the other way round), relists every --relist-interval, and is shown at
 * /debug/objects and in /metrics.
 *
 * Deltas go through one handler per kind that fans out to the consumers registered with
 * manager_objects_add_consumer() (policy and services, later); today only counters and the debug
 * log see them.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "daemon/cache/object-source-etcd.h"
#include "daemon/cache/object-source-kube.h"
#include "daemon/flows/flow-agent.h"
#include "daemon/loadbalancer/lb-agent.h"
#include "daemon/loadbalancer/lb-announce.h"
#include "daemon/policy/policy-agent.h"
#include "daemon/service/service-agent.h"
#include "daemon/weftd.h"
#include "daemon/status-server.h"
#include "shared/client/kubeconfig.h"

/* The kinds weftd caches (Nodes come from the lease datastore). */
static const KubeKind object_kinds[] = {
	KUBE_KIND_NAMESPACE, KUBE_KIND_POD, KUBE_KIND_NETWORK_POLICY, KUBE_KIND_SERVICE, KUBE_KIND_ENDPOINT_SLICE,
};

/* Refusals are logged once per object and reason; past this many remembered, at debug level. */
#define REJECTED_REMEMBER_MAX 1024

static double realtime_seconds(void) {
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static double monotonic_seconds(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void note_delta(Manager *m, const KubeObject *o, const char *what) {
	ObjectsState *s = &m->objects;

	s->last_delta[o->kind] = realtime_seconds();
	log_debug("Object %s %s %s%s%s (monotonic %.6f)", kube_kind_info(o->kind)->kind, what, o->namespace ?: "",
		  o->namespace ? "/" : "", o->name, monotonic_seconds());
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	Manager *m = userdata;

	note_delta(m, o, "added");
	for (size_t i = 0; i < m->objects.n_consumers; i++)
		if (m->objects.consumers[i].handlers->added)
			m->objects.consumers[i].handlers->added(c, o, m->objects.consumers[i].userdata);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	Manager *m = userdata;

	note_delta(m, o, "updated");
	for (size_t i = 0; i < m->objects.n_consumers; i++)
		if (m->objects.consumers[i].handlers->updated)
			m->objects.consumers[i].handlers->updated(c, old, o, m->objects.consumers[i].userdata);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	Manager *m = userdata;

	note_delta(m, old, "deleted");
	for (size_t i = 0; i < m->objects.n_consumers; i++)
		if (m->objects.consumers[i].handlers->deleted)
			m->objects.consumers[i].handlers->deleted(c, old, m->objects.consumers[i].userdata);
}

static void on_synced(ObjectCache *c, KubeKind kind, void *userdata) {
	Manager *m = userdata;

	log_info("Object cache: %s synced (%zu objects)", kube_kind_info(kind)->resource,
		 object_cache_stats(c, kind).objects);
	for (size_t i = 0; i < m->objects.n_consumers; i++)
		if (m->objects.consumers[i].handlers->synced)
			m->objects.consumers[i].handlers->synced(c, kind, m->objects.consumers[i].userdata);
}

static void on_all_synced(ObjectCache *c, void *userdata) {
	Manager *m = userdata;

	log_info("Object cache: every kind synced from %s in %.3f s",
		 objects_datastore_to_string(m->args.objects_datastore), monotonic_seconds() - m->objects.started);
}

/* Fail closed (object-cache.h): a refused new version of a cached object leaves the last good one
 * in force, and the log line says so. */
static const char *rejected_held_note(ObjectCache *c, KubeKind kind, const char *ns, const char *name) {
	const KubeObject *o = name ? object_cache_get(c, kind, ns, name) : NULL;

	return o && object_cache_held_reason(c, o) ? " (keeping the last version that decoded in force)" : "";
}

static void on_rejected(ObjectCache *c, KubeKind kind, const char *ns, const char *name, const char *reason,
			void *userdata) {
	Manager *m = userdata;
	ObjectsState *s = &m->objects;
	_cleanup_free_ char *key = NULL;
	int level = LOG_WARNING;

	key = strdup_printf("%s/%s/%s: %s", kube_kind_info(kind)->resource, ns ?: "", name ?: "", reason ?: "");
	if (key) {
		for (size_t i = 0; i < s->n_rejected_seen; i++)
			if (streq(s->rejected_seen[i], key)) {
				level = LOG_DEBUG;
				break;
			}
		if (level == LOG_WARNING) {
			if (s->n_rejected_seen < REJECTED_REMEMBER_MAX) {
				char **a = realloc(s->rejected_seen, (s->n_rejected_seen + 1) * sizeof(char *));
				if (a) {
					s->rejected_seen = a;
					s->rejected_seen[s->n_rejected_seen++] = TAKE_PTR(key);
				}
			} else
				level = LOG_DEBUG;
		}
	}
	log_full_errno(level, 0, "Object cache: refused %s %s%s%s: %s%s", kube_kind_info(kind)->kind, ns ?: "",
		       ns ? "/" : "", name ?: "(unnamed)", reason ?: "", rejected_held_note(c, kind, ns, name));
}

static void on_failed(ObjectCache *c, KubeKind kind, int error, bool listing, void *userdata) {
	Manager *m = userdata;
	const char *detail = m->objects.kube   ? kube_client_last_error(m->objects.kube)
			     : m->objects.etcd ? etcd_client_last_error(m->objects.etcd)
					       : "";

	log_warning_errno(error, "Object cache: %s %s from %s failed, retrying: %m%s%s%s", listing ? "list" : "watch",
			  kube_kind_info(kind)->resource, objects_datastore_to_string(m->args.objects_datastore),
			  isempty(detail) ? "" : " (", detail, isempty(detail) ? "" : ")");
}

static const ObjectCacheHandlers manager_object_handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
	.synced = on_synced,
	.rejected = on_rejected,
	.failed = on_failed,
};

int manager_objects_add_consumer(Manager *m, const ObjectCacheHandlers *h, void *userdata) {
	ObjectsState *s = &m->objects;

	if (s->n_consumers >= ELEMENTSOF(s->consumers))
		return -ENOSPC;
	s->consumers[s->n_consumers++] = (ObjectConsumer) { .handlers = h, .userdata = userdata };
	return 0;
}

static int on_client_io(EventSource *src, int fd, uint32_t revents, void *userdata) {
	Manager *m = userdata;
	int r = m->objects.kube ? kube_client_dispatch(m->objects.kube) : etcd_client_dispatch(m->objects.etcd);

	if (r < 0)
		log_debug_errno(r, "Object cache: client dispatch: %m");
	return 0;
}

static int on_relist(EventSource *src, void *userdata) {
	Manager *m = userdata;

	log_debug("Object cache: periodic relist");
	for (size_t i = 0; i < ELEMENTSOF(object_kinds); i++)
		(void) object_cache_relist(m->objects.cache, object_kinds[i]);
	return 0;
}

/*
 * The datastore and API server addresses weftd itself talks to: no Service may take them
 * (service-admission.h). Names are resolved once, at start: a Service created later cannot make
 * weftd's own connections its own by a DNS answer, and the event loop never blocks on DNS.
 */
static int infra_add(Manager *m, const IpAddr *a) {
	ObjectsState *s = &m->objects;
	IpAddr *v;

	for (size_t i = 0; i < s->n_infra; i++)
		if (ip_addr_equal(&s->infra[i], a))
			return 0;
	v = reallocarray(s->infra, s->n_infra + 1, sizeof(IpAddr));
	if (!v)
		return -ENOMEM;
	s->infra = v;
	s->infra[s->n_infra++] = *a;
	return 0;
}

/* "scheme://host:port/path", "host:port", "[v6]:port": the host's addresses. An unresolvable name
 * is logged (weftd cannot reach it either) and skipped. */
static int infra_add_url(Manager *m, const char *url) {
	const char *h = strstr(url, "://");
	_cleanup_free_ char *host = NULL;
	struct addrinfo *res = NULL, hints = { .ai_socktype = SOCK_STREAM };
	IpAddr a;
	size_t n;
	int r = 0;

	h = h ? h + 3 : url;
	if (*h == '[') {
		n = strcspn(h + 1, "]");
		host = strndup(h + 1, n);
	} else {
		n = strcspn(h, ":/");
		host = strndup(h, n);
	}
	if (!host)
		return -ENOMEM;
	if (isempty(host))
		return 0;
	if (ip_addr_parse(host, &a) >= 0)
		return infra_add(m, &a);
	if (getaddrinfo(host, NULL, &hints, &res) != 0) {
		log_warning("Cannot resolve %s (%s): Services may not be refused its addresses", host, url);
		return 0;
	}
	for (struct addrinfo *ai = res; ai && r >= 0; ai = ai->ai_next) {
		a = (IpAddr) { .family = ai->ai_family };
		if (ai->ai_family == AF_INET)
			a.in = ((struct sockaddr_in *) ai->ai_addr)->sin_addr;
		else if (ai->ai_family == AF_INET6)
			a.in6 = ((struct sockaddr_in6 *) ai->ai_addr)->sin6_addr;
		else
			continue;
		r = infra_add(m, &a);
	}
	freeaddrinfo(res);
	return r;
}

static int infra_add_etcd(Manager *m) {
	_cleanup_strv_free_ char **urls = NULL;
	int r;

	r = strv_split(m->args.etcd_endpoints, ",", &urls);
	for (size_t i = 0; r >= 0 && urls && urls[i]; i++)
		r = infra_add_url(m, urls[i]);
	return r;
}

typedef struct AddrList {
	IpAddr *v;
	size_t n;
} AddrList;

static int addr_list_add(AddrList *l, const IpAddr *a) {
	IpAddr *v;

	for (size_t i = 0; i < l->n; i++)
		if (ip_addr_equal(&l->v[i], a))
			return 0;
	v = reallocarray(l->v, l->n + 1, sizeof(IpAddr));
	if (!v)
		return -ENOMEM;
	l->v = v;
	l->v[l->n++] = *a;
	return 0;
}

static int collect_addr(const NlAddr *a, void *userdata) {
	return addr_list_add(userdata, &a->prefix.addr);
}

/* LbAnnounceConfig: the backend announces (bgp), the underlay answers (l2). */
static int lb_bgp_set(void *userdata, const IpAddr *addrs, size_t n) {
	Manager *m = userdata;

	return backend_announce(&m->backend, addrs, n);
}

static int lb_underlay_ifindex(void *userdata) {
	Manager *m = userdata;

	return m->backend.underlay_ifindex;
}

/* ServiceAgentConfig.node_addresses: this node's link addresses and every accepted lease's public
 * IP (any node of the cluster). */
static int node_addresses(void *userdata, IpAddr **ret, size_t *ret_n) {
	Manager *m = userdata;
	AddrList l = {};
	int r;

	if (!m->rec.synced)
		return -EAGAIN;
	r = nl_addr_dump(m->nl, AF_UNSPEC, 0, collect_addr, &l);
	if (r >= 0 && ip_addr_is_set(&m->backend.public_ip))
		r = addr_list_add(&l, &m->backend.public_ip);
	for (size_t i = 0; r >= 0 && i < m->rec.n_nodes; i++)
		if (m->rec.nodes[i].verdict == LEASE_ACCEPTED && ip_addr_is_set(&m->rec.nodes[i].lease.public_ip))
			r = addr_list_add(&l, &m->rec.nodes[i].lease.public_ip);
	if (r < 0) {
		free(l.v);
		return r;
	}
	*ret = l.v;
	*ret_n = l.n;
	return 0;
}

static uint16_t listen_port(const char *listen) {
	const char *c = strrchr(listen, ':');
	unsigned p;

	return c && safe_atou32(c + 1, &p) >= 0 && p <= 65535 ? (uint16_t) p : 0;
}

/* Leases and objects both from Kubernetes: the objects wait for the lease datastore's open(),
 * which loads the kubeconfig, and take a copy of it (their own client, their own connections). */
static bool needs_datastore_config(Manager *m) {
	return m->args.objects_datastore == OBJECTS_DATASTORE_KUBERNETES && m->ds_ops && m->ds_ops->kube_config;
}

static int open_kube_client(Manager *m) {
	_cleanup_(kubeconfig_freep) KubeConfig *k = NULL;
	_cleanup_free_ char *err = NULL;
	int r;

	if (needs_datastore_config(m)) {
		r = kubeconfig_copy(m->ds_ops->kube_config(m->ds), &k);
		if (r < 0)
			return log_error_errno(r, "Failed to copy the Kubernetes client config: %m");
	} else {
		r = m->args.kubeconfig ? kubeconfig_load(m->args.kubeconfig, &k, &err)
				       : kubeconfig_load_in_cluster(NULL, &k, &err);
		if (r < 0) {
			log_error("--objects-datastore kubernetes: cannot load %s: %s",
				  m->args.kubeconfig ?: "the in-cluster service account", err ?: strerror(-r));
			return -EXIT_CONFIG;
		}
		log_info("Loaded kubeconfig %s", k->source);
	}
	r = infra_add_url(m, k->server);
	if (r < 0)
		return log_error_errno(r, "Failed to resolve the API server %s: %m", k->server);
	r = kube_client_new(&k, &m->objects.kube);
	if (r < 0)
		return log_error_errno(r, "Failed to create the Kubernetes client for objects: %m");
	r = kube_object_source_new(m->objects.kube, &m->objects.kube_source);
	if (r < 0)
		return log_error_errno(r, "Failed to create the Kubernetes object source: %m");
	m->objects.ops = &kube_object_source_ops;
	m->objects.source = m->objects.kube_source;
	return 0;
}

static int open_etcd_client(Manager *m) {
	int r;

	r = etcd_client_new(m->args.etcd_endpoints, &m->objects.etcd);
	if (r < 0) {
		log_error("--objects-datastore etcd: invalid --etcd-endpoints '%s'", m->args.etcd_endpoints);
		return -EXIT_CONFIG;
	}
	r = etcd_object_source_new(m->objects.etcd, m->args.etcd_prefix, &m->objects.etcd_source);
	if (r == -EINVAL) {
		log_error("--objects-datastore etcd: invalid --etcd-prefix '%s'", m->args.etcd_prefix);
		return -EXIT_CONFIG;
	}
	if (r < 0)
		return log_error_errno(r, "Failed to create the etcd object source: %m");
	m->objects.ops = &etcd_object_source_ops;
	m->objects.source = m->objects.etcd_source;
	return 0;
}

/* weftd's namespace in Kubernetes mode, where the LoadBalancer Lease lives: $POD_NAMESPACE (the
 * downward API), else the service account's, else kube-system (where deploy/kubernetes puts the
 * DaemonSet). */
static char *own_namespace(void) {
	_cleanup_free_ char *sa = NULL;
	const char *env = getenv("POD_NAMESPACE");

	if (!isempty(env))
		return strdup(env);
	if (read_full_file(KUBE_SA_DIR "/namespace", &sa, NULL) >= 0) {
		sa[strcspn(sa, " \t\r\n")] = 0;
		if (!isempty(sa))
			return TAKE_PTR(sa);
	}
	return strdup("kube-system");
}

int manager_objects_start(Manager *m) {
	ObjectsState *s = &m->objects;
	int r, fd;

	if (m->args.objects_datastore == OBJECTS_DATASTORE_NONE && m->args.flow_log && !s->cache) {
		/* once: s->cache stays NULL, so say it on the first call only */
		static bool warned;

		if (!warned)
			log_warning("--flow-log needs an object source (--objects-datastore): the flow log is off");
		warned = true;
	}
	if (m->args.objects_datastore == OBJECTS_DATASTORE_NONE || s->cache)
		return 0;
	if (needs_datastore_config(m) && !m->ds)
		return 0; /* again from start-up, once the datastore is open */
	r = m->args.objects_datastore == OBJECTS_DATASTORE_KUBERNETES ? open_kube_client(m) : open_etcd_client(m);
	if (r < 0)
		return r;
	if (m->args.datastore == DATASTORE_ETCD) {
		r = infra_add_etcd(m);
		if (r < 0)
			return log_error_errno(r, "Failed to resolve --etcd-endpoints: %m");
	} else if (m->ds_ops && m->ds_ops->kube_config && m->ds &&
		   m->args.objects_datastore != OBJECTS_DATASTORE_KUBERNETES) {
		r = infra_add_url(m, m->ds_ops->kube_config(m->ds)->server);
		if (r < 0)
			return log_error_errno(r, "Failed to resolve the API server: %m");
	}
	r = object_cache_new(NULL, &s->cache);
	if (r < 0)
		return log_error_errno(r, "Failed to create the object cache: %m");
	for (size_t i = 0; i < ELEMENTSOF(object_kinds); i++) {
		r = object_cache_add_kind(s->cache, object_kinds[i], s->ops, s->source, &manager_object_handlers, m);
		if (r < 0)
			return log_error_errno(r, "Failed to add %s to the object cache: %m",
					       kube_kind_info(object_kinds[i])->resource);
	}
	object_cache_set_all_synced(s->cache, on_all_synced, m);
	r = policy_agent_new(s->cache, m->loop, m->args.node_name,
			     m->args.policy_log_drops || m->args.flow_log || getenv("WEFT_POLICY_LOG_DROPS"),
			     &s->policy);
	if (r >= 0)
		r = manager_objects_add_consumer(m, &policy_agent_handlers, s->policy);
	if (r < 0)
		return log_error_errno(r, "Failed to set up NetworkPolicy enforcement: %m");
	r = service_agent_new(s->cache, m->loop,
			      &(ServiceAgentConfig) {
					      .node = m->args.node_name,
					      .network = &m->config,
					      .service_ranges = m->args.service_ranges,
					      .n_service_ranges = m->args.n_service_ranges,
					      .kube_mode = m->args.objects_datastore == OBJECTS_DATASTORE_KUBERNETES,
					      .infra = s->infra,
					      .n_infra = s->n_infra,
					      .external_ip_cidrs = m->args.service_external_ip_cidrs,
					      .n_external_ip_cidrs = m->args.n_service_external_ip_cidrs,
					      .node_port_min = m->args.service_node_port_min,
					      .node_port_max = m->args.service_node_port_max,
					      .listen_port = listen_port(m->args.listen),
					      .node_addresses = node_addresses,
					      .node_addresses_userdata = m,
			      },
			      &s->services);
	if (r >= 0)
		r = manager_objects_add_consumer(m, &service_agent_handlers, s->services);
	if (r < 0)
		return log_error_errno(r, "Failed to set up Services: %m");
	if (s->kube) {
		s->namespace = own_namespace();
		if (!s->namespace)
			return log_error_errno(-ENOMEM, "Failed to set up LoadBalancer address assignment: %m");
	}
	if (m->args.flow_log) {
		r = flow_agent_new(s->cache, m->loop,
				   &(FlowAgentConfig) { .node = m->args.node_name,
							.network = &m->config,
							.service_ranges = m->args.service_ranges,
							.n_service_ranges = m->args.n_service_ranges,
							.rate = m->args.flow_log_rate,
							.policy = s->policy },
				   &s->flows);
		if (r >= 0)
			r = manager_objects_add_consumer(m, &flow_agent_handlers, s->flows);
		if (r < 0)
			return log_error_errno(r, "Failed to start the flow log (conntrack events): %m");
	}
	r = lb_agent_new(s->cache, m->loop,
			 &(LbAgentConfig) { .node = m->args.node_name,
					    .network = &m->config,
					    .etcd = s->etcd,
					    .prefix = m->args.etcd_prefix,
					    .kube = s->kube,
					    .namespace = s->namespace },
			 &s->lb);
	if (r >= 0)
		r = manager_objects_add_consumer(m, &lb_agent_handlers, s->lb);
	if (r < 0)
		return log_error_errno(r, "Failed to set up LoadBalancer address assignment: %m");
	r = lb_announce_new(s->cache, m->loop,
			    &(LbAnnounceConfig) {
					    .node = m->args.node_name,
					    .network = &m->config,
					    .members_ops = s->kube   ? &lb_members_kube_ops
							   : s->etcd ? &lb_members_etcd_ops
								     : NULL,
					    .members = { .node = m->args.node_name,
							 .prefix = m->args.etcd_prefix,
							 .etcd = s->etcd,
							 .kube = s->kube,
							 .namespace = s->namespace },
					    .bgp_set = lb_bgp_set,
					    .underlay_ifindex = lb_underlay_ifindex,
					    .userdata = m,
			    },
			    &s->announce);
	if (r >= 0)
		r = manager_objects_add_consumer(m, &lb_announce_handlers, s->announce);
	if (r < 0)
		return log_error_errno(r, "Failed to set up LoadBalancer announcement: %m");
	r = object_cache_attach(s->cache, m->loop);
	if (r < 0)
		return log_error_errno(r, "Failed to attach the object cache: %m");
	fd = s->kube ? kube_client_get_fd(s->kube) : etcd_client_get_fd(s->etcd);
	r = event_loop_add_io(m->loop, fd, EPOLLIN, on_client_io, m, &s->client_io);
	if (r < 0)
		return log_error_errno(r, "Failed to watch the object client: %m");
	if (m->args.relist_usec > 0) {
		r = event_loop_add_timer(m->loop, on_relist, m, &s->relist_timer);
		if (r >= 0)
			r = event_source_arm(s->relist_timer, m->args.relist_usec, m->args.relist_usec);
		if (r < 0)
			return log_error_errno(r, "Failed to set up the object relist timer: %m");
	}
	s->started = monotonic_seconds();
	r = object_cache_start(s->cache);
	if (r < 0) /* that kind backs off and retries */
		log_warning_errno(r, "Object cache: first list failed to start: %m");
	log_info("Object cache: %s from %s", "namespaces, pods, networkpolicies, services, endpointslices",
		 objects_datastore_to_string(m->args.objects_datastore));
	return 0;
}

void manager_objects_done(Manager *m) {
	ObjectsState *s = &m->objects;

	/* The cache first: it cancels its requests on the clients. */
	s->cache = object_cache_free(s->cache);
	flow_agent_free(s->flows); /* before the policy agent, whose drop log it observes */
	policy_agent_free(s->policy);
	service_agent_free(s->services);
	lb_agent_free(s->lb);
	lb_announce_free(s->announce);
	s->namespace = mfree(s->namespace);
	event_source_free(s->client_io);
	event_source_free(s->relist_timer);
	kube_object_source_free(s->kube_source);
	etcd_object_source_free(s->etcd_source);
	kube_client_free(s->kube);
	etcd_client_free(s->etcd);
	for (size_t i = 0; i < s->n_rejected_seen; i++)
		free(s->rejected_seen[i]);
	free(s->rejected_seen);
	free(s->infra);
	free(m->args.service_external_ip_cidrs);
	m->args.service_external_ip_cidrs = NULL;
	m->args.n_service_external_ip_cidrs = 0;
	*s = (ObjectsState) {};
}

/* ---- /metrics and /debug/objects ---- */

static void metric_per_kind(FILE *f, const ObjectCache *c, const char *name, const char *type, const char *help,
			    uint64_t (*get)(const ObjectCache *c, KubeKind k)) {
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	for (size_t i = 0; i < ELEMENTSOF(object_kinds); i++)
		fprintf(f, "%s{kind=\"%s\"} %" PRIu64 "\n", name, kube_kind_info(object_kinds[i])->resource,
			get(c, object_kinds[i]));
}

static uint64_t get_synced(const ObjectCache *c, KubeKind k) {
	return object_cache_synced(c, k);
}
static uint64_t get_objects(const ObjectCache *c, KubeKind k) {
	return object_cache_stats(c, k).objects;
}
static uint64_t get_lists(const ObjectCache *c, KubeKind k) {
	return object_cache_stats(c, k).lists;
}
static uint64_t get_watches(const ObjectCache *c, KubeKind k) {
	return object_cache_stats(c, k).watches;
}
static uint64_t get_stale(const ObjectCache *c, KubeKind k) {
	return object_cache_stats(c, k).stale;
}
static uint64_t get_failures(const ObjectCache *c, KubeKind k) {
	return object_cache_stats(c, k).failures;
}
static uint64_t get_rejected(const ObjectCache *c, KubeKind k) {
	return object_cache_stats(c, k).rejected;
}
static uint64_t get_held(const ObjectCache *c, KubeKind k) {
	return object_cache_stats(c, k).held;
}

/* Fail closed, visibly: how many objects are held at their last good version. */
static void render_held_metric(FILE *f, const ObjectCache *c) {
	metric_per_kind(f, c, "weft_cache_stale_objects", "gauge",
			"Cached objects whose newest version was refused: the last version that decoded is in force.",
			get_held);
}

int manager_objects_render_metrics(Manager *m, FILE *f) {
	const ObjectCache *c = m->objects.cache;

	if (!c)
		return 0;
	if (m->objects.policy)
		policy_agent_render_metrics(m->objects.policy, f);
	if (m->objects.services)
		service_agent_render_metrics(m->objects.services, f);
	lb_agent_render_metrics(m->objects.lb, f);
	lb_announce_render_metrics(m->objects.announce, f);
	if (m->objects.flows)
		flow_agent_render_metrics(m->objects.flows, f);
	metric_per_kind(f, c, "weft_cache_synced", "gauge", "1 once the kind's first list is in the object cache.",
			get_synced);
	metric_per_kind(f, c, "weft_cache_objects", "gauge", "Objects of the kind in the object cache.", get_objects);
	metric_per_kind(f, c, "weft_cache_lists_total", "counter",
			"Complete LISTs of the kind (first list and relists).", get_lists);
	metric_per_kind(f, c, "weft_cache_watches_total", "counter", "WATCHes of the kind started.", get_watches);
	metric_per_kind(f, c, "weft_cache_expired_total", "counter",
			"Watches ended by 410 Gone (resourceVersion compacted away): the kind was listed again.",
			get_stale);
	metric_per_kind(f, c, "weft_cache_failures_total", "counter", "Failed lists and watches (each backed off).",
			get_failures);
	metric_per_kind(f, c, "weft_cache_rejected_objects_total", "counter",
			"Objects and versions refused at the boundary (never cached).", get_rejected);
	render_held_metric(f, c);
	fputs("# HELP weft_cache_deltas_total Deltas the object cache delivered, by kind and type.\n"
	      "# TYPE weft_cache_deltas_total counter\n",
	      f);
	for (size_t i = 0; i < ELEMENTSOF(object_kinds); i++) {
		ObjectCacheStats st = object_cache_stats(c, object_kinds[i]);
		const char *k = kube_kind_info(object_kinds[i])->resource;

		fprintf(f, "weft_cache_deltas_total{kind=\"%s\",type=\"added\"} %" PRIu64 "\n", k, st.added);
		fprintf(f, "weft_cache_deltas_total{kind=\"%s\",type=\"updated\"} %" PRIu64 "\n", k, st.updated);
		fprintf(f, "weft_cache_deltas_total{kind=\"%s\",type=\"deleted\"} %" PRIu64 "\n", k, st.deleted);
	}
	fputs("# HELP weft_cache_last_delta_timestamp_seconds When the kind's last delta was delivered (unix time).\n"
	      "# TYPE weft_cache_last_delta_timestamp_seconds gauge\n",
	      f);
	for (size_t i = 0; i < ELEMENTSOF(object_kinds); i++)
		fprintf(f, "weft_cache_last_delta_timestamp_seconds{kind=\"%s\"} %.6f\n",
			kube_kind_info(object_kinds[i])->resource, m->objects.last_delta[object_kinds[i]]);
	return 0;
}

static int held_append(const KubeObject *o, const char *reason, void *userdata) {
	json_t *a = userdata, *e;

	e = json_pack("{s:s, s:s, s:s, s:s}", "kind", kube_kind_info(o->kind)->kind, "namespace", o->namespace ?: "",
		      "name", o->name, "reason", reason);
	return e && json_array_append_new(a, e) >= 0 ? 0 : -ENOMEM;
}

/* The objects held at their last good version, with why, for /debug/objects. */
static json_t *debug_held(Manager *m) {
	json_t *a = json_array();

	for (size_t i = 0; a && i < ELEMENTSOF(object_kinds); i++)
		if (object_cache_foreach_held(m->objects.cache, object_kinds[i], held_append, a) < 0)
			a = (json_decref(a), NULL);
	return a;
}

static int debug_summary(Manager *m, StatusResponse *resp) {
	json_t *kinds = json_object(), *doc;

	if (!kinds)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(object_kinds); i++) {
		ObjectCacheStats st = object_cache_stats(m->objects.cache, object_kinds[i]);
		json_t *k = json_pack("{s:I, s:b, s:s, s:I, s:I, s:I, s:I}", "objects", (json_int_t) st.objects,
				      "synced", object_cache_synced(m->objects.cache, object_kinds[i]),
				      "resourceVersion",
				      object_cache_resource_version(m->objects.cache, object_kinds[i]), "lists",
				      (json_int_t) st.lists, "expired", (json_int_t) st.stale, "rejected",
				      (json_int_t) st.rejected, "held", (json_int_t) st.held);

		if (!k || json_object_set_new(kinds, kube_kind_info(object_kinds[i])->resource, k) < 0) {
			json_decref(kinds);
			return -ENOMEM;
		}
	}
	doc = json_pack("{s:s, s:o, s:o*}", "source", objects_datastore_to_string(m->args.objects_datastore), "kinds",
			kinds, "held", debug_held(m));
	if (!doc)
		return -ENOMEM;
	resp->body = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return resp->body ? 0 : -ENOMEM;
}

int manager_objects_debug(Manager *m, const char *query, StatusResponse *resp) {
	_cleanup_free_ char *kind_s = NULL, *ns = NULL;
	KubeKind kind;
	json_t *doc;
	char *body;

	resp->content_type = "application/json";
	if (!m->objects.cache) {
		resp->status = 404;
		resp->content_type = "text/plain; charset=utf-8";
		resp->body = strdup("object cache disabled (--objects-datastore none)\n");
		return resp->body ? 0 : -ENOMEM;
	}
	kind_s = status_server_query_get(query, "kind");
	ns = status_server_query_get(query, "namespace");
	if (!kind_s) {
		resp->status = 200;
		return debug_summary(m, resp);
	}
	if (kube_kind_from_string(kind_s, &kind) < 0 || !(doc = object_cache_dump(m->objects.cache, kind, ns))) {
		resp->status = 404;
		resp->content_type = "text/plain; charset=utf-8";
		resp->body = strdup_printf("kind '%s' is not cached\n", kind_s);
		return resp->body ? 0 : -ENOMEM;
	}
	body = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!body)
		return -ENOMEM;
	resp->status = 200;
	resp->body = body;
	return 0;
}
