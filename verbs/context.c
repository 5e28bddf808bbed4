/*
 * The device and context layer of the drop-in libibverbs: the device list
 * (sof0, served by the daemon of this network namespace, and sofib0 when
 * that daemon has an InfiniBand port: daemon/ib.c),
 * opening a context (one daemon connection each), the device and port
 * queries, asynchronous events and fork support. The GID and P_Key tables
 * are gid.c's.
 *
 * The identity comes from the daemon's HELLO answer, a copy kept for the
 * context's life; the GID table is read live (gid.c), because it follows
 * the interface addresses. The context maps the page it is published in.
 * Limits are the SOFV_MAX_* of sofv.h, the ones creation enforces.
 *
 * A context is laid out as rdma-core's providers lay theirs out: struct
 * verbs_context ends with struct ibv_context, and abi_compat marks it as
 * extended, so the inline functions of <infiniband/verbs.h> find the
 * operations they jump through (ibv_post_send, ibv_poll_cq,
 * ibv_create_cq_ex, ibv_query_port, ...). Operations the device does not
 * have stay NULL; those inlines then return EOPNOTSUPP or ENOSYS.
 */
#include "sofv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* verbs.h turns ibv_query_port into an inline; we define the real one. */
#undef ibv_query_port

int ibv_dofork_range(void *base, size_t size);
int ibv_dontfork_range(void *base, size_t size);

/* The devices. They live as long as the process, like rdma-core's cached
 * device list, so a context never outlives its device; dev_lock protects
 * their refresh at each listing. */
static struct sofv_device sofv_dev, sofv_dev_ib;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- talking to the daemon -------------------------------------------- */

/* HELLO on a fresh connection. On success *async and *objtab are the
 * descriptors of the reply (owned by the caller). 0 or -errno. */
static int hello_op(int sock, uint32_t op, const void *req, size_t reqlen,
		    struct sof_hello_rep *rep, int *async, int *objtab)
{
	int fds[2] = {-1, -1}, nfds = 2, err;

	err = sof_client_rpc(sock, op, req, reqlen, NULL, 0, rep, sizeof(*rep), fds, &nfds);
	if (err)
		return err;
	if (nfds != 2 || rep->version != SOF_PROTO_VERSION || rep->dev.num_gids > SOF_MAX_GIDS) {
		sof_close_fds(fds, nfds);
		return -EPROTO;
	}
	rep->dev.name[sizeof(rep->dev.name) - 1] = '\0';
	rep->dev.fw_ver[sizeof(rep->dev.fw_ver) - 1] = '\0';
	*async = fds[0];
	*objtab = fds[1];
	return 0;
}

static int hello(int sock, struct sof_hello_rep *rep, int *async, int *objtab)
{
	struct sof_hello_req req = {.version = SOF_PROTO_VERSION};

	return hello_op(sock, SOF_OP_HELLO, &req, sizeof(req), rep, async, objtab);
}

/* Map the object table and the GID page after it, read-only. A daemon
 * whose memfd is too small speaks another protocol: EPROTO (mapping it
 * anyway would fault on the first read). */
static void *map_objtab(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return MAP_FAILED;
	if ((uint64_t)st.st_size < SOF_OBJTAB_MAP_SIZE) {
		errno = EPROTO;
		return MAP_FAILED;
	}
	return mmap(NULL, SOF_OBJTAB_MAP_SIZE, PROT_READ, MAP_SHARED, fd, 0);
}

/* The uverbsN that `softofed run` shows for our device in sysfs
 * (tools/present.c): the entry of /sys/class/infiniband_verbs whose ibdev
 * is name. Copies it to out (16 bytes at least) and returns 0; -ENOENT
 * without such a presentation. */
