/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * TUN devices (the udp backend's weft0, Flannel's flannel0). Not netlink: a TUN link is created by
 * opening /dev/net/tun and TUNSETIFF, and lives as long as the fd (no TUNSETPERSIST), so a crashed
 * weftd leaves no device and no routes behind. Everything else (address, MTU, up) goes through
 * rtnetlink as for any link.
 */

#include <stddef.h>

/*
 * ip tuntap add dev <name> mode tun   (without "persist": gone when the fd closes)
 *
 * Opens (creating if needed) the layer-3 TUN device `name` without the packet-information
 * header (IFF_NO_PI: every read and write is one bare IP packet), non-blocking and close-on-exec.
 * Returns the fd (the caller owns it) or -errno; -EBUSY if another process holds the device.
 */
int nl_tun_open(const char *name);

/* The IP version of a bare packet read from a TUN fd: 4, 6, or 0 if it is neither or too short
 * to hold the fixed header (20 resp. 40 bytes). */
int nl_tun_packet_version(const void *pkt, size_t len);
