/* SPDX-License-Identifier: Apache-2.0 */
/*
 * weft cni: the runtime side of CNI, what libcni + cnitool are, so scripts can switch between them
 * (the interface is in cni-cmd.h). The chain runner is cni-chain.c, the result cache cni-cache.c, the
 * config loader cni-conf-load.c; this file is the command line: arguments and environment in, the
 * result or CNI error JSON out.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/sha512.h"
#include "basic/string-util.h"
#include "tool/cni-cache.h"
#include "tool/cni-chain.h"
#include "tool/cni-cmd.h"
#include "tool/cni-conf-load.h"
#include "shared/client/object-store.h"
#include "tool/pod-record.h"

#define NETCONFPATH_DEFAULT "/etc/cni/net.d"
#define CNI_PATH_DEFAULT "/opt/cni/bin"

typedef struct Options {
	const char *conf_dir;
	const char *cache_dir;
	const char *cni_path;
	const char *container_id;
	CniAttachment *valid;
	size_t n_valid;
	PodRecordOptions rec; /* etcd mode: pod records at ADD/DEL (pod-record.h) */
} Options;

static void usage(FILE *f) {
	fprintf(f,
		"Usage: weft cni add|check|del NET NETNS\n"
		"       weft cni del NET --container-id ID\n"
		"       weft cni gc NET [--valid CONTAINERID/IFNAME]...\n"
		"       weft cni status NET\n"
		"       weft cni version TYPE\n"
		"Runs the plugins of network NET (a .conf or .conflist in the config directory) as a runtime\n"
		"does, with cnitool's interface, and keeps libcni's result cache.\n"
		"Options: --conf-dir DIR (NETCONFPATH), --cache-dir DIR (CNI_CACHE_DIR),\n"
		"         --container-id ID (CNI_CONTAINERID)\n"
		"Pod records (etcd mode; with K8S_POD_NAMESPACE/K8S_POD_NAME in CNI_ARGS): --etcd-endpoints URLS\n"
		"         (WEFT_ETCD_ENDPOINTS), --etcd-prefix P (WEFT_ETCD_PREFIX), --node-name N (WEFT_NODE_NAME),\n"
		"         --label K=V... (WEFT_POD_LABELS=K=V,K=V)\n"
		"Environment: CNI_PATH, CNI_IFNAME, CNI_ARGS, CAP_ARGS, as cnitool.\n");
}

/* Prints JSON to stdout (indented as cnitool does). */
static int print_json(json_t *j) {
	char *s = json_dumps(j, JSON_INDENT(4) | JSON_PRESERVE_ORDER);
	if (!s)
		return -ENOMEM;
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
	return fflush(stdout) == 0 ? 0 : -EIO;
}

static int fail_with(const CniError *err, CniVersion v) {
	json_t *j = cni_error_to_json(err, v);
	if (j) {
		(void) print_json(j);
		json_decref(j);
	}
	return EXIT_FAILURE;
}

/* Go's filepath.Clean, on an absolute path, in place. */
static void path_clean(char *p) {
	char *out = p, *s = p;

	while (*s) {
		char *e;
		size_t n;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchrnul(s, '/');
		n = (size_t) (e - s);
		if (n == 1 && s[0] == '.') {
			s = e;
			continue;
		}
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (out > p && *--out != '/')
				;
			s = e;
			continue;
		}
		*out++ = '/';
		memmove(out, s, n);
		out += n;
		s = e;
	}
	if (out == p)
		*out++ = '/';
	*out = 0;
}

