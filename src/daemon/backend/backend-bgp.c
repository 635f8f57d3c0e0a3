/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bgp: Calico's pure layer 3. Every node announces its pod subnet over BGP and installs what it
 * learns; no encapsulation. The routing daemon is BIRD 2 (as in Calico), which weftd drives:
 *
 *   weftd   renders <run-dir>/bird.conf from the accepted leases (bird_conf_render()), and asks
 *           BIRD over its control socket <run-dir>/bird.ctl to "configure check" it, then to
 *           "configure" it; /metrics says whether BIRD answers and how many sessions are up.
 *   BIRD    runs next to weftd (a container of the DaemonSet, a process the test starts) with
 *           -c <run-dir>/bird.conf -s <run-dir>/bird.ctl, speaks BGP and writes the routes it
 *           learns into the kernel (protocol "bird"). weftd never edits those routes: the kernel
 *           protocol exports only BGP routes, and the reconciler only ever touches protocol 0xfc.
 *
 * weftd does not start BIRD: a supervisor restarting BIRD independently of weftd is what makes
 * graceful restart meaningful (either can restart while the other keeps the datapath), and a
 * BIRD that is down only delays the next configure, which every pass retries.
 *
 * The trust boundary is the import filter: a session per peer node (full mesh), and from that
 * peer exactly the subnet its accepted lease holds, with that peer as next hop. A prefix outside
 * the cluster network, one overlapping another node's subnet, or our own subnet never reaches
 * the kernel; the lease import filter (lease-filter.h) already decided which leases count.
 *
 * The control socket is spoken synchronously with a 2 s timeout: BIRD answers on a local unix
 * socket in milliseconds, and a configure happens only when the set of peers changes.
 * The pod subnets and the node mesh are IPv4 only for now (an IPv6 pod subnet would need an ipv6
 * channel and next hops). IPv6 LoadBalancer addresses go to the external peers as /128s over an
 * ipv6 channel of the IPv4 session, next hop the underlay's global IPv6 address (none: not at all).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/backend/backend-bgp.h"
#include "daemon/backend/backend.h"

/* ---- pure parts ---- */

static void proto_name(const IpAddr *ip, char buf[static 32]) {
	snprintf(buf, 32, "node_%u_%u_%u_%u", ip->bytes[0], ip->bytes[1], ip->bytes[2], ip->bytes[3]);
}

#define BIRD_LB_PROTO "protocol static weft_lb {\n"
#define BIRD_LB6_PROTO "protocol static weft_lb6 {\n"

/* The LoadBalancer addresses of one family this node announces (lb-announce.h): weft_lb (/32s) or
 * weft_lb6 (/128s), to the external peers only, never to the node mesh (every node reaches them
 * through its own Service rules). */
static void render_lb(FILE *f, int family, const IpAddr *addrs, size_t n) {
	char a[IP_ADDR_STRLEN];

	fputs(family == AF_INET ? BIRD_LB_PROTO "\tipv4;\n" : BIRD_LB6_PROTO "\tipv6;\n", f);
	for (size_t i = 0; i < n; i++)
		if (addrs[i].family == family)
			fprintf(f, "\troute %s/%u blackhole;\n", ip_addr_to_string(&addrs[i], a),
				family == AF_INET ? 32u : 128u);
	fputs("}\n", f);
}

