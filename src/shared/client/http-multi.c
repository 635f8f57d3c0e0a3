/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>

#include "basic/list.h"
#include "shared/client/http-multi.h"

/* A response bigger than this is not something we asked for. */
#define RESPONSE_MAX_DEFAULT (64u * 1024u * 1024u)

struct HttpTransfer {
	HttpMulti *multi; /* set while on a multi */
	HttpTransfer *prev, *next;
	CURL *easy;
	char *buf;
	size_t len, alloc, max;
	bool cancelled;
	bool in_done; /* its done callback is running: the multi frees it after */
	int abort_error;
	HttpLineFn on_line;
	HttpDoneFn done;
	void *userdata;
	char errbuf[CURL_ERROR_SIZE];
};

struct HttpMulti {
	CURLM *multi;
	int epfd;
	int timerfd;
	uint64_t curl_deadline; /* usec CLOCK_MONOTONIC; 0 = none */
	uint64_t wakeup;
	unsigned in_curl; /* >0 while curl may be calling our callbacks */
	HttpTransfer *transfers;
};

/* Process-wide: set once at start-up, before any transfer exists (weftd is one thread then). */
static uint32_t socket_mark;

void http_set_socket_mark(uint32_t mark) {
	socket_mark = mark;
}

static int sockopt_cb(void *userdata, curl_socket_t fd, curlsocktype purpose) {
	uint32_t mark = (uint32_t) (uintptr_t) userdata;

	/* best effort: an unprivileged caller (tests, the weft tool) keeps a working, unmarked socket */
	if (purpose == CURLSOCKTYPE_IPCXN && mark != 0)
		(void) setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	return CURL_SOCKOPT_OK;
}

uint64_t http_now_usec(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

int http_curl_code_to_errno(CURLcode code) {
	switch (code) {
	case CURLE_OK: return 0;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY: return -EHOSTUNREACH;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE: return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL: return -EINVAL;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CONNECT_ERROR: return -EPROTO;
	default: return -EIO;
	}
}

/* ---- transfers ---- */

static int buf_append(HttpTransfer *t, const char *data, size_t n) {
	if (t->len + n + 1 > t->alloc) {
		size_t a = MAX(MAX(t->alloc * 2, t->len + n + 1), (size_t) 256);
		char *p;

		if (t->len + n + 1 > t->max)
			return -EFBIG;
		a = MIN(a, t->max);
		p = realloc(t->buf, a);
		if (!p)
			return -ENOMEM;
		t->buf = p;
		t->alloc = a;
	}
	memcpy(t->buf + t->len, data, n);
	t->len += n;
	t->buf[t->len] = 0;
	return 0;
}

/* Hands every complete line to on_line; keeps a trailing partial line buffered. */
static int process_lines(HttpTransfer *t) {
	size_t start = 0;
	int r = 0;

	while (!t->cancelled) {
		char *nl = memchr(t->buf + start, '\n', t->len - start);
		size_t n;

		if (!nl)
			break;
		n = (size_t) (nl - (t->buf + start));
		if (n > 0 && t->buf[start + n - 1] == '\r')
			n--;
		if (n > 0 && t->on_line) {
			r = t->on_line(t, t->buf + start, n, t->userdata);
			if (r < 0)
				break;
		}
		start = (size_t) (nl - t->buf) + 1;
	}
	if (start > 0) {
		memmove(t->buf, t->buf + start, t->len - start);
		t->len -= start;
		t->buf[t->len] = 0;
	}
	return r;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata) {
	HttpTransfer *t = userdata;
	size_t n = size * nmemb;
	long code = 0;
	int r;

	if (t->cancelled)
		return 0;
	r = buf_append(t, ptr, n);
	if (r >= 0 && t->on_line) {
		curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code < 300)
			r = process_lines(t);
	}
	if (r < 0) {
		t->abort_error = r;
		return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
	}
	return n;
}

