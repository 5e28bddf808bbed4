/*
 * Malformed IPoIB frames for tests/hosts/ipoib.sh: from a UD QP of the
 * InfiniBand device (sofib0) to an IPoIB interface's QP, by LID, with the
 * IPoIB Q_Key, one frame of each kind below; the receiving softofed-ipoib
 * must drop each and count it under its reason (its `status` counters).
 *
 *   ipoib_inject [-d DEV] [-q QKEY] DLID QPN
 *
 * Frames (the name printed per frame is the counter that must grow):
 *   drop_header    IPv4 with reserved bits set in the IPoIB header
 *   drop_type      EtherType 0x88cc (LLDP), not carried by IPoIB
 *   drop_ip        IPv4 of 10 bytes; IPv4 whose total length exceeds it
 *   drop_arp       ARP with hardware type 1 (Ethernet); with hardware
 *                  length 6; cut short at 20 bytes; operation 9
 *   drop_nd        an NS with hop limit 64; an NS with a 16-byte
 *                  link-layer option (IPoIB's is 24)
 *   drop_short     two bytes
 *   drop_oversize  IPv4 of 2100 bytes (above the 2044 MTU)
 * Prints "sent N" and exits 0 when every send completed.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOT 4096

static uint16_t csum(uint32_t sum, const uint8_t *d, size_t n)
{
	for (; n > 1; d += 2, n -= 2)
		sum += (uint32_t)(d[0] << 8 | d[1]);
	if (n)
		sum += (uint32_t)(d[0] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static size_t ipv4(uint8_t *f, uint16_t rsv, size_t total, uint16_t hdr_len)
{
	memset(f, 0, 4 + total);
	f[0] = 0x08;
	f[2] = (uint8_t)(rsv >> 8);
	f[3] = (uint8_t)rsv;
	f[4] = 0x45;
	f[6] = (uint8_t)(hdr_len >> 8);
	f[7] = (uint8_t)hdr_len;
	f[12] = 64;
	f[13] = 17;
	memcpy(f + 16, "\xc0\xa8\x4d\x63\xc0\xa8\x4d\x01", 8);
	return 4 + total;
}

static size_t arp(uint8_t *f, uint16_t hrd, uint8_t hln, uint16_t op, size_t len)
{
	uint8_t *a = f + 4;

	memset(f, 0, 4 + 56);
	f[0] = 0x08;
	f[1] = 0x06;
	a[0] = (uint8_t)(hrd >> 8);
	a[1] = (uint8_t)hrd;
	a[2] = 0x08;
	a[4] = hln;
	a[5] = 4;
	a[7] = (uint8_t)op;
	a[9] = 0x42; /* QPN 0x4200.. */
	a[12] = 0xfe;
	a[13] = 0x80;
	a[27] = 9;
	memcpy(a + 28, "\xc0\xa8\x4d\x63", 4);
	memcpy(a + 52, "\xc0\xa8\x4d\x01", 4);
	return 4 + len;
}

/* An NS for fd77:1b::1 from fd77:1b::99 with hop limit hl and an option
 * of optlen 8-byte units, checksum right. */
