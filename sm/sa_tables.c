/*
 * The SA records read from the subnet model (IBA 15.2.5): NodeRecord,
 * PortInfoRecord, LinkRecord, SwitchInfoRecord, LinearForwardingTable-
 * Record, MulticastForwardingTableRecord, GUIDInfoRecord,
 * P_KeyTableRecord, SMInfoRecord. Each generator builds the candidates
 * and hands them to sa_emit, which keeps those matching the query; when
 * the query fixes the LID, only that LID's node is looked at.
 *
 * The embedded SMP attributes start from what the SM last read (the raw_*
 * arrays) with the model's own fields written over them, so a record says
 * what the SM set even when the model was filled field by field. M_Key
 * and SM_Key read as 0 unless the requester gave the SM_Key (IBA 15.4.1).
 */
#include "sa_int.h"

#include <string.h>

/* The nodes a generator looks at: when the query fixes the LID (its
 * component c), only the node owning it (none when no present node has
 * it); else every node. Returns how many; *fix is that one node or NULL. */
static unsigned scope(struct sm_sa *sa, const struct sa_out *o, unsigned c, struct sm_node **fix)
{
	struct sm_port *p;

	*fix = NULL;
	if (!sa_has(o, c))
		return sa->sn->nnodes;
	p = sm_port_by_lid(sa->sn, (uint16_t)sa_qget(o, c));
	if (!p || !p->node->present)
		return 0;
	*fix = p->node;
	return 1;
}

/* ---- NodeRecord (15.2.5.2) ---- */
static void node_rec(const struct sm_node *n, const struct sm_port *p, uint8_t *rec)
{
	const struct sof_sa_rec_desc *d = &sof_sa_recs[SOF_SA_REC_NODE];

	memset(rec, 0, d->len);
	sof_put16(rec, sa_port_lid(p));
	sof_sa_set(d, rec, SOF_NR_BASE_VERSION, 1);
	sof_sa_set(d, rec, SOF_NR_CLASS_VERSION, 1);
	sof_sa_set(d, rec, SOF_NR_NODE_TYPE, n->type);
	sof_sa_set(d, rec, SOF_NR_NUM_PORTS, n->nports);
	sof_sa_set(d, rec, SOF_NR_SYS_GUID, n->sys_guid);
	sof_sa_set(d, rec, SOF_NR_NODE_GUID, n->node_guid);
	sof_sa_set(d, rec, SOF_NR_PORT_GUID, p->guid);
	sof_sa_set(d, rec, SOF_NR_PART_CAP, n->partition_cap);
	sof_sa_set(d, rec, SOF_NR_DEVICE_ID, n->device_id);
	sof_sa_set(d, rec, SOF_NR_REVISION, n->revision);
	sof_sa_set(d, rec, SOF_NR_LOCAL_PORT, p->num);
	sof_sa_set(d, rec, SOF_NR_VENDOR_ID, n->vendor_id);
	memcpy(rec + SOF_SA_NR_DESC_OFF, n->desc, strnlen(n->desc, 64));
}

void sa_gen_node(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[128];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_NR_LID, &fix);

	(void)q;
	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		if (n->type == SOF_NODE_SWITCH) {
			node_rec(n, &n->port[0], rec);
			if (!sa_emit(o, rec))
				return;
			continue;
		}
		/* a CA: one record per port, with that port's GUID and LID */
		for (unsigned j = 1; j <= n->nports; j++) {
			if (!n->port[j].present)
				continue;
			node_rec(n, &n->port[j], rec);
			if (!sa_emit(o, rec))
				return;
		}
	}
}

