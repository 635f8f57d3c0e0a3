/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <net/if.h>
#include <linux/if_tun.h>

#include "shared/nl/nl-tun.h"

int nl_tun_open(const char *name) {
	struct ifreq ifr = {};
	int fd;

	if (!name || strlen(name) >= IFNAMSIZ || !*name)
		return -EINVAL;
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int nl_tun_packet_version(const void *pkt, size_t len) {
	const uint8_t *p = pkt;

	if (len < 1)
		return 0;
	switch (p[0] >> 4) {
	case 4:
		/* IHL counts 32-bit words; fewer than 5 is not a valid header */
		return len >= 20 && (p[0] & 0x0f) >= 5 ? 4 : 0;
	case 6: return len >= 40 ? 6 : 0;
	}
	return 0;
}
