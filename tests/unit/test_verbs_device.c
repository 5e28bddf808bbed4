/*
 * Device-level verbs as an application sees them: the device list, opening
 * and closing, device and port attributes, the GID and P_Key tables, the
 * node GUID and ibv_fork_init. Runs against a private daemon in a fresh
 * network namespace where only lo is up, so the first GID is the RoCEv2
 * GID of 127.0.0.1 (::ffff:127.0.0.1).
 *
 * Only the public <infiniband/verbs.h> API is used.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>

static struct ibv_context *open_sof0(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n = -1;

	list = ibv_get_device_list(&n);
	CHECK(list != NULL);
	CHECK_EQ(n, 1);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	CHECK(ctx != NULL);
	return ctx;
}

static int is_v4_loopback_gid(const union ibv_gid *g)
{
	static const uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
					  0, 0, 0xff, 0xff, 127, 0, 0, 1 };

	return memcmp(g->raw, want, 16) == 0;
}

TEST(fork_init)
{
	CHECK_EQ(ibv_fork_init(), 0);
}

TEST(device_list)
{
	struct ibv_device **list;
	int n = -1;

	list = ibv_get_device_list(&n);
	CHECK(list != NULL);
	CHECK_EQ(n, 1);
	CHECK(list[0] != NULL);
	CHECK(list[1] == NULL);
	CHECK(strcmp(ibv_get_device_name(list[0]), "sof0") == 0);
	CHECK(strcmp(list[0]->name, "sof0") == 0);
	CHECK_NE(ibv_get_device_guid(list[0]), 0);
	CHECK_EQ(list[0]->transport_type, IBV_TRANSPORT_IB);
	ibv_free_device_list(list);

	/* The NULL num_devices form works too. */
	list = ibv_get_device_list(NULL);
	CHECK(list != NULL);
	CHECK(list[0] != NULL && list[1] == NULL);
	ibv_free_device_list(list);
}

TEST(open_close)
{
	struct ibv_context *a, *b;

	a = open_sof0();
	b = open_sof0();
	CHECK(a != b);
	CHECK(a->device != NULL);
	CHECK(strcmp(ibv_get_device_name(a->device), "sof0") == 0);
	CHECK(a->async_fd >= 0);
	CHECK(a->num_comp_vectors >= 1);
	CHECK_EQ(ibv_close_device(a), 0);
	CHECK_EQ(ibv_close_device(b), 0);
	/* Open again after closing. */
	a = open_sof0();
	CHECK_EQ(ibv_close_device(a), 0);
}

