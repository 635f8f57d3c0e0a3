/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `dhcp daemon`: one thread, one EventLoop (event/event-loop.h). Sources: the listening unix
 * socket, one connection per plugin request (dhcp-proto.h), one AF_PACKET socket per attachment
 * while it waits for a server, one timer (armed at the earliest client deadline; re-armed after
 * every callback that can move a deadline) and the signals.
 *
 * Each attachment ("lease", keyed by the reference's client identifier) runs the pure state
 * machine of dhcp-client.h; this file only does its I/O. The packet socket is created inside
 * the pod's namespace (enter, socket(), leave) and bound to CNI_IFNAME there. It is open only
 * while a reply is awaited (SELECTING..REQUESTING, RENEWING, REBINDING): a socket holds a
 * reference on its namespace, and keeping one across the whole lease would keep a deleted
 * pod's namespace (and its veth) alive. A namespace or link that has gone away when the socket
 * is needed again ends that lease quietly: the pod was deleted without a DEL.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/filter.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>

#include "basic/fileio.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-types.h"
#include "dhcp.h"
#include "shared/dhcp/dhcp-client.h"
#include "shared/dhcp/dhcp-proto.h"
#include "shared/event/event-loop.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl.h"

typedef struct Daemon Daemon;
typedef struct Lease Lease;

typedef struct Conn {
	Daemon *d;
	int fd;
	EventSource *src;
	char *buf;
	size_t used;
	bool done_reading;
	Lease *waiting; /* an ADD waiting for this lease */
	struct Conn *next, *prev;
} Conn;

struct Lease {
	Daemon *d;
	char *key, *container_id, *network, *ifname, *netns;
	DhcpRawOption *opts; /* client id first, then "provide" */
	size_t n_opts;
	uint8_t prl[255];
	size_t n_prl;
	DhcpClient sm;
	int sock;
	EventSource *sock_src;
	int ifindex;
	uint8_t server_mac[6];
	bool has_server_mac;
	Conn *waiter;
	uint64_t add_deadline;
	const char *last_note;
	char last_error[512];
	Lease *next, *prev;
};

struct Daemon {
	EventLoop *loop;
	int listen_fd;
	EventSource *timer;
	char *socket_path, *pidfile, *hostprefix;
	bool broadcast, unlink_socket;
	uint64_t timeout, resend_max;
	Lease *leases;
	Conn *conns;
};

static uint32_t random_u32(void) {
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t) now_usec() ^ (uint32_t) getpid() << 16;
	return v ?: 1;
}

/* ---- connections ---- */

static void conn_free(Conn *c) {
	if (!c)
		return;
	if (c->waiting)
		c->waiting->waiter = NULL;
	LIST_REMOVE(c->d->conns, c);
	c->src = event_source_free(c->src);
	safe_close(c->fd);
	free(c->buf);
	free(c);
}

/* Writes the answer (small, the socket buffer takes it whole) and closes the connection. */
static void conn_reply(Conn *c, json_t *answer) {
	char *s = answer ? json_dumps(answer, JSON_COMPACT) : NULL;

	json_decref(answer);
	if (s) {
		size_t len = strlen(s);
		s[len] = '\n';
		if (send(c->fd, s, len + 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			log_debug_errno(-errno, "Failed to answer a plugin request: %m");
		free(s);
	}
	conn_free(c);
}

static void conn_fail(Conn *c, unsigned code, const char *fmt, ...) _printf_(3, 4);
static void conn_fail(Conn *c, unsigned code, const char *fmt, ...) {
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conn_reply(c, json_pack("{s:b,s:i,s:s}", "ok", 0, "code", (int) code, "msg", msg));
}

/* ---- leases ---- */

static const char *netns_path(const Lease *l, char *buf, size_t size) {
	snprintf(buf, size, "%s%s", l->d->hostprefix ?: "", l->netns);
	return buf;
}

static void lease_close_socket(Lease *l) {
	l->sock_src = event_source_free(l->sock_src);
	l->sock = safe_close(l->sock);
}

static void lease_free(Lease *l) {
	if (!l)
		return;
	if (l->waiter) {
		l->waiter->waiting = NULL;
		l->waiter = NULL;
	}
	lease_close_socket(l);
	LIST_REMOVE(l->d->leases, l);
	free(l->key);
	free(l->container_id);
	free(l->network);
	free(l->ifname);
	free(l->netns);
	free(l->opts);
	free(l);
}

static Lease *lease_find(Daemon *d, const char *key) {
	for (Lease *l = d->leases; l; l = l->next)
		if (streq(l->key, key))
			return l;
	return NULL;
}

/*
 * Only UDP to port 68, unfragmented. SOCK_DGRAM packet sockets run the filter on the network
 * header, so offsets are IP offsets.
 */
static int attach_filter(int fd) {
	static struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),                       /* 0: A = ip protocol */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 17, 0, 6),               /* 1: udp? else drop (8) */
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),                       /* 2: A = flags/fragment offset */
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 4, 0),          /* 3: fragment? drop (8) */
		BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),                      /* 4: X = ip header length */
		BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),                       /* 5: A = udp dest port */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, DHCP_CLIENT_PORT, 0, 1), /* 6: 68? accept (7) : drop (8) */
		BPF_STMT(BPF_RET | BPF_K, 0xffff),                           /* 7: accept */
		BPF_STMT(BPF_RET | BPF_K, 0),                                /* 8: drop */
	};
	struct sock_fprog prog = { .len = ELEMENTSOF(code), .filter = code };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? negative_errno() : 0;
}