/* ---- PortInfoRecord (15.2.5.3) ---- */
static void portinfo_rec(const struct sm_port *p, bool trusted, uint8_t *rec)
{
	const struct sof_sa_rec_desc *d = &sof_sa_recs[SOF_SA_REC_PORTINFO];
	bool addressed = p->node->type != SOF_NODE_SWITCH || p->num == 0;

	memset(rec, 0, d->len);
	memcpy(rec + SOF_SA_PIR_INFO_OFF, p->raw_portinfo, 64);
	sof_put16(rec, sa_port_lid(p));
	rec[2] = p->num;
	if (!trusted)
		sof_sa_set(d, rec, SOF_PIR_MKEY, 0);
	if (addressed) {
		sof_sa_set(d, rec, SOF_PIR_GID_PREFIX, p->gid_prefix);
		sof_sa_set(d, rec, SOF_PIR_BASE_LID, p->lid);
		sof_sa_set(d, rec, SOF_PIR_SM_LID, p->sm_lid);
		sof_sa_set(d, rec, SOF_PIR_LMC, p->lmc);
		sof_sa_set(d, rec, SOF_PIR_SM_SL, p->sm_sl);
		sof_sa_set(d, rec, SOF_PIR_SUBNET_TIMEOUT, p->subnet_timeout);
	}
	sof_sa_set(d, rec, SOF_PIR_CAP_MASK, p->cap_mask);
	sof_sa_set(d, rec, SOF_PIR_LOCAL_PORT, p->local_port ? p->local_port : p->num);
	sof_sa_set(d, rec, SOF_PIR_WIDTH_EN, p->width_enabled);
	sof_sa_set(d, rec, SOF_PIR_WIDTH_SUP, p->width_supported);
	sof_sa_set(d, rec, SOF_PIR_WIDTH_ACT, p->width_active);
	sof_sa_set(d, rec, SOF_PIR_SPEED_SUP, p->speed_supported);
	sof_sa_set(d, rec, SOF_PIR_SPEED_EN, p->speed_enabled);
	sof_sa_set(d, rec, SOF_PIR_SPEED_ACT, p->speed_active);
	sof_sa_set(d, rec, SOF_PIR_STATE, p->state);
	sof_sa_set(d, rec, SOF_PIR_PHYS, p->phys);
	sof_sa_set(d, rec, SOF_PIR_NEIGHBOR_MTU, p->neighbor_mtu);
	sof_sa_set(d, rec, SOF_PIR_MTU_CAP, p->mtu_cap);
	sof_sa_set(d, rec, SOF_PIR_VL_CAP, p->vl_cap);
	sof_sa_set(d, rec, SOF_PIR_OP_VLS, p->op_vls);
	sof_sa_set(d, rec, SOF_PIR_RESP_TIME, p->resp_time);
	sof_sa_set(d, rec, SOF_PIR_CAP_MASK2, p->cap_mask2);
}

void sa_gen_portinfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[72];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_PIR_LID, &fix);

	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		unsigned j = n->type == SOF_NODE_SWITCH ? 0 : 1;

		for (; j <= n->nports; j++) {
			const struct sm_port *p = &n->port[j];

			if (!p->present)
				continue;
			/* a CA's other ports have LIDs of their own */
			if (sa_has(o, SOF_PIR_LID) && n->type != SOF_NODE_SWITCH &&
			    !(p->lid && sa_qget(o, SOF_PIR_LID) >= p->lid &&
			      sa_qget(o, SOF_PIR_LID) < p->lid + (1u << p->lmc)))
				continue;
			portinfo_rec(p, q->trusted, rec);
			if (sa_has(o, SOF_PIR_LID)) /* any LID of the port finds it */
				sof_put16(rec, (uint16_t)sa_qget(o, SOF_PIR_LID));
			if (!sa_emit(o, rec))
				return;
		}
	}
}

/* ---- LinkRecord (15.2.5.13) ---- */
void sa_gen_link(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[8];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_LR_FROM_LID, &fix);

	(void)q;
	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		for (unsigned j = 1; j <= n->nports; j++) {
			const struct sm_port *p = &n->port[j];

			if (!p->present || !p->peer || !p->peer->node->present)
				continue;
			memset(rec, 0, sizeof(rec));
			sof_put16(rec, sa_port_lid(p));
			rec[2] = p->num;
			rec[3] = p->peer->num;
			sof_put16(rec + 4, sa_port_lid(p->peer));
			if (!sa_emit(o, rec))
				return;
		}
	}
}

