/*
 * The registry: every object of the device by its owning connection.
 *
 * Objects live in global maps (by handle, key or QP number) for look-ups and
 * on their owner's lists for release. QP numbers and memory keys are random
 * (sof_random32) and unique among live objects. QPs, SRQs and MRs also hold
 * a slot of the object table, whose 64-bit generation is random and changes
 * when the object goes away, so that every executor's cached mapping of it
 * stops being used.
 *
 * When a connection closes, everything it owned is released in dependency
 * order (QPs, SRQs, CQs, MWs, MRs, PDs). Connected QPs of other connections whose
 * peer was among the dying QPs are moved to ERROR through their shared
 * segment, their CQs are flagged for attention (and the completion channel
 * woken when armed), and their owners get IBV_EVENT_QP_FATAL.
 */
#include "sofd.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/* ---- object table ------------------------------------------------------------ */

int sofd_registry_init(void)
{
	void *p;
	int fd, err;

	fd = memfd_create("softofed-objtab", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)SOF_OBJTAB_MAP_SIZE))
		goto err_close;
	p = mmap(NULL, SOF_OBJTAB_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto err_close;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW))
		goto err_unmap;
	/* Only the mapping made above may write the table: no descriptor a
	 * client could reopen through /proc can make a writable mapping.
	 * Older kernels lack the seal; then the mode bits are all we have. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE))
		if (fchmod(fd, 0444)) {
			/* best effort */
		}
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
	sofd.objtab_fd = fd;
	sofd.objtab = p;
	sofd.objtab_ro_fd = sof_fd_reopen_ro(fd);
	if (sofd.objtab_ro_fd < 0) {
		err = sofd.objtab_ro_fd;
		munmap(p, SOF_OBJTAB_MAP_SIZE);
		close(fd);
		return err;
	}
	sofd.next_slot = 1;	    /* slot 0 is never handed out */
	sofd_device_publish_gids(); /* the GID table's page */
	return 0;

err_unmap:
	err = -errno;
	munmap(p, SOF_OBJTAB_MAP_SIZE);
	close(fd);
	return err;
err_close:
	err = -errno;
	close(fd);
	return err;
}

static uint64_t new_gen(uint64_t old)
{
	uint64_t g;

	do {
		if (sof_random(&g, sizeof(g)))
			g = sof_now_ns() * 0x9e3779b97f4a7c15ull;
	} while (g == 0 || g == old);
	return g;
}

int sofd_slot_alloc(uint32_t *slot, uint64_t *gen)
{
	uint32_t s;
	uint64_t g;

	if (sofd.nfree) {
		s = sofd.free_slots[--sofd.nfree];
	} else if (sofd.next_slot < SOF_OBJTAB_SLOTS) {
		s = sofd.next_slot++;
	} else {
		return -ENOMEM;
	}
	g = new_gen(atomic_load_explicit(&sofd.objtab[s], memory_order_relaxed));
	atomic_store_explicit(&sofd.objtab[s], g, memory_order_release);
	*slot = s;
	*gen = g;
	return 0;
}

void sofd_slot_free(uint32_t slot)
{
	uint64_t old;

	if (slot == 0 || slot >= SOF_OBJTAB_SLOTS)
		return;
	old = atomic_load_explicit(&sofd.objtab[slot], memory_order_relaxed);
	atomic_store_explicit(&sofd.objtab[slot], new_gen(old), memory_order_release);
	if (sofd.nfree == sofd.free_cap) {
		uint32_t ncap = sofd.free_cap ? sofd.free_cap * 2 : 1024;
		uint32_t *n = realloc(sofd.free_slots, ncap * sizeof(*n));

		if (!n)
			return; /* the slot is lost, not reused: still safe */
		sofd.free_slots = n;
		sofd.free_cap = ncap;
	}
	sofd.free_slots[sofd.nfree++] = slot;
}

void sofd_slot_renew(uint32_t slot, uint64_t *gen)
{
	uint64_t g = new_gen(atomic_load_explicit(&sofd.objtab[slot], memory_order_relaxed));

	atomic_store_explicit(&sofd.objtab[slot], g, memory_order_release);
	*gen = g;
}

