/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Service datapath's counters as the kernel holds them (service-compile.h, "Counters"): the
 * element counters of the counted maps (svc-eps*, svc-noep*) and the svc-* named counters, read
 * with one GETSET dump of table inet weft, one GETSETELEM dump per counted map read (those a scrape's
 * series name, or all for a full sync: at most 2 x 3 x SVC_EPS_BUCKETS + 4, whatever the number of
 * Services) and one GETOBJ dump of the table's counters (libmnl; libnftables would fill its cache
 * with the whole table first).
 *
 * The same read serves a full sync: the counted maps are not flushed there but brought to the
 * wanted elements by deleting and adding only what differs, so the elements of unchanged Services
 * keep their counters.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct SvcKernelElem {
	char *key;   /* as the renderer writes it: "81920", "10.96.0.10 . tcp . 80", "tcp . 30080" */
	char *value; /* "10.244.1.5 . 8080", "goto svc-reject", "drop" */
	uint64_t packets;
	bool keep; /* a full sync keeps it if still wanted as it is (the Service programmed it) */
} SvcKernelElem;

typedef struct SvcKernelMap {
	char *name;
	bool counted;         /* declared with the counter flag (an older weftd's is not) */
	bool readable;        /* counted, every element read and understood, and some kept: else flushed */
	SvcKernelElem *elems; /* sorted by key */
	size_t n_elems;
} SvcKernelMap;

typedef struct SvcKernelState {
	SvcKernelMap *maps; /* the counted maps that exist, sorted by name */
	size_t n_maps;
	char **counters; /* the svc-* named counters, sorted */
	uint64_t *counter_packets;
	size_t n_counters;
} SvcKernelState;

/* Is `map` one of the maps whose elements count (svc-eps*, svc-noep*)? */
bool svc_map_counted(const char *map);

/* One read of table inet weft (a table that does not exist reads as empty); only the counted maps
 * named in only[0..n_only) (sorted; only NULL: all of them). 0, -ENOMEM or the netlink error. */
int svc_kernel_read(SvcKernelState **ret, const char *const *only, size_t n_only);
SvcKernelState *svc_kernel_free(SvcKernelState *s);
static inline void svc_kernel_freep(SvcKernelState **s) {
	svc_kernel_free(*s);
}
const SvcKernelMap *svc_kernel_map(const SvcKernelState *s, const char *name);
const SvcKernelElem *svc_kernel_elem(const SvcKernelMap *m, const char *key);
SvcKernelElem *svc_kernel_elem_mut(SvcKernelMap *m, const char *key);
/* The named counter's packets; false if the kernel has none of that name. */
bool svc_kernel_counter(const SvcKernelState *s, const char *name, uint64_t *ret);

/* The weft_service_new_connections_total and weft_service_no_endpoint_total families of the
 * programmed units (their SvcSeries), read with one svc_kernel_read() of the maps they name. */
typedef struct ServiceUnit ServiceUnit;
void service_counters_render(ServiceUnit *const *units, size_t n_units, FILE *f);
