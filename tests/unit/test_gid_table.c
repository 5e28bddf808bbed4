/*
 * The GID table (common/gid.c) without netlink and without the daemon:
 * indexes that stay put while addresses come and go, the parsing of
 * rtnetlink address messages (DAD states, malformed ones), and the
 * sequence lock of the shared page, also against a concurrent writer. The
 * last cases use the private daemon tests/run.sh starts: the table a
 * context reads, and ibv_query_gid_type.
 */
#include "harness.h"

#include "sof_gid.h"
#include "sof_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>

/* rdma-core's private ibv_query_gid_type (IBVERBS_PRIVATE_34) reports the
 * GID types of sysfs; perftest declares it the same way. */
enum test_gid_type_sysfs {
	TEST_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	TEST_GID_TYPE_SYSFS_ROCE_V2 = 1,
};
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum test_gid_type_sysfs *type);

static struct sof_gid_entry ent(const char *addr, uint32_t ifindex)
{
	struct sof_gid_entry e;
	uint8_t a[16];

	memset(&e, 0, sizeof(e));
	if (inet_pton(AF_INET, addr, a) == 1) {
		sof_gid_from_v4(e.gid, a);
	} else if (inet_pton(AF_INET6, addr, a) == 1) {
		memcpy(e.gid, a, 16);
	} else {
		fprintf(stderr, "bad test address %s\n", addr);
		exit(1);
	}
	e.ifindex = ifindex;
	e.type = SOF_GID_TYPE_ROCE_V2;
	return e;
}

static bool is(const struct sof_gid_entry *e, const char *addr, uint32_t ifindex)
{
	struct sof_gid_entry w = ent(addr, ifindex);

	return !memcmp(e, &w, sizeof(w));
}

TEST(v4_mapped)
{
	struct sof_gid_entry e = ent("10.1.2.3", 2);
	static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};

	CHECK_MEM(e.gid, want, 16);
	CHECK(!sof_gid_empty(&e));
	memset(&e, 0, sizeof(e));
	CHECK(sof_gid_empty(&e));
}

TEST(merge_first_fill)
{
	struct sof_gid_entry tab[SOF_MAX_GIDS] = {0};
	struct sof_gid_entry want[] = {ent("127.0.0.1", 1), ent("10.0.0.1", 2), ent("::1", 1)};

	CHECK(sof_gid_merge(tab, want, 3));
	CHECK(is(&tab[0], "127.0.0.1", 1));
	CHECK(is(&tab[1], "10.0.0.1", 2));
	CHECK(is(&tab[2], "::1", 1));
	CHECK(sof_gid_empty(&tab[3]));
	CHECK_EQ(sof_gid_table_len(tab), 3);
	/* the same addresses again, in another order: nothing moves */
	struct sof_gid_entry again[] = {want[2], want[0], want[1]};

	CHECK(!sof_gid_merge(tab, again, 3));
	CHECK(is(&tab[0], "127.0.0.1", 1));
	CHECK(is(&tab[2], "::1", 1));
}

TEST(merge_removal_leaves_hole)
{
	struct sof_gid_entry tab[SOF_MAX_GIDS] = {0};
	struct sof_gid_entry a[] = {ent("127.0.0.1", 1), ent("10.0.0.1", 2), ent("::1", 1),
				    ent("2001:db8::1", 2)};
	struct sof_gid_entry b[] = {a[0], a[2], a[3]};
	struct sof_gid_entry c[] = {a[0], a[2], a[3], ent("10.0.0.9", 2), ent("fe80::1", 2)};

	CHECK(sof_gid_merge(tab, a, 4));
	/* 10.0.0.1 goes: its entry empties, the others keep their index */
	CHECK(sof_gid_merge(tab, b, 3));
	CHECK(is(&tab[0], "127.0.0.1", 1));
	CHECK(sof_gid_empty(&tab[1]));
	CHECK(is(&tab[2], "::1", 1));
	CHECK(is(&tab[3], "2001:db8::1", 2));
	CHECK_EQ(sof_gid_table_len(tab), 4);
	/* new ones take the first free entries: the hole, then the end */
	CHECK(sof_gid_merge(tab, c, 5));
	CHECK(is(&tab[1], "10.0.0.9", 2));
	CHECK(is(&tab[4], "fe80::1", 2));
	CHECK(is(&tab[3], "2001:db8::1", 2));
	/* the last entry goes: the table shrinks */
	CHECK(sof_gid_merge(tab, c, 4));
	CHECK_EQ(sof_gid_table_len(tab), 4);
	/* everything goes */
	CHECK(sof_gid_merge(tab, NULL, 0));
	CHECK_EQ(sof_gid_table_len(tab), 0);
	for (int i = 0; i < SOF_MAX_GIDS; i++)
		CHECK(sof_gid_empty(&tab[i]));
}