static int presented_uverbs(const char *name, char *out, size_t len)
{
	DIR *d = opendir("/sys/class/infiniband_verbs");
	char path[320], ibdev[IBV_SYSFS_NAME_MAX];
	struct dirent *e;
	int err = -ENOENT;

	if (!d)
		return err;
	while (err && (e = readdir(d))) {
		FILE *f;

		if (strncmp(e->d_name, "uverbs", 6) || strlen(e->d_name) >= len)
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/%.64s/ibdev", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(ibdev, sizeof(ibdev), f)) {
			ibdev[strcspn(ibdev, "\n")] = '\0';
			if (!strcmp(ibdev, name)) {
				snprintf(out, len, "%s", e->d_name);
				err = 0;
			}
		}
		fclose(f);
	}
	closedir(d);
	return err;
}

static void fill_device(struct sofv_device *d, const struct sof_devinfo *info)
{
	const char *name = info->name[0] ? info->name : "sof0";
	char uverbs[IBV_SYSFS_NAME_MAX];

	d->info = *info;
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", name);
	/* Under `softofed run` the device shows in /dev and /sys as uverbsN
	 * and <name>; elsewhere these paths do not exist (no kernel device is
	 * behind sof0) and ibv_read_sysfs_file answers ENOENT. */
	if (presented_uverbs(name, uverbs, sizeof(uverbs)))
		snprintf(uverbs, sizeof(uverbs), "%s", name);
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "%s", uverbs);
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path), "/sys/class/infiniband_verbs/%s",
		 uverbs);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path), "/sys/class/infiniband/%s",
		 name);
}

static struct sofv_device *to_sdev(struct ibv_device *dev)
{
	if (dev == &sofv_dev.ibdev)
		return &sofv_dev;
	return dev == &sofv_dev_ib.ibdev ? &sofv_dev_ib : NULL;
}

/* sofib0's identity: sof0's but for its name and node (the InfiniBand
 * port's node GUID, ASSIGN's when a fabric gave one). */
static void ib_devinfo(struct sof_devinfo *d, const struct sof_ib_port *p)
{
	snprintf(d->name, sizeof(d->name), "%s", SOF_IB_DEV_NAME);
	d->node_guid = htobe64(p->node_guid);
	d->sys_image_guid = htobe64(p->node_guid);
	d->active_mtu = p->active_mtu;
	d->port_state = p->state;
}

/* The InfiniBand port as the daemon publishes it, from a mapped object
 * table; 0, or -ENODEV when the daemon has none. */
static int ib_port_read(const void *tab, struct sof_ib_port *p)
{
	const struct sof_gid_shm *g =
	    (const struct sof_gid_shm *)((const char *)tab + SOF_OBJTAB_GID_OFF);

	if (sof_ib_read(g, p))
		return -EIO;
	return p->present == 1 ? 0 : -ENODEV;
}

int sofv_ib_port(const struct sofv_context *s, struct sof_ib_port *p)
{
	return ib_port_read(s->objtab, p);
}

/* ---- device list ---------------------------------------------------------- */

SOFV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	struct sof_hello_rep rep;
	int sock, async, objtab, err, n = 0;

	list = calloc(3, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	/* No daemon reachable means no device: an empty list, as rdma-core
	 * answers on a machine without RDMA hardware. */
	sock = sof_client_connect();
	if (sock >= 0) {
		err = hello(sock, &rep, &async, &objtab);
		close(sock);
		if (!err) {
			void *tab = map_objtab(objtab);
			struct sof_ib_port ibp;
			struct sof_devinfo ibinfo = rep.dev;
			bool has_ib = false;

			close(async);
			close(objtab);
			if (tab != MAP_FAILED) {
				has_ib = !ib_port_read(tab, &ibp);
				munmap(tab, SOF_OBJTAB_MAP_SIZE);
			}
			pthread_mutex_lock(&dev_lock);
			fill_device(&sofv_dev, &rep.dev);
			if (has_ib) {
				ib_devinfo(&ibinfo, &ibp);
				fill_device(&sofv_dev_ib, &ibinfo);
				sofv_dev_ib.ib = true;
			}
			pthread_mutex_unlock(&dev_lock);
			list[n++] = &sofv_dev.ibdev;
			if (has_ib)
				list[n++] = &sofv_dev_ib.ibdev;
		}
	}
	if (num_devices)
		*num_devices = n;
	return list;
}

