/*
 * Multicast groups (RFC 4391 sections 5 and 4). The partition's broadcast
 * group is joined first: its record (Q_Key, MTU, SL, rate) sets the
 * interface's Q_Key and MTU and is the template from which other groups
 * are created. Every other group is an IP group mapped to its MGID: the
 * groups the kernel holds on the interface (/proc/net/igmp and igmp6,
 * read each second: all-nodes, solicited-node, and whatever programs
 * joined) are joined through the SA and attached to the QP, and left when
 * the kernel leaves them; a group only sent to is joined on first use,
 * as a SendOnlyFullMember when the SA takes those (its ClassPortInfo,
 * sa.c), else as a full member, as Linux's ipoib falls back; held by the
 * kernel later, it is joined again as a full member (the leave names
 * every bit joined). An SA that changed (sa.c: a new SM, or a port
 * event) gets every group joined again: what a restarted SA forgot, and
 * send-only or full as that SA takes them.
 * A datagram to a group goes to its MLID with a GRH naming the MGID and
 * the multicast QPN.
 */
#include "ipoib.h"
#include "sa.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MGROUPS 128
#define MQUEUE 4
#define RETRY_MS 2000

enum mg_state { MG_FREE, MG_JOINING, MG_JOINED, MG_FAILED };
static const char *const mg_state_names[] = {
    [MG_FREE] = "free", [MG_JOINING] = "joining", [MG_JOINED] = "joined", [MG_FAILED] = "failed"};

struct mgroup {
	enum mg_state state;
	uint8_t mgid[16];
	struct sa_mcm rec;
	struct ipoib_ah *ah;
	bool kernel;	/* the kernel holds the IP group: receive it */
	bool attached;	/* the QP is attached */
	bool seen;	/* in this pass over /proc */
	uint8_t asked;	/* JoinState of the join under way */
	uint8_t joined; /* JoinState bits the SA gave us */
	uint64_t since;
	uint8_t *q[MQUEUE];
	size_t qlen[MQUEUE];
	unsigned nq;
};

static struct {
	struct mgroup g[MGROUPS];
	struct mgroup *bcast;
	void (*done)(int status);
	bool created; /* the broadcast join asked for creation */
	uint64_t last_scan;
} mc;

static void q_drop(struct mgroup *g)
{
	for (unsigned i = 0; i < g->nq; i++)
		free(g->q[i]);
	g->nq = 0;
}

static struct mgroup *find(const uint8_t mgid[16])
{
	for (unsigned i = 0; i < MGROUPS; i++)
		if (mc.g[i].state != MG_FREE && !memcmp(mc.g[i].mgid, mgid, 16))
			return &mc.g[i];
	return NULL;
}

static void joined(void *arg, int status, const struct sa_mcm *rec);

static int join(struct mgroup *g)
{
	char m[64];

	/* only sent to: send-only if the SA takes it (the kernel's
	 * ipoib_mcast_join), else a full member */
	g->asked = g != mc.bcast && !g->kernel && sa_sendonly_full() ? SOF_MC_JOIN_SEND_ONLY_FULL
								     : SOF_MC_JOIN_FULL;
	ipoib_gid_str(g->mgid, m, sizeof(m));
	ipoib_log("multicast group %s: joining (JoinState 0x%x)", m, g->asked);
	g->state = MG_JOINING;
	g->since = ipoib_now_ms();
	ipoib.cnt[IC_mcast_joins]++;
	return sa_join(g->mgid, g->asked,
		       g == mc.bcast ? (mc.created ? &mc.bcast->rec : NULL) : &mc.bcast->rec,
		       joined, g);
}

static void sync_attach(struct mgroup *g)
{
	if (g->state != MG_JOINED || g->kernel == g->attached)
		return;
	if (g->kernel ? ud_attach(g->mgid, g->rec.mlid) : ud_detach(g->mgid, g->rec.mlid))
		ipoib_log("multicast: %s failed", g->kernel ? "attach" : "detach");
	else
		g->attached = g->kernel;
}

