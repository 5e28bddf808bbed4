/*
 * The port's GID table: how the daemon keeps it following the addresses of
 * the interfaces it serves, and how the libraries read it.
 *
 * A RoCEv2 GID is an IP address (IBA Annex A17.8): IPv6 as it is, IPv4 as
 * an IPv4-mapped IPv6 address (::ffff:a.b.c.d). The table has SOF_MAX_GIDS
 * entries. Programs hold GID indexes (sgid_index in address handles and
 * QPs), so, as in the kernel's GID cache, an entry keeps its index for as
 * long as its address exists; a removed address leaves its entry empty (the
 * zero GID) and a new one takes the first empty entry.
 *
 * The daemon publishes the table in the page after the object table (the
 * memfd every context maps read-only, SOF_OBJTAB_GID_OFF in sof_shm.h)
 * under a sequence lock: seq is odd while the daemon writes, and a reader
 * retries when seq changed while it copied, so reading takes no system
 * call. What a reader copies is still checked before use.
 */
#ifndef SOF_GID_H
#define SOF_GID_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sof_proto.h"
#include "sof_shm.h"

/* struct sof_gid_entry.type: the GID types of sysfs (rdma-core's enum
 * ibv_gid_type_sysfs), what ibv_query_gid_type reports. */
#define SOF_GID_TYPE_IB_ROCE_V1 0
#define SOF_GID_TYPE_ROCE_V2 1

struct sof_gid_shm {
	_Atomic uint32_t seq; /* odd while the daemon writes; +2 per change */
	uint32_t rsvd[15];
	struct sof_gid_entry gids[SOF_MAX_GIDS]; /* an empty entry is all zero */
	struct sof_ib_port ib;	/* the InfiniBand port (sofib0), under the same seq */
};
_Static_assert(sizeof(struct sof_gid_shm) <= SOF_OBJTAB_GID_SIZE, "GID table fits its page");

/* Whether e is an empty entry (the zero GID). */
bool sof_gid_empty(const struct sof_gid_entry *e);
/* The RoCEv2 GID of an IPv4 address (4 bytes, network order). */
void sof_gid_from_v4(uint8_t gid[16], const void *addr);
/* 1 + the highest index in use, 0 for an empty table. */
uint32_t sof_gid_table_len(const struct sof_gid_entry tab[SOF_MAX_GIDS]);

/* Make tab hold the n GIDs of want (GID and ifindex name an entry): entries
 * still wanted stay where they are, the others are emptied, and wanted ones
 * not yet in tab take the first empty entries in the order of want (those
 * beyond a full table are left out). Duplicates in want count once.
 * Returns whether tab changed. */
bool sof_gid_merge(struct sof_gid_entry tab[SOF_MAX_GIDS], const struct sof_gid_entry *want,
		   size_t n);

/* One rtnetlink address message (struct nlmsghdr, then struct ifaddrmsg and
 * its attributes; len bytes available). Returns 1 and fills *e (GID,
 * ifindex, RoCEv2) when it names an IPv4 or IPv6 address usable as a GID,
 * 0 when it is not one (another family, an IPv6 address whose duplicate
 * address detection has not completed or failed), -EINVAL when malformed. */
int sof_gid_parse_ifaddr(const void *msg, size_t len, struct sof_gid_entry *e);

/* Daemon: write tab into the shared page (it is the only writer). */
void sof_gid_publish(struct sof_gid_shm *shm, const struct sof_gid_entry tab[SOF_MAX_GIDS]);
/* Reader: copy the table as it is now; *seq (when not NULL) gets the
 * sequence number it was read at. 0, or -EIO when no stable copy could be
 * taken (the writer died in the middle of a write). Entries that are not
 * well-formed come out empty. */
int sof_gid_read(const struct sof_gid_shm *shm, struct sof_gid_entry tab[SOF_MAX_GIDS],
		 uint32_t *seq);

/* Daemon: write the InfiniBand port's attributes into the page. */
void sof_ib_publish(struct sof_gid_shm *shm, const struct sof_ib_port *p);
/* Reader: copy them as they are now (names terminated). 0 or -EIO. */
int sof_ib_read(const struct sof_gid_shm *shm, struct sof_ib_port *p);

#endif
