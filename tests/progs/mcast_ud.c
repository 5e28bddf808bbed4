/*
 * UD multicast, one process of a group (tests/hosts/mcast.sh): a sender of
 * numbered messages, or a receiver that attaches a UD QP to the group
 * (ibv_attach_mcast) and checks what arrives.
 *
 *   mcast_ud -r [options] GROUP     receiver
 *   mcast_ud [options] GROUP        sender
 *
 * GROUP is an IPv4 group (239.1.2.3, attached as ::ffff:239.1.2.3, the
 * MGID rdma_cm makes) or an IPv6 multicast address (ff0e::1:2).
 *
 * The sender creates an address handle to the group from its GID of -a
 * ADDR and sends COUNT messages of SIZE bytes to the multicast QPN
 * 0xffffff with Q_Key QKEY, one at a time, each completed successfully
 * before the next. Message k carries a header (magic, k, SIZE, TAG) and
 * then bytes that depend on k and TAG. With -k K -W FILE it stops after
 * K messages until FILE exists (the script's signal that a receiver
 * detached). With -L the sending QP is attached to the group too, and so
 * is a second QP of the same process: each must receive every message
 * exactly once, checked as a receiver checks (the sender's own QP gets
 * its datagrams back, as from any member: the device delivers a group's
 * datagram to every QP of this host attached to it), and nothing more
 * comes for a while after the last; the sender prints "loop self=N
 * member=N". The sender prints its QPN (qpn=) with its count.
 *
 * The receiver attaches its QP, keeps receive WQEs posted and prints
 * "ready pid=PID qpn=QPN" once it can receive. It checks each message:
 * completion status, length (40-byte GRH area + SIZE), the IP header in
 * the GRH area (its destination is the group; its source ADDR with -S),
 * the same source QP for every message, the header, every payload byte,
 * and that no number arrives twice. It passes when it received exactly
 * messages 0..COUNT-1. With -x K it detaches after K messages, prints
 * "detached", watches -w SECS for more, and passes when nothing more came
 * (and the K were right). It stays attached until it exits.
 *
 * Output ends with "ok" or "fail: REASON" (exit 1).
 */
#include "hostpair.h"

#include <stdbool.h>

#define MAGIC 0x4d435354u /* "MCST" */
#define MAX_RECV 512
#define MAX_SIZE 4096

struct opts {
	bool recv, loop;
	struct hp_opts hp; /* -d, -g, -T (no rendezvous) */
	const char *group, *addr, *src, *wait_file;
	uint32_t count, size, qkey, tag, detach_after, stop_after;
	int watch_secs, interval_us;
};

