/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `tuning` meta plugin (reference 1.1.1: sysctl, mac, mtu, promisc, allmulti,
 * dataDir; IFNAME in sysctl keys; runtimeConfig.mac, CNI_ARGS MAC, args.cni.*). It changes the
 * pod interface and per-namespace net.* sysctls and passes prevResult on (with the new MAC).
 *
 * Before changing anything, ADD saves the original values to <dataDir>/<cid>_<ifname>.json —
 * the reference's file name and keys ("mac", "promisc", "mtu", "allmulti"), so a pod set up by
 * the reference is restored by us and the other way round — plus "sysctl" {key: old value},
 * which the reference ignores. The file is written atomically before the first change; DEL
 * restores from it and removes it. A failed ADD undoes what it changed and leaves no file.
 *
 * Differences from 1.1.1, on purpose: sysctls are restored on DEL; keys naming an interface
 * (net.ipv{4,6}.{conf,neigh}.<dev>.*) must name CNI_IFNAME (or all/default), as newer reference
 * versions require; '..' and anything outside /proc/sys/net is refused before any write; a
 * second ADD keeps the originals saved by the first one.
 */

#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <linux/rtnetlink.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-plugin.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"

#define TUNING_DEFAULT_DATA_DIR "/run/cni/tuning"

typedef struct Sysctl {
	char *key;  /* as configured (after IFNAME substitution), for messages */
	char *path; /* "net/ipv4/conf/eth0/arp_filter", for sysctl_read/write */
	char *value;
} Sysctl;

typedef struct TuningConf {
	char *data_dir;
	Sysctl *sysctls;
	size_t n_sysctls;
	bool has_mac;
	uint8_t mac[6];
	char mac_str[18];
	unsigned mtu; /* 0 = unchanged */
	bool promisc; /* only "true" changes anything (reference) */
	int allmulti; /* -1 = unchanged */
} TuningConf;

static void tuning_conf_done(void *userdata) {
	TuningConf *c = userdata;

	free(c->data_dir);
	for (size_t i = 0; i < c->n_sysctls; i++) {
		free(c->sysctls[i].key);
		free(c->sysctls[i].path);
		free(c->sysctls[i].value);
	}
	free(c->sysctls);
}

/* The saved state; fields unset (has_* false) are not restored. */
typedef struct Backup {
	bool has_mac, has_promisc, has_mtu, has_allmulti;
	uint8_t mac[6];
	bool promisc, allmulti;
	unsigned mtu;
	json_t *sysctl; /* object key (path) -> old value; owned */
} Backup;

static void backup_done(Backup *b) {
	json_decref(b->sysctl);
	*b = (Backup) {};
}

/* ---- config ---- */

/*
 * Turns a configured key into a /proc/sys-relative path and checks it: only net.*, no empty,
 * "." or ".." component, and interface-specific keys only for the pod's interface.
 */
static int sysctl_key_to_path(CniRequest *req, const char *key, char **ret_key, char **ret_path) {
	_cleanup_free_ char *k = NULL, *p = NULL;
	_cleanup_strv_free_ char **parts = NULL;
	const char *ifname = req->ifname ?: "";
	size_t n;
	int r;

	/* IFNAME stands for CNI_IFNAME (as the reference). */
	{
		const char *s = key, *hit;
		size_t len = 0;
		FILE *f = open_memstream(&k, &len);

		if (!f)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		while ((hit = strstr(s, "IFNAME"))) {
			fwrite(s, 1, (size_t) (hit - s), f);
			fputs(ifname, f);
			s = hit + strlen("IFNAME");
		}
		fputs(s, f);
		if (fclose(f) != 0 || !k)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	}
	p = strdup(k);
	if (!p)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	/* Keys with '/' are taken as paths, so interface names containing dots can be used. */
	if (!strchr(p, '/'))
		for (char *c = p; *c; c++)
			if (*c == '.')
				*c = '/';
	if (p[0] == '/' || strstr(p, "//") || endswith(p, "/"))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid net sysctl key: \"%s\": empty component", key);
	r = strv_split(p, "/", &parts);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");
	n = strv_length(parts);
	for (size_t i = 0; i < n; i++)
		if (streq(parts[i], "..") || streq(parts[i], "."))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"invalid net sysctl key: \"%s\": '%s' is not allowed", key, parts[i]);
	if (n < 2 || !streq(parts[0], "net"))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid net sysctl key: \"%s\": only keys under net. (/proc/sys/net) may be set", key);
	if (n >= 5 && (streq(parts[1], "ipv4") || streq(parts[1], "ipv6")) &&
	    (streq(parts[2], "conf") || streq(parts[2], "neigh")) && !streq(parts[3], ifname) &&
	    !streq(parts[3], "all") && !streq(parts[3], "default"))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid net sysctl key: \"%s\" is for interface \"%s\", not for CNI_IFNAME \"%s\"",
				key, parts[3], ifname);
	*ret_key = TAKE_PTR(k);
	*ret_path = TAKE_PTR(p);
	return 0;
}

