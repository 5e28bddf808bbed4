/*
 * libFuzzer target: subnet management, performance and congestion control
 * MADs from the wire against the node model (mad/smp.h): the
 * directed-route step, the SMA, the PMA and the CC agent, on a fresh HCA
 * or switch per input.
 *
 * Input: byte 0 picks the node and the M_Key set-up (bit 0 switch, bit 1
 * an M_Key with protection level from bits 2-3, bit 4 a lease of 2 s
 * running, bit 5 the clock past its end), byte 1 the port the MAD came
 * in on, byte 2 bit 0 "arrived LID-routed"; the rest is the MAD, of
 * whatever length (only 256 bytes are a MAD). Checks, for every input:
 *   - each drop is counted exactly once (the node's drop counters grow by
 *     one when a call says it dropped, by none otherwise);
 *   - a directed step leaves the hop pointer within 0..hop count + 1, and
 *     an output port names one of the node's ports;
 *   - a reply is a GetResp with the D bit set exactly for DR SMPs, hop
 *     count and TID unchanged, and its own directed step is defined;
 *   - a Set with a wrong M_Key changes nothing in the model (unless the
 *     lease ran out: then it passes and the protection bits are 0);
 *   - a congestion control MAD (bit 1 of byte 0 also sets a protected
 *     CC_Key) with a wrong key changes nothing but the violations;
 *   - the model stays valid: states, LMC, MTU and VLs within their caps.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_smp.c mad/sma.c mad/sma_port.c mad/pma.c mad/cc.c
 * FUZZ_INCLUDES: mad common
 * FUZZ_SECS: 4
 */
#include "smp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_smp: " __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

#define MKEY 0x0123456789abcdefull

static uint64_t drops(const struct sof_node *n)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < SOF_SMP_DROP_MAX; i++)
		t += n->drops[i];
	return t;
}

static void check_model(const struct sof_node *n)
{
	unsigned i;

	for (i = 0; i <= n->nports; i++) {
		const struct sof_port *p = &n->port[i];

		if (p->state < SOF_PORT_DOWN || p->state > SOF_PORT_ACTIVE)
			FAIL("port %u state %u", i, p->state);
		if (p->phys < SOF_PHYS_SLEEP || p->phys > SOF_PHYS_ERROR_RECOVERY)
			FAIL("port %u phys %u", i, p->phys);
		if (p->lmc > 7 || p->neighbor_mtu > p->mtu_cap || p->op_vls > p->vl_cap)
			FAIL("port %u lmc %u mtu %u vls %u", i, p->lmc, p->neighbor_mtu, p->op_vls);
		if (p->lid >= SOF_LID_MCAST_BASE)
			FAIL("port %u lid 0x%x", i, p->lid);
	}
}

static void check_step(struct sof_node *n, uint8_t *mad, unsigned in_port, bool lid_routed,
		       enum sof_dr_action *out)
{
	uint64_t before = drops(n);
	struct sof_dr_next nx;
	enum sof_dr_action a = sof_smp_dr_step(n, mad, in_port, lid_routed, 7, &nx);
	unsigned hc = mad[SOF_SMP_OFF_HOP_CNT], hp = mad[SOF_SMP_OFF_HOP_PTR];

	if (a != nx.action)
		FAIL("step returned %d, next says %d", a, nx.action);
	if ((a == SOF_DR_DISCARD) != (drops(n) == before + 1) || drops(n) > before + 1)
		FAIL("step %d: drops %llu -> %llu", a, (unsigned long long)before,
		     (unsigned long long)drops(n));
	if (a != SOF_DR_DISCARD && hp > hc + 1)
		FAIL("hop pointer %u past hop count %u", hp, hc);
	if (a == SOF_DR_OUT_PORT && (nx.port < 1 || nx.port > n->nports))
		FAIL("out port %u of %u", nx.port, n->nports);
	*out = a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sof_node *n, *snap;
	uint8_t mad[SOF_SMP_LEN];
	size_t len, snap_size;
	unsigned in_port, ev;
	bool lid_routed, dr, wrong_key, expired;
	enum sof_dr_action a = SOF_DR_LOCAL;
	enum sof_sma_result r;
	uint64_t before;

	if (size < 3)
		return 0;
	n = sof_node_new(data[0] & 1 ? SOF_NODE_SWITCH : SOF_NODE_CA, data[0] & 1 ? 8 : 2,
			 0x0002c90300001000ull);
	if (!n)
		FAIL("no node");
	sof_port_link_up(n, 1);
	sof_port_link_up(n, 2);
	if (data[0] & 2) {
		struct sof_port *m = &n->port[n->type == SOF_NODE_SWITCH ? 0 : 1];

		m->mkey = MKEY;
		m->mkey_protect = (data[0] >> 2) & 3;
		if (data[0] & 0x10) {
			m->mkey_lease = 2;
			m->mkey_lease_end = 1000 + 2000;
		}
		n->now_ms = data[0] & 0x20 ? 3000 : 1000;
		if (n->type != SOF_NODE_SWITCH) {
			n->port[2].mkey = MKEY;
			n->port[2].mkey_protect = m->mkey_protect;
		}
	}
	in_port = data[1];
	lid_routed = data[2] & 1;
	len = size - 3;
	memset(mad, 0, sizeof(mad));
	memcpy(mad, data + 3, len < sizeof(mad) ? len : sizeof(mad));
	dr = len >= SOF_SMP_LEN && mad[1] == SOF_MCLASS_SMP_DR;