static void joined(void *arg, int status, const struct sa_mcm *rec)
{
	struct mgroup *g = arg;
	char m[64];

	ipoib_gid_str(g->mgid, m, sizeof(m));
	if (g == mc.bcast && status > 0 && !mc.created) {
		/* no such group at the SA: create it (RFC 4391 section 5:
		 * the IPoIB Q_Key, the port's MTU) */
		ipoib_log("broadcast group %s: SA status 0x%04x, creating it", m, status);
		mc.created = true;
		if (!join(g))
			return;
	}
	if (status) {
		ipoib_log("multicast group %s: join failed (%d)", m, status);
		g->state = MG_FAILED;
		g->since = ipoib_now_ms();
		q_drop(g);
		if (g == mc.bcast && mc.done)
			mc.done(status < 0 ? status : -EPROTO);
		return;
	}
	if (g->attached && g->rec.mlid != rec->mlid) {
		/* joined again, the SA gave another MLID: attach that one */
		ud_detach(g->mgid, g->rec.mlid);
		g->attached = false;
	}
	g->rec = *rec;
	g->joined |= g->asked;
	memcpy(g->rec.mgid, g->mgid, 16);
	{
		struct ipoib_path p = {.dlid = rec->mlid,
				       .sl = rec->sl,
				       .global = true,
				       .tclass = rec->tclass,
				       .hop_limit = rec->hop_limit,
				       .flow_label = rec->flow_label};

		memcpy(p.dgid, g->mgid, 16);
		ud_ah_put(g->ah);
		g->ah = ud_ah(&p);
	}
	g->state = g->ah ? MG_JOINED : MG_FAILED;
	g->since = ipoib_now_ms();
	ipoib_log("multicast group %s: %s, mlid 0x%04x qkey 0x%x", m,
		  g->ah ? "joined" : "no address handle", rec->mlid, rec->qkey);
	if (g == mc.bcast && mc.done) {
		mc.done(g->ah ? 0 : -ENOMEM);
		mc.done = NULL;
		return;
	}
	if (g->ah && g->kernel && !(g->joined & SOF_MC_JOIN_FULL) && !join(g))
		return; /* the kernel took it meanwhile: to receive, a full member */
	sync_attach(g);
	for (unsigned i = 0; i < g->nq; i++)
		if (g->ah)
			ud_send(g->ah, 0xffffff, ipoib.qkey, g->q[i], g->qlen[i]);
	q_drop(g);
}

static struct mgroup *group_new(const uint8_t mgid[16])
{
	for (unsigned i = 0; i < MGROUPS; i++)
		if (mc.g[i].state == MG_FREE) {
			memset(&mc.g[i], 0, sizeof(mc.g[i]));
			memcpy(mc.g[i].mgid, mgid, 16);
			return &mc.g[i];
		}
	return NULL;
}

static void group_free(struct mgroup *g, bool leave)
{
	sa_cancel(g);
	if (g->attached)
		ud_detach(g->mgid, g->rec.mlid);
	if (leave && g->joined) {
		sa_leave(g->mgid, g->joined);
		ipoib.cnt[IC_mcast_leaves]++;
	}
	ud_ah_put(g->ah);
	q_drop(g);
	memset(g, 0, sizeof(*g));
}

int mcast_start(void (*done)(int status))
{
	uint8_t mgid[16];

	ipoib_mgid(mgid, ipoib.pkey, NULL);
	mc.bcast = group_new(mgid);
	mc.done = done;
	mc.created = false;
	/* the template, should the SA have to create the group */
	mc.bcast->rec.qkey = IPOIB_QKEY;
	mc.bcast->rec.pkey = ipoib.pkey;
	mc.bcast->rec.mtu = ipoib.mtu + IPOIB_HDR_LEN >= 4096 ? 5 : 4;
	return join(mc.bcast);
}

void mcast_rejoin(void)
{
	struct mgroup *b = mc.bcast;

	if (!b || mc.done)
		return; /* not up yet: the first join is under way */
	ipoib_log("the SA changed: joining every group again");
	sa_cancel(b);
	b->joined = 0;
	if (join(b)) {
		b->state = MG_FAILED; /* mcast_tick tries again */
		b->since = ipoib_now_ms();
	}
	for (unsigned i = 0; i < MGROUPS; i++) {
		struct mgroup *g = &mc.g[i];

		if (g->state == MG_FREE || g == b)
			continue;
		sa_cancel(g);
		g->joined = 0;
		if (join(g)) {
			g->state = MG_FAILED;
			g->since = ipoib_now_ms();
		}
	}
}

/* Attach to the broadcast group once the QP exists. */
struct ipoib_ah *mcast_bcast_ah(void)
{
	if (mc.bcast && mc.bcast->state == MG_JOINED && !mc.bcast->attached) {
		mc.bcast->kernel = true;
		sync_attach(mc.bcast);
	}
	return mc.bcast ? mc.bcast->ah : NULL;
}

const struct sa_mcm *mcast_bcast(void) { return mc.bcast ? &mc.bcast->rec : NULL; }

void mcast_send(const uint8_t mgid[16], const uint8_t *frame, size_t len)
{
	struct mgroup *g = mgid ? find(mgid) : mc.bcast;
	uint8_t *d;

	if (!g && mgid && mc.bcast && mc.bcast->state == MG_JOINED) {
		/* send-only use: joined as any group, not attached */
		g = group_new(mgid);
		if (g && join(g)) {
			group_free(g, false);
			g = NULL;
		}
	}
	if (!g || g->state == MG_FAILED) {
		ipoib.cnt[IC_tx_drop_neigh]++;
		return;
	}
	if (g->state == MG_JOINED) {
		if (ud_send(g->ah, 0xffffff, ipoib.qkey, frame, len))
			ipoib.cnt[IC_tx_drop_post]++;
		return;
	}
	if (g->nq == MQUEUE || !(d = malloc(len))) {
		ipoib.cnt[IC_tx_drop_queue]++;
		return;
	}
	memcpy(d, frame, len);
	g->q[g->nq] = d;
	g->qlen[g->nq++] = len;
}