TEST(merge_key_is_gid_and_interface)
{
	struct sof_gid_entry tab[SOF_MAX_GIDS] = {0};
	struct sof_gid_entry a[] = {ent("10.0.0.1", 2), ent("10.0.0.1", 3), ent("10.0.0.1", 2)};
	struct sof_gid_entry b[] = {ent("10.0.0.1", 3)};

	/* one address on two interfaces is two entries; duplicates count once */
	CHECK(sof_gid_merge(tab, a, 3));
	CHECK(is(&tab[0], "10.0.0.1", 2));
	CHECK(is(&tab[1], "10.0.0.1", 3));
	CHECK_EQ(sof_gid_table_len(tab), 2);
	CHECK(sof_gid_merge(tab, b, 1));
	CHECK(sof_gid_empty(&tab[0]));
	CHECK(is(&tab[1], "10.0.0.1", 3));
}

TEST(merge_full_table)
{
	struct sof_gid_entry tab[SOF_MAX_GIDS] = {0};
	struct sof_gid_entry want[SOF_MAX_GIDS + 4];
	char a[32];

	for (int i = 0; i < SOF_MAX_GIDS + 4; i++) {
		snprintf(a, sizeof(a), "10.0.0.%d", i + 1);
		want[i] = ent(a, 2);
	}
	CHECK(sof_gid_merge(tab, want, SOF_MAX_GIDS + 4));
	CHECK_EQ(sof_gid_table_len(tab), SOF_MAX_GIDS);
	CHECK(is(&tab[SOF_MAX_GIDS - 1], "10.0.0.16", 2));
	/* one leaves: a waiting address takes its entry, nothing else moves */
	memmove(&want[5], &want[6], (SOF_MAX_GIDS + 4 - 6) * sizeof(want[0]));
	CHECK(sof_gid_merge(tab, want, SOF_MAX_GIDS + 3));
	CHECK(is(&tab[5], "10.0.0.17", 2));
	CHECK(is(&tab[4], "10.0.0.5", 2));
	CHECK(is(&tab[6], "10.0.0.7", 2));
}

/* ---- rtnetlink address messages ------------------------------------------------ */

struct nlmsg {
	uint8_t b[256] __attribute__((aligned(4)));
	size_t len;
};

static void nl_start(struct nlmsg *m, uint16_t type, uint8_t family, uint8_t flags,
		     uint32_t ifindex)
{
	struct nlmsghdr nh = {.nlmsg_type = type};
	struct ifaddrmsg ifa = {.ifa_family = family, .ifa_flags = flags, .ifa_index = ifindex};

	memset(m, 0, sizeof(*m));
	m->len = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifa));
	nh.nlmsg_len = (uint32_t)m->len;
	memcpy(m->b, &nh, sizeof(nh));
	memcpy(m->b + NLMSG_HDRLEN, &ifa, sizeof(ifa));
}

static void nl_attr(struct nlmsg *m, uint16_t type, const void *data, size_t len)
{
	struct rtattr rta = {.rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = type};
	uint32_t total;

	memcpy(m->b + m->len, &rta, sizeof(rta));
	memcpy(m->b + m->len + RTA_LENGTH(0), data, len);
	m->len += RTA_ALIGN(rta.rta_len);
	total = (uint32_t)m->len;
	memcpy(m->b, &total, sizeof(total)); /* nlmsg_len */
}

static void nl_addr(struct nlmsg *m, uint16_t type, const char *addr)
{
	uint8_t a[16];

	if (inet_pton(AF_INET, addr, a) == 1)
		nl_attr(m, type, a, 4);
	else if (inet_pton(AF_INET6, addr, a) == 1)
		nl_attr(m, type, a, 16);
}

