/*
 * Drop-in libibumad.so.3: a port's MAD services through the device daemon
 * (common/sof_umad_proto.h), where rdma-core's library uses the kernel's
 * /dev/infiniband/umadN.
 *
 * umad_open_port() opens a connection to the daemon and asks for a port
 * (UMAD_OPEN); the daemon answers with a socket on which the port's MADs
 * arrive, one record each, laid out as read() on a umad file gives them
 * (struct ib_user_mad, ABI 5 with pkey_index, then the MAD). That socket
 * is the descriptor the program gets, polls and closes; the connection
 * beside it carries umad_register / umad_unregister / umad_send, one
 * request at a time under the port's lock (a program may send from one
 * thread and receive in another, as OpenSM does). umad_recv() reads the
 * socket directly; a record longer than the caller's buffer stays queued
 * and its length is reported with -ENOSPC, as the kernel does for a long
 * RMPP message.
 *
 * Return values follow rdma-core 44: umad_register* -EPERM when the
 * daemon refuses (umad_register2 the daemon's errno, positive),
 * umad_send -EIO with errno set, umad_unregister 0 or -1 with errno.
 */
#include "sofumad.h"

#include "sof_client.h"
#include "sof_proto.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define IB_OPENIB_OUI 0x001405u

/* What a port's requests travel on, found by the descriptor the program
 * holds. */
struct sofu_port {
	int fd;	 /* the MAD socket (the program's "port id"), -1: free */
	int cmd; /* the connection to the daemon */
	pthread_mutex_t lock; /* one request at a time on cmd */
};

static struct sofu_port ports[UMAD_MAX_PORTS];
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t ports_once = PTHREAD_ONCE_INIT;

int sofu_debug;

