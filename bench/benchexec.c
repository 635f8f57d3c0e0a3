/* SPDX-License-Identifier: Apache-2.0 */
/*
 * benchexec: run a list of commands and time each one, without a shell or `date` in the measured
 * interval. Built by bench/run with plain cc (not by the Makefile).
 *
 *   benchexec [-j PAR] [-n NETNS_PATH] [-o OUTDIR] [-l LATFILE] < CMDLIST
 *
 * CMDLIST: one command per line, whitespace-separated tokens. Leading NAME=VALUE tokens are added
 * to the environment of that command, a token "<FILE" sets its stdin (default /dev/null), the
 * rest is argv (argv[0] is looked up in PATH). Up to PAR commands run at once (default 1: strictly
 * sequential; PAR = number of lines: all start together).
 *
 * -n enters that network namespace once, before anything is timed (what `ip netns exec` does,
 * minus its mount namespace; it is the runtime's "node").
 * Per command, one line to LATFILE (default stdout): "<index> <wall_us> <maxrss_kb> <exit_code>"
 * (maxrss from wait4(), the same number GNU time's %M prints). Each command's stdout goes to
 * OUTDIR/<index>.out and stderr to OUTDIR/<index>.err (default: /dev/null).
 *
 * Chains (a runtime exec'ing each plugin of a conflist in turn, as libcni does, minus everything
 * else a runtime does): steps separated by a "::" token. The leading NAME=VALUE tokens apply to
 * every step; each step has its own "<FILE" (the plugin's config: a JSON object), an optional
 * "@FILE" (prevResult to add to that config: DEL/CHECK get the ADD result this way) and argv.
 * A step without "@FILE" after the first gets the previous step's stdout as prevResult (ADD).
 * The config sent is FILE's text with ',"prevResult":<result>' spliced in before its last '}'.
 * The first failing step ends the chain (its exit code is the command's). The timed process is a
 * forked copy of benchexec that runs the steps (no exec of its own: it is the runtime). The
 * latency line then has one more column per step: its own wall time in µs. maxrss is the
 * largest of the steps'.
 * Last lines on stderr: "cpu_us <user+system CPU of every command and its children>" (getrusage
 * RUSAGE_CHILDREN: what load does not inflate, unlike wall time) and "total_us <wall of the whole
 * list>". Exit status: 0 if every command
 * exited 0, 1 otherwise, 2 on a usage or system error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_STEPS 8

typedef struct Step {
	char **argv;
	const char *in;
	const char *prev; /* "@FILE" */
} Step;

typedef struct Cmd {
	char **argv;
	char **env; /* extra NAME=VALUE */
	size_t n_env;
	const char *in;
	Step steps[MAX_STEPS];
	size_t n_steps; /* > 1: a chain (argv/in are steps[0]'s) */
	int stepfd;     /* chain: read end of the pipe the step timings come back on */
	pid_t pid;
	struct timespec start;
} Cmd;

static long long now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static long long ts_us(const struct timespec *ts) {
	return ts->tv_sec * 1000000LL + ts->tv_nsec / 1000;
}

static int parse_line(char *line, Cmd *c) {
	size_t cap = 16, n = 0;
	char *tok, *save = NULL;
	int in_argv = 0;
	Step *st;

	memset(c, 0, sizeof(*c));
	c->stepfd = -1;
	c->n_steps = 1;
	st = &c->steps[0];
	st->argv = calloc(cap, sizeof(char *));
	c->env = calloc(cap, sizeof(char *));
	if (!st->argv || !c->env)
		return -ENOMEM;
	for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (strcmp(tok, "::") == 0) {
			if (n == 0 || c->n_steps == MAX_STEPS)
				return -EINVAL;
			st = &c->steps[c->n_steps++];
			cap = 16, n = 0, in_argv = 0;
			st->argv = calloc(cap, sizeof(char *));
			if (!st->argv)
				return -ENOMEM;
			continue;
		}
		if (!in_argv && tok[0] == '<') {
			st->in = tok + 1;
			continue;
		}
		if (!in_argv && tok[0] == '@') {
			st->prev = tok + 1;
			continue;
		}
		if (!in_argv && c->n_steps == 1 && strchr(tok, '=') && tok[0] != '=') {
			if (c->n_env + 1 >= cap)
				return -E2BIG;
			c->env[c->n_env++] = tok;
			continue;
		}
		in_argv = 1;
		if (n + 1 >= cap) {
			cap *= 2;
			st->argv = realloc(st->argv, cap * sizeof(char *));
			if (!st->argv)
				return -ENOMEM;
		}
		st->argv[n++] = tok;
		st->argv[n] = NULL;
	}
	c->argv = c->steps[0].argv;
	c->in = c->steps[0].in;
	return n > 0 ? 0 : -EINVAL;
}

