/* SPDX-License-Identifier: Apache-2.0 */
/* The Service datapath's counters read from the kernel (service-counters.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <arpa/inet.h>
#include <endian.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/log.h"
#include "daemon/service/service-compile.h"
#include "daemon/service/service-counters.h"
#include "shared/ip/ip-addr.h"
#include "shared/nft/nft-names.h"
#include "shared/nl/nfnl.h"

#define DUMP_BUF (64 * 1024) /* a dump message is at most 32 KiB */
#define TABLE "weft"         /* inet weft (NFT_TABLE_INET) */

bool svc_map_counted(const char *map) {
	return startswith(map, "svc-eps") || startswith(map, "svc-noep");
}

static int str_cmp(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* ---- decoding ---- */

typedef struct Reader {
	SvcKernelState *s;
	const char *const *only; /* sorted; NULL: every counted map */
	size_t n_only;
	SvcKernelMap *map; /* the map whose elements are being dumped */
	size_t cap;
	int r;
} Reader;

static const char *proto_name(uint8_t p) {
	return p == IPPROTO_TCP ? "tcp" : p == IPPROTO_UDP ? "udp" : p == IPPROTO_SCTP ? "sctp" : NULL;
}

/* An address of `family` at p (len bytes left), as ip_addr_to_string() writes it. */
static bool put_addr(char *buf, size_t size, int family, const uint8_t *p, size_t len) {
	IpAddr a = { .family = family };
	char s[IP_ADDR_STRLEN];

	if (len < (family == AF_INET ? 4u : 16u))
		return false;
	if (family == AF_INET)
		memcpy(&a.in, p, 4);
	else
		memcpy(&a.in6, p, 16);
	return snprintf(buf, size, "%s", ip_addr_to_string(&a, s)) < (int) size;
}

static uint16_t port_at(const uint8_t *p) {
	return (uint16_t) (p[0] << 8 | p[1]);
}

/* The key of an element of map `name` (svc-eps<f>-<proto>-<n>, svc-noep<f>, svc-noep-nodeports<f>). */
static char *decode_key(const char *name, const uint8_t *p, size_t len) {
	int family = endswith(name, "6") ? AF_INET6 : AF_INET;
	size_t al = family == AF_INET ? 4 : 16;
	char a[IP_ADDR_STRLEN];
	const char *proto;

	if (startswith(name, "svc-eps")) {
		uint32_t k;

		if (len != 4)
			return NULL;
		memcpy(&k, p, 4); /* numgen's register: host order */
		return strdup_printf("%" PRIu32, k);
	}
	if (startswith(name, "svc-noep-nodeports")) {
		if (len != 8 || !(proto = proto_name(p[0])))
			return NULL;
		return strdup_printf("%s . %u", proto, port_at(p + 4));
	}
	family = startswith(name, "svc-eps6") || streq(name, "svc-noep6") ? AF_INET6 : AF_INET;
	al = family == AF_INET ? 4 : 16;
	if (len != al + 8 || !put_addr(a, sizeof(a), family, p, len) || !(proto = proto_name(p[al])))
		return NULL;
	return strdup_printf("%s . %s . %u", a, proto, port_at(p + al + 4));
}

/* An endpoint map's value: address . port */
static char *decode_value(const char *name, const uint8_t *p, size_t len) {
	int family = startswith(name, "svc-eps6") ? AF_INET6 : AF_INET;
	size_t al = family == AF_INET ? 4 : 16;
	char a[IP_ADDR_STRLEN];

	if (len != al + 4 || !put_addr(a, sizeof(a), family, p, len))
		return NULL;
	return strdup_printf("%s . %u", a, port_at(p + al));
}

static int nested_value_cb(const struct nlattr *a, void *data) {
	const struct nlattr **out = data;
	int t = mnl_attr_get_type(a);

	if (t == NFTA_DATA_VALUE || t == NFTA_DATA_VERDICT)
		out[t] = a;
	return MNL_CB_OK;
}

static int verdict_cb(const struct nlattr *a, void *data) {
	const struct nlattr **out = data;
	int t = mnl_attr_get_type(a);

	if (t == NFTA_VERDICT_CODE && mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
		out[t] = a;
	else if (t == NFTA_VERDICT_CHAIN && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
		out[t] = a;
	return MNL_CB_OK;
}

/* NFTA_SET_ELEM_DATA: "10.244.1.5 . 8080", "goto svc-reject", "drop" (NULL: something else) */
static char *decode_data(const char *name, const struct nlattr *d) {
	const struct nlattr *tb[NFTA_DATA_MAX + 1] = {}, *v[NFTA_VERDICT_MAX + 1] = {};

	if (mnl_attr_parse_nested(d, nested_value_cb, tb) != MNL_CB_OK)
		return NULL;
	if (tb[NFTA_DATA_VALUE])
		return decode_value(name, mnl_attr_get_payload(tb[NFTA_DATA_VALUE]),
				    mnl_attr_get_payload_len(tb[NFTA_DATA_VALUE]));
	if (!tb[NFTA_DATA_VERDICT] || mnl_attr_parse_nested(tb[NFTA_DATA_VERDICT], verdict_cb, v) != MNL_CB_OK ||
	    !v[NFTA_VERDICT_CODE])
		return NULL;
	switch ((int32_t) ntohl(mnl_attr_get_u32(v[NFTA_VERDICT_CODE]))) {
	case NF_DROP: return strdup("drop");
	case NFT_GOTO:
		return v[NFTA_VERDICT_CHAIN] ? strdup_printf("goto %s", mnl_attr_get_str(v[NFTA_VERDICT_CHAIN])) : NULL;
	case NFT_JUMP:
		return v[NFTA_VERDICT_CHAIN] ? strdup_printf("jump %s", mnl_attr_get_str(v[NFTA_VERDICT_CHAIN])) : NULL;
	default: return NULL;
	}
}

static int counter_cb(const struct nlattr *a, void *data) {
	const struct nlattr **out = data;

	if (mnl_attr_get_type(a) == NFTA_COUNTER_PACKETS && mnl_attr_validate(a, MNL_TYPE_U64) >= 0)
		*out = a;
	return MNL_CB_OK;
}

static int expr_cb(const struct nlattr *a, void *data) {
	const struct nlattr **out = data;
	int t = mnl_attr_get_type(a);

	if (t == NFTA_EXPR_NAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
		out[t] = a;
	else if (t == NFTA_EXPR_DATA)
		out[t] = a;
	return MNL_CB_OK;
}

/* A counter expression's packets (false: not a counter). */
static bool expr_packets(const struct nlattr *e, uint64_t *ret) {
	const struct nlattr *tb[NFTA_EXPR_MAX + 1] = {}, *pk = NULL;

	if (mnl_attr_parse_nested(e, expr_cb, tb) != MNL_CB_OK || !tb[NFTA_EXPR_NAME] || !tb[NFTA_EXPR_DATA] ||
	    !streq(mnl_attr_get_str(tb[NFTA_EXPR_NAME]), "counter") ||
	    mnl_attr_parse_nested(tb[NFTA_EXPR_DATA], counter_cb, &pk) != MNL_CB_OK || !pk)
		return false;
	*ret = be64toh(mnl_attr_get_u64(pk));
	return true;
}

static int elem_attr_cb(const struct nlattr *a, void *data) {
	const struct nlattr **tb = data;
	int t = mnl_attr_get_type(a);

	if (t > 0 && t <= NFTA_SET_ELEM_MAX && mnl_attr_validate(a, MNL_TYPE_NESTED) >= 0)
		tb[t] = a;
	return MNL_CB_OK;
}

static int elem_cb(const struct nlattr *a, void *data) {
	Reader *rd = data;
	SvcKernelMap *m = rd->map;
	const struct nlattr *tb[NFTA_SET_ELEM_MAX + 1] = {}, *kv[NFTA_DATA_MAX + 1] = {}, *x;
	_cleanup_free_ char *key = NULL, *value = NULL;
	uint64_t packets = 0;
	bool counted = false;

	if (mnl_attr_get_type(a) != NFTA_LIST_ELEM || mnl_attr_parse_nested(a, elem_attr_cb, tb) != MNL_CB_OK)
		return MNL_CB_OK;
	if (tb[NFTA_SET_ELEM_KEY] && mnl_attr_parse_nested(tb[NFTA_SET_ELEM_KEY], nested_value_cb, kv) == MNL_CB_OK &&
	    kv[NFTA_DATA_VALUE])
		key = decode_key(m->name, mnl_attr_get_payload(kv[NFTA_DATA_VALUE]),
				 mnl_attr_get_payload_len(kv[NFTA_DATA_VALUE]));
	if (tb[NFTA_SET_ELEM_DATA])
		value = decode_data(m->name, tb[NFTA_SET_ELEM_DATA]);
	if (tb[NFTA_SET_ELEM_EXPR])
		counted = expr_packets(tb[NFTA_SET_ELEM_EXPR], &packets);
	if (tb[NFTA_SET_ELEM_EXPRESSIONS])
		mnl_attr_for_each_nested(x, tb[NFTA_SET_ELEM_EXPRESSIONS])
			if (!counted)
				counted = expr_packets(x, &packets);
	if (!key || !value) {
		m->readable = false; /* an element we did not write: the full sync flushes this map */
		return MNL_CB_OK;
	}
	if (m->n_elems == rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 16;
		SvcKernelElem *v = reallocarray(m->elems, cap, sizeof(SvcKernelElem));

		if (!v) {
			rd->r = -ENOMEM;
			return MNL_CB_ERROR;
		}
		m->elems = v;
		rd->cap = cap;
	}
	m->elems[m->n_elems++] = (SvcKernelElem) { .key = TAKE_PTR(key), .value = TAKE_PTR(value), .packets = packets };
	return MNL_CB_OK;
}

static int elems_msg_cb(const struct nlmsghdr *nlh, void *data) {
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == NFTA_SET_ELEM_LIST_ELEMENTS && mnl_attr_validate(a, MNL_TYPE_NESTED) >= 0 &&
		    mnl_attr_parse_nested(a, elem_cb, data) != MNL_CB_OK)
			return MNL_CB_ERROR;
	return MNL_CB_OK;
}

static int set_msg_cb(const struct nlmsghdr *nlh, void *data) {
	Reader *rd = data;
	SvcKernelState *s = rd->s;
	const struct nlattr *a;
	const char *name = NULL;
	bool counted = false;
	char *n;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		int t = mnl_attr_get_type(a);

		if (t == NFTA_SET_NAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
			name = mnl_attr_get_str(a);
		else if (t == NFTA_SET_EXPR || t == NFTA_SET_EXPRESSIONS)
			counted = true; /* the only expression weft declares on a set is the counter */
	}
	if (!name || !svc_map_counted(name) ||
	    (rd->only && !bsearch_safe(&name, rd->only, rd->n_only, sizeof(char *), str_cmp)))
		return MNL_CB_OK;
	if (s->n_maps == rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 64;
		SvcKernelMap *v = reallocarray(s->maps, cap, sizeof(SvcKernelMap));

		if (!v) {
			rd->r = -ENOMEM;
			return MNL_CB_ERROR;
		}
		s->maps = v;
		rd->cap = cap;
	}
	n = strdup(name);
	if (!n) {
		rd->r = -ENOMEM;
		return MNL_CB_ERROR;
	}
	s->maps[s->n_maps++] = (SvcKernelMap) { .name = n, .counted = counted, .readable = counted };
	return MNL_CB_OK;
}

static int obj_msg_cb(const struct nlmsghdr *nlh, void *data) {
	Reader *rd = data;
	SvcKernelState *s = rd->s;
	const struct nlattr *a, *pk = NULL;
	const char *name = NULL;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		int t = mnl_attr_get_type(a);

		if (t == NFTA_OBJ_NAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
			name = mnl_attr_get_str(a);
		else if (t == NFTA_OBJ_DATA && mnl_attr_validate(a, MNL_TYPE_NESTED) >= 0)
			(void) mnl_attr_parse_nested(a, counter_cb, &pk);
	}
	if (!name || !pk || !startswith(name, SVC_PREFIX))
		return MNL_CB_OK;
	if (s->n_counters == rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 64;
		char **v = reallocarray(s->counters, cap, sizeof(char *));
		uint64_t *p = v ? reallocarray(s->counter_packets, cap, sizeof(uint64_t)) : NULL;

		if (v)
			s->counters = v;
		if (!p) {
			rd->r = -ENOMEM;
			return MNL_CB_ERROR;
		}
		s->counter_packets = p;
		rd->cap = cap;
	}
	s->counters[s->n_counters] = strdup(name);
	if (!s->counters[s->n_counters]) {
		rd->r = -ENOMEM;
		return MNL_CB_ERROR;
	}
	s->counter_packets[s->n_counters++] = be64toh(mnl_attr_get_u64(pk));
	return MNL_CB_OK;
}

/* ---- sorting and lookups ---- */

static int map_cmp(const void *a, const void *b) {
	return strcmp(((const SvcKernelMap *) a)->name, ((const SvcKernelMap *) b)->name);
}

static int kelem_cmp(const void *a, const void *b) {
	return strcmp(((const SvcKernelElem *) a)->key, ((const SvcKernelElem *) b)->key);
}

typedef struct CounterIdx {
	char *name;
	uint64_t packets;
} CounterIdx;

static int cidx_cmp(const void *a, const void *b) {
	return strcmp(((const CounterIdx *) a)->name, ((const CounterIdx *) b)->name);
}

static int sort_counters(SvcKernelState *s) {
	_cleanup_free_ CounterIdx *v = calloc(s->n_counters + 1, sizeof(CounterIdx));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_counters; i++)
		v[i] = (CounterIdx) { s->counters[i], s->counter_packets[i] };
	qsort_safe(v, s->n_counters, sizeof(CounterIdx), cidx_cmp);
	for (size_t i = 0; i < s->n_counters; i++) {
		s->counters[i] = v[i].name;
		s->counter_packets[i] = v[i].packets;
	}
	return 0;
}

const SvcKernelMap *svc_kernel_map(const SvcKernelState *s, const char *name) {
	SvcKernelMap key = { .name = (char *) name };

	return s ? bsearch_safe(&key, s->maps, s->n_maps, sizeof(SvcKernelMap), map_cmp) : NULL;
}

const SvcKernelElem *svc_kernel_elem(const SvcKernelMap *m, const char *key) {
	SvcKernelElem k = { .key = (char *) key };

	return m ? bsearch_safe(&k, m->elems, m->n_elems, sizeof(SvcKernelElem), kelem_cmp) : NULL;
}

SvcKernelElem *svc_kernel_elem_mut(SvcKernelMap *m, const char *key) {
	return (SvcKernelElem *) svc_kernel_elem(m, key);
}

bool svc_kernel_counter(const SvcKernelState *s, const char *name, uint64_t *ret) {
	char *const *p;

	if (!s)
		return false;
	p = bsearch_safe(&name, s->counters, s->n_counters, sizeof(char *), str_cmp);
	if (!p)
		return false;
	*ret = s->counter_packets[p - s->counters];
	return true;
}

SvcKernelState *svc_kernel_free(SvcKernelState *s) {
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n_maps; i++) {
		for (size_t k = 0; k < s->maps[i].n_elems; k++) {
			free(s->maps[i].elems[k].key);
			free(s->maps[i].elems[k].value);
		}
		free(s->maps[i].elems);
		free(s->maps[i].name);
	}
	free(s->maps);
	for (size_t i = 0; i < s->n_counters; i++)
		free(s->counters[i]);
	free(s->counters);
	free(s->counter_packets);
	free(s);
	return NULL;
}

/* ---- the read ---- */

static int read_once(SvcKernelState **ret, const char *const *only, size_t n_only) {
	_cleanup_free_ char *buf = malloc(DUMP_BUF);
	SvcKernelState *s = calloc(1, sizeof(SvcKernelState));
	struct mnl_socket *nl = NULL;
	struct nlmsghdr *nlh;
	uint32_t seq = (uint32_t) time(NULL);
	Reader rd = { .s = s, .only = only, .n_only = n_only };
	int r;

	if (!buf || !s) {
		free(s);
		return -ENOMEM;
	}
	nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl) {
		r = negative_errno();
		goto out;
	}
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = negative_errno();
		goto out;
	}
	/* the table's sets: which counted maps exist, with the counter flag or not */
	nlh = nfnl_put_header(buf, NFNL_SUBSYS_NFTABLES, NFT_MSG_GETSET, NLM_F_DUMP, ++seq, NFPROTO_INET, 0);
	mnl_attr_put_strz(nlh, NFTA_SET_TABLE, TABLE);
	r = nfnl_call(nl, nlh, buf, DUMP_BUF, set_msg_cb, &rd);
	if (r == -ENOENT)
		r = 0; /* no table: nothing of ours */
	if (r >= 0)
		r = rd.r;
	if (r < 0)
		goto out;
	qsort_safe(s->maps, s->n_maps, sizeof(SvcKernelMap), map_cmp);
	/* each counted map's elements */
	for (size_t i = 0; i < s->n_maps; i++) {
		SvcKernelMap *m = &s->maps[i];

		if (!m->counted)
			continue; /* recreated by the next full sync */
		rd = (Reader) { .s = s, .map = m };
		nlh = nfnl_put_header(buf, NFNL_SUBSYS_NFTABLES, NFT_MSG_GETSETELEM, NLM_F_DUMP, ++seq, NFPROTO_INET,
				      0);
		mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_TABLE, TABLE);
		if (!mnl_attr_put_strz_check(nlh, DUMP_BUF, NFTA_SET_ELEM_LIST_SET, m->name)) {
			r = -ENAMETOOLONG;
			goto out;
		}
		r = nfnl_call(nl, nlh, buf, DUMP_BUF, elems_msg_cb, &rd);
		if (r >= 0)
			r = rd.r;
		if (r < 0)
			goto out;
		qsort_safe(m->elems, m->n_elems, sizeof(SvcKernelElem), kelem_cmp);
		for (size_t k = 1; k < m->n_elems; k++)
			if (streq(m->elems[k - 1].key, m->elems[k].key))
				m->readable = false; /* two elements decoded alike: not ours */
	}
	/* the named counters */
	rd = (Reader) { .s = s };
	nlh = nfnl_put_header(buf, NFNL_SUBSYS_NFTABLES, NFT_MSG_GETOBJ, NLM_F_DUMP, ++seq, NFPROTO_INET, 0);
	mnl_attr_put_strz(nlh, NFTA_OBJ_TABLE, TABLE);
	mnl_attr_put_u32(nlh, NFTA_OBJ_TYPE, htonl(NFT_OBJECT_COUNTER));
	r = nfnl_call(nl, nlh, buf, DUMP_BUF, obj_msg_cb, &rd);
	if (r == -ENOENT)
		r = 0;
	if (r >= 0)
		r = rd.r;
	if (r >= 0)
		r = sort_counters(s);
