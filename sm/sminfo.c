/*
 * SM against SM (IBA 14.4.1): after its first heavy sweep a discovering SM
 * asks every other port with IsSM set for its SMInfo (the probe). When one
 * is MASTER, this SM goes STANDBY: it programs nothing, and polls the
 * master's SMInfo every second; three polls unanswered in a row (or an
 * answer that is no longer MASTER) and it becomes master itself and
 * sweeps, taking the LIDs the ports already have. A HANDOVER (SMInfo Set,
 * AttributeModifier 1, IBA 14.4.1.2) from the master makes a standby
 * master at once; the answer to every SMInfo Get and Set is our SMInfo.
 */
#include <errno.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

#define POLL_US 1000000u
#define POLL_FAILS 3

static void on_probe(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_port *p = &rq->node->port[rq->port];
	const uint8_t *d;
	uint64_t guid;

	if (err)
		return;
	d = sm_smp_data(mad);
	guid = sof_get64(d);
	sm_log(sm, 1, "SM at %s port %u: GUID %#llx priority %u state %s", rq->node->desc,
	       rq->port, (unsigned long long)guid, d[20] >> 4, sm_state_names[d[20] & 3]);
	if ((d[20] & 0xf) == SM_STATE_MASTER && guid != sm->sn.sm_guid) {
		sm->master = p;
		sm->master_guid = guid;
	}
}

bool sm_sminfo_probe(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j, n = 0;

	sm->master = NULL;
	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *node = sn->nodes[i];

		if (!node->present)
			continue;
		for (j = node->sw ? 0 : 1; j <= (node->sw ? 0u : node->nports); j++) {
			struct sm_port *p = &node->port[j];
			const uint8_t *path = node->sw ? node->path : p->path;
			unsigned hops = node->sw ? node->hops : p->hops;
			struct sm_req *rq;

			if (!p->present || p == sn->self || !(p->cap_mask & SOF_CAP_IS_SM))
				continue;
			rq = sm_smp_dr(sm, path, hops, SOF_METHOD_GET, SOF_ATTR_SM_INFO, 0, NULL,
				       on_probe);
			if (rq) {
				rq->node = node;
				rq->port = p->num;
				n++;
			}
		}
	}
	sm->phase = SM_PHASE_PROBE;
	return n != 0;
}

static void on_poll(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)rq;
	if (sm->sn.sm_state != SM_STATE_STANDBY)
		return;
	if (!err && (sm_smp_data(mad)[20] & 0xf) == SM_STATE_MASTER &&
	    sof_get64(sm_smp_data(mad)) == sm->master_guid) {
		sm->poll_fails = 0;
		return;
	}
	if (++sm->poll_fails >= POLL_FAILS || !err) {
		sm_log(sm, 0, "the master SM %#llx is gone: taking over",
		       (unsigned long long)sm->master_guid);
		sm_sminfo_take_over(sm);
	}
}

void sm_sminfo_poll(struct sm *sm)
{
	struct sm_port *p = sm->master;
	struct sm_node *n;
	struct sm_req *rq;

	if (!p || sm->next_poll > sm_now_us())
		return;
	sm->next_poll = sm_now_us() + POLL_US;
	n = p->node;
	rq = sm_smp_dr(sm, n->sw ? n->path : p->path, n->sw ? n->hops : p->hops, SOF_METHOD_GET,
		       SOF_ATTR_SM_INFO, 0, NULL, on_poll);
	if (rq) {
		rq->node = n;
		rq->port = p->num;
	}
}

void sm_sminfo_take_over(struct sm *sm)
{
	sm->sn.sm_state = SM_STATE_MASTER;
	sm->master = NULL;
	sm->poll_fails = 0;
	sm->sn.master_lid = 0;
	sm->resweep = true;
	sm->sn.act_count++;
}

/* An SMInfo Set from another SM (IBA 14.4.1.2, table 180): HANDOVER to a
 * standby makes it master; the others change nothing here */
void sm_sminfo_set(struct sm *sm, uint32_t mod)
{
	sm_log(sm, 1, "SMInfo Set %u from another SM", mod);
	if (mod == 1 && sm->sn.sm_state != SM_STATE_MASTER)
		sm_sminfo_take_over(sm);
}
