/*
 * What every file of cm/ stands on: the host it was given at cm_init
 * (cm_host.h), its own counts (read by the host for STATUS) and the
 * host's log, the port's P_Key table. Neutral: it calls nothing else of
 * cm/, so the files above it (the id layer, the protocol) reach the host
 * without calling each other.
 */
#include "cm.h"

#include <errno.h>
#include <stdarg.h>

const struct cm_host *cm_host;
struct cm_counts cm_counts;

void cm_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cm_host->ops->log(fmt, ap);
	va_end(ap);
}

int cm_pkey_index(uint16_t pkey)
{
	struct sof_ib_port p;
	int limited = -ENOENT;

	if (!cm_host->ops->ib_port || cm_host->ops->ib_port(&p))
		return -ENODEV;
	if (!(pkey & 0x7fff))
		return -ENOENT; /* 0x0000 and 0x8000 are invalid (IBA 10.9.1.2) */
	for (int i = 0; i < SOF_IB_PKEYS; i++) {
		if ((p.pkeys[i] & 0x7fff) != (pkey & 0x7fff))
			continue;
		if (p.pkeys[i] & 0x8000)
			return i;
		if (limited < 0)
			limited = i;
	}
	return limited;
}