/* Whole file (or NULL). */
static char *slurp_fd(int fd, size_t *ret_len) {
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap + 1);
	ssize_t k;

	while (buf && (k = read(fd, buf + len, cap - len)) != 0) {
		if (k < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return NULL;
		}
		len += (size_t) k;
		if (len == cap && !(buf = realloc(buf, (cap *= 2) + 1)))
			return NULL;
	}
	if (buf)
		buf[len] = 0;
	*ret_len = len;
	return buf;
}

static char *slurp(const char *path, size_t *ret_len) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *s;

	if (fd < 0)
		return NULL;
	s = slurp_fd(fd, ret_len);
	close(fd);
	return s;
}

/* conf with ,"prevResult":prev spliced in before its last '}' (prev NULL or empty: conf as is). */
static char *with_prev(const char *conf, size_t conf_len, const char *prev, size_t *ret_len) {
	const char *end = conf + conf_len;
	size_t plen = prev ? strlen(prev) : 0, head;
	char *out;

	while (plen > 0 && (prev[plen - 1] == '\n' || prev[plen - 1] == ' '))
		plen--;
	while (end > conf && end[-1] != '}')
		end--;
	if (plen == 0 || end == conf) {
		*ret_len = conf_len;
		return strndup(conf, conf_len);
	}
	head = (size_t) (end - 1 - conf);
	out = malloc(head + plen + 32);
	if (!out)
		return NULL;
	memcpy(out, conf, head);
	*ret_len = head + (size_t) sprintf(out + head, ",\"prevResult\":%.*s}", (int) plen, prev);
	return out;
}

/*
 * The forked runtime of a chain: runs the steps, writes the last step's stdout to fd 1, each step's
 * wall µs (and then the largest maxrss) to `timing_fd`, exits with the first failing step's code.
 * stderr of the steps goes to our fd 2.
 */
static void run_chain(const Cmd *c, int timing_fd) {
	char *prev = NULL;
	long maxrss = 0;

	for (size_t i = 0; i < c->n_steps; i++) {
		const Step *st = &c->steps[i];
		int in[2], out[2], status;
		size_t conf_len, data_len, out_len, prev_len;
		char *conf, *data, *prevfile = NULL, *result;
		struct timespec t0, t1;
		struct rusage ru;
		long long us;
		pid_t pid;

		conf = slurp(st->in ? st->in : "/dev/null", &conf_len);
		if (st->prev)
			prevfile = slurp(st->prev, &prev_len);
		if (!conf)
			_exit(126);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		data = with_prev(conf, conf_len, st->prev ? prevfile : (i > 0 ? prev : NULL), &data_len);
		if (!data || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
			_exit(126);
		pid = fork();
		if (pid < 0)
			_exit(126);
		if (pid == 0) {
			if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
				_exit(126);
			execvp(st->argv[0], st->argv);
			_exit(127);
		}
		close(in[0]);
		close(out[1]);
		/* Configs are a few hundred bytes: well under a pipe's capacity, no deadlock. */
		for (size_t off = 0; off < data_len;) {
			ssize_t k = write(in[1], data + off, data_len - off);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				break;
			off += (size_t) k;
		}
		close(in[1]);
		result = slurp_fd(out[0], &out_len);
		close(out[0]);
		while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
			;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		us = ts_us(&t1) - ts_us(&t0);
		if (ru.ru_maxrss > maxrss)
			maxrss = ru.ru_maxrss;
		dprintf(timing_fd, " %lld", us);
		free(conf), free(data), free(prevfile);
		free(prev);
		prev = result;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (result)
				(void) !write(1, result, out_len);
			dprintf(timing_fd, " rss %ld\n", maxrss);
			_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		}
	}
	if (prev)
		(void) !write(1, prev, strlen(prev));
	dprintf(timing_fd, " rss %ld\n", maxrss);
	_exit(0);
}

