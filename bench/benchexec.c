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
 * Last line on stderr: "total_us <wall of the whole list>". Exit status: 0 if every command
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

typedef struct Cmd {
	char **argv;
	char **env;   /* extra NAME=VALUE */
	size_t n_env;
	const char *in;
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

	memset(c, 0, sizeof(*c));
	c->argv = calloc(cap, sizeof(char *));
	c->env = calloc(cap, sizeof(char *));
	if (!c->argv || !c->env)
		return -ENOMEM;
	for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (!in_argv && tok[0] == '<') {
			c->in = tok + 1;
			continue;
		}
		if (!in_argv && strchr(tok, '=') && tok[0] != '=') {
			if (c->n_env + 1 >= cap)
				return -E2BIG;
			c->env[c->n_env++] = tok;
			continue;
		}
		in_argv = 1;
		if (n + 1 >= cap) {
			cap *= 2;
			c->argv = realloc(c->argv, cap * sizeof(char *));
			if (!c->argv)
				return -ENOMEM;
		}
		c->argv[n++] = tok;
		c->argv[n] = NULL;
	}
	return n > 0 ? 0 : -EINVAL;
}

static pid_t spawn(Cmd *c, const char *outdir, size_t idx) {
	char path[4096];
	pid_t pid;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &c->start);
	pid = fork();
	if (pid != 0)
		return pid;
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
			fprintf(lat, "%zu %lld %ld %d\n", i, ts_us(&end) - ts_us(&cmds[i].start), ru.ru_maxrss, rc);
			if (rc != 0)
				failed++;
			cmds[i].pid = 0;
			running--;
			break;
		}
	}
	fprintf(stderr, "total_us %lld\n", now_us() - t0);
	if (lat != stdout)
		fclose(lat);
	return failed ? 1 : 0;
}
