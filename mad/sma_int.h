/*
 * What the SMA's files share (mad/sma.c: the model, directed route and
 * the other attributes; mad/sma_port.c: the ports' link events, PortInfo
 * and the M_Key check; sma.c calls sma_port.c, not the other way):
 * one SMP being answered, and the entry points between them. Not for
 * callers of the SMA: they use mad/smp.h.
 */
#ifndef SOF_SMA_INT_H
#define SOF_SMA_INT_H

#include "smp.h"

/* one SubnGet/SubnSet being answered */
struct sma_req {
	struct sof_node *n;
	unsigned in_port;
	bool set;
	bool hide_mkey; /* protect level 1 and a wrong M_Key: read as 0 */
	uint32_t mod;
	uint8_t *d; /* the 64 data bytes */
	unsigned ev;
};

/* PortInfo Get/Set (IBA 14.2.5.6), in mad/sma_port.c */
uint16_t sma_port_info(struct sma_req *r);
/* The M_Key check of an SMP (IBA 14.2.4), in mad/sma_port.c: true when it
 * may go on; false when it is a violation (counted, EV_MKEY set, the
 * details for trap 256 kept in the management port). */
bool sma_mkey_check(struct sma_req *r, const uint8_t *mad);

#endif