/* ---- SwitchInfoRecord (15.2.5.4) ---- */
void sa_gen_switchinfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	const struct sof_sa_rec_desc *d = &sof_sa_recs[SOF_SA_REC_SWITCHINFO];
	uint8_t rec[24];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_SWIR_LID, &fix);

	(void)q;
	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		const struct sm_switch *s = n->sw;

		if (!s)
			continue;
		memset(rec, 0, sizeof(rec));
		memcpy(rec + SOF_SA_SWIR_INFO_OFF, s->raw_switchinfo, 20);
		sof_put16(rec, n->port[0].lid);
		sof_sa_set(d, rec, SOF_SWIR_LFT_CAP, s->lft_cap);
		sof_sa_set(d, rec, SOF_SWIR_MFT_CAP, s->mft_cap);
		sof_sa_set(d, rec, SOF_SWIR_LFT_TOP, s->lft_top);
		sof_sa_set(d, rec, SOF_SWIR_DEFAULT_PORT, s->default_port);
		sof_sa_set(d, rec, SOF_SWIR_LIFE_TIME, s->life_time);
		sof_sa_set(d, rec, SOF_SWIR_PORT_STATE_CHANGE, s->port_state_change);
		sof_sa_set(d, rec, SOF_SWIR_LIDS_PER_PORT, s->lids_per_port);
		sof_sa_set(d, rec, SOF_SWIR_PE_CAP, s->partition_enf_cap);
		sof_sa_set(d, rec, SOF_SWIR_ENH_PORT0, s->enhanced_port0);
		sof_sa_set(d, rec, SOF_SWIR_MFT_TOP, s->mft_top);
		if (!sa_emit(o, rec))
			return;
	}
}

/* ---- LinearForwardingTableRecord (15.2.5.6) ---- */
void sa_gen_lft(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[72];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_LFTR_LID, &fix);

	(void)q;
	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		const struct sm_switch *s = n->sw;
		unsigned top, b, e, first = 0, last;

		if (!s)
			continue;
		top = s->lft_top ? s->lft_top : sa->sn->max_lid;
		if (top >= SM_UCAST_LIDS)
			top = SM_UCAST_LIDS - 1;
		last = top / SM_LFT_BLOCK;
		if (sa_has(o, SOF_LFTR_BLOCK)) {
			first = (unsigned)sa_qget(o, SOF_LFTR_BLOCK);
			if (first > last)
				continue;
			last = first;
		}
		for (b = first; b <= last; b++) {
			memset(rec, 0, sizeof(rec));
			sof_put16(rec, n->port[0].lid);
			sof_put16(rec + 2, (uint16_t)b);
			for (e = 0; e < SM_LFT_BLOCK; e++)
				rec[SOF_SA_TABLE_OFF + e] =
				    b * SM_LFT_BLOCK + e < SM_UCAST_LIDS
					? sa_lft(s, (uint16_t)(b * SM_LFT_BLOCK + e))
					: 0xff;
			if (!sa_emit(o, rec))
				return;
		}
	}
}

