/*
 * The libraries' connection to the device daemon (client.c): libibverbs
 * and librdmacm both use it.
 */
#ifndef SOF_CLIENT_H
#define SOF_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* Connect to the daemon of this network namespace, starting it when none
 * runs. Returns the socket or -errno. */
int sof_client_connect(void);
/* Send op with req (reqlen bytes) and fds on sock; receive the reply into
 * rep (replen bytes exactly) and up to *nrfds descriptors. Returns the
 * daemon's status (0 or -errno), -EIO when the daemon is gone, -EPROTO on
 * a malformed reply. Not thread-safe per socket: callers serialise. */
int sof_client_rpc(int sock, uint32_t op, const void *req, size_t reqlen, const int *fds,
		   int nfds, void *rep, size_t replen, int *rfds, int *nrfds);

#endif