static size_t ns(uint8_t *f, uint8_t hl, uint8_t optlen)
{
	uint8_t *ip = f + 4, *icmp = ip + 40, ph[40];
	size_t plen = 24 + (size_t)optlen * 8;

	memset(f, 0, 4 + 40 + plen);
	f[0] = 0x86;
	f[1] = 0xdd;
	ip[0] = 0x60;
	ip[5] = (uint8_t)plen;
	ip[6] = 58;
	ip[7] = hl;
	memcpy(ip + 8, "\xfd\x77\x00\x1b\0\0\0\0\0\0\0\0\0\0\0\x99", 16);
	memcpy(ip + 24, "\xff\x02\0\0\0\0\0\0\0\0\0\x01\xff\0\0\x01", 16);
	icmp[0] = 135;
	memcpy(icmp + 8, "\xfd\x77\x00\x1b\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
	icmp[24] = 1;
	icmp[25] = optlen;
	icmp[29] = 0x42;
	memcpy(ph, ip + 8, 32);
	memset(ph + 32, 0, 8);
	ph[35] = (uint8_t)plen;
	ph[39] = 58;
	{
		uint32_t s = 0;
		uint16_t c;

		for (int i = 0; i < 40; i += 2)
			s += (uint32_t)(ph[i] << 8 | ph[i + 1]);
		c = csum(s, icmp, plen);
		icmp[2] = (uint8_t)(c >> 8);
		icmp[3] = (uint8_t)c;
	}
	return 4 + 40 + plen;
}

int main(int argc, char **argv)
{
	const char *dev = "sofib0";
	uint32_t qkey = 0x0b1b, qpn;
	uint16_t dlid;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_ah_attr aa = {.port_num = 1};
	struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 32, .max_recv_wr = 1, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x1111};
	static uint8_t mem[16 * SLOT];
	const char *names[16];
	size_t lens[16];
	int n = 0, c, opt;

	while ((opt = getopt(argc, argv, "d:q:")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else if (opt == 'q')
			qkey = (uint32_t)strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: ipoib_inject [-d DEV] [-q QKEY] DLID QPN\n");
		return 2;
	}
	dlid = (uint16_t)strtoul(argv[optind], NULL, 0);
	qpn = (uint32_t)strtoul(argv[optind + 1], NULL, 0);

	names[n] = "drop_header", lens[n] = ipv4(mem + n * SLOT, 1, 28, 28), n++;
	names[n] = "drop_type", lens[n] = ipv4(mem + n * SLOT, 0, 28, 28), mem[n * SLOT + 1] = 0xcc,
	mem[n * SLOT] = 0x88, n++;
	names[n] = "drop_ip", lens[n] = ipv4(mem + n * SLOT, 0, 10, 10), n++;
	names[n] = "drop_ip", lens[n] = ipv4(mem + n * SLOT, 0, 28, 400), n++;
	names[n] = "drop_arp", lens[n] = arp(mem + n * SLOT, 1, 20, 1, 56), n++;
	names[n] = "drop_arp", lens[n] = arp(mem + n * SLOT, 32, 6, 1, 56), n++;
	names[n] = "drop_arp", lens[n] = arp(mem + n * SLOT, 32, 20, 1, 20), n++;
	names[n] = "drop_arp", lens[n] = arp(mem + n * SLOT, 32, 20, 9, 56), n++;
	names[n] = "drop_nd", lens[n] = ns(mem + n * SLOT, 64, 3), n++;
	names[n] = "drop_nd", lens[n] = ns(mem + n * SLOT, 255, 2), n++;
	names[n] = "drop_short", lens[n] = 2, mem[n * SLOT] = 8, n++;
	names[n] = "drop_oversize", lens[n] = ipv4(mem + n * SLOT, 0, 2100, 2100), n++;

	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "fail: no device %s\n", dev);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	mr = ibv_reg_mr(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE);
	if (!qp || !mr ||
	    ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
		fprintf(stderr, "fail: QP\n");
		return 1;
	}
	qa.qp_state = IBV_QPS_RTR;
	ibv_modify_qp(qp, &qa, IBV_QP_STATE);
	qa.qp_state = IBV_QPS_RTS;
	qa.sq_psn = 0;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		fprintf(stderr, "fail: RTS\n");
		return 1;
	}
	aa.dlid = dlid;
	ah = ibv_create_ah(pd, &aa);
	if (!ah) {
		fprintf(stderr, "fail: address handle to LID %u\n", dlid);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = {(uintptr_t)(mem + i * SLOT), (uint32_t)lens[i], mr->lkey};
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
				   *bad;
		struct ibv_wc wc;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qpn;
		wr.wr.ud.remote_qkey = qkey;
		if (ibv_post_send(qp, &wr, &bad)) {
			fprintf(stderr, "fail: post %s\n", names[i]);
			return 1;
		}
		for (int t = 0; (c = ibv_poll_cq(cq, 1, &wc)) == 0 && t < 5000; t++)
			usleep(1000);
		if (c != 1 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "fail: send %s: %s\n", names[i],
				c == 1 ? ibv_wc_status_str(wc.status) : "no completion");
			return 1;
		}
		printf("%s %zu bytes\n", names[i], lens[i]);
		usleep(20000);
	}
	printf("sent %d\n", n);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