/* ---- MulticastForwardingTableRecord (15.2.5.8) ---- */
void sa_gen_mft(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[72];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_MFTR_LID, &fix);

	(void)q;
	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		const struct sm_switch *s = n->sw;
		unsigned blocks, b, pos, e;

		if (!s || !s->mft || s->mft_top < SM_MCAST_LID_BASE)
			continue;
		blocks = (unsigned)(s->mft_top - SM_MCAST_LID_BASE) / SM_MFT_BLOCK + 1;
		if (blocks * SM_MFT_BLOCK > s->mft_cap)
			blocks = s->mft_cap / SM_MFT_BLOCK;
		for (b = 0; b < blocks; b++) {
			for (pos = 0; pos <= n->nports / 16u; pos++) {
				bool any = false;

				memset(rec, 0, sizeof(rec));
				sof_put16(rec, n->port[0].lid);
				sof_put16(rec + 2, (uint16_t)(pos << 12 | b));
				for (e = 0; e < SM_MFT_BLOCK; e++) {
					const uint64_t *m = s->mft[b * SM_MFT_BLOCK + e];
					uint16_t v = (uint16_t)(m[pos / 4] >> (pos % 4 * 16));

					sof_put16(rec + SOF_SA_TABLE_OFF + 2 * e, v);
					any |= v != 0;
				}
				if (any && !sa_emit(o, rec))
					return;
			}
		}
	}
}

/* ---- GUIDInfoRecord (15.2.5.18) and P_KeyTableRecord (15.2.5.11) ---- */
void sa_gen_guidinfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[72];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_GIR_LID, &fix);

	(void)q;
	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		unsigned j = n->type == SOF_NODE_SWITCH ? 0 : 1;
		unsigned end = n->type == SOF_NODE_SWITCH ? 0 : n->nports;

		for (; j <= end; j++) {
			const struct sm_port *p = &n->port[j];

			if (!p->present || !p->lid)
				continue;
			/* GUIDInfo block 0: index 0 is the port GUID; the SM
			 * assigns no alias GUIDs */
			memset(rec, 0, sizeof(rec));
			sof_put16(rec, p->lid);
			sof_put64(rec + SOF_SA_TABLE_OFF, p->guid);
			if (!sa_emit(o, rec))
				return;
		}
	}
}

void sa_gen_pkey(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[72];
	struct sm_node *fix;
	unsigned cnt = scope(sa, o, SOF_PKTR_LID, &fix);

	(void)q;
	for (unsigned i = 0; i < cnt; i++) {
		struct sm_node *n = fix ? fix : sa->sn->nodes[i];

		if (!n->present)
			continue;
		unsigned j = n->type == SOF_NODE_SWITCH ? 0 : 1;

		for (; j <= n->nports; j++) {
			const struct sm_port *p = &n->port[j];

			if (!p->present)
				continue;
			/* each block as the SM wrote it (sm/partition.c),
			 * else block 0 with the default partition, full
			 * membership (IBA 10.9.1.1), which the SMA starts
			 * with */
			for (unsigned b = 0; b * 32 < SM_PKEY_MAX; b++) {
				if (b && !(p->pkeys_set & (1u << b)))
					continue;
				memset(rec, 0, sizeof(rec));
				sof_put16(rec, sa_port_lid(p));
				/* BlockNum as OpenSM puts it on the wire and
				 * saquery reads it: in x86 order */
				rec[2] = (uint8_t)b;
				rec[4] = p->num;
				if (p->pkeys_set & (1u << b))
					for (unsigned k = 0; k < 32; k++)
						sof_put16(rec + SOF_SA_TABLE_OFF + 2 * k,
							  p->pkeys[b * 32 + k]);
				else if (!b)
					sof_put16(rec + SOF_SA_TABLE_OFF, SOF_PKEY_DEFAULT);
				if (!sa_emit(o, rec))
					return;
			}
		}
	}
}

/* ---- SMInfoRecord (15.2.5.12): this SM ---- */
void sa_gen_sminfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	const struct sm_subnet *sn = sa->sn;
	uint8_t rec[32];

	memset(rec, 0, sizeof(rec));
	sof_put16(rec, sn->sm_lid);
	sof_put64(rec + 4, sn->sm_guid);
	sof_put64(rec + 12, q->trusted ? sn->sm_key : 0);
	sof_put32(rec + 20, sn->act_count);
	rec[24] = (uint8_t)((sn->sm_priority & 0x0f) << 4 | (sn->sm_state & 0x0f));
	sa_emit(o, rec);
}
