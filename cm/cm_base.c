/*
 * What every file of cm/ stands on: the host it was given at cm_init
 * (cm_host.h), its own counts (read by the host for STATUS) and the
 * host's log. Neutral: it calls nothing else of cm/, so the files above
 * it (the id layer, the protocol) reach the host without calling each
 * other.
 */
#include "cm.h"

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
