/*
 * RESIZE_SRQ: a shared receive queue moves to a segment of another size
 * (ibv_modify_srq(3) with IBV_SRQ_MAX_WR; IBV_DEVICE_SRQ_RESIZE).
 *
 * The ring's geometry is handed out: to the daemon's engine (tp_srq, also
 * reached by XRC TGT QPs through host_xrc_srq) and, by OPEN_QP, to the
 * executors of other processes, which map the segment and cache it under
 * the SRQ's object-table generation. So a resize never changes a ring in
 * place: the owner makes a new segment, and here the daemon's engine is
 * re-pointed at it (the daemon has one thread: no packet is half-way
 * through a WQE take) and the generation changes, so every executor opens
 * the SRQ again at its next use. The owner then moves the WQEs left in the
 * old ring over, one by one with the consumers' own compare-and-swap on
 * the old head (verbs/srq.c): each WQE is taken once, from one ring.
 */
#include "sofd.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

int sofd_op_resize_srq(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_resize_srq_req *req = rq->data;
	struct sofd_srq *srq = sof_hmap_get(&sofd.srqs, req->srq);
	size_t len;
	void *p;
	int err;

	(void)rp;
	if (!srq || srq->owner != rq->c)
		return -ENOENT;
	if (!req->size || (req->size & (req->size - 1)) || req->size > SOFD_MAX_RQ)
		return -EINVAL;
	len = SOF_SRQ_RQ_OFF + (size_t)req->size * SOF_RWQE_STRIDE(srq->max_sge);
	err = sof_memfd_check(rq->fds[0], len);
	if (err)
		return err;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rq->fds[0], 0);
	if (p == MAP_FAILED)
		return -EINVAL;
	munmap(srq->shm, srq->shm_len);
	close(srq->memfd);
	srq->shm = p;
	srq->shm_len = len;
	srq->size = req->size;
	srq->memfd = rq->fds[0];
	rq->fds[0] = -1;
	srq->tsrq.shm = srq->shm;
	srq->tsrq.size = srq->size;
	sofd_slot_renew(srq->slot, &srq->gen);
	return 0;
}
