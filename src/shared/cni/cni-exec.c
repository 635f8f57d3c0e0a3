/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running another plugin: posix_spawn with stdin on a socketpair (so a child that exits without
 * reading it gives us EPIPE via MSG_NOSIGNAL rather than a SIGPIPE) and stdout on a pipe, both
 * serviced by one poll loop so a child writing a lot before reading cannot deadlock us.
 * stderr is inherited: the delegate's diagnostics reach the runtime's log unchanged.
 */
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"

extern char **environ;

#define MAX_OUTPUT (16u * 1024 * 1024)

int cni_find_plugin(const char *type, const char *path, char **ret) {
	_cleanup_strv_free_ char **dirs = NULL;
	int r;

	if (isempty(type) || strchr(type, '/') || streq(type, ".") || streq(type, ".."))
		return -EINVAL;
	if (isempty(path))
		return -ENOENT;
	r = strv_split(path, ":", &dirs);
	if (r < 0)
		return r;
	for (char **d = dirs; *d; d++) {
		_cleanup_free_ char *p = strdup_printf("%s/%s", *d, type);
		struct stat st;

		if (!p)
			return -ENOMEM;
		if (stat(p, &st) < 0 || !S_ISREG(st.st_mode) || access(p, X_OK) < 0)
			continue;
		*ret = TAKE_PTR(p);
		return 0;
	}
	return -ENOENT;
}

static int spawn(const char *exe, char *const envp[], int stdin_fd, int stdout_fd, pid_t *ret) {
	posix_spawn_file_actions_t fa;
	char *argv[] = { (char *) exe, NULL };
	int r;

	r = posix_spawn_file_actions_init(&fa);
	if (r != 0)
		return -r;
	/* The originals are O_CLOEXEC; dup2 onto 0/1 clears the flag on the copies. */
	r = posix_spawn_file_actions_adddup2(&fa, stdin_fd, STDIN_FILENO);
	if (r == 0)
		r = posix_spawn_file_actions_adddup2(&fa, stdout_fd, STDOUT_FILENO);
	if (r == 0)
		r = posix_spawn(ret, exe, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

/* Feeds stdin and collects stdout until the child closes it. */
static int pump(int in_fd, const char *data, size_t len, int out_fd, char **ret, size_t *ret_size) {
	_cleanup_free_ char *buf = NULL;
	size_t off = 0, size = 0, alloc = 0;

	if (len == 0)
		in_fd = safe_close(in_fd);
	for (;;) {
		struct pollfd p[2] = { { .fd = out_fd, .events = POLLIN }, { .fd = in_fd, .events = POLLOUT } };
		ssize_t n;

		if (poll(p, in_fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			safe_close(in_fd);
			return negative_errno();
		}
		if (in_fd >= 0 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			n = send(in_fd, data + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				/* EPIPE: the child does not want (the rest of) its stdin. Not our error:
				 * its exit status and output tell what happened. */
				in_fd = safe_close(in_fd);
			else if (n > 0 && (off += (size_t) n) == len)
				in_fd = safe_close(in_fd);
		}
		if (p[0].revents & (POLLIN | POLLERR | POLLHUP)) {
			if (alloc - size < 4096) {
				char *b;

				if (alloc >= MAX_OUTPUT) {
					safe_close(in_fd);
					return -EFBIG;
				}
				alloc = alloc ? alloc * 2 : 8192;
				b = realloc(buf, alloc + 1);
				if (!b) {
					safe_close(in_fd);
					return -ENOMEM;
				}
				buf = b;
			}
			n = read(out_fd, buf + size, alloc - size);
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				safe_close(in_fd);
				return negative_errno();
			}
			if (n == 0)
				break;
			if (n > 0)
				size += (size_t) n;
		}
	}
	safe_close(in_fd);
	if (!buf && !(buf = malloc(1)))
		return -ENOMEM;
	buf[size] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_size = size;
	return 0;
}

static bool all_space(const char *s) {
	for (; *s; s++)
		if (!strchr(" \t\r\n", *s))
			return false;
	return true;
}

int cni_exec(const char *exe, char *const envp[], const char *stdin_data, size_t stdin_len, json_t **ret_out,
	     CniError *err) {
	_cleanup_close_ int in_parent = -EBADF, in_child = -EBADF, out_r = -EBADF, out_w = -EBADF;
	_cleanup_free_ char *out = NULL;
	const char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	json_error_t jerr;
	size_t out_size = 0;
	json_t *j = NULL;
	int sv[2], pv[2], status, r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(pv, O_CLOEXEC) < 0) {
		r = negative_errno();
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to set up pipes for plugin %s",
					   name);
	}
	in_parent = sv[0], in_child = sv[1], out_r = pv[0], out_w = pv[1];

	r = spawn(exe, envp ?: environ, in_child, out_w, &pid);
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to execute plugin %s", exe);
	in_child = safe_close(in_child);
	out_w = safe_close(out_w);

	r = pump(TAKE_FD(in_parent), stdin_data, stdin_len, out_r, &out, &out_size);
	out_r = safe_close(out_r); /* a child still writing gets EPIPE, not a hang */

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cni_error_set(err, negative_errno(), CNI_ERR_INTERNAL,
					     "failed to wait for plugin %s: %m", name);
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to read output of plugin %s", name);

	if (out_size > 0 && !all_space(out))
		j = json_loadb(out, out_size, 0, &jerr);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		CniError e = {};

		/* The delegate's own error is the best message there is: pass it on unchanged. */
		if (j && cni_error_from_json(j, &e) >= 0 && e.code != 0) {
			if (err && err->code == 0) {
				cni_error_clear(err);
				*err = e;
			} else
				cni_error_clear(&e);
		} else if (WIFEXITED(status))
			cni_error_set(err, -EIO, CNI_ERR_INTERNAL, "plugin %s failed with exit status %d%s%.200s", name,
				      WEXITSTATUS(status), out_size > 0 ? ": " : "", out_size > 0 ? out : "");
		else
			cni_error_set(err, -EIO, CNI_ERR_INTERNAL, "plugin %s was killed by signal %d", name,
				      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		json_decref(j);
		return -EIO;
	}

	if (out_size > 0 && !all_space(out) && !j)
		return cni_error_set(err, -EBADMSG, CNI_ERR_DECODE, "failed to decode output of plugin %s: %s", name,
				     jerr.text);
	if (ret_out)
		*ret_out = j;
	else
		json_decref(j);
	return 0;
}

/* environ with CNI_COMMAND replaced (or added). Entries are borrowed except `cmd_entry`. */
static char **env_with_command(const char *cmd_entry) {
	size_t n = 0, k = 0;
	char **e;

	while (environ && environ[n])
		n++;
	e = calloc(n + 2, sizeof(char *));
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!startswith(environ[i], "CNI_COMMAND="))
			e[k++] = environ[i];
	e[k++] = (char *) cmd_entry;
	e[k] = NULL;
	return e;
}