/* cnitool: "cnitool-" + hex of the first 10 bytes of SHA-512 of the absolute netns path. */
static int container_id_from_netns(const char *netns, char **ret_abs, char **ret_cid) {
	_cleanup_free_ char *abs = NULL, *cwd = NULL;
	uint8_t d[SHA512_DIGEST_SIZE];
	char *cid;

	if (netns[0] == '/')
		abs = strdup(netns);
	else {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return negative_errno();
		abs = strdup_printf("%s/%s", cwd, netns);
	}
	if (!abs)
		return -ENOMEM;
	path_clean(abs);
	sha512(abs, strlen(abs), d);
	cid = malloc(strlen("cnitool-") + 20 + 1);
	if (!cid)
		return -ENOMEM;
	strcpy(cid, "cnitool-");
	for (unsigned i = 0; i < 10; i++)
		sprintf(cid + 8 + 2 * i, "%02x", d[i]);
	*ret_abs = TAKE_PTR(abs);
	*ret_cid = cid;
	return 0;
}

/* libcni utils.ValidateContainerID / ValidateNetworkName: ^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$ */
static bool valid_id(const char *s) {
	if (isempty(s) || !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", s[0]))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == strlen(s);
}

/* libcni utils.ValidateInterfaceName */
static bool valid_ifname(const char *s) {
	if (isempty(s) || strlen(s) > 15 || streq(s, ".") || streq(s, ".."))
		return false;
	return strpbrk(s, "/: \t\n\v\f\r") == NULL;
}

/* cnitool's parseArgs: "K=V;K=V", every pair exactly one '=' with both sides non-empty. */
static int parse_cni_args(const char *s, json_t **ret, CniError *err) {
	json_t *a;
	const char *p = s;

	a = json_array();
	if (!a)
		return -ENOMEM;
	for (;;) {
		const char *e = strchrnul(p, ';'), *eq = memchr(p, '=', (size_t) (e - p));

		if (!eq || eq == p || eq + 1 == e || memchr(eq + 1, '=', (size_t) (e - eq - 1))) {
			json_decref(a);
			return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV, "invalid CNI_ARGS pair \"%.*s\"",
					     (int) (e - p), p);
		}
		json_array_append_new(a, json_pack("[s#,s#]", p, (int) (eq - p), eq + 1, (int) (e - eq - 1)));
		if (!*e)
			break;
		p = e + 1;
	}
	*ret = a;
	return 0;
}

static int parse_valid(Options *o, const char *s) {
	const char *slash = strchr(s, '/');
	CniAttachment *n;

	if (!slash || slash == s || !slash[1])
		return -EINVAL;
	n = reallocarray(o->valid, o->n_valid + 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	o->valid = n;
	n[o->n_valid].container_id = strndup(s, (size_t) (slash - s));
	n[o->n_valid].ifname = strdup(slash + 1);
	o->n_valid++;
	if (!n[o->n_valid - 1].container_id || !n[o->n_valid - 1].ifname)
		return -ENOMEM;
	return 0;
}

static void options_done(Options *o) {
	for (size_t i = 0; i < o->n_valid; i++) {
		free(o->valid[i].container_id);
		free(o->valid[i].ifname);
	}
	free(o->valid);
	strv_free(o->rec.labels);
}

static const char *env_or(const char *name, const char *def) {
	const char *v = getenv(name);
	return isempty(v) ? def : v;
}

static int cmd_version(const Options *o, const char *type) {
	CniError err = {};
	json_t *out = NULL;
	int r;

	r = cni_plugin_version(type, o->cni_path, &out, &err);
	if (r < 0) {
		r = fail_with(&err, CNI_VERSION_LATEST);
		cni_error_clear(&err);
		return r;
	}
	if (out)
		(void) print_json(out);
	json_decref(out);
	return EXIT_SUCCESS;
}

/* The attachment the command line names: the container ID (--container-id, or cnitool's, derived
 * from NETNS), the netns path and CNI_IFNAME, into rt (which borrows *ret_netns and *ret_derived_cid). */
static int attachment_from_args(const char *netns_arg, const Options *o, CniRuntime *rt, char **ret_netns,
				char **ret_derived_cid, CniError *err) {
	int r;

	if (netns_arg) {
		r = container_id_from_netns(netns_arg, ret_netns, ret_derived_cid);
		if (r < 0)
			return cni_error_set(err, r, CNI_ERR_INVALID_ENV, "invalid netns path \"%s\": %s", netns_arg,
					     strerror(-r));
	}
	rt->container_id = o->container_id ?: *ret_derived_cid;
	rt->netns = *ret_netns ?: "";
	/* LookupEnv in cnitool: set-but-empty stays empty (and is then refused). */
	rt->ifname = getenv("CNI_IFNAME") ?: "eth0";
	if (!valid_id(rt->container_id))
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV, "invalid container ID \"%s\"",
				     rt->container_id);
	if (!valid_ifname(rt->ifname))
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV, "invalid interface name \"%s\"", rt->ifname);
	return 0;
}

