/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libnftables wrapper: one struct nft_ctx with buffered output and error streams.
 *
 * Cost (measured on the CI machine, kernel 6.18, nftables 1.0.6; test-nft prints it as "# bench"):
 * nft_ctx_open() ~0.07 ms (nft_ctx_new() reads a few /etc/iproute2 files and opens the netlink
 * socket). A plugin-sized batch (table + chain + 4 sets + flushed rules + elements) ~0.8 ms wall,
 * flat from 0 to 200 existing elements: nft fills its cache with the table's objects, but
 * concatenated/plain sets need no userspace overlap check, so existing elements are not fetched.
 * Any transaction that removes an element that existed before it costs ~12 ms wall, mostly the
 * kernel waiting for an RCU grace period in the commit, not CPU; so DEL (list + remove) is
 * ~14 ms and an ADD that replaces a stale element of the same address ~12 ms.
 * libnftables 1.0.6 has no switch to skip the cache; we keep it small by never listing the whole
 * ruleset (listings name one table or set).
 *
 * Linking: the host suite is static (Makefile), so libnftables, libnftnl and libmnl are in the
 * executable and the calls below go straight to them; mapping a static executable costs nothing
 * per library, and a plugin that never opens a context never touches that code. Only a DYNAMIC
 * host suite (STATIC=0, sanitizer builds, a machine where tools/build-static-deps.sh could not
 * run) builds this file with WEFT_NFT_DLOPEN: there libnftables is dlopen()ed on the first
 * nft_ctx_open(), because linking it would drag libnftnl, libxtables and libgmp into every
 * plugin's exec (~0.4 ms measured: a trivial C program execs in 0.68 ms, 1.05 ms with them) and
 * most plugin runs never touch nftables.
 */

#ifdef WEFT_NFT_DLOPEN
#include <dlfcn.h>
#include <pthread.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Must come before nft/nft.h: nft.h defines nft_ctx_free() as a macro onto our own symbol. */
#include <nftables/libnftables.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/nft/nft-names.h"
#include "shared/nft/nft.h"

typedef struct NftLib {
	typeof(nft_ctx_new) *ctx_new;
	typeof((nft_ctx_free)) *ctx_free;
	typeof(nft_ctx_buffer_output) *buffer_output;
	typeof(nft_ctx_buffer_error) *buffer_error;
	typeof(nft_ctx_get_output_buffer) *get_output_buffer;
	typeof(nft_ctx_get_error_buffer) *get_error_buffer;
	typeof(nft_ctx_output_set_flags) *output_set_flags;
	typeof(nft_run_cmd_from_buffer) *run_cmd_from_buffer;
	typeof(nft_ctx_set_dry_run) *set_dry_run;
} NftLib;

#ifdef WEFT_NFT_DLOPEN
/* The soname Debian's libnftables1 ships (the ABI we compile against). */
#define LIBNFTABLES_SONAME "libnftables.so.1"

static NftLib lib;
static int lib_r = 1; /* 1: not tried yet; 0: loaded; -errno: failed (not retried) */
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_load(void) {
	void *h = dlopen(LIBNFTABLES_SONAME, RTLD_LAZY | RTLD_LOCAL);

	if (!h) {
		lib_r = -ELIBACC;
		return;
	}
	/* POSIX guarantees void* <-> function pointer round-trips for dlsym(). */
	if (!(*(void **) &lib.ctx_new = dlsym(h, "nft_ctx_new")) ||
	    !(*(void **) &lib.ctx_free = dlsym(h, "nft_ctx_free")) ||
	    !(*(void **) &lib.buffer_output = dlsym(h, "nft_ctx_buffer_output")) ||
	    !(*(void **) &lib.buffer_error = dlsym(h, "nft_ctx_buffer_error")) ||
	    !(*(void **) &lib.get_output_buffer = dlsym(h, "nft_ctx_get_output_buffer")) ||
	    !(*(void **) &lib.get_error_buffer = dlsym(h, "nft_ctx_get_error_buffer")) ||
	    !(*(void **) &lib.output_set_flags = dlsym(h, "nft_ctx_output_set_flags")) ||
	    !(*(void **) &lib.run_cmd_from_buffer = dlsym(h, "nft_run_cmd_from_buffer")) ||
	    !(*(void **) &lib.set_dry_run = dlsym(h, "nft_ctx_set_dry_run"))) {
		dlclose(h);
		lib_r = -ELIBBAD;
		return;
	}
	lib_r = 0; /* the handle stays open for the life of the process */
}

