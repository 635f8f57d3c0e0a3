/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"
#include "shared/netns/netns.h"

int cni_request_open_netns(CniRequest *req) {
	int fd;

	if (isempty(req->netns))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_NETNS is not set");
	fd = netns_open(req->netns);
	/* The runtime gave us a path that is not a namespace: an environment problem (code 4),
	 * not a plugin failure; the message names the variable and its value. */
	if (fd == -ENOENT)
		return cni_fail(req, fd, CNI_ERR_INVALID_ENV, "CNI_NETNS \"%s\" is invalid: no such file", req->netns);
	if (fd == -EINVAL)
		return cni_fail(req, fd, CNI_ERR_INVALID_ENV, "CNI_NETNS \"%s\" is invalid: not a network namespace",
				req->netns);
	if (fd < 0)
		return cni_fail_errno(req, fd, CNI_ERR_INTERNAL, NULL, "failed to open CNI_NETNS \"%s\"", req->netns);
	return fd;
}