static void warn_dbg(const char *fn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_dbg(const char *fn, const char *fmt, ...)
{
	va_list ap;

	if (!sofu_debug)
		return;
	fprintf(stderr, "ibwarn: [%d] %s: ", (int)getpid(), fn);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void ports_init(void)
{
	for (int i = 0; i < UMAD_MAX_PORTS; i++) {
		ports[i].fd = ports[i].cmd = -1;
		pthread_mutex_init(&ports[i].lock, NULL);
	}
}

/* The port of descriptor fd, with its lock held; NULL (errno EBADF) for
 * a descriptor that is no open port. */
static struct sofu_port *port_get(int fd)
{
	struct sofu_port *p = NULL;

	pthread_once(&ports_once, ports_init);
	pthread_mutex_lock(&ports_lock);
	for (int i = 0; i < UMAD_MAX_PORTS; i++) {
		if (fd >= 0 && ports[i].fd == fd) {
			p = &ports[i];
			break;
		}
	}
	if (p)
		pthread_mutex_lock(&p->lock);
	pthread_mutex_unlock(&ports_lock);
	if (!p)
		errno = EBADF;
	return p;
}

static int port_rpc(int fd, uint32_t op, const void *req, size_t len, void *rep, size_t replen)
{
	struct sofu_port *p = port_get(fd);
	int err;

	if (!p)
		return -EBADF;
	err = sof_client_rpc(p->cmd, op, req, len, NULL, 0, rep, replen, NULL, NULL);
	pthread_mutex_unlock(&p->lock);
	return err;
}

SOFU_EXPORT int umad_init(void) { return 0; }

SOFU_EXPORT int umad_done(void) { return 0; }

SOFU_EXPORT int umad_open_port(const char *ca_name, int portnum)
{
	struct sof_umad_ca_rep r;
	struct sof_umad_open_req req = {0};
	int cmd, fds[1], nfds = 1, err, slot = -1;
	uint32_t index;

	err = sofu_get_ca_info(ca_name, &r, &index);
	if (err)
		return -ENODEV;
	err = sofu_resolve(&r, ca_name, &portnum);
	if (err)
		return err;
	pthread_once(&ports_once, ports_init);
	cmd = sof_client_connect();
	if (cmd < 0)
		return -EIO;
	req.portnum = (uint32_t)portnum;
	req.ca = index;
	err = sof_client_rpc(cmd, SOF_OP_UMAD_OPEN, &req, sizeof(req), NULL, 0, NULL, 0, fds, &nfds);
	if (!err && nfds != 1) {
		if (nfds > 0)
			close(fds[0]);
		err = -EPROTO;
	}
	if (err) {
		close(cmd);
		warn_dbg(__func__, "open %s port %d: %s", r.name, portnum, strerror(-err));
		return -EIO;
	}
	(void)fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
	pthread_mutex_lock(&ports_lock);
	for (int i = 0; i < UMAD_MAX_PORTS; i++) {
		if (ports[i].fd < 0) {
			slot = i;
			ports[i].fd = fds[0];
			ports[i].cmd = cmd;
			break;
		}
	}
	pthread_mutex_unlock(&ports_lock);
	if (slot < 0) {
		close(fds[0]);
		close(cmd);
		return -EMFILE;
	}
	return fds[0];
}

SOFU_EXPORT int umad_close_port(int portid)
{
	struct sofu_port *p = NULL;

	pthread_once(&ports_once, ports_init);
	/* the same lock order as port_get: the table, then the port */
	pthread_mutex_lock(&ports_lock);
	for (int i = 0; i < UMAD_MAX_PORTS && portid >= 0; i++) {
		if (ports[i].fd == portid) {
			p = &ports[i];
			pthread_mutex_lock(&p->lock);
			p->fd = -1;
			break;
		}
	}
	pthread_mutex_unlock(&ports_lock);
	close(portid);
	if (p) {
		close(p->cmd);
		p->cmd = -1;
		pthread_mutex_unlock(&p->lock);
	}
	return 0;
}

SOFU_EXPORT void *umad_get_mad(void *umad) { return ((struct ib_user_mad *)umad)->data; }

SOFU_EXPORT size_t umad_size(void) { return sizeof(struct ib_user_mad); }

SOFU_EXPORT int umad_status(void *umad) { return (int)((struct ib_user_mad *)umad)->status; }

SOFU_EXPORT ib_mad_addr_t *umad_get_mad_addr(void *umad) { return &((struct ib_user_mad *)umad)->addr; }

/* mad_addr's flow label is taken in host order (rdma-core does so) */
SOFU_EXPORT int umad_set_grh(void *umad, void *mad_addr)
{
	struct ib_user_mad *mad = umad;
	const struct ib_mad_addr *addr = mad_addr;

	if (!addr) {
		mad->addr.grh_present = 0;
		return 0;
	}
	mad->addr.grh_present = 1;
	memcpy(mad->addr.gid, addr->gid, 16);
	mad->addr.flow_label = htobe32(addr->flow_label);
	mad->addr.hop_limit = addr->hop_limit;
	mad->addr.traffic_class = addr->traffic_class;
	return 0;
}

SOFU_EXPORT int umad_set_pkey(void *umad, int pkey_index)
{
	((struct ib_user_mad *)umad)->addr.pkey_index = (uint16_t)pkey_index;
	return 0;
}

SOFU_EXPORT int umad_get_pkey(void *umad) { return ((struct ib_user_mad *)umad)->addr.pkey_index; }

SOFU_EXPORT int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey)
{
	struct ib_user_mad *mad = umad;

	mad->addr.qpn = htobe32((uint32_t)dqp);
	mad->addr.lid = htobe16((uint16_t)dlid);
	mad->addr.qkey = htobe32((uint32_t)qkey);
	mad->addr.sl = (uint8_t)sl;
	return 0;
}

SOFU_EXPORT int umad_set_addr_net(void *umad, __be16 dlid, __be32 dqp, int sl, __be32 qkey)
{
	struct ib_user_mad *mad = umad;

	mad->addr.qpn = dqp;
	mad->addr.lid = dlid;
	mad->addr.qkey = qkey;
	mad->addr.sl = (uint8_t)sl;
	return 0;
}

/* The largest MAD message one request carries; a longer one (an RMPP
 * message, up to SEND_FILE_MAX) travels in a memfd beside it. */
#define SEND_MAX (SOF_MSG_MAX - sizeof(struct sof_msg) - sizeof(struct sof_umad_send_req))
#define SEND_FILE_MAX (8u * 1024u * 1024u + 4096u) /* mad/mad.h's SOF_MAD_MSG_MAX */

static int send_file(int portid, struct sof_umad_send_req *req, const void *data, size_t len)
{
	int fd = memfd_create("sof-umad-send", MFD_CLOEXEC), err;
	struct sofu_port *p;

	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len) {
		err = errno ? -errno : -EIO;
		close(fd);
		return err;
	}
	p = port_get(portid);
	if (!p) {
		close(fd);
		return -EBADF;
	}
	err = sof_client_rpc(p->cmd, SOF_OP_UMAD_SEND, req, sizeof(*req), &fd, 1, NULL, 0, NULL,
			     NULL);
	pthread_mutex_unlock(&p->lock);
	close(fd);
	return err;
}