TEST(parse_v4)
{
	struct sof_gid_entry e;
	struct nlmsg m;

	nl_start(&m, RTM_NEWADDR, AF_INET, IFA_F_PERMANENT, 7);
	nl_addr(&m, IFA_ADDRESS, "192.0.2.1");
	nl_addr(&m, IFA_LOCAL, "192.0.2.1");
	nl_attr(&m, IFA_LABEL, "veth0", 6);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 1);
	CHECK(is(&e, "192.0.2.1", 7));
	/* point-to-point: IFA_LOCAL is ours, IFA_ADDRESS the peer's */
	nl_start(&m, RTM_NEWADDR, AF_INET, 0, 3);
	nl_addr(&m, IFA_ADDRESS, "192.0.2.99");
	nl_addr(&m, IFA_LOCAL, "192.0.2.2");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 1);
	CHECK(is(&e, "192.0.2.2", 3));
	/* a deletion parses the same way */
	nl_start(&m, RTM_DELADDR, AF_INET, 0, 3);
	nl_addr(&m, IFA_LOCAL, "192.0.2.2");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 1);
	CHECK(is(&e, "192.0.2.2", 3));
}

TEST(parse_v6_dad)
{
	struct sof_gid_entry e;
	struct nlmsg m;
	uint32_t fl;

	nl_start(&m, RTM_NEWADDR, AF_INET6, IFA_F_PERMANENT, 4);
	nl_addr(&m, IFA_ADDRESS, "2001:db8::5");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 1);
	CHECK(is(&e, "2001:db8::5", 4));
	/* link-local counts, as in the kernel's RoCE GID table */
	nl_start(&m, RTM_NEWADDR, AF_INET6, IFA_F_PERMANENT, 4);
	nl_addr(&m, IFA_ADDRESS, "fe80::1234");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 1);
	/* tentative: not yet */
	nl_start(&m, RTM_NEWADDR, AF_INET6, IFA_F_TENTATIVE, 4);
	nl_addr(&m, IFA_ADDRESS, "2001:db8::5");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 0);
	/* IFA_FLAGS overrides the 8 bits of ifa_flags */
	fl = IFA_F_TENTATIVE;
	nl_start(&m, RTM_NEWADDR, AF_INET6, 0, 4);
	nl_addr(&m, IFA_ADDRESS, "2001:db8::5");
	nl_attr(&m, IFA_FLAGS, &fl, 4);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 0);
	fl = IFA_F_PERMANENT;
	nl_start(&m, RTM_NEWADDR, AF_INET6, IFA_F_TENTATIVE, 4);
	nl_addr(&m, IFA_ADDRESS, "2001:db8::5");
	nl_attr(&m, IFA_FLAGS, &fl, 4);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 1);
	/* DAD failed: never */
	nl_start(&m, RTM_NEWADDR, AF_INET6, IFA_F_DADFAILED | IFA_F_TENTATIVE, 4);
	nl_addr(&m, IFA_ADDRESS, "2001:db8::5");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 0);
	/* optimistic (RFC 4429): usable during DAD */
	nl_start(&m, RTM_NEWADDR, AF_INET6, IFA_F_OPTIMISTIC | IFA_F_TENTATIVE, 4);
	nl_addr(&m, IFA_ADDRESS, "2001:db8::6");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 1);
}

TEST(parse_not_gids)
{
	struct sof_gid_entry e;
	struct nlmsg m;
	uint8_t mac[6] = {2, 0, 0, 0, 0, 1};

	nl_start(&m, RTM_NEWADDR, AF_PACKET, 0, 4);
	nl_attr(&m, IFA_ADDRESS, mac, 6);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 0);
	nl_start(&m, RTM_NEWADDR, AF_INET6, 0, 4);
	nl_addr(&m, IFA_ADDRESS, "::");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), 0);
}