int bird_conf_render(const BirdConfInput *in, char **ret) {
	char a[IP_ADDR_STRLEN], p[IP_PREFIX_STRLEN], name[32];
	_cleanup_free_ char *buf = NULL;
	bool v6 = ip_addr_is_set(&in->local_ip6);
	size_t size = 0;
	FILE *f;

	if (in->router_id.family != AF_INET || in->local_ip.family != AF_INET ||
	    (ip_addr_is_set(&in->local_ip6) && in->local_ip6.family != AF_INET6))
		return -EINVAL;
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f,
		"# Written by weftd from the cluster's leases; changes are overwritten.\n"
		"router id %s;\n\n"
		"protocol device {\n\tscan time 10;\n}\n\n"
		"# Only what BGP learned goes into the kernel (as protocol \"bird\"); nothing is read back.\n"
		"protocol kernel weft_kernel {\n"
		"\tipv4 {\n\t\timport none;\n\t\texport where source = RTS_BGP;\n\t};\n"
		"\tgraceful restart on;\n"
		"}\n\n"
		"# This node's pod subnet: announced, never installed by BIRD (the bridge holds it).\n"
		"protocol static weft_self {\n\tipv4;\n",
		ip_addr_to_string(&in->router_id, a));
	for (size_t i = 0; i < in->n_self; i++)
		if (in->self[i].addr.family == AF_INET)
			fprintf(f, "\troute %s blackhole;\n", ip_prefix_to_string(&in->self[i], p));
	fputs("}\n\n# LoadBalancer addresses: to the routers only, never installed.\n", f);
	render_lb(f, AF_INET, in->announce, in->n_announce);
	if (v6)
		render_lb(f, AF_INET6, in->announce, in->n_announce);

	for (size_t i = 0; i < in->n_peers; i++) {
		const BgpPeer *peer = &in->peers[i];
		bool first = true;

		if (peer->ip.family != AF_INET)
			continue;
		proto_name(&peer->ip, name);
		fprintf(f, "\nprotocol bgp %s {\n", name);
		fprintf(f, "\tlocal %s as %" PRIu32 ";\n", ip_addr_to_string(&in->local_ip, a), in->asn);
		fprintf(f, "\tneighbor %s as %" PRIu32 ";\n", ip_addr_to_string(&peer->ip, a), in->asn);
		/* connect retry 5 s: a peer whose BIRD starts later is picked up soon (default 120 s) */
		fprintf(f,
			"\t%s;\n\tconnect retry time 5;\n\tgraceful restart on;\n%s\tipv4 {\n\t\timport keep filtered on;\n",
			peer->multihop ? "multihop" : "direct", peer->rr_client ? "\trr client;\n" : "");
		for (size_t j = 0; j < peer->n_subnets; j++) {
			if (peer->subnets[j].addr.family != AF_INET)
				continue;
			fprintf(f, "%s%s", first ? "\t\timport filter {\n\t\t\tif (net = " : " || net = ",
				ip_prefix_to_string(&peer->subnets[j], p));
			first = false;
		}
		if (!first)
			fprintf(f, ") && bgp_next_hop = %s then accept;\n", ip_addr_to_string(&peer->ip, a));
		/* A reflector passes on other nodes' subnets: each only with its own node as next hop, so
		 * a reflector can neither hijack a subnet nor draw its traffic through itself. */
		for (size_t j = 0; peer->reflector && j < in->n_reflected; j++) {
			const BgpRoute *rt = &in->reflected[j];

			if (rt->net.addr.family != AF_INET || ip_addr_equal(&rt->next_hop, &peer->ip))
				continue;
			if (first)
				fputs("\t\timport filter {\n", f);
			first = false;
			fprintf(f, "\t\t\tif net = %s && bgp_next_hop = %s then accept;\n",
				ip_prefix_to_string(&rt->net, p), ip_addr_to_string(&rt->next_hop, a));
		}
		if (first)
			fputs("\t\timport none;\n", f);
		else
			fputs("\t\t\treject;\n\t\t};\n", f);
		/* A reflector passes what its node peers gave it, next hops kept (BIRD's iBGP default;
		 * our own blackhole has none, so it goes out with our address). */
		if (in->reflector)
			fputs("\t\texport where proto = \"weft_self\" || proto ~ \"node_*\";\n\t};\n}\n", f);
		else
			fputs("\t\texport where proto = \"weft_self\";\n\t\tnext hop self;\n\t};\n}\n", f);
	}

	for (size_t i = 0; i < in->n_external; i++) {
		const BgpExternalPeer *x = &in->external[i];

		if (x->ip.family != AF_INET)
			continue;
		snprintf(name, sizeof(name), "ext_%u_%u_%u_%u", x->ip.bytes[0], x->ip.bytes[1], x->ip.bytes[2],
			 x->ip.bytes[3]);
		fprintf(f, "\nprotocol bgp %s {\n", name);
		fprintf(f, "\tlocal %s as %" PRIu32 ";\n", ip_addr_to_string(&in->local_ip, a), in->asn);
		fprintf(f, "\tneighbor %s as %" PRIu32 ";\n", ip_addr_to_string(&x->ip, a), x->asn);
		fputs("\tconnect retry time 5;\n\tgraceful restart on;\n\tallow local as;\n"
		      "\tipv4 {\n\t\timport keep filtered on;\n",
		      f);
		if (in->n_external_accept == 0)
			fputs("\t\timport none;\n", f);
		else {
			fputs("\t\timport filter {\n\t\t\tif net ~ [ ", f);
			for (size_t j = 0; j < in->n_external_accept; j++)
				fprintf(f, "%s%s", j ? ", " : "", ip_prefix_to_string(&in->external_accept[j], p));
			fputs(" ] then accept;\n\t\t\treject;\n\t\t};\n", f);
		}
		fputs("\t\texport where proto = \"weft_self\" || proto = \"weft_lb\";\n\t\tnext hop self;\n\t};\n", f);
		/* MP-BGP over the IPv4 session: the /128s only, with our IPv6 address as next hop (the
		 * session's own address is IPv4); nothing IPv6 is taken in. */
		if (v6)
			fprintf(f,
				"\tipv6 {\n\t\timport none;\n\t\texport where proto = \"weft_lb6\";\n"
				"\t\tnext hop self;\n\t\tnext hop address %s;\n\t};\n",
				ip_addr_to_string(&in->local_ip6, a));
		fputs("}\n", f);
	}
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