static pid_t spawn(Cmd *c, const char *outdir, size_t idx) {
	char path[4096];
	int tp[2] = { -1, -1 };
	pid_t pid;
	int fd;

	if (c->n_steps > 1 && pipe2(tp, O_CLOEXEC) < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	pid = fork();
	if (pid != 0) {
		if (c->n_steps > 1) {
			close(tp[1]);
			c->stepfd = tp[0];
		}
		return pid;
	}
	for (size_t i = 0; i < c->n_env; i++)
		putenv(c->env[i]);
	fd = open(c->in ? c->in : "/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, 0) < 0)
		_exit(126);
	if (outdir) {
		snprintf(path, sizeof(path), "%s/%zu.out", outdir, idx);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		snprintf(path, sizeof(path), "%s/%zu.err", outdir, idx);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(126);
	} else {
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
	}
	if (c->n_steps > 1)
		run_chain(c, tp[1]);
	execvp(c->argv[0], c->argv);
	_exit(127);
}

int main(int argc, char *argv[]) {
	const char *outdir = NULL, *latfile = NULL, *netns = NULL;
	size_t par = 1, n = 0, cap = 64, next = 0, running = 0, failed = 0;
	Cmd *cmds;
	FILE *lat = stdout;
	char *line = NULL;
	size_t linecap = 0;
	long long t0;
	int opt;

	while ((opt = getopt(argc, argv, "j:n:o:l:")) >= 0) {
		switch (opt) {
		case 'j': par = strtoul(optarg, NULL, 10); break;
		case 'n': netns = optarg; break;
		case 'o': outdir = optarg; break;
		case 'l': latfile = optarg; break;
		default:
			fprintf(stderr, "usage: benchexec [-j PAR] [-n NETNS] [-o OUTDIR] [-l LATFILE] < cmdlist\n");
			return 2;
		}
	}
	if (par < 1)
		par = 1;
	if (netns) {
		int fd = open(netns, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
			fprintf(stderr, "benchexec: cannot enter %s: %m\n", netns);
			return 2;
		}
		close(fd);
	}
	if (latfile && !(lat = fopen(latfile, "we"))) {
		fprintf(stderr, "benchexec: %s: %m\n", latfile);
		return 2;
	}
	cmds = calloc(cap, sizeof(Cmd));
	while (cmds && getline(&line, &linecap, stdin) > 0) {
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (n == cap && !(cmds = realloc(cmds, (cap *= 2) * sizeof(Cmd))))
			break;
		if (parse_line(strdup(line), &cmds[n]) < 0) {
			fprintf(stderr, "benchexec: bad command line: %s", line);
			return 2;
		}
		n++;
	}
	if (!cmds)
		return 2;

	t0 = now_us();
	while (next < n || running > 0) {
		while (next < n && running < par) {
			cmds[next].pid = spawn(&cmds[next], outdir, next);
			if (cmds[next].pid < 0) {
				fprintf(stderr, "benchexec: fork: %m\n");
				return 2;
			}
			next++, running++;
		}
		struct rusage ru;
		struct timespec end;
		int status;
		pid_t pid = wait4(-1, &status, 0, &ru);
		clock_gettime(CLOCK_MONOTONIC, &end);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "benchexec: wait4: %m\n");
			return 2;
		}
		for (size_t i = 0; i < next; i++) {
			if (cmds[i].pid != pid)
				continue;
			int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			long maxrss = ru.ru_maxrss;
			char steps[512] = "", *rss;
			size_t len = 0;

			if (cmds[i].stepfd >= 0) {
				char *t = slurp_fd(cmds[i].stepfd, &len);

				close(cmds[i].stepfd);
				cmds[i].stepfd = -1;
				if (t && (rss = strstr(t, " rss "))) {
					*rss = 0;
					maxrss = atol(rss + 5);
					snprintf(steps, sizeof(steps), "%s", t);
				}
				free(t);
			}
			fprintf(lat, "%zu %lld %ld %d%s\n", i, ts_us(&end) - ts_us(&cmds[i].start), maxrss, rc, steps);
			if (rc != 0)
				failed++;
			cmds[i].pid = 0;
			running--;
			break;
		}
	}
	{
		struct rusage ch;

		if (getrusage(RUSAGE_CHILDREN, &ch) == 0)
			fprintf(stderr, "cpu_us %lld\n",
				ch.ru_utime.tv_sec * 1000000LL + ch.ru_utime.tv_usec + ch.ru_stime.tv_sec * 1000000LL +
						ch.ru_stime.tv_usec);
	}
	fprintf(stderr, "total_us %lld\n", now_us() - t0);
	if (lat != stdout)
		fclose(lat);
	return failed ? 1 : 0;
}