	if (dr)
		check_step(n, mad, in_port, lid_routed, &a);
	if (a != SOF_DR_LOCAL)
		goto out;

	if (len >= 2 && mad[1] == SOF_MCLASS_CC) {
		struct sof_cc cc_before;

		if (data[0] & 2) {
			n->cc.key = MKEY;
			n->cc.protect = true;
		}
		cc_before = n->cc;
		before = drops(n);
		r = sof_gsi_agent_process(n, in_port, mad, len);
		if (r == SOF_SMA_PASS)
			goto out;
		if ((r == SOF_SMA_DROP) != (drops(n) == before + 1))
			FAIL("cc %d: drops not counted once", r);
		if (r == SOF_SMA_REPLY && mad[3] != SOF_METHOD_GET_RESP)
			FAIL("cc reply method 0x%x", mad[3]);
		if ((data[0] & 2) && len == SOF_SMP_LEN && mad[0] == 1 &&
		    sof_get64(data + 3 + 24) != MKEY) {
			cc_before.violations = n->cc.violations;
			if (r != SOF_SMA_DROP || memcmp(&cc_before, &n->cc, sizeof(cc_before)))
				FAIL("a CC MAD with a wrong CC_Key was taken (%d)", r);
		}
		goto out;
	}
	if (len >= 2 && mad[1] == SOF_MCLASS_PERF) {
		before = drops(n);
		r = sof_pma_process(n, in_port, mad, len);
		if ((r == SOF_SMA_DROP) != (drops(n) == before + 1))
			FAIL("pma %d: drops not counted once", r);
		if (r == SOF_SMA_REPLY && mad[3] != SOF_METHOD_GET_RESP)
			FAIL("pma reply method 0x%x", mad[3]);
		goto out;
	}

	/* a snapshot to prove that a refused Set changes nothing */
	snap_size = sizeof(*n) + (n->nports + 1u) * sizeof(n->port[0]);
	snap = malloc(snap_size);
	if (!snap)
		FAIL("no memory");
	memcpy(snap, n, snap_size);
	expired = (data[0] & 0x32) == 0x32;
	wrong_key = len == SOF_SMP_LEN && (data[0] & 2) && !expired && mad[0] == 1 && mad[2] == 1 &&
		    mad[3] == SOF_METHOD_SET && sof_get64(mad + SOF_SMP_OFF_MKEY) != MKEY &&
		    (mad[1] == SOF_MCLASS_SMP_LID || mad[1] == SOF_MCLASS_SMP_DR) &&
		    in_port <= n->nports && (in_port || n->type == SOF_NODE_SWITCH);
	{
		uint8_t hc = mad[SOF_SMP_OFF_HOP_CNT];
		uint64_t tid = sof_get64(mad + SOF_SMP_OFF_TID);

		before = drops(n);
		r = sof_sma_process(n, in_port, mad, len, &ev);
		if ((r == SOF_SMA_DROP) != (drops(n) == before + 1))
			FAIL("sma %d: drops not counted once", r);
		if (wrong_key) {
			if (r != SOF_SMA_DROP || !(ev & SOF_SMA_EV_MKEY))
				FAIL("a Set with a wrong M_Key was not refused (%d)", r);
			/* only the violation counters, the lease and what
			 * trap 256 reports may move */
			snap->drops[SOF_SMP_DROP_MKEY] = n->drops[SOF_SMP_DROP_MKEY];
			snap->smp_in = n->smp_in;
			snap->mkey_bad = n->mkey_bad;
			for (unsigned i = 0; i <= n->nports; i++) {
				snap->port[i].mkey_violations = n->port[i].mkey_violations;
				snap->port[i].mkey_lease_end = n->port[i].mkey_lease_end;
			}
			if (memcmp(snap, n, snap_size))
				FAIL("a Set with a wrong M_Key changed the node");
		}
		if (expired && r != SOF_SMA_DROP && mad[0] == 1 &&
		    sof_get64(mad + SOF_SMP_OFF_MKEY) != MKEY &&
		    (mad[3] == SOF_METHOD_GET || mad[3] == SOF_METHOD_SET) &&
		    sof_node_mgmt_port(n, in_port)->mkey_lease_end)
			FAIL("an SMP passed on a run-out lease and the lease still runs");
		if (r == SOF_SMA_REPLY) {
			uint16_t st = sof_get16(mad + SOF_SMP_OFF_STATUS);

			if (mad[3] != SOF_METHOD_GET_RESP)
				FAIL("reply method 0x%x", mad[3]);
			if (!!(st & SOF_SMP_DIRECTION) != dr)
				FAIL("reply D bit %d for dr %d", !!(st & SOF_SMP_DIRECTION), dr);
			if (mad[SOF_SMP_OFF_HOP_CNT] != hc ||
			    sof_get64(mad + SOF_SMP_OFF_TID) != tid)
				FAIL("reply changed hop count or TID");
			if (dr)
				check_step(n, mad, 0, lid_routed, &a);
		}
	}
	free(snap);
	check_model(n);
out:
	sof_node_free(n);
	return 0;
}