/* CAP_ARGS and CNI_ARGS from the environment, into rt. What was parsed is left in *cap_args and
 * *cni_args, on failure too: the caller frees them. */
static int runtime_args_from_env(CniRuntime *rt, json_t **cap_args, json_t **cni_args, CniError *err) {
	const char *s;

	s = getenv("CAP_ARGS");
	if (!isempty(s)) {
		json_error_t jerr;
		*cap_args = json_loads(s, 0, &jerr);
		if (!*cap_args || !(json_is_object(*cap_args) || json_is_null(*cap_args)))
			return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_ENV, "invalid CAP_ARGS: %s",
					     *cap_args ? "not a JSON object" : jerr.text);
	}
	s = getenv("CNI_ARGS");
	if (!isempty(s)) {
		int r = parse_cni_args(s, cni_args, err);
		if (r < 0)
			return r;
	}
	rt->cap_args = json_is_object(*cap_args) ? *cap_args : NULL;
	rt->cni_args = *cni_args;
	return 0;
}

/* The network's config list from the config dir. For DEL of a network whose config is gone, the
 * config cached with the attachment (*cached keeps the cache entry read for it). */
static int conf_list_load(const char *cmd, const char *net, const Options *o, const CniRuntime *rt, CniNetConfList **l,
			  CniCacheEntry **cached, CniError *err) {
	int r;

	r = cni_conf_list_load(o->conf_dir, net, l, err);
	if (r < 0 && streq(cmd, "del") && r == -ENOENT &&
	    cni_cache_read(o->cache_dir, net, rt->container_id, rt->ifname, cached) >= 0 && (*cached)->config) {
		/* The network's config is gone but the attachment is cached: DEL it with what it was
		 * added with rather than leak it. */
		char *bytes = strndup((*cached)->config, (*cached)->config_len);
		CniError ce = {};

		if (bytes && cni_conf_list_from_bytes(bytes, (*cached)->config_len, l, &ce) >= 0) {
			log_info("Network %s not in %s; using the config cached with the attachment", net, o->conf_dir);
			cni_error_clear(err);
			r = 0;
		}
		cni_error_clear(&ce);
	}
	return r;
}

/* ADD, then (etcd mode) the pod's record, and the result on stdout. */
static int run_add(const Options *o, const CniNetConfList *l, const CniRuntime *rt, CniError *err) {
	json_t *result = NULL;
	int r;

	r = cni_chain_add(l, rt, &result, err);
	if (r >= 0 && o->rec.endpoints) {
		_cleanup_free_ char *why = NULL;
		int k = pod_record_add(&o->rec, rt->cni_args, rt->container_id, result, &why);

		if (k < 0) {
			/* Fail closed: a pod whose IPs are not in the datastore is invisible to
			 * every NetworkPolicy that should select it (as a peer or a target), so
			 * it must not run. Undo the ADD; the runtime retries the sandbox. */
			CniError derr = {};

			(void) cni_chain_del(l, rt, &derr);
			cni_error_clear(&derr);
			json_decref(result);
			r = cni_error_set(err, k, k == -EINVAL ? CNI_ERR_INVALID_ENV : CNI_ERR_TRY_AGAIN_LATER,
					  "recording the pod failed, the ADD was undone: %s", why ?: strerror(-k));
			log_error("%s", err->msg);
		}
	}
	if (r >= 0) {
		r = print_json(result);
		json_decref(result);
		if (r < 0)
			log_error_errno(r, "Failed to print result: %m");
	}
	return r;
}