/*
 * Opens the packet socket inside the pod's namespace, bound to the interface, which is brought
 * up if it is down (the reference does the same). ret_mac gets the interface's MAC.
 * Errors name what is missing in l->last_error.
 */
static int lease_on_io(EventSource *s, int fd, uint32_t revents, void *userdata);

static int lease_open_socket(Lease *l, uint8_t ret_mac[6]) {
	_cleanup_close_ int ns = -EBADF, fd = -EBADF;
	_cleanup_(nl_sock_freep) NlSock *nl = NULL;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	char path[PATH_MAX];
	NlLink link;
	int saved, r;

	if (l->sock >= 0)
		return 0;
	ns = netns_open(netns_path(l, path, sizeof(path)));
	if (ns < 0) {
		snprintf(l->last_error, sizeof(l->last_error), "failed to open netns \"%.256s\": %s", path,
			 strerror(-ns));
		return ns;
	}
	r = netns_enter(ns, &saved);
	if (r < 0) {
		snprintf(l->last_error, sizeof(l->last_error), "failed to enter netns \"%.256s\": %s", path,
			 strerror(-r));
		return r;
	}
	r = nl_sock_open(&nl);
	if (r >= 0) {
		r = nl_link_get(nl, l->ifname, 0, &link);
		if (r < 0)
			snprintf(l->last_error, sizeof(l->last_error), "error looking up \"%s\" in \"%.256s\": %s",
				 l->ifname, path, strerror(-r));
	}
	if (r >= 0 && !(link.flags & IFF_UP)) {
		log_info("%s: link %s is down, setting it up", l->key, l->ifname);
		r = nl_link_set_up(nl, link.ifindex, true);
		if (r < 0)
			snprintf(l->last_error, sizeof(l->last_error), "failed to set %s up: %s", l->ifname,
				 strerror(-r));
	}
	if (r >= 0) {
		/* Protocol 0 until bound: nothing is queued from other interfaces before the filter
		 * and the bind are in place. */
		fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = negative_errno();
			snprintf(l->last_error, sizeof(l->last_error), "failed to open packet socket: %s",
				 strerror(-r));
		}
	}
	netns_leave(saved);
	if (r < 0)
		return r;
	if (!link.has_mac) {
		snprintf(l->last_error, sizeof(l->last_error), "%s has no Ethernet address", l->ifname);
		return -EAFNOSUPPORT;
	}
	r = attach_filter(fd);
	if (r >= 0 && setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &(int) { 1 }, sizeof(int)) < 0)
		r = negative_errno();
	if (r >= 0) {
		sll.sll_ifindex = link.ifindex;
		if (bind(fd, (struct sockaddr *) &sll, sizeof(sll)) < 0)
			r = negative_errno();
	}
	if (r < 0) {
		snprintf(l->last_error, sizeof(l->last_error), "failed to set up packet socket on %s: %s", l->ifname,
			 strerror(-r));
		return r;
	}
	r = event_loop_add_io(l->d->loop, fd, EPOLLIN, lease_on_io, l, &l->sock_src);
	if (r < 0)
		return r;
	l->ifindex = link.ifindex;
	memcpy(ret_mac, link.mac, 6);
	l->sock = TAKE_FD(fd);
	return 0;
}

