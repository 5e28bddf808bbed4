/*
 * libsdp's addresses: whatever family the program's socket has, libsdp
 * keeps an address as a struct sockaddr_in6, an IPv4 one IPv4-mapped
 * (::ffff:a.b.c.d). That is the form of RoCEv2's GIDs, so an address is
 * its AF_IB GID as it is (sdp_connect.c's sdp_sib), and one type carries
 * IPv4 and IPv6 through the rules, the Hello (A4.3.3 has 16 bytes for
 * either) and the names the program asks for. INADDR_ANY is kept as
 * ::ffff:0.0.0.0 (an AF_INET socket's) and :: as itself (an AF_INET6
 * one's): both are "any".
 */
#include "sdp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int sdp_addr_v4(const struct sockaddr_in6 *a) { return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr); }

int sdp_addr_any(const struct sockaddr_in6 *a)
{
	static const uint8_t v4any[16] = {[10] = 0xff, [11] = 0xff};

	return IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr) || !memcmp(&a->sin6_addr, v4any, 16);
}

struct sockaddr_in6 sdp_addr_of(const uint8_t ip[16], uint16_t port)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = port};

	memcpy(&a.sin6_addr, ip, 16);
	return a;
}

/* The address a program gave: AF_INET, AF_INET_SDP (as AF_INET) or
 * AF_INET6 (its scope and flow label dropped); -1 for another family. */
int sdp_addr_in(const struct sockaddr *a, socklen_t len, struct sockaddr_in6 *out)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)a;

	if (!a)
		return -1;
	if (a->sa_family == AF_INET6 && len >= sizeof(*out)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;

		*out = sdp_addr_of(s6->sin6_addr.s6_addr, s6->sin6_port);
		return 0;
	}
	if ((a->sa_family != AF_INET && a->sa_family != AF_INET_SDP) || len < sizeof(*sin))
		return -1;
	*out = (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_port = sin->sin_port};
	out->sin6_addr.s6_addr[10] = out->sin6_addr.s6_addr[11] = 0xff;
	memcpy(&out->sin6_addr.s6_addr[12], &sin->sin_addr, 4);
	return 0;
}

/* A as the program's socket names it: AF_INET6 (V6) as it is, AF_INET
 * from an IPv4-mapped address (an IPv6 one cannot reach an AF_INET
 * socket). Copied as getsockname(2) does: truncated to *LEN, *LEN the
 * whole size. */
int sdp_addr_out(const struct sockaddr_in6 *a, int v6, struct sockaddr *addr, socklen_t *len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = a->sin6_port};
	const void *src = a;
	socklen_t n = sizeof(*a);

	if (!addr || !len) {
		errno = EFAULT;
		return -1;
	}
	if (!v6) {
		memcpy(&sin.sin_addr, &a->sin6_addr.s6_addr[12], 4);
		src = &sin;
		n = sizeof(sin);
	}
	memcpy(addr, src, *len < n ? *len : n);
	*len = n;
	return 0;
}

/* "a.b.c.d:port" for an IPv4 address, "[v6]:port" for an IPv6 one */
void sdp_addr_str(const struct sockaddr_in6 *a, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN];

	if (sdp_addr_v4(a)) {
		inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], s, sizeof(s));
		snprintf(buf, len, "%s:%u", s, ntohs(a->sin6_port));
	} else {
		inet_ntop(AF_INET6, &a->sin6_addr, s, sizeof(s));
		snprintf(buf, len, "[%s]:%u", s, ntohs(a->sin6_port));
	}
}
