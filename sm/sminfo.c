/*
 * SM against SM (IBA 14.4.1): after a heavy sweep the SM asks every other
 * port with IsSM set for its SMInfo (the probe).
 *  - A DISCOVERING SM that finds a MASTER, or a better SM (higher
 *    priority, or equal and lower GUID) still DISCOVERING, goes STANDBY:
 *    it programs nothing, and polls that SM's SMInfo every second; three
 *    polls unanswered in a row (or an answer neither MASTER nor
 *    DISCOVERING) and it becomes master itself and sweeps, taking the
 *    LIDs the ports have.
 *  - A MASTER that finds a STANDBY of higher priority (or equal priority
 *    and lower GUID, IBA 14.4.1.1) hands over: SMInfo Set HANDOVER to it;
 *    the standby becomes master and answers with SMInfo Set ACKNOWLEDGE,
 *    upon which the old master goes STANDBY and polls the new one.
 *  - A MASTER that finds another MASTER of higher priority hands over to
 *    it the same way (the one it finds MASTER when polled counts as the
 *    ACKNOWLEDGE), as OpenSM does: two masters come of a standby that
 *    took over from a master it did not hear from, but that lived (its
 *    polls lost or late at load); the lower leaves the subnet to the
 *    higher, which waits for that (C14-60.2.1), so neither sits on it.
 *  - A standby given HANDOVER (from ours or OpenSM) takes over and sends
 *    ACKNOWLEDGE to the SM that handed over (found by the GUID in the Set).
 *  - A master learns of a new SM by the trap 144 its port sends when IsSM
 *    is set: that port is asked for its SMInfo, and handed over to when it
 *    deserves it; any heavy sweep's probe finds it too.
 * The answer to every SMInfo Get and Set is our SMInfo (sm/main.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/umad.h>

#include "sm.h"
#include "smp.h"

#define POLL_US 1000000u
#define POLL_FAILS 3
#define HANDOVER_US 5000000u	/* no ACKNOWLEDGE by then: stay master */
#define HO_POLL_US 200000u
#define CHECK_US 300000u	/* a port a trap 144 named, asked again */
#define CHECK_FOR_US 10000000u

/* IBA 14.4.1.1: the SM that should be master of the two */
static bool sm_better(uint8_t prio_a, uint64_t guid_a, uint8_t prio_b, uint64_t guid_b)
{
	return prio_a > prio_b || (prio_a == prio_b && guid_a < guid_b);
}

void sm_sminfo_fill(const struct sm *sm, uint8_t *d)
{
	memset(d, 0, 64);
	sof_put64(d + 0, sm->sn.sm_guid);
	sof_put64(d + 8, sm->sn.sm_key);
	sof_put32(d + 16, sm->sn.act_count);
	d[20] = (uint8_t)(sm->sn.sm_priority << 4 | (sm->sn.sm_state & 0xf));
}

static void on_probe(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_port *p = &rq->node->port[rq->port];
	const uint8_t *d;
	uint64_t guid;
	uint8_t prio, state;

	if (err)
		return;
	d = sm_smp_data(mad);
	guid = sof_get64(d);
	prio = d[20] >> 4;
	state = d[20] & 0xf;
	sm_log(sm, 1, "SM at %s port %u: GUID %#llx priority %u state %s", rq->node->desc,
	       rq->port, (unsigned long long)guid, prio, sm_state_names[state & 3]);
	if (guid == sm->sn.sm_guid)
		return;
	if (state == SM_STATE_MASTER && sm->sn.sm_state != SM_STATE_MASTER) {
		sm->master = p;
		sm->master_guid = guid;
	} else if (state == SM_STATE_DISCOVERING && !sm->master &&
		   sm_better(prio, guid, sm->sn.sm_priority, sm->sn.sm_guid)) {
		/* a better SM still sweeping will be master: we wait behind it
		 * as behind a master (OpenSM goes STANDBY on a higher SM in
		 * DISCOVERING too); were we to take the subnet, two masters
		 * would sweep it */
		sm->master = p;
		sm->master_guid = guid;
	} else if ((state == SM_STATE_STANDBY || state == SM_STATE_MASTER) &&
		   (!sm->best || sm_better(prio, guid, sm->best_prio, sm->best_guid))) {
		/* one to hand over to: a standby, or (we are master) a
		 * second master */
		sm->best = p;
		sm->best_guid = guid;
		sm->best_prio = prio;
		sm->best_master = state == SM_STATE_MASTER;
	}
}

