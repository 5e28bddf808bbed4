/*
 * Gathers memory keys and QP numbers for the randomness test
 * (tests/integration/keys_random.sh).
 *
 *   keys_dump NKEYS NQPS
 *
 * Registers NKEYS memory regions on one small buffer, in batches of BATCH
 * that are all alive together (so keys within a batch must differ), and
 * prints "k BATCH LKEY RKEY" for each; then creates NQPS QPs, all alive
 * together, and prints "q QPN" for each. Numbers are hexadecimal.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 1000

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_qp_init_attr ia;
	struct ibv_mr **mrs;
	struct ibv_qp **qps;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	static char buf[4096];
	long nkeys, nqps, i, j, n, batch = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s NKEYS NQPS\n", argv[0]);
		return 2;
	}
	nkeys = strtol(argv[1], NULL, 0);
	nqps = strtol(argv[2], NULL, 0);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0]) {
		fprintf(stderr, "no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		return 1;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	mrs = calloc(BATCH, sizeof(*mrs));
	qps = calloc(nqps ? (size_t)nqps : 1, sizeof(*qps));
	if (!pd || !cq || !mrs || !qps)
		return 1;

	for (i = 0; i < nkeys; i += n, batch++) {
		n = nkeys - i < BATCH ? nkeys - i : BATCH;
		for (j = 0; j < n; j++) {
			mrs[j] = ibv_reg_mr(pd, buf, sizeof(buf),
					    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ);
			if (!mrs[j]) {
				fprintf(stderr, "reg_mr #%ld: %s\n", i + j, strerror(errno));
				return 1;
			}
			printf("k %ld %08x %08x\n", batch, mrs[j]->lkey, mrs[j]->rkey);
		}
		for (j = 0; j < n; j++)
			if (ibv_dereg_mr(mrs[j])) {
				fprintf(stderr, "dereg_mr failed\n");
				return 1;
			}
	}

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	for (i = 0; i < nqps; i++) {
		ia.qp_type = (i & 1) ? IBV_QPT_UD : IBV_QPT_RC;
		qps[i] = ibv_create_qp(pd, &ia);
		if (!qps[i]) {
			fprintf(stderr, "create_qp #%ld: %s\n", i, strerror(errno));
			return 1;
		}
		printf("q %06x\n", qps[i]->qp_num);
	}
	for (i = 0; i < nqps; i++)
		if (ibv_destroy_qp(qps[i])) {
			fprintf(stderr, "destroy_qp failed\n");
			return 1;
		}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(mrs);
	free(qps);
	return fflush(stdout) ? 1 : 0;
}
