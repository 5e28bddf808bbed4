/*
 * Registered memory as the transport sees it: the daemon maps a region's
 * memfd runs (handed over at REG_MR) on first use, contiguously, so the
 * byte at iova is base[0]; a region without local write is mapped read-only.
 * Every access is checked here against the key, the QP's protection
 * domain, the access flags and the byte range (IBA 10.6.3 / 9.7.5.2.4);
 * deregistration unmaps at once (sof_tp_mr_release), and since the daemon
 * has one thread no packet is half-way through a region when it goes.
 */
#include "tport.h"

#include <sys/mman.h>

#ifndef SOF_TP_PROGRAM /* a program's engine looks up its own regions (verbs/engine.c) */
static int mr_map(struct sofd_mr *mr)
{
	bool rw = mr->access & IBV_ACCESS_LOCAL_WRITE;
	size_t total = 0;
	uint8_t *p;

	for (uint32_t i = 0; i < mr->nruns; i++)
		total += mr->runs[i].length;
	p = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	mr->map = p;
	mr->map_len = total;
	for (uint32_t i = 0; i < mr->nruns; i++) {
		if (mmap(p, mr->runs[i].length, PROT_READ | (rw ? PROT_WRITE : 0),
			 MAP_SHARED | MAP_FIXED, mr->fds[i],
			 (off_t)mr->runs[i].offset) == MAP_FAILED) {
			munmap(mr->map, total);
			mr->map = NULL;
			return -ENOMEM;
		}
		p += mr->runs[i].length;
	}
	mr->map_rw = rw;
	mr->base = (uint8_t *)mr->map + mr->page_off;
	return 0;
}

void sof_tp_mr_release(struct sofd_mr *mr)
{
	/* queued packets may point into the mapping (tp_send_ref) */
	sof_tp_flush();
	if (mr->map)
		munmap(mr->map, mr->map_len);
	mr->map = NULL;
	mr->base = NULL;
}

uint8_t *tp_mr_ptr(const struct sofd_qp *qp, uint32_t key, uint64_t va, uint64_t len, uint32_t need)
{
	struct sofd_mr *mr = sof_hmap_get(&sofd.mrs, key);

	if (!mr || mr->pd != qp->pd || (mr->access & need) != need)
		return NULL;
	if (va < mr->iova || len > mr->length || va - mr->iova > mr->length - len)
		return NULL;
	if (!mr->map && mr_map(mr))
		return NULL;
	/* writes need a writable mapping (remote write implies local write) */
	if ((need &
	     (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !mr->map_rw)
		return NULL;
	return mr->base + (va - mr->iova);
}

#endif

int tp_sgl_copy(const struct sofd_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
		uint8_t *buf, uint64_t len, bool to_sgl)
{
	uint32_t need = to_sgl ? IBV_ACCESS_LOCAL_WRITE : 0;

	for (uint32_t i = 0; i < nsge && len; i++) {
		uint64_t n;
		uint8_t *p;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off;
		if (n > len)
			n = len;
		p = tp_mr_ptr(qp, sge[i].lkey, sge[i].addr + off, n, need);
		if (!p)
			return -EACCES;
		if (to_sgl)
			memcpy(p, buf, n);
		else
			memcpy(buf, p, n);
		buf += n;
		len -= n;
		off = 0;
	}
	return len ? -EMSGSIZE : 0;
}

int tp_sgl_map(const struct sofd_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
	       uint64_t len, struct iovec *iov, uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < nsge && len; i++) {
		uint64_t k;
		uint8_t *p;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		k = sge[i].length - off;
		if (k > len)
			k = len;
		p = tp_mr_ptr(qp, sge[i].lkey, sge[i].addr + off, k, 0);
		if (!p)
			return -EACCES;
		if (n == max)
			return -E2BIG;
		iov[n].iov_base = p;
		iov[n++].iov_len = k;
		len -= k;
		off = 0;
	}
	return len ? -EMSGSIZE : (int)n;
}