SOFU_EXPORT int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms,
			  int retries)
{
	struct ib_user_mad *mad = umad;
	struct sof_umad_send_req *req;
	int err;

	if (!umad || length < 0 || (size_t)length > SEND_FILE_MAX || agentid < 0) {
		errno = length < 0 || !umad || agentid < 0 ? EINVAL : EMSGSIZE;
		return -EIO;
	}
	mad->agent_id = (uint32_t)agentid;
	mad->timeout_ms = (uint32_t)timeout_ms;
	mad->retries = (uint32_t)retries;
	req = malloc(sizeof(*req) + ((size_t)length > SEND_MAX ? 0 : (size_t)length));
	if (!req) {
		errno = ENOMEM;
		return -EIO;
	}
	memset(req, 0, sizeof(*req));
	req->agent_id = (uint32_t)agentid;
	req->timeout_ms = timeout_ms < 0 ? 0 : (uint32_t)timeout_ms;
	req->retries = retries < 0 ? 0 : (uint32_t)retries;
	req->len = (uint32_t)length;
	memcpy(req->addr, &mad->addr, sizeof(req->addr));
	if ((size_t)length > SEND_MAX) {
		err = send_file(portid, req, mad->data, (size_t)length);
	} else {
		memcpy(req + 1, mad->data, (size_t)length);
		err = port_rpc(portid, SOF_OP_UMAD_SEND, req, sizeof(*req) + (size_t)length, NULL, 0);
	}
	free(req);
	if (!err)
		return 0;
	warn_dbg(__func__, "send on %d agent %d: %s", portid, agentid, strerror(-err));
	errno = -err;
	return -EIO;
}

static int dev_poll(int fd, int timeout_ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int n = poll(&pfd, 1, timeout_ms);

	if (n == 1)
		return 0;
	return n == 0 ? -ETIMEDOUT : -EIO;
}

SOFU_EXPORT int umad_recv(int portid, void *umad, int *length, int timeout_ms)
{
	struct ib_user_mad *mad = umad;
	size_t room;
	ssize_t n;
	int err;

	errno = 0;
	if (!umad || !length || *length < 0) {
		errno = EINVAL;
		return -EINVAL;
	}
	if (timeout_ms) {
		err = dev_poll(portid, timeout_ms);
		if (err) {
			errno = -err;
			return err;
		}
	}
	room = sizeof(*mad) + (size_t)*length;
	/* a record longer than the buffer stays for a larger one (ENOSPC) */
	n = recv(portid, umad, room, MSG_PEEK | MSG_TRUNC);
	if (n >= 0 && (size_t)n > room) {
		if (room >= sizeof(*mad))
			*length = (int)(mad->length - sizeof(*mad));
		errno = ENOSPC;
		return -ENOSPC;
	}
	if (n >= 0)
		n = recv(portid, umad, room, MSG_DONTWAIT);
	if (n < 0) {
		err = errno == EWOULDBLOCK ? EWOULDBLOCK : errno;
		errno = err;
		return -err;
	}
	if ((size_t)n < sizeof(*mad)) {
		errno = EIO;
		return -EIO;
	}
	*length = (int)((size_t)n - sizeof(*mad));
	return (int)mad->agent_id;
}

SOFU_EXPORT int umad_poll(int portid, int timeout_ms) { return dev_poll(portid, timeout_ms); }

SOFU_EXPORT int umad_get_fd(int portid) { return portid; }

static int do_register(int portid, const struct sof_umad_reg_req *req, uint32_t *id)
{
	struct sof_umad_agent rep;
	int err = port_rpc(portid, SOF_OP_UMAD_REGISTER, req, sizeof(*req), &rep, sizeof(rep));

	if (!err)
		*id = rep.agent_id;
	return err;
}

