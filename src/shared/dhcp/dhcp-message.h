/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * DHCPv4 messages (RFC 2131/2132): building client messages, parsing server replies, and the
 * IPv4+UDP framing we need because the client talks through an AF_PACKET socket (the pod's
 * interface has no address yet while it asks for one). Everything here is pure: no I/O, no
 * allocation, bounded buffers; the fuzz-friendly parsers reject anything malformed or truncated.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DHCP_SERVER_PORT 67
#define DHCP_CLIENT_PORT 68
#define DHCP_MAGIC_COOKIE 0x63825363u
/* Fixed BOOTP part (op .. file) plus the magic cookie. */
#define DHCP_FIXED_LEN 240
/* What we build: an Ethernet MTU's worth is far more than a client message ever needs. */
#define DHCP_MSG_MAX 1500

enum {
	BOOTREQUEST = 1,
	BOOTREPLY = 2,
};

/* Option 53 values. */
typedef enum DhcpMessageType {
	DHCP_DISCOVER = 1,
	DHCP_OFFER = 2,
	DHCP_REQUEST = 3,
	DHCP_DECLINE = 4,
	DHCP_ACK = 5,
	DHCP_NAK = 6,
	DHCP_RELEASE = 7,
	DHCP_INFORM = 8,
} DhcpMessageType;

/* Option codes we read or write. */
enum {
	DHCP_OPT_PAD = 0,
	DHCP_OPT_SUBNET_MASK = 1,
	DHCP_OPT_ROUTER = 3,
	DHCP_OPT_DNS = 6,
	DHCP_OPT_HOST_NAME = 12,
	DHCP_OPT_STATIC_ROUTES = 33,
	DHCP_OPT_VENDOR_CLASS = 60,
	DHCP_OPT_REQUESTED_IP = 50,
	DHCP_OPT_LEASE_TIME = 51,
	DHCP_OPT_OVERLOAD = 52,
	DHCP_OPT_MESSAGE_TYPE = 53,
	DHCP_OPT_SERVER_ID = 54,
	DHCP_OPT_PARAM_REQUEST_LIST = 55,
	DHCP_OPT_MESSAGE = 56,
	DHCP_OPT_MAX_MESSAGE_SIZE = 57,
	DHCP_OPT_RENEWAL_TIME = 58,
	DHCP_OPT_REBINDING_TIME = 59,
	DHCP_OPT_CLIENT_ID = 61,
	DHCP_OPT_USER_CLASS = 77,
	DHCP_OPT_CLASSLESS_ROUTES = 121,
	DHCP_OPT_END = 255,
};

const char *dhcp_message_type_to_string(int type);

/* One option the caller wants sent verbatim (the config's "provide" list, client id...). */
typedef struct DhcpRawOption {
	uint8_t code;
	uint8_t len;
	uint8_t data[255];
} DhcpRawOption;

/* What a client message carries. Addresses in network byte order; 0 = absent. */
typedef struct DhcpBuild {
	DhcpMessageType type;
	uint32_t xid;
	uint16_t secs;
	bool broadcast;              /* BOOTP broadcast flag */
	uint8_t mac[6];              /* chaddr */
	struct in_addr ciaddr;       /* RENEWING/REBINDING/RELEASE */
	struct in_addr requested_ip; /* option 50 (SELECTING REQUEST, INIT-REBOOT) */
	struct in_addr server_id;    /* option 54 (SELECTING REQUEST, RELEASE) */
	const uint8_t *prl;          /* option 55, NULL/0 = none */
	size_t n_prl;
	const DhcpRawOption *opts; /* extra options, sent in order; a code we set ourselves above is
				      replaced by the caller's value (reference: "provide" overrides) */
	size_t n_opts;
} DhcpBuild;

/*
 * Writes the BOOTP/DHCP payload (no IP/UDP header) into buf. Returns its length (>= 300: padded
 * to the BOOTP minimum, some relays drop shorter messages), -EINVAL for a bad type, -EMSGSIZE.
 */
int dhcp_message_build(uint8_t *buf, size_t size, const DhcpBuild *b);

/*
 * A parsed server message. Option values point into `store` (copied out of the packet, with
 * RFC 3396 concatenation of repeated codes and RFC 2132 option overload of file/sname applied),
 * so it stays valid after the packet buffer is reused.
 */
typedef struct DhcpMessage {
	uint8_t op;
	uint32_t xid; /* host order */
	uint16_t flags;
	struct in_addr ciaddr, yiaddr, siaddr, giaddr;
	uint8_t chaddr[16];
	uint8_t type; /* option 53, 0 if absent */
	uint16_t opt_off[256];
	uint16_t opt_len[256];
	bool opt_present[256];
	uint8_t store[2048];
	size_t store_used;
} DhcpMessage;

