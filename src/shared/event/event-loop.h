/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The one-thread epoll loop shared by weftd and `dhcp daemon`. Every source is an fd: plain I/O
 * fds (netlink, datastore, HTTP, unix and packet sockets), timers (one timerfd each: resync,
 * debounce, datastore timeouts, DHCP client deadlines) and signals (one signalfd). Callbacks must
 * not block; their return value is ignored (a callback logs its own errors), and the loop runs
 * until event_loop_exit().
 *
 * Sources may be freed from inside any callback (also their own): freeing only unhooks them,
 * and the memory is released after the current batch of events has been dispatched, so a
 * callback may free another source (and that source's userdata) whose event is still pending in
 * the batch: it is not dispatched.
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"

typedef struct EventLoop EventLoop;
typedef struct EventSource EventSource;

typedef int (*EventIoFn)(EventSource *s, int fd, uint32_t revents, void *userdata);
typedef int (*EventTimerFn)(EventSource *s, void *userdata);
typedef int (*EventSignalFn)(EventSource *s, int signo, void *userdata);

/* Creates an empty loop. Returns 0, or -errno (epoll_create1). */
int event_loop_new(EventLoop **ret);
/* Frees the loop and every source still attached (closing the timer and signal fds it owns; I/O
 * fds are the caller's). NULL-safe; returns NULL. */
EventLoop *event_loop_free(EventLoop *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(EventLoop *, event_loop_free);

/* Watches fd (not owned: the caller closes it, after freeing the source) for `events` (EPOLLIN...).
 * ret may be NULL (then freed with the loop). Returns 0 or -errno. */
int event_loop_add_io(EventLoop *e, int fd, uint32_t events, EventIoFn cb, void *userdata, EventSource **ret);
/* Replaces the watched events of an I/O source; 0 still reports EPOLLHUP/EPOLLERR. 0 or -errno. */
int event_source_set_io_events(EventSource *s, uint32_t events);

/* A timer, created disarmed. Returns 0 or -errno. */
int event_loop_add_timer(EventLoop *e, EventTimerFn cb, void *userdata, EventSource **ret);
/* Arms a one-shot timer `usec` from now (0 = as soon as possible), or periodic with `interval_usec`.
 * Re-arming replaces the previous expiry. 0, -EINVAL (not a timer) or -errno. */
int event_source_arm(EventSource *s, uint64_t usec, uint64_t interval_usec);
/* Arms a one-shot timer at the absolute CLOCK_MONOTONIC time `usec` (the now_usec() clock), for
 * callers that keep deadlines rather than delays; a time already past fires as soon as possible.
 * Re-arming replaces the previous expiry. 0, -EINVAL (not a timer) or -errno. */
int event_source_arm_at(EventSource *s, uint64_t usec);
/* Arms only if not armed already: debounce (the first event of a burst sets the deadline). */
int event_source_arm_once(EventSource *s, uint64_t usec);
/* Disarms a timer (a pending expiry is dropped). 0, -EINVAL (not a timer) or -errno. */
int event_source_disarm(EventSource *s);
/* Whether a timer will still fire (false for NULL). */
bool event_source_armed(const EventSource *s);

/* Blocks `sigs` (0-terminated) in this thread and delivers them through one signalfd. Every
 * queued signal is handed to cb in turn. Returns 0 or -errno. */
int event_loop_add_signals(EventLoop *e, const int *sigs, EventSignalFn cb, void *userdata, EventSource **ret);

/* Unhooks the source (NULL-safe); returns NULL. Safe from any callback. */
EventSource *event_source_free(EventSource *s);

/* Runs until event_loop_exit(); returns the exit code given there, or -errno if epoll_wait fails. */
int event_loop_run(EventLoop *e);
/* Makes event_loop_run() return `code` once the current callback returns; no further events of
 * the current batch are dispatched. */
void event_loop_exit(EventLoop *e, int code);

/* CLOCK_MONOTONIC in microseconds. */
uint64_t now_usec(void);
#define USEC_PER_MSEC 1000ULL
#define USEC_PER_SEC 1000000ULL