SOFV_EXPORT void ibv_free_device_list(struct ibv_device **list) { free(list); }

SOFV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

SOFV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct sofv_device *d = to_sdev(device);
	__be64 guid;

	if (!d)
		return 0;
	pthread_mutex_lock(&dev_lock);
	guid = (__be64)d->info.node_guid;
	pthread_mutex_unlock(&dev_lock);
	return guid;
}

SOFV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	struct sofv_device *d = to_sdev(device);

	return d ? (d->ib ? 1 : 0) : -1;
}

/* ---- contexts ------------------------------------------------------------ */

/* ibv_context_ops wants the old ibv_query_port; ours fills the same bytes. */
static int compat_query_port(struct ibv_context *ctx, uint8_t port,
			     struct _compat_ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

static void set_ops(struct sofv_context *s)
{
	struct verbs_context *v = &s->vctx;
	struct ibv_context_ops *ops = &v->context.ops;

	ops->_compat_query_device = ibv_query_device;
	ops->_compat_query_port = compat_query_port;
	ops->poll_cq = sofv_poll_cq;
	ops->req_notify_cq = sofv_req_notify_cq;
	ops->post_send = sofv_post_send;
	ops->post_recv = sofv_post_recv;
	ops->post_srq_recv = sofv_post_srq_recv;
	ops->alloc_mw = sofv_alloc_mw;
	ops->bind_mw = sofv_bind_mw;
	ops->dealloc_mw = sofv_dealloc_mw;

	v->sz = sizeof(*v);
	v->query_port = sofv_query_port;
	v->query_device_ex = sofv_query_device_ex;
	v->advise_mr = sofv_advise_mr;
	v->create_cq_ex = sofv_create_cq_ex;
	v->create_qp_ex = sofv_create_qp_ex;
	v->create_srq_ex = sofv_create_srq_ex;
	sofv_domain_set_ops(s);
	v->open_xrcd = sofv_open_xrcd;
	v->close_xrcd = sofv_close_xrcd;
	v->get_srq_num = sofv_get_srq_num;
	v->open_qp = sofv_open_qp;
	sofv_flow_set_ops(v);
}

SOFV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sof_hello_req req = {.version = SOF_PROTO_VERSION};
	struct ibv_context *ctx;
	int sock;

	if (!to_sdev(device)) {
		errno = EINVAL;
		return NULL;
	}
	sock = sof_client_connect();
	if (sock < 0) {
		errno = -sock;
		return NULL;
	}
	ctx = sofv_context_open(sock, SOF_OP_HELLO, &req, sizeof(req), -1);
	if (!ctx) {
		int err = errno;

		close(sock);
		errno = err;
		return NULL;
	}
	if (to_sdev(device)->ib) {
		struct sofv_context *s = to_sctx(ctx);
		struct sof_ib_port p;

		/* the daemon lost its port since the listing */
		if (sofv_ib_port(s, &p)) {
			ibv_close_device(ctx);
			errno = ENODEV;
			return NULL;
		}
		s->ib = true;
		ib_devinfo(&s->dev, &p);
		ctx->device = device;
	}
	return ctx;
}

struct ibv_context *sofv_context_open(int sock, uint32_t op, const void *req, size_t reqlen,
				      int cmd_fd)
{
	struct sof_hello_rep rep;
	struct sofv_context *s;
	int async, objtab, err;
	void *tab;

	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->sock = sock;
	s->import_fd = cmd_fd;
	err = -hello_op(s->sock, op, req, reqlen, &rep, &async, &objtab);
	if (err)
		goto err_free;
	pthread_mutex_lock(&dev_lock);
	if (!sofv_dev.ibdev.name[0])
		fill_device(&sofv_dev, &rep.dev); /* imported before any device list */
	pthread_mutex_unlock(&dev_lock);
	tab = map_objtab(objtab);
	err = errno;
	close(objtab);
	if (tab == MAP_FAILED)
		goto err_async;

	s->ctx_id = rep.ctx_id;
	s->dev = rep.dev;
	atomic_init(&s->doorbell, -1);
	s->objtab = tab;
	s->gidtab = (const struct sof_gid_shm *)((const char *)tab + SOF_OBJTAB_GID_OFF);
	pthread_mutex_init(&s->rpc_lock, NULL);
	pthread_mutex_init(&s->mem_lock, NULL);
	pthread_rwlock_init(&s->obj_lock, NULL);
	sofv_exec_ctx_init(s);

	s->vctx.context.device = &sofv_dev.ibdev;
	s->vctx.context.cmd_fd = cmd_fd >= 0 ? cmd_fd : s->sock;
	s->vctx.context.async_fd = async;
	s->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&s->vctx.context.mutex, NULL);
	s->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	set_ops(s);
	return &s->vctx.context;

