/*
 * The GID and P_Key tables of port 1: the library's own reads
 * (sofv_gid_read, sofv_gid_find, sofv_gid_is_local: AH and QP checks, the
 * executor's GRHs, the engine in the program) and the query verbs
 * (ibv_query_gid, ibv_query_gid_ex, ibv_query_gid_table,
 * ibv_query_gid_type, ibv_query_pkey, ibv_get_pkey_index).
 *
 * The GID table follows the interface addresses, so it is read live from
 * the page the daemon publishes in the object table's memfd under a
 * sequence lock (common/sof_gid.h): no system call, any thread. This file
 * needs only the context's mapping of that page, so every other file of
 * the library may call it without a circle back to context.c.
 */
#include "sofv.h"

#include <errno.h>
#include <string.h>

/* The GID types of sysfs, which ibv_query_gid_type reports
 * (rdma-core's enum ibv_gid_type_sysfs). */
enum sofv_gid_type_sysfs {
	SOFV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	SOFV_GID_TYPE_SYSFS_ROCE_V2 = 1,
};

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum sofv_gid_type_sysfs *type);

static uint32_t gid_type(uint32_t sysfs_type)
{
	return sysfs_type == SOFV_GID_TYPE_SYSFS_ROCE_V2 ? IBV_GID_TYPE_ROCE_V2
							 : IBV_GID_TYPE_ROCE_V1;
}

int sofv_gid_read(const struct sofv_context *ctx, uint32_t index, struct sof_gid_entry *out)
{
	struct sof_gid_entry tab[SOF_MAX_GIDS];
	int err;

	if (index >= SOF_MAX_GIDS)
		return -EINVAL;
	err = sof_gid_read(ctx->gidtab, tab, NULL);
	if (err)
		return err;
	if (sof_gid_empty(&tab[index]))
		return -ENODATA;
	if (out)
		*out = tab[index];
	return 0;
}

int sofv_gid_find(const struct sofv_context *ctx, const uint8_t gid[16])
{
	struct sof_gid_entry tab[SOF_MAX_GIDS];
	int err = sof_gid_read(ctx->gidtab, tab, NULL);

	if (err)
		return err;
	for (uint32_t i = 0; i < SOF_MAX_GIDS; i++)
		if (!sof_gid_empty(&tab[i]) && !memcmp(tab[i].gid, gid, 16))
			return (int)i;
	return -ENOENT;
}

bool sofv_gid_is_local(const struct sofv_context *ctx, const uint8_t gid[16])
{
	return sofv_gid_find(ctx, gid) >= 0;
}

static void to_ibv_entry(const struct sof_gid_entry *g, uint32_t index, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, g->gid, sizeof(e->gid.raw));
	e->gid_index = index;
	e->port_num = 1;
	e->gid_type = gid_type(g->type);
	e->ndev_ifindex = g->ifindex;
}

/* sofib0's GID table: one entry, the subnet prefix and the port GUID
 * (IBA 4.1.1), type IB. */
static int ib_gid_entry(const struct sofv_context *s, uint32_t index, struct ibv_gid_entry *e)
{
	struct sof_ib_port p;
	uint64_t v;

	if (index >= 1)
		return EINVAL;
	if (sofv_ib_port(s, &p))
		return EIO;
	memset(e, 0, sizeof(*e));
	v = htobe64(p.subnet_prefix);
	memcpy(e->gid.raw, &v, 8);
	v = htobe64(p.port_guid);
	memcpy(e->gid.raw + 8, &v, 8);
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_IB;
	return 0;
}

/* Entry index of port 1 as it is now. 0, EINVAL (no such entry), ENODATA
 * (empty), EIO (the table cannot be read). */
static int gid_entry(const struct sofv_context *s, uint32_t port, uint32_t index,
		     struct ibv_gid_entry *e)
{
	struct sof_gid_entry g;
	int err;

	if (port != 1 || index >= SOF_MAX_GIDS)
		return EINVAL;
	if (s->ib)
		return ib_gid_entry(s, index, e);
	err = sofv_gid_read(s, index, &g);
	if (err)
		return -err;
	to_ibv_entry(&g, index, e);
	return 0;
}