static int lease_send(Lease *l, DhcpSend what, bool unicast) {
	static const uint8_t bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t payload[DHCP_MSG_MAX], frame[DHCP_MSG_MAX + 64], mac[6];
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP), .sll_halen = 6 };
	struct in_addr src = {}, dst = { .s_addr = INADDR_BROADCAST };
	DhcpBuild b = {
		.prl = l->prl, .n_prl = l->n_prl, .opts = l->opts, .n_opts = l->n_opts, .broadcast = l->d->broadcast
	};
	int n, r;

	r = lease_open_socket(l, mac);
	if (r < 0)
		return r;
	dhcp_client_fill_build(&l->sm, what, now_usec(), &b);
	n = dhcp_message_build(payload, sizeof(payload), &b);
	if (n < 0)
		return n;
	if (what == DHCP_SEND_RENEW || what == DHCP_SEND_REBIND || what == DHCP_SEND_RELEASE)
		src = l->sm.lease.address;
	if (unicast)
		dst = l->sm.lease.server_id;
	n = dhcp_frame_build(frame, sizeof(frame), src, dst, payload, (size_t) n);
	if (n < 0)
		return n;
	sll.sll_ifindex = l->ifindex;
	/* Unicast goes to the MAC the server's last reply came from (the server, or the relay
	 * that forwards for it); without one, broadcast: servers answer both. */
	memcpy(sll.sll_addr, unicast && l->has_server_mac ? l->server_mac : bcast_mac, 6);
	if (sendto(l->sock, frame, (size_t) n, 0, (struct sockaddr *) &sll, sizeof(sll)) < 0)
		return negative_errno();
	log_debug("%s: sent %s (%s, xid 0x%08x)", l->key, dhcp_message_type_to_string(b.type),
		  dhcp_state_to_string(l->sm.state), b.xid);
	return 0;
}

static json_t *lease_result_json(const Lease *l) {
	_cleanup_(cni_result_freep) CniResult *res = cni_result_new(CNI_VERSION_1_1_0);
	const DhcpLease *dl = &l->sm.lease;
	IpPrefix addr = { .addr = { .family = AF_INET, .in = dl->address }, .len = dl->prefixlen };
	IpAddr gw = {};
	CniError err = {};
	json_t *j;

	if (!res)
		return NULL;
	if (dl->router.s_addr)
		gw = (IpAddr) { .family = AF_INET, .in = dl->router };
	if (cni_result_add_ip(res, &addr, &gw, -1) < 0)
		return NULL;
	for (size_t i = 0; i < dl->n_routes; i++) {
		CniRoute rt = { .dst = { .addr = { .family = AF_INET, .in = dl->routes[i].dst },
					 .len = dl->routes[i].len } };
		/* 0.0.0.0 as router in option 121 means on-link: a device route, no gateway. */
		if (dl->routes[i].gw.s_addr)
			rt.gw = (IpAddr) { .family = AF_INET, .in = dl->routes[i].gw };
		if (cni_result_add_route(res, &rt) < 0)
			return NULL;
	}
	/* Without option 121 the router is the default route (the CNI spec wants it listed). */
	if (!dl->classless && dl->router.s_addr) {
		CniRoute def = { .dst = { .addr = { .family = AF_INET } }, .gw = gw };
		if (cni_result_add_route(res, &def) < 0)
			return NULL;
	}
	j = cni_result_to_json(res, CNI_VERSION_1_1_0, &err);
	cni_error_clear(&err);
	return j;
}

static json_t *lease_answer(const Lease *l) {
	json_t *result = lease_result_json(l);
	uint64_t now = now_usec();
	json_int_t left = l->sm.expire_at == DHCP_NEVER ? -1
			  : l->sm.expire_at > now       ? (json_int_t) ((l->sm.expire_at - now) / USEC_PER_SEC)
							: 0;

	if (!result)
		return NULL;
	return json_pack("{s:b,s:o,s:s,s:I}", "ok", 1, "result", result, "state", dhcp_state_to_string(l->sm.state),
			 "expires", left);
}

static void lease_destroy_stop(Lease *l, bool send_release);