/* conf with the static protocol starting with `head` (its line) rendered anew; -ENOENT without it */
static int replace_lb(const char *conf, const char *head, int family, const IpAddr *addrs, size_t n, char **ret) {
	const char *start = strstr(conf, head), *end;
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f;

	if (!start)
		return -ENOENT;
	end = strstr(start, "\n}\n");
	if (!end)
		return -EINVAL;
	end += 3;
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fwrite(conf, 1, (size_t) (start - conf), f);
	render_lb(f, family, addrs, n);
	fputs(end, f);
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int bird_conf_set_announced(const char *conf, const IpAddr *addrs, size_t n, char **ret) {
	_cleanup_free_ char *v4 = NULL, *v6 = NULL;
	int r;

	r = replace_lb(conf, BIRD_LB_PROTO, AF_INET, addrs, n, &v4);
	if (r < 0)
		return r == -ENOENT ? -EINVAL : r;
	r = replace_lb(v4, BIRD_LB6_PROTO, AF_INET6, addrs, n, &v6);
	if (r == -ENOENT) /* no IPv6 underlay address: IPv4 only */
		*ret = TAKE_PTR(v4);
	else if (r < 0)
		return r;
	else
		*ret = TAKE_PTR(v6);
	return 0;
}

int bird_conf_strip_self(const char *conf, char **ret) {
	_cleanup_free_ char *out = strdup(conf);
	const char *l = conf;
	char *o;
	bool in_self = false;

	if (!out)
		return -ENOMEM;
	o = out;
	while (*l) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t) (nl - l + 1) : strlen(l);

		if (startswith(l, "protocol static weft_self {"))
			in_self = true;
		else if (in_self && l[0] == '}')
			in_self = false;
		if (!(in_self && startswith(l, "\troute "))) {
			memcpy(o, l, len);
			o += len;
		}
		l += len;
	}
	*o = 0;
	*ret = TAKE_PTR(out);
	return 0;
}

int bird_reply_line(const char *line, int *ret_code, bool *ret_last, const char **ret_text) {
	if (line[0] == ' ') {
		*ret_code = 0;
		*ret_last = false;
		*ret_text = line + 1;
		return 0;
	}
	for (int i = 0; i < 4; i++)
		if (line[i] < '0' || line[i] > '9')
			return -EBADMSG;
	if (line[4] != ' ' && line[4] != '-')
		return -EBADMSG;
	*ret_code = (line[0] - '0') * 1000 + (line[1] - '0') * 100 + (line[2] - '0') * 10 + (line[3] - '0');
	*ret_last = line[4] == ' ';
	*ret_text = line + 5;
	return 0;
}

