/*
 * The process's command connection to the device daemon: every
 * SOF_OP_CM_* request except SOF_OP_CM_CHANNEL travels on it, one at a
 * time (the daemon answers in order). It is opened on first use; when the
 * daemon goes away it is closed and the next request opens a new one
 * (the ids of the old daemon are gone with it: their requests then fail).
 */
#include "sof_client.h"
#include "sof_proto.h"
#include "sofcm.h"

#include <unistd.h>

static pthread_mutex_t cmd_lock = PTHREAD_MUTEX_INITIALIZER;
static int cmd_sock = -1; /* under cmd_lock */

int sofcm_rpc(uint32_t op, const void *req, size_t reqlen, void *rep, size_t replen)
{
	int ret;

	/* what the program's pollers read is acknowledged before it
	 * connects, disconnects ... (libibverbs, verbs/engine.c) */
	sofv_engine_flush();
	pthread_mutex_lock(&cmd_lock);
	if (cmd_sock < 0) {
		cmd_sock = sof_client_connect();
		if (cmd_sock < 0) {
			ret = cmd_sock;
			cmd_sock = -1;
			goto out;
		}
	}
	ret = sof_client_rpc(cmd_sock, op, req, reqlen, NULL, 0, rep, replen, NULL, NULL);
	if (ret == -EIO || ret == -EPROTO) {
		/* gone, or out of step with us: never reuse it */
		close(cmd_sock);
		cmd_sock = -1;
	}
out:
	pthread_mutex_unlock(&cmd_lock);
	return ret;
}

int sofcm_rpc_id(uint32_t op, uint32_t handle, uint32_t arg, void *rep, size_t replen)
{
	struct sof_cm_id_req req = {.id = handle, .arg = arg};

	return sofcm_rpc(op, &req, sizeof(req), rep, replen);
}