TEST(parse_malformed)
{
	struct sof_gid_entry e;
	struct nlmsg m;
	uint8_t a[16] = {0};
	uint16_t bad;

	/* shorter than its headers */
	nl_start(&m, RTM_NEWADDR, AF_INET, 0, 4);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, 10, &e), -EINVAL);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, NLMSG_HDRLEN + 4, &e), -EINVAL);
	/* nlmsg_len beyond what arrived */
	nl_addr(&m, IFA_LOCAL, "192.0.2.1");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len - 1, &e), -EINVAL);
	/* no address */
	nl_start(&m, RTM_NEWADDR, AF_INET, 0, 4);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), -EINVAL);
	/* an IPv6-sized address in an IPv4 message */
	nl_start(&m, RTM_NEWADDR, AF_INET, 0, 4);
	nl_attr(&m, IFA_LOCAL, a, 16);
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), -EINVAL);
	/* an attribute running past the message */
	nl_start(&m, RTM_NEWADDR, AF_INET, 0, 4);
	nl_addr(&m, IFA_LOCAL, "192.0.2.1");
	bad = 200;
	memcpy(m.b + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifaddrmsg)), &bad, sizeof(bad));
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), -EINVAL);
	/* an attribute length below its own header */
	bad = 2;
	memcpy(m.b + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifaddrmsg)), &bad, sizeof(bad));
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), -EINVAL);
	/* interface 0 */
	nl_start(&m, RTM_NEWADDR, AF_INET, 0, 0);
	nl_addr(&m, IFA_LOCAL, "192.0.2.1");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), -EINVAL);
	/* not an address message */
	nl_start(&m, RTM_NEWLINK, AF_INET, 0, 4);
	nl_addr(&m, IFA_LOCAL, "192.0.2.1");
	CHECK_EQ(sof_gid_parse_ifaddr(m.b, m.len, &e), -EINVAL);
}

/* ---- the shared page -------------------------------------------------------------- */

TEST(publish_read)
{
	static struct sof_gid_shm shm;
	struct sof_gid_entry tab[SOF_MAX_GIDS] = {0}, out[SOF_MAX_GIDS];
	uint32_t s0, s1;

	tab[0] = ent("127.0.0.1", 1);
	tab[3] = ent("2001:db8::1", 2);
	sof_gid_publish(&shm, tab);
	CHECK_EQ(sof_gid_read(&shm, out, &s0), 0);
	CHECK_MEM(out, tab, sizeof(tab));
	CHECK_EQ(s0 & 1, 0);
	CHECK(s0 != 0);
	memset(&tab[3], 0, sizeof(tab[3]));
	sof_gid_publish(&shm, tab);
	CHECK_EQ(sof_gid_read(&shm, out, &s1), 0);
	CHECK_EQ(s1, s0 + 2);
	CHECK(sof_gid_empty(&out[3]));
	/* what is not well-formed comes out empty */
	shm.gids[5] = ent("10.0.0.1", 2);
	shm.gids[5].type = 77;
	shm.gids[6].ifindex = 9; /* a zero GID with junk around it */
	CHECK_EQ(sof_gid_read(&shm, out, NULL), 0);
	CHECK(sof_gid_empty(&out[5]));
	CHECK_EQ(out[5].type, 0);
	CHECK_EQ(out[6].ifindex, 0);
}

TEST(read_dead_writer)
{
	static struct sof_gid_shm shm;
	struct sof_gid_entry out[SOF_MAX_GIDS];

	/* a writer that died in the middle leaves seq odd for good */
	atomic_store(&shm.seq, 5);
	CHECK_EQ(sof_gid_read(&shm, out, NULL), -EIO);
}

static struct sof_gid_shm race_shm;
static struct sof_gid_entry race_a[SOF_MAX_GIDS], race_b[SOF_MAX_GIDS];
static atomic_bool race_stop;

/* Publishes without end, pausing a few microseconds between writes as
 * the daemon (which writes only when an address changes) does far longer:
 * with no pause at all a reader on the other CPU may never find the table
 * still, and sof_gid_read rightly gives up (CI, ASan build). */
static void *race_writer(void *arg)
{
	unsigned long n = 0;

	(void)arg;
	while (!atomic_load(&race_stop)) {
		uint64_t until = sof_now_ns() + 5000;

		sof_gid_publish(&race_shm, n++ & 1 ? race_b : race_a);
		while (sof_now_ns() < until)
			;
	}
	return NULL;
}