int http_transfer_new(size_t max_response, HttpTransfer **ret) {
	HttpTransfer *t;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->max = max_response ?: RESPONSE_MAX_DEFAULT;
	t->easy = curl_easy_init();
	if (!t->easy) {
		free(t);
		return -ENOMEM;
	}
	curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
	curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->errbuf);
	curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
	if (socket_mark != 0) {
		curl_easy_setopt(t->easy, CURLOPT_SOCKOPTFUNCTION, sockopt_cb);
		curl_easy_setopt(t->easy, CURLOPT_SOCKOPTDATA, (void *) (uintptr_t) socket_mark);
	}
	*ret = t;
	return 0;
}

static void transfer_unlink(HttpTransfer *t) {
	HttpMulti *m = t->multi;

	if (!m)
		return;
	LIST_REMOVE(m->transfers, t);
	curl_multi_remove_handle(m->multi, t->easy);
	t->multi = NULL;
}

HttpTransfer *http_transfer_free(HttpTransfer *t) {
	if (!t)
		return NULL;
	transfer_unlink(t);
	curl_easy_cleanup(t->easy);
	free(t->buf);
	free(t);
	return NULL;
}

CURL *http_transfer_easy(HttpTransfer *t) {
	return t->easy;
}

void http_transfer_set_line_fn(HttpTransfer *t, HttpLineFn on_line) {
	t->on_line = on_line;
}

CURLcode http_transfer_perform(HttpTransfer *t, void *userdata) {
	t->userdata = userdata;
	t->len = 0;
	t->abort_error = 0;
	t->errbuf[0] = 0;
	return curl_easy_perform(t->easy);
}

long http_transfer_status(HttpTransfer *t) {
	long code = 0;

	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

const char *http_transfer_body(HttpTransfer *t, size_t *ret_len) {
	if (ret_len)
		*ret_len = t->len;
	return t->buf ?: "";
}

int http_transfer_abort_error(HttpTransfer *t) {
	return t->abort_error;
}

const char *http_transfer_error_text(HttpTransfer *t, CURLcode code) {
	return t->errbuf[0] ? t->errbuf : curl_easy_strerror(code);
}

/* ---- multi ---- */

static void timer_arm(HttpMulti *m) {
	uint64_t d = m->curl_deadline;
	struct itimerspec its = {};

	if (m->wakeup && (!d || m->wakeup < d))
		d = m->wakeup;
	if (d) {
		its.it_value.tv_sec = (time_t) (d / 1000000u);
		its.it_value.tv_nsec = (long) (d % 1000000u) * 1000;
	}
	/* A deadline already past fires at once (absolute time); 0 would disarm instead. */
	(void) timerfd_settime(m->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static int socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp) {
	HttpMulti *m = userp;
	struct epoll_event ev = { .data.fd = s };

	if (what == CURL_POLL_REMOVE) {
		/* curl may already have closed it; then the kernel dropped it from the set. */
		(void) epoll_ctl(m->epfd, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
	if (epoll_ctl(m->epfd, EPOLL_CTL_MOD, s, &ev) < 0) {
		if (errno != ENOENT || epoll_ctl(m->epfd, EPOLL_CTL_ADD, s, &ev) < 0)
			return -1;
	}
	return 0;
}

static int multi_timer_cb(CURLM *cm, long timeout_ms, void *userp) {
	HttpMulti *m = userp;

	m->curl_deadline = timeout_ms < 0 ? 0 : http_now_usec() + (uint64_t) timeout_ms * 1000u + 1;
	timer_arm(m);
	return 0;
}

int http_multi_new(HttpMulti **ret) {
	_cleanup_(http_multi_freep) HttpMulti *m = NULL;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->epfd = m->timerfd = -EBADF;
	m->multi = curl_multi_init();
	if (!m->multi)
		return -ENOMEM;
	curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m);
	curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, multi_timer_cb);
	curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m);
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (m->epfd < 0)
		return negative_errno();
	m->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->timerfd < 0)
		return negative_errno();
	if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->timerfd,
		      &(struct epoll_event) { .events = EPOLLIN, .data.fd = m->timerfd }) < 0)
		return negative_errno();
	*ret = TAKE_PTR(m);
	return 0;
}