/* Carries out what the state machine asked for. Returns true if the lease was freed. */
static bool lease_apply(Lease *l, const DhcpActions *a) {
	char ip[INET_ADDRSTRLEN];
	int r;

	if (a->note) {
		l->last_note = a->note;
		log_debug("%s: %s", l->key, a->note);
	}
	if (a->lost)
		log_warning("%s: lease on %s lost (%s)", l->key, l->ifname, a->note ?: "expired");
	if (a->bound) {
		const DhcpLease *dl = &l->sm.lease;
		log_info("%s: bound %s/%u on %s, lease %us, renew in %us", l->key,
			 inet_ntop(AF_INET, &dl->address, ip, sizeof(ip)), dl->prefixlen, l->ifname, dl->lease_time,
			 dl->t1);
		if (l->waiter) {
			Conn *c = l->waiter;
			c->waiting = NULL;
			l->waiter = NULL;
			if (!dl->has_mask) {
				/* The reference's IPNet(): no mask, no address to configure. */
				conn_fail(c, CNI_ERR_INTERNAL, "DHCP option Subnet Mask not found in DHCPACK");
				lease_destroy_stop(l, true);
				return true;
			}
			conn_reply(c, lease_answer(l));
		}
	}
	if (a->send != DHCP_SEND_NONE) {
		r = lease_send(l, a->send, a->unicast);
		if (r < 0) {
			if (!*l->last_error)
				snprintf(l->last_error, sizeof(l->last_error), "failed to send: %s", strerror(-r));
			log_warning("%s: %s", l->key, l->last_error);
			/* The namespace or the link is gone: the pod went away without a DEL. */
			if (r == -ENOENT || r == -ENODEV || r == -ENXIO || r == -ENETDOWN || r == -EINVAL) {
				if (l->waiter) {
					Conn *c = l->waiter;
					c->waiting = NULL;
					l->waiter = NULL;
					conn_fail(c, CNI_ERR_INTERNAL, "%s", l->last_error);
				}
				log_info("%s: dropping the lease", l->key);
				lease_free(l);
				return true;
			}
		} else
			l->last_error[0] = '\0';
	}
	if (!a->need_socket)
		lease_close_socket(l);
	return false;
}

static void lease_event(Lease *l, const DhcpEvent *ev) {
	DhcpActions a;

	if (dhcp_client_handle(&l->sm, ev, now_usec(), &a) < 0)
		return;
	(void) lease_apply(l, &a);
}

/* STOP (RELEASE if a lease is held) and free. */
static void lease_destroy_stop(Lease *l, bool send_release) {
	DhcpActions a;

	if (l->waiter) {
		Conn *c = l->waiter;
		c->waiting = NULL;
		l->waiter = NULL;
		conn_fail(c, CNI_ERR_INTERNAL, "DHCP lease for %s was released while ADD was waiting", l->key);
	}
	if (send_release && dhcp_client_handle(&l->sm, &(DhcpEvent) { .type = DHCP_EVENT_STOP }, now_usec(), &a) >= 0 &&
	    a.send == DHCP_SEND_RELEASE) {
		int r = lease_send(l, a.send, a.unicast);
		if (r < 0)
			log_warning("%s: could not send DHCPRELEASE (%s); the server will expire the lease", l->key,
				    *l->last_error ? l->last_error : strerror(-r));
		else
			log_info("%s: released", l->key);
	}
	lease_free(l);
}

static void lease_on_packet(Lease *l) {
	uint8_t buf[2048];
	DhcpMessage *m;

	m = malloc(sizeof(*m));
	if (!m)
		return;
	/* Drain: several replies may be queued (offers from more than one server). Each one may
	 * free the lease, so stop as soon as the socket is no longer ours. */
	for (int i = 0; i < 16; i++) {
		struct sockaddr_ll from = {};
		union {
			struct cmsghdr hdr;
			uint8_t buf[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
		} control = {};
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = { .msg_name = &from,
				     .msg_namelen = sizeof(from),
				     .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = &control,
				     .msg_controllen = sizeof(control) };
		const uint8_t *payload;
		size_t plen;
		struct in_addr src;
		DhcpActions a;
		bool check_csum = true;
		ssize_t n;
		int fd = l->sock;

		if (fd < 0)
			break;
		n = recvmsg(fd, &mh, 0);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_debug_errno(-errno, "%s: recv: %m", l->key);
			break;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_PACKET && cm->cmsg_type == PACKET_AUXDATA) {
				struct tpacket_auxdata aux;
				memcpy(&aux, CMSG_DATA(cm), sizeof(aux));
				/* Checksum offload: only the pseudo-header sum is there yet. */
				if (aux.tp_status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID))
					check_csum = false;
			}
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (dhcp_frame_parse(buf, (size_t) n, check_csum, &payload, &plen, &src) < 0 ||
		    dhcp_message_parse(payload, plen, m) < 0) {
			log_debug("%s: dropped a malformed DHCP packet (%zd bytes)", l->key, n);
			continue;
		}
		if (dhcp_client_handle(&l->sm, &(DhcpEvent) { .type = DHCP_EVENT_PACKET, .msg = m, .src = src },
				       now_usec(), &a) < 0)
			continue;
		if (a.bound && from.sll_halen == 6) {
			memcpy(l->server_mac, from.sll_addr, 6);
			l->has_server_mac = true;
		}
		log_debug("%s: got %s -> %s", l->key, dhcp_message_type_to_string(m->type),
			  dhcp_state_to_string(l->sm.state));
		if (lease_apply(l, &a) || !a.need_socket)
			break;
	}
	free(m);
}

/* ---- requests ---- */

static const char *jstr(json_t *o, const char *k) {
	return json_string_value(json_object_get(o, k));
}

