/* SPDX-License-Identifier: Apache-2.0 */
/*
 * weft apply / delete / get against etcd. The messages and exit codes are kubectl's where a script
 * could care ("pod/web-1 created", `Error from server (NotFound)` and exit 1); a refused document is
 * named by file, document index, line, kind and name, with the decoder's reason (the field and
 * value), and nothing at all is written then.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "tool/object-cmd.h"
#include "shared/client/object-store.h"
#include "tool/yaml-json.h"

/* ---- kinds ---- */

typedef struct KindName {
	KubeKind kind;
	const char *api_version;
	const char *group; /* "" for the core group */
	const char *singular;
	const char *short_name;
} KindName;

static const KindName kind_names[] = {
	{ KUBE_KIND_POD, "v1", "", "pod", "po" },
	{ KUBE_KIND_NAMESPACE, "v1", "", "namespace", "ns" },
	{ KUBE_KIND_NETWORK_POLICY, "networking.k8s.io/v1", "networking.k8s.io", "networkpolicy", "netpol" },
	{ KUBE_KIND_SERVICE, "v1", "", "service", "svc" },
	{ KUBE_KIND_ENDPOINT_SLICE, "discovery.k8s.io/v1", "discovery.k8s.io", "endpointslice", NULL },
	{ KUBE_KIND_NODE, "v1", "", "node", "no" },
};

static const KindName *kind_name(KubeKind k) {
	for (size_t i = 0; i < ELEMENTSOF(kind_names); i++)
		if (kind_names[i].kind == k)
			return &kind_names[i];
	return NULL;
}

int object_kind_from_name(const char *s, KubeKind *ret) {
	for (size_t i = 0; i < ELEMENTSOF(kind_names); i++) {
		const KindName *n = &kind_names[i];
		const KubeKindInfo *ki = kube_kind_info(n->kind);
		const char *dot = strchr(s, '.');
		size_t len = dot ? (size_t) (dot - s) : strlen(s);

		/* "networkpolicies.networking.k8s.io": the group must be the kind's own */
		if (dot && !streq(dot + 1, n->group) && !(streq(dot + 1, "v1") && isempty(n->group)))
			continue;
		if ((strlen(n->singular) == len && strncasecmp(s, n->singular, len) == 0) ||
		    (strlen(ki->resource) == len && strncasecmp(s, ki->resource, len) == 0) ||
		    (strlen(ki->kind) == len && strncasecmp(s, ki->kind, len) == 0) ||
		    (!dot && n->short_name && strcasecmp(s, n->short_name) == 0)) {
			*ret = n->kind;
			return 0;
		}
	}
	return -EINVAL;
}

/* "pod", "networkpolicy.networking.k8s.io": how kubectl names a kind in its messages. */
static const char *kind_label(KubeKind k, char *buf, size_t n) {
	const KindName *kn = kind_name(k);

	snprintf(buf, n, "%s%s%s", kn->singular, isempty(kn->group) ? "" : ".", kn->group);
	return buf;
}

/* "pods", "networkpolicies.networking.k8s.io": the NotFound message's resource. */
static const char *resource_label(KubeKind k, char *buf, size_t n) {
	const KindName *kn = kind_name(k);

	snprintf(buf, n, "%s%s%s", kube_kind_info(k)->resource, isempty(kn->group) ? "" : ".", kn->group);
	return buf;
}

/* ---- options ---- */

typedef struct ObjOptions {
	const char *endpoints;
	const char *prefix;
	const char *namespace; /* -n; NULL if not given */
	bool all_namespaces;
	const char *output; /* NULL (table), "json", "name" */
	bool show_labels;
	bool ignore_not_found;
	char **files;
} ObjOptions;

static void obj_usage(FILE *f) {
	fprintf(f,
		"Usage: weft apply -f FILE|- [-n NS]\n"
		"       weft delete -f FILE|- | KIND NAME... [-n NS] [--ignore-not-found]\n"
		"       weft get KIND [NAME...] [-n NS | -A] [-o json|name] [--show-labels]\n"
		"Kinds: pods (po), namespaces (ns), networkpolicies (netpol), services (svc), endpointslices,\n"
		"       nodes (no). Options: --etcd-endpoints URLS (WEFT_ETCD_ENDPOINTS, default %s),\n"
		"       --etcd-prefix PREFIX (WEFT_ETCD_PREFIX, default %s)\n",
		OBJECT_STORE_ENDPOINTS_DEFAULT, OBJECT_STORE_PREFIX_DEFAULT);
}

static const char *env_default(const char *name, const char *def) {
	const char *v = getenv(name);

	return isempty(v) ? def : v;
}

/* Parses the common options; the positional arguments are left at argv[optind..]. -1: exit 2. */
static int obj_parse(int argc, char *argv[], ObjOptions *o) {
	enum {
		ARG_ENDPOINTS = 0x100,
		ARG_PREFIX,
		ARG_SHOW_LABELS,
		ARG_IGNORE_NF
	};
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "filename", required_argument, NULL, 'f' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "all-namespaces", no_argument, NULL, 'A' },
		{ "output", required_argument, NULL, 'o' },
		{ "show-labels", no_argument, NULL, ARG_SHOW_LABELS },
		{ "ignore-not-found", no_argument, NULL, ARG_IGNORE_NF },
		{ "etcd-endpoints", required_argument, NULL, ARG_ENDPOINTS },
		{ "etcd-prefix", required_argument, NULL, ARG_PREFIX },
		{},
	};
	int c;

	o->endpoints = env_default("WEFT_ETCD_ENDPOINTS", OBJECT_STORE_ENDPOINTS_DEFAULT);
	o->prefix = env_default("WEFT_ETCD_PREFIX", OBJECT_STORE_PREFIX_DEFAULT);
	while ((c = getopt_long(argc, argv, "hf:n:Ao:", options, NULL)) >= 0)
		switch (c) {
		case 'h': obj_usage(stdout); exit(EXIT_SUCCESS);
		case 'f':
			if (strv_extend(&o->files, optarg) < 0)
				return -ENOMEM;
			break;
		case 'n':
			if (!dns_label_valid(optarg)) {
				fprintf(stderr, "error: \"%s\" is not a valid namespace name\n", optarg);
				return -EINVAL;
			}
			o->namespace = optarg;
			break;
		case 'A': o->all_namespaces = true; break;
		case 'o':
			if (!streq(optarg, "json") && !streq(optarg, "name")) {
				fprintf(stderr,
					"error: unable to match a printer suitable for the output format \"%s\", "
					"allowed formats are: json,name\n",
					optarg);
				return -EINVAL;
			}
			o->output = optarg;
			break;
		case ARG_SHOW_LABELS: o->show_labels = true; break;
		case ARG_IGNORE_NF: o->ignore_not_found = true; break;
		case ARG_ENDPOINTS: o->endpoints = optarg; break;
		case ARG_PREFIX: o->prefix = optarg; break;
		default: obj_usage(stderr); return -EINVAL;
		}
	return 0;
}

