/*
 * libFuzzer target: the receive path of the daemon's RoCEv2 transport
 * engine (transport/udp.c tp_input and everything behind it) with real
 * objects in daemon memory, so that any out-of-bounds access, undefined
 * behaviour, leak or hang in parse, ICRC, QP look-up, the type / state /
 * P_Key / Q_Key / source checks, the responder (SEND into receive WQEs,
 * WRITE, READ, atomics, duplicates, NAKs; UC; UD) and the completer (ACK,
 * NAK, RNR NAK, READ responses, atomic ACKs) shows.
 *
 * The world, made once through the daemon's own request handlers
 * (sofd_dispatch, as a library would over its socket): one connection, two
 * PDs, memory regions of several shapes (read-only, several runs, an iova
 * at the top of the address space, an iova whose offset in the page differs
 * from the address's), a send and a receive CQ, an SRQ and six QPs — RC,
 * RC on the SRQ (IPv6, PSNs about to wrap), UC, UD, an RC whose peer is on
 * this host and one left in INIT — brought to RTS with peers on other
 * hosts; the UD QP is attached to the multicast group ::ffff:239.1.1.1.
 * There are no sockets: tp_send builds every packet and finds no way out
 * (-ENETUNREACH), as on a cut wire.
 *
 * Each input starts from the same state (QPs through RESET to RTS, rings
 * and CQs empty, memory zeroed, regions registered), so a crash reproduces
 * from its input alone. Its first byte says what is posted before the
 * commands run (receive WQEs, send WQEs the peers can then answer, CQ
 * size and arming); the rest is a sequence of commands:
 *
 *   packet   a RoCEv2 packet for one of the QPs, or (QP 7) for the
 *            multicast group (to its address and the multicast QPN; the
 *            group's Q_Key is the UD QP's). With the flags of the
 *            command byte the harness does what the fuzzer cannot guess:
 *            the BTH destination QPN becomes the QP's, the PSN counts
 *            from the QP's expected PSN (requests) or oldest unacknowledged
 *            one (responses), the R_Key picks one of the registered keys
 *            and the VA counts from that region's iova, the Q_Key becomes
 *            the UD QP's, the source address is the QP's peer, and the
 *            ICRC is computed. Without them the bytes go as they are.
 *   tick     every QP's retransmission and RNR timer expires; or, with
 *            C_STALLED, this process stalls: every send time the QPs
 *            keep (the timed packet, the SACK records) moves STALL_NS
 *            back, as if the ACKs that come next had waited that long
 *   acks     the end of a receive batch: coalesced ACKs go out
 *   post     a send WQE into a network send queue (and the doorbell), or
 *            a receive WQE into a receive ring or the SRQ: the owner's
 *            memory, untrusted by the daemon
 *   modify   MODIFY_QP with fields the fuzzer picks
 *   poke     any value into an index or state word of the shared segments
 *   dereg    deregister a region (mid-message, while READs are served),
 *            destroy a QP (its packets then go to the number it had),
 *            detach the UD QP from the group / attach it again, or
 *            MCAST_LOOP: a program's request that a QP's datagram to a
 *            group reach the QPs attached here (the QP taken as steered
 *            or not, the GIDs, flags, Q_Key, length and bytes the
 *            fuzzer's)
 *   drain    the owner polls a CQ empty
 *
 * With SOF_FUZZ_ENGINE_SEEDS=DIR set, the target instead writes its seed
 * corpus to DIR (tests/fuzz/corpus_engine/ is made so), checking on the
 * way that each seed does what its name says (is executed, or is dropped
 * and counted for the reason it was crafted for), and exits; run.sh does
 * that before it fuzzes, and fails when the corpus is not what it writes.
 *
 * tests/fuzz/run.sh builds it from the files on the FUZZ_ lines below: the
 * daemon without daemon/main.c (its globals and log are defined here).
 */
/* clang-format off */
/*
 * FUZZ_SOURCES: tests/fuzz/fuzz_engine.c mad/mad.c cm/cma_id.c cm/cma_addr.c cm/cma_event.c cm/cma_resolve.c cm/cma_listen.c cm/cma_conn.c cm/cma_mcast.c cm/cma_upcall.c cm/cma_ops.c cm/cma_ib.c mad/sa_rec.c cm/cm_base.c daemon/cm_host.c cm/ibcm_conn.c cm/ibcm_send.c cm/ibcm_recv.c cm/ibcm_timer.c cm/cm_wire.c transport/tp.c transport/udp.c transport/recv.c transport/timer.c transport/qp.c transport/mr.c transport/requester.c transport/completer.c transport/responder.c transport/rwqe.c transport/takeover.c transport/resp_shared.c transport/mcast.c transport/wire.c transport/icrc.c daemon/ops.c daemon/ops_mr.c daemon/ops_exec.c daemon/ops_import.c daemon/registry.c daemon/conn.c daemon/device.c daemon/tp_host.c daemon/steer.c common/util.c common/hmap.c common/cqring.c common/grh.c common/gid.c common/wr.c daemon/ops_xrc.c daemon/ops_mw.c daemon/raw.c daemon/ops_srq.c transport/sack.c transport/iblink.c transport/ib_wire.c daemon/ib.c daemon/ib_sma.c mad/sma.c mad/sma_port.c mad/pma.c mad/cc.c mad/rmpp.c daemon/ops_umad.c transport/ibpkt.c transport/ibdirect.c
 * FUZZ_INCLUDES: cm mad transport daemon common
 * FUZZ_SEEDS_ENV: SOF_FUZZ_ENGINE_SEEDS
 */
/* clang-format on */
#include "sofd.h"
#include "tport.h"

#include "sof_gid.h"
#include "sof_wr.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_engine"
#include "fuzz_daemon.h"

/* ---- the world ------------------------------------------------------------------- */

/* GIDs: this host's, its peers', a stranger's (IPv4 as ::ffff:a.b.c.d) */
static const uint8_t local4[16] = {[10] = 0xff, 0xff, 10, 0, 0, 1};
static const uint8_t peer4[16] = {[10] = 0xff, 0xff, 10, 0, 0, 2};
static const uint8_t peer4b[16] = {[10] = 0xff, 0xff, 10, 0, 0, 3};
static const uint8_t stranger4[16] = {[10] = 0xff, 0xff, 10, 0, 0, 66};
static const uint8_t local6[16] = {0xfd, [15] = 1};
static const uint8_t peer6[16] = {0xfd, [15] = 2};
static const uint8_t stranger6[16] = {0xfd, [15] = 0x66};
/* the multicast group the UD QP is attached to */
static const uint8_t group4[16] = {[10] = 0xff, 0xff, 239, 1, 1, 1};

#define ACC_ALL                                                                                    \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)

enum { M_RW, M_RO, M_LOCAL, M_PD2, M_RUNS, M_HIGH, M_ODD, NMR };

struct fmr {
	uint32_t pd; /* 0 or 1 */
	uint32_t access;
	uint64_t iova, addr, length;
	uint32_t nruns; /* of one page each, one memfd each, unless pages */
	uint32_t pages; /* one run of this many pages */
	/* at run time */
	int fd[3];
	uint8_t *mem[3]; /* the owner's mapping of each run */
	uint32_t key;
	bool registered;
};

/* The regions; addr is the owner's address, so page_off = addr % 4096. */
static struct fmr mrs[NMR] = {
    [M_RW] = {.access = ACC_ALL,
	      .iova = 0x100000,
	      .addr = 0x7000100,
	      .length = 4 * 4096 - 0x100,
	      .nruns = 1,
	      .pages = 4},
    [M_RO] = {.access = IBV_ACCESS_REMOTE_READ,
	      .iova = 0x200000,
	      .addr = 0x8000000,
	      .length = 8192,
	      .nruns = 1,
	      .pages = 2},
    [M_LOCAL] = {.access = IBV_ACCESS_LOCAL_WRITE,
		 .iova = 0x300000,
		 .addr = 0x9000000,
		 .length = 16384,
		 .nruns = 1,
		 .pages = 4},
    [M_PD2] = {.pd = 1,
	       .access = ACC_ALL,
	       .iova = 0x400000,
	       .addr = 0xa000000,
	       .length = 4096,
	       .nruns = 1,
	       .pages = 1},
    [M_RUNS] = {.access = ACC_ALL,
		.iova = 0x500000,
		.addr = 0xb000000,
		.length = 3 * 4096,
		.nruns = 3,
		.pages = 1},
    /* the last bytes of the address space */
    [M_HIGH] = {.access = ACC_ALL,
		.iova = 0xffffffffffffe000ull,
		.addr = 0xc000000,
		.length = 8192,
		.nruns = 1,
		.pages = 2},
    /* iova and addr 4 bytes apart in the page: an aligned va is a
     * misaligned word */
    [M_ODD] = {.access = ACC_ALL,
	       .iova = 0x600000,
	       .addr = 0xd000004,
	       .length = 4092,
	       .nruns = 1,
	       .pages = 1},
};

/* Keys the fuzzer picks from: the regions', then two that name nothing. */
#define NKEYS (NMR + 2)

static uint32_t key_of(uint32_t k)
{
	k %= NKEYS;
	return k < NMR ? mrs[k].key : k == NMR ? 0 : 0xdeadbeef;
}

static uint64_t iova_of(uint32_t k)
{
	k %= NKEYS;
	return k < NMR ? mrs[k].iova : 0x700000;
}

enum { Q_RC, Q_RCS, Q_UC, Q_UD, Q_LOCAL, Q_INIT, NQP };

struct fqp {
	uint32_t type;
	bool srq;
	uint32_t final_state;
	const uint8_t *dgid;
	uint8_t sgid_index, mtu;
	uint32_t sq_psn, rq_psn, dest_qpn, qkey, access;
	uint8_t max_rd, max_dest, timeout, retry, rnr_retry, min_rnr;
	/* at run time */
	struct sofd_qp *qp; /* NULL while destroyed */
	uint32_t dead_qpn;  /* the number it had */
};

#define RQ_SIZE 16u
#define RQ_SGE 4u
#define SQ_SIZE 16u
#define SQ_SGE 4u
#define SQ_INLINE 64u

#define RC_PEER(dg, sgid, mtu_) .type = IBV_QPT_RC, .dgid = dg, .sgid_index = sgid, .mtu = mtu_

static struct fqp qps[NQP] = {
    [Q_RC] = {RC_PEER(peer4, 0, IBV_MTU_1024), .final_state = IBV_QPS_RTS, .sq_psn = 0x100,
	      .rq_psn = 0x200, .dest_qpn = 0x123, .access = ACC_ALL, .max_rd = 4, .max_dest = 4,
	      .timeout = 14, .retry = 7, .rnr_retry = 3, .min_rnr = 1},
    /* on the SRQ, over IPv6, both PSNs about to wrap */
    [Q_RCS] = {RC_PEER(peer6, 1, IBV_MTU_256), .final_state = IBV_QPS_RTS, .srq = true,
	       .sq_psn = 0xfffffc, .rq_psn = 0xfffffe, .dest_qpn = 0x124,
	       .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, .max_rd = 1,
	       .max_dest = 1, .timeout = 1, .retry = 2, .rnr_retry = 7, .min_rnr = 12},
    [Q_UC] = {.type = IBV_QPT_UC,
	      .final_state = IBV_QPS_RTS,
	      .dgid = peer4b,
	      .mtu = IBV_MTU_512,
	      .sq_psn = 0x20,
	      .rq_psn = 0x10,
	      .dest_qpn = 0x125,
	      .access = IBV_ACCESS_REMOTE_WRITE},
    [Q_UD] = {.type = IBV_QPT_UD, .final_state = IBV_QPS_RTS, .sq_psn = 0x30, .qkey = 0x11111111},
    /* its peer is on this host: the library executes its work */
    [Q_LOCAL] = {RC_PEER(local4, 0, IBV_MTU_1024), .final_state = IBV_QPS_RTS, .sq_psn = 0x40,
		 .rq_psn = 0x50, .dest_qpn = 0x126, .access = ACC_ALL, .max_rd = 1, .max_dest = 1,
		 .timeout = 14, .retry = 7, .rnr_retry = 7, .min_rnr = 1},
    [Q_INIT] = {RC_PEER(peer4, 0, IBV_MTU_1024), .final_state = IBV_QPS_INIT, .sq_psn = 0x60,
		.rq_psn = 0x70, .dest_qpn = 0x127, .access = ACC_ALL, .max_rd = 1, .max_dest = 1,
		.timeout = 14, .retry = 7, .rnr_retry = 7, .min_rnr = 1},
};