static int lib_open(void) {
	(void) pthread_once(&lib_once, lib_load);
	return lib_r;
}
#else
static const NftLib lib = {
	.ctx_new = nft_ctx_new,
	.ctx_free = (nft_ctx_free),
	.buffer_output = nft_ctx_buffer_output,
	.buffer_error = nft_ctx_buffer_error,
	.get_output_buffer = nft_ctx_get_output_buffer,
	.get_error_buffer = nft_ctx_get_error_buffer,
	.output_set_flags = nft_ctx_output_set_flags,
	.run_cmd_from_buffer = nft_run_cmd_from_buffer,
	.set_dry_run = nft_ctx_set_dry_run,
};

static int lib_open(void) {
	return 0;
}
#endif

struct NftCtx {
	struct nft_ctx *nft;
};

static struct nft_ctx *lib_ctx_new(void) {
	struct nft_ctx *n = lib.ctx_new(NFT_CTX_DEFAULT);

	if (!n)
		return NULL;
	/* Library code does not print: capture both streams. */
	if (lib.buffer_output(n) < 0 || lib.buffer_error(n) < 0) {
		lib.ctx_free(n);
		return NULL;
	}
	return n;
}

int nft_ctx_open(NftCtx **ret) {
	_cleanup_free_ NftCtx *c = NULL;
	int r;

	if (!ret)
		return -EINVAL;
	r = lib_open();
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nft = lib_ctx_new();
	if (!c->nft)
		return -ENOMEM;
	*ret = TAKE_PTR(c);
	return 0;
}

int nft_ctx_drop_cache(NftCtx *c) {
	struct nft_ctx *n = lib_ctx_new();

	if (!n)
		return -ENOMEM;
	lib.ctx_free(c->nft);
	c->nft = n;
	return 0;
}

NftCtx *weft_nft_ctx_free(NftCtx *c) {
	if (!c)
		return NULL;
	if (c->nft)
		lib.ctx_free(c->nft);
	return mfree(c);
}

/*
 * libnftables returns -1 for every failure and reports the cause only as text: the kernel's
 * strerror() after "Could not process rule: " (or the netlink error in a listing), or a
 * parser/evaluation diagnostic. Recover the errno from the known strerror texts; anything
 * else was a rejected batch.
 */
static int errno_from_text(const char *text) {
	static const int known[] = {
		ENOENT, EEXIST, EBUSY, EPERM, EACCES, ENOMEM, EOPNOTSUPP, EAFNOSUPPORT, ENOSPC, ENOBUFS, EINTR,
	};

	if (!text)
		return -EINVAL;
	/* Parser/evaluation errors may quote the offending command, which may contain anything. */
	if (strstr(text, "syntax error") || strstr(text, "Error: Could not parse"))
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(known); i++)
		if (strstr(text, strerror(known[i])))
			return known[i] == EACCES ? -EPERM : -known[i];
	return -EINVAL;
}

/* Reading a buffer also rewinds it; call before a command so stale text is dropped. */
static void drain(NftCtx *c) {
	(void) lib.get_output_buffer(c->nft);
	(void) lib.get_error_buffer(c->nft);
}

