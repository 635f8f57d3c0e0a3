/* SPDX-License-Identifier: Apache-2.0 */
/* What weftd writes on the node besides routes: the lease file the weft plugin reads, the CNI
 * conflist, the subnet remembered across restarts, and the node-* nftables chains. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/cni-conf.h"
#include "daemon/weftd.h"
#include "shared/lease/lease-file.h"

void manager_lease_path_init(Manager *m) {
	snprintf(m->lease_path, sizeof(m->lease_path), "%s/%s", m->args.run_dir, LEASE_FILE_NAME);
}

static int write_lease_file(Manager *m) {
	LeaseFile lf = { .mtu = m->backend.mtu, .ipmasq = false };
	int r;

	if (ip_addr_is_set(&m->backend.self.subnet.addr)) {
		lf.network = m->config->network;
		r = lease_subnet_gateway(&m->backend.self.subnet, &lf.subnet);
		if (r < 0)
			return r;
	}
	if (ip_addr_is_set(&m->backend.self.subnet6.addr)) {
		lf.network6 = m->config->network6;
		r = lease_subnet_gateway(&m->backend.self.subnet6, &lf.subnet6);
		if (r < 0)
			return r;
	}
	r = mkdir_p(m->args.run_dir, 0755);
	if (r < 0)
		return r;
	return lease_file_write(m->lease_path, &lf);
}

static int write_cni_conf(Manager *m) {
	CniConfParams p = {
		.run_dir = m->args.run_dir,
		.data_dir = m->args.ipam_data_dir,
		.portmap = cni_conf_have_plugin(m->args.cni_bin_dir, "portmap"),
	};

	return cni_conf_write(m->args.cni_conf_dir, &p);
}

/* Writes (or repairs) the lease file and the conflist. */
int manager_ensure_files(Manager *m, bool force) {
	int r, ret = 0;

	if (force || access(m->lease_path, F_OK) < 0) {
		r = write_lease_file(m);
		if (r < 0) {
			metrics_error(&m->metrics, METRICS_OP_LEASE_FILE);
			RET_GATHER(ret, log_error_errno(r, "Failed to write %s: %m", m->lease_path));
		} else
			log_info("Wrote %s", m->lease_path);
	}
	if (force || !cni_conf_present(m->args.cni_conf_dir)) {
		r = write_cni_conf(m);
		if (r < 0) {
			metrics_error(&m->metrics, METRICS_OP_CNI_CONF);
			RET_GATHER(ret, log_error_errno(r, "Failed to write %s/%s: %m", m->args.cni_conf_dir,
							CNI_CONF_FILE_NAME));
		} else
			log_info("Wrote %s/%s", m->args.cni_conf_dir, CNI_CONF_FILE_NAME);
	}
	return ret;
}

int manager_apply_masquerade(Manager *m) {
	int r = 0;

	if (!m->masq_sync)
		r = masquerade_sync_new(&m->masq, &m->masq_sync);
	if (r >= 0)
		r = nft_sync_run(m->masq_sync); /* logs nftables' text of a refused batch */
	if (r < 0) {
		metrics_error(&m->metrics, METRICS_OP_NFT);
		return log_error_errno(r, "Failed to install nftables chains: %m");
	}
	return 0;
}

/* Repairs the firewall if someone removed or flushed our chains. */
int manager_ensure_masquerade(Manager *m) {
	int r = masquerade_check(m->nft, &m->masq);

	if (r > 0)
		return 0;
	if (r < 0)
		log_warning_errno(r, "Failed to list our nftables chains: %m");
	else
		log_warning("nftables chains of weftd missing or altered: reinstalling");
	return manager_apply_masquerade(m);
}

int manager_state_read_subnet(Manager *m, IpPrefix *ret) {
	_cleanup_free_ char *path = strdup_printf("%s/%s", m->args.state_dir, STATE_SUBNET_FILE), *s = NULL;
	int r;

	if (!path)
		return -ENOMEM;
	r = read_full_file(path, &s, NULL);
	if (r < 0)
		return r;
	s[strcspn(s, "\n")] = 0;
	return ip_prefix_parse_network(s, ret);
}

int manager_state_write_subnet(Manager *m, const IpPrefix *p) {
	_cleanup_free_ char *path = strdup_printf("%s/%s", m->args.state_dir, STATE_SUBNET_FILE);
	char buf[IP_PREFIX_STRLEN + 1];
	int r;

	if (!path)
		return -ENOMEM;
	r = mkdir_p(m->args.state_dir, 0755);
	if (r < 0)
		return r;
	ip_prefix_to_string(p, buf);
	strcat(buf, "\n");
	return write_file_atomic(path, buf, strlen(buf), 0644);
}
