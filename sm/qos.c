/*
 * SL to VL mapping and VL arbitration (IBA 14.2.5.8 SLtoVLMappingTable,
 * 14.2.5.9 VLArbitrationTable, 7.6.6), set by the master after SUBNET UP
 * on every port with a link, and again on a port whose OperationalVLs
 * changed (a new port, a port brought up again):
 *  - SL2VL: SL s to data VL s mod n, n the data VLs the output port runs
 *    (PortInfo:OperationalVLs 1..5: 1, 2, 4, 8, 15), so no SL reaches VL15;
 *    on a CA port one table, on a switch one per (input port 0..N, output
 *    port) pair, AttributeModifier input << 8 | output;
 *  - VLArb: the low-priority table every data VL with weight 64 (round
 *    robin), the high-priority table VL0 with weight 4 and the rest empty
 *    (weight 0), within the port's VLArbitrationLowCap / HighCap entries;
 *    blocks 1 (low 0..31) and 3 (high 0..31), 2 and 4 when a cap is over 32.
 * Sent in batches between sweeps (sm/main.c calls sm_qos_run when the SMP
 * engine is idle; one port's worth while the SA is busy, as background
 * SMPs that give way to it, sm/smp_io.c); a heavy sweep drops the Sets of
 * a batch not answered yet (sm_qos_cancel) and does not wait for them.
 * A Set refused clears the port's mark and the port is tried again after
 * the next heavy sweep.
 */
#include <errno.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

#define VLARB_LOW_WEIGHT 64
#define VLARB_HIGH_WEIGHT 4

/* data VLs for PortInfo:OperationalVLs (IBA 14.2.5.6, table 146) */
static unsigned data_vls(uint8_t op_vls)
{
	if (op_vls >= 5)
		return 15;
	return op_vls ? 1u << (op_vls - 1) : 1u;
}

void sm_qos_sl2vl(uint8_t op_vls, uint8_t *d)
{
	unsigned n = data_vls(op_vls), sl;

	memset(d, 0, 64);
	for (sl = 0; sl < 16; sl += 2)
		d[sl / 2] = (uint8_t)((sl % n) << 4 | ((sl + 1) % n));
}

void sm_qos_vlarb(uint8_t op_vls, unsigned block, unsigned cap, uint8_t *d)
{
	unsigned n = data_vls(op_vls), i, first = (block == 2 || block == 4) ? 32 : 0;
	bool high = block >= 3;

	memset(d, 0, 64);
	for (i = 0; i < 32 && first + i < cap; i++) {
		unsigned e = first + i;

		if (high) {
			d[2 * i] = 0;
			d[2 * i + 1] = e == 0 ? VLARB_HIGH_WEIGHT : 0;
		} else {
			d[2 * i] = (uint8_t)(e % n);
			d[2 * i + 1] = e < n ? VLARB_LOW_WEIGHT : 0;
		}
	}
}

static void on_qos_set(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)mad;
	if (!err)
		return;
	sm->errors++;
	sm_log(sm, 1, "%s Set on %s port %u (modifier %#x): %s",
	       rq->arg >> 31 ? "VLArbitration" : "SL2VL", rq->node->desc, rq->port,
	       rq->arg & 0x7fffffffu, err == -ETIMEDOUT ? "no answer" : "refused");
	/* written again after the next heavy sweep (not at once: a port
	 * that refuses, e.g. protected by another SM's M_Key, would keep
	 * the SMP engine busy with Sets that fail, and a sweep waiting) */
	rq->node->port[rq->port].qos_vls = 0;
}

static unsigned qos_send(struct sm *sm, struct sm_node *n, struct sm_port *p, uint16_t attr,
			 uint32_t mod, const uint8_t *d)
{
	const uint8_t *path = n->sw ? n->path : p->path;
	unsigned hops = n->sw ? n->hops : p->hops;
	struct sm_req *rq;

	rq = sm_smp_dr(sm, path, hops, SOF_METHOD_SET, attr, mod, d, on_qos_set);
	if (!rq)
		return 0;
	rq->node = n;
	rq->port = p->num;
	rq->arg = mod | (attr == SOF_ATTR_VL_ARB ? 1u << 31 : 0);
	rq->bg = true; /* the SA's answers go first (smp_io.c) */
	return 1;
}

/* the tables of one output port p (all its input ports on a switch) */
static unsigned qos_port(struct sm *sm, struct sm_node *n, struct sm_port *p)
{
	unsigned sent = 0, in, b;
	uint8_t d[64];
	/* VLArbitrationHighCap, LowCap (PortInfo bytes 39, 40) */
	unsigned high_cap = p->raw_portinfo[39], low_cap = p->raw_portinfo[40];

	sm_qos_sl2vl(p->op_vls, d);
	if (n->sw) {
		for (in = 0; in <= n->nports; in++) /* linked or not: it may come up */
			sent += qos_send(sm, n, p, SOF_ATTR_SL2VL, in << 8 | p->num, d);
	} else {
		sent += qos_send(sm, n, p, SOF_ATTR_SL2VL, 0, d);
	}
	for (b = 1; b <= 4; b++) {
		unsigned cap = b <= 2 ? low_cap : high_cap;

		if ((b == 2 || b == 4) && cap <= 32)
			continue;
		if (!cap)
			continue;
		sm_qos_vlarb(p->op_vls, b, cap, d);
		sent += qos_send(sm, n, p, SOF_ATTR_VL_ARB, b << 16 | (n->sw ? p->num : 0u), d);
	}
	p->qos_vls = p->op_vls ? p->op_vls : 1;
	return sent;
}

static void qos_dropped(struct sm *sm, struct sm_req *rq)
{
	rq->node->port[rq->port].qos_vls = 0;
	sm->qos_pending = true;
}

/* A trap's heavy sweep queues behind the batch of Sets in the engine; a
 * batch to a switch whose path the trap's cut broke (256 Sets, each
 * tried sm->retries + 1 times) held the sweep up for seconds (ft128:
 * 11-12 s from the trap to the tables). The Sets not answered yet, queued
 * or in flight, are dropped and their ports written after the sweep. */
void sm_qos_cancel(struct sm *sm)
{
	unsigned n = sm_io_drop(sm, on_qos_set, qos_dropped);

	if (n)
		sm_log(sm, 1, "heavy sweep: %u SL2VL/VLArbitration Sets not answered yet dropped",
		       n);
}

unsigned sm_qos_run(struct sm *sm, unsigned budget)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j, sent = 0;

	if (!sm->qos_pending)
		return 0;
	for (i = 0; i < sn->nnodes && sent < budget; i++) {
		struct sm_node *n = sn->nodes[i];

		if (!n->present)
			continue;
		for (j = 1; j <= n->nports && sent < budget; j++) {
			struct sm_port *p = &n->port[j];

			if (p->present && p->state != SOF_PORT_ACTIVE)
				p->qos_vls = 0; /* set again once it is back */
			if (!p->present || !p->peer || p->state != SOF_PORT_ACTIVE ||
			    p->qos_vls == (p->op_vls ? p->op_vls : 1))
				continue;
			sent += qos_port(sm, n, p);
			sm->qos_ports++;
		}
	}
	if (sent)
		sm->qos_smps += sent;
	else
		sm->qos_pending = false; /* every port done: until the next sweep */
	if (!sent && sm->qos_ports) {
		sm_log(sm, 1, "SL2VL and VLArbitration set on %u ports (%u SMPs)", sm->qos_ports,
		       sm->qos_smps);
		sm->qos_ports = sm->qos_smps = 0;
	}
	return sent;
}