TEST(read_concurrent_writer)
{
	struct sof_gid_entry out[SOF_MAX_GIDS];
	uint32_t seq, last = 0;
	pthread_t t;
	int torn = 0, fails = 0, changes = 0;

	for (int i = 0; i < SOF_MAX_GIDS; i++) {
		char a[32];

		snprintf(a, sizeof(a), "10.0.%d.1", i);
		race_a[i] = ent(a, 2);
		snprintf(a, sizeof(a), "2001:db8::%x", i + 1);
		race_b[i] = ent(a, 3);
	}
	sof_gid_publish(&race_shm, race_a);
	CHECK_EQ(pthread_create(&t, NULL, race_writer, NULL), 0);
	for (int i = 0; i < 200000; i++) {
		if (sof_gid_read(&race_shm, out, &seq)) {
			fails++;
			continue;
		}
		if (memcmp(out, race_a, sizeof(out)) && memcmp(out, race_b, sizeof(out)))
			torn++;
		changes += seq != last;
		last = seq;
	}
	atomic_store(&race_stop, true);
	pthread_join(t, NULL);
	CHECK_EQ(torn, 0);
	CHECK_EQ(fails, 0);
	CHECK(changes > 1);
}

/* ---- through a context (the private daemon) ----------------------------------- */

TEST(live_table_matches_queries)
{
	struct ibv_context *ctx = test_open_dev();
	struct ibv_gid_entry t[SOF_MAX_GIDS], e;
	union ibv_gid g;
	ssize_t n;

	n = ibv_query_gid_table(ctx, t, SOF_MAX_GIDS, 0);
	CHECK(n >= 1);
	for (ssize_t i = 0; i < n; i++) {
		CHECK_EQ(ibv_query_gid_ex(ctx, 1, t[i].gid_index, &e, 0), 0);
		CHECK_MEM(&e, &t[i], sizeof(e));
		CHECK_EQ(ibv_query_gid(ctx, 1, (int)t[i].gid_index, &g), 0);
		CHECK_MEM(&g, &t[i].gid, 16);
	}
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_gid_type)
{
	struct ibv_context *ctx = test_open_dev();
	enum test_gid_type_sysfs type;
	struct ibv_gid_entry e;
	union ibv_gid g;
	int empty = -1;

	/* every valid entry is RoCEv2 */
	for (unsigned i = 0; i < SOF_MAX_GIDS; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0)) {
			if (empty < 0)
				empty = (int)i;
			continue;
		}
		type = (enum test_gid_type_sysfs)77;
		CHECK_EQ(ibv_query_gid_type(ctx, 1, i, &type), 0);
		CHECK_EQ(type, TEST_GID_TYPE_SYSFS_ROCE_V2);
		CHECK_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	}
	/* an empty entry: 0 and RoCEv1/IB, as rdma-core answers for it */
	CHECK(empty >= 0);
	type = (enum test_gid_type_sysfs)77;
	CHECK_EQ(ibv_query_gid_type(ctx, 1, (unsigned)empty, &type), 0);
	CHECK_EQ(type, TEST_GID_TYPE_SYSFS_IB_ROCE_V1);
	CHECK_EQ(ibv_query_gid(ctx, 1, empty, &g), 0);
	{
		static const uint8_t zero[16];

		CHECK_MEM(g.raw, zero, 16);
	}
	/* beyond the table, another port */
	CHECK_EQ(ibv_query_gid_type(ctx, 1, SOF_MAX_GIDS, &type), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(ibv_query_gid_type(ctx, 2, 0, &type), -1);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

int main(void)
{
	RUN(v4_mapped);
	RUN(merge_first_fill);
	RUN(merge_removal_leaves_hole);
	RUN(merge_key_is_gid_and_interface);
	RUN(merge_full_table);
	RUN(parse_v4);
	RUN(parse_v6_dad);
	RUN(parse_not_gids);
	RUN(parse_malformed);
	RUN(publish_read);
	RUN(read_dead_writer);
	RUN(read_concurrent_writer);
	RUN(live_table_matches_queries);
	RUN(query_gid_type);
	return test_summary();
}