static int run(NftCtx *c, const char *cmd, unsigned flags, char **ret_output, char **ret_error) {
	int k;

	if (!c || !cmd)
		return -EINVAL;
	drain(c);
	lib.output_set_flags(c->nft, flags);
	k = lib.run_cmd_from_buffer(c->nft, cmd);
	lib.output_set_flags(c->nft, 0);
	if (k != 0) {
		const char *err = lib.get_error_buffer(c->nft);
		int r = errno_from_text(err);

		(void) lib.get_output_buffer(c->nft);
		if (ret_error) {
			char *e = strdup(err && *err ? err : "nft: command failed without a message");
			if (!e)
				return -ENOMEM;
			*ret_error = e;
		}
		return r;
	}
	(void) lib.get_error_buffer(c->nft); /* warnings */
	if (ret_output) {
		const char *out = lib.get_output_buffer(c->nft);
		char *o = strdup(out ? out : "");
		if (!o)
			return -ENOMEM;
		*ret_output = o;
	} else
		(void) lib.get_output_buffer(c->nft);
	return 0;
}

int nft_apply(NftCtx *c, const char *batch, char **ret_error) {
	return run(c, batch, 0, NULL, ret_error);
}

int nft_check(NftCtx *c, const char *batch, char **ret_error) {
	int r;

	if (!c)
		return -EINVAL;
	lib.set_dry_run(c->nft, true);
	r = run(c, batch, 0, NULL, ret_error);
	lib.set_dry_run(c->nft, false);
	return r;
}

int nft_list_json_full(NftCtx *c, const char *cmd, json_t **ret, char **ret_error) {
	_cleanup_free_ char *out = NULL;
	json_error_t jerr;
	json_t *j;
	int r;

	if (!ret)
		return -EINVAL;
	r = run(c, cmd, NFT_CTX_OUTPUT_JSON, &out, ret_error);
	/*
	 * What the listing fetched stays in libnftables' cache until the next command: even `list
	 * chains inet` brings every rule and set element of the table (34 MB for 2,000 Services), held
	 * for good by a caller that lists and seldom writes (the policy agent's stale-chain scan after a
	 * restart under load). The output is ours now; the next command fetches anew anyway when the
	 * ruleset changed meanwhile.
	 */
	(void) nft_ctx_drop_cache(c);
	if (r < 0)
		return r;
	j = json_loads(out, 0, &jerr);
	if (!j || !json_is_object(j) || !json_is_array(json_object_get(j, "nftables"))) {
		json_decref(j);
		if (ret_error)
			*ret_error = strdup_printf("nft: listing output is not nftables JSON: %s",
						   j ? "no \"nftables\" array" : jerr.text);
		return -EBADMSG;
	}
	*ret = j;
	return 0;
}

int nft_list_json(NftCtx *c, const char *cmd, json_t **ret) {
	return nft_list_json_full(c, cmd, ret, NULL);
}

int nft_list_names(NftCtx *c, const char *kind, const char *prefix, char ***ret) {
	_cleanup_free_ char *cmd = strdup_printf("list %ss inet", kind);
	_cleanup_strv_free_ char **l = NULL;
	json_t *j = NULL, *it;
	size_t i, n = 0;
	int r;

	if (!cmd)
		return -ENOMEM;
	r = nft_list_json(c, cmd, &j);
	if (r < 0) {
		*ret = NULL;
		return r == -ENOENT ? 0 : r;
	}
	json_array_foreach(json_object_get(j, "nftables"), i, it) {
		json_t *o = json_object_get(it, kind);
		const char *table = json_string_value(json_object_get(o, "table"));
		const char *name = json_string_value(json_object_get(o, "name"));
		char **nl;

		if (!o || !streq_ptr(table, NFT_TABLE_NAME) || !name || !startswith(name, prefix))
			continue;
		nl = reallocarray(l, n + 2, sizeof(char *));
		if (!nl) {
			r = -ENOMEM;
			break;
		}
		l = nl;
		l[n] = strdup(name);
		l[n + 1] = NULL;
		if (!l[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	json_decref(j);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(l);
	return 0;
}
