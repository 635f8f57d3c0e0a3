/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/string-util.h"
#include "cni/cni-attachment.h"

bool cni_attachment_is_valid(const CniRequest *req, const char *cid, const char *ifname) {
	for (size_t i = 0; i < req->n_valid_attachments; i++)
		if (streq(req->valid_attachments[i].container_id, cid) && streq(req->valid_attachments[i].ifname, ifname))
			return true;
	return false;
}

bool cni_attachment_is_valid_cb(const char *cid, const char *ifname, void *userdata) {
	return cni_attachment_is_valid(userdata, cid, ifname);
}