static int sysctls_parse(CniRequest *req, TuningConf *c, json_t *obj, const char *where) {
	const char *key;
	json_t *v;
	int r;

	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%s is invalid: expected an object of strings",
				where);
	json_object_foreach(obj, key, v) {
		_cleanup_free_ char *k = NULL, *p = NULL, *val = NULL;
		Sysctl *n;
		size_t i;

		if (!json_is_string(v))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"%s \"%s\" is invalid: value must be a string", where, key);
		r = sysctl_key_to_path(req, key, &k, &p);
		if (r < 0)
			return r;
		val = strdup(json_string_value(v));
		if (!val)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		/* args.cni.sysctl overrides a key of the config (same path) */
		for (i = 0; i < c->n_sysctls; i++)
			if (streq(c->sysctls[i].path, p))
				break;
		if (i < c->n_sysctls) {
			free(c->sysctls[i].value);
			c->sysctls[i].value = TAKE_PTR(val);
			continue;
		}
		n = reallocarray(c->sysctls, c->n_sysctls + 1, sizeof(*n));
		if (!n)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		c->sysctls = n;
		c->sysctls[c->n_sysctls++] = (Sysctl) { TAKE_PTR(k), TAKE_PTR(p), TAKE_PTR(val) };
	}
	return 0;
}

static int mac_parse(CniRequest *req, TuningConf *c, json_t *v, const char *where) {
	if (!v || json_is_null(v) || (json_is_string(v) && isempty(json_string_value(v))))
		return 0;
	if (!json_is_string(v) || ether_addr_parse(json_string_value(v), c->mac) < 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%s \"%s\" is invalid: not a MAC address", where,
				json_is_string(v) ? json_string_value(v) : "(not a string)");
	c->has_mac = true;
	ether_addr_format(c->mac, c->mac_str);
	return 0;
}

static int bool_parse(CniRequest *req, json_t *v, const char *where, int *ret) {
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%s is invalid: expected true or false", where);
	*ret = json_is_true(v);
	return 0;
}

static int mtu_parse(CniRequest *req, json_t *v, const char *where, unsigned *ret) {
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%s is invalid: expected a positive integer",
				where);
	*ret = (unsigned) json_integer_value(v);
	return 0;
}