int cni_ipam_exec(CniRequest *req, CniCommand cmd, CniResult **ret) {
	_cleanup_free_ char *exe = NULL, *cmd_entry = NULL, *dumped = NULL;
	_cleanup_free_ char **envp = NULL;
	const char *type, *data;
	json_t *out = NULL, *v;
	CniVersion ver;
	size_t len;
	int r;

	type = json_string_value(json_object_get(req->ipam, "type"));
	if (!req->ipam)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "\"ipam\" is missing");
	if (isempty(type))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "\"ipam.type\" is missing");

	/* CNI_PATH is optional for ADD/CHECK/DEL (cni_request_parse() lets it through): its absence
	 * is an error only here, where a plugin has to be found. */
	if (isempty(req->cni_path))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV,
				"CNI_PATH is not set: it is needed to find the IPAM plugin \"%s\" (ipam.type)", type);
	r = cni_find_plugin(type, req->cni_path, &exe);
	if (r == -EINVAL)
		return cni_fail(req, r, CNI_ERR_INVALID_NETCONF,
				"\"ipam.type\" \"%s\" is invalid: must be a plain file name", type);
	/* Same text and (through the reference skel) code 999 as the Go invoke package. */
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "failed to find plugin \"%s\" in path [%s]", type,
				req->cni_path ?: "");

	cmd_entry = strdup_printf("CNI_COMMAND=%s", cni_command_to_string(cmd));
	envp = cmd_entry ? env_with_command(cmd_entry) : NULL;
	if (!envp)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	if (req->config_raw) {
		data = req->config_raw;
		len = req->config_raw_len;
	} else {
		dumped = json_dumps(req->config, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (!dumped)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		data = dumped;
		len = strlen(dumped);
	}

	r = cni_exec(exe, envp, data, len, cmd == CNI_CMD_ADD ? &out : NULL, &req->error);
	if (r < 0)
		return r;
	if (cmd != CNI_CMD_ADD)
		return 0;
	if (!out)
		return cni_fail(req, -EBADMSG, CNI_ERR_INTERNAL, "IPAM plugin %s printed no result", type);

	/* Trust the version the delegate says it printed; fall back to ours. */
	v = json_object_get(out, "cniVersion");
	ver = json_is_string(v) ? cni_version_from_string(json_string_value(v)) : req->version;
	if (ver < 0)
		ver = req->version;
	r = cni_result_from_json(out, ver, ret, &req->error);
	json_decref(out);
	return r;
}