HttpMulti *http_multi_free(HttpMulti *m) {
	if (!m)
		return NULL;
	while (m->transfers)
		http_transfer_free(m->transfers);
	if (m->multi)
		curl_multi_cleanup(m->multi);
	safe_close(m->timerfd);
	safe_close(m->epfd);
	free(m);
	return NULL;
}

int http_multi_add(HttpMulti *m, HttpTransfer *t, HttpDoneFn done, void *userdata) {
	if (t->multi)
		return -EBUSY;
	t->done = done;
	t->userdata = userdata;
	t->len = 0;
	t->errbuf[0] = 0;
	if (curl_multi_add_handle(m->multi, t->easy) != CURLM_OK)
		return -ENOMEM;
	t->multi = m;
	LIST_PREPEND(m->transfers, t);
	return 0;
}

void http_transfer_cancel(HttpTransfer *t) {
	if (!t)
		return;
	t->cancelled = true;
	t->on_line = NULL;
	t->done = NULL;
	if (t->in_done)
		return;
	/* curl forbids removing a handle from inside its own callbacks: dispatch() sweeps it later. */
	if (!t->multi || t->multi->in_curl == 0)
		http_transfer_free(t);
}

int http_multi_get_fd(HttpMulti *m) {
	return m->epfd;
}

void http_multi_set_wakeup(HttpMulti *m, uint64_t deadline_usec) {
	m->wakeup = deadline_usec;
	timer_arm(m);
}

int http_multi_next_timeout_ms(HttpMulti *m) {
	uint64_t d = m->curl_deadline, now;

	if (m->wakeup && (!d || m->wakeup < d))
		d = m->wakeup;
	if (!d)
		return -1;
	now = http_now_usec();
	if (d <= now)
		return 0;
	return (int) MIN((d - now + 999) / 1000, (uint64_t) INT32_MAX);
}

static void socket_action(HttpMulti *m, curl_socket_t s, int flags) {
	int running;

	m->in_curl++;
	curl_multi_socket_action(m->multi, s, flags, &running);
	m->in_curl--;
}

static void finish_transfers(HttpMulti *m) {
	CURLMsg *msg;
	int left;

	/* Transfers cancelled from inside curl callbacks. */
	for (HttpTransfer *t = m->transfers, *next; t; t = next) {
		next = t->next;
		if (t->cancelled)
			http_transfer_free(t);
	}

	while ((msg = curl_multi_info_read(m->multi, &left))) {
		HttpTransfer *t = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &t);
		if (!t)
			continue;
		/* Detach first so the callback may start new transfers or cancel others freely. */
		transfer_unlink(t);
		t->in_done = true;
		if (t->done && !t->cancelled)
			t->done(t, msg->data.result, t->userdata);
		http_transfer_free(t);
	}
}

int http_multi_dispatch(HttpMulti *m) {
	struct epoll_event evs[16];
	int n;

	n = epoll_wait(m->epfd, evs, (int) ELEMENTSOF(evs), 0);
	if (n < 0 && errno != EINTR)
		return negative_errno();

	for (int i = 0; i < n; i++) {
		int flags = 0;

		if (evs[i].data.fd == m->timerfd) {
			uint64_t x;

			(void) !read(m->timerfd, &x, sizeof(x));
			continue;
		}
		if (evs[i].events & EPOLLIN)
			flags |= CURL_CSELECT_IN;
		if (evs[i].events & EPOLLOUT)
			flags |= CURL_CSELECT_OUT;
		if (evs[i].events & (EPOLLERR | EPOLLHUP))
			flags |= CURL_CSELECT_ERR;
		socket_action(m, evs[i].data.fd, flags);
	}

	if (m->curl_deadline && m->curl_deadline <= http_now_usec()) {
		m->curl_deadline = 0;
		socket_action(m, CURL_SOCKET_TIMEOUT, 0);
	}

	finish_transfers(m);
	timer_arm(m);
	return 0;
}