void bird_count_bgp(const char *reply, unsigned *ret_total, unsigned *ret_established) {
	unsigned total = 0, est = 0;

	for (const char *l = reply; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t) (nl - l) : strlen(l);
		char line[512], name[128], proto[32];

		snprintf(line, sizeof(line), "%.*s", (int) MIN(len, sizeof(line) - 1), l);
		/* "1002-node_10_99_0_12 BGP  ---  up  22:40:01.123  Established" (code stripped or not) */
		const char *s = line;
		if (strlen(s) > 5 && s[4] == '-' && s[0] >= '0' && s[0] <= '9')
			s += 5;
		if (sscanf(s, "%127s %31s", name, proto) == 2 && streq(proto, "BGP")) {
			total++;
			if (strstr(s, "Established"))
				est++;
		}
		l = nl ? nl + 1 : NULL;
	}
	*ret_total = total;
	*ret_established = est;
}

/* ---- BIRD's control socket ---- */

/* Sends one command and reads the reply to its last line. Returns the last line's code (BIRD:
 * 0xxx success, 8xxx/9xxx errors) and, if ret_text, the reply's lines; -errno on I/O errors. */
static int bird_command(const char *socket_path, const char *cmd, char **ret_text) {
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 2 };
	_cleanup_free_ char *text = NULL;
	char buf[4096], line[1024];
	size_t ll = 0, tl = 0;
	bool hello = true;
	int fd, code = -EIO;

	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		code = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0) {
			code = n < 0 ? -errno : -ECONNRESET;
			goto out;
		}
		for (ssize_t i = 0; i < n; i++) {
			int c;
			bool last;
			const char *t;

			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			if (bird_reply_line(line, &c, &last, &t) < 0)
				continue;
			if (!hello && ret_text) {
				char *nt = realloc(text, tl + strlen(line) + 2);
				if (!nt) {
					code = -ENOMEM;
					goto out;
				}
				text = nt;
				tl += (size_t) sprintf(text + tl, "%s\n", line);
			}
			if (!last)
				continue;
			if (hello) {
				/* "0001 BIRD 2.0.12 ready." */
				hello = false;
				if (dprintf(fd, "%s\n", cmd) < 0) {
					code = -errno;
					goto out;
				}
				continue;
			}
			code = c;
			if (ret_text)
				*ret_text = TAKE_PTR(text) ?: strdup("");
			goto out;
		}
	}
out:
	close(fd);
	return code;
}

/* ---- the backend ---- */

/* The kind's state (BackendOps.object_size). */
typedef struct BgpBackend {
	BgpPeer *pending; /* filled by render(), turned into bird.conf by commit() */
	size_t n_pending, alloc;
	char *applied; /* the config BIRD last accepted; NULL = none yet */
	bool logged_down;
	IpAddr *announce; /* LoadBalancer addresses (bgp_announce()) */
	size_t n_announce;
	bool have_external; /* the last commit had external peers */
	bool logged_no_ip6;
} BgpBackend;

static BgpBackend *bgp(const Backend *b) {
	return b->state;
}

static void bgp_done(Backend *b) {
	BgpBackend *s = bgp(b);

	s->pending = mfree(s->pending);
	s->n_pending = s->alloc = 0;
	s->applied = mfree(s->applied);
	s->announce = mfree(s->announce);
	s->n_announce = 0;
}

static void bgp_paths(const Backend *b, char conf[static 512], char sock[static 512]) {
	snprintf(conf, 512, "%s/%s", b->run_dir ?: "/run/weft", BIRD_CONF_NAME);
	snprintf(sock, 512, "%s/%s", b->run_dir ?: "/run/weft", BIRD_SOCKET_NAME);
}

static int bgp_ensure(Backend *b) {
	int r;

	r = backend_refresh_underlay(b);
	if (r < 0)
		return r;
	if (b->public_ip.family != AF_INET)
		return -EAFNOSUPPORT;
	b->mtu = b->config.mtu ?: b->underlay_mtu; /* no encapsulation */
	return 0;
}