/* DEL, then (etcd mode) the pod's record. have_cap_args/have_cni_args: whether the environment gave
 * them; if not, DEL gets what the attachment was added with. */
static int run_del(const char *net, const Options *o, const CniNetConfList *l, CniRuntime *rt, CniCacheEntry **cached,
		   bool have_cap_args, bool have_cni_args, CniError *err) {
	int r;

	/* Without CAP_ARGS / CNI_ARGS, DEL gets what the attachment was added with (as
	 * runtimes using GetNetworkListCachedConfig do): plugins like portmap need it. */
	if (!have_cap_args || !have_cni_args) {
		if (!*cached)
			(void) cni_cache_read(o->cache_dir, net, rt->container_id, rt->ifname, cached);
		if (*cached && !have_cap_args)
			rt->cap_args = (*cached)->capability_args;
		if (*cached && !have_cni_args)
			rt->cni_args = (*cached)->cni_args;
	}
	r = cni_chain_del(l, rt, err);
	if (o->rec.endpoints) {
		_cleanup_free_ char *why = NULL;
		int k = pod_record_del(&o->rec, rt->cni_args, rt->container_id, &why);

		if (k < 0) {
			log_error("Failed to remove the pod record: %s", why ?: strerror(-k));
			if (r >= 0)
				r = cni_error_set(err, k, CNI_ERR_TRY_AGAIN_LATER, "removing the pod record failed: %s",
						  why ?: strerror(-k));
		}
	}
	return r;
}

static int run(const char *cmd, const char *net, const char *netns_arg, Options *o) {
	_cleanup_(cni_conf_list_freep) CniNetConfList *l = NULL;
	_cleanup_(cni_cache_entry_freep) CniCacheEntry *cached = NULL;
	_cleanup_free_ char *netns = NULL, *derived_cid = NULL;
	CniError err = {};
	CniRuntime rt = { .cni_path = o->cni_path, .cache_dir = o->cache_dir };
	json_t *cni_args = NULL, *cap_args = NULL;
	bool attach = !streq(cmd, "gc") && !streq(cmd, "status");
	int r;

	if (!valid_id(net)) {
		cni_error_set(&err, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid network name \"%s\"", net);
		goto fail;
	}

	if (attach) {
		if (!netns_arg && (!streq(cmd, "del") || !o->container_id)) {
			usage(stderr);
			return EXIT_FAILURE;
		}
		if (attachment_from_args(netns_arg, o, &rt, &netns, &derived_cid, &err) < 0 ||
		    runtime_args_from_env(&rt, &cap_args, &cni_args, &err) < 0)
			goto fail;
	}

	r = conf_list_load(cmd, net, o, &rt, &l, &cached, &err);
	if (r < 0) {
		log_error("%s", err.msg ?: "failed to load network configuration");
		goto fail_logged;
	}

	if (streq(cmd, "add"))
		r = run_add(o, l, &rt, &err);
	else if (streq(cmd, "del"))
		r = run_del(net, o, l, &rt, &cached, cap_args != NULL, cni_args != NULL, &err);
	else if (streq(cmd, "check"))
		r = cni_chain_check(l, &rt, &err);
	else if (streq(cmd, "gc"))
		r = cni_chain_gc(l, &rt, o->valid, o->n_valid, &err);
	else
		r = cni_chain_status(l, &rt, &err);
	json_decref(cap_args);
	json_decref(cni_args);
	if (r >= 0)
		return EXIT_SUCCESS;
	/* Plugin failures were logged by the chain with the plugin's name; the rest here. */
	r = fail_with(&err, l->version);
	cni_error_clear(&err);
	return r;

fail:
	log_error("%s", err.msg ?: "failed");
fail_logged:
	json_decref(cap_args);
	json_decref(cni_args);
	r = fail_with(&err, l ? l->version : CNI_VERSION_LATEST);
	cni_error_clear(&err);
	return r;
}

