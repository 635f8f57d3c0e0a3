/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * CNI protocol types: versions, error codes, and the canonical (1.1.0-shaped) result model.
 * Results from any spec version are parsed into CniResult and serialised to any version;
 * conversion happens only at the edges (cni-result.c).
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "shared/ip/ip-addr.h"

typedef enum CniVersion {
	CNI_VERSION_0_1_0,
	CNI_VERSION_0_2_0,
	CNI_VERSION_0_3_0,
	CNI_VERSION_0_3_1,
	CNI_VERSION_0_4_0,
	CNI_VERSION_1_0_0,
	CNI_VERSION_1_1_0,
	_CNI_VERSION_MAX,
	_CNI_VERSION_INVALID = -EINVAL,
} CniVersion;

#define CNI_VERSION_LATEST CNI_VERSION_1_1_0

/* "0.3.1" -> CNI_VERSION_0_3_1; "" or NULL -> 0.1.0 (spec: absent cniVersion means 0.1.0);
 * unknown -> -EINVAL. */
CniVersion cni_version_from_string(const char *s);
const char *cni_version_to_string(CniVersion v);

/* Error codes from the spec (SPEC.md "Error codes"). 100+ are plugin-specific. */
enum {
	CNI_ERR_INCOMPATIBLE_VERSION = 1,
	CNI_ERR_UNSUPPORTED_FIELD = 2,
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_INVALID_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_INVALID_NETCONF = 7,
	CNI_ERR_TRY_AGAIN_LATER = 11,
	CNI_ERR_PLUGIN_NOT_AVAILABLE = 50,
	CNI_ERR_LIMITED_CONNECTIVITY = 51,
	CNI_ERR_INTERNAL = 999,
};

typedef struct CniError {
	unsigned code; /* 0 = unset */
	char *msg;
	char *details;
} CniError;

void cni_error_clear(CniError *e);
/* Sets code/msg (printf) unless already set (first error wins). Returns -EINVAL-ish `r` given. */
int cni_error_set(CniError *e, int r, unsigned code, const char *fmt, ...) _printf_(4, 5);
/* The one way to fail with what the kernel (or libc) said: cni_error_set() with the message
 * "<fmt's text>: <strerror(-r)>", followed by ": <extack>" when extack (the kernel's
 * extended-ACK text, nl_sock_extack()) is non-empty. extack NULL or "" = none. Returns r. */
int cni_error_set_errno(CniError *e, int r, unsigned code, const char *extack, const char *fmt, ...) _printf_(5, 6);
/* {"cniVersion","code","msg","details"} for printing. */
json_t *cni_error_to_json(const CniError *e, CniVersion v);
/* Parses an error object printed by another plugin. 0 or -EINVAL. */
int cni_error_from_json(json_t *j, CniError *ret);

typedef struct CniInterface {
	char *name;
	char *mac;         /* may be NULL */
	char *sandbox;     /* netns path for container interfaces; NULL for host interfaces */
	int mtu;           /* 1.1.0; 0 = absent */
	char *socket_path; /* 1.1.0 */
	char *pci_id;      /* 1.1.0 */
} CniInterface;

typedef struct CniIpConfig {
	IpPrefix address; /* host bits kept */
	IpAddr gateway;   /* AF_UNSPEC = absent */
	int interface;    /* index into interfaces[], -1 = absent */
} CniIpConfig;

typedef struct CniRoute {
	IpPrefix dst;
	IpAddr gw; /* AF_UNSPEC = absent */
	/* 1.1.0 optional fields; 0 = absent */
	int mtu, advmss, priority, table, scope;
	bool has_scope; /* scope 0 (universe) is a valid value */
} CniRoute;

typedef struct CniDns {
	char **nameservers; /* strv, may be NULL */
	char *domain;
	char **search;
	char **options;
} CniDns;

typedef struct CniResult {
	CniVersion version; /* version it was parsed from / will be printed as */
	CniInterface *interfaces;
	size_t n_interfaces;
	CniIpConfig *ips;
	size_t n_ips;
	CniRoute *routes;
	size_t n_routes;
	CniDns dns;
} CniResult;

CniResult *cni_result_new(CniVersion v);
CniResult *cni_result_free(CniResult *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(CniResult *, cni_result_free);
CniResult *cni_result_copy(const CniResult *r);

/* Builders. Return the index of the new element (>= 0) or -ENOMEM. Strings are copied. */
int cni_result_add_interface(CniResult *r, const char *name, const char *mac, const char *sandbox);
int cni_result_add_ip(CniResult *r, const IpPrefix *address, const IpAddr *gateway, int interface);
int cni_result_add_route(CniResult *r, const CniRoute *route);
/* Appends strv items to dns (dedup). */
int cni_dns_merge(CniDns *dst, const CniDns *src);
void cni_dns_done(CniDns *d);

/*
 * Parses a result printed by a plugin of version v (0.1.0/0.2.0 "ip4"/"ip6" form, 0.3.x+
 * "interfaces"/"ips" form). 0, or -EINVAL with *err filled (code CNI_ERR_DECODE) if err non-NULL.
 */
int cni_result_from_json(json_t *j, CniVersion v, CniResult **ret, CniError *err);
/*
 * Serialises to version v. To 0.1.0/0.2.0: first IPv4 and first IPv6 only (and their routes);
 * -EINVAL with err set if the result has no IP at all (nothing representable). 1.1.0-only fields
 * are dropped for older versions. Returns a new reference or NULL on error.
 */
json_t *cni_result_to_json(const CniResult *r, CniVersion v, CniError *err);

/* DNS object parse/print ("dns" key of config and result). */
int cni_dns_from_json(json_t *j, CniDns *ret);
json_t *cni_dns_to_json(const CniDns *d);