static int tuning_parse(CniRequest *req, void *userdata) {
	TuningConf *c = userdata;
	json_t *cfg = req->config, *args, *v;
	int promisc = 0, r;

	c->allmulti = -1;
	v = cni_json_get(cfg, "dataDir");
	if (v && !json_is_null(v) && !json_is_string(v))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "dataDir is invalid: expected a string");
	c->data_dir = strdup(isempty(json_string_value(v)) ? TUNING_DEFAULT_DATA_DIR : json_string_value(v));
	if (!c->data_dir)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	if ((r = sysctls_parse(req, c, cni_json_get(cfg, "sysctl"), "sysctl")) < 0 ||
	    (r = mac_parse(req, c, cni_json_get(cfg, "mac"), "mac")) < 0 ||
	    (r = mtu_parse(req, cni_json_get(cfg, "mtu"), "mtu", &c->mtu)) < 0 ||
	    (r = bool_parse(req, cni_json_get(cfg, "promisc"), "promisc", &promisc)) < 0 ||
	    (r = bool_parse(req, cni_json_get(cfg, "allmulti"), "allmulti", &c->allmulti)) < 0)
		return r;

	/* Precedence as the reference's parseConf: config < CNI_ARGS MAC < runtimeConfig.mac < args.cni. */
	if (req->args.mac && ether_addr_parse(req->args.mac, c->mac) >= 0) {
		c->has_mac = true;
		ether_addr_format(c->mac, c->mac_str);
	}
	r = mac_parse(req, c, cni_json_get(cni_json_get(cfg, "runtimeConfig"), "mac"), "runtimeConfig.mac");
	if (r < 0)
		return r;
	args = cni_json_get(cni_json_get(cfg, "args"), "cni");
	if (json_is_object(args) &&
	    ((r = sysctls_parse(req, c, cni_json_get(args, "sysctl"), "args.cni.sysctl")) < 0 ||
	     (r = mac_parse(req, c, cni_json_get(args, "mac"), "args.cni.mac")) < 0 ||
	     (r = mtu_parse(req, cni_json_get(args, "mtu"), "args.cni.mtu", &c->mtu)) < 0 ||
	     (r = bool_parse(req, cni_json_get(args, "promisc"), "args.cni.promisc", &promisc)) < 0 ||
	     (r = bool_parse(req, cni_json_get(args, "allmulti"), "args.cni.allmulti", &c->allmulti)) < 0))
		return r;
	c->promisc = promisc;
	return 0;
}

/* ---- netlink / sysctl helpers ---- */

/* Reads/writes a sysctl inside the pod's namespace. */
static int sysctl_read_in(int netns_fd, const char *path, char **ret) {
	int saved, r;

	r = netns_enter(netns_fd, &saved);
	if (r < 0)
		return r;
	r = sysctl_read(path, ret);
	netns_leave(saved);
	return r;
}

static char *backup_path(CniRequest *req, const TuningConf *c) {
	return strdup_printf("%s/%s_%s.json", c->data_dir, req->container_id, req->ifname);
}

static int backup_load(const char *path, Backup *ret) {
	_cleanup_free_ char *data = NULL;
	json_t *j, *v;
	Backup b = {};
	int r;

	r = read_full_file(path, &data, NULL);
	if (r < 0)
		return r;
	j = json_loads(data, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return -EBADMSG;
	}
	/* Go's encoding/json matched the reference's keys case-insensitively. */
	v = cni_json_get(j, "mac");
	if (json_is_string(v) && !isempty(json_string_value(v)) && ether_addr_parse(json_string_value(v), b.mac) >= 0)
		b.has_mac = true;
	v = cni_json_get(j, "promisc");
	if (json_is_boolean(v)) {
		b.has_promisc = true;
		b.promisc = json_is_true(v);
	}
	v = cni_json_get(j, "mtu");
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		b.has_mtu = true;
		b.mtu = (unsigned) json_integer_value(v);
	}
	v = cni_json_get(j, "allmulti");
	if (json_is_boolean(v)) {
		b.has_allmulti = true;
		b.allmulti = json_is_true(v);
	}
	v = json_object_get(j, "sysctl");
	if (json_is_object(v))
		b.sysctl = json_incref(v);
	json_decref(j);
	*ret = b;
	return 0;
}