SOFU_EXPORT int umad_register(int portid, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
			      long method_mask[16 / sizeof(long)])
{
	struct sof_umad_reg_req req = {0};
	uint32_t id;
	int err;

	req.qpn = mgmt_class == 0x01 || mgmt_class == 0x81 ? 0 : 1;
	req.mgmt_class = (uint8_t)mgmt_class;
	req.class_version = (uint8_t)mgmt_version;
	req.rmpp_version = rmpp_version;
	req.oui = IB_OPENIB_OUI;
	if (method_mask)
		memcpy(req.method_mask, method_mask, sizeof(req.method_mask));
	err = do_register(portid, &req, &id);
	if (err) {
		warn_dbg(__func__, "class 0x%x version %d: %s", mgmt_class, mgmt_version,
			 strerror(-err));
		errno = -err;
		return -EPERM;
	}
	return (int)id;
}

SOFU_EXPORT int umad_register_oui(int portid, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
				  long method_mask[16 / sizeof(long)])
{
	struct sof_umad_reg_req req = {0};
	uint32_t id;
	int err;

	if (mgmt_class < 0x30 || mgmt_class > 0x4f || !oui) {
		errno = EINVAL;
		return -EINVAL;
	}
	req.qpn = 1;
	req.mgmt_class = (uint8_t)mgmt_class;
	req.class_version = 1;
	req.rmpp_version = rmpp_version;
	req.oui = (uint32_t)oui[0] << 16 | (uint32_t)oui[1] << 8 | oui[2];
	if (method_mask)
		memcpy(req.method_mask, method_mask, sizeof(req.method_mask));
	err = do_register(portid, &req, &id);
	if (err) {
		errno = -err;
		return -EPERM;
	}
	return (int)id;
}

SOFU_EXPORT int umad_register2(int port_fd, struct umad_reg_attr *attr, uint32_t *agent_id)
{
	struct sof_umad_reg_req req = {0};
	int err;

	if (!attr || !agent_id)
		return EINVAL;
	if (attr->mgmt_class >= 0x30 && attr->mgmt_class <= 0x4f &&
	    ((attr->oui & 0x00ffffff) == 0 || (attr->oui & 0xff000000) != 0))
		return EINVAL;
	req.qpn = attr->mgmt_class == 0x01 || attr->mgmt_class == 0x81 ? 0 : 1;
	req.mgmt_class = attr->mgmt_class;
	req.class_version = attr->mgmt_class_version;
	req.rmpp_version = attr->rmpp_version;
	req.flags = attr->flags;
	req.oui = attr->oui;
	memcpy(req.method_mask, attr->method_mask, sizeof(req.method_mask));
	err = do_register(port_fd, &req, agent_id);
	if (err == -EINVAL && (attr->flags & ~(uint32_t)UMAD_USER_RMPP))
		attr->flags &= UMAD_USER_RMPP; /* the flags the kernel knows */
	return -err;
}

SOFU_EXPORT int umad_unregister(int portid, int agentid)
{
	struct sof_umad_agent req = {.agent_id = (uint32_t)agentid};
	int err = port_rpc(portid, SOF_OP_UMAD_UNREGISTER, &req, sizeof(req), NULL, 0);

	if (!err)
		return 0;
	errno = -err;
	return -1;
}

SOFU_EXPORT int umad_debug(int level)
{
	if (level >= 0)
		sofu_debug = level;
	return sofu_debug;
}

SOFU_EXPORT void umad_addr_dump(ib_mad_addr_t *addr)
{
	char gid[33];

	for (int i = 0; i < 16; i++)
		snprintf(gid + 2 * i, 3, "%02x", addr->gid[i]);
	fprintf(stderr,
		"ibwarn: [%d] umad_addr_dump: qpn %u qkey 0x%x lid %u sl %d\n"
		"grh_present %d gid_index %d hop_limit %d traffic_class %d flow_label 0x%x "
		"pkey_index 0x%x\nGid 0x%s\n",
		(int)getpid(), be32toh(addr->qpn), be32toh(addr->qkey), be16toh(addr->lid), addr->sl,
		addr->grh_present, addr->gid_index, addr->hop_limit, addr->traffic_class,
		be32toh(addr->flow_label), addr->pkey_index, gid);
}

SOFU_EXPORT void umad_dump(void *umad)
{
	struct ib_user_mad *mad = umad;

	fprintf(stderr, "ibwarn: [%d] umad_dump: agent id %d status %x timeout %d\n", (int)getpid(),
		mad->agent_id, mad->status, mad->timeout_ms);
	umad_addr_dump(&mad->addr);
}
