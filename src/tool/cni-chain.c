/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"
#include "tool/cni-cache.h"
#include "tool/cni-chain.h"

extern char **environ;

/*
 * The plugin environment, as libcni's invoke.Args.AsEnv(): our environment with the six CNI_*
 * variables replaced (Go appends them and dedups in favour of the later ones). Built once per
 * attachment; only the CNI_COMMAND slot changes between commands.
 */
typedef struct PluginEnv {
	char **envp;
	char *own[6];
	size_t cmd;
} PluginEnv;

static void plugin_env_done(PluginEnv *e) {
	free(e->envp);
	for (size_t i = 0; i < ELEMENTSOF(e->own); i++)
		free(e->own[i]);
}

static bool is_cni_var(const char *s) {
	static const char *const vars[] = { "CNI_COMMAND=", "CNI_CONTAINERID=", "CNI_NETNS=",
					    "CNI_ARGS=",    "CNI_IFNAME=",      "CNI_PATH=" };
	if (!startswith(s, "CNI_"))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(vars); i++)
		if (startswith(s, vars[i]))
			return true;
	return false;
}

/* [[k,v],...] -> "k=v;k=v" (libcni's stringify). */
static char *cni_args_string(json_t *args) {
	char *s = NULL;
	size_t len = 0, i;
	json_t *pair;
	FILE *f;

	f = open_memstream(&s, &len);
	if (!f)
		return NULL;
	json_array_foreach(args, i, pair) {
		fprintf(f, "%s%s=%s", i > 0 ? ";" : "", json_string_value(json_array_get(pair, 0)) ?: "",
			json_string_value(json_array_get(pair, 1)) ?: "");
	}
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

static int plugin_env_init(PluginEnv *e, const CniRuntime *rt) {
	_cleanup_free_ char *args = NULL;
	size_t n = 0, k = 0;

	*e = (PluginEnv) {};
	args = rt->cni_args ? cni_args_string(rt->cni_args) : strdup("");
	e->own[0] = strdup("CNI_COMMAND=");
	e->own[1] = strdup_printf("CNI_CONTAINERID=%s", rt->container_id ?: "");
	e->own[2] = strdup_printf("CNI_NETNS=%s", rt->netns ?: "");
	e->own[3] = args ? strdup_printf("CNI_ARGS=%s", args) : NULL;
	e->own[4] = strdup_printf("CNI_IFNAME=%s", rt->ifname ?: "");
	e->own[5] = strdup_printf("CNI_PATH=%s", rt->cni_path ?: "");
	for (size_t i = 0; i < ELEMENTSOF(e->own); i++)
		if (!e->own[i])
			goto oom;
	while (environ && environ[n])
		n++;
	e->envp = calloc(n + ELEMENTSOF(e->own) + 1, sizeof(char *));
	if (!e->envp)
		goto oom;
	for (size_t i = 0; i < n; i++)
		if (!is_cni_var(environ[i]))
			e->envp[k++] = environ[i];
	e->cmd = k;
	for (size_t i = 0; i < ELEMENTSOF(e->own); i++)
		e->envp[k++] = e->own[i];
	return 0;
oom:
	plugin_env_done(e);
	return -ENOMEM;
}

static void plugin_env_set_command(PluginEnv *e, const char *cmd) {
	static const char *const cmds[] = { "CNI_COMMAND=ADD", "CNI_COMMAND=DEL",    "CNI_COMMAND=CHECK",
					    "CNI_COMMAND=GC",  "CNI_COMMAND=STATUS", "CNI_COMMAND=VERSION" };
	for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
		if (streq(cmds[i] + strlen("CNI_COMMAND="), cmd)) {
			e->envp[e->cmd] = (char *) cmds[i];
			return;
		}
}

static const char *plugin_type(json_t *plugin) {
	return json_string_value(json_object_get(plugin, "type"));
}

/*
 * libcni's buildOneConfig + injectRuntimeConfig: the plugin object, "name" and "cniVersion" from
 * the list, "prevResult" if given, and "runtimeConfig" holding exactly the capabilities the plugin
 * declares true that the runtime supplied (replacing any runtimeConfig in the file). `extra`
 * (GC's attachment list) is merged last. Returns the compact JSON text.
 */
static int plugin_conf(const CniNetConfList *l, json_t *plugin, json_t *prev, json_t *cap_args, json_t *extra,
		       char **ret) {
	json_t *c, *caps, *rc = NULL, *v;
	const char *k;
	int r = 0;

	c = json_copy(plugin); /* shallow: the list stays untouched */
	if (!c)
		return -ENOMEM;
	if (json_object_set_new(c, "name", json_string(l->name)) < 0 ||
	    json_object_set_new(c, "cniVersion", json_string(l->version_str)) < 0 ||
	    (prev && json_object_set(c, "prevResult", prev) < 0))
		r = -ENOMEM;

	caps = json_object_get(plugin, "capabilities");
	if (r >= 0 && json_is_object(caps) && json_is_object(cap_args))
		json_object_foreach(caps, k, v) {
			json_t *data;

			if (!json_is_true(v) || !(data = json_object_get(cap_args, k)))
				continue;
			if (!rc && !(rc = json_object()))
				break;
			if (json_object_set(rc, k, data) < 0)
				r = -ENOMEM;
		}
	if (r >= 0 && rc && json_object_set(c, "runtimeConfig", rc) < 0)
		r = -ENOMEM;
	if (r >= 0 && extra && json_object_update(c, extra) < 0)
		r = -ENOMEM;
	json_decref(rc);
	if (r >= 0) {
		*ret = json_dumps(c, JSON_COMPACT);
		if (!*ret)
			r = -ENOMEM;
	}
	json_decref(c);
	return r;
}

/* Runs one plugin; on failure logs with context and fills *err (the plugin's own error). */
static int run_plugin(const CniNetConfList *l, json_t *plugin, PluginEnv *env, const char *cmd, const char *conf,
		      json_t **ret_out, CniError *err) {
	_cleanup_free_ char *exe = NULL;
	const char *type = plugin_type(plugin);
	int r;

	r = cni_find_plugin(type, env->own[5] + strlen("CNI_PATH="), &exe);
	if (r < 0) {
		cni_error_set(err, r, CNI_ERR_INTERNAL, "failed to find plugin \"%s\" in path [%s]", type,
			      env->own[5] + strlen("CNI_PATH="));
		return log_error_errno(r, "plugin type=\"%s\" name=\"%s\" failed (%s): %s", type, l->name, cmd,
				       err->msg ?: "");
	}
	plugin_env_set_command(env, cmd);
	r = cni_exec(exe, env->envp, conf, strlen(conf), ret_out, err);
	if (r < 0) {
		if (!err->code)
			cni_error_set(err, r, CNI_ERR_INTERNAL, "%s: %s", exe, strerror(-r));
		return log_error_errno(r, "plugin type=\"%s\" name=\"%s\" failed (%s): %s", type, l->name, cmd,
				       err->msg ?: "");
	}
	return 0;
}

/*
 * `raw` as a result of the list's version: the same object when it already is (the common case,
 * no work), converted through the canonical model otherwise. New reference, or NULL with err set.
 */
static json_t *result_as_list_version(json_t *raw, const CniNetConfList *l, CniError *err) {
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	const char *want = cni_version_to_string(l->version);
	const char *have = json_string_value(json_object_get(raw, "cniVersion"));
	CniVersion v;

	if (streq_ptr(have, want))
		return json_incref(raw);
	v = cni_version_from_string(have);
	if (v < 0) {
		cni_error_set(err, -EINVAL, CNI_ERR_INCOMPATIBLE_VERSION, "result has unsupported cniVersion \"%s\"",
			      have ?: "");
		return NULL;
	}
	if (cni_result_from_json(raw, v, &res, err) < 0)
		return NULL;
	return cni_result_to_json(res, l->version, err);
}

/* DEL plugins [0, n) in reverse order; every one is called, first error kept. */
static int del_plugins(const CniNetConfList *l, size_t n, PluginEnv *env, json_t *prev, json_t *cap_args,
		       CniError *err) {
	int r = 0;

	for (size_t i = n; i-- > 0;) {
		_cleanup_free_ char *conf = NULL;
		json_t *plugin = json_array_get(l->plugins, i);
		CniError e = {};
		int k;

		k = plugin_conf(l, plugin, prev, cap_args, NULL, &conf);
		if (k >= 0)
			k = run_plugin(l, plugin, env, "DEL", conf, NULL, &e);
		else
			cni_error_set(&e, k, CNI_ERR_INTERNAL, "out of memory");
		if (k < 0 && r >= 0) {
			r = k;
			if (err) {
				cni_error_clear(err);
				*err = e;
				continue;
			}
		}
		cni_error_clear(&e);
	}
	return r;
}

/* The cached result as prevResult, if the version has that (0.4.0+) and it converts. */
static json_t *cached_prev(const CniNetConfList *l, json_t *cached) {
	CniError e = {};
	json_t *prev;

	if (!cached || l->version < CNI_VERSION_0_4_0)
		return NULL;
	prev = result_as_list_version(cached, l, &e);
	if (!prev)
		log_warning("Cached result of network %s unusable as prevResult, calling without: %s", l->name,
			    e.msg ?: "");
	cni_error_clear(&e);
	return prev;
}

int cni_chain_add(const CniNetConfList *l, const CniRuntime *rt, json_t **ret_result, CniError *err) {
	_cleanup_(plugin_env_done) PluginEnv env = {};
	json_t *result = NULL, *plugin;
	size_t i, done = 0;
	int r;

	r = plugin_env_init(&env, rt);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");

	json_array_foreach(l->plugins, i, plugin) {
		_cleanup_free_ char *conf = NULL;
		json_t *prev = NULL, *out = NULL;

		if (result) {
			prev = result_as_list_version(result, l, err);
			if (!prev) {
				r = -EINVAL;
				log_error("Network %s: cannot pass the result of plugin %zu on: %s", l->name, i,
					  err->msg ?: "");
				goto rollback;
			}
		}
		r = plugin_conf(l, plugin, prev, rt->cap_args, NULL, &conf);
		json_decref(prev);
		if (r < 0) {
			cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
			goto rollback;
		}
		r = run_plugin(l, plugin, &env, "ADD", conf, &out, err);
		if (r < 0)
			goto rollback;
		done = i + 1;
		if (!json_is_object(out)) {
			json_decref(out);
			r = cni_error_set(err, -EBADMSG, CNI_ERR_DECODE, "plugin type=\"%s\" returned no result",
					  plugin_type(plugin));
			log_error("%s", err->msg);
			goto rollback;
		}
		/* As libcni's fixupResultVersion: a result without cniVersion is the config's. */
		if (!json_is_string(json_object_get(out, "cniVersion")))
			json_object_set_new(out, "cniVersion", json_string(cni_version_to_string(l->version)));
		json_decref(result);
		result = out;
	}

	{
		CniCacheEntry e = {
			.network_name = l->name,
			.container_id = rt->container_id,
			.ifname = rt->ifname,
			.netns = rt->netns,
			.cni_args = rt->cni_args,
			.capability_args = rt->cap_args,
			.result = result,
			.config = l->bytes,
			.config_len = l->n_bytes,
		};
		r = cni_cache_write(rt->cache_dir, &e);
		if (r < 0) {
			/* Without the cache entry a later DEL/GC would not know about this attachment:
			 * undo it rather than leak it. */
			cni_error_set(err, r, CNI_ERR_IO, "failed to set network \"%s\" cached result in %s: %s",
				      l->name, rt->cache_dir, strerror(-r));
			log_error("%s", err->msg);
			goto rollback;
		}
	}
	*ret_result = result;
	return 0;

rollback:
	if (done > 0) {
		json_t *prev = result && l->version >= CNI_VERSION_0_4_0 ? result_as_list_version(result, l, NULL)
									 : NULL;
		log_info("Network %s: undoing %zu added plugin(s)", l->name, done);
		(void) del_plugins(l, done, &env, prev, rt->cap_args, NULL);
		json_decref(prev);
	}
	json_decref(result);
	return r;
}

static int chain_del(const CniNetConfList *l, const CniRuntime *rt, json_t *cached_result, CniError *err) {
	_cleanup_(plugin_env_done) PluginEnv env = {};
	json_t *prev;
	int r;

	r = plugin_env_init(&env, rt);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
	prev = cached_prev(l, cached_result);
	r = del_plugins(l, json_array_size(l->plugins), &env, prev, rt->cap_args, err);
	json_decref(prev);
	return r;
}

int cni_chain_del(const CniNetConfList *l, const CniRuntime *rt, CniError *err) {
	_cleanup_(cni_cache_entry_freep) CniCacheEntry *cached = NULL;
	int r;

	if (l->version >= CNI_VERSION_0_4_0) {
		r = cni_cache_read(rt->cache_dir, l->name, rt->container_id, rt->ifname, &cached);
		if (r < 0 && r != -ENOENT)
			log_warning_errno(r, "Ignoring unreadable cache entry of %s/%s/%s: %m", l->name,
					  rt->container_id, rt->ifname);
	}
	r = chain_del(l, rt, cached ? cached->result : NULL, err);
	if (r < 0)
		return r;
	r = cni_cache_remove(rt->cache_dir, l->name, rt->container_id, rt->ifname);
	if (r < 0)
		log_warning_errno(r, "Failed to remove cache entry of %s/%s/%s: %m", l->name, rt->container_id,
				  rt->ifname);
	return 0;
}

int cni_chain_check(const CniNetConfList *l, const CniRuntime *rt, CniError *err) {
	_cleanup_(plugin_env_done) PluginEnv env = {};
	_cleanup_(cni_cache_entry_freep) CniCacheEntry *cached = NULL;
	json_t *prev, *plugin;
	size_t i;
	int r;

	if (l->version < CNI_VERSION_0_4_0)
		return cni_error_set(err, -EOPNOTSUPP, CNI_ERR_INCOMPATIBLE_VERSION,
				     "configuration version \"%s\" does not support the CHECK command", l->version_str);
	if (l->disable_check)
		return 0;
	r = cni_cache_read(rt->cache_dir, l->name, rt->container_id, rt->ifname, &cached);
	if (r < 0 || !cached->result)
		return cni_error_set(err, r < 0 ? r : -ENOENT, CNI_ERR_UNKNOWN_CONTAINER,
				     "failed to get network \"%s\" cached result for %s/%s: %s", l->name,
				     rt->container_id, rt->ifname,
				     r == -ENOENT || r >= 0 ? "none cached" : strerror(-r));
	prev = result_as_list_version(cached->result, l, err);
	if (!prev)
		return -EINVAL;
	r = plugin_env_init(&env, rt);
	if (r < 0) {
		json_decref(prev);
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
	}
	json_array_foreach(l->plugins, i, plugin) {
		_cleanup_free_ char *conf = NULL;

		r = plugin_conf(l, plugin, prev, rt->cap_args, NULL, &conf);
		if (r < 0) {
			cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
			break;
		}
		r = run_plugin(l, plugin, &env, "CHECK", conf, NULL, err);
		if (r < 0)
			break;
	}
	json_decref(prev);
	return r < 0 ? r : 0;
}

static bool attachment_valid(const CniAttachment *valid, size_t n, const char *cid, const char *ifname) {
	for (size_t i = 0; i < n; i++)
		if (streq(valid[i].container_id, cid) && streq(valid[i].ifname, ifname))
			return true;
	return false;
}

/* Sends `cmd` (GC, STATUS) to every plugin with name/cniVersion and `extra` injected. */
static int run_all(const CniNetConfList *l, const CniRuntime *rt, const char *cmd, json_t *extra, bool keep_going,
		   CniError *err) {
	_cleanup_(plugin_env_done) PluginEnv env = {};
	CniRuntime none = { .container_id = "", .netns = "", .ifname = "", .cni_path = rt->cni_path };
	json_t *plugin;
	size_t i;
	int r, ret = 0;

	r = plugin_env_init(&env, &none);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
	json_array_foreach(l->plugins, i, plugin) {
		_cleanup_free_ char *conf = NULL;
		CniError e = {};

		r = plugin_conf(l, plugin, NULL, NULL, extra, &conf);
		if (r >= 0)
			r = run_plugin(l, plugin, &env, cmd, conf, NULL, &e);
		else
			cni_error_set(&e, r, CNI_ERR_INTERNAL, "out of memory");
		if (r < 0 && ret >= 0) {
			ret = r;
			cni_error_clear(err);
			*err = e;
			if (!keep_going)
				break;
			continue;
		}
		cni_error_clear(&e);
	}
	return ret;
}

int cni_chain_gc(const CniNetConfList *l, const CniRuntime *rt, const CniAttachment *valid, size_t n_valid,
		 CniError *err) {
	CniCacheEntry **cached = NULL;
	int r, ret = 0;

	if (l->disable_gc)
		return 0;

	r = cni_cache_list(rt->cache_dir, l->name, &cached, NULL);
	if (r < 0)
		log_warning_errno(r, "Failed to list cached attachments in %s: %m", rt->cache_dir);
	for (CniCacheEntry **c = cached; c && *c; c++) {
		_cleanup_(cni_conf_list_freep) CniNetConfList *cl = NULL;
		CniCacheEntry *e = *c;
		CniError de = {};
		CniRuntime srt;

		if (attachment_valid(valid, n_valid, e->container_id, e->ifname))
			continue;
		/* DEL with what it was added with; the network's config may have changed since. */
		if (e->config) {
			CniError ce = {};
			char *bytes = malloc(e->config_len + 1);

			if (bytes) {
				memcpy(bytes, e->config, e->config_len);
				bytes[e->config_len] = 0;
				if (cni_conf_list_from_bytes(bytes, e->config_len, &cl, &ce) < 0)
					log_warning("Cached config of %s/%s unusable (%s), using the current one",
						    e->container_id, e->ifname, ce.msg ?: "");
			}
			cni_error_clear(&ce);
		}
		srt = (CniRuntime) {
			.container_id = e->container_id,
			.netns = e->netns ?: "",
			.ifname = e->ifname,
			.cni_args = e->cni_args,
			.cap_args = e->capability_args,
			.cni_path = rt->cni_path,
			.cache_dir = rt->cache_dir,
		};
		log_info("GC: deleting stale attachment %s/%s of network %s", e->container_id, e->ifname, l->name);
		r = chain_del(cl ?: l, &srt, e->result, &de);
		if (r >= 0)
			r = cni_cache_remove(rt->cache_dir, l->name, e->container_id, e->ifname);
		if (r < 0 && ret >= 0) {
			ret = r;
			if (de.code) {
				cni_error_clear(err);
				*err = de;
				continue;
			}
			cni_error_set(err, r, CNI_ERR_IO, "failed to delete stale attachment %s %s: %s",
				      e->container_id, e->ifname, strerror(-r));
		}
		cni_error_clear(&de);
	}
	cni_cache_entries_free(cached);

	/* The spec added GC in 1.1.0; older plugins would reject the command. */
	if (l->version >= CNI_VERSION_1_1_0) {
		json_t *att = json_array(), *extra;
		CniError ge = {};

		for (size_t i = 0; att && i < n_valid; i++)
			json_array_append_new(att, json_pack("{s:s,s:s}", "containerID", valid[i].container_id,
							     "ifname", valid[i].ifname));
		/* libcni sends both keys: the spec text once named it "cni.dev/attachments" (cni#1101). */
		extra = att ? json_pack("{s:O,s:O}", "cni.dev/valid-attachments", att, "cni.dev/attachments", att)
			    : NULL;
		json_decref(att);
		if (!extra)
			return cni_error_set(err, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		r = run_all(l, rt, "GC", extra, true, &ge);
		json_decref(extra);
		if (r < 0 && ret >= 0) {
			ret = r;
			cni_error_clear(err);
			*err = ge;
		} else
			cni_error_clear(&ge);
	}
	return ret;
}

int cni_chain_status(const CniNetConfList *l, const CniRuntime *rt, CniError *err) {
	if (l->version < CNI_VERSION_1_1_0)
		return 0;
	return run_all(l, rt, "STATUS", NULL, false, err);
}

int cni_plugin_version(const char *type, const char *cni_path, json_t **ret, CniError *err) {
	_cleanup_(plugin_env_done) PluginEnv env = {};
	_cleanup_free_ char *exe = NULL;
	/* Dummy values, as libcni: plugins built on an old skel insist on them even for VERSION. */
	CniRuntime rt = { .container_id = "", .netns = "dummy", .ifname = "dummy", .cni_path = cni_path };
	static const char conf[] = "{\"cniVersion\":\"1.1.0\"}";
	int r;

	r = cni_find_plugin(type, cni_path, &exe);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "failed to find plugin \"%s\" in path [%s]", type,
				     cni_path);
	r = plugin_env_init(&env, &rt);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
	plugin_env_set_command(&env, "VERSION");
	r = cni_exec(exe, env.envp, conf, strlen(conf), ret, err);
	if (r < 0)
		return log_error_errno(r, "plugin type=\"%s\" failed (VERSION): %s", type, err->msg ?: "");
	return 0;
}
