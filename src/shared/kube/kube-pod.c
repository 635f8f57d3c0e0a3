/* SPDX-License-Identifier: Apache-2.0 */
/* Pod decoder: node, uid, phase, hostNetwork, pod IPs and container ports. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects-internal.h"
#include "shared/kube/kube-objects.h"

static int parse_uid(const char *s, uint8_t ret[16]) {
	/* 8-4-4-4-12 hex digits. */
	size_t k = 0;

	if (strlen(s) != 36)
		return -EINVAL;
	for (size_t i = 0; i < 36; i++) {
		int v;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		if (s[i] >= '0' && s[i] <= '9')
			v = s[i] - '0';
		else if (s[i] >= 'a' && s[i] <= 'f')
			v = s[i] - 'a' + 10;
		else if (s[i] >= 'A' && s[i] <= 'F')
			v = s[i] - 'A' + 10;
		else
			return -EINVAL;
		ret[k / 2] = (uint8_t) (k % 2 ? ret[k / 2] | v : v << 4);
		k++;
	}
	return 0;
}

static int parse_phase(const char *s, uint8_t *ret) {
	static const char *const names[] = { "Pending", "Running", "Succeeded", "Failed", "Unknown" };

	if (!s) {
		*ret = KUBE_POD_PENDING;
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(s, names[i])) {
			*ret = (uint8_t) i;
			return 0;
		}
	return -EINVAL;
}

void ko_ports_unref(KubeContainerPort *p, size_t n, StringPool *pool) {
	for (size_t i = 0; i < n; i++)
		string_pool_unref(pool, p[i].name);
}