static int store_connect(const ObjOptions *o, EtcdClient **ret) {
	int r = etcd_client_new(o->endpoints, ret);

	if (r < 0)
		fprintf(stderr, "error: etcd endpoints \"%s\": %s\n", o->endpoints, strerror(-r));
	return r;
}

static int store_error(EtcdClient *c, int r) {
	const char *t = c ? etcd_client_last_error(c) : "";

	fprintf(stderr, "error: etcd: %s\n", !isempty(t) ? t : strerror(-r));
	return EXIT_FAILURE;
}

/* ---- reading manifests ---- */

/* One object to write or delete, after the stream was read and Lists were flattened. */
typedef struct Item {
	json_t *json; /* the object as it will be stored (namespace filled in, server fields dropped) */
	KubeKind kind;
	const char *ns;   /* borrowed from json; NULL for cluster-scoped */
	const char *name; /* borrowed from json */
	char *key;
	char *where;     /* "FILE document 3 (line 40)[ item 2]" */
	bool superseded; /* a later document names the same object */
} Item;

typedef struct Items {
	Item *v;
	size_t n;
} Items;

static void items_done(Items *it) {
	for (size_t i = 0; i < it->n; i++) {
		json_decref(it->v[i].json);
		free(it->v[i].key);
		free(it->v[i].where);
	}
	free(it->v);
	*it = (Items) {};
}

static int read_input(const char *file, char **ret, size_t *ret_size) {
	if (streq(file, "-"))
		return read_full_fd(STDIN_FILENO, ret, ret_size);
	return read_full_file(file, ret, ret_size);
}

/* The kind and apiVersion weft stores: the KubeKind in *ret, else -EINVAL after printing why. */
static int item_kind(json_t *j, const char *where, KubeKind *ret) {
	const char *kind_s = NULL, *api = NULL;
	const KindName *kn = NULL;
	KubeKind kind;

	(void) json_unpack(j, "{s?s, s?s}", "kind", &kind_s, "apiVersion", &api);
	if (isempty(kind_s) || isempty(api)) {
		fprintf(stderr, "error: %s: %s not set\n", where, isempty(api) ? "apiVersion" : "kind");
		return -EINVAL;
	}
	if (kube_kind_from_string(kind_s, &kind) >= 0 && streq(kube_kind_info(kind)->kind, kind_s))
		kn = kind_name(kind);
	if (!kn || !streq(kn->api_version, api)) {
		fprintf(stderr,
			"error: %s: no matches for kind \"%s\" in version \"%s\" (weft stores v1 Pod, Namespace, "
			"Service, Node; networking.k8s.io/v1 NetworkPolicy; discovery.k8s.io/v1 EndpointSlice)\n",
			where, kind_s, api);
		return -EINVAL;
	}
	*ret = kind;
	return 0;
}

/*
 * The namespace as kubectl sets it (the object's own, which must match --namespace, else
 * --namespace, else "default"; none for a cluster-scoped kind) and the fields the API server owns
 * dropped: never stored (resourceVersion is the key's mod_revision). 0, -EINVAL after printing
 * why, or -ENOMEM.
 */
static int item_normalize_metadata(json_t *md, KubeKind kind, const char *where, const char *what,
				   const ObjOptions *o) {
	const char *ns = NULL;

	(void) json_unpack(md, "{s?s}", "namespace", &ns);
	if (kube_kind_info(kind)->namespaced) {
		if (!isempty(ns) && o->namespace && !streq(ns, o->namespace)) {
			fprintf(stderr,
				"error: %s: %s: the namespace from the provided object \"%s\" does not match the "
				"namespace \"%s\". You must pass '--namespace=%s' to perform this operation.\n",
				where, what, ns, o->namespace, ns);
			return -EINVAL;
		}
		if (isempty(ns) && json_object_set_new(md, "namespace", json_string(o->namespace ?: "default")) < 0)
			return -ENOMEM;
	} else
		(void) json_object_del(md, "namespace");
	(void) json_object_del(md, "resourceVersion");
	(void) json_object_del(md, "selfLink");
	(void) json_object_del(md, "managedFields");
	(void) json_object_del(md, "uid");
	(void) json_object_del(md, "creationTimestamp");
	return 0;
}

/* Decodes the object the way weftd will: 0, -EINVAL after printing the decoder's reason, -ENOMEM. */
static int item_validate(json_t *j, KubeKind kind, const char *where, const char *what, const char *ns) {
	_cleanup_(string_pool_freep) StringPool *pool = NULL;
	KubeObject *obj = NULL;
	DecodeError err = {};
	int r;

	r = string_pool_new(&pool);
	if (r < 0)
		return r;
	r = kube_object_decode(kind, j, pool, &obj, &err);
	if (r == -EINVAL) {
		fprintf(stderr, "error: %s: %s%s%s: %s\n", where, what, ns ? " in namespace " : "", ns ?: "", err.text);
		return r;
	}
	if (r < 0)
		return r;
	kube_object_free(obj, pool);
	return 0;
}

/*
 * Checks one object's apiVersion/kind/namespace and, with `validate`, decodes it the way weftd
 * will. Fills *ret. On a refusal prints the error naming `where` and returns -EINVAL.
 */
