/*
 * rsockets: direct data placement (rsocket(7)): riomap registers a buffer
 * and, for PROT_WRITE, tells the peer its offset, address and key in a
 * slot of the peer's iomap table (an rs_iomap written with
 * RS_OP_IOMAP_SGL before the next send); riowrite writes into the peer's
 * mapping that holds an offset with a plain RDMA WRITE, which the peer's
 * program does not see on its CQ; riounmap drops a mapping.
 */
#include "rsock.h"

#include <byteswap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- iomap ----------------------------------------------------------------- */

/* Tell the peer the mappings riomap queued: each an rs_iomap written into
 * its slot of the peer's table, with RS_OP_IOMAP_SGL. Needs slock. */
int sofrs_send_iomaps(struct sofrs *rs, int flags)
{
	struct rs_iomap_mr *m;
	struct rs_iomap iom;
	struct ibv_sge sge;
	int ret = 0;

	pthread_mutex_lock(&rs->map_lock);
	for (m = rs->iomaps; m; m = m->next) {
		if (!m->queued)
			continue;
		ret = sofrs_wait_send(rs, flags);
		if (ret)
			break;
		iom.offset = m->offset;
		iom.sge.addr = (uintptr_t)m->mr->addr;
		iom.sge.length = (uint32_t)m->mr->length;
		iom.sge.key = m->mr->rkey;
		if (rs->opts & RS_OPT_SWAP_SGL) {
			iom.offset = bswap_64(iom.offset);
			iom.sge.addr = bswap_64(iom.sge.addr);
			iom.sge.length = bswap_32(iom.sge.length);
			iom.sge.key = bswap_32(iom.sge.key);
		}
		/* through the send buffer, at its start when it would wrap */
		if (sofrs_sbuf_left(rs) < sizeof(iom))
			rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
		memcpy((void *)(uintptr_t)rs->ssgl[0].addr, &iom, sizeof(iom));
		sge.addr = rs->ssgl[0].addr;
		sge.length = sizeof(iom);
		sge.lkey = rs->smr->lkey;
		rs->ssgl[0].addr += sizeof(iom);
		if (rs->ssgl[0].addr >= (uintptr_t)&rs->sbuf[rs->sbuf_size])
			rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
		rs->sseq_no++;
		sofrs_take_send(rs, sizeof(iom));
		ret = sofrs_post_write(rs, &sge, 1, rs_msg_set(RS_OP_IOMAP_SGL, m->index), true,
				    sizeof(iom) <= rs->sq_inline ? IBV_SEND_INLINE : 0,
				    rs->remote_iomap.addr +
					    (uint64_t)m->index * sizeof(struct rs_iomap),
				    rs->remote_iomap.key);
		m->queued = false;
		if (ret)
			break;
	}
	rs->iomap_pending = false;
	for (m = rs->iomaps; m; m = m->next)
		rs->iomap_pending |= m->queued;
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/* If offset is -1 the buffer's address is its offset. */
SOFCM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct sofrs *rs = sofrs_lookup(socket);
	struct rs_iomap_mr *m, *it;
	int access = IBV_ACCESS_LOCAL_WRITE;
	bool used[256] = { false };
	int slot = -1;

	(void)flags;
	if (!rs)
		return sofcm_err(EBADF);
	if (rs->type != SOCK_STREAM)
		return sofcm_err(EOPNOTSUPP);
	if (!rs->cm_id->pd || (prot & ~PROT_WRITE))
		return sofcm_err(EINVAL);
	m = calloc(1, sizeof(*m));
	if (!m)
		return sofcm_err(ENOMEM);
	pthread_mutex_lock(&rs->map_lock);
	if (prot & PROT_WRITE) {
		for (it = rs->iomaps; it; it = it->next)
			if (it->index >= 0 && it->index < 256)
				used[it->index] = true;
		for (int i = 0; i < (int)rs->remote_iomap.length && i < 256; i++)
			if (!used[i]) {
				slot = i;
				break;
			}
		if (slot < 0) {
			offset = sofcm_err(ENOMEM);
			goto err;
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!m->mr) {
		offset = -1;
		goto err;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	m->index = slot;
	m->queued = slot >= 0;
	m->next = rs->iomaps;
	rs->iomaps = m;
	if (m->queued)
		rs->iomap_pending = true;
	pthread_mutex_unlock(&rs->map_lock);
	return offset;

err:
	pthread_mutex_unlock(&rs->map_lock);
	free(m);
	return offset;
}

SOFCM_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct sofrs *rs = sofrs_lookup(socket);
	struct rs_iomap_mr **pp, *m;

	if (!rs)
		return sofcm_err(EBADF);
	pthread_mutex_lock(&rs->map_lock);
	for (pp = &rs->iomaps; (m = *pp); pp = &m->next) {
		if (m->mr->addr == buf && m->mr->length == len) {
			*pp = m->next;
			ibv_dereg_mr(m->mr);
			free(m);
			pthread_mutex_unlock(&rs->map_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&rs->map_lock);
	return sofcm_err(EINVAL);
}

void sofrs_free_iomaps(struct sofrs *rs)
{
	struct rs_iomap_mr *m;

	while ((m = rs->iomaps)) {
		rs->iomaps = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
}

/* The peer's mapping that holds offset, copied (the peer may rewrite it). */
static bool rs_find_iomap(struct sofrs *rs, uint64_t offset, struct rs_iomap *out)
{
	for (int i = 0; i < rs->target_iomap_size; i++) {
		struct rs_iomap m = rs->target_iomap[i];

		if (m.sge.length && offset >= m.offset && offset - m.offset < m.sge.length) {
			*out = m;
			return true;
		}
	}
	return false;
}

/* Plain RDMA WRITEs into the peer's mapping: nothing on the peer's CQ. */
static size_t rs_iowrite(struct sofrs *rs, const void *buf, size_t count, off_t offset, int flags);

SOFCM_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct sofrs *rs = sofrs_get(socket);
	size_t ret;

	if (!rs)
		return (size_t)sofcm_err(EBADF);
	ret = rs->type == SOCK_STREAM ? rs_iowrite(rs, buf, count, offset, flags)
				      : (size_t)sofcm_err(EOPNOTSUPP);
	sofrs_put(rs);
	return ret;
}

static size_t rs_iowrite(struct sofrs *rs, const void *buf, size_t count, off_t offset, int flags)
{
	const uint8_t *p = buf;
	size_t left = count;
	uint32_t xfer, olen = RS_OLAP_START_SIZE;
	struct rs_iomap iom;
	struct ibv_sge sge[2];
	uint64_t off = (uint64_t)offset;
	int nsge, ret = 0;

	if (!(rs->state & rs_writable))
		return (size_t)sofcm_err(EPIPE);
	pthread_mutex_lock(&rs->slock);
	if (rs->iomap_pending) {
		ret = sofrs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	for (; left; left -= xfer, p += xfer, off += xfer) {
		if (!rs_find_iomap(rs, off, &iom)) {
			if (left == count)
				ret = sofcm_err(EINVAL);
			break;
		}
		ret = sofrs_wait_send(rs, flags);
		if (ret)
			break;
		xfer = olen < left ? olen : (uint32_t)left;
		if (olen < left && olen < RS_MAX_TRANSFER)
			olen <<= 1;
		if (xfer > (uint32_t)rs->sbuf_bytes_avail)
			xfer = (uint32_t)rs->sbuf_bytes_avail;
		if (xfer > iom.offset + iom.sge.length - off)
			xfer = (uint32_t)(iom.offset + iom.sge.length - off);
		if (xfer <= sofrs_sbuf_left(rs)) {
			memcpy((void *)(uintptr_t)rs->ssgl[0].addr, p, xfer);
			sge[0] = rs->ssgl[0];
			sge[0].length = xfer;
			nsge = 1;
			rs->ssgl[0].addr += xfer;
			if (rs->ssgl[0].addr >= (uintptr_t)&rs->sbuf[rs->sbuf_size])
				rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
		} else {
			sge[0] = rs->ssgl[0];
			sge[0].length = sofrs_sbuf_left(rs);
			memcpy((void *)(uintptr_t)sge[0].addr, p, sge[0].length);
			sge[1] = rs->ssgl[1];
			sge[1].addr = (uintptr_t)rs->sbuf;
			sge[1].length = xfer - sge[0].length;
			memcpy(rs->sbuf, p + sge[0].length, sge[1].length);
			nsge = 2;
			rs->ssgl[0].addr = (uintptr_t)rs->sbuf + sge[1].length;
		}
		sofrs_take_send(rs, xfer);
		ret = sofrs_post_write(rs, sge, nsge, rs_msg_set(RS_OP_WRITE, xfer), false,
				    xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0,
				    iom.sge.addr + off - iom.offset, iom.sge.key);
		if (ret)
			break;
	}
out:
	pthread_mutex_unlock(&rs->slock);
	return ret && left == count ? (size_t)ret : count - left;
}
