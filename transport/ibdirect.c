/*
 * The sending and receiving end of the fabric's direct paths (on by default,
 * ib_direct.h): the segment the fabric names on the link (SOFL DIRECT,
 * /proc/PID/fd/N; a program has it from the daemon's struct sof_ib_port),
 * mapped read-only once its seals are checked; an RC, UC or unicast UD
 * packet (not to QP0 or QP1) whose route the fabric published leaves
 * straight for the host at its end and is reported to the fabric (SOFL
 * COUNT) for its port counters; a datagram from such a host rather than
 * from the far end of the link is taken only when the fabric's route from
 * that host for each of its DLIDs ends here and its P_Key passes every
 * enforcing port on it.
 */
#include "ib_direct.h"
#include "ibport.h"

#include "sof_bytes.h"
#include "sof_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* pending counts are reported at least this often while packets go */
#define REPORT_NS 20000000ull
#define PENDING 8

static const struct ib_direct_shm *dshm;
static char mapped_path[IB_SOFL_NAME_LEN + 1]; /* what dshm maps, "": nothing */
/* the segment's hosts as of seq snap_seq (1: none yet), copied and
 * validated once a sequence number rather than once a packet: this
 * port's index (me, -1: none) and each host's link address (len 0: not
 * attached, or no address of ours) */
static uint32_t snap_seq = 1;
static int me = -1;
static struct {
	socklen_t len;
	struct sockaddr_storage a;
} hc[IB_DIRECT_HOSTS];
/* where a queued packet to host k goes (tp_ib_direct_addr): set from hc
 * when a packet is queued under a sequence number other than to_seq[k] */
static struct sockaddr_storage to[IB_DIRECT_HOSTS];
static socklen_t tolen[IB_DIRECT_HOSTS];
static uint32_t to_seq[IB_DIRECT_HOSTS];
static struct {
	uint16_t dlid;
	uint32_t pkts;
	uint64_t words;
} pend[PENDING];
static unsigned npend;
static uint64_t reported_ns;

/* every shared field is loaded once, relaxed, into our own memory */
#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* "/proc/" digits "/fd/" digits, as the fabric names its memfd */
static bool proc_fd_path(const char *p)
{
	size_t n;

	if (strncmp(p, "/proc/", 6))
		return false;
	n = strspn(p + 6, "0123456789");
	if (!n || strncmp(p + 6 + n, "/fd/", 4))
		return false;
	p += 6 + n + 4;
	n = strspn(p, "0123456789");
	return n && !p[n];
}

/* The segment the fabric named (its SOFL DIRECT, tp_ib_attr.direct),
 * mapped again when the name changed: a memfd of our size, sealed so
 * that no one but the fabric's own mapping writes it, mapped read-only,
 * of our magic and version. */
static const char *map_segment(const char *path)
{
	struct stat st;
	void *p;
	int fd, seals;

	if (!proc_fd_path(path))
		return "not a /proc/PID/fd/N name";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return strerror(errno);
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size != sizeof(*dshm) ||
	    seals < 0 || (seals & IB_DIRECT_SEALS) != IB_DIRECT_SEALS) {
		close(fd);
		return "not a sealed segment of our size";
	}
	p = mmap(NULL, sizeof(*dshm), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return strerror(errno);
	dshm = p;
	if (dshm->magic != IB_DIRECT_MAGIC || dshm->version != IB_DIRECT_VERSION) {
		munmap(p, sizeof(*dshm));
		dshm = NULL;
		return "not our magic and version";
	}
	return NULL;
}

static bool map(void)
{
	const char *path = tp_ibp.attr.direct, *why;

	if (!strcmp(path, mapped_path))
		return dshm != NULL;
	if (dshm)
		munmap((void *)dshm, sizeof(*dshm));
	dshm = NULL;
	snap_seq = 1;
	me = -1;
	memset(hc, 0, sizeof(hc));
	memset(to_seq, 0, sizeof(to_seq)); /* no seq is 0: it starts at 1 */
	snprintf(mapped_path, sizeof(mapped_path), "%s", path);
	if (!path[0])
		return false;
	why = map_segment(path);
	/* once a name: the fabric is told nothing (tp_ib_direct_mapped),
	 * so it sends nothing straight here, and what this host sends goes
	 * through the fabric */
	if (why)
		tp_log("ib: direct paths: %s: %s: through the fabric", path, why);
	return !why;
}

bool tp_ib_direct_mapped(void) { return map(); }

/* The hosts of the segment as of seq (even) into hc and me: loaded once
 * each, kept only when seq did not change meanwhile, then validated;
 * false (the last snapshot kept) when it changed. */
