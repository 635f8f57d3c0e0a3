/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the flow log's conntrack event parser (flow_event_parse(): what weftd --flow-log reads
 * from ctnetlink's NEW and DESTROY groups). The input is a datagram as recv() returns it, a
 * stream of nlmsghdr; each message is parsed, and what parses is rendered as the record's JSON,
 * whose addresses must be of the family the event says.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "daemon/flows/flow-log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)

static void check(const FlowEvent *ev) {
	json_t *j;
	const char *src;
	char *text;

	if (ev->orig.src.family != AF_INET && ev->orig.src.family != AF_INET6)
		abort();
	if (ev->orig.dst.family != ev->orig.src.family || ev->reply.src.family != ev->orig.src.family ||
	    ev->reply.dst.family != ev->orig.src.family)
		abort();
	j = flow_event_to_json(ev);
	if (!j)
		return; /* out of memory */
	src = json_string_value(json_object_get(j, "src"));
	if (!src || (ev->orig.src.family == AF_INET6) != (strchr(src, ':') != NULL))
		abort();
	text = json_dumps(j, JSON_COMPACT);
	free(text);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	uint8_t *buf;
	size_t off = 0;

	if (size > MAX_INPUT)
		return 0;
	/* aligned as the kernel's datagram is, and exactly the input's size (ASan sees overreads) */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	while (size - off >= sizeof(struct nlmsghdr)) {
		const struct nlmsghdr *nlh = (const struct nlmsghdr *) (buf + off);
		FlowEvent ev;

		if (flow_event_parse(nlh, size - off, &ev) >= 0)
			check(&ev);
		/* in size_t: NLMSG_ALIGN(0xffffffff) is 0 in 32 bits */
		if (nlh->nlmsg_len < sizeof(struct nlmsghdr) || nlh->nlmsg_len > size - off)
			break;
		off += MIN((size_t) NLMSG_ALIGN((size_t) nlh->nlmsg_len), size - off);
	}
	free(buf);
	return 0;
}
