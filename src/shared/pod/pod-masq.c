/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "basic/log.h"
#include "shared/cni/cni-attachment.h"
#include "shared/nft/nft-bridge.h"
#include "shared/pod/pod-cni.h"
#include "shared/pod/pod-masq.h"

int pod_masq_add(CniRequest *req, NftCtx **nft, const CniResult *res) {
	char as[IP_PREFIX_STRLEN];
	int r;

	r = pod_nft_open(req, nft);
	if (r < 0)
		return r;
	for (size_t i = 0; i < res->n_ips; i++) {
		r = nft_bridge_masq_add(*nft, req->name, req->container_id, req->ifname, &res->ips[i].address);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set up ipMasq for %s",
					      ip_prefix_to_string(&res->ips[i].address, as));
	}
	return 0;
}

int pod_masq_del(CniRequest *req, NftCtx **nft) {
	int r;

	r = pod_nft_open(req, nft);
	if (r < 0)
		return r;
	r = nft_bridge_masq_del(*nft, req->name, req->container_id, req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to remove ipMasq elements");
	return 0;
}

void pod_masq_release(CniRequest *req, NftCtx **nft) {
	CniError saved = req->error;

	req->error = (CniError) {};
	if (pod_masq_del(req, nft) < 0)
		log_warning("rollback: %s", req->error.msg ?: "failed to remove ipMasq elements");
	cni_error_clear(&req->error);
	req->error = saved;
}

int pod_masq_gc(CniRequest *req, bool required) {
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	int r;

	r = nft_ctx_open(&nft);
	if (r >= 0)
		r = nft_bridge_masq_gc(nft, req->name, cni_attachment_is_valid_cb, req);
	if (r < 0 && required)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to garbage-collect nftables elements");
	if (r > 0)
		log_info("removed nftables elements of %d stale attachments", r);
	return 0;
}
