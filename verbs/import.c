/*
 * Sharing a context between processes: ibv_import_device, ibv_import_pd,
 * ibv_import_mr and their unimport verbs.
 *
 * A process given another's command fd (context->cmd_fd, by SCM_RIGHTS or
 * fork) imports the context: it announces a random nonce on that socket in
 * a record that gets no reply (so the owner's own requests and replies on
 * it are undisturbed) and presents the nonce on a connection of its own,
 * which the daemon then treats as the shared one (daemon/ops_import.c).
 * Its requests travel on its own connection; the imported context keeps a
 * copy of the shared fd, so the objects live while either process holds
 * it, as with the kernel's command file.
 *
 * An imported PD or MR is a library object over the owner's handle: QPs,
 * CQs and MRs can be created on an imported PD, and an imported MR's keys
 * reach the owner's memory from any QP (the rkey); its lkey serves local
 * SGEs only in the owner's process, whose address space it describes (a
 * context imported within that process may name it too).
 * ibv_dealloc_pd / ibv_dereg_mr destroy the shared object, the unimport
 * verbs only the local one. Asynchronous events of the shared objects go
 * to the owner's context.
 */
#include "sofv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* How long the importer waits for the daemon to read its record on the
 * shared socket (behind whatever the owner queued there). */
#define IMPORT_WAIT_NS (2ull * 1000000000ull)

/* Whether fd is a connection to this namespace's daemon. */
static bool is_daemon_socket(int fd)
{
	struct sockaddr_un want, got;
	socklen_t wlen = sof_sock_addr(&want), glen = sizeof(got);
	int type;
	socklen_t tlen = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) || type != SOCK_SEQPACKET)
		return false;
	memset(&got, 0, sizeof(got));
	if (getpeername(fd, (struct sockaddr *)&got, &glen))
		return false;
	return glen == wlen && !memcmp(&got, &want, wlen);
}

SOFV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct {
		struct sof_msg m;
		struct sof_import_req r;
	} rec;
	struct ibv_context *ctx = NULL;
	uint64_t until;
	int fd, sock, err;

	if (cmd_fd < 0 || !is_daemon_socket(cmd_fd)) {
		errno = EINVAL;
		return NULL;
	}
	memset(&rec, 0, sizeof(rec));
	rec.m.op = SOF_OP_IMPORT_BIND;
	rec.m.len = sizeof(rec);
	if (sof_random(rec.r.nonce, sizeof(rec.r.nonce))) {
		errno = EIO;
		return NULL;
	}
	fd = fcntl(cmd_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	sock = sof_client_connect();
	if (sock < 0) {
		err = -sock;
		goto err_fd;
	}
	err = -sof_send_rec(cmd_fd, &rec, sizeof(rec), NULL, 0);
	if (err)
		goto err_sock;
	until = sof_now_ns() + IMPORT_WAIT_NS;
	for (;;) {
		struct timespec ts = {.tv_nsec = 1000000};

		ctx = sofv_context_open(sock, SOF_OP_IMPORT, &rec.r, sizeof(rec.r), fd);
		if (ctx)
			return ctx;
		err = errno;
		if (err != EAGAIN || sof_now_ns() > until)
			break;
		nanosleep(&ts, NULL);
	}
	if (err == EAGAIN)
		err = EINVAL; /* the daemon never read the record: not a context's fd */
err_sock:
	close(sock);
err_fd:
	close(fd);
	errno = err;
	return NULL;
}

SOFV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	struct sof_pd_req req = {.pd = pd_handle};
	struct sofv_pd *pd;
	int err;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	err = -sofv_rpc(to_sctx(context), SOF_OP_QUERY_PD, &req, sizeof(req), NULL, 0, NULL, 0,
			NULL, NULL);
	if (err) {
		errno = err;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->handle = pd_handle;
	pd->ibpd.context = context;
	pd->ibpd.handle = pd_handle;
	return &pd->ibpd;
}

SOFV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (pd && !to_spd(pd)->parent)
		free(to_spd(pd));
}

SOFV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct sof_query_mr_req req;
	struct sof_query_mr_rep rep;
	struct sofv_mr *m;
	int err;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.key = mr_handle;
	req.pd = to_spd(pd)->handle;
	err = -sofv_rpc(to_sctx(pd->context), SOF_OP_QUERY_MR, &req, sizeof(req), NULL, 0, &rep,
			sizeof(rep), NULL, NULL);
	if (err) {
		errno = err;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->ibmr.context = pd->context;
	m->ibmr.pd = pd;
	m->ibmr.addr = (void *)(uintptr_t)rep.addr;
	m->ibmr.length = rep.length;
	m->ibmr.handle = rep.key;
	m->ibmr.lkey = rep.key;
	m->ibmr.rkey = rep.key;
	m->access = rep.access;
	m->iova = rep.iova;
	m->pd = to_spd(pd);
	if (rep.mine) {
		/* this process's memory: local SGEs of the importing context
		 * may name the lkey, as with rxe (test_shared_pd of rdma-core) */
		struct sofv_context *s = to_sctx(pd->context);

		pthread_rwlock_wrlock(&s->obj_lock);
		err = sof_hmap_put(&s->mrs, m->ibmr.lkey, m);
		pthread_rwlock_unlock(&s->obj_lock);
		if (err) {
			free(m);
			errno = -err;
			return NULL;
		}
	}
	return &m->ibmr;
}

SOFV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	struct sofv_context *s;
	struct sofv_mr *m;

	if (!mr)
		return;
	m = to_smr(mr);
	s = to_sctx(mr->context);
	sofv_engine_lock(s);
	pthread_rwlock_wrlock(&s->obj_lock);
	if (sof_hmap_get(&s->mrs, mr->lkey) == m) {
		sof_hmap_del(&s->mrs, mr->lkey);
		/* QPs drop what they cached of it (same_host.c) */
		atomic_fetch_add_explicit(&s->mr_gen, 1, memory_order_release);
	}
	pthread_rwlock_unlock(&s->obj_lock);
	sofv_engine_unlock(s);
	free(m);
}
