/*
 * The sending and receiving end of the fabric's direct paths (PROTOTYPE,
 * ib_direct.h): the segment the fabric names on the link (SOFL DIRECT;
 * a program has it from the daemon's struct sof_ib_port), mapped at the
 * first look; a packet whose route the fabric published leaves straight
 * for the host at its end (counted on the route for the fabric's port
 * counters), and a packet that comes from a host rather than from the
 * far end of the link is taken only when the fabric's route from that
 * host for each of its DLIDs ends here.
 */
#include "ib_direct.h"
#include "ibport.h"

#include "sof_bytes.h"
#include "sof_util.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct ib_direct_shm *dshm;
static char mapped_path[IB_SOFL_NAME_LEN + 1]; /* what dshm maps, "": nothing */
static uint32_t me_seq = 1;
static int me = -1;
static struct sockaddr_storage to[IB_DIRECT_HOSTS];
static socklen_t tolen[IB_DIRECT_HOSTS];

/* The segment the fabric named (its SOFL DIRECT, tp_ib_attr.direct),
 * mapped again when the name changed: a regular file under /dev/shm/,
 * no link followed, of the size and magic of ours. */
static bool map(void)
{
	const char *path = tp_ibp.attr.direct;
	struct stat st;
	void *p;
	int fd;

	if (!strcmp(path, mapped_path))
		return dshm != NULL;
	if (dshm)
		munmap(dshm, sizeof(*dshm));
	dshm = NULL;
	me_seq = 1;
	snprintf(mapped_path, sizeof(mapped_path), "%s", path);
	if (strncmp(path, "/dev/shm/", 9) || strchr(path + 9, '/'))
		return false;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(*dshm)) {
		close(fd);
		return false;
	}
	p = mmap(NULL, sizeof(*dshm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return false;
	dshm = p;
	if (dshm->magic != IB_DIRECT_MAGIC || dshm->version != IB_DIRECT_VERSION) {
		munmap(p, sizeof(*dshm));
		dshm = NULL;
		return false;
	}
	return true;
}

/* this port's index among the segment's hosts as of seq, or -1 */
static int my_index(uint32_t seq)
{
	if (seq == me_seq)
		return me;
	me = -1;
	for (unsigned k = 0; k < IB_DIRECT_HOSTS; k++)
		if (dshm->host[k].attached && tp_ibp.attr.port_guid &&
		    dshm->host[k].port_guid == tp_ibp.attr.port_guid)
			me = (int)k;
	me_seq = seq;
	return me;
}

/* whether the packet's P_Key (BTH, after the GRH when LNH says global)
 * is of a partition every enforcing port on route [m][dlid] takes; a
 * packet that is not an IBA transport one (LNH < 2) never goes straight */
static bool pkey_ok(unsigned m, uint16_t dlid, const uint8_t *p, size_t len)
{
	size_t at = IB_LRH_LEN + ((p[1] & 3) == 3 ? IB_GRH_LEN : 0);
	uint8_t n = dshm->npkeys[m][dlid];
	uint16_t pk;

	if ((p[1] & 3) < 2 || len < at + 4)
		return false;
	pk = sof_get16(p + at + 2) & 0x7fff;
	if (!pk)
		return false;
	if (n == IB_DIRECT_ANY_PKEY)
		return true;
	for (unsigned i = 0; i < n && i < IB_DIRECT_PKEYS; i++)
		if (dshm->pkeys[m][dlid][i] == pk)
			return true;
	return false;
}

unsigned tp_ib_direct_dest(const uint8_t *p, size_t len)
{
	uint16_t dlid;
	uint32_t seq;
	unsigned t;
	int m;
	size_t bth = IB_LRH_LEN;

	if (!map() || len < IB_LRH_LEN + IB_VCRC_LEN || (p[0] >> 4) == 15)
		return 0;
	/* RC and UC only (BTH OpCode service bits 000 and 001, IBA 9.2):
	 * UD (QP1's MADs among them) keeps the fabric's path, as a UD
	 * ping-pong went from ~1 ms to 15-47 ms a round trip straight (not
	 * understood yet) */
	if ((p[1] & 3) == 3)
		bth += IB_GRH_LEN;
	if ((p[1] & 3) < 2 || len < bth + 4 || (p[bth] >> 5) > 1)
		return 0;
	dlid = sof_get16(p + 2);
	if (!dlid || dlid >= IB_DIRECT_LIDS)
		return 0;
	seq = atomic_load_explicit(&dshm->seq, memory_order_acquire);
	if ((seq & 1) || atomic_load_explicit(&dshm->off, memory_order_acquire))
		return 0;
	m = my_index(seq);
	if (m < 0)
		return 0;
	t = dshm->route[m][dlid];
	if (!t || t > IB_DIRECT_HOSTS || !pkey_ok((unsigned)m, dlid, p, len))
		return 0;
	tolen[t - 1] = dshm->host[t - 1].addrlen;
	if (!tolen[t - 1] || tolen[t - 1] > sizeof(to[0]))
		return 0;
	memcpy(&to[t - 1], &dshm->host[t - 1].addr, tolen[t - 1]);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&dshm->seq, memory_order_relaxed) != seq)
		return 0;
	atomic_fetch_add_explicit(&dshm->cnt[m][dlid].pkts, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&dshm->cnt[m][dlid].words, (len - IB_VCRC_LEN) / 4,
				  memory_order_relaxed);
	return t;
}

const struct sockaddr_storage *tp_ib_direct_addr(unsigned dst, socklen_t *len)
{
	*len = tolen[dst - 1];
	return &to[dst - 1];
}

static bool same(const struct sockaddr_storage *a, const struct sockaddr_storage *b, socklen_t blen)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return blen >= sizeof(*y) && x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return blen >= sizeof(*y) && x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
	}
	return false;
}

bool tp_ib_direct_from(const struct sockaddr_storage *src, socklen_t srclen, const uint8_t *p,
		       size_t len, size_t seg)
{
	uint32_t seq;
	int m, k = -1;

	if (!map())
		return false;
	seq = atomic_load_explicit(&dshm->seq, memory_order_acquire);
	if (seq & 1)
		return false;
	m = my_index(seq);
	if (m < 0)
		return false;
	for (unsigned h = 0; h < IB_DIRECT_HOSTS && k < 0; h++) {
		struct sockaddr_storage a;

		if (!dshm->host[h].attached || dshm->host[h].addrlen > sizeof(a))
			continue;
		memcpy(&a, &dshm->host[h].addr, sizeof(a));
		if (same(&a, src, srclen))
			k = (int)h;
	}
	if (k < 0)
		return false;
	if (!seg || seg >= len)
		seg = len;
	/* every packet of a joined run on its own: its DLID's route from k
	 * ends here */
	for (size_t off = 0; off < len; off += seg) {
		uint16_t dlid;

		size_t l = len - off < seg ? len - off : seg;

		if (l < IB_LRH_LEN)
			return false;
		dlid = sof_get16(p + off + 2);
		if (dlid >= IB_DIRECT_LIDS || dshm->route[k][dlid] != (uint8_t)(m + 1) ||
		    !pkey_ok((unsigned)k, dlid, p + off, l))
			return false;
	}
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&dshm->seq, memory_order_relaxed) == seq;
}