static int lease_new(Daemon *d, const char *key, json_t *req, Lease **ret) {
	Lease *l = calloc(1, sizeof(*l));
	json_t *e, *prl = json_object_get(req, "request"), *provide = json_object_get(req, "provide");
	size_t i, idlen = strlen(key);

	if (!l)
		return -ENOMEM;
	l->d = d;
	l->sock = -EBADF;
	l->key = strdup(key);
	l->container_id = strdup(jstr(req, "containerId") ?: "");
	l->network = strdup(jstr(req, "network") ?: "");
	l->ifname = strdup(jstr(req, "ifname") ?: "");
	l->netns = strdup(jstr(req, "netns") ?: "");
	l->opts = calloc(1 + json_array_size(provide), sizeof(DhcpRawOption));
	LIST_PREPEND(d->leases, l);
	if (!l->key || !l->container_id || !l->network || !l->ifname || !l->netns || !l->opts) {
		lease_free(l);
		return -ENOMEM;
	}
	/* Client identifier: type 0 + the key, as the reference. A "provide" of option 61 replaces
	 * it (the builder sends the first occurrence of a code; provided ones are appended after). */
	l->opts[0].code = DHCP_OPT_CLIENT_ID;
	l->opts[0].len = (uint8_t) (idlen + 1);
	memcpy(l->opts[0].data + 1, key, idlen);
	l->n_opts = 1;
	json_array_foreach(provide, i, e) {
		json_int_t code = json_integer_value(json_object_get(e, "code"));
		const char *v = jstr(e, "value");
		DhcpRawOption *o;

		if (code <= 0 || code >= 255 || code == DHCP_OPT_MESSAGE_TYPE || !v || strlen(v) > 255)
			continue;
		o = code == DHCP_OPT_CLIENT_ID ? &l->opts[0] : &l->opts[l->n_opts++];
		o->code = (uint8_t) code;
		o->len = (uint8_t) strlen(v);
		memcpy(o->data, v, o->len);
	}
	json_array_foreach(prl, i, e) {
		json_int_t code = json_integer_value(e);
		if (code > 0 && code < 255 && l->n_prl < sizeof(l->prl))
			l->prl[l->n_prl++] = (uint8_t) code;
	}
	*ret = l;
	return 0;
}

static void handle_add(Conn *c, json_t *req, const char *key) {
	Daemon *d = c->d;
	Lease *l = lease_find(d, key);
	uint8_t mac[6];
	int r;

	if (isempty(jstr(req, "netns")) || isempty(jstr(req, "ifname")))
		return conn_fail(c, CNI_ERR_INVALID_ENV, "add: \"netns\" and \"ifname\" are required");
	if (l) {
		/* The runtime retried ADD: the lease we hold is the answer (reference: Check + reuse). */
		if (l->sm.has_lease && l->sm.lease.has_mask)
			return conn_reply(c, lease_answer(l));
		if (l->waiter)
			return conn_fail(c, CNI_ERR_TRY_AGAIN_LATER, "an ADD for %s is already in progress", key);
		l->waiter = c;
		c->waiting = l;
		l->add_deadline = now_usec() + d->timeout;
		return;
	}
	r = lease_new(d, key, req, &l);
	if (r < 0)
		return conn_fail(c, CNI_ERR_INTERNAL, "out of memory");
	r = lease_open_socket(l, mac);
	if (r < 0) {
		conn_fail(c, CNI_ERR_INTERNAL, "%s", l->last_error);
		lease_free(l);
		return;
	}
	dhcp_client_init(&l->sm, mac, random_u32(), d->resend_max);
	l->waiter = c;
	c->waiting = l;
	l->add_deadline = now_usec() + d->timeout;
	log_info("%s: acquiring lease on %s in %s", key, l->ifname, l->netns);
	lease_event(l, &(DhcpEvent) { .type = DHCP_EVENT_START });
}