static bool snapshot(uint32_t seq)
{
	struct ib_direct_host h[IB_DIRECT_HOSTS];
	int m = -1;

	if (seq == snap_seq)
		return true;
	if (seq & 1)
		return false;
	for (unsigned k = 0; k < IB_DIRECT_HOSTS; k++) {
		h[k].attached = LD(dshm->host[k].attached);
		h[k].port_guid = LD(dshm->host[k].port_guid);
		h[k].addrlen = LD(dshm->host[k].addrlen);
		memcpy(&h[k].addr, (const void *)&dshm->host[k].addr, sizeof(h[k].addr));
	}
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&dshm->seq, memory_order_relaxed) != seq)
		return false;
	/* copied under an unchanged seq: only now validated and used */
	for (unsigned k = 0; k < IB_DIRECT_HOSTS; k++) {
		hc[k].len = 0;
		if (!h[k].attached)
			continue;
		if (tp_ibp.attr.port_guid && h[k].port_guid == tp_ibp.attr.port_guid)
			m = (int)k;
		if (h[k].addrlen && h[k].addrlen <= sizeof(h[k].addr) &&
		    (h[k].addr.ss_family == AF_INET || h[k].addr.ss_family == AF_INET6)) {
			memcpy(&hc[k].a, &h[k].addr, h[k].addrlen);
			hc[k].len = h[k].addrlen;
		}
	}
	me = m;
	snap_seq = seq;
	return true;
}

/* whether the packet's P_Key (BTH, after the GRH when LNH says global)
 * is of a partition every enforcing port on route [m][dlid] takes; a
 * packet that is not an IBA transport one (LNH < 2) never goes straight */
static bool pkey_ok(unsigned m, uint16_t dlid, const uint8_t *p, size_t len)
{
	size_t at = IB_LRH_LEN + ((p[1] & 3) == 3 ? IB_GRH_LEN : 0);
	uint8_t n = LD(dshm->npkeys[m][dlid]);
	uint16_t pk;

	if ((p[1] & 3) < 2 || len < at + 4)
		return false;
	pk = sof_get16(p + at + 2) & 0x7fff;
	if (!pk)
		return false;
	if (n == IB_DIRECT_ANY_PKEY)
		return true;
	for (unsigned i = 0; i < n && i < IB_DIRECT_PKEYS; i++)
		if (LD(dshm->pkeys[m][dlid][i]) == pk)
			return true;
	return false;
}

/* what was counted since the last COUNT, to the fabric (from the link's
 * address, which is how it knows whose counts they are) */
static void report(void)
{
	uint8_t b[IB_SOFL_LEN];
	struct ib_sofl m = {.type = IB_SOFL_COUNT, .phys_state = IB_PHYS_LINKUP};

	while (npend && tp_ibp.on && tp_ibp.cfg.peer_len) {
		unsigned n = npend < IB_DIRECT_COUNT_RECS ? npend : IB_DIRECT_COUNT_RECS;

		ib_sofl_write(b, &m);
		for (unsigned r = 0; r < n; r++) {
			uint8_t *q = b + 24 + 16 * r;

			npend--;
			sof_put16(q, pend[npend].dlid);
			sof_put32(q + 4, pend[npend].pkts);
			sof_put64(q + 8, pend[npend].words);
		}
		(void)sendto(tp_ibp.fd, b, sizeof(b), MSG_DONTWAIT,
			     (const struct sockaddr *)&tp_ibp.cfg.peer, tp_ibp.cfg.peer_len);
	}
	npend = 0;
	reported_ns = sof_now_ns();
}

void tp_ib_direct_report(bool now)
{
	if (npend && (now || sof_now_ns() - reported_ns >= REPORT_NS))
		report();
}

static void count(uint16_t dlid, size_t len)
{
	unsigned i = 0;

	while (i < npend && pend[i].dlid != dlid)
		i++;
	if (i == npend || pend[i].pkts == UINT32_MAX) {
		if (npend == PENDING)
			report();
		i = npend++;
		pend[i].dlid = dlid;
		pend[i].pkts = 0;
		pend[i].words = 0;
	}
	pend[i].pkts++;
	pend[i].words += (len - IB_VCRC_LEN) / 4;
}

/* Whether a packet of this BTH may go straight (IBA 9.2, the OpCode's
 * service bits): RC (000), UC (001) and UD (011) unicast, but no
 * management datagram: QP0's are SMPs on VL15 (the caller's check) and
 * QP1's (SA, CM, PMA: IBA 13.5.1) stay where the fabric's counters and
 * captures see them. Multicast never gets here (no route below DLID
 * IB_DIRECT_LIDS). The receiving HCA checks the P_Key (IBA 10.9.3) and a
 * UD packet's Q_Key (10.2.4.2) on either path. */
