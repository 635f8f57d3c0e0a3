/* SPDX-License-Identifier: Apache-2.0 */
/* weftd's command line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "daemon/service-route.h"
#include "daemon/service/service-admission.h"
#include "daemon/weftd.h"

static const char *const objects_datastore_table[_OBJECTS_DATASTORE_MAX] = {
	[OBJECTS_DATASTORE_NONE] = "none",
	[OBJECTS_DATASTORE_ETCD] = "etcd",
	[OBJECTS_DATASTORE_KUBERNETES] = "kubernetes",
};

const char *objects_datastore_to_string(ObjectsDatastore o) {
	return (unsigned) o < _OBJECTS_DATASTORE_MAX ? objects_datastore_table[o] : NULL;
}

static int objects_datastore_from_string(const char *s, ObjectsDatastore *ret) {
	for (size_t i = 0; i < ELEMENTSOF(objects_datastore_table); i++)
		if (streq(s, objects_datastore_table[i])) {
			*ret = (ObjectsDatastore) i;
			return 0;
		}
	return -EINVAL;
}

/* "10", "10s", "500ms", "2m" -> microseconds */
static int parse_duration(const char *s, uint64_t *ret) {
	unsigned long long v;
	char num[32];
	size_t n = strspn(s, "0123456789");
	uint64_t mult = USEC_PER_SEC;

	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = 0;
	if (safe_atou64(num, &v) < 0)
		return -EINVAL;
	if (streq(s + n, "ms"))
		mult = USEC_PER_MSEC;
	else if (streq(s + n, "m"))
		mult = 60 * USEC_PER_SEC;
	else if (!streq(s + n, "") && !streq(s + n, "s"))
		return -EINVAL;
	*ret = v * mult;
	return 0;
}

static void help(void) {
	printf("Usage: weftd [OPTIONS]\n"
	       "       weftd uninstall [--cni-conf-dir DIR] [--run-dir DIR] [--state-dir DIR]\n\n"
	       "  --node-name NAME          this node (default: hostname)\n"
	       "  --public-ip ADDR          underlay address other nodes use\n"
	       "  --iface IFACE             take the underlay address from IFACE\n"
	       "  --datastore etcd|kubernetes  where leases live (default etcd); kubernetes: the node's\n"
	       "                            spec.podCIDRs, needs --net-config\n"
	       "  --objects-datastore none|etcd|kubernetes  where Pods, Namespaces, NetworkPolicies,\n"
	       "                            Services and EndpointSlices come from (default: kubernetes\n"
	       "                            with --datastore kubernetes, else none); etcd: <prefix>/objects/\n"
	       "  --kubeconfig PATH         kubernetes credentials, for either datastore (default: the\n"
	       "                            in-cluster service account)\n"
	       "  --etcd-endpoints URLS     http://host:2379[,...] (default http://127.0.0.1:2379)\n"
	       "  --etcd-prefix PREFIX      key prefix (default /weft/network)\n"
	       "  --etcd-timeout DURATION   give up start-up after this long (default 0 = never)\n"
	       "  --net-config FILE         network config (default: <prefix>/config in the store)\n"
	       "  --cni-conf-dir DIR        (default /etc/cni/net.d)\n"
	       "  --cni-bin-dir DIR         (default /opt/cni/bin; portmap is used if present there)\n"
	       "  --run-dir DIR             lease file directory (default /run/weft)\n"
	       "  --state-dir DIR           remembered subnet (default /var/lib/weft)\n"
	       "  --listen ADDR:PORT        /healthz and /metrics (default 127.0.0.1:9876)\n"
	       "  --resync-interval DUR     periodic full resync (default 10s)\n"
	       "  --relist-interval DUR     re-list the datastore on a resync this often, to repair\n"
	       "                            what the watch missed (default 60s, 0 = never)\n"
	       "  --lease-ttl SECONDS       datastore lease TTL (default 60)\n"
	       "  --keep-lease              do not release the lease on shutdown\n"
	       "  --rotate-key              wireguard: replace the node's key pair on start-up\n"
	       "  --policy-log-drops        report packets NetworkPolicy drops (at most 50/s per pod\n"
	       "                            class): read from nfnetlink_log group 30565, logged at\n"
	       "                            info and served at /policy/drops (`weft policy drops`);\n"
	       "                            without nfnetlink_log, to the kernel log (default off)\n"
	       "  --flow-log                log every new connection of pods and Services with its\n"
	       "                            pods, Service, endpoint and verdict, and its bytes when it\n"
	       "                            ends (conntrack events; turns --policy-log-drops on, sets\n"
	       "                            nf_conntrack_acct); served at /flows (`weft flows`)\n"
	       "                            (default off)\n"
	       "  --flow-log-rate N         at most N flow records a second, the rest counted as lost\n"
	       "                            (default 1000)\n"
	       "  --ipam-data-dir DIR       pod address store written into the conflist\n"
	       "                            (default: host-local's /var/lib/cni/networks)\n"
	       "  --service-cluster-ip-range CIDR[,CIDR6]  the Service ranges (as kube-apiserver's):\n"
	       "                            routes of ours so the node reaches ClusterIPs itself, from\n"
	       "                            its pod-network gateway address (default: none); a clusterIP\n"
	       "                            outside it is never programmed\n"
	       "  --service-external-ip-cidrs CIDR[,CIDR...]  where externalIPs and LoadBalancer ingress\n"
	       "                            IPs may be (default: nowhere, none is programmed); a node's\n"
	       "                            own address only if listed exactly (/32, /128)\n"
	       "  --service-node-port-range A-B  nodePorts (as kube-apiserver's; default 30000-32767)\n");
}