err_async:
	close(async);
err_free:
	free(s);
	errno = err;
	return NULL;
}

/* Objects still alive are the application's leak; the daemon releases
 * their device side when the connection closes. */
SOFV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sofv_context *s = to_sctx(context);

	sofv_mem_ctx_close(s);
	sofv_engine_ctx_close(s);
	sofv_exec_ctx_cleanup(s);
	sofv_domains_free(s);
	sof_hmap_free(&s->mrs);
	sof_hmap_free(&s->qps);
	sof_hmap_free(&s->cqs);
	sof_hmap_free(&s->srqs);
	sof_hmap_free(&s->mws);
	munmap((void *)s->objtab, SOF_OBJTAB_MAP_SIZE);
	close(context->async_fd);
	if (atomic_load(&s->doorbell) >= 0)
		close(atomic_load(&s->doorbell));
	close(s->sock);
	if (s->import_fd >= 0)
		close(s->import_fd);
	pthread_mutex_destroy(&context->mutex);
	pthread_rwlock_destroy(&s->obj_lock);
	pthread_mutex_destroy(&s->rpc_lock);
	pthread_mutex_destroy(&s->cache_lock);
	sofv_mr_post_free(s);
	pthread_mutex_destroy(&s->mem_lock);
	pthread_mutex_destroy(&s->prog_lock);
	pthread_cond_destroy(&s->prog_cond);
	free(s);
	return 0;
}

/* ---- device attributes --------------------------------------------------- */

static void device_attr(const struct sofv_context *s, struct ibv_device_attr *a)
{
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		page = 4096;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", s->dev.fw_ver);
	a->node_guid = (__be64)s->dev.node_guid;
	a->sys_image_guid = (__be64)s->dev.sys_image_guid;
	a->max_mr_size = SOFV_MAX_MR_SIZE;
	a->page_size_cap = ~((uint64_t)page - 1);
	a->vendor_id = s->dev.vendor_id;
	a->vendor_part_id = s->dev.vendor_part_id;
	a->hw_ver = s->dev.hw_ver;
	a->max_qp = SOFV_MAX_QP;
	a->max_qp_wr = SOFV_MAX_QP_WR;
	/* RNR NAKs are generated (the executor's RNR wait); the system image
	 * GUID is reported; an AH's port is checked at creation; XRC domains,
	 * SRQs and QPs (xrc.c); memory windows of type 1 and 2B, as rxe (mw.c);
	 * raw packet QPs take ibv_create_flow rules (flow.c, daemon/raw.c);
	 * an SRQ's max_wr changes by ibv_modify_srq (srq.c). */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_UD_AV_PORT_ENFORCE | IBV_DEVICE_XRC | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MANAGED_FLOW_STEERING |
			      IBV_DEVICE_SRQ_RESIZE;
	a->max_sge = SOFV_MAX_SGE;
	a->max_sge_rd = SOFV_MAX_SGE;
	a->max_cq = SOFV_MAX_CQ;
	a->max_cqe = SOFV_MAX_CQE;
	a->max_mr = SOFV_MAX_MR;
	a->max_pd = SOFV_MAX_PD;
	a->max_qp_rd_atom = SOFV_MAX_QP_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = SOFV_MAX_QP_RD_ATOM * SOFV_MAX_QP;
	a->max_qp_init_rd_atom = SOFV_MAX_QP_RD_ATOM;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ee = 0;
	a->max_rdd = 0;
	a->max_mw = SOFV_MAX_MR; /* the daemon's limit per context, as for MRs */
	a->max_raw_ipv6_qp = 0;
	a->max_raw_ethy_qp = 0;
	/* the daemon's limits (transport/mcast.c) */
	a->max_mcast_grp = SOF_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = SOF_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = SOF_MAX_TOTAL_MCAST_QP_ATTACH;
	a->max_ah = SOFV_MAX_AH;
	a->max_fmr = 0;
	a->max_map_per_fmr = 0;
	a->max_srq = SOFV_MAX_SRQ;
	a->max_srq_wr = SOFV_MAX_SRQ_WR;
	a->max_srq_sge = SOFV_MAX_SRQ_SGE;
	a->max_pkeys = s->ib ? SOF_IB_PKEYS : SOFV_MAX_PKEYS;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

SOFV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	if (!context || !attr)
		return EINVAL;
	device_attr(to_sctx(context), attr);
	return 0;
}