/* Parses the options into *o. 1: go on with argv[optind..]; 0: done (--help); -EINVAL: bad usage
 * (printed); -ENOMEM. */
static int parse_options(int argc, char *argv[], Options *o) {
	enum {
		ARG_CONF_DIR = 0x100,
		ARG_CACHE_DIR,
		ARG_CONTAINER_ID,
		ARG_VALID,
		ARG_ETCD_ENDPOINTS,
		ARG_ETCD_PREFIX,
		ARG_NODE_NAME,
		ARG_LABEL
	};
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "conf-dir", required_argument, NULL, ARG_CONF_DIR },
		{ "cache-dir", required_argument, NULL, ARG_CACHE_DIR },
		{ "container-id", required_argument, NULL, ARG_CONTAINER_ID },
		{ "valid", required_argument, NULL, ARG_VALID },
		{ "etcd-endpoints", required_argument, NULL, ARG_ETCD_ENDPOINTS },
		{ "etcd-prefix", required_argument, NULL, ARG_ETCD_PREFIX },
		{ "node-name", required_argument, NULL, ARG_NODE_NAME },
		{ "label", required_argument, NULL, ARG_LABEL },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
		switch (c) {
		case 'h': usage(stdout); return 0;
		case ARG_CONF_DIR: o->conf_dir = optarg; break;
		case ARG_CACHE_DIR: o->cache_dir = optarg; break;
		case ARG_CONTAINER_ID: o->container_id = optarg; break;
		case ARG_ETCD_ENDPOINTS: o->rec.endpoints = optarg; break;
		case ARG_ETCD_PREFIX: o->rec.prefix = optarg; break;
		case ARG_NODE_NAME: o->rec.node_name = optarg; break;
		case ARG_LABEL:
			if (strv_extend(&o->rec.labels, optarg) < 0)
				return -ENOMEM;
			break;
		case ARG_VALID:
			if (parse_valid(o, optarg) < 0) {
				log_error("Invalid --valid \"%s\", expected CONTAINERID/IFNAME", optarg);
				return -EINVAL;
			}
			break;
		default: usage(stderr); return -EINVAL;
		}
	return 1;
}

int cni_cmd_main(int argc, char *argv[]) {
	_cleanup_(options_done) Options o = {
		.conf_dir = env_or("NETCONFPATH", NETCONFPATH_DEFAULT),
		.cache_dir = env_or("CNI_CACHE_DIR", CNI_CACHE_DIR_DEFAULT),
		.cni_path = env_or("CNI_PATH", CNI_PATH_DEFAULT),
		.container_id = getenv("CNI_CONTAINERID"),
		.rec = {
			.endpoints = env_or("WEFT_ETCD_ENDPOINTS", NULL),
			.prefix = env_or("WEFT_ETCD_PREFIX", OBJECT_STORE_PREFIX_DEFAULT),
			.node_name = env_or("WEFT_NODE_NAME", NULL),
		},
	};
	const char *cmd;
	int r, n;

	if (isempty(o.container_id))
		o.container_id = NULL;
	if (!isempty(getenv("WEFT_POD_LABELS")) && strv_split(getenv("WEFT_POD_LABELS"), ",", &o.rec.labels) < 0)
		return EXIT_FAILURE;
	r = parse_options(argc, argv, &o);
	if (r <= 0)
		return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	n = argc - optind;
	if (n < 2) {
		usage(stderr);
		return EXIT_FAILURE;
	}
	cmd = argv[optind];
	if (streq(cmd, "version") && n == 2)
		return cmd_version(&o, argv[optind + 1]);
	if ((streq(cmd, "add") || streq(cmd, "check") || streq(cmd, "del")) && n <= 3)
		return run(cmd, argv[optind + 1], n == 3 ? argv[optind + 2] : NULL, &o);
	if ((streq(cmd, "gc") || streq(cmd, "status")) && n == 2)
		return run(cmd, argv[optind + 1], NULL, &o);
	usage(stderr);
	return EXIT_FAILURE;
}