bool sm_sminfo_probe(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j, n = 0;

	sm->master = NULL;
	sm->best = NULL;
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

/* an SMInfo Get to the SM at port p */
static struct sm_req *sminfo_get(struct sm *sm, struct sm_port *p, sm_done_fn *done)
{
	struct sm_node *n = p->node;
	struct sm_req *rq;

	rq = sm_smp_dr(sm, n->sw ? n->path : p->path, n->sw ? n->hops : p->hops, SOF_METHOD_GET,
		       SOF_ATTR_SM_INFO, 0, NULL, done);
	if (rq) {
		rq->node = n;
		rq->port = p->num;
	}
	return rq;
}

static void on_poll(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)rq;
	if (sm->sn.sm_state != SM_STATE_STANDBY)
		return;
	/* the master, or the better SM we wait behind still sweeping */
	if (!err &&
	    ((sm_smp_data(mad)[20] & 0xf) == SM_STATE_MASTER ||
	     (sm_smp_data(mad)[20] & 0xf) == SM_STATE_DISCOVERING) &&
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

/* A new standby tells the master it is there, as OpenSM does: a Trap 144
 * (IBA 14.2.5.1 Notice: generic, urgent, CapabilityMask changed, IsSM set)
 * to the master's LID, sent once outside the SMP engine (its TrapRepress
 * is not waited for: the master probes us in its sweeps anyway); a master
 * of ours asks that port for its SMInfo, OpenSM sweeps */
void sm_sminfo_announce(struct sm *sm)
{
	struct sm_port *self = sm->sn.self, *m = sm->master;
	uint16_t dlid, slid;
	uint8_t buf[sizeof(struct ib_user_mad) + 256], *d;

	if (!self || !m)
		return;
	/* the LIDs the ports have (PortInfo:LID as read; a standby gave none) */
	if (m->node->sw)
		m = &m->node->port[0];
	dlid = sof_get16(m->raw_portinfo + 16);
	slid = sof_get16(self->raw_portinfo + 16);
	if (!dlid || !slid)
		return;
	memset(buf, 0, sizeof(buf));
	sof_smp_init(umad_get_mad(buf), false, SOF_METHOD_TRAP, SOF_ATTR_NOTICE, 0,
		     0x5150000000000000ull | ++sm->tid_seq, 0);
	d = (uint8_t *)umad_get_mad(buf) + SOF_SMP_OFF_DATA;
	d[0] = 0x80 | 1;		/* IsGeneric, Type 1 (urgent) */
	d[3] = 1;			/* ProducerType: channel adapter */
	sof_put16(d + 4, 144);		/* TrapNumber */
	sof_put16(d + 6, slid);		/* IssuerLID */
	sof_put16(d + 12, slid);	/* DataDetails: LIDADDR */
	/* LocalChanges 0 (byte 15), then CapabilityMask (IBA 14.2.5.1
	 * table 147; as mad/sma.c's trap 144) */
	sof_put32(d + 16, self->cap_mask | SOF_CAP_IS_SM);
	umad_set_addr(buf, dlid, 0, 0, 0);
	if (umad_send(sm->fd, sm->agent_lid, buf, 256, 0, 0) < 0)
		sm_log(sm, 1, "the Trap 144 to the master could not be sent");
}

void sm_sminfo_poll(struct sm *sm)
{
	struct sm_req *rq;

	if (!sm->master || sm->next_poll > sm_now_us())
		return;
	sm->next_poll = sm_now_us() + POLL_US;
	rq = sminfo_get(sm, sm->master, on_poll);
	/* IBA 14.2.4.2: an SMP with a port's M_Key stops its lease timer,
	 * and the lease is how a master that does not know our keys (we
	 * handed over without --m_key_release) comes to manage the ports
	 * we protected. Below protection level 2 a Get passes without the
	 * key (14.2.4.1), so the poll carries none and lets the lease of
	 * the master's own port run; at 2 and 3 it needs the key. */
	if (rq && (sm->sn.m_key_protect & 3) < 2) {
		rq->m_key_set = true;
		rq->m_key = 0;
	}
}

void sm_sminfo_take_over(struct sm *sm)
{
	sm->sn.sm_state = SM_STATE_MASTER;
	sm->master = NULL;
	sm->poll_fails = 0;
	sm->sn.master_lid = 0;
	sm->resweep = true;
	sm->rereg_all = true; /* a new master's SA knows no client yet */
	sm->sn.act_count++;
}

/* an SMInfo Set of ours (HANDOVER, ACKNOWLEDGE) to the SM at port p */
static struct sm_req *sminfo_send(struct sm *sm, struct sm_port *p, uint32_t mod, sm_done_fn *done)
{
	struct sm_node *n = p->node;
	uint8_t d[64];
	struct sm_req *rq;

	sm_sminfo_fill(sm, d);
	rq = sm_smp_dr(sm, n->sw ? n->path : p->path, n->sw ? n->hops : p->hops, SOF_METHOD_SET,
		       SOF_ATTR_SM_INFO, mod, d, done);
	if (rq) {
		rq->node = n;
		rq->port = p->num;
	}
	return rq;
}

static void on_handover(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)rq;
	if (err) {
		sm_log(sm, 0, "HANDOVER to %#llx not answered: staying master",
		       (unsigned long long)sm->ho_guid);
		sm->ho_target = NULL;
		if (sm->m_key_release)
			sm->resweep = true; /* the keys given again */
		return;
	}
	sm_log(sm, 1, "HANDOVER answered: the SM is %s",
	       sm_state_names[sm_smp_data(mad)[20] & 3]);
}

/* Called by a master after its probe: hand over to a better standby, or
 * to a better master */
void sm_sminfo_check_handover(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;

	if (sn->sm_state != SM_STATE_MASTER || !sm->best || sm->ho_target ||
	    !sm_better(sm->best_prio, sm->best_guid, sn->sm_priority, sn->sm_guid))
		return;
	fprintf(stderr, "softofed-sm: HANDOVER to the %s SM %#llx (%s), priority %u\n",
		sm->best_master ? "master" : "standby", (unsigned long long)sm->best_guid,
		sm->best->node->desc, sm->best_prio);
	sm->ho_target = sm->best;
	sm->ho_guid = sm->best_guid;
	sm->ho_deadline = sm_now_us() + HANDOVER_US;
	sm->next_poll = sm_now_us() + HO_POLL_US;
	/* --m_key_release: the ports' keys cleared first, the HANDOVER
	 * sent once they are (sm_sminfo_tick): a new master's first Sets
	 * must not meet a key it does not know */
	if (sm_mkey_release(sm)) {
		sm->ho_wait_release = true;
		return;
	}
	sminfo_send(sm, sm->best, SM_SMINFO_HANDOVER, on_handover);
}

/* the answer of a port a trap 144 named: a new SM is DISCOVERING first,
 * so it is asked again (every CHECK_US, for CHECK_FOR_US) until it is
 * STANDBY (handed over to if it deserves it) or anything else */
static void on_check(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	uint8_t state = err ? 0 : sm_smp_data(mad)[20] & 0xf;

	if (sm->sn.sm_state != SM_STATE_MASTER || rq->node->port + rq->port != sm->check_port)
		return;
	if ((err || state == SM_STATE_DISCOVERING) && sm_now_us() < sm->check_until) {
		sm->next_check = sm_now_us() + CHECK_US;
		return;
	}
	sm->check_port = NULL;
	if (err)
		return;
	sm->best = NULL;
	on_probe(sm, rq, err, mad);
	sm_sminfo_check_handover(sm);
}

void sm_sminfo_check(struct sm *sm, uint16_t lid)
{
	struct sm_port *p = sm_port_by_lid(&sm->sn, lid);

	if (sm->sn.sm_state != SM_STATE_MASTER || !p || p == sm->sn.self || !p->node->present)
		return;
	sm_log(sm, 1, "a CapabilityMask changed at LID %u: asking for its SMInfo", lid);
	sm->check_port = p;
	sm->check_until = sm_now_us() + CHECK_FOR_US;
	sm->next_check = 0;
}

/* the ACKNOWLEDGE we were waiting for, or the time it had, is past */
static void become_standby(struct sm *sm)
{
	fprintf(stderr, "softofed-sm: STANDBY: handed over to %#llx (%s)\n",
		(unsigned long long)sm->ho_guid, sm->ho_target->node->desc);
	sm->sn.sm_state = SM_STATE_STANDBY;
	sm->master = sm->ho_target;
	sm->master_guid = sm->ho_guid;
	sm->ho_target = NULL;
	sm->poll_fails = 0;
	sm->next_poll = sm_now_us() + POLL_US;
	sm->resweep = false;
	sm->sn.up = false;
}

static void on_ho_poll(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)rq;
	if (!err && sm->ho_target && (sm_smp_data(mad)[20] & 0xf) == SM_STATE_MASTER &&
	    sof_get64(sm_smp_data(mad)) == sm->ho_guid)
		become_standby(sm);
}