int sofv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	device_attr(to_sctx(ctx), &a.orig_attr);
	/* Completion timestamps are CLOCK_MONOTONIC nanoseconds, a 1 GHz
	 * clock (domain.c, cqring.c). */
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = 1000000; /* kHz */
	a.phys_port_cnt_ex = 1;
	a.max_dm_size = SOFV_MAX_DM_SIZE;
	/* IBV_QP_RATE_LIMIT: packets to other hosts are paced (domain.c) */
	a.packet_pacing_caps.qp_rate_limit_min = SOFV_RATE_LIMIT_MIN;
	a.packet_pacing_caps.qp_rate_limit_max = SOFV_RATE_LIMIT_MAX;
	a.packet_pacing_caps.supported_qpts =
	    1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD;
	/* On-demand paging, explicit and implicit: regions stay in place and
	 * every access looks the pages up (mem_reg.c), for every transport
	 * and operation. */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a.odp_caps.per_transport_caps.rc_odp_caps =
	    IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
	    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.uc_odp_caps =
	    IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
	    IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.ud_odp_caps =
	    IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

/* ---- ports ---------------------------------------------------------------- */

/* sofib0's port: what its subnet manager set (IBA 14.2.5.6), live. */
static int ib_query_port(const struct sofv_context *s, struct ibv_port_attr *attr, size_t attr_len)
{
	struct ibv_port_attr a;
	struct sof_ib_port p;

	if (sofv_ib_port(s, &p))
		return EIO;
	memset(&a, 0, sizeof(a));
	a.state = p.state >= IBV_PORT_DOWN && p.state <= IBV_PORT_ACTIVE ? (enum ibv_port_state)p.state
									  : IBV_PORT_DOWN;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = p.active_mtu >= IBV_MTU_256 && p.active_mtu <= IBV_MTU_4096
			   ? (enum ibv_mtu)p.active_mtu
			   : IBV_MTU_4096;
	a.gid_tbl_len = 1;
	/* an SM runs elsewhere; this port takes CM and SM class MADs */
	a.port_cap_flags = IBV_PORT_CM_SUP;
	a.max_msg_sz = SOFV_MAX_MSG_SZ;
	a.pkey_tbl_len = SOF_IB_PKEYS;
	a.lid = p.lid;
	a.sm_lid = p.sm_lid;
	a.lmc = p.lmc;
	a.sm_sl = p.sm_sl;
	a.max_vl_num = 1; /* VL0 (VLCap 1), VL15 for SMPs */
	a.active_width = 2;  /* 4x */
	a.active_speed = 32; /* EDR */
	a.phys_state = p.phys_state;
	a.link_layer = IBV_LINK_LAYER_INFINIBAND;
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

int sofv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
		    size_t attr_len)
{
	const struct sofv_context *s = to_sctx(ctx);
	struct ibv_port_attr a;

	if (port != 1 || !attr)
		return EINVAL;
	if (s->ib)
		return ib_query_port(s, attr, attr_len);
	memset(&a, 0, sizeof(a));
	a.state = s->dev.port_state ? (enum ibv_port_state)s->dev.port_state : IBV_PORT_ACTIVE;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = s->dev.active_mtu >= IBV_MTU_256 && s->dev.active_mtu <= IBV_MTU_4096
			   ? (enum ibv_mtu)s->dev.active_mtu
			   : IBV_MTU_4096;
	a.gid_tbl_len = SOF_MAX_GIDS;
	a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a.max_msg_sz = SOFV_MAX_MSG_SZ;
	a.pkey_tbl_len = SOFV_MAX_PKEYS;
	a.lid = 0; /* RoCE: no LIDs */
	a.sm_lid = 0;
	a.max_vl_num = 1;    /* VL0 */
	a.active_width = 2;  /* 4x */
	a.active_speed = 32; /* EDR: 4x EDR = 100 Gb/s */
	a.phys_state = 5;    /* LinkUp */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The exported symbol takes the port attributes of older headers, which end
 * before port_cap_flags2: fill only those bytes. */
SOFV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			       struct _compat_ibv_port_attr *port_attr)
{
	if (!context || !port_attr)
		return EINVAL;
	return sofv_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			       offsetof(struct ibv_port_attr, port_cap_flags2));
}