static struct sofd_conn *conn;
static uint32_t pd[2];
static struct sofd_cq *scq, *rcq;
static struct sofd_srq *srq;

/* Run a request through the daemon's dispatcher, as conn.c does. */
static int call(uint32_t op, const void *req, size_t len, int *fds, int nfds, void *rep,
		size_t replen)
{
	static const uint8_t none[1];
	struct sofd_req rq = {
	    .c = conn, .op = op, .data = req ? req : none, .len = len, .fds = fds, .nfds = nfds};
	struct sofd_rep rp = {.nfds = 0};
	int err = sofd_dispatch(&rq, &rp);

	sof_close_fds(fds, nfds); /* those the handler did not keep */
	for (int i = 0; i < rp.nfds; i++)
		if (rp.close_fds[i])
			close(rp.fds[i]);
	if (!err && rep)
		memcpy(rep, rp.data, rp.len < replen ? rp.len : replen);
	return err;
}

static void must(int err, const char *what)
{
	if (err)
		FAIL("%s: %s", what, strerror(-err));
}

static int memfd(size_t len)
{
	int fd = sof_memfd_create("fuzz-engine", len);

	if (fd < 0)
		FAIL("memfd: %s", strerror(-fd));
	return fd;
}

static void *map(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		FAIL("mmap: %m");
	return p;
}

static void reg_mr(struct fmr *m)
{
	struct sof_reg_mr_req req;
	struct sof_reg_mr_rep rep;
	int fds[3];

	memset(&req, 0, sizeof(req));
	req.pd = pd[m->pd];
	req.access = m->access;
	req.iova = m->iova;
	req.addr = m->addr;
	req.length = m->length;
	req.nruns = m->nruns;
	for (uint32_t i = 0; i < m->nruns; i++) {
		req.runs[i].offset = 0;
		req.runs[i].length = (uint64_t)m->pages * 4096;
		fds[i] = dup(m->fd[i]);
	}
	must(call(SOF_OP_REG_MR, &req, sizeof(req), fds, (int)m->nruns, &rep, sizeof(rep)),
	     "REG_MR");
	m->key = rep.lkey;
	m->registered = true;
}

static struct sofd_cq *create_cq(void)
{
	struct sof_create_cq_req req = {.cqe = 64, .has_channel = 0};
	struct sof_cq_rep rep;
	int fd = memfd(SOF_CQ_SEG_SIZE);
	struct sof_cq_shm *shm = map(fd, SOF_CQ_SEG_SIZE);

	atomic_store(&shm->size, 64);
	munmap(shm, SOF_CQ_SEG_SIZE);
	must(call(SOF_OP_CREATE_CQ, &req, sizeof(req), &fd, 1, &rep, sizeof(rep)), "CREATE_CQ");
	return sof_hmap_get(&sofd.cqs, rep.cq);
}

static void create_qp(struct fqp *q)
{
	struct sof_create_qp_req req;
	struct sof_create_qp_rep rep;
	uint32_t stride = SOF_NWQE_STRIDE(SQ_SGE, SQ_INLINE);
	uint32_t rq = q->srq ? 0 : RQ_SIZE;
	int fds[2];

	memset(&req, 0, sizeof(req));
	req.pd = pd[0];
	req.qp_type = q->type;
	req.send_cq = scq->handle;
	req.recv_cq = q->srq ? scq->handle : rcq->handle; /* one CQ for both */
	req.srq = q->srq ? srq->handle : 0;
	req.rq_size = rq;
	req.rq_max_sge = RQ_SGE;
	req.sq_size = SQ_SIZE;
	req.sq_max_sge = SQ_SGE;
	req.sq_max_inline = SQ_INLINE;
	fds[0] = memfd(SOF_QP_RQ_OFF + (size_t)rq * SOF_RWQE_STRIDE(RQ_SGE));
	fds[1] = memfd(SOF_NSQ_SEG_LEN(SQ_SIZE, stride));
	must(call(SOF_OP_CREATE_QP, &req, sizeof(req), fds, 2, &rep, sizeof(rep)), "CREATE_QP");
	q->qp = sof_hmap_get(&sofd.qps, rep.qpn);
}

/* The attributes of q once at state (what the library sends: every field
 * the QP's value after the modify). */