int ko_pod_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(ko_meta_done) Meta m = {};
	/* On the stack for the usual few ports (see Meta.labels_buf). */
	KubeContainerPort ports_buf[8], *ports = ports_buf;
	_cleanup_free_ KubeContainerPort *ports_heap = NULL;
	size_t ports_cap = ELEMENTSOF(ports_buf);
	const json_t *spec = ko_jget(j, "spec"), *status = ko_jget(j, "status"), *ips, *containers, *c;
	const char *uid, *node, *phase_s, *pod_ip;
	IpAddr ip[2] = {};
	uint8_t uid_b[16] = {}, phase;
	size_t n_ips = 0, n_ports = 0, i, name_len, size;
	bool host_network;
	KubePod *p;
	char *b;
	int r;

	r = ko_meta_parse(j, true, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (ko_jstr(m.j, "uid", &uid) < 0 || (uid && parse_uid(uid, uid_b) < 0))
		return decode_error(err, "metadata.uid: not a UID");
	if (ko_jstr(spec, "nodeName", &node) < 0 || (node && !dns_subdomain_valid(node)))
		return decode_error(err, "spec.nodeName: not a valid node name");
	if (ko_jbool(spec, "hostNetwork", false, &host_network) < 0)
		return decode_error(err, "spec.hostNetwork: not a boolean");
	if (ko_jstr(status, "phase", &phase_s) < 0 || parse_phase(phase_s, &phase) < 0)
		return decode_error(err, "status.phase: not a pod phase");

	if (ko_jarr(status, "podIPs", &ips) < 0)
		return decode_error(err, "status.podIPs: not an array");
	if (ko_jlen(ips) > 2)
		return decode_error(err, "status.podIPs: more than one address per family");
	json_array_foreach(ips, i, c) {
		char path[32];

		ko_pathf(path, sizeof(path), "status.podIPs[%zu].ip", i);
		r = ko_parse_ip(ko_jget(c, "ip"), path, &ip[i], err);
		if (r < 0)
			return r;
		n_ips++;
	}
	if (n_ips == 2 && ip[0].family == ip[1].family)
		return decode_error(err, "status.podIPs: more than one address per family");
	if (n_ips == 0 && ko_jstr(status, "podIP", &pod_ip) == 0 && pod_ip) {
		if (ip_addr_parse(pod_ip, &ip[0]) < 0)
			return decode_error(err, "status.podIP: \"%.64s\" is not an IP address", pod_ip);
		n_ips = 1;
	}

	if (ko_jarr(spec, "containers", &containers) < 0)
		return decode_error(err, "spec.containers: not an array");
	json_array_foreach(containers, i, c) {
		const json_t *cp, *x;
		size_t k;

		if (ko_jarr(c, "ports", &cp) < 0)
			return decode_error(err, "spec.containers[%zu].ports: not an array", i);
		json_array_foreach(cp, k, x) {
			KubeContainerPort *nv, *e;
			const char *pname;
			long long port;
			char path[64];

			if (n_ports == UINT8_MAX)
				break; /* more ports than any policy needs named: keep the first 255 */
			ko_pathf(path, sizeof(path), "spec.containers[%zu].ports[%zu]", i, k);
			if (ko_jint(x, "containerPort", 1, 65535, 0, &port) < 0 || port == 0) {
				ko_ports_unref(ports, n_ports, pool);
				return decode_error(err, "%s.containerPort: missing or not a port", path);
			}
			if (ko_jstr(x, "name", &pname) < 0 || (pname && !ko_port_name_valid(pname))) {
				ko_ports_unref(ports, n_ports, pool);
				return decode_error(err, "%s.name: not a port name", path);
			}
			if (n_ports == ports_cap) {
				nv = reallocarray(ports_heap, ports_cap * 2, sizeof(KubeContainerPort));
				if (!nv) {
					ko_ports_unref(ports, n_ports, pool);
					return -ENOMEM;
				}
				if (!ports_heap)
					memcpy(nv, ports_buf, sizeof(ports_buf));
				ports_heap = ports = nv;
				ports_cap *= 2;
			}
			e = &ports[n_ports];
			*e = (KubeContainerPort) { .port = (uint16_t) port };
			r = ko_parse_protocol(x, path, &e->protocol, err);
			if (r >= 0 && pname) {
				e->name = string_pool_intern(pool, pname);
				if (!e->name)
					r = -ENOMEM;
			}
			if (r < 0) {
				ko_ports_unref(ports, n_ports, pool);
				return r;
			}
			n_ports++;
		}
	}

	/* Everything checked: lay the pod out in one block. Largest alignment first. */
	name_len = strlen(m.name) + 1;
	size = sizeof(KubePod) + n_ports * sizeof(KubeContainerPort) + n_ips * sizeof(IpAddr) + name_len;
	b = calloc(1, size);
	if (!b) {
		ko_ports_unref(ports, n_ports, pool);
		return -ENOMEM;
	}
	p = (KubePod *) b;
	b += sizeof(KubePod);
	p->meta = (KubeObject) {
		.kind = KUBE_KIND_POD,
		.flags = OBJECT_FLAG_BLOCK,
		.n_labels = (uint16_t) m.n_labels,
		.namespace = TAKE_PTR(m.namespace),
		.labels = TAKE_PTR(m.labels),
	};
	m.n_labels = 0; /* the references moved */
	m.interned = false;
	if (n_ports > 0) {
		p->ports = (KubeContainerPort *) b;
		memcpy(b, ports, n_ports * sizeof(KubeContainerPort));
		b += n_ports * sizeof(KubeContainerPort);
	}
	if (n_ips > 0) {
		p->ips = (IpAddr *) b;
		memcpy(b, ip, n_ips * sizeof(IpAddr));
		b += n_ips * sizeof(IpAddr);
	}
	memcpy(b, m.name, name_len);
	p->meta.name = b;
	p->node_name = node ? string_pool_intern(pool, node) : NULL;
	memcpy(p->uid, uid_b, sizeof(uid_b));
	p->phase = phase;
	p->host_network = host_network;
	p->n_ips = (uint8_t) n_ips;
	p->n_ports = (uint8_t) n_ports;
	if (node && !p->node_name) {
		kube_object_free(&p->meta, pool);
		return -ENOMEM;
	}
	*ret = &p->meta;
	return 0;
}

bool ko_pod_equal(const KubePod *a, const KubePod *b) {
	if (a->node_name != b->node_name || memcmp(a->uid, b->uid, 16) != 0 || a->phase != b->phase ||
	    a->host_network != b->host_network || a->n_ips != b->n_ips || a->n_ports != b->n_ports)
		return false;
	for (size_t i = 0; i < a->n_ports; i++)
		if (a->ports[i].name != b->ports[i].name || a->ports[i].port != b->ports[i].port ||
		    a->ports[i].protocol != b->ports[i].protocol)
			return false;
	return ko_ip_arrays_equal(a->ips, b->ips, a->n_ips);
}