/* ---- asynchronous events ---------------------------------------------- */

static bool is_qp_event(uint32_t t)
{
	return t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR ||
	       t == IBV_EVENT_QP_ACCESS_ERR || t == IBV_EVENT_COMM_EST ||
	       t == IBV_EVENT_SQ_DRAINED || t == IBV_EVENT_PATH_MIG ||
	       t == IBV_EVENT_PATH_MIG_ERR || t == IBV_EVENT_QP_LAST_WQE_REACHED;
}

static bool is_port_event(uint32_t t)
{
	return t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR || t == IBV_EVENT_LID_CHANGE ||
	       t == IBV_EVENT_PKEY_CHANGE || t == IBV_EVENT_SM_CHANGE ||
	       t == IBV_EVENT_CLIENT_REREGISTER || t == IBV_EVENT_GID_CHANGE;
}

/* Find the object an event is about. false when it no longer exists (it
 * was destroyed while the event travelled) or the event is unknown: the
 * event is then dropped. Lock: takes obj_lock for reading. */
static bool resolve_event(struct sofv_context *s, const struct sof_async_msg *m,
			  struct ibv_async_event *ev)
{
	bool found = false;

	memset(ev, 0, sizeof(*ev));
	ev->event_type = (enum ibv_event_type)m->event_type;
	if (is_port_event(m->event_type)) {
		/* a port event is its device's: sof0's or sofib0's */
		ev->element.port_num = (int)(m->handle & 0xff);
		return (m->handle & ~SOF_ASYNC_PORT_IB) == 1 &&
		       !!(m->handle & SOF_ASYNC_PORT_IB) == s->ib;
	}
	if (m->event_type == IBV_EVENT_DEVICE_FATAL)
		return true;
	if (!m->handle)
		return false;
	/* An event handed out is counted on its object (under the object's
	 * mutex, while obj_lock still holds it in the table): destroying the
	 * object waits until the program acked as many (ibv_get_async_event(3)) */
	pthread_rwlock_rdlock(&s->obj_lock);
	if (is_qp_event(m->event_type)) {
		struct sofv_qp *qp = sof_hmap_get(&s->qps, m->handle);

		if (qp) {
			ev->element.qp = &qp->qpx.qp_base;
			pthread_mutex_lock(&ev->element.qp->mutex);
			qp->async_got++;
			pthread_mutex_unlock(&ev->element.qp->mutex);
			found = true;
		}
	} else if (m->event_type == IBV_EVENT_CQ_ERR) {
		struct sofv_cq *cq = sof_hmap_get(&s->cqs, m->handle);

		if (cq) {
			ev->element.cq = ibv_cq_ex_to_cq(&cq->ibcq);
			pthread_mutex_lock(&ev->element.cq->mutex);
			cq->async_got++;
			pthread_mutex_unlock(&ev->element.cq->mutex);
			found = true;
		}
	} else if (m->event_type == IBV_EVENT_SRQ_ERR ||
		   m->event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
		struct sofv_srq *srq = sof_hmap_get(&s->srqs, m->handle);

		if (srq) {
			ev->element.srq = &srq->ibsrq;
			pthread_mutex_lock(&srq->ibsrq.mutex);
			srq->async_got++;
			pthread_mutex_unlock(&srq->ibsrq.mutex);
			found = true;
		}
	}
	pthread_rwlock_unlock(&s->obj_lock);
	return found;
}