static int backup_save(const char *dir, const char *path, const Backup *b) {
	_cleanup_free_ char *s = NULL;
	json_t *j = json_object();
	char ms[18];
	int r;

	if (!j)
		return -ENOMEM;
	if ((b->has_mac && json_object_set_new(j, "mac", json_string(ether_addr_format(b->mac, ms))) < 0) ||
	    (b->has_promisc && json_object_set_new(j, "promisc", json_boolean(b->promisc)) < 0) ||
	    (b->has_mtu && json_object_set_new(j, "mtu", json_integer(b->mtu)) < 0) ||
	    (b->has_allmulti && json_object_set_new(j, "allmulti", json_boolean(b->allmulti)) < 0) ||
	    (b->sysctl && json_object_set(j, "sysctl", b->sysctl) < 0)) {
		json_decref(j);
		return -ENOMEM;
	}
	s = json_dumps(j, JSON_INDENT(1));
	json_decref(j);
	if (!s)
		return -ENOMEM;
	r = mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	return write_file_atomic(path, s, strlen(s), 0600);
}

/*
 * Puts back what `b` saved, in the reference's order (mtu, mac, promisc, allmulti), then the
 * sysctls. Best effort: every step is tried; returns the first error with a message in *err.
 */
static int restore(NlSock *s, int netns_fd, int ifindex, const Backup *b, const char *ifname, CniError *err) {
	int r = 0, k;

	if (ifindex > 0) {
		if (b->has_mtu && (k = nl_link_set_mtu(s, ifindex, b->mtu)) < 0 && r >= 0)
			r = cni_error_set_errno(err, k, CNI_ERR_INTERNAL, nl_sock_extack(s),
						"failed to restore MTU %u of %s", b->mtu, ifname);
		if (b->has_mac && (k = nl_link_set_mac(s, ifindex, b->mac)) < 0 && r >= 0)
			r = cni_error_set_errno(err, k, CNI_ERR_INTERNAL, nl_sock_extack(s),
						"failed to restore MAC of %s", ifname);
		if (b->has_promisc && (k = nl_link_set_promisc(s, ifindex, b->promisc)) < 0 && r >= 0)
			r = cni_error_set_errno(err, k, CNI_ERR_INTERNAL, NULL, "failed to restore promisc of %s",
						ifname);
		if (b->has_allmulti && (k = nl_link_set_allmulti(s, ifindex, b->allmulti)) < 0 && r >= 0)
			r = cni_error_set_errno(err, k, CNI_ERR_INTERNAL, NULL, "failed to restore allmulti of %s",
						ifname);
	}
	if (b->sysctl) {
		const char *key;
		json_t *v;

		json_object_foreach(b->sysctl, key, v) {
			int saved;

			if (!json_is_string(v))
				continue;
			/* Saved paths were validated on ADD, but the file is outside our process: check again. */
			if (!startswith(key, "net/") || strstr(key, ".."))
				continue;
			k = netns_enter(netns_fd, &saved);
			if (k >= 0) {
				k = sysctl_write(key, json_string_value(v));
				netns_leave(saved);
			}
			if (k == -ENOENT)
				k = 0; /* per-interface entry gone with its interface */
			if (k < 0 && r >= 0)
				r = cni_error_set_errno(err, k, CNI_ERR_INTERNAL, NULL, "failed to restore sysctl %s",
							key);
		}
	}
	return r;
}

/* ---- ADD ---- */

typedef struct Rollback {
	NlSock *s;
	int netns_fd;
	int ifindex;
	const char *ifname;
	Backup undo; /* what to put back: only the steps that were done */
	char *file;  /* backup file to remove */
} Rollback;

static void rollback_run(Rollback **p) {
	Rollback *rb = *p;
	CniError err = {};

	if (!rb)
		return;
	if (restore(rb->s, rb->netns_fd, rb->ifindex, &rb->undo, rb->ifname, &err) < 0)
		log_warning("rollback: %s", err.msg);
	cni_error_clear(&err);
	if (rb->file && unlink(rb->file) < 0 && errno != ENOENT)
		log_warning_errno(negative_errno(), "rollback: failed to remove %s: %m", rb->file);
	backup_done(&rb->undo);
}