struct msg_hdr {
	uint32_t magic, seq, size, tag; /* network order */
};

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-r] [options] GROUP\n"
		"  -r         receiver (default: sender)\n"
		"  -a ADDR    sender: the local address whose GID sends (default: GID 0)\n"
		"  -g INDEX   sender: the GID index instead\n"
		"  -d DEV     RDMA device (default: the first)\n"
		"  -n COUNT   messages (default 100)\n"
		"  -s SIZE    bytes per message, 16..%d (default 1024)\n"
		"  -q QKEY    Q_Key (default 0x1ee7)\n"
		"  -t TAG     sender: a number in each message (default 7)\n"
		"  -k K -W FILE  sender: after K messages wait until FILE exists\n"
		"  -L         sender: its QP and a second one attached, both must receive\n"
		"  -i USEC    sender: pause between messages (default 200)\n"
		"  -S ADDR    receiver: the address every message must come from\n"
		"  -x K       receiver: detach after K messages, then expect no more\n"
		"  -w SECS    receiver: how long to watch after detaching (default 2)\n"
		"  -T SECS    bound of the whole run (default 30)\n",
		argv0, MAX_SIZE);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	hp_opts_init(&o->hp, NULL, 30);
	o->count = 100;
	o->size = 1024;
	o->qkey = 0x1ee7;
	o->tag = 7;
	o->watch_secs = 2;
	o->interval_us = 200;
	while ((c = getopt(argc, argv, "ra:g:d:n:s:q:t:k:W:i:S:x:w:T:Lh")) != -1) {
		if (hp_opt(&o->hp, c, optarg))
			continue;
		switch (c) {
		case 'r':
			o->recv = true;
			break;
		case 'L':
			o->loop = true;
			break;
		case 'a':
			o->addr = optarg;
			break;
		case 'n':
			o->count = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			o->size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'q':
			o->qkey = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o->tag = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			o->stop_after = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'W':
			o->wait_file = optarg;
			break;
		case 'i':
			o->interval_us = atoi(optarg);
			break;
		case 'S':
			o->src = optarg;
			break;
		case 'x':
			o->detach_after = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			o->watch_secs = atoi(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc - 1 || o->size < sizeof(struct msg_hdr) || o->size > MAX_SIZE ||
	    !o->count || (o->stop_after && !o->wait_file) || o->detach_after > o->count ||
	    (o->loop && o->recv))
		usage(argv[0]);
	o->group = argv[optind];
}

/* The byte at offset i of message seq of sender tag (after the header). */
static uint8_t body_byte(uint32_t seq, uint32_t tag, uint32_t i)
{
	return (uint8_t)(seq * 131u + tag * 17u + i * 7u + (i >> 8));
}

struct res {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* MAX_RECV slots of 40 + MAX_SIZE bytes */
};

#define SLOT (40 + MAX_SIZE)

static void setup(struct res *r, const struct opts *o)
{
	struct hp_path p;
	int err;

	r->ctx = hp_open(o->hp.dev);
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = ibv_create_cq(r->ctx, 2 * MAX_RECV, NULL, NULL, 0);
	if (!r->pd || !r->cq)
		hp_fail("PD/CQ: %s", strerror(errno));
	r->buf = aligned_alloc(4096, (size_t)MAX_RECV * SLOT);
	if (!r->buf)
		hp_fail("no memory");
	memset(r->buf, 0, (size_t)MAX_RECV * SLOT);
	r->mr = ibv_reg_mr(r->pd, r->buf, (size_t)MAX_RECV * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	r->qp = hp_create_qp(r->pd, r->cq, IBV_QPT_UD, 16, MAX_RECV, 1);
	memset(&p, 0, sizeof(p));
	p.port = 1;
	p.qkey = o->qkey;
	p.sq_psn = hp_random_psn();
	err = hp_qp_modify(r->qp, &p, IBV_QPS_RTS);
	if (err)
		hp_fail("modify the UD QP to RTS: %s", strerror(err));
}

static void post_recv_slot(struct res *r, uint32_t slot)
{
	struct ibv_sge sg = {
	    .addr = (uintptr_t)(r->buf + (size_t)slot * SLOT), .length = SLOT, .lkey = r->mr->lkey};
	struct ibv_recv_wr wr, *bad;
	int err;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	err = ibv_post_recv(r->qp, &wr, &bad);
	if (err)
		hp_fail("ibv_post_recv: %s", strerror(err));
}

/* ---- receiver --------------------------------------------------------------------- */

struct rstate {
	uint8_t *seen; /* per message number */
	uint32_t count, src_qp;
	bool have_src_qp;
};

/* Check one received message; a reason on failure, else NULL. */
static const char *check_msg(const struct opts *o, const union ibv_gid *mgid,
			     const union ibv_gid *src, const struct ibv_wc *wc, const uint8_t *p,
			     struct rstate *st, uint32_t limit)
{
	static char why[160];
	struct msg_hdr h;
	uint32_t seq;

	if (wc->status != IBV_WC_SUCCESS) {
		snprintf(why, sizeof(why), "completion status %s", ibv_wc_status_str(wc->status));
		return why;
	}
	if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_GRH)) {
		snprintf(why, sizeof(why), "opcode %d flags 0x%x", wc->opcode, wc->wc_flags);
		return why;
	}
	if (wc->byte_len != 40 + o->size) {
		snprintf(why, sizeof(why), "byte_len %u, want %u", wc->byte_len, 40 + o->size);
		return why;
	}
	if (st->have_src_qp && wc->src_qp != st->src_qp) {
		snprintf(why, sizeof(why), "source QP 0x%06x, earlier 0x%06x", wc->src_qp,
			 st->src_qp);
		return why;
	}
	st->src_qp = wc->src_qp;
	st->have_src_qp = true;
	/* Annex A17.4.5.1: the IP header in the GRH area, to the group */
	if (mgid->raw[0] != 0xff) { /* ::ffff:a.b.c.d */
		if (p[20] != 0x45 || memcmp(p + 36, &mgid->raw[12], 4) ||
		    (src && memcmp(p + 32, &src->raw[12], 4)))
			return "the IPv4 header in the GRH area does not name the group and source";
	} else if (p[0] >> 4 != 6 || memcmp(p + 24, mgid->raw, 16) ||
		   (src && memcmp(p + 8, src->raw, 16))) {
		return "the IPv6 header in the GRH area does not name the group and source";
	}
	p += 40;
	memcpy(&h, p, sizeof(h));
	seq = ntohl(h.seq);
	if (ntohl(h.magic) != MAGIC || ntohl(h.size) != o->size) {
		snprintf(why, sizeof(why), "bad header (magic 0x%08x size %u)", ntohl(h.magic),
			 ntohl(h.size));
		return why;
	}
	if (seq >= limit) {
		snprintf(why, sizeof(why), "message %u, expected only 0..%u", seq, limit - 1);
		return why;
	}
	if (st->seen[seq]) {
		snprintf(why, sizeof(why), "message %u arrived twice", seq);
		return why;
	}
	for (uint32_t i = sizeof(h); i < o->size; i++)
		if (p[i] != body_byte(seq, ntohl(h.tag), i)) {
			snprintf(why, sizeof(why), "message %u: byte %u is 0x%02x, want 0x%02x",
				 seq, i, p[i], body_byte(seq, ntohl(h.tag), i));
			return why;
		}
	st->seen[seq] = 1;
	st->count++;
	return NULL;
}