SOFV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			      union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int err;

	if (!context || !gid || index < 0) {
		errno = EINVAL;
		return -1;
	}
	err = gid_entry(to_sctx(context), port_num, (uint32_t)index, &e);
	if (err == ENODATA) { /* an empty entry reads as the zero GID */
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	if (err) {
		errno = err;
		return -1;
	}
	*gid = e.gid;
	return 0;
}

SOFV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				  uint32_t gid_index, struct ibv_gid_entry *entry, uint32_t flags,
				  size_t entry_size)
{
	struct ibv_gid_entry e;
	int err;

	if (!context || !entry || flags || entry_size < offsetof(struct ibv_gid_entry, gid_type))
		return EINVAL;
	err = gid_entry(to_sctx(context), port_num, gid_index, &e);
	if (err)
		return err;
	memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
	return 0;
}

SOFV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
					 size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct sof_gid_entry tab[SOF_MAX_GIDS];
	size_t n = 0, valid = 0, sz;
	int err;

	if (!context || flags || entry_size < offsetof(struct ibv_gid_entry, gid_type))
		return -EINVAL;
	if (to_sctx(context)->ib) {
		struct ibv_gid_entry e;

		err = ib_gid_entry(to_sctx(context), 0, &e);
		if (err)
			return -err;
		if (!entries || max_entries < 1)
			return -EINVAL;
		memcpy(entries, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
		return 1;
	}
	/* One consistent copy: every entry of the answer is from one moment. */
	err = sof_gid_read(to_sctx(context)->gidtab, tab, NULL);
	if (err)
		return err;
	for (uint32_t i = 0; i < SOF_MAX_GIDS; i++)
		valid += !sof_gid_empty(&tab[i]);
	if (max_entries < valid)
		return -EINVAL;
	if (valid && !entries)
		return -EINVAL;
	sz = entry_size < sizeof(struct ibv_gid_entry) ? entry_size : sizeof(struct ibv_gid_entry);
	for (uint32_t i = 0; i < SOF_MAX_GIDS; i++) {
		struct ibv_gid_entry e;

		if (sof_gid_empty(&tab[i]))
			continue;
		to_ibv_entry(&tab[i], i, &e);
		memcpy((uint8_t *)entries + n * entry_size, &e, sz);
		n++;
	}
	return (ssize_t)n;
}

/* IBVERBS_PRIVATE_34, used by librdmacm and perftest. */
SOFV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				   unsigned int index, enum sofv_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int err;

	if (!context || !type) {
		errno = EINVAL;
		return -1;
	}
	err = gid_entry(to_sctx(context), port_num, index, &e);
	if (err == ENODATA) {
		*type = SOFV_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (err) {
		errno = err;
		return -1;
	}
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? SOFV_GID_TYPE_SYSFS_ROCE_V2
						   : SOFV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

SOFV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
			       __be16 *pkey)
{
	if (context && pkey && port_num == 1 && index >= 0 && to_sctx(context)->ib) {
		struct sof_ib_port p;

		if (index >= SOF_IB_PKEYS || sofv_ib_port(to_sctx(context), &p)) {
			errno = EINVAL;
			return -1;
		}
		*pkey = htobe16(p.pkeys[index]);
		return 0;
	}
	if (!context || !pkey || port_num != 1 || index < 0 || index >= SOFV_MAX_PKEYS) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(SOFV_DEFAULT_PKEY);
	return 0;
}

SOFV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (!context || port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	/* The full-membership bit is ignored when matching, as in the
	 * kernel's P_Key lookup; sofib0 looks in the table the SM set. */
	if (to_sctx(context)->ib) {
		struct sof_ib_port p;

		if (sofv_ib_port(to_sctx(context), &p)) {
			errno = EIO;
			return -1;
		}
		for (int i = 0; i < SOF_IB_PKEYS; i++)
			if ((p.pkeys[i] & 0x7fff) && (p.pkeys[i] & 0x7fff) == (be16toh(pkey) & 0x7fff))
				return i;
		errno = ENOENT;
		return -1;
	}
	if ((be16toh(pkey) & 0x7fff) == (SOFV_DEFAULT_PKEY & 0x7fff))
		return 0;
	errno = ENOENT;
	return -1;
}