static void modify_req(const struct fqp *q, uint32_t state, struct sof_modify_qp_req *r)
{
	memset(r, 0, sizeof(*r));
	r->qpn = q->qp->qpn;
	r->state = state;
	r->dest_qpn = q->dest_qpn;
	r->qkey = q->qkey;
	r->access = q->access;
	if (q->dgid)
		memcpy(r->dgid, q->dgid, 16);
	r->sgid_index = q->sgid_index;
	r->hop_limit = 64;
	r->path_mtu = q->mtu;
	r->sq_psn = q->sq_psn;
	r->rq_psn = q->rq_psn;
	r->timeout = q->timeout;
	r->retry_cnt = q->retry;
	r->rnr_retry = q->rnr_retry;
	r->min_rnr_timer = q->min_rnr;
	r->max_rd_atomic = q->max_rd;
	r->max_dest_rd_atomic = q->max_dest;
	switch (state) {
	case IBV_QPS_RESET:
		r->attr_mask = IBV_QP_STATE;
		break;
	case IBV_QPS_INIT:
		r->attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       (q->type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
		break;
	case IBV_QPS_RTR:
		r->attr_mask = IBV_QP_STATE;
		if (q->type != IBV_QPT_UD)
			r->attr_mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER;
		break;
	default:
		r->attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (q->type == IBV_QPT_RC)
			r->attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	}
}

static int modify(struct fqp *q, const struct sof_modify_qp_req *r)
{
	struct sof_modify_qp_rep rep;
	int err = call(SOF_OP_MODIFY_QP, r, sizeof(*r), NULL, 0, &rep, sizeof(rep));

	/* the library keeps the state in the segment, where the engine
	 * reads it for every packet */
	if (!err)
		atomic_store(&q->qp->shm->state, r->state);
	return err;
}

static void setup(void)
{
	struct sof_srq_rep srep;
	struct sof_create_srq_req sreq = {.size = RQ_SIZE, .max_sge = RQ_SGE};
	struct sof_pd_rep prep;
	uint8_t gids[2][16];
	int fd;

	/* the device: an IPv4 and an IPv6 GID, RoCEv2 */
	memcpy(gids[0], local4, 16);
	memcpy(gids[1], local6, 16);
	fuzz_daemon_start(IBV_MTU_4096, (const uint8_t(*)[16])gids, 2);

	/* a connection that said HELLO */
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		FAIL("calloc");
	conn->p.kind = SOFD_POLL_CONN;
	conn->p.fd = -1;
	conn->id = 1;
	conn->ctx_id = 1;
	conn->async_fd = -1;
	conn->db_fd = -1;
	conn->pid = getpid();
	conn->uid = getuid();
	sof_list_init(&conn->pds);
	sof_list_init(&conn->mrs);
	sof_list_init(&conn->cqs);
	sof_list_init(&conn->srqs);
	sof_list_init(&conn->qps);
	sof_list_init(&conn->mws);
	sof_list_add(&sofd.conns, &conn->link);
	sofd.n.contexts = 1;

	for (int i = 0; i < 2; i++) {
		must(call(SOF_OP_ALLOC_PD, NULL, 0, NULL, 0, &prep, sizeof(prep)), "ALLOC_PD");
		pd[i] = prep.pd;
	}
	for (int i = 0; i < NMR; i++) {
		struct fmr *m = &mrs[i];

		for (uint32_t r = 0; r < m->nruns; r++) {
			m->fd[r] = memfd((size_t)m->pages * 4096);
			m->mem[r] = map(m->fd[r], (size_t)m->pages * 4096);
		}
		reg_mr(m);
	}
	scq = create_cq();
	rcq = create_cq();
	sreq.pd = pd[0];
	fd = memfd(SOF_SRQ_RQ_OFF + (size_t)RQ_SIZE * SOF_RWQE_STRIDE(RQ_SGE));
	must(call(SOF_OP_CREATE_SRQ, &sreq, sizeof(sreq), &fd, 1, &srep, sizeof(srep)),
	     "CREATE_SRQ");
	srq = sof_hmap_get(&sofd.srqs, srep.srq);
	/* the QPs are made by reset() */
}

/* ---- the input ------------------------------------------------------------------- */

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

/* ---- posting, as the owner's library does ------------------------------------------- */

struct sge_spec {
	uint8_t k;	 /* region (key_of) */
	uint16_t off;	 /* from its iova */
	uint32_t length; /* bytes */
};

static void post_recv(struct fqp *q, uint64_t wr_id, uint32_t num_sge, const struct sge_spec *s,
		      uint32_t n)
{
	struct sofd_qp *qp = q->qp;
	struct sof_ring_idx *idx = q->srq ? &srq->shm->rq : &qp->shm->rq;
	uint8_t *ring =
	    q->srq ? (uint8_t *)srq->shm + SOF_SRQ_RQ_OFF : (uint8_t *)qp->shm + SOF_QP_RQ_OFF;
	uint32_t tail = atomic_load(&idx->tail), head = atomic_load(&idx->head);
	struct sof_rwqe *w;

	if (tail - head >= RQ_SIZE)
		return; /* full: the library says ENOMEM */
	w = (struct sof_rwqe *)(ring + (size_t)(tail & (RQ_SIZE - 1)) * SOF_RWQE_STRIDE(RQ_SGE));
	w->wr_id = wr_id;
	w->num_sge = num_sge;
	for (uint32_t i = 0; i < n && i < RQ_SGE; i++) {
		w->sge[i].addr = iova_of(s[i].k) + s[i].off;
		w->sge[i].length = s[i].length;
		w->sge[i].lkey = key_of(s[i].k);
	}
	atomic_store(&idx->tail, tail + 1);
}

struct send_spec {
	uint32_t opcode, flags;
	uint32_t num_sge;
	struct sge_spec sge[SQ_SGE];
	uint32_t inline_len;
	uint32_t rkey;
	uint64_t raddr, compare_add, swap;
	uint32_t imm;
	/* UD */
	uint32_t rqpn, rqkey;
	const uint8_t *dgid;
	uint8_t sgid_index;
};

static uint8_t *nsq_slot(struct sofd_qp *qp, uint32_t idx)
{
	return (uint8_t *)qp->nsq + SOF_NSQ_RING_OFF +
	       (size_t)(idx & (SQ_SIZE - 1)) * qp->sq_stride;
}

static void post_send(struct fqp *q, uint64_t wr_id, const struct send_spec *s)
{
	struct sofd_qp *qp = q->qp;
	uint32_t tail = atomic_load(&qp->nsq->idx.tail);
	struct sof_nwqe *e;

	if (tail - atomic_load(&qp->nsq->done) >= SQ_SIZE)
		return; /* full */
	e = (struct sof_nwqe *)nsq_slot(qp, tail);
	memset(e, 0, sizeof(*e));
	e->wr_id = wr_id;
	e->opcode = s->opcode;
	e->send_flags = s->flags;
	e->imm_data = s->imm;
	e->rkey = s->rkey;
	e->remote_addr = s->raddr;
	e->compare_add = s->compare_add;
	e->swap = s->swap;
	if (s->flags & IBV_SEND_INLINE) {
		e->inline_len = s->inline_len;
		memset(e->sge, 0x5a, s->inline_len < SQ_INLINE ? s->inline_len : SQ_INLINE);
	} else {
		e->num_sge = s->num_sge;
		for (uint32_t i = 0; i < s->num_sge && i < SQ_SGE; i++) {
			e->sge[i].addr = iova_of(s->sge[i].k) + s->sge[i].off;
			e->sge[i].length = s->sge[i].length;
			e->sge[i].lkey = key_of(s->sge[i].k);
		}
	}
	if (s->dgid) {
		e->remote_qpn = s->rqpn;
		e->remote_qkey = s->rqkey;
		memcpy(e->dgid, s->dgid, 16);
		e->sgid_index = s->sgid_index;
		e->hop_limit = 64;
	}
	atomic_store(&qp->nsq->idx.tail, tail + 1);
}

/* The doorbell, as the epoll loop sees it: the connection's own (made
 * with its first QP), or every connection's at once (and the timer
 * rearmed). */
static void doorbell(void) { sof_tp_event(conn->db ? &conn->db->p : &sofd.doorbell); }

/* What the first byte of an input posts before its commands. */
enum {
	S_RECV = 0x03,	   /* rounds of the receive WQEs below (0-3) */
	S_SEND_RC = 0x04,  /* the RC QP's send WQEs below */
	S_SEND_RCS = 0x08, /* the SRQ QP's */
	S_SEND_UX = 0x10,  /* the UC and UD QPs' */
	S_ARM = 0x20,	   /* CQs armed for the next completion */
	S_CQ = 0xc0,	   /* CQ size: 4 << (2 * bits) */
};

static const struct {
	uint32_t n;
	struct sge_spec s[RQ_SGE];
} recv_set[] = {
    {1, {{M_LOCAL, 0, 4096}}},
    {2, {{M_LOCAL, 8192, 100}, {M_RW, 0, 3000}}},
    {1, {{M_LOCAL, 12000, 4384}}},
    {3, {{M_RUNS, 4000, 200}, {M_RUNS, 8190, 4000}, {M_LOCAL, 4096, 4096}}},
};

#define SIG IBV_SEND_SIGNALED

/* What the peers can answer: RC, 11 PSNs from 0x100 (READ 0x104-0x106,
 * FETCH_ADD 0x107, the fenced CMP_SWAP after its answer) */
static const struct send_spec rc_sends[] = {
    {.opcode = IBV_WR_SEND, .flags = SIG, .num_sge = 1, .sge = {{M_RW, 0, 100}}},
    {.opcode = IBV_WR_RDMA_WRITE,
     .num_sge = 2,
     .sge = {{M_RW, 100, 2000}, {M_RUNS, 4000, 500}},
     .rkey = 0xabcd,
     .raddr = 0x5000},
    {.opcode = IBV_WR_RDMA_READ,
     .flags = SIG,
     .num_sge = 1,
     .sge = {{M_LOCAL, 0, 3000}},
     .rkey = 0xabcd,
     .raddr = 0x9000},
    {.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
     .flags = SIG,
     .num_sge = 1,
     .sge = {{M_RW, 4096, 8}},
     .rkey = 0xabcd,
     .raddr = 0x10,
     .compare_add = 5},
    {.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
     .flags = SIG | IBV_SEND_FENCE,
     .num_sge = 1,
     .sge = {{M_RW, 4104, 8}},
     .rkey = 0xabcd,
     .raddr = 0x18,
     .swap = 7},
    {.opcode = IBV_WR_SEND_WITH_IMM,
     .flags = IBV_SEND_INLINE | IBV_SEND_SOLICITED,
     .inline_len = 20,
     .imm = 0x01020304},
    {.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
     .flags = SIG,
     .rkey = 0xabcd,
     .raddr = 0x100,
     .imm = 0x05060708},
};

/* the SRQ QP: a READ from 0xfffffc into two regions, a SEND over the
 * PSN wrap, a FETCH_ADD that waits for the READ (max_rd_atomic 1) */
static const struct send_spec rcs_sends[] = {
    {.opcode = IBV_WR_RDMA_READ,
     .flags = SIG,
     .num_sge = 2,
     .sge = {{M_LOCAL, 0, 300}, {M_RUNS, 4000, 300}},
     .rkey = 0x77,
     .raddr = 0x1000},
    {.opcode = IBV_WR_SEND, .flags = SIG, .num_sge = 1, .sge = {{M_RW, 0, 700}}},
    {.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
     .flags = SIG,
     .num_sge = 1,
     .sge = {{M_HIGH, 8, 8}},
     .rkey = 0x77,
     .raddr = 0x20,
     .compare_add = 1},
};

static const struct send_spec uc_sends[] = {
    {.opcode = IBV_WR_SEND, .flags = SIG, .num_sge = 1, .sge = {{M_RW, 0, 100}}},
    {.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
     .flags = SIG,
     .num_sge = 1,
     .sge = {{M_RW, 0, 1500}},
     .rkey = 0x99,
     .raddr = 0x2000,
     .imm = 7},
};

static const struct send_spec ud_send = {.opcode = IBV_WR_SEND,
					 .flags = SIG,
					 .num_sge = 1,
					 .sge = {{M_RW, 0, 64}},
					 .rqpn = 0x456,
					 .rqkey = 0x2222,
					 .dgid = peer4};

/* Attach the UD QP to the group, or detach it. 0 or -errno. */
static int mcast(bool attach)
{
	struct sof_mcast_req r;

	memset(&r, 0, sizeof(r));
	r.qpn = qps[Q_UD].qp ? qps[Q_UD].qp->qpn : 0;
	memcpy(r.gid, group4, 16);
	return call(attach ? SOF_OP_ATTACH_MCAST : SOF_OP_DETACH_MCAST, &r, sizeof(r), NULL, 0,
		    NULL, 0);
}

/* ---- the state every input starts from ------------------------------------------- */

static void reset(uint8_t how)
{
	uint32_t cqsize = 4u << (2 * ((how & S_CQ) >> 6));
	uint64_t wr_id = 1000;

	for (int i = 0; i < NMR; i++) {
		if (!mrs[i].registered)
			reg_mr(&mrs[i]);
		for (uint32_t r = 0; r < mrs[i].nruns; r++)
			memset(mrs[i].mem[r], 0, (size_t)mrs[i].pages * 4096);
	}
	for (int i = 0; i < 2; i++) {
		struct sof_cq_shm *c = (i ? rcq : scq)->shm;

		atomic_store(&c->tail, 0);
		atomic_store(&c->head, 0);
		atomic_store(&c->size, cqsize);
		atomic_store(&c->armed, how & S_ARM ? SOF_CQ_ARM_NEXT : SOF_CQ_ARM_NONE);
		atomic_store(&c->attention, 0);
		atomic_store(&c->overflow, 0);
		atomic_store(&c->event_pending, 0);
	}
	atomic_store(&srq->shm->rq.head, 0);
	atomic_store(&srq->shm->rq.tail, 0);
	atomic_store(&srq->shm->limit, 2);
	for (int i = 0; i < NQP; i++) {
		struct fqp *q = &qps[i];
		struct sofd_qp *qp;
		struct sof_modify_qp_req r;

		if (!q->qp)
			create_qp(q);
		qp = q->qp;
		atomic_store(&qp->shm->rq.head, 0);
		atomic_store(&qp->shm->rq.tail, 0);
		atomic_store(&qp->nsq->idx.head, 0);
		atomic_store(&qp->nsq->idx.tail, 0);
		atomic_store(&qp->nsq->done, 0);
		for (uint32_t s = IBV_QPS_RESET; s <= q->final_state; s++) {
			modify_req(q, s, &r);
			must(modify(q, &r), "MODIFY_QP");
		}
	}
	must(mcast(true), "ATTACH_MCAST"); /* again: harmless */
	for (uint32_t round = 0; round < (how & S_RECV); round++)
		for (int i = 0; i < NQP; i++) {
			if (qps[i].type == IBV_QPT_UD) {
				static const struct sge_spec ud[2] = {{M_LOCAL, 0, 40},
								      {M_RW, 0, 4096}};

				post_recv(&qps[i], wr_id++, 2, ud, 2);
				continue;
			}
			for (size_t j = 0; j < SOF_ARRAY_SIZE(recv_set); j++)
				post_recv(&qps[i], wr_id++, recv_set[j].n, recv_set[j].s,
					  recv_set[j].n);
		}
	if (how & S_SEND_RC)
		for (size_t j = 0; j < SOF_ARRAY_SIZE(rc_sends); j++)
			post_send(&qps[Q_RC], wr_id++, &rc_sends[j]);
	if (how & S_SEND_RCS)
		for (size_t j = 0; j < SOF_ARRAY_SIZE(rcs_sends); j++)
			post_send(&qps[Q_RCS], wr_id++, &rcs_sends[j]);
	if (how & S_SEND_UX) {
		for (size_t j = 0; j < SOF_ARRAY_SIZE(uc_sends); j++)
			post_send(&qps[Q_UC], wr_id++, &uc_sends[j]);
		post_send(&qps[Q_UD], wr_id++, &ud_send);
	}
	doorbell();
}

/* ---- commands ------------------------------------------------------------------ */

/* Packet command byte: low three bits the QP (6, 7: the BTH's QPN is
 * left alone), then these. */
enum {
	P_PEER = 0x10, /* from the QP's peer (else from a stranger) */
	P_ICRC = 0x20, /* append a correct ICRC */
	P_REL = 0x40,  /* PSN counts from the QP's; VA from the region's iova */
	P_KEY = 0x80,  /* R_Key: one of the regions' (low bits pick); Q_Key: the QP's */
};
/* Packet length word: the low 15 bits are the bytes that follow; with
 * this bit, a fill of (16 bits) & 0x1fff bytes of one (8 bits) value
 * follows them. */
#define P_FILL 0x8000u

/* Command bytes: the low four bits select. */
enum {
	C_PKT = 0, /* 0-7: a packet (the low three bits: its QP) */
	C_TICK = 8,
	C_ACKS,
	C_SEND,
	C_RECV,
	C_MODIFY,
	C_POKE,
	C_DEREG, /* or destroy a QP */
	C_DRAIN,
};
/* C_TICK with this bit: the stall instead (above) */
#define C_STALLED 0x10u
#define STALL_NS 1000000000u

static const uint8_t *family_peer(const struct fqp *q) { return q && q->dgid ? q->dgid : peer4; }

static void cmd_packet(uint8_t c, struct in *in)
{
	uint32_t len = get16(in), fill = 0, n;
	struct fqp *q = (c & 7) < NQP ? &qps[c & 7] : NULL;
	bool group = (c & 7) == 7;
	const uint8_t *peer = family_peer(q);
	bool v4 = sof_gid_is_v4(peer), icrc = c & P_ICRC;
	const uint8_t *payload;
	struct roce_addr a;
	struct roce_hdr h;
	uint8_t fillv = 0;
	uint32_t paylen;
	size_t total;
	uint8_t *pkt;

	if (len & P_FILL) {
		fill = get16(in) & 0x1fff;
		fillv = get8(in);
	}
	n = len & 0x7fff;
	if (n > in->n)
		n = (uint32_t)in->n;
	total = (size_t)n + fill + (icrc ? ROCE_ICRC_LEN : 0);
	/* exactly as long as the packet, so that ASan sees an overread */
	pkt = malloc(total ? total : 1);
	if (!pkt)
		return;
	memcpy(pkt, in->p, n);
	in->p += n;
	in->n -= n;
	memset(pkt + n, fillv, fill);
	if (icrc)
		memset(pkt + total - ROCE_ICRC_LEN, 0, ROCE_ICRC_LEN);

	memset(&a, 0, sizeof(a));
	memcpy(a.src, c & P_PEER ? peer : v4 ? stranger4 : stranger6, 16);
	memcpy(a.dst, group ? group4 : v4 ? local4 : local6, 16);
	a.sport = 0xc123;
	a.dport = ROCE_UDP_PORT;

	/* what the fuzzer cannot guess, in a packet that parses */
	if (q && roce_parse(pkt, total, &h, &payload, &paylen) == ROCE_DROP_NONE) {
		const struct roce_opinfo *oi = roce_opinfo(h.opcode);
		struct sof_tqp *t = q->qp ? q->qp->tq.t : NULL;

		h.dqpn = q->qp ? q->qp->qpn : q->dead_qpn;
		if ((c & P_REL) && t)
			h.psn = (h.psn + (oi->flags & ROCE_F_RESP ? t->una_psn : t->epsn)) &
				ROCE_PSN_MASK;
		if ((oi->flags & (ROCE_F_RETH | ROCE_F_ATMETH)) && (c & P_KEY)) {
			uint32_t k = h.rkey;

			h.rkey = key_of(k);
			if (c & P_REL)
				h.va += iova_of(k);
		}
		if ((oi->flags & ROCE_F_DETH) && (c & P_KEY))
			h.qkey = q->qkey;
		/* a SACK's base PSN counts from the oldest unacknowledged too */
		if ((c & P_REL) && t && h.ext && (h.opcode & ~ROCE_SVC_MASK) == ROCE_ACK &&
		    roce_sack_len_ok(paylen)) {
			uint8_t *b = pkt + (payload - pkt) + 1;
			uint32_t base =
			    ((uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2]) + t->una_psn;

			b[0] = (uint8_t)(base >> 16);
			b[1] = (uint8_t)(base >> 8);
			b[2] = (uint8_t)base;
		}
		roce_hdr_write(pkt, &h);
	} else if (group && roce_parse(pkt, total, &h, &payload, &paylen) == ROCE_DROP_NONE) {
		h.dqpn = SOF_MCAST_QPN;
		if (c & P_KEY)
			h.qkey = qps[Q_UD].qkey;
		roce_hdr_write(pkt, &h);
	}
	if (icrc)
		roce_icrc_append(&a, pkt, total - ROCE_ICRC_LEN);
	tp_input(pkt, total, &a);
	free(pkt);
}

/* Every QP's timers expire. */
static void cmd_tick(void)
{
	for (int i = 0; i < NQP; i++) {
		struct sof_tqp *t = qps[i].qp ? qps[i].qp->tq.t : NULL;
		uint64_t now;

		if (!t)
			continue;
		/* an early go-back first, when one is due before the timeout
		 * (and before an RNR wait ends, which sends and arms anew); it
		 * must leave the transport timer where it was */
		if (t->probe_ns && (!t->timer_ns || t->probe_ns < t->timer_ns) &&
		    (!t->rnr_ns || t->probe_ns < t->rnr_ns)) {
			uint64_t deadline = t->timer_ns;

			tp_req_timer(t, t->probe_ns);
			if (t->timer_ns && t->timer_ns != deadline)
				FAIL("QP %d: the early go-back moved the timer", i);
		}
		now = t->timer_ns > t->rnr_ns ? t->timer_ns : t->rnr_ns;
		if (now)
			tp_req_timer(t, now);
	}
	tp_timer_update();
}

/* The process was not scheduled for STALL_NS: what it timed before
 * lies that much further back (transport/sack.c, tp_rtt_sample). */
static void cmd_stall(void)
{
	for (int i = 0; i < NQP; i++) {
		struct sof_tqp *t = qps[i].qp ? qps[i].qp->tq.t : NULL;

		if (!t)
			continue;
		if (t->rtt_ns > STALL_NS)
			t->rtt_ns -= STALL_NS;
		if (t->sack_rack_ns > STALL_NS)
			t->sack_rack_ns -= STALL_NS;
		if (t->sack_first_ns > STALL_NS)
			t->sack_first_ns -= STALL_NS;
		for (uint32_t j = 0; t->sack_tx && j < TP_OOO_SLOTS; j++)
			if (t->sack_tx[j].ns > STALL_NS)
				t->sack_tx[j].ns -= STALL_NS;
	}
}

static void get_sge(struct in *in, struct sge_spec *s)
{
	s->k = get8(in);
	s->off = (uint16_t)get16(in);
	s->length = get16(in);
}

static void cmd_send(struct in *in)
{
	static const uint32_t ops[] = {
	    IBV_WR_SEND,
	    IBV_WR_SEND_WITH_IMM,
	    IBV_WR_RDMA_WRITE,
	    IBV_WR_RDMA_WRITE_WITH_IMM,
	    IBV_WR_RDMA_READ,
	    IBV_WR_ATOMIC_CMP_AND_SWP,
	    IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	static const uint8_t *const dgids[] = {peer4, peer6, local4, stranger6, group4};
	struct fqp *q = &qps[get8(in) % NQP];
	struct send_spec s;
	uint8_t op = get8(in), fl = get8(in), ns = get8(in);

	if (!q->qp)
		return;
	memset(&s, 0, sizeof(s));
	/* mostly real opcodes, sometimes any */
	s.opcode = op < 0xf0 ? ops[op % SOF_ARRAY_SIZE(ops)] : op & 0x0f;
	s.flags = (fl & 1 ? IBV_SEND_SIGNALED : 0) | (fl & 2 ? IBV_SEND_FENCE : 0) |
		  (fl & 4 ? IBV_SEND_SOLICITED : 0) | (fl & 8 ? IBV_SEND_INLINE : 0);
	if (s.flags & IBV_SEND_INLINE) {
		s.inline_len = ns;
	} else {
		s.num_sge = ns & 0x80 ? ns : ns % (SQ_SGE + 1);
		for (uint32_t i = 0; i < s.num_sge && i < SQ_SGE; i++)
			get_sge(in, &s.sge[i]);
	}
	s.rkey = get32(in);
	s.raddr = get32(in);
	s.compare_add = get8(in);
	s.swap = get8(in);
	s.imm = get8(in);
	if (q->type == IBV_QPT_UD) {
		s.rqpn = get8(in);
		s.rqkey = get8(in);
		s.dgid = dgids[get8(in) % SOF_ARRAY_SIZE(dgids)];
		s.sgid_index = get8(in) % 4;
		if (s.dgid == group4) { /* to the group, members here included */
			s.rqpn = SOF_MCAST_QPN;
			s.rqkey = qps[Q_UD].qkey;
		}
	}
	if (fl & 0x80) { /* the owner writes what it likes into the slot */
		struct sofd_qp *qp = q->qp;
		uint32_t tail = atomic_load(&qp->nsq->idx.tail);
		uint8_t *slot = nsq_slot(qp, tail);

		for (uint32_t i = 0; i < qp->sq_stride && in->n; i++)
			slot[i] = get8(in);
		atomic_store(&qp->nsq->idx.tail, tail + 1);
	} else {
		post_send(q, 0x5000 + in->n, &s);
	}
	doorbell();
}

static void cmd_recv(struct in *in)
{
	struct fqp *q = &qps[get8(in) % NQP];
	uint8_t ns = get8(in);
	struct sge_spec s[RQ_SGE];
	uint32_t n = ns & 0x80 ? RQ_SGE : ns % (RQ_SGE + 1);

	if (!q->qp)
		return;
	memset(s, 0, sizeof(s));
	for (uint32_t i = 0; i < n; i++)
		get_sge(in, &s[i]);
	post_recv(q, 0x6000 + in->n, ns & 0x80 ? ns : n, s, n);
}

static void cmd_modify(struct in *in)
{
	static const uint8_t *const dgids[] = {peer4, peer6, local4, stranger4, NULL};
	struct fqp *q = &qps[get8(in) % NQP];
	struct sof_modify_qp_req r;
	uint8_t nf;

	if (!q->qp)
		return;
	modify_req(q, get8(in) % (IBV_QPS_ERR + 1), &r);
	r.attr_mask = get32(in);
	nf = get8(in) % 4;
	for (uint8_t i = 0; i < nf; i++) {
		uint8_t f = get8(in);
		uint32_t v = get32(in);

		switch (f % 14) {
		case 0:
			r.path_mtu = (uint8_t)v;
			break;
		case 1:
			r.max_dest_rd_atomic = (uint8_t)v;
			break;
		case 2:
			r.max_rd_atomic = (uint8_t)v;
			break;
		case 3:
			r.timeout = (uint8_t)v;
			break;
		case 4:
			r.retry_cnt = (uint8_t)v;
			break;
		case 5:
			r.rnr_retry = (uint8_t)v;
			break;
		case 6:
			r.min_rnr_timer = (uint8_t)v;
			break;
		case 7:
			r.sq_psn = v;
			break;
		case 8:
			r.rq_psn = v;
			break;
		case 9:
			r.access = v;
			break;
		case 10:
			r.sgid_index = (uint8_t)v;
			break;
		case 11: {
			const uint8_t *g = dgids[v % SOF_ARRAY_SIZE(dgids)];

			if (g)
				memcpy(r.dgid, g, 16);
			else
				memset(r.dgid, 0, 16);
			break;
		}
		case 12:
			r.dest_qpn = v;
			break;
		default:
			r.qkey = v;
			break;
		}
	}
	(void)modify(q, &r);
}

/* The words of the shared segments the owner may write anything into:
 * six per QP (state, receive ring head and tail, network send queue head,
 * tail and done), then the SRQ's and the CQs'. NULL: a destroyed QP. */
#define NPOKES (NQP * 6 + 11)

static _Atomic uint32_t *poke_word(uint32_t i)
{
	if (i < NQP * 6) {
		struct sofd_qp *qp = qps[i / 6].qp;
		_Atomic uint32_t *w[6];

		if (!qp)
			return NULL;
		w[0] = &qp->shm->state;
		w[1] = &qp->shm->rq.head;
		w[2] = &qp->shm->rq.tail;
		w[3] = &qp->nsq->idx.head;
		w[4] = &qp->nsq->idx.tail;
		w[5] = &qp->nsq->done;
		return w[i % 6];
	}
	switch (i - NQP * 6) {
	case 0:
		return &srq->shm->limit;
	case 1:
		return &srq->shm->rq.head;
	case 2:
		return &srq->shm->rq.tail;
	case 3:
		return &scq->shm->size;
	case 4:
		return &scq->shm->head;
	case 5:
		return &scq->shm->tail;
	case 6:
		return &scq->shm->armed;
	case 7:
		return &rcq->shm->size;
	case 8:
		return &rcq->shm->head;
	case 9:
		return &rcq->shm->tail;
	default:
		return &rcq->shm->armed;
	}
}

static void cmd_poke(struct in *in)
{
	_Atomic uint32_t *p = poke_word(get8(in) % NPOKES);
	uint32_t v = get32(in);

	if (!p)
		return;
	/* not the resize lock of a CQ's tail, nor a value that pushes
	 * reach it from: producers wait a resize out (common/cqring.c,
	 * 100000 yields a push), which is slow, not wrong */
	if (p == &scq->shm->tail || p == &rcq->shm->tail)
		v &= SOF_CQ_TAIL_LOCK / 2 - 1;
	atomic_store(p, v);
	doorbell();
}

/* Deregister a region, (high bit) destroy a QP, or (0x40) detach the UD
 * QP from the group or attach it again; reset() makes them again for the
 * next input. */
/* dereg's MCAST_LOOP (x: 0x60 | 0x10 steered | QP). The flags byte picks
 * the source GID (bits 0-1), the group (2-3), immediate data (4), the
 * solicited bit (5), a Q_Key of its own (6: else the QP's) and a request
 * length that disagrees with the one it states (7); then the length and
 * the payload's fill byte. */
static void cmd_mcast_loop(uint8_t x, struct in *in)
{
	static const uint8_t *const gids[] = {local4, local6, peer4, group4};
	static struct sof_mcast_loop_req r;
	struct fqp *q = &qps[(x & 7) % NQP];
	uint8_t f = get8(in);
	uint32_t qkey = f & 0x40 ? get32(in) : q->qkey, len = get16(in) & 0x1fff;
	size_t rlen;
	bool was;

	memset(&r, 0, sizeof(r));
	r.qpn = q->qp ? q->qp->qpn : q->dead_qpn;
	r.qkey = qkey;
	r.imm_be = 0x03020100u;
	r.flags =
	    (uint16_t)((f & 0x10 ? SOF_MCAST_LOOP_IMM : 0) | (f & 0x20 ? SOF_MCAST_LOOP_SE : 0));
	r.len = (uint16_t)len;
	memcpy(r.sgid, gids[f & 3], 16);
	memcpy(r.mgid, gids[(f >> 2 & 3) ^ 3], 16); /* 0: the group */
	memset(r.data, get8(in), len < sizeof(r.data) ? len : sizeof(r.data));
	rlen = SOF_MCAST_LOOP_HDR + (len < sizeof(r.data) ? len : sizeof(r.data));
	if (f & 0x80)
		rlen = rlen > SOF_MCAST_LOOP_HDR ? rlen - 1 : rlen + 1;
	if (!q->qp) {
		(void)call(SOF_OP_MCAST_LOOP, &r, rlen, NULL, 0, NULL, 0);
		return;
	}
	/* the daemon's record that the QP runs in its program (no slot here) */
	was = q->qp->steered;
	q->qp->steered = (x & 0x10) != 0;
	(void)call(SOF_OP_MCAST_LOOP, &r, rlen, NULL, 0, NULL, 0);
	q->qp->steered = was;
}

static void cmd_dereg(struct in *in)
{
	uint8_t x = get8(in);

	if ((x & 0xe0) == 0x60) {
		cmd_mcast_loop(x, in);
	} else if (x & 0x80) {
		struct fqp *q = &qps[x % NQP];
		struct sof_qp_req r = {.qpn = q->qp ? q->qp->qpn : 0};

		if (!q->qp)
			return;
		/* an attached QP is not destroyed (-EBUSY): detached first */
		if (q == &qps[Q_UD]) {
			must(mcast(true), "ATTACH_MCAST");
			if (call(SOF_OP_DESTROY_QP, &r, sizeof(r), NULL, 0, NULL, 0) != -EBUSY)
				FAIL("DESTROY_QP of an attached QP is not -EBUSY");
			must(mcast(false), "DETACH_MCAST");
		}
		must(call(SOF_OP_DESTROY_QP, &r, sizeof(r), NULL, 0, NULL, 0), "DESTROY_QP");
		q->dead_qpn = r.qpn;
		q->qp = NULL;
	} else if (x & 0x40) {
		if (qps[Q_UD].qp && mcast(false) == -EINVAL)
			must(mcast(true), "ATTACH_MCAST");
	} else {
		struct fmr *m = &mrs[x % NMR];
		struct sof_dereg_mr_req r = {.lkey = m->key};

		if (!m->registered)
			return;
		must(call(SOF_OP_DEREG_MR, &r, sizeof(r), NULL, 0, NULL, 0), "DEREG_MR");
		m->registered = false;
	}
}

static void cmd_drain(struct in *in)
{
	struct sof_cq_shm *c = (get8(in) & 1 ? rcq : scq)->shm;

	atomic_store(&c->head, atomic_load(&c->tail));
}

/* What must hold whatever the packets said. */
static void check(void)
{
	for (int i = 0; i < NQP; i++) {
		struct sof_tqp *t = qps[i].qp ? qps[i].qp->tq.t : NULL;

		if (!t)
			continue;
		if (t->wq_tail - t->wq_head > SQ_SIZE ||
		    t->wq_send - t->wq_head > t->wq_tail - t->wq_head)
			FAIL("QP %d: send ring head %u send %u tail %u", i, t->wq_head, t->wq_send,
			     t->wq_tail);
	}
}

/* SOF_FUZZ_TRACE=1: each command and the QPs' state after it, to see
 * what a crashing input does. */
static void trace(uint8_t c)
{
	static int on = -1;

	if (on < 0)
		on = getenv("SOF_FUZZ_TRACE") != NULL;
	if (!on)
		return;
	fprintf(stderr, "command 0x%02x:", c);
	for (int i = 0; i < NQP; i++) {
		const struct sof_tqp *t = qps[i].qp ? qps[i].qp->tq.t : NULL;

		if (t)
			fprintf(stderr, " [%d st %u wq %u/%u/%u psn %06x una %06x epsn %06x%s%s]",
				i, t->state, t->wq_head, t->wq_send, t->wq_tail, t->psn, t->una_psn,
				t->epsn, t->timer_ns ? " timer" : "", t->rnr_ns ? " rnr" : "");
	}
	fputc('\n', stderr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};

	reset(get8(&in));
	while (in.n) {
		uint8_t c = get8(&in);

		trace(c);

		switch (c & 0x0f) {
		case C_TICK:
			if (c & C_STALLED)
				cmd_stall();
			else
				cmd_tick();
			break;
		case C_ACKS:
			tp_input_end();
			break;
		case C_SEND:
			cmd_send(&in);
			break;
		case C_RECV:
			cmd_recv(&in);
			break;
		case C_MODIFY:
			cmd_modify(&in);
			break;
		case C_POKE:
			cmd_poke(&in);
			break;
		case C_DEREG:
			cmd_dereg(&in);
			break;
		case C_DRAIN:
			cmd_drain(&in);
			break;
		default:
			cmd_packet(c, &in);
			break;
		}
	}
	tp_input_end();
	trace(0);
	check();
	return 0;
}

/* ---- the seed corpus ------------------------------------------------------------- */

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

/* A packet command: header h (PSN, VA and key relative with P_REL and
 * P_KEY), paylen bytes of payload of value 0xa5, pad as a sender would. */
static void seed_pkt(struct out *o, uint32_t q, uint8_t flags, struct roce_hdr *h, uint32_t paylen)
{
	uint8_t hdr[ROCE_MAX_HDR];
	size_t hl;

	h->pad = (uint8_t)((4 - (paylen & 3)) & 3);
	if (!h->pkey)
		h->pkey = 0xffff;
	hl = roce_hdr_write(hdr, h);
	put8(o, C_PKT | q | flags);
	put16(o, (uint32_t)hl | (paylen + h->pad ? P_FILL : 0));
	if (paylen + h->pad) {
		put16(o, paylen + h->pad);
		put8(o, 0xa5);
	}
	for (size_t i = 0; i < hl; i++)
		put8(o, hdr[i]);
}

#define STD (P_PEER | P_ICRC | P_REL | P_KEY)
/* send completions after the SEND of rc_sends is acknowledged (ALL) */
#define SACK_SCQE 4
/* the RC QPs with sends in ALL (Q_RC, Q_RCS): one probe each on a tick */
#define RC_SENDERS 2

/* An ACK with the extension's bit (transport/sack.c) of PSN psn carrying
 * a SACK of base psn + 1 (both relative) and the bits given, or, with
 * kind not ROCE_SACK_KIND, a malformed one. */
static void seed_sack_map(struct out *o, int32_t psn, uint8_t kind, const uint32_t *bits,
			  unsigned n, uint32_t mapbits)
{
	uint8_t buf[ROCE_MAX_HDR + ROCE_SACK_MAX_LEN], map[ROCE_SACK_MAX_BITS / 8];
	struct roce_hdr h;
	size_t hl, len;

	memset(&h, 0, sizeof(h));
	h.opcode = ROCE_SVC_RC | ROCE_ACK;
	h.pkey = 0xffff;
	h.psn = (uint32_t)psn & ROCE_PSN_MASK;
	h.ext = true;
	hl = roce_hdr_write(buf, &h);
	memset(map, 0, sizeof(map));
	for (unsigned i = 0; i < n; i++)
		map[bits[i] >> 3] |= (uint8_t)(0x80u >> (bits[i] & 7));
	len = roce_sack_write(buf + hl, (uint32_t)psn + 1, map, mapbits);
	buf[hl] = kind;
	put8(o, C_PKT | Q_RC | STD);
	put16(o, (uint32_t)(hl + len));
	for (size_t i = 0; i < hl + len; i++)
		put8(o, buf[i]);
}

static void seed_sack(struct out *o, int32_t psn, uint8_t kind, const uint32_t *bits, unsigned n)
{
	seed_sack_map(o, psn, kind, bits, n, ROCE_SACK_BITS);
}

static void hdr(struct roce_hdr *h, uint8_t opcode, int32_t psn)
{
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->psn = (uint32_t)psn & ROCE_PSN_MASK;
	h->ackreq = true;
}

/* One RC packet from the peer: opcode at psn, paylen bytes (h keeps its
 * header for a copy or a change before the next) */
static void rc_pkt(struct out *o, struct roce_hdr *h, uint8_t opcode, int32_t psn, uint32_t paylen)
{
	hdr(h, ROCE_SVC_RC | opcode, psn);
	seed_pkt(o, Q_RC, STD, h, paylen);
}

/* The command posting one signaled RDMA WRITE of 100 bytes on the RC QP. */
static void seed_write_wr(struct out *o)
{
	put8(o, C_SEND);
	put8(o, Q_RC);
	put8(o, 2); /* RDMA WRITE */
	put8(o, 1); /* signaled */
	put8(o, 1); /* one SGE */
	put8(o, M_RW);
	put16(o, 0);
	put16(o, 100);
	for (int i = 0; i < 11; i++)
		put8(o, 0);
}

/* Expectations a seed is checked against. The completion counts are
 * exact, not lower bounds (a bound of 0 could never fail): the CQs are
 * shared by the QPs, so a seed that posts to several (ALL) counts their
 * completions too, and any change of the engine's behaviour shows. */
struct expect {
	int drop;	     /* SOF_DROP_* that must grow, -1: none may, -2: any */
	uint32_t rcqe, scqe; /* completions on the recv / send CQ, exactly */
	bool error;	     /* the QP it is about ends in ERROR */
	int qp;		     /* which, -1: none */
};

/* probes >= 0: exactly that many early go-backs must come, and one
 * timeout only */
static void seed_write(const char *dir, const char *name, const struct out *o, struct expect e,
		       int probes)
{
	uint64_t before[SOF_DROP_NR], p0 = sofd.counters[SOF_CNT_probes];
	uint64_t timeouts = sofd.counters[SOF_CNT_timeouts];
	char path[512];
	FILE *f;

	memcpy(before, sofd.drops, sizeof(before));
	LLVMFuzzerTestOneInput(o->b, o->n);
	if (probes >= 0 && (sofd.counters[SOF_CNT_probes] - p0 != (uint64_t)probes ||
			    sofd.counters[SOF_CNT_timeouts] != timeouts + 1))
		FAIL("seed %s: %llu early go-backs, %llu timeouts", name,
		     (unsigned long long)(sofd.counters[SOF_CNT_probes] - p0),
		     (unsigned long long)(sofd.counters[SOF_CNT_timeouts] - timeouts));
	for (int d = 0; d < SOF_DROP_NR; d++) {
		bool grew = sofd.drops[d] != before[d];

		if (e.drop == d && !grew)
			FAIL("seed %s: not dropped for reason %d", name, d);
		if (e.drop == -1 && grew)
			FAIL("seed %s: dropped for reason %d", name, d);
	}
	if (atomic_load(&rcq->shm->tail) != e.rcqe || atomic_load(&scq->shm->tail) != e.scqe)
		FAIL("seed %s: %u/%u completions, want %u/%u", name, atomic_load(&rcq->shm->tail),
		     atomic_load(&scq->shm->tail), e.rcqe, e.scqe);
	if (e.qp >= 0 && qps[e.qp].qp && qps[e.qp].qp->tq.t &&
	    (qps[e.qp].qp->tq.t->state == IBV_QPS_ERR) != e.error)
		FAIL("seed %s: QP state %u", name, qps[e.qp].qp->tq.t->state);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(o->b, 1, o->n, f) != o->n || fclose(f))
		FAIL("%s: %m", path);
}

/* The READ of rc_sends answered from its first PSN on: FIRST (unless
 * from_first is false: it came already), MIDDLE and LAST, each in turn. */
static void seed_read_rest(struct out *o, struct roce_hdr *h, bool from_first)
{
	if (from_first) {
		rc_pkt(o, h, ROCE_READ_RESP_FIRST, 0, 1024);
	}
	rc_pkt(o, h, ROCE_READ_RESP_MIDDLE, 0, 1024);
	rc_pkt(o, h, ROCE_READ_RESP_LAST, 0, 3000 - 2048);
}

/* The READ of rc_sends placed its 3000 bytes (the responses' fill), once
 * and nothing beyond. */
static void read_placed(const char *name)
{
	const uint8_t *m = mrs[M_LOCAL].mem[0];

	for (uint32_t i = 0; i <= 3000; i++)
		if (m[i] != (i < 3000 ? 0xa5 : 0))
			FAIL("seed %s: READ byte %u is 0x%02x", name, i, m[i]);
}

#define RECV2 (2 | S_CQ)
#define ALL (3 | S_SEND_RC | S_SEND_RCS | S_SEND_UX | S_CQ)
#define SEED(name, ...) seed_write(dir, name, &o, (struct expect){__VA_ARGS__}, -1)
/* SEED_PROBES(name, n, ...): and n early go-backs before one timeout */
#define SEED_PROBES(name, n, ...) seed_write(dir, name, &o, (struct expect){__VA_ARGS__}, n)
#define BEGIN(how) (o.n = 0, put8(&o, how))

static void write_seeds(const char *dir)
{
	struct roce_hdr h;
	struct out o;

	/* ---- the responder, RC */
	BEGIN(RECV2);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 100);
	SEED("rc_send_only", -1, 1, 0, false, Q_RC);

	BEGIN(RECV2);
	rc_pkt(&o, &h, ROCE_SEND_FIRST, 0, 1024);
	rc_pkt(&o, &h, ROCE_SEND_MIDDLE, 0, 1024);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_LAST_IMM, 0);
	h.imm_be = 0x11223344;
	seed_pkt(&o, Q_RC, STD, &h, 77);
	put8(&o, C_ACKS);
	SEED("rc_send_multi", -1, 1, 0, false, Q_RC);

	BEGIN(0 | S_CQ);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 10);
	SEED("rc_send_rnr", -1, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_FIRST, 0); /* 4196 bytes into 4096 */
	seed_pkt(&o, Q_RC, STD, &h, 1024);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_MIDDLE, 0);
	for (int i = 0; i < 3; i++)
		seed_pkt(&o, Q_RC, STD, &h, 1024);
	rc_pkt(&o, &h, ROCE_SEND_LAST, 0, 100);
	SEED("rc_send_too_long", -1, 1, 0, true, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_ONLY, 0);
	h.rkey = M_RW;
	h.va = 16;
	h.dmalen = 1000;
	seed_pkt(&o, Q_RC, STD, &h, 1000);
	SEED("rc_write_only", -1, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_FIRST, 0);
	h.rkey = M_RUNS;
	h.va = 100;
	h.dmalen = 2500;
	seed_pkt(&o, Q_RC, STD, &h, 1024);
	rc_pkt(&o, &h, ROCE_WRITE_MIDDLE, 0, 1024);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_LAST_IMM, 0);
	h.imm_be = 0x55;
	seed_pkt(&o, Q_RC, STD, &h, 452);
	SEED("rc_write_multi_imm", -1, 1, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_ONLY, 0);
	h.rkey = M_RO;
	h.dmalen = 8;
	seed_pkt(&o, Q_RC, STD, &h, 8);
	SEED("rc_write_readonly_mr", -1, 0, 0, true, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_ONLY, 0);
	h.rkey = NMR + 1; /* no such key */
	h.dmalen = 8;
	seed_pkt(&o, Q_RC, STD, &h, 8);
	SEED("bad_rkey", -1, 0, 0, true, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_ONLY, 0);
	h.rkey = M_HIGH;
	h.va = 8192 - 8;
	h.dmalen = 16; /* past the end of the address space */
	seed_pkt(&o, Q_RC, STD, &h, 16);
	SEED("rc_write_past_top", -1, 0, 0, true, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_READ_REQ, 0);
	h.rkey = M_RO;
	h.va = 10;
	h.dmalen = 3000;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	hdr(&h, ROCE_SVC_RC | ROCE_READ_REQ, -3); /* repeated: served again */
	h.rkey = M_RO;
	h.va = 10;
	h.dmalen = 3000;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	SEED("rc_read_and_duplicate", -1, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_FETCH_ADD, 0);
	h.rkey = M_RW;
	h.va = 64;
	h.swap_add = 3;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	hdr(&h, ROCE_SVC_RC | ROCE_CMP_SWAP, 0);
	h.rkey = M_RUNS;
	h.va = 4096;
	h.compare = 0;
	h.swap_add = 9;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	hdr(&h, ROCE_SVC_RC | ROCE_FETCH_ADD, -2); /* the first again: not applied */
	h.rkey = M_RW;
	h.va = 64;
	h.swap_add = 3;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	SEED("rc_atomics_and_duplicate", -1, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_FETCH_ADD, 0);
	h.rkey = M_ODD;
	h.va = 8;
	h.swap_add = 1;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	SEED("rc_atomic_misaligned_word", -1, 0, 0, true, Q_RC); /* va aligned, word not */

	BEGIN(RECV2);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 10);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, -1); /* duplicate: acknowledged only */
	seed_pkt(&o, Q_RC, STD, &h, 10);
	SEED("rc_duplicate_send", -1, 1, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 300); /* beyond the packets kept */
	seed_pkt(&o, Q_RC, STD, &h, 10);
	seed_pkt(&o, Q_RC, STD, &h, 10); /* one NAK for both */
	SEED("rc_psn_sequence_error", SOF_DROP_psn, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 2); /* kept until the gap fills */
	seed_pkt(&o, Q_RC, STD, &h, 10);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_ONLY, 1);
	h.rkey = M_RW;
	h.dmalen = 20;
	seed_pkt(&o, Q_RC, STD, &h, 20);
	seed_pkt(&o, Q_RC, STD, &h, 20); /* a repeat of one kept */
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 10);
	SEED("rc_out_of_order", -1, 2, 0, false, Q_RC);

	BEGIN(RECV2);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0x800000, 10);
	SEED("psn_far_outside_window", SOF_DROP_psn, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	rc_pkt(&o, &h, ROCE_SEND_MIDDLE, 0, 1024);
	SEED("rc_middle_without_first", -1, 0, 0, true, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_FIRST, 0);
	seed_pkt(&o, Q_RCS, STD, &h, 256);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_LAST, 0);
	seed_pkt(&o, Q_RCS, STD, &h, 200);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0); /* PSN wraps */
	seed_pkt(&o, Q_RCS, STD, &h, 3);
	SEED("rc_srq_send_psn_wrap", -1, 0, 2, false, Q_RCS); /* its one CQ */

	/* ---- the completer, RC */
	BEGIN(ALL);
	hdr(&h, ROCE_SVC_RC | ROCE_ACK, 0); /* the SEND */
	seed_pkt(&o, Q_RC, STD, &h, 0);
	hdr(&h, ROCE_SVC_RC | ROCE_ACK, 2); /* and the WRITE; the READ stays */
	seed_pkt(&o, Q_RC, STD, &h, 0);
	SEED("rc_ack", -1, 0, 4, false, Q_RC);

	/* ---- selective acknowledgements (transport/sack.c) */
	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 2); /* ext: kept, SACKed, no NAK */
	h.ext = true;
	seed_pkt(&o, Q_RC, STD, &h, 10);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_ONLY, 1);
	h.ext = true;
	h.rkey = M_RW;
	h.dmalen = 20;
	seed_pkt(&o, Q_RC, STD, &h, 20);
	put8(&o, C_ACKS);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	h.ext = true;
	seed_pkt(&o, Q_RC, STD, &h, 10);
	put8(&o, C_ACKS);
	SEED("rc_sack_out_of_order", -1, 2, 0, false, Q_RC);

	{
		const uint32_t holes[] = {2, 3, 6}, lie_unsent[] = {2, 200}, lie_base[] = {0};

		uint64_t r0 = sofd.counters[SOF_CNT_sack_resends];
		uint64_t l0 = sofd.counters[SOF_CNT_sack_lies], p0, t0;

		BEGIN(ALL); /* the SEND acknowledged; the WRITE's last, the READ, the FETCH_ADD
			       arrived */
		seed_sack(&o, 0, ROCE_SACK_KIND, holes, 3);
		put8(&o, C_TICK);
		SEED("rc_sack_holes", -1, 0, SACK_SCQE, false, Q_RC);
		if (sofd.counters[SOF_CNT_sack_resends] - r0 != 2) /* the WRITE's first two */
			FAIL("seed rc_sack_holes: %llu resends, want 2",
			     (unsigned long long)(sofd.counters[SOF_CNT_sack_resends] - r0));
		BEGIN(ALL);
		seed_sack(&o, 0, ROCE_SACK_KIND, lie_unsent, 2);
		seed_sack(&o, 0, ROCE_SACK_KIND, lie_base, 1);
		seed_sack(&o, 0, 0x00, holes, 3);
		SEED("rc_sack_lies", -1, 0, SACK_SCQE, false, Q_RC);
		if (sofd.counters[SOF_CNT_sack_lies] - l0 != 3 ||
		    sofd.counters[SOF_CNT_sack_resends] - r0 != 2)
			FAIL("seed rc_sack_lies: %llu lies, want 3",
			     (unsigned long long)(sofd.counters[SOF_CNT_sack_lies] - l0));
		/* the same holes in a SACK of a 768-bit map (the longer
		 * maps of a window past 256): the same two resends */
		BEGIN(ALL);
		seed_sack_map(&o, 0, ROCE_SACK_KIND, holes, 3, 3 * ROCE_SACK_BITS);
		put8(&o, C_TICK);
		SEED("rc_sack_long_map", -1, 0, SACK_SCQE, false, Q_RC);
		if (sofd.counters[SOF_CNT_sack_resends] - r0 != 4)
			FAIL("seed rc_sack_long_map: %llu resends, want 4 in all",
			     (unsigned long long)(sofd.counters[SOF_CNT_sack_resends] - r0));
		/* the holes a SACK names are resent; the tail-loss probe
		 * after them is lost too (nothing answers it). The QP that
		 * SACKs defers its transport timer once (a probe that is due
		 * goes meanwhile), the other times out; on the next tick the
		 * first times out too */
		p0 = sofd.counters[SOF_CNT_probes];
		t0 = sofd.counters[SOF_CNT_timeouts];
		BEGIN(ALL);
		seed_sack(&o, 0, ROCE_SACK_KIND, holes, 3);
		put8(&o, C_TICK);
		SEED("rc_sack_probe_lost", -1, 0, SACK_SCQE, false, Q_RC);
		if (sofd.counters[SOF_CNT_probes] - p0 != RC_SENDERS + 1 ||
		    sofd.counters[SOF_CNT_timeouts] - t0 != RC_SENDERS - 1)
			FAIL("seed rc_sack_probe_lost: %llu probes, %llu timeouts",
			     (unsigned long long)(sofd.counters[SOF_CNT_probes] - p0),
			     (unsigned long long)(sofd.counters[SOF_CNT_timeouts] - t0));
		t0 = sofd.counters[SOF_CNT_timeouts];
		BEGIN(ALL);
		seed_sack(&o, 0, ROCE_SACK_KIND, holes, 3);
		put8(&o, C_TICK);
		put8(&o, C_TICK);
		SEED("rc_sack_timer_deferred_once", -1, 0, SACK_SCQE, false, Q_RC);
		/* (Q_RC: deferred, then one; Q_RCS: one on each tick) */
		if (sofd.counters[SOF_CNT_timeouts] - t0 != 3)
			FAIL("seed rc_sack_timer_deferred_once: %llu timeouts, want 3",
			     (unsigned long long)(sofd.counters[SOF_CNT_timeouts] - t0));
		/* fresh QPs (nothing answered yet, the peer unknown): the
		 * first loss draws a probe on each before its timeout */
		p0 = sofd.counters[SOF_CNT_probes];
		BEGIN(ALL);
		put8(&o, C_TICK);
		SEED("rc_sack_fresh_probe", -1, 0, SACK_SCQE - 1, false, Q_RC); /* UC, UD */
		if (sofd.counters[SOF_CNT_probes] - p0 != RC_SENDERS)
			FAIL("seed rc_sack_fresh_probe: %llu probes, want %d",
			     (unsigned long long)(sofd.counters[SOF_CNT_probes] - p0), RC_SENDERS);
	}

	BEGIN(ALL);
	rc_pkt(&o, &h, ROCE_ACK, 3, 0);
	rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, 0, 1024);
	rc_pkt(&o, &h, ROCE_READ_RESP_MIDDLE, 0, 1024);
	rc_pkt(&o, &h, ROCE_READ_RESP_LAST, 0, 3000 - 2048);
	hdr(&h, ROCE_SVC_RC | ROCE_ATOMIC_ACK, 0);
	h.orig = 42;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	hdr(&h, ROCE_SVC_RC | ROCE_ATOMIC_ACK, 0);
	h.orig = 43;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	rc_pkt(&o, &h, ROCE_ACK, 1, 0);
	SEED("rc_read_response_atomic_ack", -1, 0, 8, false, Q_RC);

	/* The READ window (0x104-0x106, 3000 bytes at MTU 1024): responses
	 * out of order, repeated, past the window, too long, and NAKs in the
	 * middle of the READ. Each ends with the READ's bytes placed once,
	 * in full (read_placed), or the QP in ERROR. */
	{
		uint64_t rt = sofd.counters[SOF_CNT_retransmits];

		/* the middle response first (the first one lost or overtaken):
		 * dropped, the rest asked again once; then all three in turn */
		BEGIN(ALL);
		rc_pkt(&o, &h, ROCE_ACK, 3, 0);
		rc_pkt(&o, &h, ROCE_READ_RESP_MIDDLE, 1, 1024);
		seed_read_rest(&o, &h, true);
		SEED("rc_read_response_out_of_order", SOF_DROP_psn, 0, 5, false, Q_RC);
		read_placed("rc_read_response_out_of_order");
		if (sofd.counters[SOF_CNT_retransmits] - rt != 1)
			FAIL("seed rc_read_response_out_of_order: the READ asked again %llu times",
			     (unsigned long long)(sofd.counters[SOF_CNT_retransmits] - rt));

		/* every response twice: the copies dropped, nothing asked
		 * again (they are behind, not ahead) */
		rt = sofd.counters[SOF_CNT_retransmits];
		BEGIN(ALL);
		rc_pkt(&o, &h, ROCE_ACK, 3, 0);
		rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, 0, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, -1, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_MIDDLE, 0, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_MIDDLE, -1, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_LAST, 0, 3000 - 2048);
		rc_pkt(&o, &h, ROCE_READ_RESP_LAST, -1, 3000 - 2048);
		SEED("rc_read_response_duplicates", SOF_DROP_psn, 0, 5, false, Q_RC);
		read_placed("rc_read_response_duplicates");
		if (sofd.counters[SOF_CNT_retransmits] != rt)
			FAIL("seed rc_read_response_duplicates: the READ asked again");

		/* a response of a PSN never sent (past the last request):
		 * dropped, the READ goes on */
		BEGIN(ALL);
		rc_pkt(&o, &h, ROCE_ACK, 3, 0);
		rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, 0, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_LAST, 40, 3000 - 2048);
		rc_pkt(&o, &h, ROCE_READ_RESP_MIDDLE, 0, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_LAST, 0, 3000 - 2048);
		SEED("rc_read_response_past_window", SOF_DROP_psn, 0, 5, false, Q_RC);
		read_placed("rc_read_response_past_window");

		/* a full MIDDLE where the READ has only 952 bytes left:
		 * dropped for its length, the right LAST completes it */
		BEGIN(ALL);
		rc_pkt(&o, &h, ROCE_ACK, 3, 0);
		rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, 0, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_MIDDLE, 0, 1024);
		seed_pkt(&o, Q_RC, STD, &h, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_LAST, 0, 3000 - 2048);
		SEED("rc_read_response_too_long", SOF_DROP_payload, 0, 5, false, Q_RC);
		read_placed("rc_read_response_too_long");

		/* a sequence-error NAK after the first response: the rest is
		 * asked again (by the NAK's implied ACK, which covers the
		 * READ, ack_upto: the NAK itself then finds nothing beyond
		 * the rewound PSN and is counted a PSN drop; or by the NAK
		 * too, when reread_ok allows two within a round trip), and
		 * its answer (FIRST at the NAK's PSN, IBA 9.7.5.1.3)
		 * completes the READ */
		rt = sofd.counters[SOF_CNT_retransmits];
		BEGIN(ALL);
		rc_pkt(&o, &h, ROCE_ACK, 3, 0);
		rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, 0, 1024);
		hdr(&h, ROCE_SVC_RC | ROCE_ACK, 0);
		h.syndrome = ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR;
		seed_pkt(&o, Q_RC, STD, &h, 0);
		rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, 0, 1024);
		rc_pkt(&o, &h, ROCE_READ_RESP_LAST, 0, 3000 - 2048);
		SEED("rc_read_nak_sequence_mid_read", -2, 0, 5, false, Q_RC);
		read_placed("rc_read_nak_sequence_mid_read");
		if (sofd.counters[SOF_CNT_retransmits] - rt < 1 ||
		    sofd.counters[SOF_CNT_retransmits] - rt > 2)
			FAIL("seed rc_read_nak_sequence_mid_read: %llu go-backs",
			     (unsigned long long)(sofd.counters[SOF_CNT_retransmits] - rt));

		/* a remote access NAK after the first response: the READ
		 * fails with it, the QP ends (the rest flushed) */
		BEGIN(ALL);
		rc_pkt(&o, &h, ROCE_ACK, 3, 0);
		rc_pkt(&o, &h, ROCE_READ_RESP_FIRST, 0, 1024);
		hdr(&h, ROCE_SVC_RC | ROCE_ACK, 0);
		h.syndrome = ROCE_AETH_NAK | ROCE_NAK_REM_ACCESS;
		seed_pkt(&o, Q_RC, STD, &h, 0);
		SEED("rc_read_nak_access_mid_read", -1, 0, 9, true, Q_RC);
		{
			const struct sof_cqe *c =
			    (const struct sof_cqe *)(const void *)((const uint8_t *)scq->shm +
								   SOF_CQ_RING_OFF);
			unsigned n = 0;

			for (uint32_t i = 0; i < atomic_load(&scq->shm->tail); i++)
				n += c[i].status == IBV_WC_REM_ACCESS_ERR &&
				     c[i].opcode == IBV_WC_RDMA_READ;
			if (n != 1)
				FAIL("seed rc_read_nak_access_mid_read: %u READs failed with the NAK", n);
		}
	}

	BEGIN(ALL);
	hdr(&h, ROCE_SVC_RC | ROCE_ACK, 2);
	h.syndrome = ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	put8(&o, C_TICK);
	SEED("rc_nak_sequence", -1, 0, 4, false, Q_RC);

	/* A WRITE's ACK times a round trip; the next WRITE's ACK never
	 * comes. With no loss seen, nothing goes back before the timeout;
	 * after a sequence-error NAK (a loss), the early go-back resends
	 * before the one timeout. */
	for (int lossy = 0; lossy < 2; lossy++) {
		BEGIN(RECV2);
		for (int i = 0; i < 2; i++) {
			seed_write_wr(&o);
			if (i)
				break;
			rc_pkt(&o, &h, ROCE_ACK, 0, 0);
		}
		if (lossy) { /* (response PSNs count from the oldest unacknowledged) */
			hdr(&h, ROCE_SVC_RC | ROCE_ACK, 0);
			h.syndrome = ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR;
			seed_pkt(&o, Q_RC, STD, &h, 0);
		}
		put8(&o, C_TICK);
		if (lossy)
			SEED_PROBES("rc_early_go_back", 1, -1, 0, 1, false, Q_RC);
		else
			SEED_PROBES("rc_no_early_go_back_without_loss", 0, -1, 0, 1, false, Q_RC);
	}

	/* A WRITE's ACK times a short round trip (and starts the SACKs);
	 * the next WRITE's ACK is read after a stall of this process: that
	 * round trip is bounded (tp_rtt_sample), so the smoothed one stays
	 * below half the timeout, far below the stall */
	BEGIN(RECV2);
	for (int i = 0; i < 2; i++) {
		seed_write_wr(&o);
		if (i)
			put8(&o, C_TICK | C_STALLED);
		hdr(&h, ROCE_SVC_RC | ROCE_ACK, 0);
		h.ext = true;
		seed_pkt(&o, Q_RC, STD, &h, 0);
	}
	SEED("rc_sack_stall_rtt", -1, 0, 2, false, Q_RC);
	{
		const struct sof_tqp *t = qps[Q_RC].qp->tq.t;

		if (!t->sack_ok || !t->srtt_ns ||
		    t->srtt_ns > sof_ack_timeout_ns(qps[Q_RC].timeout) / 2)
			FAIL("seed rc_sack_stall_rtt: sack %d srtt %llu ns after a stall of %u",
			     t->sack_ok, (unsigned long long)t->srtt_ns, STALL_NS);
	}

	BEGIN(ALL);
	hdr(&h, ROCE_SVC_RC | ROCE_ACK, 1);
	h.syndrome = ROCE_AETH_NAK | ROCE_NAK_REM_ACCESS;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	SEED("rc_nak_access", -1, 0, 10, true, Q_RC);

	BEGIN(ALL);
	hdr(&h, ROCE_SVC_RC | ROCE_ACK, 0);
	h.syndrome = ROCE_AETH_RNR_NAK | 1;
	seed_pkt(&o, Q_RC, STD, &h, 0);
	put8(&o, C_TICK);
	seed_pkt(&o, Q_RC, STD, &h, 0);
	put8(&o, C_TICK);
	SEED("rc_rnr_nak", -1, 0, 3, false, Q_RC);

	BEGIN(RECV2); /* sequence-error NAKs while nothing is outstanding */
	hdr(&h, ROCE_SVC_RC | ROCE_ACK, 0);
	h.syndrome = ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR;
	for (int i = 0; i < 9; i++)
		seed_pkt(&o, Q_RC, STD, &h, 0);
	SEED("rc_nak_nothing_outstanding", SOF_DROP_psn, 0, 0, false, Q_RC);

	BEGIN(ALL);
	for (int i = 0; i < 9; i++)
		put8(&o, C_TICK);
	SEED("rc_retry_exceeded", -1, 0, 13, true, Q_RC);

	/* a WQE fails, the owner takes the QP from ERROR straight back to RTS
	 * naming no attribute (no library would; the daemon takes it), so no
	 * retries are left, and the timer fires with a PSN outstanding but no
	 * WQE: there is nothing to complete (it once completed one past the
	 * tail, and the flush went round the 32-bit index space) */
	BEGIN(RECV2);
	seed_write_wr(&o);
	for (int i = 0; i < 8; i++)
		put8(&o, C_TICK);
	put8(&o, C_MODIFY);
	put8(&o, Q_RC);
	put8(&o, IBV_QPS_RTS);
	put16(&o, 0); /* attr_mask */
	put16(&o, 0);
	put8(&o, 0);
	put8(&o, C_TICK);
	SEED("rc_timer_after_error_to_rts", -1, 0, 1, true, Q_RC);

	BEGIN(ALL);
	hdr(&h, ROCE_SVC_RC | ROCE_READ_RESP_ONLY, 0);
	seed_pkt(&o, Q_RCS, STD, &h, 256);
	hdr(&h, ROCE_SVC_RC | ROCE_READ_RESP_ONLY, 1);
	seed_pkt(&o, Q_RCS, STD, &h, 256);
	SEED("rc_srq_read_response", SOF_DROP_payload, 0, 3, false, Q_RCS);

	/* ---- UC and UD */
	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_UC | ROCE_SEND_FIRST, 0);
	seed_pkt(&o, Q_UC, STD, &h, 512);
	hdr(&h, ROCE_SVC_UC | ROCE_SEND_LAST, 0);
	seed_pkt(&o, Q_UC, STD, &h, 5);
	hdr(&h, ROCE_SVC_UC | ROCE_WRITE_ONLY_IMM, 0);
	h.rkey = M_RW;
	h.va = 0;
	h.dmalen = 100;
	seed_pkt(&o, Q_UC, STD, &h, 100);
	SEED("uc_send_write_imm", -1, 2, 0, false, Q_UC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_UC | ROCE_SEND_FIRST, 0);
	seed_pkt(&o, Q_UC, STD, &h, 512);
	hdr(&h, ROCE_SVC_UC | ROCE_SEND_LAST, 2); /* a gap: the message is lost */
	seed_pkt(&o, Q_UC, STD, &h, 5);
	SEED("uc_gap", SOF_DROP_psn, 0, 0, false, Q_UC);

	BEGIN(RECV2);
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	h.sqpn = 0x999;
	seed_pkt(&o, Q_UD, STD, &h, 300);
	hdr(&h, ROCE_UD_SEND_ONLY_IMM, 0);
	h.sqpn = 0x999;
	h.imm_be = 1;
	seed_pkt(&o, Q_UD, STD, &h, 0);
	SEED("ud_send", -1, 2, 0, false, Q_UD);

	BEGIN(RECV2);
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	h.qkey = 0x1234;
	seed_pkt(&o, Q_UD, STD & ~P_KEY, &h, 30);
	SEED("bad_qkey", SOF_DROP_qkey, 0, 0, false, Q_UD);

	/* ---- multicast: the UD QP is attached to group4 */
	BEGIN(RECV2);
	hdr(&h, ROCE_UD_SEND_ONLY_IMM, 0);
	h.sqpn = 0x999;
	h.imm_be = 5;
	seed_pkt(&o, 7, STD, &h, 200);
	SEED("ud_multicast", -1, 1, 0, false, Q_UD);

	BEGIN(RECV2);
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	h.qkey = 0x1234;
	seed_pkt(&o, 7, STD & ~P_KEY, &h, 30);
	SEED("multicast_bad_qkey", SOF_DROP_qkey, 0, 0, false, Q_UD);

	BEGIN(RECV2);
	put8(&o, C_DEREG);
	put8(&o, 0x40); /* detached: the group has no QP */
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	seed_pkt(&o, 7, STD, &h, 30);
	SEED("multicast_no_member", SOF_DROP_qpn, 0, 0, false, Q_UD);

	/* a steered UD QP's datagram to its group, handed over by its
	 * program (MCAST_LOOP): the QP, attached, receives it */
	BEGIN(RECV2);
	put8(&o, C_DEREG);
	put8(&o, 0x60 | 0x10 | Q_UD);
	put8(&o, 0x10); /* from local4, to group4, immediate */
	put16(&o, 200);
	put8(&o, 0xab);
	SEED("mcast_loop", -1, 1, 0, false, Q_UD);

	BEGIN(RECV2); /* the same from a peer's address: refused */
	put8(&o, C_DEREG);
	put8(&o, 0x60 | 0x10 | Q_UD);
	put8(&o, 0x12);
	put16(&o, 200);
	put8(&o, 0xab);
	SEED("mcast_loop_foreign_src", -1, 0, 0, false, Q_UD);

	BEGIN(RECV2); /* a QP the daemon runs: its datagram came here when sent */
	put8(&o, C_DEREG);
	put8(&o, 0x60 | Q_UD);
	put8(&o, 0x10);
	put16(&o, 200);
	put8(&o, 0xab);
	SEED("mcast_loop_not_steered", -1, 0, 0, false, Q_UD);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0); /* to a group: UD only */
	seed_pkt(&o, 7, STD, &h, 30);
	SEED("multicast_not_ud", SOF_DROP_qp_type, 0, 0, false, Q_UD);

	BEGIN(RECV2); /* the UD QP sends to its own group: it receives it */
	put8(&o, C_SEND);
	put8(&o, Q_UD);
	put8(&o, 0); /* SEND */
	put8(&o, 1); /* signaled */
	put8(&o, 1); /* one SGE */
	put8(&o, M_RW);
	put16(&o, 0);
	put16(&o, 64);
	for (int i = 0; i < 11; i++) /* rkey, raddr, compare, swap, imm */
		put8(&o, 0);
	put8(&o, 0);
	put8(&o, 0);
	put8(&o, 4); /* group4 */
	put8(&o, 0); /* GID 0: IPv4 */
	SEED("ud_multicast_send", -1, 1, 1, false, Q_UD);

	/* ---- bad packets: each dropped and counted */
	BEGIN(RECV2);
	put8(&o, C_PKT | Q_RC | P_ICRC);
	put16(&o, 6);
	for (int i = 0; i < 6; i++)
		put8(&o, 0);
	SEED("short", SOF_DROP_short, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	h.tver = 1;
	seed_pkt(&o, Q_RC, STD, &h, 4);
	SEED("wrong_version", SOF_DROP_version, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	h.dqpn = 2; /* no such QP: the harness leaves it alone */
	seed_pkt(&o, 6, STD, &h, 4);
	SEED("unknown_qpn", SOF_DROP_qpn, 0, 0, false, -1);

	/* ---- QP1, the GSI (mad/): what reaches the MAD layer, and what not */
	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	h.dqpn = 1;
	seed_pkt(&o, 6, P_ICRC, &h, 256);
	SEED("gsi_rc_opcode", SOF_DROP_qp_type, 0, 0, false, -1);

	BEGIN(RECV2);
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	h.dqpn = 1;
	h.sqpn = 1;
	h.qkey = 0x1234;
	seed_pkt(&o, 6, P_ICRC, &h, 256);
	SEED("gsi_bad_qkey", SOF_DROP_qkey, 0, 0, false, -1);

	BEGIN(RECV2);
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	h.dqpn = 1;
	h.sqpn = 1;
	h.qkey = 0x80010000u;
	seed_pkt(&o, 6, P_ICRC, &h, 100);
	SEED("gsi_short_mad", SOF_DROP_mad, 0, 0, false, -1);

	BEGIN(RECV2);
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	h.dqpn = 1;
	h.sqpn = 1;
	h.qkey = 0x80010000u;
	seed_pkt(&o, 6, P_ICRC, &h, 256); /* bytes 0xa5: base version 0xa5 */
	SEED("gsi_bad_base_version", SOF_DROP_mad, 0, 0, false, -1);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_UC | ROCE_SEND_ONLY, 0);
	seed_pkt(&o, Q_RC, STD, &h, 4);
	SEED("wrong_opcode_for_qp_type", SOF_DROP_qp_type, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	seed_pkt(&o, Q_INIT, STD, &h, 4);
	SEED("wrong_qp_state", SOF_DROP_qp_state, 0, 0, false, Q_INIT);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	seed_pkt(&o, Q_LOCAL, STD, &h, 4);
	SEED("qp_with_local_peer", SOF_DROP_qp_state, 0, 0, false, Q_LOCAL);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	seed_pkt(&o, Q_RC, STD & ~P_ICRC, &h, 4); /* the payload's bytes as ICRC */
	SEED("bad_icrc", SOF_DROP_icrc, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	seed_pkt(&o, Q_RC, STD & ~P_PEER, &h, 4);
	SEED("wrong_source_address", SOF_DROP_src_addr, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0);
	h.pkey = 0x1234;
	seed_pkt(&o, Q_RC, STD, &h, 4);
	SEED("wrong_pkey", SOF_DROP_pkey, 0, 0, false, Q_RC);

	BEGIN(RECV2);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 0);
	o.b[o.n - ROCE_BTH_LEN] = 0x1f; /* the opcode: reserved in RC */
	SEED("unknown_opcode", SOF_DROP_opcode, 0, 0, false, Q_RC);

	/* ---- the owner's side: posts, modifies, pokes, deregistration */
	BEGIN(RECV2);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 10);
	put8(&o, C_DEREG);
	put8(&o, 0x80 | Q_RC); /* destroyed, */
	hdr(&h, ROCE_SVC_RC | ROCE_SEND_ONLY, 0x200);
	seed_pkt(&o, Q_RC, STD, &h, 10); /* and the peer resends */
	SEED("rc_destroyed_then_resend", -2, 1, 0, false, -1);

	BEGIN(RECV2);
	put8(&o, C_SEND);
	put8(&o, Q_RC);
	put8(&o, 2);	/* RDMA WRITE */
	put8(&o, 1);	/* signaled */
	put8(&o, 2);	/* two SGEs */
	put8(&o, M_RW); /* 0 +1500 */
	put16(&o, 0);
	put16(&o, 1500);
	put8(&o, M_RUNS); /* 4000 +3000 */
	put16(&o, 4000);
	put16(&o, 3000);
	for (int i = 0; i < 11; i++)
		put8(&o, 0);
	rc_pkt(&o, &h, ROCE_ACK, 4, 0);
	SEED("post_send_write_ack", -1, 0, 1, false, Q_RC);

	BEGIN(0 | S_CQ);
	put8(&o, C_RECV);
	put8(&o, Q_RC);
	put8(&o, 0x85); /* num_sge 133: malformed */
	for (int i = 0; i < 4 * 5; i++)
		put8(&o, 0);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 10);
	SEED("rc_recv_wqe_malformed", -1, 1, 0, true, Q_RC);

	BEGIN(0 | S_CQ);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_ONLY_IMM, 0);
	h.rkey = M_RW;
	h.dmalen = 4;
	seed_pkt(&o, Q_RC, STD, &h, 4);
	SEED("rc_write_imm_rnr", -1, 0, 0, false, Q_RC);

	BEGIN(0 | S_CQ);
	put8(&o, C_RECV);
	put8(&o, Q_UD);
	put8(&o, 1);
	put8(&o, M_LOCAL);
	put16(&o, 0);
	put16(&o, 1000);
	hdr(&h, ROCE_UD_SEND_ONLY, 0);
	seed_pkt(&o, Q_UD, STD, &h, 10);
	SEED("post_recv_ud", -1, 1, 0, false, Q_UD);

	BEGIN(RECV2);
	put8(&o, C_MODIFY);
	put8(&o, Q_RC);
	put8(&o, IBV_QPS_SQD);
	put16(&o, IBV_QP_STATE);
	put16(&o, 0);
	put8(&o, 0);
	rc_pkt(&o, &h, ROCE_SEND_ONLY, 0, 10);
	SEED("modify_sqd_then_send", -1, 1, 0, false, Q_RC);

	BEGIN(ALL);
	put8(&o, C_POKE);
	put8(&o, Q_RC * 6 + 4); /* the RC QP's send queue tail */
	put16(&o, 0xffff);
	put16(&o, 0x7fff);
	put8(&o, C_POKE);
	put8(&o, Q_RCS * 6 + 2); /* receive ring tail, on a QP with an SRQ */
	put16(&o, 100);
	put16(&o, 0);
	SEED("poke_rings", -1, 0, 3, false, -1);

	BEGIN(RECV2);
	hdr(&h, ROCE_SVC_RC | ROCE_WRITE_FIRST, 0);
	h.rkey = M_RW;
	h.dmalen = 2048;
	seed_pkt(&o, Q_RC, STD, &h, 1024);
	put8(&o, C_DEREG);
	put8(&o, M_RW);
	rc_pkt(&o, &h, ROCE_WRITE_LAST, 0, 1024);
	SEED("dereg_mid_write", -1, 0, 0, true, Q_RC);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("SOF_FUZZ_ENGINE_SEEDS");

	(void)argc;
	(void)argv;
	setup();
	tp_sack_on = true; /* SOFTOFED_SACK=1: the extension's paths too */
	if (dir) {
		write_seeds(dir);
		exit(0);
	}
	return 0;
}