/* Blocks unless the application made async_fd non-blocking (then -1 with
 * EAGAIN when nothing is pending), as with the kernel's event file. When
 * the daemon is gone the device is: IBV_EVENT_DEVICE_FATAL, once. */
SOFV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sofv_context *s;
	struct sof_async_msg m;
	ssize_t n;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	s = to_sctx(context);
	for (;;) {
		n = recv(context->async_fd, &m, sizeof(m), MSG_TRUNC);
		if (n < 0)
			return -1;
		if (n == 0) {
			bool was = false;

			if (!atomic_compare_exchange_strong(&s->async_fatal, &was, true)) {
				errno = EIO;
				return -1;
			}
			memset(event, 0, sizeof(*event));
			event->event_type = IBV_EVENT_DEVICE_FATAL;
			atomic_fetch_add(&s->async_gets, 1);
			return 0;
		}
		if (n != (ssize_t)sizeof(m))
			continue; /* not one of ours: drop it */
		if (resolve_event(s, &m, event))
			break;
		/* The event was about an object destroyed since: the kernel
		 * would have withdrawn it. The caller may have polled the fd
		 * for this very event, so do not block for the next one. */
		if (recv(context->async_fd, &m, sizeof(m), MSG_PEEK | MSG_DONTWAIT) < 0) {
			errno = EAGAIN;
			return -1;
		}
	}
	atomic_fetch_add(&s->async_gets, 1);
	return 0;
}

/* As rdma-core: an affiliated event holds its object until acked;
 * destroying a QP, CQ or SRQ waits until every event handed out about it
 * was acked here, so the object this reads is still there. */
SOFV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *mu = NULL;
	pthread_cond_t *cond = NULL;
	uint32_t *done = NULL;
	struct ibv_context *ctx = NULL;

	if (!event)
		return;
	if (is_qp_event(event->event_type) && event->element.qp) {
		struct ibv_qp *qp = event->element.qp;

		ctx = qp->context;
		mu = &qp->mutex, cond = &qp->cond, done = &qp->events_completed;
	} else if (event->event_type == IBV_EVENT_CQ_ERR && event->element.cq) {
		struct ibv_cq *cq = event->element.cq;

		ctx = cq->context;
		mu = &cq->mutex, cond = &cq->cond, done = &cq->async_events_completed;
	} else if ((event->event_type == IBV_EVENT_SRQ_ERR ||
		    event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED) &&
		   event->element.srq) {
		struct ibv_srq *srq = event->element.srq;

		ctx = srq->context;
		mu = &srq->mutex, cond = &srq->cond, done = &srq->events_completed;
	}
	if (mu) {
		pthread_mutex_lock(mu);
		++*done;
		pthread_cond_broadcast(cond);
		pthread_mutex_unlock(mu);
	}
	if (ctx)
		atomic_fetch_add(&to_sctx(ctx)->async_acks, 1);
}

/* ---- fork ----------------------------------------------------------------- */

SOFV_EXPORT int ibv_fork_init(void)
{
	int err = sofv_mem_fork_init();

	return err < 0 ? -err : 0;
}

SOFV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

/* Registered memory is handled by mem_share.c as a whole; there is nothing to
 * do per range. */
SOFV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

SOFV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}