static int bgp_render(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	BgpBackend *s = bgp(b);
	BgpPeer *p = NULL;

	if (remote->public_ip.family != AF_INET || !ip_addr_is_set(&remote->subnet.addr))
		return -EINVAL;
	/* two leases behind one IP (a node re-registered under another name): one session */
	for (size_t i = 0; i < s->n_pending; i++)
		if (ip_addr_equal(&s->pending[i].ip, &remote->public_ip))
			p = &s->pending[i];
	if (!p) {
		if (s->n_pending == s->alloc) {
			size_t na = s->alloc ? s->alloc * 2 : 16;
			BgpPeer *np = reallocarray(s->pending, na, sizeof(BgpPeer));
			if (!np)
				return -ENOMEM;
			s->pending = np;
			s->alloc = na;
		}
		p = &s->pending[s->n_pending++];
		*p = (BgpPeer) { .ip = remote->public_ip };
	}
	for (size_t i = 0; i < b->config.n_route_reflectors; i++)
		if (streq_ptr(remote->node_name, b->config.route_reflectors[i]))
			p->reflector = true;
	if (p->n_subnets < ELEMENTSOF(p->subnets))
		p->subnets[p->n_subnets++] = ip_prefix_mask(&remote->subnet);
	*ret = (NodeObjects) { .node_name = remote->node_name }; /* BIRD installs the routes */
	return 0;
}

/* IPv6 LoadBalancer addresses to announce with no global IPv6 address on the underlay to give as
 * their next hop: said once (until it changes), they stay unannounced. */
static void check_ip6(Backend *b) {
	BgpBackend *s = bgp(b);
	bool want = false;

	for (size_t i = 0; i < s->n_announce; i++)
		want = want || s->announce[i].family == AF_INET6;
	if (!want || !s->have_external || ip_addr_is_set(&b->public_ip6)) {
		s->logged_no_ip6 = false;
		return;
	}
	if (!s->logged_no_ip6)
		log_warning("bgp: no global IPv6 address on %s: IPv6 LoadBalancer addresses are not announced "
			    "(their next hop would be one)",
			    b->underlay_name);
	s->logged_no_ip6 = true;
}

static int peer_cmp(const void *x, const void *y) {
	return ip_addr_cmp(&((const BgpPeer *) x)->ip, &((const BgpPeer *) y)->ip);
}

static int write_atomic(const char *path, const char *text) {
	char tmp[600];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		int r = -errno;
		(void) unlink(tmp);
		return r;
	}
	return 0;
}

/* Writes conf as bird.conf and has BIRD check and apply it. 0 once applied, <0 otherwise (logged). */
static int bgp_apply(Backend *b, const char *conf) {
	BgpBackend *s = bgp(b);
	_cleanup_free_ char *reply = NULL;
	char conf_path[512], sock_path[512], cmd[600];
	int r;

	bgp_paths(b, conf_path, sock_path);
	(void) mkdir_p(b->run_dir ?: "/run/weft", 0755);
	r = write_atomic(conf_path, conf);
	if (r < 0) {
		log_error_errno(r, "bgp: failed to write %s: %m", conf_path);
		return r;
	}
	snprintf(cmd, sizeof(cmd), "configure check \"%s\"", conf_path);
	r = bird_command(sock_path, cmd, &reply);
	if (r < 0) {
		if (!s->logged_down)
			log_warning_errno(
					r,
					"bgp: BIRD is not answering on %s (%m); %s is written, retrying on every pass",
					sock_path, conf_path);
		s->logged_down = true;
		return r;
	}
	s->logged_down = false;
	if (r >= 8000) {
		log_error("bgp: BIRD refuses the rendered %s (code %d): %s", conf_path, r, reply ?: "");
		return -EINVAL;
	}
	reply = mfree(reply);
	snprintf(cmd, sizeof(cmd), "configure \"%s\"", conf_path);
	r = bird_command(sock_path, cmd, &reply);
	if (r < 0 || r >= 8000) {
		log_error("bgp: BIRD did not apply %s (%d): %s", conf_path, r, reply ?: "");
		return r < 0 ? r : -EIO;
	}
	return 0;
}

