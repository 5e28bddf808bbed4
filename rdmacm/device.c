/*
 * The RDMA device as the connection manager sees it. rdma-core's librdmacm
 * keeps one verbs context per device, open for the life of the process,
 * and one PD per device for rdma_create_qp(id, NULL, ...), released when
 * the last id (or device list) that refers to the device goes away. Here
 * the device is sof0 (the first one libibverbs lists), and sofib0 for an
 * id the daemon put on the InfiniBand port (an AF_IB address of its GID).
 * rdma_get_devices / rdma_free_devices (sof0).
 */
#include "sofcm.h"

#include <stdlib.h>
#include <string.h>

/* Under sofcm_lock: sof0, and sofib0 for ids on the InfiniBand port. */
static struct sofcm_device devices[2];

/* Needs sofcm_lock. */
static int open_locked(bool ib)
{
	struct sofcm_device *d = &devices[ib];
	struct ibv_device **list, *pick = NULL;
	struct ibv_device_attr attr;
	struct ibv_context *verbs;
	int n = 0, ret;

	if (d->verbs)
		return 0;
	list = ibv_get_device_list(&n);
	if (!list)
		return errno ? -errno : -ENODEV;
	for (int i = 0; i < n && !pick; i++)
		if (!strcmp(ibv_get_device_name(list[i]), ib ? "sofib0" : "sof0"))
			pick = list[i];
	if (!pick && n > 0 && !ib)
		pick = list[0];
	verbs = pick ? ibv_open_device(pick) : NULL;
	ibv_free_device_list(list);
	if (!verbs)
		return -ENODEV;
	ret = ibv_query_device(verbs, &attr);
	if (ret) {
		ibv_close_device(verbs);
		return -ret;
	}
	d->verbs = verbs;
	d->max_qp_wr = attr.max_qp_wr;
	d->max_init_depth = attr.max_qp_init_rd_atom > 255 ? 255 : attr.max_qp_init_rd_atom;
	d->max_resp_res = attr.max_qp_rd_atom > 255 ? 255 : attr.max_qp_rd_atom;
	return 0;
}

int sofcm_device_open(void)
{
	int ret;

	pthread_mutex_lock(&sofcm_lock);
	ret = open_locked(false);
	pthread_mutex_unlock(&sofcm_lock);
	return ret;
}

/* Needs sofcm_lock. */
static struct sofcm_device *get_locked(bool ib)
{
	struct sofcm_device *d = &devices[ib];
	int ret = open_locked(ib);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	if (!d->pd) {
		d->pd = ibv_alloc_pd(d->verbs);
		if (!d->pd)
			return NULL;
	}
	d->refcnt++;
	return d;
}

struct sofcm_device *sofcm_device_get(bool ib)
{
	struct sofcm_device *dev;

	pthread_mutex_lock(&sofcm_lock);
	dev = get_locked(ib);
	pthread_mutex_unlock(&sofcm_lock);
	return dev;
}

/* Needs sofcm_lock. */
static void put_locked(struct sofcm_device *dev)
{
	if (--dev->refcnt > 0)
		return;
	/* As rdma-core: the PD goes with the last reference (a PD the
	 * application still uses stays, ibv_dealloc_pd refuses it). */
	if (dev->pd && !ibv_dealloc_pd(dev->pd))
		dev->pd = NULL;
	dev->refcnt = 0;
}

void sofcm_device_put(struct sofcm_device *dev)
{
	if (!dev)
		return;
	pthread_mutex_lock(&sofcm_lock);
	put_locked(dev);
	pthread_mutex_unlock(&sofcm_lock);
}

SOFCM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	struct sofcm_device *dev;

	if (num_devices)
		*num_devices = 0;
	list = calloc(2, sizeof(*list));
	if (!list)
		return NULL;
	pthread_mutex_lock(&sofcm_lock);
	dev = get_locked(false);
	pthread_mutex_unlock(&sofcm_lock);
	if (!dev) {
		/* as rdma-core when there is no RDMA device: NULL */
		int err = errno;

		free(list);
		errno = err;
		return NULL;
	}
	list[0] = dev->verbs;
	if (num_devices)
		*num_devices = 1;
	return list;
}

SOFCM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	if (!list)
		return;
	pthread_mutex_lock(&sofcm_lock);
	for (int i = 0; list[i]; i++)
		if (list[i] == devices[0].verbs && devices[0].refcnt > 0)
			put_locked(&devices[0]);
	pthread_mutex_unlock(&sofcm_lock);
	free(list);
}
