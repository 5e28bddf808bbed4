/*
 * The GID table logic shared by the daemon (which keeps the table and
 * publishes it) and the libraries (which read it): stable indexes across
 * address changes, rtnetlink address messages, and the sequence lock of the
 * shared page. See sof_gid.h.
 */
#include "sof_gid.h"

#include <errno.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>

bool sof_gid_empty(const struct sof_gid_entry *e)
{
	static const uint8_t zero[16];

	return !memcmp(e->gid, zero, sizeof(zero));
}

void sof_gid_from_v4(uint8_t gid[16], const void *addr)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, addr, 4);
}

uint32_t sof_gid_table_len(const struct sof_gid_entry tab[SOF_MAX_GIDS])
{
	uint32_t n = SOF_MAX_GIDS;

	while (n && sof_gid_empty(&tab[n - 1]))
		n--;
	return n;
}

static bool same_entry(const struct sof_gid_entry *a, const struct sof_gid_entry *b)
{
	return !memcmp(a->gid, b->gid, sizeof(a->gid)) && a->ifindex == b->ifindex &&
	       a->type == b->type;
}

static int find_entry(const struct sof_gid_entry *tab, size_t n, const struct sof_gid_entry *e)
{
	for (size_t i = 0; i < n; i++)
		if (same_entry(&tab[i], e))
			return (int)i;
	return -1;
}

bool sof_gid_merge(struct sof_gid_entry tab[SOF_MAX_GIDS], const struct sof_gid_entry *want,
		   size_t n)
{
	bool changed = false;
	uint32_t free_at = 0;

	/* What went away leaves a hole: the indexes of the others hold. */
	for (uint32_t i = 0; i < SOF_MAX_GIDS; i++) {
		if (sof_gid_empty(&tab[i]) || find_entry(want, n, &tab[i]) >= 0)
			continue;
		memset(&tab[i], 0, sizeof(tab[i]));
		changed = true;
	}
	for (size_t j = 0; j < n; j++) {
		if (sof_gid_empty(&want[j]) || find_entry(tab, SOF_MAX_GIDS, &want[j]) >= 0)
			continue;
		while (free_at < SOF_MAX_GIDS && !sof_gid_empty(&tab[free_at]))
			free_at++;
		if (free_at == SOF_MAX_GIDS)
			break; /* full: the rest waits for a free entry */
		tab[free_at] = want[j];
		changed = true;
	}
	return changed;
}

int sof_gid_parse_ifaddr(const void *msg, size_t len, struct sof_gid_entry *e)
{
	const uint8_t *p = msg;
	const uint8_t *addr = NULL, *local = NULL;
	struct nlmsghdr nh;
	struct ifaddrmsg ifa;
	size_t off, end, alen;
	uint32_t flags;

	if (len < sizeof(nh))
		return -EINVAL;
	memcpy(&nh, p, sizeof(nh));
	if (nh.nlmsg_len < NLMSG_LENGTH(sizeof(ifa)) || nh.nlmsg_len > len)
		return -EINVAL;
	if (nh.nlmsg_type != RTM_NEWADDR && nh.nlmsg_type != RTM_DELADDR)
		return -EINVAL;
	memcpy(&ifa, p + NLMSG_HDRLEN, sizeof(ifa));
	if (ifa.ifa_family == AF_INET)
		alen = 4;
	else if (ifa.ifa_family == AF_INET6)
		alen = 16;
	else
		return 0;
	flags = ifa.ifa_flags;
	end = nh.nlmsg_len;
	off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifa));
	while (off + sizeof(struct rtattr) <= end) {
		struct rtattr rta;
		const uint8_t *data;
		size_t dlen;

		memcpy(&rta, p + off, sizeof(rta));
		if (rta.rta_len < sizeof(rta) || rta.rta_len > end - off)
			return -EINVAL;
		data = p + off + RTA_LENGTH(0);
		dlen = rta.rta_len - RTA_LENGTH(0);
		switch (rta.rta_type) {
		case IFA_ADDRESS:
		case IFA_LOCAL:
			if (dlen != alen)
				return -EINVAL;
			if (rta.rta_type == IFA_LOCAL)
				local = data;
			else
				addr = data;
			break;
		case IFA_FLAGS: /* all the flags; ifa_flags has only the low 8 */
			if (dlen != sizeof(flags))
				return -EINVAL;
			memcpy(&flags, data, sizeof(flags));
			break;
		default:
			break;
		}
		off += RTA_ALIGN(rta.rta_len);
	}
	/* IFA_LOCAL is the interface's own address when both are given (the
	 * other is the peer of a point-to-point link). */
	if (local)
		addr = local;
	if (!addr || ifa.ifa_index == 0)
		return -EINVAL;
	/* An IPv6 address is not usable until duplicate address detection
	 * succeeded (RFC 4862 5.4), unless it is optimistic (RFC 4429). */
	if (flags & IFA_F_DADFAILED)
		return 0;
	if ((flags & IFA_F_TENTATIVE) && !(flags & IFA_F_OPTIMISTIC))
		return 0;
	memset(e, 0, sizeof(*e));
	if (alen == 4)
		sof_gid_from_v4(e->gid, addr);
	else
		memcpy(e->gid, addr, 16);
	if (sof_gid_empty(e))
		return 0; /* the unspecified address names nothing */
	e->ifindex = ifa.ifa_index;
	e->type = SOF_GID_TYPE_ROCE_V2;
	return 1;
}