static void handle_request(Conn *c, json_t *req) {
	Daemon *d = c->d;
	const char *op = jstr(req, "op");
	_cleanup_free_ char *key = NULL;
	Lease *l;

	if (!op)
		return conn_fail(c, CNI_ERR_DECODE, "request has no \"op\"");
	if (streq(op, "status"))
		return conn_reply(c, json_pack("{s:b}", "ok", 1));
	if (streq(op, "gc")) {
		const char *net = jstr(req, "network") ?: "";
		json_t *valid = json_object_get(req, "valid"), *e;
		Lease *next;
		size_t i;

		for (l = d->leases; l; l = next) {
			bool keep = false;
			next = l->next;
			if (!streq(l->network, net) || l->waiter)
				continue;
			json_array_foreach(valid, i, e)
				if (streq_ptr(jstr(e, "containerId"), l->container_id) &&
				    streq_ptr(jstr(e, "ifname"), l->ifname))
					keep = true;
			if (!keep) {
				log_info("%s: not a valid attachment any more, releasing", l->key);
				lease_destroy_stop(l, true);
			}
		}
		return conn_reply(c, json_pack("{s:b}", "ok", 1));
	}

	key = dhcp_client_id(jstr(req, "containerId"), jstr(req, "network"), jstr(req, "ifname"));
	if (!key)
		return conn_fail(c, CNI_ERR_INTERNAL, "out of memory");
	if (streq(op, "add"))
		return handle_add(c, req, key);
	l = lease_find(d, key);
	if (streq(op, "del")) {
		if (l) {
			log_info("%s: releasing lease", key);
			lease_destroy_stop(l, true);
		}
		return conn_reply(c, json_pack("{s:b}", "ok", 1));
	}
	if (streq(op, "check")) {
		if (!l || !l->sm.has_lease)
			return conn_fail(c, CNI_ERR_INTERNAL, "no DHCP lease held for %s%s%s", key, l ? ": " : "",
					 l ? dhcp_state_to_string(l->sm.state) : "");
		return conn_reply(c, lease_answer(l));
	}
	conn_fail(c, CNI_ERR_DECODE, "unknown op \"%s\"", op);
}

static void conn_on_event(Conn *c, uint32_t events) {
	char *nl;

	if (c->done_reading) {
		/* Only HUP/ERR arrive now: the plugin went away. An ADD keeps acquiring; a retried
		 * ADD then gets the lease at once. */
		if (events & (EPOLLHUP | EPOLLERR))
			conn_free(c);
		return;
	}
	for (;;) {
		ssize_t n = recv(c->fd, c->buf + c->used, DHCP_PROTO_LINE_MAX - c->used, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			conn_free(c);
			return;
		}
		if (n == 0 || (c->used += (size_t) n) == DHCP_PROTO_LINE_MAX)
			break;
		if (memchr(c->buf + c->used - n, '\n', (size_t) n))
			break;
	}
	nl = memchr(c->buf, '\n', c->used);
	if (!nl) {
		if (c->used == 0) {
			conn_free(c);
			return;
		}
		if (c->used == DHCP_PROTO_LINE_MAX)
			return conn_fail(c, CNI_ERR_DECODE, "request too long");
	}
	c->buf[nl ? (size_t) (nl - c->buf) : c->used] = '\0';
	c->done_reading = true;
	/* Keep HUP/ERR only. */
	(void) event_source_set_io_events(c->src, 0);

	json_error_t jerr;
	json_t *req = json_loads(c->buf, 0, &jerr);
	if (!json_is_object(req)) {
		json_decref(req);
		return conn_fail(c, CNI_ERR_DECODE, "malformed request: %s", jerr.text);
	}
	handle_request(c, req);
	json_decref(req);
}

static void timer_rearm(Daemon *d);

static int conn_on_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
	Conn *c = userdata;
	Daemon *d = c->d;

	conn_on_event(c, revents);
	timer_rearm(d);
	return 0;
}

static int lease_on_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
	Lease *l = userdata;
	Daemon *d = l->d;

	if (revents & EPOLLIN)
		lease_on_packet(l);
	else if (revents & (EPOLLERR | EPOLLHUP)) {
		/* The link went away under an open socket. */
		log_info("%s: socket error on %s, closing it", l->key, l->ifname);
		lease_close_socket(l);
	}
	timer_rearm(d);
	return 0;
}

static int on_accept(EventSource *s, int listen_fd, uint32_t revents, void *userdata) {
	Daemon *d = userdata;

	for (;;) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		Conn *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warning_errno(-errno, "accept: %m");
			return 0;
		}
		c = calloc(1, sizeof(*c));
		if (c)
			c->buf = malloc(DHCP_PROTO_LINE_MAX + 1);
		if (!c || !c->buf) {
			free(c);
			close(fd);
			continue;
		}
		c->d = d;
		c->fd = fd;
		LIST_PREPEND(d->conns, c);
		if (event_loop_add_io(d->loop, fd, EPOLLIN | EPOLLRDHUP, conn_on_io, c, &c->src) < 0)
			conn_free(c);
	}
}

/* ---- timers ---- */

/* One timer for all leases, at the earliest deadline: a timerfd per lease would cost an fd per
 * attachment for its whole life. */
