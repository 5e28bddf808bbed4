/*
 * libFuzzer target: the daemon's takeover of a stalled program's RC
 * responder (transport/takeover.c tp_takeover_packet) and the program's
 * taking it back (tp_resp_shared_enter/leave), through the whole receive
 * path (tp_input: parse, ICRC, classifier), with a host of its own in
 * place of the daemon (the engine's ops table, transport/tp.h) and a port
 * that captures what is sent instead of putting it on a wire.
 *
 * The world: one RC QP, or UC when the input's first byte is odd (path
 * MTU 1024), connected to a peer on another host, its segment and the shared responder state (struct sof_resp_shm)
 * in this process, a read-write region and a read-only one, each exactly
 * as long as it is registered (so that ASan sees any access past it).
 * Each input starts from the same state: the owner has published its
 * state once. Commands (after that first byte) (the low three bits of a command byte select):
 *
 *   daemon   a packet, the owner stalled (its engine state out of reach,
 *            the host's takeover op answering): the daemon's path
 *   owner    a packet, the owner running again: it takes the daemon's
 *            state back first
 *   batch    the end of a receive batch (the owner's coalesced ACKs)
 *   poke     any value into a word of the shared responder state (the
 *            program may write anything there; the daemon trusts none
 *            of it), the lock word only free or held by the owner
 *   void     the owner modifies the QP (its published state is void)
 *   post     a receive WQE into the QP's ring, as ibv_post_recv writes it
 *            (SGEs with a region's key, or with none; or more SGEs than
 *            the ring's stride holds: malformed), wr_id the count of posts
 *
 * A packet's flags are fuzz_engine's: from the QP's peer (else a
 * stranger), with a correct ICRC, PSN relative to the expected PSN of
 * the side that runs (and VA to the region's iova), R_Key one of the
 * regions' (or two that name nothing). Checks after every command: the
 * read-only region is untouched; what the daemon sent goes to the peer's
 * QP and is an ACK, a READ response or an atomic ACK (for UC: nothing at
 * all); while the owner holds the lock the daemon writes and sends
 * nothing. And, until the input pokes the shared state and while the QP
 * is not in ERROR, of the receive WQEs: every completion in the receive
 * CQ is of a WQE posted, in the order they were posted, none twice, and
 * every WQE taken from the ring is completed but the one in hand.
 *
 * With SOF_FUZZ_TAKEOVER_SEEDS=DIR the target writes its seed corpus to
 * DIR (tests/fuzz/corpus_takeover/ is made so), checking that each seed
 * is executed or dropped as its name says (WRITEs, READs, atomics and
 * their duplicates; bad keys, ranges, lengths and PSNs; truncated
 * headers; the handover both ways), and exits.
 */
/* clang-format off */
/*
 * FUZZ_SOURCES: tests/fuzz/fuzz_takeover.c transport/tp.c transport/udp.c transport/recv.c transport/timer.c transport/qp.c transport/mr.c transport/requester.c transport/completer.c transport/responder.c transport/rwqe.c transport/takeover.c transport/resp_shared.c transport/sack.c transport/iblink.c transport/ibpkt.c transport/ibdirect.c transport/wire.c transport/icrc.c transport/ib_wire.c common/util.c common/cqring.c common/grh.c common/gid.c common/wr.c common/hmap.c
 * FUZZ_INCLUDES: transport common
 * FUZZ_SEEDS_ENV: SOF_FUZZ_TAKEOVER_SEEDS
 */
/* clang-format on */
#include "tport.h"

#include "sof_gid.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_takeover: " __VA_ARGS__);                                    \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

#define QPN 0x000011u
#define PEER_QPN 0x000022u
#define RQ_SIZE 16u
#define SQ_SIZE 16u
#define MAX_SGE 2u
#define MAX_INLINE 64u
#define CQ_SIZE 64u
#define EPSN 0xfffff0u /* the responder's first expected PSN: about to wrap */
#define SPSN 5000u
#define KEY_RW 0x1234u
#define KEY_RO 0x5678u
#define IOVA_RW 0x100000ull
#define IOVA_RO 0x200000ull
#define RW_LEN 16384u
#define RO_LEN 4096u

static const uint8_t local4[16] = {[10] = 0xff, 0xff, 10, 0, 0, 1};
static const uint8_t peer4[16] = {[10] = 0xff, 0xff, 10, 0, 0, 2};
static const uint8_t stranger4[16] = {[10] = 0xff, 0xff, 10, 0, 0, 66};

static struct {
	struct tp_qp qp;
	struct sof_tqp *t; /* the owner's engine state, while stalled */
	struct tp_cq scq, rcq;
	struct sof_qp_shm *qshm;
	struct sof_nsq_shm *nsq;
	struct sof_cq_shm *scq_shm, *rcq_shm;
	uint8_t *rw, *ro;
	bool stalled, uc, poked;
	uint64_t posted; /* receive WQEs */
	unsigned sent, bad_sent; /* by the daemon: all, not to the peer or of a wrong kind */
	uint8_t last_syndrome;	 /* of the last packet the daemon sent */
	uint64_t counters[SOF_CNT_NR], drops[SOF_DROP_NR];
} w;

/* ---- the host --------------------------------------------------------------------- */