static int item_prepare(json_t *j, const char *where, const ObjOptions *o, bool validate, Item *ret) {
	json_t *md = json_object_get(j, "metadata");
	const char *name = NULL, *ns = NULL;
	KubeKind kind;
	char what[320];
	int r;

	if (!json_is_object(j)) {
		fprintf(stderr, "error: %s: not an object\n", where);
		return -EINVAL;
	}
	if (json_is_object(md))
		(void) json_unpack(md, "{s?s}", "name", &name);
	r = item_kind(j, where, &kind);
	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "%s \"%.200s\"", kube_kind_info(kind)->kind, name ?: "");
	if (isempty(name)) {
		fprintf(stderr, "error: %s: %s: metadata.name: missing\n", where, kube_kind_info(kind)->kind);
		return -EINVAL;
	}
	if (!json_is_object(md))
		return -EINVAL;
	r = item_normalize_metadata(md, kind, where, what, o);
	if (r < 0)
		return r;
	if (kube_kind_info(kind)->namespaced)
		ns = json_string_value(json_object_get(md, "namespace"));
	if (validate) {
		r = item_validate(j, kind, where, what, ns);
		if (r < 0)
			return r;
	}
	*ret = (Item) { .json = json_incref(j), .kind = kind, .ns = ns, .name = name };
	return 0;
}