/* While a HANDOVER waits: OpenSM answers it by becoming master without
 * an ACKNOWLEDGE, so the SM it went to is asked (every 200 ms) and its
 * MASTER state counts as one; none by the deadline, and we stay master */
void sm_sminfo_tick(struct sm *sm)
{
	if (sm->check_port && sm->next_check != UINT64_MAX && sm_now_us() >= sm->next_check) {
		sm->next_check = UINT64_MAX; /* until answered */
		sminfo_get(sm, sm->check_port, on_check);
	}
	if (!sm->ho_target)
		return;
	if (sm->ho_wait_release) {
		if (sm->release_left && sm_now_us() < sm->ho_deadline)
			return;
		fprintf(stderr, "softofed-sm: M_Keys released before the HANDOVER%s\n",
			sm->release_left ? " (not all answered)" : "");
		sm->ho_wait_release = false;
		sm->release_left = 0;
		sm->ho_deadline = sm_now_us() + HANDOVER_US;
		sminfo_send(sm, sm->ho_target, SM_SMINFO_HANDOVER, on_handover);
		return;
	}
	if (sm_now_us() > sm->ho_deadline) {
		sm_log(sm, 0, "no ACKNOWLEDGE from %#llx: staying master",
		       (unsigned long long)sm->ho_guid);
		sm->ho_target = NULL;
		if (sm->m_key_release)
			sm->resweep = true;
		return;
	}
	if (sm_now_us() < sm->next_poll)
		return;
	sm->next_poll = sm_now_us() + HO_POLL_US;
	sminfo_get(sm, sm->ho_target, on_ho_poll);
}