static void timer_rearm(Daemon *d) {
	uint64_t next = DHCP_NEVER;
	int r;

	for (Lease *l = d->leases; l; l = l->next) {
		next = MIN(next, l->sm.next_timeout);
		if (l->waiter)
			next = MIN(next, l->add_deadline);
	}
	r = next == DHCP_NEVER ? event_source_disarm(d->timer) : event_source_arm_at(d->timer, next);
	if (r < 0)
		log_warning_errno(r, "Failed to arm the lease timer: %m");
}

static int on_timer(EventSource *s, void *userdata) {
	Daemon *d = userdata;
	uint64_t now = now_usec();
	Lease *next;

	for (Lease *l = d->leases; l; l = next) {
		next = l->next;
		if (l->waiter && now >= l->add_deadline) {
			Conn *c = l->waiter;
			char ns[PATH_MAX];
			c->waiting = NULL;
			l->waiter = NULL;
			conn_fail(c, CNI_ERR_INTERNAL, "no DHCP lease for %s on %s in %s after %llus%s%s", l->key, l->ifname,
				  netns_path(l, ns, sizeof(ns)), (unsigned long long) (d->timeout / USEC_PER_SEC),
				  *l->last_error || l->last_note ? ": " : " (no answer from a DHCP server)",
				  *l->last_error ? l->last_error : l->last_note ?: "");
			/* Nothing was bound for this ADD (else it would have been answered): drop it. */
			if (!l->sm.has_lease) {
				lease_free(l);
				continue;
			}
		}
		if (l->sm.next_timeout <= now)
			lease_event(l, &(DhcpEvent) { .type = DHCP_EVENT_TIMEOUT });
	}
	timer_rearm(d);
	return 0;
}

static int on_signal(EventSource *s, int signo, void *userdata) {
	Daemon *d = userdata;

	log_info("signal %d, exiting (leases are not released)", signo);
	event_loop_exit(d->loop, 0);
	return 0;
}

/* ---- setup ---- */

/* Go's time.ParseDuration for the forms people write: "10s", "1m30s", "500ms", "2h". */
static int parse_duration(const char *s, uint64_t *ret) {
	uint64_t total = 0;

	if (isempty(s))
		return -EINVAL;
	if (streq(s, "0")) {
		*ret = 0;
		return 0;
	}
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		uint64_t unit;

		if (end == s || v < 0)
			return -EINVAL;
		s = end;
		if (startswith(s, "ms"))
			unit = 1000, s += 2;
		else if (startswith(s, "us"))
			unit = 1, s += 2;
		else if (*s == 's')
			unit = USEC_PER_SEC, s++;
		else if (*s == 'm')
			unit = 60 * USEC_PER_SEC, s++;
		else if (*s == 'h')
			unit = 3600 * USEC_PER_SEC, s++;
		else
			return -EINVAL;
		total += (uint64_t) (v * (double) unit);
	}
	*ret = total;
	return 0;
}

static int usage(void) {
	fprintf(stderr,
		"Usage: dhcp daemon [-socketpath PATH] [-pidfile PATH] [-hostprefix PREFIX] [-broadcast]\n"
		"                   [-timeout DURATION] [-resendmax DURATION]\n"
		"  -socketpath  unix socket to listen on (default %s)\n"
		"  -pidfile     write the daemon's PID to this absolute path\n"
		"  -hostprefix  prefix for netns paths (the daemon runs in a container with the host's / there)\n"
		"  -broadcast   set the BOOTP broadcast flag (ask servers to broadcast replies)\n"
		"  -timeout     how long an ADD waits for a lease (default 10s)\n"
		"  -resendmax   longest retransmission interval (default 62s)\n",
		DHCP_DEFAULT_SOCKET_PATH);
	return 2;
}

static int parse_args(Daemon *d, int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL, *eq;
		char name[32];

		if (a[0] != '-')
			return -EINVAL;
		a += a[1] == '-' ? 2 : 1; /* Go's flag package takes -x and --x */
		eq = strchr(a, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int) (eq - a) : (int) strlen(a), a);
		if (eq)
			v = eq + 1;
		if (streq(name, "broadcast")) {
			d->broadcast = !v || streq(v, "true") || streq(v, "1");
			continue;
		}
		if (streq(name, "help") || streq(name, "h"))
			return -EINVAL;
		if (!v) {
			if (i + 1 >= argc)
				return -EINVAL;
			v = argv[++i];
		}
		if (streq(name, "socketpath"))
			d->socket_path = strdup(v);
		else if (streq(name, "pidfile"))
			d->pidfile = strdup(v);
		else if (streq(name, "hostprefix"))
			d->hostprefix = strdup(v);
		else if (streq(name, "timeout")) {
			if (parse_duration(v, &d->timeout) < 0)
				return -EINVAL;
		} else if (streq(name, "resendmax")) {
			if (parse_duration(v, &d->resend_max) < 0)
				return -EINVAL;
		} else
			return -EINVAL;
	}
	return 0;
}