static int receiver(const struct opts *o, const union ibv_gid *mgid)
{
	union ibv_gid src;
	struct rstate st;
	struct ibv_wc wc;
	struct res r;
	int64_t end = hp_now_us() + (int64_t)o->hp.secs * 1000000;
	uint32_t want = o->detach_after ? o->detach_after : o->count, extra = 0;
	int err;

	if (o->src && hp_addr_gid(o->src, &src))
		hp_fail("-S %s: not an address", o->src);
	memset(&st, 0, sizeof(st));
	st.seen = calloc(o->count, 1);
	if (!st.seen)
		hp_fail("no memory");
	setup(&r, o);
	for (uint32_t i = 0; i < MAX_RECV; i++)
		post_recv_slot(&r, i);
	err = ibv_attach_mcast(r.qp, mgid, 0);
	if (err)
		hp_fail("ibv_attach_mcast %s: %s", o->group, strerror(err));
	printf("ready pid=%d qpn=0x%06x group=%s\n", (int)getpid(), r.qp->qp_num, o->group);
	fflush(stdout);
	while (st.count < want) {
		const char *why;

		if (!hp_poll_until(r.cq, &wc, end, 100))
			hp_fail("received %u of %u messages in %d s", st.count, want, o->hp.secs);
		why = check_msg(o, mgid, o->src ? &src : NULL, &wc, r.buf + (size_t)wc.wr_id * SLOT,
				&st, o->count);
		if (why)
			hp_fail("%s", why);
		post_recv_slot(&r, (uint32_t)wc.wr_id);
	}
	if (o->detach_after) {
		int64_t watch_end;

		err = ibv_detach_mcast(r.qp, mgid, 0);
		if (err)
			hp_fail("ibv_detach_mcast: %s", strerror(err));
		printf("detached after %u\n", st.count);
		fflush(stdout);
		watch_end = hp_now_us() + (int64_t)o->watch_secs * 1000000;
		while (hp_poll_until(r.cq, &wc, watch_end, 100))
			extra++;
		printf("after_detach=%u\n", extra);
	}
	for (uint32_t i = 0; i < want; i++)
		if (!st.seen[i])
			hp_fail("message %u missing", i);
	printf("recv count=%u distinct=%u src_qp=0x%06x\n", st.count, st.count, st.src_qp);
	if (extra)
		hp_fail("%u messages arrived after the detach", extra);
	printf("ok\n");
	fflush(stdout);
	return 0;
}

/* ---- sender ------------------------------------------------------------------------ */

/* -L: the sender's own QP (its receive completions share the CQ with its
 * sends: slot 0 is the send buffer, so slots 1.. receive) and a second QP
 * of this process, both attached to the group. */
struct loop {
	struct res m; /* the second QP */
	struct rstate self, mem;
	const union ibv_gid *mgid, *src;
};

static void loop_check(const struct opts *o, struct loop *l, struct res *r, struct rstate *st,
		       const struct ibv_wc *wc)
{
	const char *why =
	    check_msg(o, l->mgid, l->src, wc, r->buf + (size_t)wc->wr_id * SLOT, st, o->count);

	if (why)
		hp_fail("%s QP: %s", st == &l->self ? "the sending" : "the second", why);
	post_recv_slot(r, (uint32_t)wc->wr_id);
}

static void loop_setup(const struct opts *o, struct loop *l, struct res *r)
{
	int err;

	memset(&l->self, 0, sizeof(l->self));
	memset(&l->mem, 0, sizeof(l->mem));
	l->self.seen = calloc(o->count, 1);
	l->mem.seen = calloc(o->count, 1);
	if (!l->self.seen || !l->mem.seen)
		hp_fail("no memory");
	setup(&l->m, o);
	for (uint32_t i = 0; i < MAX_RECV; i++) {
		post_recv_slot(&l->m, i);
		if (i)
			post_recv_slot(r, i);
	}
	err = ibv_attach_mcast(l->m.qp, l->mgid, 0);
	if (!err)
		err = ibv_attach_mcast(r->qp, l->mgid, 0);
	if (err)
		hp_fail("ibv_attach_mcast %s: %s", o->group, strerror(err));
}

/* The second QP's completions that are there. */
static void loop_poll_member(const struct opts *o, struct loop *l)
{
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(l->m.cq, 1, &wc)) == 1)
		loop_check(o, l, &l->m, &l->mem, &wc);
	if (n < 0)
		hp_fail("ibv_poll_cq: %d", n);
}

