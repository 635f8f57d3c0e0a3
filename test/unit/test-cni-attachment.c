/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attachment ids: how (network, container ID, ifname) is recorded in nftables element comments
 * (at most 128 characters) and how GC's valid-attachments list is matched against them, also
 * for container IDs of any length (the spec sets none; the reference accepts any). Pure, no
 * privileges.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "shared/cni/cni-attachment.h"
#include "shared/nft/nft-elem.h"

static void test_hash(void **state) {
	char h[CNI_ATTACHMENT_HASH_LEN + 1], h2[CNI_ATTACHMENT_HASH_LEN + 1];

	/* FNV-1a 64 of "" is the offset basis; of "a" a known value. */
	cni_attachment_hash("", h);
	assert_string_equal(h, "~cbf29ce484222325");
	cni_attachment_hash("a", h);
	assert_string_equal(h, "~af63dc4c8601ec8c");
	cni_attachment_hash("b", h2);
	assert_string_not_equal(h, h2);
	assert_int_equal(strlen(h), CNI_ATTACHMENT_HASH_LEN);
}

static void test_cid_matches(void **state) {
	char h[CNI_ATTACHMENT_HASH_LEN + 1];

	cni_attachment_hash("c1", h);
	assert_true(cni_attachment_cid_matches("c1", "c1"));
	assert_true(cni_attachment_cid_matches(h, "c1"));
	assert_false(cni_attachment_cid_matches(h, "c2"));
	assert_false(cni_attachment_cid_matches("c1", "c2"));
	/* Only the recorded side may be hashed. */
	assert_false(cni_attachment_cid_matches("c1", h));
	assert_false(cni_attachment_cid_matches(NULL, "c1"));
}

/* ids that fit keep the forms of earlier versions (elements written before still match on DEL);
 * a long network is hashed first, then a long container ID too; every form fits. */
static void test_id_forms(void **state) {
	char buf[NFT_COMMENT_MAX + 1], want[8192], hn[CNI_ATTACHMENT_HASH_LEN + 1], hc[CNI_ATTACHMENT_HASH_LEN + 1],
			net[101], cid[4097];

	memset(net, 'n', sizeof(net) - 1);
	net[sizeof(net) - 1] = 0;
	memset(cid, 'c', sizeof(cid) - 1);
	cid[sizeof(cid) - 1] = 0;
	cni_attachment_hash(net, hn);

	assert_int_equal(nft_attachment_id("net", "cid", "eth0", buf), 0);
	assert_string_equal(buf, "net/cid/eth0");

	/* 64-character ID, long network: network hashed, ID in full (as before). */
	cid[64] = 0;
	assert_int_equal(nft_attachment_id(net, cid, "eth0", buf), 0);
	snprintf(want, sizeof(want), "%s/%s/eth0", hn, cid);
	assert_string_equal(buf, want);

	/* 120 characters with a short network: this used to fail with -ENAMETOOLONG ("File name too
	 * long" for ADD of ipMasq/portmap/firewall, and DEL for ever). */
	cid[64] = 'c';
	for (size_t len = 105; len <= 4096; len = len < 130 ? len + 1 : len * 2) {
		char saved = cid[len];

		cid[len] = 0;
		assert_int_equal(nft_attachment_id("net1", cid, "eth0", buf), 0);
		assert_true(strlen(buf) <= NFT_COMMENT_MAX);
		if (strlen("net1/") + len + strlen("/eth0") > NFT_COMMENT_MAX) {
			char hn1[CNI_ATTACHMENT_HASH_LEN + 1];

			if (strlen(hn) + 1 + len + strlen("/eth0") > NFT_COMMENT_MAX) {
				cni_attachment_hash("net1", hn1);
				cni_attachment_hash(cid, hc);
				snprintf(want, sizeof(want), "%s/%s/eth0", hn1, hc);
				assert_string_equal(buf, want);
			}
		}
		/* The longest interface name too. */
		assert_int_equal(nft_attachment_id(net, cid, "abcdefghijklmno", buf), 0);
		cid[len] = saved;
	}

	/* Bad components are still refused. */
	assert_int_equal(nft_attachment_id("net", "c\"d", "eth0", buf), -EINVAL);
	assert_int_equal(nft_attachment_id("net", "cid", "a\\b", buf), -EINVAL);
}

/* GC's callback, given the container ID as parsed from a comment (plain or hashed). */
static void test_is_valid(void **state) {
	char cid[301], h[CNI_ATTACHMENT_HASH_LEN + 1];
	CniAttachment at[2] = {};
	CniRequest req = {};

	memset(cid, 'x', sizeof(cid) - 1);
	cid[sizeof(cid) - 1] = 0;
	at[0] = (CniAttachment) { .container_id = cid, .ifname = "eth0" };
	at[1] = (CniAttachment) { .container_id = "short", .ifname = "eth1" };
	req.valid_attachments = at;
	req.n_valid_attachments = 2;

	cni_attachment_hash(cid, h);
	assert_true(cni_attachment_is_valid_cb(h, "eth0", &req));
	assert_false(cni_attachment_is_valid_cb(h, "eth1", &req));
	assert_true(cni_attachment_is_valid_cb(cid, "eth0", &req));
	assert_true(cni_attachment_is_valid_cb("short", "eth1", &req));
	cni_attachment_hash("other", h);
	assert_false(cni_attachment_is_valid_cb(h, "eth0", &req));
	assert_false(cni_attachment_is_valid_cb("other", "eth0", &req));
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_cid_matches),
		cmocka_unit_test(test_id_forms),
		cmocka_unit_test(test_is_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