static void bgp_commit(Backend *b) {
	BgpBackend *s = bgp(b);
	_cleanup_free_ char *conf = NULL;
	_cleanup_free_ IpPrefix *accept = NULL;
	_cleanup_free_ BgpRoute *reflected = NULL;
	size_t n_reflected = 0;
	BgpExternalPeer ext[ELEMENTSOF(b->config.peers)];
	size_t n_accept = 0;
	BirdConfInput in = {
		.router_id = b->public_ip,
		.local_ip = b->public_ip,
		.asn = b->config.asn ?: BGP_DEFAULT_ASN,
	};
	int r;

	if (!b->have_lease)
		goto done;
	in.self[in.n_self++] = ip_prefix_mask(&b->self.subnet);
	if (s->n_pending > 1)
		qsort(s->pending, s->n_pending, sizeof(BgpPeer), peer_cmp);
	/* External peers on our own segment carry the routes of the nodes beyond it; the mesh then
	 * covers our segment only (a node there is one hop away, the router is not in the path).
	 * Without such a peer every node is meshed, across routers with multihop. */
	for (size_t i = 0; i < b->config.n_peers && in.n_external < ELEMENTSOF(ext); i++)
		if (backend_is_direct(b, &b->config.peers[i].ip))
			ext[in.n_external++] = (BgpExternalPeer) { .ip = b->config.peers[i].ip,
								   .asn = b->config.peers[i].asn };
	{
		size_t n = 0;
		for (size_t i = 0; i < s->n_pending; i++) {
			bool direct = backend_is_direct(b, &s->pending[i].ip);
			if (in.n_external > 0 && !direct) {
				for (size_t j = 0; j < s->pending[i].n_subnets; j++) {
					IpPrefix *np = reallocarray(accept, n_accept + 1, sizeof(IpPrefix));
					if (!np)
						goto done;
					accept = np;
					accept[n_accept++] = s->pending[i].subnets[j];
				}
				continue;
			}
			s->pending[i].multihop = !direct;
			s->pending[n++] = s->pending[i];
		}
		s->n_pending = n;
	}
	/* Route reflectors (Backend.RouteReflectors): a reflector peers with every node, reflecting
	 * to the others (its clients) and to the other reflectors; the rest peer only with reflectors
	 * and accept from them every node's subnet paired with that node as next hop. */
	if (b->config.n_route_reflectors > 0) {
		size_t n = 0;

		for (size_t i = 0; i < b->config.n_route_reflectors; i++)
			if (streq_ptr(b->node_name, b->config.route_reflectors[i]))
				in.reflector = true;
		for (size_t i = 0; i < s->n_pending; i++)
			for (size_t j = 0; j < s->pending[i].n_subnets; j++) {
				BgpRoute *np = reallocarray(reflected, n_reflected + 1, sizeof(BgpRoute));
				if (!np)
					goto done;
				reflected = np;
				reflected[n_reflected++] = (BgpRoute) { .net = s->pending[i].subnets[j],
									.next_hop = s->pending[i].ip };
			}
		for (size_t i = 0; i < s->n_pending; i++) {
			if (!in.reflector && !s->pending[i].reflector)
				continue;
			s->pending[i].rr_client = in.reflector && !s->pending[i].reflector;
			s->pending[n++] = s->pending[i];
		}
		s->n_pending = n;
		in.reflected = reflected;
		in.n_reflected = n_reflected;
	} else
		for (size_t i = 0; i < s->n_pending; i++)
			s->pending[i].reflector = s->pending[i].rr_client = false;
	in.peers = s->pending;
	in.n_peers = s->n_pending;
	in.external = ext;
	in.external_accept = accept;
	in.n_external_accept = n_accept;
	in.announce = s->announce;
	in.n_announce = s->n_announce;
	/* the IPv6 channel where it can be used: external peers, and a next hop to give them */
	if (in.n_external > 0)
		in.local_ip6 = b->public_ip6;
	s->have_external = in.n_external > 0;
	check_ip6(b);
	r = bird_conf_render(&in, &conf);
	if (r < 0) {
		log_error_errno(r, "bgp: failed to render bird.conf: %m");
		goto done;
	}
	if (s->applied && streq(s->applied, conf))
		goto done;

	if (bgp_apply(b, conf) < 0)
		goto done;
	log_info("bgp: BIRD configured with %zu node peers and %zu external peers", in.n_peers, in.n_external);
	free(s->applied);
	s->applied = TAKE_PTR(conf);
done:
	s->n_pending = 0;
}