/* ---- identifiers ----------------------------------------------------------------- */

uint32_t sofd_new_handle(const struct sof_hmap *m)
{
	for (;;) {
		uint32_t h = ++sofd.next_handle;

		if (h && !sof_hmap_get(m, h))
			return h;
	}
}

uint32_t sofd_new_key(void)
{
	for (;;) {
		uint32_t k = sof_random32();

		/* a window's index is never the top of a region's key */
		if (k && !sof_hmap_get(&sofd.mrs, k) && !sof_hmap_get(&sofd.mr_rsv, k) &&
		    !sof_hmap_get(&sofd.mws, k >> 8))
			return k;
	}
}

uint32_t sofd_new_qpn(void)
{
	for (;;) {
		uint32_t q = sof_random32() & 0xffffff;

		/* 0 and 1 are QP0 and QP1, 0xffffff the multicast QPN */
		if (q > 1 && q != SOF_MCAST_QPN && !sof_hmap_get(&sofd.qps, q))
			return q;
	}
}

/* ---- release of single objects ---------------------------------------------------- */

void sofd_pd_release(struct sofd_pd *pd)
{
	sof_hmap_del(&sofd.pds, pd->handle);
	sof_list_del(&pd->link);
	sofd.n.pds--;
	pd->owner->n.pds--;
	free(pd);
}

void sofd_mr_release(struct sofd_mr *mr)
{
	sof_tp_mr_release(mr);
	sofd_mr_unbind_mws(mr);
	if (sof_hmap_get(&sofd.mrs, mr->key) == mr) /* else REREG_MR gave the key on */
		sof_hmap_del(&sofd.mrs, mr->key);
	sof_list_del(&mr->link);
	sofd_slot_free(mr->slot);
	sof_close_fds(mr->fds, (int)mr->nruns);
	mr->pd->users--;
	sofd.n.mrs--;
	mr->owner->n.mrs--;
	free(mr);
}

void sofd_cq_release(struct sofd_cq *cq)
{
	sof_hmap_del(&sofd.cqs, cq->handle);
	sof_list_del(&cq->link);
	if (cq->shm)
		munmap(cq->shm, SOF_CQ_SEG_SIZE);
	close(cq->memfd);
	if (cq->evfd >= 0)
		close(cq->evfd);
	sofd.n.cqs--;
	cq->owner->n.cqs--;
	free(cq);
}

void sofd_srq_release(struct sofd_srq *srq)
{
	sof_hmap_del(&sofd.srqs, srq->handle);
	sof_list_del(&srq->link);
	sofd_slot_free(srq->slot);
	if (srq->shm)
		munmap(srq->shm, srq->shm_len);
	close(srq->memfd);
	sofd_xrc_srq_release(srq);
	srq->pd->users--;
	sofd.n.srqs--;
	srq->owner->n.srqs--;
	free(srq);
}

void sofd_qp_release(struct sofd_qp *qp)
{
	sofd_raw_qp_release(qp);
	sof_tp_mcast_qp_release(qp);
	sof_tp_qp_release(qp);
	sofd_qp_unbind_mws(qp);
	if (qp->steered)
		sof_tp_steer_del(qp->qpn);
	sof_hmap_del(&sofd.qps, qp->qpn);
	sof_list_del(&qp->link);
	sofd_slot_free(qp->slot);
	if (qp->shm)
		munmap(qp->shm, qp->shm_len);
	close(qp->memfd);
	if (qp->nsq)
		munmap(qp->nsq, qp->nsq_len);
	if (qp->pd) { /* an XRC TGT QP has neither PD nor CQs */
		qp->pd->users--;
		qp->send_cq->users--;
		qp->recv_cq->users--;
	}
	sofd_xrc_qp_release(qp);
	if (qp->srq)
		qp->srq->users--;
	sofd.n.qps--;
	qp->owner->n.qps--;
	free(qp);
}

/* ---- events ---------------------------------------------------------------------- */