/* systemd socket activation (the reference supports it): LISTEN_FDS=1 for our PID. */
static int listen_fd_from_env(void) {
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	unsigned p, n;

	if (!pid || !fds || safe_atou32(pid, &p) < 0 || p != (unsigned) getpid() || safe_atou32(fds, &n) < 0)
		return -ENOENT;
	if (n != 1)
		return -E2BIG;
	(void) fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

static int open_listener(Daemon *d) {
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int fd = -EBADF;
	char *slash;
	int r;

	r = listen_fd_from_env();
	if (r >= 0 || r == -E2BIG)
		return r;
	if (strlen(d->socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, d->socket_path);
	dir = strdup(d->socket_path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		r = mkdir_p(dir, 0700);
		if (r < 0)
			return r;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		/* A stale socket from a daemon that died: take it over unless someone answers. */
		if (errno != EADDRINUSE)
			return negative_errno();
		_cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *) &sa, sizeof(sa)) == 0)
			return -EADDRINUSE;
		if (unlink(d->socket_path) < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
			return negative_errno();
	}
	d->unlink_socket = true;
	if (listen(fd, 128) < 0)
		return negative_errno();
	return TAKE_FD(fd);
}

static int setup(Daemon *d) {
	int r;

	r = event_loop_new(&d->loop);
	if (r < 0)
		return log_error_errno(r, "Failed to create the event loop: %m");
	r = open_listener(d);
	if (r < 0)
		return log_error_errno(r, "Failed to listen on %s: %m", d->socket_path);
	d->listen_fd = r;
	r = event_loop_add_io(d->loop, d->listen_fd, EPOLLIN, on_accept, d, NULL);
	if (r < 0)
		return log_error_errno(r, "Failed to watch the listening socket: %m");
	r = event_loop_add_timer(d->loop, on_timer, d, &d->timer);
	if (r < 0)
		return log_error_errno(r, "Failed to create the lease timer: %m");
	r = event_loop_add_signals(d->loop, (const int[]) { SIGTERM, SIGINT, 0 }, on_signal, d, NULL);
	if (r < 0)
		return log_error_errno(r, "Failed to set up signal handling: %m");
	signal(SIGPIPE, SIG_IGN);

	if (d->pidfile) {
		char pid[32];
		if (d->pidfile[0] != '/')
			return log_error_errno(-EINVAL, "Error writing pidfile \"%s\": path not absolute", d->pidfile);
		snprintf(pid, sizeof(pid), "%d", (int) getpid());
		r = write_file_atomic(d->pidfile, pid, strlen(pid), 0644);
		if (r < 0)
			return log_error_errno(r, "Error writing pidfile \"%s\": %m", d->pidfile);
	}
	return 0;
}

int dhcp_daemon_main(int argc, char **argv) {
	Daemon d = {
		.listen_fd = -EBADF,
		.timeout = 10 * USEC_PER_SEC,
		.resend_max = 62 * USEC_PER_SEC,
	};
	int r, rc = 0;

	log_set_prefix("dhcp daemon");
	log_set_max_level(LOG_INFO);
	log_parse_environment();
	if (parse_args(&d, argc, argv) < 0)
		return usage();
	if (!d.socket_path && !(d.socket_path = strdup(DHCP_DEFAULT_SOCKET_PATH)))
		return 1;
	if (d.hostprefix && !isempty(d.hostprefix)) {
		/* The socket lives under the host prefix too (reference: hostPrefix + socketPath). */
		char *p = strdup_printf("%s%s", d.hostprefix, d.socket_path);
		if (!p)
			return 1;
		free(d.socket_path);
		d.socket_path = p;
	}

	r = setup(&d);
	if (r < 0) {
		rc = 1;
		goto finish;
	}
	log_info("listening on %s", d.socket_path);

	r = event_loop_run(d.loop);
	if (r < 0) {
		rc = 1;
		log_error_errno(r, "epoll_wait: %m");
	}

finish:
	while (d.conns)
		conn_free(d.conns);
	while (d.leases)
		lease_free(d.leases);
	if (d.unlink_socket)
		(void) unlink(d.socket_path);
	if (d.pidfile && rc == 0)
		(void) unlink(d.pidfile);
	/* After the conns and leases: freeing them unhooks their sources from the loop. */
	d.loop = event_loop_free(d.loop);
	safe_close(d.listen_fd);
	free(d.socket_path);
	free(d.pidfile);
	free(d.hostprefix);
	return rc;
}