/* The LoadBalancer addresses change: BIRD gets the config it has with only weft_lb's routes
 * replaced, at once (a configure that changes a static protocol alone keeps every session; BIRD
 * withdraws and announces the difference in milliseconds). Without a config yet (no lease), the
 * addresses wait for the first commit. */
static int bgp_announce(Backend *b, const IpAddr *addrs, size_t n) {
	BgpBackend *s = bgp(b);
	_cleanup_free_ char *conf = NULL;
	IpAddr *v = NULL;
	int r;

	if (n) {
		v = malloc(n * sizeof(IpAddr));
		if (!v)
			return -ENOMEM;
		memcpy(v, addrs, n * sizeof(IpAddr));
	}
	free(s->announce);
	s->announce = v;
	s->n_announce = n;
	check_ip6(b);
	if (!s->applied)
		return 0;
	r = bird_conf_set_announced(s->applied, addrs, n, &conf);
	if (r < 0)
		return r;
	if (streq(conf, s->applied))
		return 0;
	r = bgp_apply(b, conf);
	if (r < 0)
		return r;
	free(s->applied);
	s->applied = TAKE_PTR(conf);
	return 0;
}

/* Whether BIRD answers (1) or not (0), and how many of its BGP sessions are Established. */
static int bird_status(const Backend *b, unsigned *ret_total, unsigned *ret_established) {
	_cleanup_free_ char *reply = NULL;
	char conf_path[512], sock_path[512];
	int r;

	*ret_total = *ret_established = 0;
	bgp_paths(b, conf_path, sock_path);
	r = bird_command(sock_path, "show protocols", &reply);
	if (r < 0 || r >= 8000)
		return 0;
	bird_count_bgp(reply, ret_total, ret_established);
	return 1;
}

/* After the lease is released on shutdown: rewrites bird.conf without our subnet and has BIRD
 * apply it, so the subnet is withdrawn before weftd exits. */
static void bgp_withdraw(Backend *b) {
	BgpBackend *s = bgp(b);
	_cleanup_free_ char *conf = NULL;

	if (!s->applied)
		return;
	if (bird_conf_strip_self(s->applied, &conf) < 0)
		return;
	if (bgp_apply(b, conf) >= 0) {
		log_info("bgp: own subnet withdrawn (lease released)");
		free(s->applied);
		s->applied = TAKE_PTR(conf);
	}
}

/* /healthz?verbose: BIRD reported, never part of the verdict (weftd-status.c says why). */
static int bgp_probe(const Backend *b, BackendProbe *ret) {
	unsigned total, est;
	int up;

	up = bird_status(b, &total, &est);
	*ret = (BackendProbe) { .check = "bird", .ok = up > 0, .why = "not answering" };
	if (up > 0)
		snprintf(ret->detail, sizeof(ret->detail), "bgp sessions: %u of %u established", est, total);
	return 0;
}

/* weft_bird_up and weft_bgp_sessions for /metrics (asks BIRD). */
static void bgp_render_metrics(const Backend *b, FILE *f) {
	unsigned total, est;
	int up;

	up = bird_status(b, &total, &est);
	fprintf(f,
		"# HELP weft_bird_up Whether BIRD answers on its control socket.\n"
		"# TYPE weft_bird_up gauge\n"
		"weft_bird_up %d\n"
		"# HELP weft_bgp_sessions BGP sessions configured in BIRD, by state.\n"
		"# TYPE weft_bgp_sessions gauge\n"
		"weft_bgp_sessions{state=\"established\"} %u\n"
		"weft_bgp_sessions{state=\"down\"} %u\n",
		up, est, total - est);
}

const BackendOps backend_bgp_ops = {
	.name = "bgp",
	.object_size = sizeof(BgpBackend),
	.done = bgp_done,
	.ensure = bgp_ensure,
	.render = bgp_render,
	.commit = bgp_commit,
	.render_metrics = bgp_render_metrics,
	.probe = bgp_probe,
	.withdraw = bgp_withdraw,
	.announce = bgp_announce,
};