/* The interface's settings as they were before tuning touched them, saved to file for DEL: kept
 * from an earlier ADD of this attachment, else read now. *ret_had_file: the file was there. */
static int tuning_save_originals(CniRequest *req, const TuningConf *c, int netns_fd, const NlLink *link,
				 const char *file, bool *ret_had_file) {
	Backup saved = {}, old = {};
	int r;

	r = backup_load(file, &old);
	*ret_had_file = r >= 0;
	if (r < 0 && r != -ENOENT)
		log_warning_errno(r, "ignoring unreadable backup %s: %m", file);
	saved = old;
	old = (Backup) {};
	if (c->has_mac && !saved.has_mac) {
		memcpy(saved.mac, link->mac, 6);
		saved.has_mac = true;
	}
	if (c->promisc && !saved.has_promisc) {
		saved.promisc = !!(link->flags & IFF_PROMISC);
		saved.has_promisc = true;
	}
	if (c->mtu > 0 && !saved.has_mtu) {
		saved.mtu = link->mtu;
		saved.has_mtu = true;
	}
	if (c->allmulti >= 0 && !saved.has_allmulti) {
		saved.allmulti = !!(link->flags & IFF_ALLMULTI);
		saved.has_allmulti = true;
	}
	for (size_t i = 0; i < c->n_sysctls; i++) {
		_cleanup_free_ char *v = NULL;

		if (saved.sysctl && json_object_get(saved.sysctl, c->sysctls[i].path))
			continue;
		r = sysctl_read_in(netns_fd, c->sysctls[i].path, &v);
		if (r < 0) {
			backup_done(&saved);
			return cni_fail_errno(req, r, r == -ENOENT ? CNI_ERR_INVALID_NETCONF : CNI_ERR_INTERNAL, NULL,
					      "sysctl \"%s\" (/proc/sys/%s) in netns \"%s\"", c->sysctls[i].key,
					      c->sysctls[i].path, req->netns);
		}
		if ((!saved.sysctl && !(saved.sysctl = json_object())) ||
		    json_object_set_new(saved.sysctl, c->sysctls[i].path, json_string(v)) < 0) {
			backup_done(&saved);
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		}
	}
	r = backup_save(c->data_dir, file, &saved);
	backup_done(&saved);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_IO, NULL, "failed to save original settings to %s", file);
	return 0;
}

/* The sysctls, first, as the reference; each value replaced is kept in rb for the rollback. */
static int tuning_apply_sysctls(CniRequest *req, const TuningConf *c, int netns_fd, Rollback *rb) {
	int r;

	for (size_t i = 0; i < c->n_sysctls; i++) {
		_cleanup_free_ char *v = NULL;
		int fd_saved;

		r = sysctl_read_in(netns_fd, c->sysctls[i].path, &v);
		if (r >= 0) {
			if (!rb->undo.sysctl && !(rb->undo.sysctl = json_object()))
				r = -ENOMEM;
			else
				r = json_object_set_new(rb->undo.sysctl, c->sysctls[i].path, json_string(v)) < 0
						    ? -ENOMEM
						    : 0;
		}
		if (r >= 0 && (r = netns_enter(netns_fd, &fd_saved)) >= 0) {
			r = sysctl_write(c->sysctls[i].path, c->sysctls[i].value);
			netns_leave(fd_saved);
		}
		if (r < 0)
			return cni_fail_errno(req, r, r == -EINVAL ? CNI_ERR_INVALID_NETCONF : CNI_ERR_INTERNAL, NULL,
					      "failed to set sysctl \"%s\" to \"%s\"", c->sysctls[i].key,
					      c->sysctls[i].value);
	}
	return 0;
}