out:
	if (nl)
		mnl_socket_close(nl);
	if (r < 0) {
		svc_kernel_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* A dump the kernel marks interrupted (NLM_F_DUMP_INTR: the ruleset changed meanwhile, a CNI
 * plugin's batch in another table) is read again, a few times. */
int svc_kernel_read(SvcKernelState **ret, const char *const *only, size_t n_only) {
	int r = -EINTR;

	for (int i = 0; i < 3 && r == -EINTR; i++)
		r = read_once(ret, only, n_only);
	return r;
}

/* ---- /metrics ---- */

/* The datapath's counters of every programmed Service, read with one bounded read
 * (service-counters.h); several counters add to a series (SvcSeries). */
static int map_name_cmp(const void *x, const void *y) {
	return strcmp(*(const char *const *) x, *(const char *const *) y);
}

/* The counted maps the units' series name (sorted, unique; *ret_n 0 when none). */
static int series_maps(ServiceUnit *const *units, size_t n_units, const char ***ret, size_t *ret_n) {
	const char **v = NULL;
	size_t n = 0, cap = 0, w = 0;

	for (size_t i = 0; i < n_units; i++)
		for (size_t k = 0; k < units[i]->n_series; k++) {
			const char *m = units[i]->series[k].map;

			if (!m || (n > 0 && v[n - 1] == m)) /* the names are static: adjacent repeats by pointer */
				continue;
			if (n == cap) {
				const char **nv = reallocarray(v, cap = cap ? cap * 2 : 64, sizeof(char *));

				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			v[n++] = m;
		}
	qsort_safe(v, n, sizeof(char *), map_name_cmp);
	for (size_t i = 0; i < n; i++)
		if (w == 0 || !streq(v[w - 1], v[i]))
			v[w++] = v[i];
	*ret = v;
	*ret_n = w;
	return 0;
}

void service_counters_render(ServiceUnit *const *units, size_t n_units, FILE *f) {
	_cleanup_(svc_kernel_freep) SvcKernelState *ks = NULL;
	_cleanup_free_ const char **maps = NULL;
	size_t n_maps = 0;
	int r = n_units > 0 ? series_maps(units, n_units, &maps, &n_maps) : 0;

	if (r >= 0 && n_units > 0) /* only the maps some series names; an empty list reads none */
		r = svc_kernel_read(&ks, maps ?: (const char *const[]) { "" }, n_maps);

	if (r < 0)
		log_debug_errno(r, "Services: cannot read the datapath's counters: %m");
	for (int noep = 0; noep <= 1; noep++) {
		fputs(noep ? "# HELP weft_service_no_endpoint_total New connections to a Service port without usable "
			     "endpoints, rejected (no endpoint at all) or dropped (externalTrafficPolicy Local, no "
			     "endpoint of this node).\n"
			     "# TYPE weft_service_no_endpoint_total counter\n"
			   : "# HELP weft_service_new_connections_total New connections this node DNATed to the "
			     "endpoint through the Service port.\n"
			     "# TYPE weft_service_new_connections_total counter\n",
		      f);
		for (size_t i = 0; ks && i < n_units; i++) {
			const ServiceUnit *u = units[i];

			for (size_t k = 0, j; k < u->n_series; k = j) {
				uint64_t sum = 0, v;

				for (j = k; j < u->n_series && u->series[j].noep == u->series[k].noep &&
					    streq(u->series[j].labels, u->series[k].labels);
				     j++) {
					const SvcSeries *se = &u->series[j];
					const SvcKernelElem *e;

					if (!se->map && svc_kernel_counter(ks, se->key, &v))
						sum += v;
					else if (se->map && (e = svc_kernel_elem(svc_kernel_map(ks, se->map), se->key)))
						sum += e->packets;
				}
				if (u->series[k].noep == (bool) noep)
					fprintf(f, "%s{%s} %" PRIu64 "\n",
						noep ? "weft_service_no_endpoint_total"
						     : "weft_service_new_connections_total",
						u->series[k].labels, sum);
			}
		}
	}
}
