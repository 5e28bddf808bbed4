/*
 * Internals of the drop-in libibumad.so.3: what its files share.
 *
 * umad.c: ports (umad_open_port ... umad_recv), agents, sends;
 * ca.c: the device and its ports as umad_ca_t / umad_port_t, from the
 * daemon (UMAD_CA) instead of sysfs; str.c: the names of classes,
 * methods, attributes and statuses (umad_str.h).
 *
 * Names: sofu_ for what is internal; exports are marked SOFU_EXPORT and
 * listed in libibumad.map.
 */
#ifndef SOFUMAD_H
#define SOFUMAD_H

#include "sof_umad_proto.h"

#define SOFU_EXPORT __attribute__((visibility("default")))

/* The daemon's description of its CA number index (0: sof0, 1: sofib0
 * when it has an InfiniBand port). 0 or -errno. */
int sofu_ca_at(uint32_t index, struct sof_umad_ca_rep *r);
/* The CA named (NULL: the first with an active port, else the first)
 * and its index. 0 or -ENODEV. */
int sofu_get_ca_info(const char *ca_name, struct sof_umad_ca_rep *r, uint32_t *index);
/* The device named (NULL: the first) and a port of it (0: the first
 * active one, else the first). 0 or -ENODEV / -EINVAL. */
int sofu_resolve(const struct sof_umad_ca_rep *r, const char *ca_name, int *portnum);
/* umad_debug's level */
extern int sofu_debug;

#endif