TEST(query_device)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_device_attr a;
	uint64_t guid;

	memset(&a, 0xa5, sizeof(a));
	CHECK_EQ(ibv_query_device(ctx, &a), 0);
	CHECK(strcmp(a.fw_ver, "1.0.0") == 0);
	/* what rxe reports: the IBTA generic VendorID (A3.3.1), part 0, hw 0 */
	CHECK_EQ(a.vendor_id, 0xffffff);
	CHECK_EQ(a.vendor_part_id, 0);
	CHECK_EQ(a.hw_ver, 0);
	guid = ibv_get_device_guid(ctx->device);
	CHECK_NE(a.node_guid, 0);
	CHECK_EQ(a.node_guid, guid);
	CHECK_EQ(a.phys_port_cnt, 1);
	CHECK_EQ(a.atomic_cap, IBV_ATOMIC_HCA);
	CHECK(a.max_mr_size >= (1ull << 32));
	CHECK(a.max_qp >= 1024);
	CHECK(a.max_qp_wr >= 1024);
	CHECK(a.max_sge >= 16);
	CHECK(a.max_sge_rd >= 1 && a.max_sge_rd <= a.max_sge);
	CHECK(a.max_cq >= 1024);
	CHECK(a.max_cqe >= 4096);
	CHECK(a.max_mr >= 1024);
	CHECK(a.max_pd >= 1024);
	CHECK(a.max_qp_rd_atom >= 1);
	CHECK(a.max_qp_init_rd_atom >= 1);
	CHECK(a.max_srq >= 1);
	CHECK(a.max_srq_wr >= 1024);
	CHECK(a.max_srq_sge >= 1);
	CHECK(a.max_ah >= 1);
	CHECK_EQ(a.max_pkeys, 1);
	CHECK(a.page_size_cap != 0);
	/* page_size_cap must allow the system page size */
	CHECK((a.page_size_cap & 4096) || (a.page_size_cap & 0xfff) == 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_device_ex)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_device_attr a;
	struct ibv_device_attr_ex ax;

	CHECK_EQ(ibv_query_device(ctx, &a), 0);
	memset(&ax, 0x5a, sizeof(ax));
	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &ax), 0);
	CHECK_EQ(ax.orig_attr.node_guid, a.node_guid);
	CHECK_EQ(ax.orig_attr.max_qp, a.max_qp);
	CHECK_EQ(ax.orig_attr.max_qp_wr, a.max_qp_wr);
	CHECK_EQ(ax.orig_attr.max_sge, a.max_sge);
	CHECK_EQ(ax.orig_attr.max_cqe, a.max_cqe);
	CHECK_EQ(ax.orig_attr.max_mr_size, a.max_mr_size);
	CHECK_EQ(ax.orig_attr.atomic_cap, IBV_ATOMIC_HCA);
	CHECK_EQ(ax.orig_attr.phys_port_cnt, 1);
	CHECK(strcmp(ax.orig_attr.fw_ver, a.fw_ver) == 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

/* libfabric's ofi_rxm sizes its verbs CQ as (rx + tx queue) x universe
 * size: 65,536 entries by default, which mlx5 (max_cqe 2^22 - 1) takes.
 * The device must report and accept at least that, up to its max_cqe. */
TEST(large_cq)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_device_attr a;
	struct ibv_cq *cq;

	CHECK_EQ(ibv_query_device(ctx, &a), 0);
	CHECK(a.max_cqe >= 65536);
	cq = ibv_create_cq(ctx, 65536, NULL, NULL, 0);
	CHECK(cq != NULL);
	if (cq) {
		CHECK(cq->cqe >= 65536);
		CHECK_EQ(ibv_destroy_cq(cq), 0);
	}
	cq = ibv_create_cq(ctx, a.max_cqe, NULL, NULL, 0);
	CHECK(cq != NULL);
	if (cq)
		CHECK_EQ(ibv_destroy_cq(cq), 0);
	errno = 0;
	CHECK(ibv_create_cq(ctx, a.max_cqe + 1, NULL, NULL, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_port)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_device_attr da;
	struct ibv_port_attr p;

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	memset(&p, 0xa5, sizeof(p));
	CHECK_EQ(ibv_query_port(ctx, 1, &p), 0);
	CHECK_EQ(p.state, IBV_PORT_ACTIVE);
	CHECK_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(p.active_mtu, IBV_MTU_4096);
	CHECK(p.max_mtu >= p.active_mtu && p.max_mtu <= IBV_MTU_4096);
	CHECK(p.gid_tbl_len >= 1);
	CHECK_EQ(p.pkey_tbl_len, 1);
	CHECK(p.max_msg_sz >= 65536);
	CHECK_EQ(p.phys_state, 5); /* LinkUp */
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_port_bad)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_port_attr p;

	CHECK_EQ(ibv_query_port(ctx, 0, &p), EINVAL);
	CHECK_EQ(ibv_query_port(ctx, 2, &p), EINVAL);
	CHECK_EQ(ibv_query_port(ctx, 255, &p), EINVAL);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_gid)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_port_attr p;
	union ibv_gid g, z;
	int i, nonzero = 0;

	CHECK_EQ(ibv_query_port(ctx, 1, &p), 0);
	memset(&g, 0x77, sizeof(g));
	CHECK_EQ(ibv_query_gid(ctx, 1, 0, &g), 0);
	CHECK(is_v4_loopback_gid(&g));
	memset(&z, 0, sizeof(z));
	for (i = 0; i < p.gid_tbl_len; i++) {
		if (ibv_query_gid(ctx, 1, i, &g))
			break;
		if (memcmp(&g, &z, sizeof(g)))
			nonzero++;
	}
	CHECK(nonzero >= 1);
	/* bad port, index out of range */
	CHECK_NE(ibv_query_gid(ctx, 2, 0, &g), 0);
	CHECK_NE(ibv_query_gid(ctx, 1, p.gid_tbl_len, &g), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_gid_ex)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_gid_entry e;
	union ibv_gid g;

	memset(&e, 0x77, sizeof(e));
	CHECK_EQ(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
	CHECK(is_v4_loopback_gid(&e.gid));
	CHECK_EQ(e.gid_index, 0);
	CHECK_EQ(e.port_num, 1);
	CHECK_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	CHECK_EQ(ibv_query_gid(ctx, 1, 0, &g), 0);
	CHECK_MEM(&g, &e.gid, sizeof(g));
	/* lo's ifindex is 1 in every network namespace */
	CHECK_EQ(e.ndev_ifindex, 1);
	CHECK_NE(ibv_query_gid_ex(ctx, 2, 0, &e, 0), 0);
	CHECK_NE(ibv_query_gid_ex(ctx, 1, 1000, &e, 0), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_gid_table)
{
	struct ibv_context *ctx = open_sof0();
	struct ibv_gid_entry t[64], e;
	ssize_t n;
	int i, j;

	memset(t, 0x77, sizeof(t));
	n = ibv_query_gid_table(ctx, t, 64, 0);
	CHECK(n >= 1 && n <= 16);
	CHECK(is_v4_loopback_gid(&t[0].gid));
	for (i = 0; i < n; i++) {
		CHECK_EQ(t[i].port_num, 1);
		CHECK_EQ(t[i].gid_type, IBV_GID_TYPE_ROCE_V2);
		CHECK_EQ(ibv_query_gid_ex(ctx, 1, t[i].gid_index, &e, 0), 0);
		CHECK_MEM(&e.gid, &t[i].gid, 16);
		for (j = 0; j < i; j++)
			CHECK(memcmp(&t[i].gid, &t[j].gid, 16) != 0);
	}
	/* the table of a netns with only lo: 127.0.0.1 and perhaps ::1 */
	for (i = 1; i < n; i++) {
		static const uint8_t v6lo[16] = { [15] = 1 };

		CHECK_MEM(t[i].gid.raw, v6lo, 16);
	}
	/* too small a buffer fails */
	n = ibv_query_gid_table(ctx, t, 0, 0);
	CHECK(n < 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(query_pkey)
{
	struct ibv_context *ctx = open_sof0();
	__be16 pk = 0;

	CHECK_EQ(ibv_query_pkey(ctx, 1, 0, &pk), 0);
	CHECK_EQ(be16toh(pk), 0xffff);
	CHECK_NE(ibv_query_pkey(ctx, 1, 1, &pk), 0);
	CHECK_NE(ibv_query_pkey(ctx, 2, 0, &pk), 0);
	CHECK_EQ(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
	CHECK(ibv_get_pkey_index(ctx, 1, htobe16(0x1234)) < 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

TEST(async_fd_quiet)
{
	struct ibv_context *ctx = open_sof0();
	int fl;

	/* The async fd is a real descriptor that can be made non-blocking. */
	fl = fcntl(ctx->async_fd, F_GETFL);
	CHECK(fl >= 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

int main(void)
{
	RUN(fork_init);
	RUN(device_list);
	RUN(open_close);
	RUN(query_device);
	RUN(query_device_ex);
	RUN(large_cq);
	RUN(query_port);
	RUN(query_port_bad);
	RUN(query_gid);
	RUN(query_gid_ex);
	RUN(query_gid_table);
	RUN(query_pkey);
	RUN(async_fd_quiet);
	return test_summary();
}
