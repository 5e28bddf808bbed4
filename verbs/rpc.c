/*
 * A context's requests to the device daemon: one at a time on its socket
 * (the exchange itself is common/client.c).
 */
#include "sofv.h"

/* Lock: takes ctx->rpc_lock, so requests of one context never interleave. */
int sofv_rpc(struct sofv_context *ctx, uint32_t op, const void *req, size_t reqlen, const int *fds,
	     int nfds, void *rep, size_t replen, int *rfds, int *nrfds)
{
	int err;

	pthread_mutex_lock(&ctx->rpc_lock);
	err = sof_client_rpc(ctx->sock, op, req, reqlen, fds, nfds, rep, replen, rfds, nrfds);
	pthread_mutex_unlock(&ctx->rpc_lock);
	return err;
}

int sofv_notify(struct sofv_context *ctx, uint32_t kind, uint32_t handle)
{
	struct sof_notify_req req = {.kind = kind, .handle = handle};

	return sofv_rpc(ctx, SOF_OP_ASYNC_NOTIFY, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
}
