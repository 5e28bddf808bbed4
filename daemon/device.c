/*
 * The device identity: name, GUIDs, attributes, and the GID table.
 *
 * Like Soft-RoCE, the node GUID is the EUI-64 made from the MAC address of
 * the first non-loopback interface (a random locally administered one when
 * the namespace has none), and the GID table lists the host's IP addresses
 * as RoCEv2 GIDs: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), IPv6 as is,
 * loopback included.
 */
#include "sofd.h"

#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#define SOFD_GID_TYPE_ROCE_V2 1

/* EUI-64 from a MAC (RFC 4291 appendix A): flip the universal/local bit and
 * insert ff:fe in the middle. Returned as the bytes in network order. */
static uint64_t mac_to_guid(const uint8_t mac[6])
{
	uint8_t b[8] = {(uint8_t)(mac[0] ^ 2), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
	uint64_t g;

	memcpy(&g, b, sizeof(g));
	return g;
}

static bool guid_from_interfaces(uint64_t *guid)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		const struct sockaddr_ll *ll;
		static const uint8_t zero[6];

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET)
			continue;
		if (i->ifa_flags & IFF_LOOPBACK)
			continue;
		ll = (const struct sockaddr_ll *)(const void *)i->ifa_addr;
		if (ll->sll_halen != 6 || !memcmp(ll->sll_addr, zero, 6))
			continue;
		*guid = mac_to_guid(ll->sll_addr);
		found = true;
	}
	freeifaddrs(ifa);
	return found;
}

void sofd_device_refresh_gids(void)
{
	struct sof_devinfo *d = &sofd.dev;
	struct ifaddrs *ifa, *i;
	uint32_t n = 0;

	if (getifaddrs(&ifa)) {
		d->num_gids = 0;
		return;
	}
	for (i = ifa; i && n < SOF_MAX_GIDS; i = i->ifa_next) {
		struct sof_gid_entry *e = &d->gids[n];

		if (!i->ifa_addr)
			continue;
		memset(e, 0, sizeof(*e));
		if (i->ifa_addr->sa_family == AF_INET) {
			const struct sockaddr_in *sin =
			    (const struct sockaddr_in *)(const void *)i->ifa_addr;

			e->gid[10] = 0xff;
			e->gid[11] = 0xff;
			memcpy(&e->gid[12], &sin->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			const struct sockaddr_in6 *sin6 =
			    (const struct sockaddr_in6 *)(const void *)i->ifa_addr;

			memcpy(e->gid, &sin6->sin6_addr, 16);
		} else {
			continue;
		}
		e->ifindex = if_nametoindex(i->ifa_name);
		e->type = SOFD_GID_TYPE_ROCE_V2;
		n++;
	}
	freeifaddrs(ifa);
	for (uint32_t k = n; k < SOF_MAX_GIDS; k++)
		memset(&d->gids[k], 0, sizeof(d->gids[k]));
	d->num_gids = n;
}

int sofd_device_init(void)
{
	struct sof_devinfo *d = &sofd.dev;
	uint64_t guid;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "sof0");
	if (!guid_from_interfaces(&guid)) {
		uint8_t mac[6];
		int err = sof_random(mac, sizeof(mac));

		if (err)
			return err;
		mac[0] = (uint8_t)((mac[0] & 0xfc) | 0x02); /* unicast, local */
		guid = mac_to_guid(mac);
	}
	d->node_guid = guid;
	d->sys_image_guid = guid;
	d->vendor_id = 0;
	d->vendor_part_id = 0;
	d->hw_ver = 0;
	snprintf(d->fw_ver, sizeof(d->fw_ver), "1.0.0");
	d->active_mtu = IBV_MTU_4096;
	d->port_state = IBV_PORT_ACTIVE;
	sofd_device_refresh_gids();
	return 0;
}
