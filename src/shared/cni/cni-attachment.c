/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdio.h>

#include "basic/string-util.h"
#include "shared/cni/cni-attachment.h"

void cni_attachment_hash(const char *s, char buf[static CNI_ATTACHMENT_HASH_LEN + 1]) {
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */

	for (const char *p = s; *p; p++)
		h = (h ^ (unsigned char) *p) * 0x100000001b3ULL;
	snprintf(buf, CNI_ATTACHMENT_HASH_LEN + 1, "~%016llx", (unsigned long long) h);
}

bool cni_attachment_cid_matches(const char *recorded, const char *cid) {
	char h[CNI_ATTACHMENT_HASH_LEN + 1];

	if (streq_ptr(recorded, cid))
		return true;
	if (!recorded || !cid || recorded[0] != '~')
		return false;
	cni_attachment_hash(cid, h);
	return streq(recorded, h);
}

bool cni_attachment_is_valid(const CniRequest *req, const char *cid, const char *ifname) {
	for (size_t i = 0; i < req->n_valid_attachments; i++)
		if (cni_attachment_cid_matches(cid, req->valid_attachments[i].container_id) &&
		    streq(req->valid_attachments[i].ifname, ifname))
			return true;
	return false;
}

bool cni_attachment_is_valid_cb(const char *cid, const char *ifname, void *userdata) {
	return cni_attachment_is_valid(userdata, cid, ifname);
}