/* ---- the kernel's memberships ------------------------------------------------------ */

static void want(const uint8_t ip[16])
{
	uint8_t mgid[16];
	struct mgroup *g;

	ipoib_mgid(mgid, ipoib.pkey, ip);
	g = find(mgid);
	if (!g) {
		char a[64];

		ipoib_ip_str(ip, a, sizeof(a));
		ipoib_log("the kernel holds group %s", a);
		g = group_new(mgid);
		if (!g)
			return;
		g->kernel = true;
		g->seen = true;
		if (join(g))
			g->state = MG_FAILED;
		return;
	}
	g->seen = true;
	g->kernel = true;
	if (g->state == MG_JOINED && !(g->joined & SOF_MC_JOIN_FULL) && !join(g))
		return; /* joined send-only: again as a full member */
	sync_attach(g);
}

static void scan(const char *ifname)
{
	static const uint8_t pfx4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	char line[256], dev[64], hex[40];
	uint8_t ip[16];
	bool ours = false;
	FILE *f;

	/* /proc/net/igmp: a device line ("idx name : ..."), then its groups
	 * (tab-indented, the address as the kernel's 32-bit word in hex) */
	f = fopen("/proc/net/igmp", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned idx, v;

		if (line[0] >= '0' && line[0] <= '9' && sscanf(line, "%u %63s", &idx, dev) == 2) {
			ours = !strcmp(dev, ifname);
		} else if (ours && line[0] == '\t' && sscanf(line, " %x", &v) == 1) {
			memcpy(ip, pfx4, 12);
			memcpy(ip + 12, &v, 4); /* the word's bytes are the address's */
			want(ip);
		}
	}
	if (f)
		fclose(f);
	/* /proc/net/igmp6: "idx name address(32 hex) users flags timer" */
	f = fopen("/proc/net/igmp6", "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned idx;

		/* the daemon serves ib0 as a RoCE interface too and joins the
		 * IP group of each MGID attached (transport/mcast.c): those are
		 * IPoIB MGIDs (ff1x:401b, ff1x:601b), not the kernel's groups */
		if (sscanf(line, "%u %63s %32s", &idx, dev, hex) != 3 || strcmp(dev, ifname) ||
		    strlen(hex) != 32 || !strncmp(hex + 4, "401b", 4) ||
		    !strncmp(hex + 4, "601b", 4))
			continue;
		for (int i = 0; i < 16; i++) {
			unsigned b;

			sscanf(hex + 2 * i, "%2x", &b);
			ip[i] = (uint8_t)b;
		}
		want(ip);
	}
	if (f)
		fclose(f);
	/* a NOARP interface's kernel joins no solicited-node group: the
	 * interface's IPv6 addresses' (RFC 4861 7.2.1) are joined here */
	for (unsigned i = 0; ipoib_addr(i, ip); i++) {
		static const uint8_t snm[13] = {0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff};

		if (!memcmp(ip, pfx4, 12))
			continue;
		memcpy(ip, snm, 13);
		want(ip);
	}
}

void mcast_tick(const char *ifname, uint64_t now)
{
	if (!mc.bcast || mc.bcast->state != MG_JOINED) {
		/* an SM that was away: join the broadcast group again */
		if (mc.bcast && mc.bcast->state == MG_FAILED && now - mc.bcast->since >= RETRY_MS)
			join(mc.bcast);
		return;
	}
	if (now - mc.last_scan < 1000)
		return;
	mc.last_scan = now;
	for (unsigned i = 0; i < MGROUPS; i++)
		mc.g[i].seen = false;
	scan(ifname);
	for (unsigned i = 0; i < MGROUPS; i++) {
		struct mgroup *g = &mc.g[i];

		if (g->state == MG_FREE || g == mc.bcast)
			continue;
		if (g->kernel && !g->seen) {
			/* the kernel left the group */
			g->kernel = false;
			group_free(g, true);
		} else if (g->state == MG_FAILED && now - g->since >= RETRY_MS) {
			if (g->kernel)
				join(g);
			else
				group_free(g, false);
		}
	}
}

void mcast_stop(void)
{
	for (unsigned i = 0; i < MGROUPS; i++)
		if (mc.g[i].state != MG_FREE)
			group_free(&mc.g[i], true);
	mc.bcast = NULL;
}

void mcast_dump(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < MGROUPS && off + 160 < len; i++) {
		const struct mgroup *g = &mc.g[i];
		char m[64];
		int w;

		if (g->state == MG_FREE)
			continue;
		ipoib_gid_str(g->mgid, m, sizeof(m));
		w = snprintf(buf + off, len - off, "mcast %s mlid 0x%04x state %s%s%s join 0x%x\n",
			     m, g->rec.mlid, mg_state_names[g->state],
			     g->attached ? " attached" : "", g == mc.bcast ? " broadcast" : "",
			     g->joined);
		if (w > 0)
			off += (size_t)w;
	}
}