/* "mac": set on the link, and reported for the interface in the result. */
static int tuning_apply_mac(CniRequest *req, const TuningConf *c, NlSock *s, const NlLink *link, Rollback *rb,
			    CniResult *res) {
	int r;

	rb->undo.has_mac = true;
	memcpy(rb->undo.mac, link->mac, 6);
	r = nl_link_set_mac(s, link->ifindex, c->mac);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(s), "failed to set \"mac\" %s on %s",
				      c->mac_str, req->ifname);
	for (size_t i = 0; i < res->n_interfaces; i++)
		if (streq_ptr(res->interfaces[i].name, req->ifname)) {
			char *m = strdup(c->mac_str);
			if (!m)
				return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
			free(res->interfaces[i].mac);
			res->interfaces[i].mac = m;
		}
	return 0;
}

/* "promisc", "mtu", "allmulti" on the link; each old value kept in rb for the rollback. */
static int tuning_apply_link_flags(CniRequest *req, const TuningConf *c, NlSock *s, const NlLink *link, Rollback *rb) {
	int r;

	if (c->promisc) {
		rb->undo.has_promisc = true;
		rb->undo.promisc = !!(link->flags & IFF_PROMISC);
		r = nl_link_set_promisc(s, link->ifindex, true);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set \"promisc\" on %s",
					      req->ifname);
	}
	if (c->mtu > 0) {
		rb->undo.has_mtu = true;
		rb->undo.mtu = link->mtu;
		r = nl_link_set_mtu(s, link->ifindex, c->mtu);
		if (r < 0)
			return cni_fail_errno(req, r, r == -EINVAL ? CNI_ERR_INVALID_NETCONF : CNI_ERR_INTERNAL,
					      nl_sock_extack(s), "failed to set \"mtu\" %u on %s", c->mtu, req->ifname);
	}
	if (c->allmulti >= 0) {
		rb->undo.has_allmulti = true;
		rb->undo.allmulti = !!(link->flags & IFF_ALLMULTI);
		r = nl_link_set_allmulti(s, link->ifindex, c->allmulti);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set \"allmulti\" on %s",
					      req->ifname);
	}
	return 0;
}

static int tuning_add(CniRequest *req, void *userdata, CniResult **ret) {
	TuningConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	_cleanup_free_ char *file = NULL;
	Rollback rb_data = { .netns_fd = -EBADF, .ifname = req->ifname };
	_cleanup_(rollback_run) Rollback *rb = NULL;
	bool had_file;
	NlLink link;
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "Required prevResult missing");
	res = cni_result_copy(req->prev_result);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	netns_fd = cni_request_open_netns(req);
	if (netns_fd < 0)
		return netns_fd;
	r = pod_open_cont_sock(req, netns_fd, &s);
	if (r < 0)
		return r;
	r = nl_link_get(s, req->ifname, 0, &link);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find %s in netns \"%s\"", req->ifname,
				      req->netns);

	file = backup_path(req, c);
	if (!file)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	r = tuning_save_originals(req, c, netns_fd, &link, file, &had_file);
	if (r < 0)
		return r;

	rb_data.s = s;
	rb_data.netns_fd = netns_fd;
	rb_data.ifindex = link.ifindex;
	rb_data.file = had_file ? NULL : file;
	rb = &rb_data;

	r = tuning_apply_sysctls(req, c, netns_fd, rb);
	if (r < 0)
		return r;
	if (c->has_mac && (r = tuning_apply_mac(req, c, s, &link, rb, res)) < 0)
		return r;
	r = tuning_apply_link_flags(req, c, s, &link, rb);
	if (r < 0)
		return r;

	backup_done(&rb->undo);
	TAKE_PTR(rb);
	*ret = TAKE_PTR(res);
	return 0;
}

/* ---- DEL ---- */