static bool direct_service(const uint8_t *bth)
{
	unsigned svc = bth[0] >> 5;

	if (svc == 3)
		return (sof_get32(bth + 4) & 0xffffff) > 1;
	return svc <= 1;
}

unsigned tp_ib_direct_dest(const uint8_t *p, size_t len)
{
	uint16_t dlid;
	uint32_t seq;
	unsigned t;
	size_t bth = IB_LRH_LEN;

	if (!map() || len < IB_LRH_LEN + IB_VCRC_LEN || (p[0] >> 4) == 15)
		return 0;
	if ((p[1] & 3) == 3)
		bth += IB_GRH_LEN;
	if ((p[1] & 3) < 2 || len < bth + 8 || !direct_service(p + bth))
		return 0;
	dlid = sof_get16(p + 2);
	if (!dlid || dlid >= IB_DIRECT_LIDS)
		return 0;
	seq = atomic_load_explicit(&dshm->seq, memory_order_acquire);
	if ((seq & 1) || atomic_load_explicit(&dshm->off, memory_order_acquire) || !snapshot(seq) ||
	    me < 0)
		return 0;
	t = LD(dshm->route[me][dlid]);
	if (!t || t > IB_DIRECT_HOSTS || !hc[t - 1].len || !pkey_ok((unsigned)me, dlid, p, len))
		return 0;
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&dshm->seq, memory_order_relaxed) != seq)
		return 0;
	if (to_seq[t - 1] != seq) {
		memcpy(&to[t - 1], &hc[t - 1].a, hc[t - 1].len);
		tolen[t - 1] = hc[t - 1].len;
		to_seq[t - 1] = seq;
	}
	count(dlid, len);
	return t;
}

const struct sockaddr_storage *tp_ib_direct_addr(unsigned dst, socklen_t *len)
{
	*len = tolen[dst - 1];
	return &to[dst - 1];
}

static bool same(const struct sockaddr_storage *a, socklen_t alen, const struct sockaddr_storage *b,
		 socklen_t blen)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return alen >= sizeof(*x) && blen >= sizeof(*y) && x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return alen >= sizeof(*x) && blen >= sizeof(*y) && x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
	}
	return false;
}

/* whether every packet of the datagram (a joined run: each on its own)
 * has a DLID whose route from host k ends at host m, and a P_Key that
 * passes that route's enforcing ports, all under an unchanged seq */
static bool on_route(const uint8_t *p, size_t len, size_t seg, unsigned k, unsigned m, uint32_t seq)
{
	if (!seg || seg >= len)
		seg = len;
	for (size_t off = 0; off < len; off += seg) {
		size_t l = len - off < seg ? len - off : seg;
		uint16_t dlid;

		if (l < IB_LRH_LEN + IB_VCRC_LEN)
			return false;
		dlid = sof_get16(p + off + 2);
		if (!dlid || dlid >= IB_DIRECT_LIDS ||
		    LD(dshm->route[k][dlid]) != (uint8_t)(m + 1) || !pkey_ok(k, dlid, p + off, l))
			return false;
	}
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&dshm->seq, memory_order_relaxed) == seq;
}

/* from this host's own address: what it sent itself straight (1), else
 * not a direct datagram (0: a program's multicast loop, the caller's) */
static int from_self(const uint8_t *p, size_t len, size_t seg, unsigned m, uint32_t seq)
{
	return on_route(p, len, seg, m, m, seq) ? 1 : 0;
}

int tp_ib_direct_from(const struct sockaddr_storage *src, socklen_t srclen, const uint8_t *p,
		      size_t len, size_t seg)
{
	uint32_t seq;
	bool now;
	int k = -1;

	if (!map())
		return 0;
	seq = atomic_load_explicit(&dshm->seq, memory_order_acquire);
	/* while seq changes: the hosts of the last snapshot */
	now = snapshot(seq);
	for (unsigned h = 0; h < IB_DIRECT_HOSTS && k < 0; h++)
		if (hc[h].len && same(&hc[h].a, hc[h].len, src, srclen))
			k = (int)h;
	if (k < 0)
		return 0; /* not a host's: the caller's checks as before */
	/* from a host: taken only on a route that ends here, else dropped */
	if (!now || me < 0)
		return -1;
	if (k == me)
		return from_self(p, len, seg, (unsigned)me, seq);
	return on_route(p, len, seg, (unsigned)k, (unsigned)me, seq) ? 1 : -1;
}
