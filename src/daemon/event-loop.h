/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's one loop: one thread, one epoll set. Every source is an fd: plain I/O fds (netlink,
 * datastore, HTTP), timers (one timerfd each: resync, debounce, datastore timeouts) and signals
 * (one signalfd). Callbacks must not block; their return value is ignored (a callback logs its own
 * errors), and the loop runs until event_loop_exit().
 *
 * Sources may be freed from inside any callback (also their own): freeing only unhooks them,
 * and the memory is released after the current batch of events has been dispatched.
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

int event_loop_new(EventLoop **ret);
EventLoop *event_loop_free(EventLoop *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(EventLoop *, event_loop_free);

/* Watches fd (not owned) for `events` (EPOLLIN...). ret may be NULL (then freed with the loop). */
int event_loop_add_io(EventLoop *e, int fd, uint32_t events, EventIoFn cb, void *userdata, EventSource **ret);
int event_source_set_io_events(EventSource *s, uint32_t events);

/* A timer, created disarmed. */
int event_loop_add_timer(EventLoop *e, EventTimerFn cb, void *userdata, EventSource **ret);
/* Arms a one-shot timer `usec` from now (0 = as soon as possible), or periodic with `interval_usec`.
 * Re-arming replaces the previous expiry. */
int event_source_arm(EventSource *s, uint64_t usec, uint64_t interval_usec);
/* Arms only if not armed already: debounce (the first event of a burst sets the deadline). */
int event_source_arm_once(EventSource *s, uint64_t usec);
int event_source_disarm(EventSource *s);
bool event_source_armed(const EventSource *s);

/* Blocks `sigs` (0-terminated) in this thread and delivers them through one signalfd. */
int event_loop_add_signals(EventLoop *e, const int *sigs, EventSignalFn cb, void *userdata, EventSource **ret);

/* Unhooks the source (NULL-safe); returns NULL. Safe from any callback. */
EventSource *event_source_free(EventSource *s);

/* Runs until event_loop_exit(); returns the exit code given there. */
int event_loop_run(EventLoop *e);
void event_loop_exit(EventLoop *e, int code);

/* CLOCK_MONOTONIC in microseconds. */
uint64_t now_usec(void);
#define USEC_PER_MSEC 1000ULL
#define USEC_PER_SEC 1000000ULL
