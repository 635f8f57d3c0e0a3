/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/status-server.h"

#define HTTP_MAX_REQUEST 4096
#define HTTP_MAX_CONNS 32
#define HTTP_IDLE_USEC (5 * USEC_PER_SEC)

typedef struct StatusConn StatusConn;
struct StatusConn {
	StatusServer *server;
	int fd;
	EventSource *source;
	uint64_t started;
	char in[HTTP_MAX_REQUEST + 1];
	size_t in_len;
	char *out;
	size_t out_len, out_off;
	StatusConn *next;
};

struct StatusServer {
	EventLoop *loop;
	int fd;
	EventSource *listen_source;
	EventSource *sweep;
	StatusHandlerFn handler;
	void *userdata;
	StatusConn *conns;
	unsigned n_conns;
	/* the front (status_server_start_front): its own loop in its own thread, sharing fd */
	StatusServer *front; /* the main server's front; NULL if none */
	StatusServer *main;  /* the front's main server */
	pthread_t thread;
	int handoff[2]; /* front -> main: StatusConn pointers of deferred requests */
	int stop[2];    /* main -> front: stop */
	EventSource *handoff_source, *stop_source;
};

int status_server_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
	char host[64];
	const char *colon, *h;
	unsigned port;
	size_t hl;

	if (isempty(s))
		return -EINVAL;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		h = s + 1;
		hl = (size_t) (end - h);
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		h = s;
		hl = (size_t) (colon - s);
	}
	if (hl >= sizeof(host) || safe_atou32(colon + 1, &port) < 0 || port == 0 || port > 65535)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;

	memset(ret, 0, sizeof(*ret));
	if (hl == 0 || strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *) ret;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t) port);
		a->sin6_addr = in6addr_any;
		if (hl > 0 && inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		*ret_len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *) ret;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t) port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		*ret_len = sizeof(*a);
	}
	return 0;
}

int status_server_parse_request_line(const char *line, char method[static 16], char path[static 256]) {
	size_t m = strcspn(line, " "), p;
	const char *rest;

	if (m == 0 || m >= 16 || line[m] != ' ')
		return -EINVAL;
	rest = line + m + 1;
	p = strcspn(rest, " ?\r\n");
	if (p == 0 || p >= 256 || rest[0] != '/')
		return -EINVAL;
	memcpy(method, line, m);
	method[m] = 0;
	memcpy(path, rest, p);
	path[p] = 0;
	return 0;
}

void status_server_parse_query(const char *line, char query[static 256]) {
	const char *target = strchr(line, ' '), *q;
	size_t n;

	query[0] = 0;
	if (!target)
		return;
	q = target + 1 + strcspn(target + 1, " ?\r\n");
	if (*q != '?')
		return;
	n = strcspn(q + 1, " \r\n");
	if (n < 256) {
		memcpy(query, q + 1, n);
		query[n] = 0;
	}
}