void sofd_async_send(struct sofd_conn *c, uint32_t event_type, uint32_t handle)
{
	struct sof_async_msg m = {.event_type = event_type, .handle = handle};

	if (!c || c->async_fd < 0 || c->dead)
		return;
	/* Non-blocking: a client that does not read its events loses them
	 * rather than stalling the device. */
	(void)send(c->async_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Add 1 to a client's eventfd without ever blocking the daemon. The
 * descriptor's flags belong to the client (we cannot make it non-blocking),
 * so: write only when poll says there is room, and bound the write by a
 * timer in case the client filled the counter in between. */
void sofd_evfd_kick(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	struct itimerval on = {.it_value = {.tv_usec = 100000}};
	struct itimerval off = {0};
	uint64_t one = 1;

	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT))
		return;
	setitimer(ITIMER_REAL, &on, NULL);
	if (write(fd, &one, sizeof(one)) < 0) {
		/* nothing more to do */
	}
	setitimer(ITIMER_REAL, &off, NULL);
}

/* Tell the owner of cq to look at its QPs: set attention and, when the CQ
 * is armed, consume the arm and fire its completion channel. */
void sofd_cq_attention(struct sofd_cq *cq)
{
	if (cq->shm && sof_cq_attention(cq->shm) && cq->evfd >= 0)
		sofd_evfd_kick(cq->evfd);
}

/* The connected peer of qp has gone: the QP goes to ERROR (IBA 10.3.1:
 * the HCA moves it there on a fatal error) and its owner learns of it. */
static void peer_gone(struct sofd_qp *qp)
{
	if (qp->shm) {
		atomic_store_explicit(&qp->shm->state, IBV_QPS_ERR, memory_order_release);
		atomic_store_explicit(&qp->shm->peer_gone, 1, memory_order_release);
	}
	qp->state = IBV_QPS_ERR;
	sofd_cq_attention(qp->recv_cq);
	if (qp->send_cq != qp->recv_cq)
		sofd_cq_attention(qp->send_cq);
	sofd_async_send(qp->owner, IBV_EVENT_QP_FATAL, qp->qpn);
}

/* ---- release of a whole connection ----------------------------------------------- */

#define FIRST(head, type) sof_container_of((head)->next, type, link)

void sofd_release_all(struct sofd_conn *c)
{
	struct sof_link *l;
	uint32_t pos = 0;
	struct sofd_qp *qp;
	bool any = false;

	/* XRC: its handles on TGT QPs of others go first */
	sofd_xrc_conn_release_opens(c);
	for (l = c->qps.next; l != &c->qps; l = l->next) {
		sof_container_of(l, struct sofd_qp, link)->tq.dying = true;
		any = true;
	}
	/* Connected QPs elsewhere whose peer is one of ours. */
	while (any && (qp = sof_hmap_next(&sofd.qps, &pos, NULL))) {
		struct sofd_qp *peer;

		if (qp->owner == c || qp->tq.dying)
			continue;
		if (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC &&
		    qp->type != IBV_QPT_XRC_SEND)
			continue;
		if (qp->state < IBV_QPS_RTR || qp->state > IBV_QPS_ERR)
			continue;
		/* a peer on another host has a QPN of that host */
		if (qp->net)
			continue;
		peer = sof_hmap_get(&sofd.qps, qp->dest_qpn);
		/* (a TGT QP another process opened lives on) */
		if (peer && peer->owner == c && !peer->nxopens)
			peer_gone(qp);
	}
	/* a TGT QP of its own that another process opened stays, that
	 * process its owner now */
	while (!sof_list_empty(&c->qps)) {
		qp = FIRST(&c->qps, struct sofd_qp);
		if (!sofd_xrc_qp_handover(qp))
			sofd_qp_release(qp);
	}
	while (!sof_list_empty(&c->srqs))
		sofd_srq_release(FIRST(&c->srqs, struct sofd_srq));
	while (!sof_list_empty(&c->cqs))
		sofd_cq_release(FIRST(&c->cqs, struct sofd_cq));
	while (!sof_list_empty(&c->mws))
		sofd_mw_release(FIRST(&c->mws, struct sofd_mw));
	while (!sof_list_empty(&c->mrs))
		sofd_mr_release(FIRST(&c->mrs, struct sofd_mr));
	sofd_xrc_conn_release(c);
	while (!sof_list_empty(&c->pds))
		sofd_pd_release(FIRST(&c->pds, struct sofd_pd));
}