/* Until both QPs have every message, then 500 ms more in which nothing
 * may come. */
static void loop_finish(const struct opts *o, struct loop *l, struct res *r)
{
	int64_t end = hp_now_us() + 10000000, quiet;
	struct ibv_wc wc;

	while (l->self.count < o->count || l->mem.count < o->count) {
		if (hp_now_us() > end)
			hp_fail(
			    "the group's members here: the sending QP got %u, the second %u of %u",
			    l->self.count, l->mem.count, o->count);
		while (ibv_poll_cq(r->cq, 1, &wc) == 1) {
			if (wc.opcode != IBV_WC_RECV)
				hp_fail("a completion of opcode %d after the sends", wc.opcode);
			loop_check(o, l, r, &l->self, &wc);
		}
		loop_poll_member(o, l);
		usleep(100);
	}
	quiet = hp_now_us() + 500000;
	while (hp_now_us() < quiet) {
		if (ibv_poll_cq(r->cq, 1, &wc) == 1 || ibv_poll_cq(l->m.cq, 1, &wc) == 1)
			hp_fail("a completion (opcode %d status %s) after every message came",
				wc.opcode, ibv_wc_status_str(wc.status));
		usleep(1000);
	}
	printf("loop self=%u member=%u\n", l->self.count, l->mem.count);
}

static int sender(const struct opts *o, const union ibv_gid *mgid)
{
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct res r;
	struct loop l;
	union ibv_gid g;
	int gidx = o->hp.gid_index;

	setup(&r, o);
	if (o->addr) {
		if (hp_addr_gid(o->addr, &g))
			hp_fail("-a %s: not an address", o->addr);
		gidx = hp_gid_index(r.ctx, 1, &g);
		if (gidx < 0)
			hp_fail("no GID of %s", o->addr);
	} else if (gidx < 0) {
		gidx = 0;
	}
	l.mgid = mgid;
	l.src = o->addr ? &g : NULL;
	if (o->loop)
		loop_setup(o, &l, &r);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = *mgid;
	aa.grh.sgid_index = (uint8_t)gidx;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(r.pd, &aa);
	if (!ah)
		hp_fail("ibv_create_ah to %s: %s", o->group, strerror(errno));
	for (uint32_t k = 0; k < o->count; k++) {
		struct msg_hdr h = {htonl(MAGIC), htonl(k), htonl(o->size), htonl(o->tag)};
		uint8_t *p = r.buf; /* slot 0: nothing is received here */
		struct ibv_sge sg = {.addr = (uintptr_t)p, .length = o->size, .lkey = r.mr->lkey};
		struct ibv_send_wr wr, *bad;
		int err;

		if (o->stop_after && k == o->stop_after) {
			int64_t end = hp_now_us() + (int64_t)o->hp.secs * 1000000;

			printf("paused after %u\n", k);
			fflush(stdout);
			while (access(o->wait_file, F_OK)) {
				if (hp_now_us() > end)
					hp_fail("%s did not appear within %d s", o->wait_file,
						o->hp.secs);
				hp_sleep_ms(20);
			}
		}
		memcpy(p, &h, sizeof(h));
		for (uint32_t i = sizeof(h); i < o->size; i++)
			p[i] = body_byte(k, o->tag, i);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = k;
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff; /* the multicast QPN */
		wr.wr.ud.remote_qkey = o->qkey;
		err = ibv_post_send(r.qp, &wr, &bad);
		if (err)
			hp_fail("ibv_post_send #%u: %s", k, strerror(err));
		do {
			if (!hp_poll_until(r.cq, &wc, hp_now_us() + 5000000, 100))
				hp_fail("send #%u did not complete", k);
			if (o->loop && wc.opcode == IBV_WC_RECV)
				loop_check(o, &l, &r, &l.self, &wc);
		} while (o->loop && wc.opcode == IBV_WC_RECV);
		if (o->loop)
			loop_poll_member(o, &l);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != k)
			hp_fail("send #%u: status %s wr_id %llu", k, ibv_wc_status_str(wc.status),
				(unsigned long long)wc.wr_id);
		if (o->interval_us > 0)
			usleep((useconds_t)o->interval_us);
	}
	printf("sent count=%u size=%u sgid_index=%d qpn=0x%06x\n", o->count, o->size, gidx,
	       r.qp->qp_num);
	if (o->loop)
		loop_finish(o, &l, &r);
	printf("ok\n");
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	union ibv_gid mgid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	if (hp_addr_gid(o.group, &mgid))
		hp_fail("%s: not an IPv4 or IPv6 address", o.group);
	alarm((unsigned)o.hp.secs + 30);
	return o.recv ? receiver(&o, &mgid) : sender(&o, &mgid);
}