/*
 * Parses a BOOTP payload. -EBADMSG when shorter than the fixed part, the cookie is wrong, an
 * option runs past the end, there is no END before the data runs out (tolerated: many servers
 * pad without END, so a clean end of data also terminates), or option 53 is missing/invalid.
 */
int dhcp_message_parse(const uint8_t *buf, size_t len, DhcpMessage *ret);
/* Option value (NULL if absent; len 0 options are present with a non-NULL pointer). */
const uint8_t *dhcp_message_option(const DhcpMessage *m, uint8_t code, size_t *ret_len);
/* Fixed-size readers: 0, -ENODATA (absent) or -EBADMSG (wrong length). */
int dhcp_message_option_u32(const DhcpMessage *m, uint8_t code, uint32_t *ret);
int dhcp_message_option_addr(const DhcpMessage *m, uint8_t code, struct in_addr *ret);

/* A route from option 121 or 33; gw 0 = on-link. */
typedef struct DhcpRoute {
	struct in_addr dst;
	uint8_t len;
	struct in_addr gw;
} DhcpRoute;

#define DHCP_ROUTES_MAX 64

/*
 * RFC 3442 classless static routes (option 121): repeated {width, significant octets, router}.
 * Returns the number of routes (capped at max; extra ones are dropped), or -EBADMSG if any entry
 * is malformed (width > 32, truncated): RFC 3442 says to ignore such an option entirely.
 * Destination host bits beyond the width are cleared.
 */
int dhcp_parse_classless_routes(const uint8_t *data, size_t len, DhcpRoute *ret, size_t max);
/* RFC 2132 static routes (option 33): pairs {dst, router} with the destination's classful mask.
 * A default destination (0.0.0.0) is illegal there and skipped. Count or -EBADMSG. */
int dhcp_parse_static_routes(const uint8_t *data, size_t len, DhcpRoute *ret, size_t max);

/* The lease an ACK grants. Addresses network order; times in seconds, UINT32_MAX = infinite. */
typedef struct DhcpLease {
	struct in_addr address;
	uint8_t prefixlen; /* from option 1; see has_mask */
	bool has_mask;
	struct in_addr router; /* first of option 3, 0 = none */
	struct in_addr server_id;
	uint32_t lease_time, t1, t2;
	DhcpRoute routes[DHCP_ROUTES_MAX];
	size_t n_routes;
	bool classless; /* routes came from option 121 (router not used for routes) */
} DhcpLease;

/*
 * OFFER/ACK → lease. Requires yiaddr, option 51 (lease time) and a server identifier (option 54,
 * else `fallback_server`, the IP source of the reply; 0 = none → -EBADMSG). T1/T2 default to
 * 50% / 87.5% of the lease time and are clamped to T1 <= T2 <= lease time (RFC 2131 4.4.5).
 * A subnet mask that is not a contiguous netmask is -EBADMSG; an absent one leaves has_mask false
 * (the caller decides: the reference fails the ADD). Routes: option 121 if present and well
 * formed, else option 33; the router is reported either way.
 */
int dhcp_lease_from_message(const DhcpMessage *m, struct in_addr fallback_server, DhcpLease *ret);

/* Internet checksum (RFC 1071) over buf, folded, not inverted; `sum` carries a partial sum. */
uint32_t dhcp_csum_add(uint32_t sum, const void *buf, size_t len);
uint16_t dhcp_csum_fold(uint32_t sum);

/*
 * IPv4 + UDP framing (client port 68 → server port 67), both checksums filled in. The frame goes
 * to an AF_PACKET SOCK_DGRAM socket (the kernel adds the Ethernet header). Returns its length or
 * -EMSGSIZE.
 */
int dhcp_frame_build(uint8_t *buf, size_t size, struct in_addr src, struct in_addr dst, const uint8_t *payload,
		     size_t len);
/*
 * Validates an IPv4 frame as read from an AF_PACKET SOCK_DGRAM socket and finds the UDP payload
 * for the client port: version 4, sane header length, header checksum, not a fragment, protocol
 * UDP, destination port 68, UDP length within the IP length, UDP checksum (when non-zero and
 * `check_udp_csum`: a packet socket sees locally generated or veth-forwarded frames with only the
 * pseudo-header sum filled in (checksum offload, TP_STATUS_CSUMNOTREADY), which must be trusted).
 * Returns 0 with *ret_payload and *ret_len pointing into buf and *ret_src the IP source, -EBADMSG
 * otherwise (also for traffic to other ports: not ours).
 */
int dhcp_frame_parse(const uint8_t *buf, size_t len, bool check_udp_csum, const uint8_t **ret_payload, size_t *ret_len,
		     struct in_addr *ret_src);

/* Netmask → prefix length; -EINVAL if not contiguous. */
int dhcp_netmask_to_prefixlen(struct in_addr mask);