static void on_ack(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)rq;
	(void)mad;
	sm_log(sm, 1, "ACKNOWLEDGE %s", err ? "not answered" : "answered");
}

/* An SMInfo Set from another SM (IBA 14.4.1.2, table 180), its SMInfo in
 * data: HANDOVER to a non-master makes it master (and it acknowledges);
 * ACKNOWLEDGE of our HANDOVER makes us standby; others change nothing */
void sm_sminfo_set(struct sm *sm, uint32_t mod, const uint8_t *data)
{
	uint64_t from = sof_get64(data);
	struct sm_port *p;

	sm_log(sm, 1, "SMInfo Set %u from SM %#llx", mod, (unsigned long long)from);
	if (mod == SM_SMINFO_HANDOVER && sm->sn.sm_state != SM_STATE_MASTER) {
		fprintf(stderr, "softofed-sm: HANDOVER from %#llx: taking over\n",
			(unsigned long long)from);
		p = sm_port_by_guid(&sm->sn, from);
		if (!p)
			p = sm->master;
		/* the ACKNOWLEDGE carries the state we had (STANDBY), as
		 * OpenSM checks it */
		if (p)
			sminfo_send(sm, p, SM_SMINFO_ACKNOWLEDGE, on_ack);
		sm_sminfo_take_over(sm);
		return;
	}
	if (mod == SM_SMINFO_ACKNOWLEDGE && sm->ho_target && from == sm->ho_guid)
		become_standby(sm);
}