char *status_server_query_get(const char *query, const char *key) {
	size_t n = strlen(key);

	for (const char *p = query; p && *p;) {
		const char *end = strchrnul(p, '&');

		if (strncmp(p, key, n) == 0 && p[n] == '=') {
			char *v = strndup(p + n + 1, (size_t) (end - p - n - 1)), *o = v;

			for (char *i = v; v && *i; i++, o++) {
				unsigned x;

				if (*i == '%' && sscanf(i + 1, "%2x", &x) == 1) {
					*o = (char) x;
					i += 2;
				} else
					*o = *i == '+' ? ' ' : *i;
			}
			if (v)
				*o = 0;
			return v;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

static void conn_free(StatusConn *c) {
	StatusServer *s = c->server;

	for (StatusConn **p = &s->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	s->n_conns--;
	event_source_free(c->source);
	safe_close(c->fd);
	free(c->out);
	free(c);
}

static const char *status_text(int status) {
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

/* Writes what it can; 1 when everything is out, 0 to wait for EPOLLOUT, < 0 on error. */
static int conn_flush(StatusConn *c) {
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return negative_errno();
		}
		c->out_off += (size_t) n;
	}
	return 1;
}

static int conn_respond(StatusConn *c) {
	char method[16], path[256], query[256];
	StatusResponse resp = { .status = 400, .content_type = "text/plain; charset=utf-8" };
	const char *body;
	int r;

	if (status_server_parse_request_line(c->in, method, path) >= 0) {
		status_server_parse_query(c->in, query);
		r = c->server->handler(method, path, query, &resp, c->server->userdata);
		if (r == STATUS_DEFER && c->server->main) {
			free(resp.body);
			return STATUS_DEFER + 1; /* the main loop's to answer */
		}
		if (r < 0) {
			free(resp.body);
			resp = (StatusResponse) { .status = 500, .content_type = "text/plain; charset=utf-8" };
		}
	}
	body = resp.body ?: status_text(resp.status);
	r = asprintf(&c->out,
		     "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s%s",
		     resp.status, status_text(resp.status), resp.content_type ?: "text/plain",
		     strlen(body) + !resp.body, body, resp.body ? "" : "\n");
	free(resp.body);
	if (r < 0) {
		c->out = NULL;
		return -ENOMEM;
	}
	c->out_len = (size_t) r;
	/* We read no more; a HEAD-less, one-shot HTTP/1.0 exchange. */
	r = conn_flush(c);
	if (r == 0)
		return event_source_set_io_events(c->source, EPOLLOUT);
	return r < 0 ? r : 1;
}

/* Moves a conn whose request is read from the front's thread to the main loop (on_handoff). */
static int front_handoff(StatusConn *c) {
	StatusServer *f = c->server;

	for (StatusConn **p = &f->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	f->n_conns--;
	c->source = event_source_free(c->source);
	c->next = NULL;
	c->server = f->main;
	/* a pointer is less than PIPE_BUF: written whole or not at all */
	if (write(f->handoff[1], &c, sizeof(c)) != (ssize_t) sizeof(c)) {
		safe_close(c->fd);
		free(c);
	}
	return 0;
}

static int conn_io(EventSource *src, int fd, uint32_t revents, void *userdata) {
	StatusConn *c = userdata;
	int r;

	if (c->out) {
		r = conn_flush(c);
		if (r != 0)
			conn_free(c);
		return 0;
	}
	for (;;) {
		ssize_t n = recv(fd, c->in + c->in_len, HTTP_MAX_REQUEST - c->in_len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			conn_free(c);
			return 0;
		}
		if (n == 0) {
			conn_free(c);
			return 0;
		}
		c->in_len += (size_t) n;
		c->in[c->in_len] = 0;
		if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n"))
			break;
		if (c->in_len >= HTTP_MAX_REQUEST) {
			conn_free(c);
			return 0;
		}
	}
	r = conn_respond(c);
	if (r == STATUS_DEFER + 1)
		return front_handoff(c);
	if (r != 0)
		conn_free(c);
	return 0;
}

static int sweep_cb(EventSource *src, void *userdata) {
	StatusServer *s = userdata;
	uint64_t now = now_usec();

	for (StatusConn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (now - c->started > HTTP_IDLE_USEC)
			conn_free(c);
	}
	if (!s->conns)
		(void) event_source_disarm(s->sweep);
	return 0;
}

static int listen_io(EventSource *src, int fd, uint32_t revents, void *userdata) {
	StatusServer *s = userdata;

	for (;;) {
		_cleanup_close_ int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		StatusConn *c;

		if (cfd < 0) {
			if (errno == EINTR)
				continue;
			return 0; /* EAGAIN, or a transient error (EMFILE...): try on the next event */
		}
		if (s->n_conns >= HTTP_MAX_CONNS)
			continue; /* closed by cleanup */
		c = calloc(1, sizeof(StatusConn));
		if (!c)
			continue;
		c->server = s;
		c->fd = cfd;
		c->started = now_usec();
		if (event_loop_add_io(s->loop, cfd, EPOLLIN, conn_io, c, &c->source) < 0) {
			free(c);
			continue;
		}
		TAKE_FD(cfd);
		c->next = s->conns;
		s->conns = c;
		s->n_conns++;
		if (!event_source_armed(s->sweep))
			(void) event_source_arm(s->sweep, USEC_PER_SEC, USEC_PER_SEC);
	}
}

static int on_handoff(EventSource *src, int fd, uint32_t revents, void *userdata) {
	StatusServer *s = userdata;
	StatusConn *c;

	while (read(fd, &c, sizeof(c)) == (ssize_t) sizeof(c)) {
		if (event_loop_add_io(s->loop, c->fd, EPOLLIN, conn_io, c, &c->source) < 0) {
			safe_close(c->fd);
			free(c);
			continue;
		}
		c->next = s->conns;
		s->conns = c;
		s->n_conns++;
		c->started = now_usec(); /* the main loop's own idle bound from here */
		if (!event_source_armed(s->sweep))
			(void) event_source_arm(s->sweep, USEC_PER_SEC, USEC_PER_SEC);
		if (conn_respond(c) != 0)
			conn_free(c);
	}
	return 0;
}

static int on_stop(EventSource *src, int fd, uint32_t revents, void *userdata) {
	StatusServer *f = userdata;

	event_loop_exit(f->loop, 0);
	return 0;
}

static void *front_run(void *userdata) {
	StatusServer *f = userdata;

	(void) event_loop_run(f->loop);
	return NULL;
}

static StatusServer *front_free(StatusServer *f) {
	if (!f)
		return NULL;
	while (f->conns)
		conn_free(f->conns);
	event_source_free(f->listen_source);
	event_source_free(f->sweep);
	event_source_free(f->stop_source);
	event_loop_free(f->loop);
	free(f);
	return NULL;
}

int status_server_start_front(StatusServer *s, StatusHandlerFn front_handler, void *userdata) {
	StatusServer *f;
	sigset_t all, old;
	int r;

	if (s->front)
		return -EBUSY;
	if (pipe2(s->handoff, O_CLOEXEC | O_NONBLOCK) < 0)
		return negative_errno();
	if (pipe2(s->stop, O_CLOEXEC | O_NONBLOCK) < 0)
		return negative_errno();
	f = calloc(1, sizeof(StatusServer));
	if (!f)
		return -ENOMEM;
	*f = (StatusServer) { .fd = s->fd, .handler = front_handler, .userdata = userdata, .main = s };
	f->handoff[1] = s->handoff[1];
	r = event_loop_new(&f->loop);
	if (r >= 0)
		r = event_loop_add_io(f->loop, s->fd, EPOLLIN, listen_io, f, &f->listen_source);
	if (r >= 0)
		r = event_loop_add_timer(f->loop, sweep_cb, f, &f->sweep);
	if (r >= 0)
		r = event_loop_add_io(f->loop, s->stop[0], EPOLLIN, on_stop, f, &f->stop_source);
	if (r >= 0)
		r = event_loop_add_io(s->loop, s->handoff[0], EPOLLIN, on_handoff, s, &s->handoff_source);
	if (r < 0) {
		front_free(f);
		return r;
	}
	/* the thread takes no signal: the main loop's signalfd gets them all */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&f->thread, NULL, front_run, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		front_free(f);
		return r;
	}
	/* from now on the front accepts; the main loop only answers what it is handed */
	s->listen_source = event_source_free(s->listen_source);
	s->front = f;
	return 0;
}

int status_server_new(EventLoop *e, const char *listen_addr, StatusHandlerFn handler, void *userdata,
		      StatusServer **ret) {
	_cleanup_(status_server_freep) StatusServer *s = NULL;
	struct sockaddr_storage ss;
	socklen_t len;
	int r, one = 1;

	r = status_server_parse_listen(listen_addr, &ss, &len);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(StatusServer));
	if (!s)
		return -ENOMEM;
	s->fd = -EBADF;
	s->handoff[0] = s->handoff[1] = s->stop[0] = s->stop[1] = -EBADF;
	s->loop = e;
	s->handler = handler;
	s->userdata = userdata;
	s->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return negative_errno();
	(void) setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->fd, (struct sockaddr *) &ss, len) < 0 || listen(s->fd, 64) < 0)
		return negative_errno();
	r = event_loop_add_io(e, s->fd, EPOLLIN, listen_io, s, &s->listen_source);
	if (r < 0)
		return r;
	r = event_loop_add_timer(e, sweep_cb, s, &s->sweep);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

StatusServer *status_server_free(StatusServer *s) {
	if (!s)
		return NULL;
	if (s->front) {
		char b = 0;

		(void) !write(s->stop[1], &b, 1);
		(void) pthread_join(s->front->thread, NULL);
		s->front = front_free(s->front);
	}
	if (s->handoff[0] >= 0) {
		StatusConn *c;

		/* conns handed over that the loop never took */
		while (read(s->handoff[0], &c, sizeof(c)) == (ssize_t) sizeof(c)) {
			safe_close(c->fd);
			free(c);
		}
	}
	event_source_free(s->handoff_source);
	safe_close(s->handoff[0]);
	safe_close(s->handoff[1]);
	safe_close(s->stop[0]);
	safe_close(s->stop[1]);
	while (s->conns)
		conn_free(s->conns);
	event_source_free(s->listen_source);
	event_source_free(s->sweep);
	safe_close(s->fd);
	free(s);
	return NULL;
}