/* Every file's documents, Lists flattened, each checked; -EINVAL after printing every refusal. */
/* -f DIR, as kubectl: the directory's *.yaml, *.yml and *.json files in name order (not recursive). */
static int expand_files(char **args, char ***ret) {
	_cleanup_strv_free_ char **files = NULL;

	for (char **a = args; a && *a; a++) {
		struct dirent **ents = NULL;
		struct stat st;
		int n, r = 0;

		if (streq(*a, "-") || stat(*a, &st) < 0 || !S_ISDIR(st.st_mode)) {
			if (strv_extend(&files, *a) < 0)
				return -ENOMEM;
			continue;
		}
		n = scandir(*a, &ents, NULL, alphasort);
		if (n < 0) {
			r = strv_extend(&files, *a); /* reported when read */
			if (r < 0)
				return r;
			continue;
		}
		for (int i = 0; i < n; i++) {
			const char *name = ents[i]->d_name;

			if (r >= 0 && name[0] != '.' &&
			    (endswith(name, ".yaml") || endswith(name, ".yml") || endswith(name, ".json")))
				r = strv_consume(&files, strdup_printf("%s/%s", *a, name));
			free(ents[i]);
		}
		free(ents);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(files);
	return 0;
}

/* Appends one document's object (or a List's items) to *it. A refused object sets *bad and is
 * skipped, so every refusal is printed; 0 or -ENOMEM. */
static int items_add_doc(const YamlDoc *doc, const char *fname, const ObjOptions *o, bool validate, Items *it,
			 int *bad) {
	json_t *j = doc->json, *items = json_object_get(j, "items");
	const char *k = json_string_value(json_object_get(j, "kind"));
	bool list = k && endswith(k, "List") && json_is_array(items);
	size_t count = list ? json_array_size(items) : 1;
	int r;

	for (size_t i = 0; i < count; i++) {
		_cleanup_free_ char *where = NULL;
		Item *nv;

		where = list ? strdup_printf("%s document %u (line %u) item %zu", fname, doc->index, doc->line, i)
			     : strdup_printf("%s document %u (line %u)", fname, doc->index, doc->line);
		if (!where)
			return -ENOMEM;
		nv = reallocarray(it->v, it->n + 1, sizeof(Item));
		if (!nv)
			return -ENOMEM;
		it->v = nv;
		r = item_prepare(list ? json_array_get(items, i) : j, where, o, validate, &it->v[it->n]);
		if (r < 0) {
			*bad = r;
			continue;
		}
		it->v[it->n].where = TAKE_PTR(where);
		it->v[it->n].key = object_key(o->prefix, it->v[it->n].kind, it->v[it->n].ns, it->v[it->n].name);
		if (!it->v[it->n].key)
			return -ENOMEM;
		it->n++;
	}
	return 0;
}

/* Reads one file ("-": stdin) and appends its objects; an unreadable or unparsable file sets *bad
 * after printing why. 0 or -ENOMEM. */
static int items_add_file(const char *path, const ObjOptions *o, bool validate, Items *it, int *bad) {
	_cleanup_free_ char *buf = NULL, *perr = NULL;
	const char *fname = streq(path, "-") ? "STDIN" : path;
	YamlDoc *docs = NULL;
	size_t size, n = 0;
	int r;

	r = read_input(path, &buf, &size);
	if (r < 0) {
		fprintf(stderr, "error: the path \"%s\" cannot be read: %s\n", path, strerror(-r));
		*bad = r;
		return 0;
	}
	r = yaml_json_parse(buf, size, &docs, &n, &perr);
	if (r < 0) {
		fprintf(stderr, "error: error parsing %s: %s\n", fname, perr ?: strerror(-r));
		*bad = r;
		return 0;
	}
	for (size_t d = 0; d < n && r >= 0; d++)
		r = items_add_doc(&docs[d], fname, o, validate, it, bad);
	yaml_docs_free(docs, n);
	return r;
}

static int items_load(const ObjOptions *o, bool validate, Items *ret) {
	_cleanup_strv_free_ char **paths = NULL;
	Items it = {};
	int r, bad = 0;

	r = expand_files(o->files, &paths);
	if (r < 0)
		return r;
	for (char **f = paths; f && *f; f++) {
		r = items_add_file(*f, o, validate, &it, &bad);
		if (r < 0) {
			items_done(&it);
			return r;
		}
	}
	if (bad < 0) {
		items_done(&it);
		return bad;
	}
	/* The same object twice: the later document wins (kubectl would apply both, in order). */
	for (size_t i = 0; i < it.n; i++)
		for (size_t k = i + 1; k < it.n && !it.v[i].superseded; k++)
			if (streq(it.v[i].key, it.v[k].key))
				it.v[i].superseded = true;
	*ret = it;
	return 0;
}

/* ---- apply ---- */

/* The stored form: uid and creationTimestamp kept from the existing object, status too when the
 * new one has none (status belongs to whoever reports it, like the API's status subresource: a Pod
 * re-applied keeps the IPs `weft cni add` recorded). */
static char *apply_value(const Item *it, const EtcdKv *existing) {
	_cleanup_(json_decrefp) json_t *old = NULL, *obj = NULL;
	const char *uid = NULL, *created = NULL;
	char uid_buf[37], ts_buf[21];
	json_t *md;

	if (existing->key)
		old = json_loadb(existing->value, existing->value_size, 0, NULL);
	(void) json_unpack(old, "{s:{s?s, s?s}}", "metadata", "uid", &uid, "creationTimestamp", &created);
	obj = json_deep_copy(it->json);
	if (!obj)
		return NULL;
	md = json_object_get(obj, "metadata");
	if (!uid) {
		if (object_uid_new(uid_buf) < 0)
			return NULL;
		uid = uid_buf;
	}
	if (!created) {
		object_timestamp_now(ts_buf);
		created = ts_buf;
	}
	if (json_object_set_new(md, "uid", json_string(uid)) < 0 ||
	    json_object_set_new(md, "creationTimestamp", json_string(created)) < 0)
		return NULL;
	if (!json_object_get(obj, "status") && json_object_get(old, "status") &&
	    json_object_set(obj, "status", json_object_get(old, "status")) < 0)
		return NULL;
	return json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

typedef enum Outcome {
	OUT_CREATED,
	OUT_CONFIGURED,
	OUT_UNCHANGED
} Outcome;

/* What apply tracks per object: the read (ops[i].kv), the value to write, and the outcome. */
typedef struct ApplyState {
	ObjectOp *ops;
	char **values;
	Outcome *outcome;
} ApplyState;

/*
 * Applies it->v[base .. base+n): reads them, then writes the changed ones in one transaction with a
 * compare on each one's mod_revision; a concurrent writer makes it read again (5 attempts). 0,
 * -EAGAIN when the objects kept changing, -ENOMEM, or -EIO after printing etcd's error.
 */
static int apply_chunk(EtcdClient *c, const Items *it, size_t base, size_t n, ApplyState *st) {
	_cleanup_free_ ObjectOp *wops = calloc(n, sizeof(ObjectOp)); /* compare + put per changed object */
	bool ok = false;
	int r;

	if (!wops)
		return -ENOMEM;
	for (unsigned attempt = 0; attempt < 5 && !ok; attempt++) {
		size_t w = 0;

		object_ops_done(st->ops + base, n);
		for (size_t i = base; i < base + n; i++)
			st->ops[i] = (ObjectOp) { .type = OBJECT_OP_GET, .key = it->v[i].key };
		r = object_store_txn(c, st->ops + base, n, &ok, NULL);
		if (r < 0) {
			(void) store_error(c, r);
			return -EIO;
		}
		for (size_t i = base; i < base + n; i++) {
			const EtcdKv *kv = &st->ops[i].kv;

			if (it->v[i].superseded)
				continue;
			free(st->values[i]);
			st->values[i] = apply_value(&it->v[i], kv);
			if (!st->values[i])
				return -ENOMEM;
			if (kv->key && streq(kv->value, st->values[i])) {
				st->outcome[i] = OUT_UNCHANGED;
				continue;
			}
			st->outcome[i] = kv->key ? OUT_CONFIGURED : OUT_CREATED;
			wops[w++] = (ObjectOp) { .type = OBJECT_OP_PUT,
						 .key = it->v[i].key,
						 .value = st->values[i],
						 .compare = true,
						 .expect_mod = kv->mod_revision };
		}
		ok = true;
		if (w > 0) {
			r = object_store_txn(c, wops, w, &ok, NULL);
			if (r < 0) {
				(void) store_error(c, r);
				return -EIO;
			}
		}
	}
	return ok ? 0 : -EAGAIN;
}

int object_apply_main(int argc, char *argv[]) {
	_cleanup_(etcd_client_freep) EtcdClient *c = NULL;
	_cleanup_strv_free_ char **files = NULL;
	ObjOptions o = {};
	Items it = {};
	ApplyState st = {};
	int r, rc = EXIT_FAILURE;

	if (obj_parse(argc, argv, &o) < 0)
		return EXIT_FAILURE;
	files = o.files;
	if (!o.files || optind != argc) {
		fprintf(stderr, "error: must specify -f FILE (and nothing else)\n");
		return EXIT_FAILURE;
	}
	r = items_load(&o, true, &it);
	if (r < 0) {
		if (r == -ENOMEM)
			fprintf(stderr, "error: out of memory\n");
		else
			fprintf(stderr, "error: nothing was applied\n");
		return EXIT_FAILURE;
	}
	if (it.n == 0) {
		fprintf(stderr, "error: no objects passed to apply\n");
		goto out;
	}
	if (store_connect(&o, &c) < 0)
		goto out;
	st = (ApplyState) { .ops = calloc(it.n, sizeof(ObjectOp)),
			    .values = calloc(it.n, sizeof(char *)),
			    .outcome = calloc(it.n, sizeof(Outcome)) };
	if (!st.ops || !st.values || !st.outcome)
		goto out;
	/* Transactions of at most OBJECT_STORE_MAX_TXN_OPS objects each. */
	for (size_t base = 0; base < it.n; base += OBJECT_STORE_MAX_TXN_OPS) {
		r = apply_chunk(c, &it, base, MIN((size_t) OBJECT_STORE_MAX_TXN_OPS, it.n - base), &st);
		if (r == -EAGAIN)
			fprintf(stderr, "error: the objects kept changing while being applied; try again\n");
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < it.n; i++) {
		static const char *const words[] = { "created", "configured", "unchanged" };
		char lbl[64];

		if (!it.v[i].superseded)
			printf("%s/%s %s\n", kind_label(it.v[i].kind, lbl, sizeof(lbl)), it.v[i].name,
			       words[st.outcome[i]]);
	}
	rc = EXIT_SUCCESS;
out:
	if (st.ops)
		object_ops_done(st.ops, it.n);
	free(st.ops);
	for (size_t i = 0; st.values && i < it.n; i++)
		free(st.values[i]);
	free(st.values);
	free(st.outcome);
	items_done(&it);
	return rc;
}

/* ---- delete ---- */

/* Deletes one item (a Namespace takes its namespaced objects along, as the API server's namespace
 * controller would) and prints kubectl's line. 0, 1 if it was not found, or < 0 (etcd). */
static int delete_one(EtcdClient *c, const ObjOptions *o, const Item *x, const char *source) {
	ObjectOp ops[1 + _KUBE_KIND_MAX] = {};
	char *nsp[_KUBE_KIND_MAX] = {};
	size_t n = 0;
	bool ok;
	char lbl[64];
	int r = 0;

	ops[n++] = (ObjectOp) { .type = OBJECT_OP_DELETE, .key = x->key };
	if (x->kind == KUBE_KIND_NAMESPACE)
		for (unsigned k = 0; k < _KUBE_KIND_MAX; k++) {
			if (!kube_kind_info((KubeKind) k)->namespaced)
				continue;
			nsp[k] = object_key_prefix(o->prefix, (KubeKind) k, x->name);
			if (!nsp[k])
				r = -ENOMEM;
			ops[n++] = (ObjectOp) { .type = OBJECT_OP_DELETE_PREFIX, .key = nsp[k] ?: "" };
		}
	if (r >= 0)
		r = object_store_txn(c, ops, n, &ok, NULL);
	for (unsigned k = 0; k < _KUBE_KIND_MAX; k++)
		free(nsp[k]);
	if (r < 0)
		return r;
	if (ops[0].deleted > 0) {
		printf("%s \"%s\" deleted\n", kind_label(x->kind, lbl, sizeof(lbl)), x->name);
		return 0;
	}
	if (o->ignore_not_found)
		return 0;
	fprintf(stderr, "Error from server (NotFound): %s%s%s%s \"%s\" not found\n",
		source ? "error when deleting \"" : "", source ?: "", source ? "\": " : "",
		resource_label(x->kind, lbl, sizeof(lbl)), x->name);
	return 1;
}

/* 1 if any was not found (unless --ignore-not-found). */
static int delete_items(const ObjOptions *o, Items *it, const char *source) {
	_cleanup_(etcd_client_freep) EtcdClient *c = NULL;
	int r, rc = EXIT_SUCCESS;

	if (store_connect(o, &c) < 0)
		return EXIT_FAILURE;
	/* Namespaces last: objects of theirs named in the same files are then reported deleted, not
	 * NotFound, as with kubectl (where a namespace's deletion is asynchronous). */
	for (unsigned pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < it->n; i++) {
			if (it->v[i].superseded || (it->v[i].kind == KUBE_KIND_NAMESPACE) != (pass == 1))
				continue;
			r = delete_one(c, o, &it->v[i], source);
			if (r < 0)
				return store_error(c, r);
			if (r > 0)
				rc = EXIT_FAILURE;
		}
	return rc;
}

int object_delete_main(int argc, char *argv[]) {
	_cleanup_strv_free_ char **files = NULL;
	ObjOptions o = {};
	Items it = {};
	int r, rc;

	if (obj_parse(argc, argv, &o) < 0)
		return EXIT_FAILURE;
	files = o.files;
	if (o.files) {
		if (optind != argc) {
			fprintf(stderr, "error: -f and KIND NAME cannot be combined\n");
			return EXIT_FAILURE;
		}
		/* Only what names an object is checked: a stored object that would no longer validate
		 * must still be deletable. */
		r = items_load(&o, false, &it);
		if (r < 0) {
			fprintf(stderr, "error: nothing was deleted\n");
			return EXIT_FAILURE;
		}
		rc = delete_items(&o, &it, o.files[1] ? NULL : o.files[0]);
		items_done(&it);
		return rc;
	}
	if (argc - optind < 2) {
		fprintf(stderr, "error: must specify -f FILE, or KIND NAME...\n");
		return EXIT_FAILURE;
	}
	{
		KubeKind kind;

		if (object_kind_from_name(argv[optind], &kind) < 0) {
			fprintf(stderr, "error: the server doesn't have a resource type \"%s\"\n", argv[optind]);
			return EXIT_FAILURE;
		}
		it.v = calloc((size_t) (argc - optind - 1), sizeof(Item));
		if (!it.v)
			return EXIT_FAILURE;
		for (int i = optind + 1; i < argc; i++) {
			const char *ns = kube_kind_info(kind)->namespaced ? o.namespace ?: "default" : NULL;
			Item *x = &it.v[it.n++];

			x->kind = kind;
			x->name = argv[i];
			x->key = object_key(o.prefix, kind, ns, argv[i]);
			if (!x->key) {
				items_done(&it);
				return EXIT_FAILURE;
			}
		}
	}
	rc = delete_items(&o, &it, NULL);
	items_done(&it);
	return rc;
}

/* ---- get ---- */

typedef struct Table {
	char **cells; /* rows × cols */
	size_t cols, rows;
} Table;

static int table_add(Table *t, char **row) {
	char **n = reallocarray(t->cells, (t->rows + 1) * t->cols, sizeof(char *));

	if (!n) {
		for (size_t i = 0; i < t->cols; i++)
			free(row[i]);
		return -ENOMEM;
	}
	t->cells = n;
	memcpy(&n[t->rows * t->cols], row, t->cols * sizeof(char *));
	t->rows++;
	return 0;
}

static void table_print_free(Table *t) {
	size_t w[16] = {};

	for (size_t r = 0; r < t->rows; r++)
		for (size_t c = 0; c < t->cols; c++)
			w[c] = MAX(w[c], strlen(t->cells[r * t->cols + c] ?: ""));
	for (size_t r = 0; r < t->rows; r++) {
		for (size_t c = 0; c < t->cols; c++) {
			const char *s = t->cells[r * t->cols + c] ?: "";

			if (c + 1 < t->cols)
				printf("%-*s   ", (int) w[c], s);
			else
				printf("%s\n", s);
		}
	}
	for (size_t i = 0; i < t->rows * t->cols; i++)
		free(t->cells[i]);
	free(t->cells);
	*t = (Table) {};
}

/* kubectl's HumanDuration, shortened. */
static char *age(const char *ts) {
	struct tm tm = {};
	long long d;

	if (!ts || !strptime(ts, "%Y-%m-%dT%H:%M:%SZ", &tm))
		return strdup("<unknown>");
	d = (long long) (time(NULL) - timegm(&tm));
	if (d < 0)
		d = 0;
	if (d < 120)
		return strdup_printf("%llds", d);
	if (d < 600)
		return d % 60 ? strdup_printf("%lldm%llds", d / 60, d % 60) : strdup_printf("%lldm", d / 60);
	if (d < 3 * 3600)
		return strdup_printf("%lldm", d / 60);
	if (d < 48 * 3600)
		return strdup_printf("%lldh", d / 3600);
	return strdup_printf("%lldd", d / 86400);
}

/* Appends s to a comma list in *acc. */
static int join(char **acc, const char *s) {
	char *n = *acc ? strdup_printf("%s,%s", *acc, s) : strdup(s);

	if (!n)
		return -ENOMEM;
	free(*acc);
	*acc = n;
	return 0;
}

static char *or_none(char *s, const char *none) {
	return s ?: strdup(none);
}

static char *labels_text(const json_t *labels) {
	const char *k;
	json_t *v;
	char *acc = NULL, *pair;

	json_object_foreach((json_t *) labels, k, v) {
		pair = strdup_printf("%s=%s", k, json_string_value(v) ?: "");
		if (!pair || join(&acc, pair) < 0) {
			free(pair);
			free(acc);
			return NULL;
		}
		free(pair);
	}
	return or_none(acc, "<none>");
}

static char *selector_text(const json_t *sel) {
	const json_t *ml = json_object_get(sel, "matchLabels"), *me = json_object_get(sel, "matchExpressions"), *x;
	char *acc = NULL;
	size_t i;

	if (json_object_size(ml) > 0) {
		acc = labels_text(ml);
		if (!acc)
			return NULL;
	}
	json_array_foreach((json_t *) me, i, x) {
		const char *key = json_string_value(json_object_get(x, "key")) ?: "";
		const char *op = json_string_value(json_object_get(x, "operator")) ?: "";
		_cleanup_free_ char *vals = NULL, *e = NULL;
		const json_t *v;
		size_t k;

		json_array_foreach(json_object_get(x, "values"), k, v)
			if (join(&vals, json_string_value(v) ?: "") < 0)
				return NULL;
		if (streq(op, "In"))
			e = strdup_printf("%s in (%s)", key, vals ?: "");
		else if (streq(op, "NotIn"))
			e = strdup_printf("%s notin (%s)", key, vals ?: "");
		else if (streq(op, "Exists"))
			e = strdup(key);
		else
			e = strdup_printf("!%s", key);
		if (!e || join(&acc, e) < 0)
			return NULL;
	}
	return or_none(acc, "<none>");
}

/* The kind's columns after NAMESPACE/NAME (kubectl's, where weft has the data). */
static size_t kind_columns(KubeKind k, const char **ret) {
	static const char *const pod[] = { "STATUS", "IP", "NODE" };
	static const char *const ns[] = { "STATUS" };
	static const char *const netpol[] = { "POD-SELECTOR" };
	static const char *const svc[] = { "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)" };
	static const char *const eps[] = { "ADDRESSTYPE", "PORTS", "ENDPOINTS" };
	const char *const *v = NULL;
	size_t n = 0;

	switch (k) {
	case KUBE_KIND_POD: v = pod, n = ELEMENTSOF(pod); break;
	case KUBE_KIND_NAMESPACE: v = ns, n = ELEMENTSOF(ns); break;
	case KUBE_KIND_NETWORK_POLICY: v = netpol, n = ELEMENTSOF(netpol); break;
	case KUBE_KIND_SERVICE: v = svc, n = ELEMENTSOF(svc); break;
	case KUBE_KIND_ENDPOINT_SLICE: v = eps, n = ELEMENTSOF(eps); break;
	default: break;
	}
	for (size_t i = 0; i < n; i++)
		ret[i] = v[i];
	return n;
}

/* STATUS, IP, NODE */
static int pod_cells(const json_t *spec, const json_t *status, char **cells) {
	const json_t *x;
	char *acc = NULL;
	size_t i;

	cells[0] = strdup(json_string_value(json_object_get(status, "phase")) ?: "Pending");
	json_array_foreach(json_object_get(status, "podIPs"), i, x)
		if (join(&acc, json_string_value(json_object_get(x, "ip")) ?: "?") < 0)
			return -ENOMEM;
	if (!acc && json_string_value(json_object_get(status, "podIP")))
		acc = strdup(json_string_value(json_object_get(status, "podIP")));
	cells[1] = or_none(acc, "<none>");
	cells[2] = strdup(json_string_value(json_object_get(spec, "nodeName")) ?: "<none>");
	return 3;
}

static int str_cmp(const void *a, const void *b) {
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The width kube-apiserver's printer cuts the ingress list to (loadBalancerWidth, without -o wide). */
#define LB_COLUMN_WIDTH 16

/*
 * EXTERNAL-IP as kube-apiserver prints it (pkg/printers/internalversion getServiceExternalIP):
 * ClusterIP and NodePort: spec.externalIPs, else <none>; LoadBalancer: the ingress IPs (a hostname
 * where there is no IP), sorted and unique, cut to 16 characters ("..."), then spec.externalIPs,
 * else <pending>; ExternalName: spec.externalName; any other type: <unknown>.
 */
static char *service_external_ip(const char *type, const json_t *spec, const json_t *status) {
	const json_t *ingress = json_object_get(json_object_get(status, "loadBalancer"), "ingress"), *x;
	_cleanup_free_ const char **v = NULL;
	_cleanup_free_ char *lb = NULL;
	char *ext = NULL;
	size_t n = 0, i;

	if (streq(type, "ExternalName"))
		return strdup(json_string_value(json_object_get(spec, "externalName")) ?: "");
	json_array_foreach(json_object_get(spec, "externalIPs"), i, x)
		if (join(&ext, json_string_value(x) ?: "") < 0)
			return NULL;
	if (streq(type, "ClusterIP") || streq(type, "NodePort"))
		return or_none(ext, "<none>");
	if (!streq(type, "LoadBalancer")) {
		free(ext);
		return strdup("<unknown>");
	}
	v = calloc(json_array_size(ingress) + 1, sizeof(char *));
	if (!v) {
		free(ext);
		return NULL;
	}
	json_array_foreach(ingress, i, x) {
		const char *ip = json_string_value(json_object_get(x, "ip"));

		if (isempty(ip))
			ip = json_string_value(json_object_get(x, "hostname"));
		if (!isempty(ip))
			v[n++] = ip;
	}
	qsort(v, n, sizeof(char *), str_cmp);
	for (i = 0; i < n; i++)
		if ((i == 0 || !streq(v[i], v[i - 1])) && join(&lb, v[i]) < 0) {
			free(ext);
			return NULL;
		}
	if (lb && strlen(lb) > LB_COLUMN_WIDTH)
		strcpy(lb + LB_COLUMN_WIDTH - 3, "...");
	if (lb && ext) {
		char *both = strdup_printf("%s,%s", lb, ext);

		free(ext);
		return both;
	}
	if (ext)
		return ext;
	return lb ? TAKE_PTR(lb) : strdup("<pending>");
}

/* TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S) */
static int service_cells(const json_t *spec, const json_t *status, char **cells) {
	const char *type = json_string_value(json_object_get(spec, "type")) ?: "ClusterIP";
	char *acc = NULL;
	const json_t *x;
	size_t i;

	cells[0] = strdup(type);
	cells[1] = strdup(json_string_value(json_object_get(spec, "clusterIP")) ?: "<none>");
	cells[2] = service_external_ip(type, spec, status);
	if (!cells[2])
		return -ENOMEM;
	json_array_foreach(json_object_get(spec, "ports"), i, x) {
		long long port = json_integer_value(json_object_get(x, "port"));
		long long np = json_integer_value(json_object_get(x, "nodePort"));
		const char *proto = json_string_value(json_object_get(x, "protocol")) ?: "TCP";
		_cleanup_free_ char *p = np ? strdup_printf("%lld:%lld/%s", port, np, proto)
					    : strdup_printf("%lld/%s", port, proto);

		if (!p || join(&acc, p) < 0)
			return -ENOMEM;
	}
	cells[3] = or_none(acc, "<none>");
	return 4;
}

/* ADDRESSTYPE, PORTS, ENDPOINTS (the first three, then "+ N more...") */
static int slice_cells(const json_t *j, char **cells) {
	size_t shown = 0, total = 0, i, e;
	const json_t *x, *ep, *a;
	char *eps = NULL, *acc = NULL;

	cells[0] = strdup(json_string_value(json_object_get(j, "addressType")) ?: "");
	json_array_foreach(json_object_get(j, "ports"), i, x) {
		_cleanup_free_ char *p =
				strdup_printf("%lld", (long long) json_integer_value(json_object_get(x, "port")));

		if (!p || join(&acc, p) < 0)
			return -ENOMEM;
	}
	cells[1] = or_none(acc, "<unset>");
	json_array_foreach(json_object_get(j, "endpoints"), e, ep)
		json_array_foreach(json_object_get(ep, "addresses"), i, a) {
			total++;
			if (shown < 3 && join(&eps, json_string_value(a) ?: "") >= 0)
				shown++;
		}
	if (total > shown) {
		_cleanup_free_ char *more = strdup_printf("%s + %zu more...", eps ?: "", total - shown);

		free(eps);
		eps = TAKE_PTR(more);
	}
	cells[2] = or_none(eps, "<unset>");
	return 3;
}

static int kind_cells(KubeKind k, const json_t *j, char **cells) {
	const json_t *spec = json_object_get(j, "spec"), *status = json_object_get(j, "status");

	switch (k) {
	case KUBE_KIND_POD: return pod_cells(spec, status, cells);
	case KUBE_KIND_NAMESPACE: cells[0] = strdup("Active"); return 1;
	case KUBE_KIND_NETWORK_POLICY: cells[0] = selector_text(json_object_get(spec, "podSelector")); return 1;
	case KUBE_KIND_SERVICE: return service_cells(spec, status, cells);
	case KUBE_KIND_ENDPOINT_SLICE: return slice_cells(j, cells);
	default: return 0;
	}
}

/* KIND, or KIND/NAME as kubectl takes it ("pod/web-1"): the kind, and the name after the slash
 * (NULL without one). */
static int get_kind_arg(const char *arg, KubeKind *ret_kind, const char **ret_name) {
	_cleanup_free_ char *kind_arg = NULL;
	const char *slash = strchr(arg, '/');

	kind_arg = slash ? strndup(arg, (size_t) (slash - arg)) : strdup(arg);
	if (!kind_arg)
		return -ENOMEM;
	if (object_kind_from_name(kind_arg, ret_kind) < 0) {
		fprintf(stderr, "error: the server doesn't have a resource type \"%s\"\n", kind_arg);
		return -EINVAL;
	}
	*ret_name = slash ? slash + 1 : NULL;
	return 0;
}

/* Appends the objects read to items, each with its resourceVersion (the key's mod revision). */
static void items_append_kvs(json_t *items, const EtcdKv *kvs, size_t n) {
	for (size_t k = 0; k < n; k++) {
		json_t *obj = json_loadb(kvs[k].value, kvs[k].value_size, 0, NULL), *md;
		char rv[24];

		md = json_object_get(obj, "metadata");
		if (!json_is_object(md)) {
			fprintf(stderr, "warning: %s: not an object; skipped\n", kvs[k].key);
			json_decref(obj);
			continue;
		}
		snprintf(rv, sizeof(rv), "%lld", (long long) kvs[k].mod_revision);
		json_object_set_new(md, "resourceVersion", json_string(rv));
		json_array_append_new(items, obj);
	}
}

/* Reads the objects into items. Names: one read each (*missing: one was not found); no names: the
 * kind's (or the namespace's) prefix. *revision: the store's. */
static int get_fetch(EtcdClient *c, const ObjOptions *o, KubeKind kind, const char *ns, char **names, size_t n_names,
		     json_t *items, int64_t *revision, bool *missing) {
	char lbl[64];
	int r;

	for (size_t i = 0; i < (n_names ?: 1); i++) {
		_cleanup_free_ char *key = NULL, *end = NULL;
		EtcdKv *kvs = NULL;
		size_t n = 0;

		key = n_names ? object_key(o->prefix, kind, ns, names[i]) : object_key_prefix(o->prefix, kind, ns);
		end = n_names ? NULL : etcd_prefix_range_end(key);
		if (!key || (!n_names && !end))
			return -ENOMEM;
		r = etcd_range(c, key, end, &kvs, &n, revision);
		if (r < 0) {
			(void) store_error(c, r);
			return r;
		}
		if (n_names && n == 0 && !o->ignore_not_found) {
			fprintf(stderr, "Error from server (NotFound): %s \"%s\" not found\n",
				resource_label(kind, lbl, sizeof(lbl)), names[i]);
			*missing = true;
		}
		items_append_kvs(items, kvs, n);
		etcd_kvs_free(kvs, n);
	}
	return 0;
}

/* -o json: the object when one name was asked for and found, else a List (nothing when the one name
 * was not found). */
static int get_print_json(json_t *items, size_t n_names, bool missing, int64_t revision) {
	_cleanup_(json_decrefp) json_t *out = NULL;
	char rv[24];

	snprintf(rv, sizeof(rv), "%lld", (long long) revision);
	if (n_names == 1 && json_array_size(items) == 1)
		out = json_incref(json_array_get(items, 0));
	else if (!(n_names == 1 && missing))
		out = json_pack("{s:s, s:O, s:s, s:{s:s}}", "apiVersion", "v1", "items", items, "kind", "List",
				"metadata", "resourceVersion", rv);
	if (out) {
		char *s = json_dumps(out, JSON_INDENT(4) | JSON_PRESERVE_ORDER);

		if (!s)
			return -ENOMEM;
		puts(s);
		free(s);
	}
	return 0;
}

/* -o name: KIND/NAME lines. */
static void get_print_names(json_t *items, KubeKind kind) {
	const json_t *x;
	char lbl[64];
	size_t i;

	json_array_foreach(items, i, x)
		printf("%s/%s\n", kind_label(kind, lbl, sizeof(lbl)),
		       json_string_value(json_object_get(json_object_get(x, "metadata"), "name")));
}

/* The table: NAMESPACE (with_ns), NAME, the kind's columns, AGE, LABELS (show_labels). */
static int get_print_table(json_t *items, KubeKind kind, bool with_ns, bool show_labels) {
	const char *cols[8];
	size_t nc = kind_columns(kind, cols);
	Table t = { .cols = (with_ns ? 1 : 0) + 1 + nc + 1 + (show_labels ? 1 : 0) };
	char *row[16] = {};
	const json_t *x;
	size_t i, c0;
	int r;

	c0 = 0;
	if (with_ns)
		row[c0++] = strdup("NAMESPACE");
	row[c0++] = strdup("NAME");
	for (size_t k = 0; k < nc; k++)
		row[c0++] = strdup(cols[k]);
	row[c0++] = strdup("AGE");
	if (show_labels)
		row[c0++] = strdup("LABELS");
	if (table_add(&t, row) < 0)
		return -ENOMEM;
	json_array_foreach(items, i, x) {
		const json_t *md = json_object_get(x, "metadata");

		memset(row, 0, sizeof(row));
		c0 = 0;
		if (with_ns)
			row[c0++] = strdup(json_string_value(json_object_get(md, "namespace")) ?: "");
		row[c0++] = strdup(json_string_value(json_object_get(md, "name")) ?: "");
		r = kind_cells(kind, x, row + c0);
		if (r < 0)
			return r;
		c0 += (size_t) r;
		row[c0++] = age(json_string_value(json_object_get(md, "creationTimestamp")));
		if (show_labels)
			row[c0++] = labels_text(json_object_get(md, "labels"));
		if (table_add(&t, row) < 0)
			return -ENOMEM;
	}
	table_print_free(&t);
	return 0;
}

int object_get_main(int argc, char *argv[]) {
	_cleanup_(etcd_client_freep) EtcdClient *c = NULL;
	_cleanup_strv_free_ char **files = NULL;
	_cleanup_(json_decrefp) json_t *items = NULL;
	ObjOptions o = {};
	const KubeKindInfo *ki;
	const char *ns, *one_name;
	char **names;
	size_t n_names;
	int64_t revision = 0;
	KubeKind kind;
	bool missing = false;

	if (obj_parse(argc, argv, &o) < 0)
		return EXIT_FAILURE;
	files = o.files;
	if (optind >= argc) {
		fprintf(stderr, "error: you must specify the type of resource to get (pods, namespaces, "
				"networkpolicies, services, endpointslices, nodes)\n");
		return EXIT_FAILURE;
	}
	if (get_kind_arg(argv[optind], &kind, &one_name) < 0)
		return EXIT_FAILURE;
	ki = kube_kind_info(kind);
	names = one_name ? (char *[]) { (char *) one_name } : argv + optind + 1;
	n_names = one_name ? 1 : (size_t) (argc - optind - 1);
	if (one_name && optind + 1 != argc) {
		fprintf(stderr, "error: there is no need to specify a resource type as a separate argument when "
				"passing arguments in resource/name form\n");
		return EXIT_FAILURE;
	}
	if (o.all_namespaces && n_names > 0) {
		fprintf(stderr, "error: a resource cannot be retrieved by name across all namespaces\n");
		return EXIT_FAILURE;
	}
	ns = !ki->namespaced ? NULL : o.all_namespaces ? NULL : o.namespace ?: "default";
	if (store_connect(&o, &c) < 0)
		return EXIT_FAILURE;
	items = json_array();
	if (!items)
		return EXIT_FAILURE;
	if (get_fetch(c, &o, kind, ns, names, n_names, items, &revision, &missing) < 0)
		return EXIT_FAILURE;

	if (o.output && streq(o.output, "json")) {
		if (get_print_json(items, n_names, missing, revision) < 0)
			return EXIT_FAILURE;
	} else if (o.output && streq(o.output, "name"))
		get_print_names(items, kind);
	else if (json_array_size(items) == 0) {
		if (n_names == 0) {
			if (ns)
				fprintf(stderr, "No resources found in %s namespace.\n", ns);
			else
				fprintf(stderr, "No resources found\n");
		}
	} else if (get_print_table(items, kind, ki->namespaced && o.all_namespaces, o.show_labels) < 0)
		return EXIT_FAILURE;
	if (fflush(stdout) != 0)
		return EXIT_FAILURE;
	return missing ? EXIT_FAILURE : EXIT_SUCCESS;
}