static int tuning_del(CniRequest *req, void *userdata) {
	TuningConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	_cleanup_free_ char *file = NULL;
	CniError err = {};
	Backup b = {};
	NlLink link = {};
	int r;

	if (isempty(req->container_id) || isempty(req->ifname))
		return 0;
	file = backup_path(req, c);
	if (!file)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	r = backup_load(file, &b);
	if (r == -ENOENT)
		return 0; /* nothing saved: ADD never ran, or DEL already did */
	if (r < 0) {
		log_warning_errno(r, "ignoring unreadable backup %s: %m", file);
		goto remove;
	}
	/* The namespace (or the interface) is gone: nothing to restore, only the file to drop. */
	if (isempty(req->netns))
		goto remove;
	netns_fd = netns_open(req->netns);
	if (netns_fd == -ENOENT || netns_fd == -EINVAL)
		goto remove; /* gone, or no longer a netns (its bind mount went away) */
	if (netns_fd < 0) {
		/* EACCES, EMFILE...: the namespace may well be there; keep the backup for a retry. */
		backup_done(&b);
		return cni_fail_errno(req, netns_fd, CNI_ERR_INTERNAL, NULL, "failed to open netns \"%s\"", req->netns);
	}
	r = pod_open_cont_sock(req, netns_fd, &s);
	if (r < 0) {
		backup_done(&b);
		return r;
	}
	r = nl_link_get(s, req->ifname, 0, &link);
	if (r < 0 && r != -ENODEV) {
		backup_done(&b);
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find %s in netns \"%s\"", req->ifname,
				      req->netns);
	}
	/* The reference ignores restore failures (DEL must not wedge pod teardown); so do we,
	 * loudly. */
	if (restore(s, netns_fd, r < 0 ? 0 : link.ifindex, &b, req->ifname, &err) < 0)
		log_warning("DEL: %s", err.msg);
	cni_error_clear(&err);
remove:
	backup_done(&b);
	if (unlink(file) < 0 && errno != ENOENT)
		return cni_fail(req, negative_errno(), CNI_ERR_IO, "failed to remove %s: %m", file);
	return 0;
}

/* ---- CHECK ---- */

static int tuning_check(CniRequest *req, void *userdata) {
	TuningConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	NlLink link;
	char ms[18];
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "Required prevResult missing");
	netns_fd = cni_request_open_netns(req);
	if (netns_fd < 0)
		return netns_fd;
	for (size_t i = 0; i < c->n_sysctls; i++) {
		_cleanup_free_ char *v = NULL;

		r = sysctl_read_in(netns_fd, c->sysctls[i].path, &v);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to read sysctl \"%s\"",
					      c->sysctls[i].key);
		if (!streq(v, c->sysctls[i].value))
			return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
					"Error: Tuning configured value of /proc/sys/%s is %s, current value is %s",
					c->sysctls[i].path, c->sysctls[i].value, v);
	}
	r = nl_sock_open_netns(netns_fd, &s);
	if (r >= 0)
		r = nl_link_get(s, req->ifname, 0, &link);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find %s in netns \"%s\"", req->ifname,
				      req->netns);
	if (c->has_mac && memcmp(c->mac, link.mac, 6) != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Error: Tuning configured Ethernet of %s is %s, current value is %s", req->ifname,
				c->mac_str, ether_addr_format(link.mac, ms));
	if (c->promisc && !(link.flags & IFF_PROMISC))
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Error: Tuning link %s configured promisc is true, current value is false",
				req->ifname);
	if (c->mtu > 0 && c->mtu != link.mtu)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Error: Tuning configured MTU of %s is %u, current value is %u", req->ifname, c->mtu,
				link.mtu);
	if (c->allmulti >= 0 && c->allmulti != !!(link.flags & IFF_ALLMULTI))
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Error: Tuning configured all-multicast mode of %s is %s, current value is %s",
				req->ifname, c->allmulti ? "true" : "false",
				(link.flags & IFF_ALLMULTI) ? "true" : "false");
	return 0;
}

static const PluginOps tuning_ops = {
	.name = "tuning",
	.about = "CNI tuning plugin (weft)",
	.conf_size = sizeof(TuningConf),
	.parse = tuning_parse,
	.conf_done = tuning_conf_done,
	.add = tuning_add,
	.del = tuning_del,
	.check = tuning_check,
};

int main(int argc, char *argv[]) {
	return plugin_main(&tuning_ops, argc, argv);
}
