/*
 * Registered memory as the transport sees it: scatter/gather lists walked
 * SGE by SGE, each checked by the host's region look-up
 * (tp_host_ops.mr_ptr: key, the QP's protection domain, the access flags
 * and the byte range, IBA 10.6.3 / 9.7.5.2.4). How a region is reached is
 * the host's: the daemon maps a region's memfd runs (daemon/tp_host.c), a
 * program has its own memory (verbs/tp_host.c).
 */
#include "tport.h"

int tp_sgl_copy(const struct tp_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
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
		if (to_sgl) {
			memcpy(p, buf, n);
			tp_mr_done(qp, p, n);
		} else
			memcpy(buf, p, n);
		buf += n;
		len -= n;
		off = 0;
	}
	return len ? -EMSGSIZE : 0;
}

int tp_sgl_map(const struct tp_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
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