enum {
	ARG_NODE_NAME = 0x100,
	ARG_PUBLIC_IP,
	ARG_IFACE,
	ARG_ETCD_ENDPOINTS,
	ARG_ETCD_PREFIX,
	ARG_ETCD_TIMEOUT,
	ARG_NET_CONFIG,
	ARG_CNI_CONF_DIR,
	ARG_CNI_BIN_DIR,
	ARG_RUN_DIR,
	ARG_STATE_DIR,
	ARG_LISTEN,
	ARG_RESYNC,
	ARG_RELIST,
	ARG_LEASE_TTL,
	ARG_KEEP_LEASE,
	ARG_ROTATE_KEY,
	ARG_IPAM_DATA_DIR,
	ARG_DATASTORE,
	ARG_KUBECONFIG,
	ARG_OBJECTS_DATASTORE,
	ARG_POLICY_LOG_DROPS,
	ARG_FLOW_LOG,
	ARG_FLOW_LOG_RATE,
	ARG_SERVICE_CLUSTER_IP_RANGE,
	ARG_SERVICE_EXTERNAL_IP_CIDRS,
	ARG_SERVICE_NODE_PORT_RANGE,
};

int weftd_parse_args(int argc, char *argv[], Args *a) {
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "node-name", required_argument, NULL, ARG_NODE_NAME },
		{ "public-ip", required_argument, NULL, ARG_PUBLIC_IP },
		{ "iface", required_argument, NULL, ARG_IFACE },
		{ "etcd-endpoints", required_argument, NULL, ARG_ETCD_ENDPOINTS },
		{ "etcd-prefix", required_argument, NULL, ARG_ETCD_PREFIX },
		{ "etcd-timeout", required_argument, NULL, ARG_ETCD_TIMEOUT },
		{ "net-config", required_argument, NULL, ARG_NET_CONFIG },
		{ "cni-conf-dir", required_argument, NULL, ARG_CNI_CONF_DIR },
		{ "cni-bin-dir", required_argument, NULL, ARG_CNI_BIN_DIR },
		{ "run-dir", required_argument, NULL, ARG_RUN_DIR },
		{ "state-dir", required_argument, NULL, ARG_STATE_DIR },
		{ "listen", required_argument, NULL, ARG_LISTEN },
		{ "resync-interval", required_argument, NULL, ARG_RESYNC },
		{ "relist-interval", required_argument, NULL, ARG_RELIST },
		{ "lease-ttl", required_argument, NULL, ARG_LEASE_TTL },
		{ "keep-lease", no_argument, NULL, ARG_KEEP_LEASE },
		{ "rotate-key", no_argument, NULL, ARG_ROTATE_KEY },
		{ "ipam-data-dir", required_argument, NULL, ARG_IPAM_DATA_DIR },
		{ "datastore", required_argument, NULL, ARG_DATASTORE },
		{ "kubeconfig", required_argument, NULL, ARG_KUBECONFIG },
		{ "objects-datastore", required_argument, NULL, ARG_OBJECTS_DATASTORE },
		{ "policy-log-drops", no_argument, NULL, ARG_POLICY_LOG_DROPS },
		{ "flow-log", no_argument, NULL, ARG_FLOW_LOG },
		{ "flow-log-rate", required_argument, NULL, ARG_FLOW_LOG_RATE },
		{ "service-cluster-ip-range", required_argument, NULL, ARG_SERVICE_CLUSTER_IP_RANGE },
		{ "service-external-ip-cidrs", required_argument, NULL, ARG_SERVICE_EXTERNAL_IP_CIDRS },
		{ "service-node-port-range", required_argument, NULL, ARG_SERVICE_NODE_PORT_RANGE },
		{}
	};
	bool objects_given = false;
	int c;

	*a = (Args) {
		.datastore = DATASTORE_ETCD,
		.etcd_endpoints = "http://127.0.0.1:2379",
		.etcd_prefix = "/weft/network",
		.cni_conf_dir = "/etc/cni/net.d",
		.cni_bin_dir = "/opt/cni/bin",
		.run_dir = "/run/weft",
		.state_dir = "/var/lib/weft",
		.listen = "127.0.0.1:9876",
		.resync_usec = 10 * USEC_PER_SEC,
		.relist_usec = 60 * USEC_PER_SEC,
		.lease_ttl_sec = 60,
		.service_node_port_min = SERVICE_NODE_PORT_MIN,
		.service_node_port_max = SERVICE_NODE_PORT_MAX,
	};
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case 'h': help(); exit(EXIT_SUCCESS);
		case ARG_NODE_NAME: a->node_name = optarg; break;
		case ARG_PUBLIC_IP: a->public_ip = optarg; break;
		case ARG_IFACE: a->iface = optarg; break;
		case ARG_ETCD_ENDPOINTS: a->etcd_endpoints = optarg; break;
		case ARG_ETCD_PREFIX: a->etcd_prefix = optarg; break;
		case ARG_NET_CONFIG: a->net_config = optarg; break;
		case ARG_CNI_CONF_DIR: a->cni_conf_dir = optarg; break;
		case ARG_CNI_BIN_DIR: a->cni_bin_dir = optarg; break;
		case ARG_RUN_DIR: a->run_dir = optarg; break;
		case ARG_STATE_DIR: a->state_dir = optarg; break;
		case ARG_LISTEN: a->listen = optarg; break;
		case ARG_KEEP_LEASE: a->keep_lease = true; break;
		case ARG_ROTATE_KEY: a->rotate_key = true; break;
		case ARG_POLICY_LOG_DROPS: a->policy_log_drops = true; break;
		case ARG_FLOW_LOG: a->flow_log = true; break;
		case ARG_FLOW_LOG_RATE:
			if (safe_atou32(optarg, &a->flow_log_rate) < 0 || a->flow_log_rate == 0 ||
			    a->flow_log_rate > 1000000)
				return log_error_errno(EINVAL,
						       "Invalid --flow-log-rate '%s' (records a second, 1-1000000)",
						       optarg);
			break;
		case ARG_IPAM_DATA_DIR: a->ipam_data_dir = optarg; break;
		case ARG_KUBECONFIG: a->kubeconfig = optarg; break;
		case ARG_DATASTORE:
			if (datastore_kind_from_string(optarg, &a->datastore) < 0)
				return log_error_errno(EINVAL, "Invalid --datastore '%s' (etcd or kubernetes)", optarg);
			break;
		case ARG_OBJECTS_DATASTORE:
			if (objects_datastore_from_string(optarg, &a->objects_datastore) < 0)
				return log_error_errno(EINVAL,
						       "Invalid --objects-datastore '%s' (none, etcd or kubernetes)",
						       optarg);
			objects_given = true;
			break;
		case ARG_SERVICE_CLUSTER_IP_RANGE:
			if (service_ranges_parse(optarg, a->service_ranges, &a->n_service_ranges) < 0)
				return log_error_errno(EINVAL,
						       "Invalid --service-cluster-ip-range '%s' (CIDR or CIDR,CIDR6: "
						       "networks, at most one per family)",
						       optarg);
			break;
		case ARG_SERVICE_EXTERNAL_IP_CIDRS:
			free(a->service_external_ip_cidrs);
			a->service_external_ip_cidrs = NULL;
			a->n_service_external_ip_cidrs = 0;
			if (service_cidrs_parse(optarg, &a->service_external_ip_cidrs,
						&a->n_service_external_ip_cidrs) < 0)
				return log_error_errno(
						EINVAL,
						"Invalid --service-external-ip-cidrs '%s' (CIDR[,CIDR...]: networks, "
						"host bits zero)",
						optarg);
			break;
		case ARG_SERVICE_NODE_PORT_RANGE:
			if (service_node_port_range_parse(optarg, &a->service_node_port_min,
							  &a->service_node_port_max) < 0)
				return log_error_errno(
						EINVAL,
						"Invalid --service-node-port-range '%s' (A-B, 1 <= A <= B <= 65535)",
						optarg);
			break;
		case ARG_ETCD_TIMEOUT:
			if (parse_duration(optarg, &a->etcd_timeout_usec) < 0)
				return log_error_errno(EINVAL, "Invalid --etcd-timeout '%s'", optarg);
			break;
		case ARG_RESYNC:
			if (parse_duration(optarg, &a->resync_usec) < 0 || a->resync_usec == 0)
				return log_error_errno(EINVAL, "Invalid --resync-interval '%s'", optarg);
			break;
		case ARG_RELIST:
			if (parse_duration(optarg, &a->relist_usec) < 0)
				return log_error_errno(EINVAL, "Invalid --relist-interval '%s'", optarg);
			break;
		case ARG_LEASE_TTL:
			if (safe_atoi(optarg, &a->lease_ttl_sec) < 0 || a->lease_ttl_sec < 2)
				return log_error_errno(EINVAL, "Invalid --lease-ttl '%s' (seconds, at least 2)",
						       optarg);
			break;
		default: return -EINVAL;
		}
	}
	if (!objects_given)
		a->objects_datastore = a->datastore == DATASTORE_KUBERNETES ? OBJECTS_DATASTORE_KUBERNETES
									    : OBJECTS_DATASTORE_NONE;
	/* Leases in etcd with objects from Kubernetes is a Flannel-on-etcd cluster; the other way round
	 * (leases in Node objects, objects in etcd) has no cluster that would run it. */
	if (a->datastore == DATASTORE_KUBERNETES && a->objects_datastore == OBJECTS_DATASTORE_ETCD)
		return log_error_errno(EINVAL,
				       "--datastore kubernetes with --objects-datastore etcd is not supported "
				       "(supported: etcd+none, etcd+etcd, etcd+kubernetes, kubernetes+kubernetes, "
				       "kubernetes+none)");
	return 0;
}
