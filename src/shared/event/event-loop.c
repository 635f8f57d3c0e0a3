/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "shared/event/event-loop.h"

typedef enum SourceType {
	SOURCE_IO,
	SOURCE_TIMER,
	SOURCE_SIGNAL
} SourceType;

struct EventSource {
	EventLoop *loop;
	SourceType type;
	int fd; /* I/O: not owned; timer/signal: owned */
	bool dead;
	bool armed;
	void *userdata;
	union {
		EventIoFn io;
		EventTimerFn timer;
		EventSignalFn signal;
	} cb;
	EventSource *next; /* all sources of the loop */
};

struct EventLoop {
	int epfd;
	EventSource *sources;
	bool exit;
	int exit_code;
	bool dispatching;
};

uint64_t now_usec(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

int event_loop_new(EventLoop **ret) {
	EventLoop *e = calloc(1, sizeof(EventLoop));

	if (!e)
		return -ENOMEM;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0) {
		int r = negative_errno();
		free(e);
		return r;
	}
	*ret = e;
	return 0;
}

static void source_destroy(EventSource *s) {
	if (s->type != SOURCE_IO)
		safe_close(s->fd);
	free(s);
}

/* Releases sources freed during dispatch. */
static void loop_gc(EventLoop *e) {
	EventSource **p = &e->sources;

	while (*p) {
		EventSource *s = *p;
		if (s->dead) {
			*p = s->next;
			source_destroy(s);
		} else
			p = &s->next;
	}
}

EventLoop *event_loop_free(EventLoop *e) {
	if (!e)
		return NULL;
	while (e->sources) {
		EventSource *s = e->sources;
		e->sources = s->next;
		source_destroy(s);
	}
	safe_close(e->epfd);
	free(e);
	return NULL;
}

static int source_add(EventLoop *e, SourceType type, int fd, uint32_t events, void *userdata, EventSource **ret,
		      EventSource **ret_s) {
	EventSource *s = calloc(1, sizeof(EventSource));
	struct epoll_event ev = { .events = events };

	if (!s)
		return -ENOMEM;
	*s = (EventSource) { .loop = e, .type = type, .fd = fd, .userdata = userdata };
	ev.data.ptr = s;
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int r = negative_errno();
		free(s);
		return r;
	}
	s->next = e->sources;
	e->sources = s;
	*ret_s = s;
	if (ret)
		*ret = s;
	return 0;
}

int event_loop_add_io(EventLoop *e, int fd, uint32_t events, EventIoFn cb, void *userdata, EventSource **ret) {
	EventSource *s;
	int r;

	r = source_add(e, SOURCE_IO, fd, events, userdata, ret, &s);
	if (r < 0)
		return r;
	s->cb.io = cb;
	return 0;
}

int event_source_set_io_events(EventSource *s, uint32_t events) {
	struct epoll_event ev = { .events = events, .data.ptr = s };

	if (epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0)
		return negative_errno();
	return 0;
}

int event_loop_add_timer(EventLoop *e, EventTimerFn cb, void *userdata, EventSource **ret) {
	_cleanup_close_ int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	EventSource *s;
	int r;

	if (fd < 0)
		return negative_errno();
	r = source_add(e, SOURCE_TIMER, fd, EPOLLIN, userdata, ret, &s);
	if (r < 0)
		return r;
	TAKE_FD(fd);
	s->cb.timer = cb;
	return 0;
}

static struct timespec usec_to_ts(uint64_t u) {
	return (struct timespec) { .tv_sec = (time_t) (u / USEC_PER_SEC), .tv_nsec = (long) (u % USEC_PER_SEC) * 1000 };
}

int event_source_arm(EventSource *s, uint64_t usec, uint64_t interval_usec) {
	struct itimerspec its = {
		/* it_value 0 would disarm: "as soon as possible" is 1 µs */
		.it_value = usec_to_ts(usec ?: 1),
		.it_interval = usec_to_ts(interval_usec),
	};

	if (s->type != SOURCE_TIMER)
		return -EINVAL;
	if (timerfd_settime(s->fd, 0, &its, NULL) < 0)
		return negative_errno();
	s->armed = true;
	return 0;
}

int event_source_arm_at(EventSource *s, uint64_t usec) {
	/* it_value 0 would disarm; any time already past fires at once with TFD_TIMER_ABSTIME. */
	struct itimerspec its = { .it_value = usec_to_ts(usec ?: 1) };

	if (s->type != SOURCE_TIMER)
		return -EINVAL;
	if (timerfd_settime(s->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return negative_errno();
	s->armed = true;
	return 0;
}

int event_source_arm_once(EventSource *s, uint64_t usec) {
	if (s->armed)
		return 0;
	return event_source_arm(s, usec, 0);
}

int event_source_disarm(EventSource *s) {
	struct itimerspec its = {};

	if (s->type != SOURCE_TIMER)
		return -EINVAL;
	if (timerfd_settime(s->fd, 0, &its, NULL) < 0)
		return negative_errno();
	s->armed = false;
	return 0;
}

bool event_source_armed(const EventSource *s) {
	return s && s->armed;
}

int event_loop_add_signals(EventLoop *e, const int *sigs, EventSignalFn cb, void *userdata, EventSource **ret) {
	_cleanup_close_ int fd = -EBADF;
	EventSource *s;
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	for (const int *i = sigs; *i; i++)
		sigaddset(&mask, *i);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return negative_errno();
	fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	r = source_add(e, SOURCE_SIGNAL, fd, EPOLLIN, userdata, ret, &s);
	if (r < 0)
		return r;
	TAKE_FD(fd);
	s->cb.signal = cb;
	return 0;
}

EventSource *event_source_free(EventSource *s) {
	if (!s || s->dead)
		return NULL;
	(void) epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	s->dead = true;
	if (!s->loop->dispatching)
		loop_gc(s->loop);
	return NULL;
}

static void dispatch(EventSource *s, uint32_t revents) {
	switch (s->type) {
	case SOURCE_IO: (void) s->cb.io(s, s->fd, revents, s->userdata); break;
	case SOURCE_TIMER: {
		uint64_t expirations;
		struct itimerspec cur;

		if (read(s->fd, &expirations, sizeof(expirations)) != sizeof(expirations))
			return; /* re-armed or disarmed since epoll_wait(): not expired any more */
		if (timerfd_gettime(s->fd, &cur) == 0 && cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0)
			s->armed = false;
		(void) s->cb.timer(s, s->userdata);
		break;
	}
	case SOURCE_SIGNAL: {
		struct signalfd_siginfo si;

		while (read(s->fd, &si, sizeof(si)) == sizeof(si)) {
			(void) s->cb.signal(s, (int) si.ssi_signo, s->userdata);
			if (s->dead)
				break;
		}
		break;
	}
	}
}

int event_loop_run(EventLoop *e) {
	struct epoll_event evs[32];

	while (!e->exit) {
		int n = epoll_wait(e->epfd, evs, (int) ELEMENTSOF(evs), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		e->dispatching = true;
		for (int i = 0; i < n && !e->exit; i++) {
			EventSource *s = evs[i].data.ptr;
			if (!s->dead)
				dispatch(s, evs[i].events);
		}
		e->dispatching = false;
		loop_gc(e);
	}
	return e->exit_code;
}

void event_loop_exit(EventLoop *e, int code) {
	e->exit = true;
	e->exit_code = code;
}