static void host_log(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void host_log(const char *fmt, va_list ap)
{
	if (getenv("SOF_FUZZ_LOG")) {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

static struct tp_qp *host_qp_find(uint32_t qpn) { return qpn == QPN ? &w.qp : NULL; }

static uint8_t *host_mr_ptr(const struct tp_qp *qp, uint32_t key, uint64_t va, uint64_t len,
			    uint32_t need)
{
	uint32_t granted = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t iova = IOVA_RW, mlen = RW_LEN;
	uint8_t *mem = w.rw;

	(void)qp;
	need &= ~TP_MR_PROBE;
	if (key == KEY_RO) {
		granted = IBV_ACCESS_REMOTE_READ;
		iova = IOVA_RO;
		mlen = RO_LEN;
		mem = w.ro;
	} else if (key != KEY_RW) {
		return NULL;
	}
	if ((granted & need) != need || va < iova || len > mlen || va - iova > mlen - len)
		return NULL;
	return mem + (va - iova);
}

static void host_mr_done(const struct tp_qp *qp, uint8_t *p, uint64_t written)
{
	(void)qp;
	(void)p;
	(void)written;
}

static const struct sof_gid_entry *host_gid(uint32_t index)
{
	static struct sof_gid_entry g = {.ifindex = 1, .type = SOF_GID_TYPE_ROCE_V2};

	memcpy(g.gid, local4, 16);
	return index == 0 ? &g : NULL;
}

static bool host_gid_local(const uint8_t gid[16]) { return !memcmp(gid, local4, 16); }
static uint32_t host_active_mtu(void) { return IBV_MTU_1024; }
static void host_cq_kick(struct tp_cq *cq) { (void)cq; }
static void host_qp_error(struct tp_qp *qp, uint32_t event)
{
	(void)qp;
	(void)event;
}
static void host_srq_limit(struct tp_srq *srq) { (void)srq; }
static bool host_xrc_srq(struct tp_qp *qp, uint32_t srqn)
{
	(void)qp;
	(void)srqn;
	return false;
}

/* As the daemon's (daemon/tp_host.c): only while it reads the stalled
 * owner's sockets, and only from the QP's peer. */
static struct sof_resp_shm *host_takeover(const struct tp_qp *qp, const uint8_t src[16],
					  uint32_t *dqpn)
{
	if (!w.stalled || qp != &w.qp || memcmp(src, peer4, 16))
		return NULL;
	*dqpn = PEER_QPN;
	return &w.qshm->resp;
}

static const struct tp_host_ops host = {
    .log = host_log,
    .qp_find = host_qp_find,
    .mr_ptr = host_mr_ptr,
    .mr_done = host_mr_done,
    .gid = host_gid,
    .gid_local = host_gid_local,
    .active_mtu = host_active_mtu,
    .cq_kick = host_cq_kick,
    .qp_error = host_qp_error,
    .srq_limit = host_srq_limit,
    .xrc_srq = host_xrc_srq,
    .takeover = host_takeover,
};

/* ---- the port: every packet built and its payload read, then dropped ---------------- */

static int port_send(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen,
		     tp_gather_fn gather, void *arg, const struct iovec *ref, uint32_t nref)
{
	static uint8_t buf[8192];
	uint32_t op = h->opcode & ~ROCE_SVC_MASK, off = 0;

	(void)path;
	if (paylen > sizeof(buf))
		return -EMSGSIZE;
	if (ref) {
		/* by reference: read it all, so that ASan sees where from */
		for (uint32_t i = 0; i < nref; i++) {
			if (ref[i].iov_len > sizeof(buf) - off)
				FAIL("a reference longer than the packet");
			memcpy(buf + off, ref[i].iov_base, ref[i].iov_len);
			off += (uint32_t)ref[i].iov_len;
		}
	} else if (paylen && gather(arg, buf, paylen)) {
		return -EFAULT;
	}
	if (w.stalled) {
		w.sent++;
		w.last_syndrome = h->syndrome;
		if (w.uc || h->dqpn != PEER_QPN || (h->opcode & ROCE_SVC_MASK) != ROCE_SVC_RC ||
		    (op != ROCE_ACK && op != ROCE_ATOMIC_ACK && op != ROCE_READ_RESP_FIRST &&
		     op != ROCE_READ_RESP_MIDDLE && op != ROCE_READ_RESP_LAST &&
		     op != ROCE_READ_RESP_ONLY))
			w.bad_sent++;
	}
	return 0;
}

static void port_flush(void) {}

static uint16_t port_flow_port(bool v6, uint32_t sqpn, uint32_t dqpn)
{
	(void)v6;
	(void)sqpn;
	(void)dqpn;
	return 0xc000;
}

static const struct tp_port_ops port = {
    .name = "fuzz",
    .addr_len = 16,
    .max_payload = 4096,
    .send = port_send,
    .flush = port_flush,
    .flow_port = port_flow_port,
};

/* ---- the world -------------------------------------------------------------------- */

static void modify(uint32_t state, uint32_t mask)
{
	struct sof_modify_qp_req r = {
	    .qpn = QPN,
	    .state = state,
	    .dest_qpn = PEER_QPN,
	    .attr_mask = mask | IBV_QP_STATE,
	    .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	    .hop_limit = 64,
	    .path_mtu = IBV_MTU_1024,
	    .sq_psn = SPSN,
	    .rq_psn = EPSN,
	    .timeout = 14,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .min_rnr_timer = 1,
	    .max_rd_atomic = 4,
	    .max_dest_rd_atomic = 4,
	};
	bool net;

	memcpy(r.dgid, peer4, 16);
	if (tp_qp_modify(&w.qp, &r, &net))
		FAIL("modify to %u", state);
	atomic_store(&w.qshm->state, state);
	atomic_store(&w.qshm->access, r.access);
}

static void *zalloc(size_t len)
{
	void *p = aligned_alloc(SOF_CACHELINE, (len + SOF_CACHELINE - 1) & ~(size_t)63);

	if (!p)
		FAIL("out of memory");
	memset(p, 0, len);
	return p;
}

static void world_up(bool uc)
{
	size_t qlen = SOF_QP_RQ_OFF + (size_t)RQ_SIZE * SOF_RWQE_STRIDE(MAX_SGE);
	uint32_t stride = SOF_NWQE_STRIDE(MAX_SGE, MAX_INLINE);
	size_t cqlen = SOF_CQ_RING_OFF + CQ_SIZE * sizeof(struct sof_cqe);

	memset(&w, 0, sizeof(w));
	w.uc = uc;
	w.qshm = zalloc(qlen);
	w.nsq = zalloc(SOF_NSQ_SEG_LEN(SQ_SIZE, stride));
	w.scq_shm = zalloc(cqlen);
	w.rcq_shm = zalloc(cqlen);
	/* exactly as long as registered */
	w.rw = calloc(1, RW_LEN);
	w.ro = calloc(1, RO_LEN);
	if (!w.rw || !w.ro)
		FAIL("out of memory");
	atomic_store(&w.scq_shm->size, CQ_SIZE);
	atomic_store(&w.rcq_shm->size, CQ_SIZE);
	w.scq = (struct tp_cq){.shm = w.scq_shm, .evfd = -1};
	w.rcq = (struct tp_cq){.shm = w.rcq_shm, .evfd = -1};
	w.qp = (struct tp_qp){.qpn = QPN,
			      .type = uc ? IBV_QPT_UC : IBV_QPT_RC,
			      .shm = w.qshm,
			      .rq_size = RQ_SIZE,
			      .rq_max_sge = MAX_SGE,
			      .nsq = w.nsq,
			      .sq_size = SQ_SIZE,
			      .sq_max_sge = MAX_SGE,
			      .sq_max_inline = MAX_INLINE,
			      .sq_stride = stride,
			      .send_cq = &w.scq,
			      .recv_cq = &w.rcq,
			      .rshm = &w.qshm->resp};
	if (tp_start_unplugged(&host, w.counters, w.drops))
		FAIL("tp_start_unplugged");
	tp.port = &port;
	modify(IBV_QPS_INIT, IBV_QP_ACCESS_FLAGS);
	modify(IBV_QPS_RTR, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	modify(IBV_QPS_RTS, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC);
	if (!w.qp.t)
		FAIL("no engine state");
	/* the owner ran once: its state is published */
	tp_resp_shared_enter(w.qp.t);
	tp_resp_shared_leave(w.qp.t);
}

static void world_down(void)
{
	if (w.stalled) {
		w.qp.t = w.t;
		w.stalled = false;
	}
	tp_input_end();
	tp_qp_destroy(&w.qp);
	close(tp_timer_fd());
	free(w.qshm);
	free(w.nsq);
	free(w.scq_shm);
	free(w.rcq_shm);
	free(w.rw);
	free(w.ro);
}

/* The owner stops (its engine state out of reach) or runs again. */
static void stall(bool on)
{
	if (on == w.stalled)
		return;
	if (on) {
		tp_input_end(); /* what it owed went before it stopped */
		w.t = w.qp.t;
		w.qp.t = NULL;
	} else {
		w.qp.t = w.t;
	}
	w.stalled = on;
}

/* ---- the input -------------------------------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t get8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint32_t get16(struct in *in) { return get8(in) | (uint32_t)get8(in) << 8; }
static uint32_t get32(struct in *in) { return get16(in) | get16(in) << 16; }

enum { C_DAEMON, C_OWNER, C_BATCH, C_POKE, C_VOID, C_POST, C_NR };
enum {
	P_PEER = 0x10, /* from the QP's peer (else from a stranger) */
	P_ICRC = 0x20, /* append a correct ICRC */
	P_REL = 0x40,  /* PSN from the running side's expected PSN, VA from the iova */
	P_KEY = 0x80,  /* R_Key: a region's (low bits pick) or one that names nothing */
};
/* the packet length word: with this bit, a fill of (16 bits) & 0x1fff
 * bytes of one (8 bits) value follows the packet's bytes */
#define P_FILL 0x8000u

static uint32_t key_of(uint32_t k)
{
	static const uint32_t keys[] = {KEY_RW, KEY_RO, 0, 0xdeadbeef};

	return keys[k % 4];
}

static uint64_t iova_of(uint32_t k) { return k % 4 == 1 ? IOVA_RO : IOVA_RW; }

static void cmd_packet(uint8_t c, struct in *in)
{
	uint32_t len = get16(in), fill = 0, n, paylen;
	bool icrc = c & P_ICRC, daemon = (c & 7) == C_DAEMON;
	const uint8_t *payload;
	struct roce_addr a;
	struct roce_hdr h;
	uint8_t fillv = 0, *pkt;
	size_t total;

	if (len & P_FILL) {
		fill = get16(in) & 0x1fff;
		fillv = get8(in);
	}
	n = len & 0x7fff;
	if (n > in->n)
		n = (uint32_t)in->n;
	total = (size_t)n + fill + (icrc ? ROCE_ICRC_LEN : 0);
	pkt = malloc(total ? total : 1); /* exactly as long: ASan sees an overread */
	if (!pkt)
		return;
	memcpy(pkt, in->p, n);
	in->p += n;
	in->n -= n;
	memset(pkt + n, fillv, fill);
	if (icrc)
		memset(pkt + total - ROCE_ICRC_LEN, 0, ROCE_ICRC_LEN);
	memset(&a, 0, sizeof(a));
	memcpy(a.src, c & P_PEER ? peer4 : stranger4, 16);
	memcpy(a.dst, local4, 16);
	a.sport = 0xc123;
	a.dport = ROCE_UDP_PORT;

	stall(daemon);
	if (roce_parse(pkt, total, &h, &payload, &paylen) == ROCE_DROP_NONE) {
		h.dqpn = QPN;
		if (c & P_REL)
			h.psn = (h.psn + (daemon || w.qshm->resp.daemon_ran ? w.qshm->resp.epsn
									  : w.qp.t->epsn)) &
				ROCE_PSN_MASK;
		if ((roce_opinfo(h.opcode)->flags & (ROCE_F_RETH | ROCE_F_ATMETH)) &&
		    (c & P_KEY)) {
			uint32_t k = h.rkey;

			h.rkey = key_of(k);
			if (c & P_REL)
				h.va += iova_of(k);
		}
		roce_hdr_write(pkt, &h);
	}
	if (icrc)
		roce_icrc_append(&a, pkt, total - ROCE_ICRC_LEN);
	tp_input(pkt, total, &a);
	free(pkt);
}

/* A word of the shared responder state, any value; the lock only free or
 * the owner's (an owner that never lets go would stop the run a second). */
static void cmd_poke(struct in *in)
{
	uint32_t *words = (uint32_t *)(void *)&w.qshm->resp;
	uint32_t nw = sizeof(w.qshm->resp) / sizeof(uint32_t), i = get16(in) % nw, v = get32(in);

	if (i == 0)
		atomic_store(&w.qshm->resp.lock, v & 1 ? SOF_RESP_OWNER : SOF_RESP_FREE);
	else
		words[i] = v;
}

/* A receive WQE: its number of SGEs (MAX_SGE + 1: malformed), each a
 * key index, an offset from the region's iova and a length. */
static void cmd_post(struct in *in)
{
	uint32_t nsge = get8(in) % (MAX_SGE + 2), stride = SOF_RWQE_STRIDE(MAX_SGE);
	uint32_t head = atomic_load(&w.qshm->rq.head), tail = atomic_load(&w.qshm->rq.tail);
	struct sof_rwqe *q = (struct sof_rwqe *)(void *)((uint8_t *)w.qshm + SOF_QP_RQ_OFF +
						       (size_t)(tail & (RQ_SIZE - 1)) * stride);
	struct sof_sge sge[MAX_SGE + 1];

	for (uint32_t i = 0; i < nsge; i++) {
		uint32_t k = get8(in);

		sge[i].lkey = key_of(k);
		sge[i].addr = iova_of(k) + get16(in);
		sge[i].length = get16(in);
	}
	if (tail - head >= RQ_SIZE)
		return;
	q->wr_id = w.posted++;
	q->num_sge = nsge;
	q->rsvd = 0;
	/* the stride holds MAX_SGE: a malformed WQE's extra SGE is not
	 * written (the taker must not read it either) */
	memcpy(q->sge, sge, (nsge < MAX_SGE ? nsge : MAX_SGE) * sizeof(sge[0]));
	atomic_store_explicit(&w.qshm->rq.tail, tail + 1, memory_order_release);
}

/* The receive completions: of WQEs posted, in order, once; every WQE
 * taken from the ring completed but the one in hand. */
static void check_recv(void)
{
	const struct sof_cqe *ring =
	    (const struct sof_cqe *)(const void *)((const uint8_t *)w.rcq_shm + SOF_CQ_RING_OFF);
	uint32_t tail = atomic_load(&w.rcq_shm->tail) & ~SOF_CQ_TAIL_LOCK;
	uint32_t head = atomic_load(&w.qshm->rq.head);

	if (w.poked || atomic_load(&w.qshm->state) == IBV_QPS_ERR ||
	    atomic_load(&w.rcq_shm->overflow) || tail > CQ_SIZE)
		return;
	for (uint32_t i = 0; i < tail; i++) {
		if (atomic_load(&ring[i].seq) != i + 1)
			FAIL("receive completion %u not published", i);
		if (ring[i].wr_id >= w.posted || (i && ring[i].wr_id <= ring[i - 1].wr_id))
			FAIL("receive completion %u: wr_id %llu after %llu, %llu posted", i,
			     (unsigned long long)ring[i].wr_id,
			     (unsigned long long)(i ? ring[i - 1].wr_id : 0),
			     (unsigned long long)w.posted);
	}
	if (head < tail || head - tail > 1)
		FAIL("%u receive WQEs taken, %u completed", head, tail);
}

static uint8_t ro_zero[RO_LEN];
static uint8_t rw_before[RW_LEN];

static void run(const uint8_t *data, size_t size)
{
	struct in in = {data, size};

	while (in.n) {
		uint8_t c = get8(&in);
		bool held = false;
		unsigned sent = w.sent;

		switch ((c & 7) % C_NR) {
		case C_DAEMON:
			held = atomic_load(&w.qshm->resp.lock) == SOF_RESP_OWNER;
			if (held)
				memcpy(rw_before, w.rw, RW_LEN);
			cmd_packet(C_DAEMON | (c & 0xf0), &in);
			if (held && (w.sent != sent || memcmp(rw_before, w.rw, RW_LEN)))
				FAIL("the daemon ran while the owner held the lock");
			break;
		case C_OWNER:
			/* an owner that died holding the lock is taken to be
			 * gone; one alive holds it only inside a packet */
			if (atomic_load(&w.qshm->resp.lock) == SOF_RESP_DAEMON)
				atomic_store(&w.qshm->resp.lock, SOF_RESP_FREE);
			cmd_packet(C_OWNER | (c & 0xf0), &in);
			break;
		case C_BATCH:
			if (!w.stalled)
				tp_input_end();
			break;
		case C_POKE:
			w.poked = true;
			cmd_poke(&in);
			break;
		case C_POST:
			cmd_post(&in);
			break;
		case C_VOID:
			stall(false);
			tp_resp_shared_void(&w.qp);
			break;
		}
		if (memcmp(w.ro, ro_zero, RO_LEN))
			FAIL("the read-only region was written");
		if (w.bad_sent)
			FAIL("the daemon sent a packet that is not an answer to the peer");
		check_recv();
	}
}

/* ---- the seed corpus ---------------------------------------------------------------- */

struct out {
	uint8_t b[8192];
	size_t n;
};

static void put8(struct out *o, uint32_t v)
{
	if (o->n < sizeof(o->b))
		o->b[o->n++] = (uint8_t)v;
}

static void put16(struct out *o, uint32_t v)
{
	put8(o, v);
	put8(o, v >> 8);
}

#define STD (P_PEER | P_ICRC | P_REL | P_KEY)

/* A packet command to side cmd with flags: header h (PSN, VA and key
 * relative with STD), paylen bytes of value fill, padded; or, cut bytes
 * cut off the header's end, without payload or ICRC. */
static void seed_pkt_cut(struct out *o, uint8_t cmd, uint8_t flags, struct roce_hdr *h,
			 uint32_t paylen, uint8_t fill, uint32_t cut)
{
	uint8_t hdr[ROCE_MAX_HDR];
	size_t hl;

	h->pad = (uint8_t)((4 - (paylen & 3)) & 3);
	if (!h->pkey)
		h->pkey = 0xffff;
	hl = roce_hdr_write(hdr, h);
	if (cut) {
		put8(o, cmd | (flags & ~P_ICRC));
		put16(o, (uint32_t)hl - cut);
		for (size_t i = 0; i < hl - cut; i++)
			put8(o, hdr[i]);
		return;
	}
	put8(o, cmd | flags);
	put16(o, (uint32_t)hl | (paylen + h->pad ? P_FILL : 0));
	if (paylen + h->pad) {
		put16(o, paylen + h->pad);
		put8(o, fill);
	}
	for (size_t i = 0; i < hl; i++)
		put8(o, hdr[i]);
}

static void seed_pkt(struct out *o, uint8_t cmd, struct roce_hdr *h, uint32_t paylen,
		     uint8_t fill)
{
	seed_pkt_cut(o, cmd, STD, h, paylen, fill, 0);
}

/* A request header: opcode, PSN (relative to the expected PSN when the
 * packet comes), key index, VA offset, length. */
static struct roce_hdr req(uint8_t opcode, int32_t psn, uint32_t k, uint64_t off, uint32_t dmalen)
{
	struct roce_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = opcode;
	h.psn = (uint32_t)psn & ROCE_PSN_MASK;
	h.rkey = k;
	h.va = off;
	h.dmalen = dmalen;
	return h;
}

/* What a seed must do: packets the daemon executed or answered, left
 * for the owner, sent; bytes of value val at off in the RW region;
 * receive completions, of them errors; the NAK the daemon sent last
 * (its AETH syndrome, 0: none asked), which ends the QP. */
struct expect {
	uint64_t taken, left;
	unsigned sent;
	uint32_t off, len;
	uint8_t val;
	uint32_t cqes, cqe_errs;
	uint8_t nak;
};

/* The receive completions a seed made: cqes, errs of them in error. */
static void recv_expect(const char *name, uint32_t cqes, uint32_t errs)
{
	const struct sof_cqe *ring =
	    (const struct sof_cqe *)(const void *)((const uint8_t *)w.rcq_shm + SOF_CQ_RING_OFF);
	uint32_t tail = atomic_load(&w.rcq_shm->tail), n = 0;

	for (uint32_t i = 0; i < tail && i < CQ_SIZE; i++)
		n += ring[i].status != IBV_WC_SUCCESS;
	if (tail != cqes || n != errs)
		FAIL("seed %s: %u receive completions, %u in error; want %u, %u", name, tail, n,
		     cqes, errs);
}

/* A receive WQE of one SGE in the RW region (or nsge 3: malformed). */
static void seed_post(struct out *o, uint32_t nsge, uint32_t off, uint32_t len)
{
	put8(o, C_POST);
	put8(o, nsge);
	for (uint32_t i = 0; i < nsge; i++) {
		put8(o, 0);
		put16(o, off + i * len);
		put16(o, len);
	}
}

static void seed_write(const char *dir, const char *name, struct out *o, struct expect e)
{
	char path[512];
	FILE *f;

	world_up(o->n && (o->b[0] & 1));
	run(o->b + 1, o->n ? o->n - 1 : 0);
	if (w.counters[SOF_CNT_takeover] != e.taken || w.drops[SOF_DROP_takeover] != e.left)
		FAIL("seed %s: %llu taken, %llu left for the owner; want %llu, %llu", name,
		     (unsigned long long)w.counters[SOF_CNT_takeover],
		     (unsigned long long)w.drops[SOF_DROP_takeover], (unsigned long long)e.taken,
		     (unsigned long long)e.left);
	if (w.sent != e.sent)
		FAIL("seed %s: the daemon sent %u, want %u", name, w.sent, e.sent);
	/* a fatal NAK (IBA 9.7.5.2.4) ends the QP: ERROR in its shared
	 * segment, for the owner too */
	if (e.nak && w.last_syndrome != e.nak)
		FAIL("seed %s: the daemon's last syndrome 0x%02x, want NAK 0x%02x", name,
		     w.last_syndrome, e.nak);
	if ((atomic_load(&w.qshm->state) == IBV_QPS_ERR) != (e.nak != 0))
		FAIL("seed %s: QP state %u", name, atomic_load(&w.qshm->state));
	for (uint32_t i = 0; i < e.len; i++)
		if (w.rw[e.off + i] != e.val)
			FAIL("seed %s: byte %u is 0x%02x, want 0x%02x", name, e.off + i,
			     w.rw[e.off + i], e.val);
	recv_expect(name, e.cqes, e.cqe_errs);
	world_down();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(o->b, 1, o->n, f) != o->n || fclose(f))
		FAIL("writing %s", path);
	o->n = 0;
	put8(o, 0); /* RC: the next seed's first byte */
}

#define SEED(name, ...) seed_write(dir, name, &o, (struct expect){__VA_ARGS__})

static void write_seeds(const char *dir)
{
	static struct out o = {.n = 1}; /* its first byte: 0, RC */
	struct roce_hdr h;

	/* WRITEs in order: executed and ACKed */
	h = req(ROCE_WRITE_ONLY, 0, 0, 64, 64);
	seed_pkt(&o, C_DAEMON, &h, 64, 0x22);
	SEED("write_only", .taken = 1, .sent = 1, .off = 64, .len = 64, .val = 0x22);
	h = req(ROCE_WRITE_FIRST, 0, 0, 1024, 2500);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x33);
	h = req(ROCE_WRITE_MIDDLE, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x33);
	h = req(ROCE_WRITE_LAST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 452, 0x33);
	SEED("write_multi", .taken = 3, .sent = 3, .off = 1024, .len = 2500, .val = 0x33);
	/* a duplicate ACKed, not placed again */
	h = req(ROCE_WRITE_ONLY, 0, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x44);
	h = req(ROCE_WRITE_ONLY, -1, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x55);
	SEED("write_dup", .taken = 2, .sent = 2, .off = 0, .len = 16, .val = 0x44);
	/* the owner starts a WRITE, the daemon ends it, the owner goes on */
	h = req(ROCE_WRITE_FIRST, 0, 0, 0, 1040);
	seed_pkt(&o, C_OWNER, &h, 1024, 0x66);
	h = req(ROCE_WRITE_LAST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x66);
	h = req(ROCE_WRITE_ONLY, 0, 0, 2048, 8);
	seed_pkt(&o, C_OWNER, &h, 8, 0x77);
	put8(&o, C_BATCH);
	SEED("write_handover", .taken = 1, .sent = 1, .off = 0, .len = 1040, .val = 0x66);

	/* keys and lengths the owner would NAK: the daemon NAKs them as the
	 * owner would (remote access error, invalid request) and the QP
	 * ends: the WRITE after is refused (left) */
	{
		static const struct {
			const char *name;
			uint8_t opcode;
			uint32_t key, off, dmalen, paylen;
			uint8_t nak;
		} bad[] = {
		    {"write_bad_readonly", ROCE_WRITE_ONLY, 1, 0, 16, 16, ROCE_NAK_REM_ACCESS},
		    {"write_bad_key", ROCE_WRITE_ONLY, 3, 0, 16, 16, ROCE_NAK_REM_ACCESS},
		    {"write_bad_range", ROCE_WRITE_ONLY, 0, RW_LEN - 8, 16, 16, ROCE_NAK_REM_ACCESS},
		    /* shorter than its DMA length; a FIRST shorter than the
		     * MTU; a MIDDLE with no message in progress */
		    {"write_bad_length", ROCE_WRITE_ONLY, 0, 0, 32, 16, ROCE_NAK_INV_REQ},
		    {"write_bad_first", ROCE_WRITE_FIRST, 0, 0, 4096, 512, ROCE_NAK_INV_REQ},
		    {"write_bad_sequence", ROCE_WRITE_MIDDLE, 0, 0, 0, 1024, ROCE_NAK_INV_REQ},
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			h = req(bad[i].opcode, 0, bad[i].key, bad[i].off, bad[i].dmalen);
			seed_pkt(&o, C_DAEMON, &h, bad[i].paylen, 0x99);
			h = req(ROCE_WRITE_ONLY, 1, 0, 0, 16);
			seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
			SEED(bad[i].name, .taken = 1, .left = 1, .sent = 1,
			     .nak = ROCE_AETH_NAK | bad[i].nak);
		}
	}
	/* PSNs out of the window: ahead (a sequence-error NAK), and older
	 * than duplicates go (left) */
	h = req(ROCE_WRITE_ONLY, 1, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	h = req(ROCE_WRITE_ONLY, -TP_DUP_WINDOW - 1, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	SEED("write_psn_out", .taken = 1, .left = 1, .sent = 1);
	/* from a stranger: not taken (dropped as for an unknown QP) */
	h = req(ROCE_WRITE_ONLY, 0, 0, 0, 16);
	seed_pkt_cut(&o, C_DAEMON, STD & ~P_PEER, &h, 16, 0x99, 0);
	SEED("write_stranger");
	/* truncated headers: the RETH cut short; a bare BTH */
	h = req(ROCE_WRITE_ONLY, 0, 0, 0, 16);
	seed_pkt_cut(&o, C_DAEMON, STD, &h, 0, 0, 6);
	h = req(ROCE_WRITE_ONLY, 0, 0, 0, 16);
	seed_pkt_cut(&o, C_DAEMON, STD, &h, 0, 0, 16);
	SEED("write_truncated");
	/* the owner holds the lock; its state made void by a modify; a
	 * state the program scribbled (MTU 7, more left than the length) */
	put8(&o, C_POKE);
	put16(&o, 0);
	put16(&o, 1);
	put16(&o, 0);
	h = req(ROCE_WRITE_ONLY, 0, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	put8(&o, C_POKE);
	put16(&o, 0);
	put16(&o, 0);
	put16(&o, 0);
	put8(&o, C_VOID);
	h = req(ROCE_WRITE_ONLY, 0, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	SEED("write_locked_void", .left = 2);
	put8(&o, C_POKE);
	put16(&o, offsetof(struct sof_resp_shm, mtu) / 4);
	put16(&o, 7);
	put16(&o, 0);
	h = req(ROCE_WRITE_ONLY, 0, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	SEED("write_bad_mtu", .left = 1);
	/* a SEND and a WRITE with immediate data, no receive WQE posted: RNR
	 * NAKs, nothing placed */
	h = req(ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	h = req(ROCE_WRITE_ONLY_IMM, 0, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	SEED("recv_rnr", .taken = 2, .sent = 2, .off = 0, .len = 16, .val = 0);

	/* SENDs into the receive WQEs: one with immediate data; one of two
	 * packets into two SGEs; completed in order */
	seed_post(&o, 1, 0x1000, 256);
	seed_post(&o, 1, 0x2000, 256);
	seed_post(&o, 2, 0x3000, 1500);
	h = req(ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 100, 0x41);
	h = req(ROCE_SEND_ONLY_IMM, 0, 0, 0, 0);
	h.imm_be = 0x12345678;
	seed_pkt(&o, C_DAEMON, &h, 16, 0x42);
	h = req(ROCE_SEND_FIRST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x43);
	h = req(ROCE_SEND_LAST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1000, 0x43);
	SEED("send", .taken = 4, .sent = 4, .off = 0x3000, .len = 2024, .val = 0x43, .cqes = 3);
	/* a SEND's FIRST lost, from a requester that speaks the extension:
	 * the owner keeps (and SACKs) its MIDDLE and LAST; stalled, the
	 * daemon executes the resent FIRST and answers a sequence-error NAK
	 * (the owner's copies are out of its reach), drops one ahead; then
	 * either the requester went back (the daemon executes MIDDLE and
	 * LAST, the owner forgets its copies) or the owner runs first (and
	 * executes its copies); the next SEND the owner's, each once */
	for (int back = 1; back >= 0; back--) {
		seed_post(&o, 1, 0x1000, 4096);
		seed_post(&o, 1, 0x3000, 64);
		h = req(ROCE_SEND_MIDDLE, 1, 0, 0, 0);
		h.ext = true;
		seed_pkt(&o, C_OWNER, &h, 1024, 0x48);
		h = req(ROCE_SEND_LAST, 2, 0, 0, 0);
		h.ext = true;
		seed_pkt(&o, C_OWNER, &h, 10, 0x48);
		put8(&o, C_BATCH);
		h = req(ROCE_SEND_FIRST, 0, 0, 0, 0);
		h.ext = true;
		seed_pkt(&o, C_DAEMON, &h, 1024, 0x48);
		h = req(ROCE_SEND_ONLY, 2, 0, 0, 0);
		h.ext = true;
		seed_pkt(&o, C_DAEMON, &h, 8, 0x49);
		if (back) {
			h = req(ROCE_SEND_MIDDLE, 0, 0, 0, 0);
			h.ext = true;
			seed_pkt(&o, C_DAEMON, &h, 1024, 0x48);
			h = req(ROCE_SEND_LAST, 0, 0, 0, 0);
			h.ext = true;
			seed_pkt(&o, C_DAEMON, &h, 10, 0x48);
		}
		h = req(ROCE_SEND_ONLY, back ? 0 : 2, 0, 0, 0);
		h.ext = true;
		seed_pkt(&o, C_OWNER, &h, 8, 0x49);
		put8(&o, C_BATCH);
		if (back)
			SEED("send_kept_went_back", .taken = 3, .left = 1, .sent = 3, .off = 0x1000,
			     .len = 2058, .val = 0x48, .cqes = 2);
		else
			SEED("send_kept_owner_first", .taken = 1, .left = 1, .sent = 1,
			     .off = 0x1000, .len = 2058, .val = 0x48, .cqes = 2);
	}
	/* the owner starts a SEND, the daemon goes on and ends it, the owner
	 * takes the next; the daemon starts one, the owner ends it */
	seed_post(&o, 1, 0x1000, 4096);
	seed_post(&o, 1, 0x3000, 64);
	seed_post(&o, 1, 0x2000, 2048);
	h = req(ROCE_SEND_FIRST, 0, 0, 0, 0);
	seed_pkt(&o, C_OWNER, &h, 1024, 0x44);
	h = req(ROCE_SEND_MIDDLE, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x44);
	h = req(ROCE_SEND_LAST_IMM, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 10, 0x44);
	h = req(ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_OWNER, &h, 8, 0x45);
	h = req(ROCE_SEND_FIRST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x46);
	h = req(ROCE_SEND_LAST, 0, 0, 0, 0);
	seed_pkt(&o, C_OWNER, &h, 24, 0x46);
	put8(&o, C_BATCH);
	SEED("send_handover", .taken = 3, .sent = 3, .off = 0x1000, .len = 2058, .val = 0x44,
	     .cqes = 3);
	/* RNR, then the WQE posted and the retry delivered */
	h = req(ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 32, 0x47);
	seed_post(&o, 1, 0x1000, 64);
	seed_pkt(&o, C_DAEMON, &h, 32, 0x47);
	SEED("send_rnr_retry", .taken = 2, .sent = 2, .off = 0x1000, .len = 32, .val = 0x47,
	     .cqes = 1);
	/* the WQE completed in error and the owner's NAK, the QP ended (the
	 * owner's engine then drops what comes): longer than its buffer, a
	 * buffer of the read-only region, an invalidate this QP may not do;
	 * a malformed WQE */
	seed_post(&o, 1, 0x1000, 64);
	h = req(ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 100, 0x99);
	seed_pkt(&o, C_OWNER, &h, 100, 0x99);
	SEED("send_too_long", .taken = 1, .sent = 1, .cqes = 1, .cqe_errs = 1,
	     .nak = ROCE_AETH_NAK | ROCE_NAK_INV_REQ);
	put8(&o, C_POST);
	put8(&o, 1);
	put8(&o, 1);
	put16(&o, 0);
	put16(&o, 64);
	h = req(ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	SEED("send_bad_key", .taken = 1, .sent = 1, .cqes = 1, .cqe_errs = 1,
	     .nak = ROCE_AETH_NAK | ROCE_NAK_REM_OP_ERR);
	seed_post(&o, 1, 0x1000, 64);
	h = req(ROCE_SEND_ONLY_INV, 0, 0, 0, 0);
	h.inv_rkey = 0x4321;
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	SEED("send_inv", .taken = 1, .sent = 1, .cqes = 1, .cqe_errs = 1,
	     .nak = ROCE_AETH_NAK | ROCE_NAK_INV_REQ);
	/* a WQE in hand the program scribbled on (more SGEs than any WQE
	 * holds): left */
	seed_post(&o, 1, 0x1000, 4096);
	h = req(ROCE_SEND_FIRST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x4c);
	put8(&o, C_POKE);
	put16(&o, offsetof(struct sof_resp_shm, rcv_nsge) / 4);
	put16(&o, 0xffff);
	put16(&o, 0xffff);
	h = req(ROCE_SEND_LAST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 8, 0x4c);
	SEED("send_scribbled", .taken = 1, .left = 1, .sent = 1, .off = 0x1000, .len = 1024,
	     .val = 0x4c);
	seed_post(&o, 3, 0x1000, 64);
	seed_post(&o, 1, 0x1000, 64);
	h = req(ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x48);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x48);
	SEED("send_malformed_wqe", .taken = 1, .left = 1, .sent = 1, .cqes = 1, .cqe_errs = 1,
	     .nak = ROCE_AETH_NAK | ROCE_NAK_REM_OP_ERR);
	/* WRITEs with immediate data: of two packets, and of none */
	seed_post(&o, 1, 0x3000, 64);
	seed_post(&o, 0, 0, 0);
	h = req(ROCE_WRITE_FIRST, 0, 0, 0, 1040);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x49);
	h = req(ROCE_WRITE_LAST_IMM, 0, 0, 0, 0);
	h.imm_be = 7;
	seed_pkt(&o, C_DAEMON, &h, 16, 0x49);
	h = req(ROCE_WRITE_ONLY_IMM, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("write_imm", .taken = 3, .sent = 3, .off = 0, .len = 1040, .val = 0x49, .cqes = 2);
	/* ATOMIC WRITE and its duplicate (answered, not stored again) */
	h = req(ROCE_ATOMIC_WRITE, 0, 0, 64, 8);
	seed_pkt(&o, C_DAEMON, &h, 8, 0x4a);
	h = req(ROCE_ATOMIC_WRITE, -1, 0, 64, 8);
	seed_pkt(&o, C_DAEMON, &h, 8, 0x4b);
	SEED("atomic_write", .taken = 2, .sent = 2, .off = 64, .len = 8, .val = 0x4a);

	/* READs: one packet, three (answered with responses), a duplicate
	 * inside the original's range; the read-only region may be read */
	h = req(ROCE_READ_REQ, 0, 0, 0, 100);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_READ_REQ, 0, 1, 0, 2100);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_READ_REQ, -2, 1, 1024, 1076);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("read", .taken = 3, .sent = 6);
	/* past the region, no key: NAKed, the QP ends */
	h = req(ROCE_READ_REQ, 0, 0, RW_LEN - 8, 16);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("read_bad_range", .taken = 1, .sent = 1, .nak = ROCE_AETH_NAK | ROCE_NAK_REM_ACCESS);
	h = req(ROCE_READ_REQ, 0, 3, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("read_bad_key", .taken = 1, .sent = 1, .nak = ROCE_AETH_NAK | ROCE_NAK_REM_ACCESS);
	/* left: a duplicate outside the original; one ahead: a
	 * sequence-error NAK; one in the middle of a WRITE: an invalid
	 * request */
	h = req(ROCE_READ_REQ, 0, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_READ_REQ, -1, 0, 8, 16);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_READ_REQ, 1, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_WRITE_FIRST, 0, 0, 0, 2048);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x12);
	h = req(ROCE_READ_REQ, 0, 0, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("read_bad", .taken = 4, .left = 1, .sent = 4, .nak = ROCE_AETH_NAK | ROCE_NAK_INV_REQ);
	/* atomics: fetch-and-add, its duplicate (not applied again), a
	 * compare-and-swap; the word ends at 0xa5 + 3 swapped for 7 */
	h = req(ROCE_WRITE_ONLY, 0, 0, 64, 8);
	seed_pkt(&o, C_DAEMON, &h, 8, 0);
	h = req(ROCE_FETCH_ADD, 0, 0, 64, 0);
	h.swap_add = 3;
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_FETCH_ADD, -1, 0, 64, 0);
	h.swap_add = 3;
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_CMP_SWAP, 0, 0, 64, 0);
	h.compare = 3;
	h.swap_add = 0x707070707070707ull;
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("atomic", .taken = 4, .sent = 4, .off = 64, .len = 8, .val = 7);
	/* misaligned: an invalid request; the read-only region, no key: a
	 * remote access error; one ahead: a sequence-error NAK */
	h = req(ROCE_FETCH_ADD, 0, 0, 4, 0);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("atomic_misaligned", .taken = 1, .sent = 1, .nak = ROCE_AETH_NAK | ROCE_NAK_INV_REQ);
	h = req(ROCE_FETCH_ADD, 0, 1, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("atomic_read_only", .taken = 1, .sent = 1,
	     .nak = ROCE_AETH_NAK | ROCE_NAK_REM_ACCESS);
	h = req(ROCE_CMP_SWAP, 0, 2, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("atomic_bad_key", .taken = 1, .sent = 1, .nak = ROCE_AETH_NAK | ROCE_NAK_REM_ACCESS);
	h = req(ROCE_FETCH_ADD, 1, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	SEED("atomic_bad", .taken = 1, .sent = 1);
	/* the owner adds, the daemon answers its duplicate from the shared
	 * resources and adds, the owner answers the daemon's duplicate */
	h = req(ROCE_FETCH_ADD, 0, 0, 0, 0);
	h.swap_add = 2;
	seed_pkt(&o, C_OWNER, &h, 0, 0);
	h = req(ROCE_FETCH_ADD, -1, 0, 0, 0);
	h.swap_add = 2;
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_FETCH_ADD, 0, 0, 0, 0);
	h.swap_add = 2;
	seed_pkt(&o, C_DAEMON, &h, 0, 0);
	h = req(ROCE_FETCH_ADD, -1, 0, 0, 0);
	h.swap_add = 2;
	seed_pkt(&o, C_OWNER, &h, 0, 0);
	SEED("atomic_handover", .taken = 2, .sent = 2, .off = 0, .len = 1, .val = 4);

	/* UC: WRITEs placed and nothing answered; a gap loses the message in
	 * progress (its LAST dropped); a SEND lost; a bad key; the owner
	 * goes on after */
	o.b[0] = 1;
	h = req(ROCE_SVC_UC | ROCE_WRITE_FIRST, 0, 0, 0, 2048);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x31);
	h = req(ROCE_SVC_UC | ROCE_WRITE_LAST, 1, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x99);
	h = req(ROCE_SVC_UC | ROCE_WRITE_ONLY, 0, 0, 4096, 64);
	seed_pkt(&o, C_DAEMON, &h, 64, 0x32);
	h = req(ROCE_SVC_UC | ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	h = req(ROCE_SVC_UC | ROCE_WRITE_ONLY, 0, 1, 0, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x99);
	h = req(ROCE_SVC_UC | ROCE_WRITE_ONLY, 0, 0, 8192, 16);
	seed_pkt(&o, C_OWNER, &h, 16, 0x33);
	SEED("uc_write", .taken = 2, .left = 3, .off = 4096, .len = 64, .val = 0x32);
	/* UC SENDs and a WRITE with immediate data delivered; a gap loses
	 * the SEND in progress, whose WQE the next SEND takes; none posted:
	 * lost */
	o.b[0] = 1;
	seed_post(&o, 1, 0x1000, 2048);
	seed_post(&o, 1, 0x3000, 64);
	seed_post(&o, 0, 0, 0);
	h = req(ROCE_SVC_UC | ROCE_SEND_FIRST, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 1024, 0x99);
	h = req(ROCE_SVC_UC | ROCE_SEND_LAST, 1, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 8, 0x99);
	h = req(ROCE_SVC_UC | ROCE_SEND_ONLY_IMM, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 40, 0x51);
	h = req(ROCE_SVC_UC | ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 40, 0x52);
	h = req(ROCE_SVC_UC | ROCE_WRITE_ONLY_IMM, 0, 0, 0x2000, 16);
	seed_pkt(&o, C_DAEMON, &h, 16, 0x53);
	h = req(ROCE_SVC_UC | ROCE_SEND_ONLY, 0, 0, 0, 0);
	seed_pkt(&o, C_DAEMON, &h, 40, 0x99);
	SEED("uc_send", .taken = 4, .left = 2, .off = 0x1000, .len = 40, .val = 0x51, .cqes = 3);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("SOF_FUZZ_TAKEOVER_SEEDS");

	(void)argc;
	(void)argv;
	if (dir) {
		write_seeds(dir);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	world_up(size && (data[0] & 1));
	run(data + !!size, size - !!size);
	world_down();
	return 0;
}