/* ---- the shared page ------------------------------------------------------------ */

void sof_gid_publish(struct sof_gid_shm *shm, const struct sof_gid_entry tab[SOF_MAX_GIDS])
{
	uint32_t s = atomic_load_explicit(&shm->seq, memory_order_relaxed);

	s |= 1; /* odd: readers wait */
	atomic_store_explicit(&shm->seq, s, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy(shm->gids, tab, sizeof(shm->gids));
	atomic_store_explicit(&shm->seq, s + 1, memory_order_release);
}

/* A write takes well under a microsecond; a writer that stays odd for
 * this many looks has died in the middle. */
#define READ_TRIES 200000

int sof_gid_read(const struct sof_gid_shm *shm, struct sof_gid_entry tab[SOF_MAX_GIDS],
		 uint32_t *seq)
{
	for (int tries = 0; tries < READ_TRIES; tries++) {
		uint32_t s1 = atomic_load_explicit(&shm->seq, memory_order_acquire), s2;

		if (s1 & 1) {
			if (tries > 100)
				sched_yield();
			continue;
		}
		memcpy(tab, (const void *)shm->gids, sizeof(shm->gids));
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&shm->seq, memory_order_relaxed);
		if (s1 != s2)
			continue;
		for (uint32_t i = 0; i < SOF_MAX_GIDS; i++) {
			struct sof_gid_entry *e = &tab[i];

			if (sof_gid_empty(e) || e->type > SOF_GID_TYPE_ROCE_V2)
				memset(e, 0, sizeof(*e));
		}
		if (seq)
			*seq = s1;
		return 0;
	}
	return -EIO;
}

void sof_ib_publish(struct sof_gid_shm *shm, const struct sof_ib_port *p)
{
	uint32_t s = atomic_load_explicit(&shm->seq, memory_order_relaxed);

	s |= 1;
	atomic_store_explicit(&shm->seq, s, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy(&shm->ib, p, sizeof(*p));
	atomic_store_explicit(&shm->seq, s + 1, memory_order_release);
}

int sof_ib_read(const struct sof_gid_shm *shm, struct sof_ib_port *p)
{
	for (int tries = 0; tries < READ_TRIES; tries++) {
		uint32_t s1 = atomic_load_explicit(&shm->seq, memory_order_acquire), s2;

		if (s1 & 1) {
			if (tries > 100)
				sched_yield();
			continue;
		}
		memcpy(p, (const void *)&shm->ib, sizeof(*p));
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&shm->seq, memory_order_relaxed);
		if (s1 != s2)
			continue;
		p->node_name[sizeof(p->node_name) - 1] = '\0';
		p->peer_name[sizeof(p->peer_name) - 1] = '\0';
		p->direct[sizeof(p->direct) - 1] = '\0';
		return 0;
	}
	return -EIO;
}
