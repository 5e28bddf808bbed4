/*
 * mpi_check: MPI over whatever transport mpirun selected, with every byte
 * checked (tests/consumers/mpi.sh, tests/hosts/mpi.sh). Not a CMake target:
 * the test scripts build it with mpicc, so the library builds without MPI.
 *
 *   ping-pong between rank 0 and every other rank, 1 B .. 4 MiB (powers of
 *   two and an odd size next to each), a pattern that depends on size,
 *   direction and iteration, checked byte by byte on both sides;
 *   MPI_Allreduce (sum of int64 vectors), MPI_Alltoall, MPI_Bcast (4 MiB
 *   from each root), each result compared with the value it must have.
 *
 * Prints "mpi_check: ok ranks N" on rank 0 when everything matched; any
 * mismatch prints the first bad offset and aborts with status 1.
 * Usage: mpirun ... mpi_check [ITERS]   (ping-pong iterations, default 3)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSG (4u << 20)

static int rank, nranks;

static uint8_t pat(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;

	return (uint8_t)(x >> 13 ^ x);
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

static void check(const uint8_t *b, size_t n, uint32_t seed, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i] != pat(i, seed)) {
			fprintf(
			    stderr,
			    "mpi_check: rank %d: %s size %zu: byte %zu is 0x%02x, want 0x%02x\n",
			    rank, what, n, i, b[i], pat(i, seed));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

static void pingpong(uint8_t *sb, uint8_t *rb, int iters)
{
	size_t sizes[64];
	int ns = 0;

	for (size_t s = 1; s <= MAX_MSG; s <<= 1) {
		sizes[ns++] = s;
		if (s > 2 && s < MAX_MSG)
			sizes[ns++] = s + 3; /* not a power of two */
	}
	for (int peer = 1; peer < nranks; peer++) {
		if (rank != 0 && rank != peer)
			continue;
		for (int k = 0; k < ns; k++) {
			size_t n = sizes[k];

			for (int it = 0; it < iters; it++) {
				uint32_t ping = (uint32_t)(peer * 1000003 + k * 101 + it * 2);
				uint32_t pong = ping + 1;

				if (rank == 0) {
					fill(sb, n, ping);
					memset(rb, 0, n);
					MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
					MPI_Recv(rb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
					check(rb, n, pong, "pong");
				} else {
					memset(rb, 0, n);
					MPI_Recv(rb, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
					check(rb, n, ping, "ping");
					fill(sb, n, pong);
					MPI_Send(sb, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
				}
			}
		}
	}
}

static void allreduce(void)
{
	const int n = 1 << 18;
	int64_t *in = malloc(sizeof(*in) * n), *out = malloc(sizeof(*out) * n);

	for (int i = 0; i < n; i++)
		in[i] = (int64_t)i * (rank + 1) + rank;
	MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		/* sum over r of i*(r+1) + r */
		int64_t want =
		    (int64_t)i * nranks * (nranks + 1) / 2 + (int64_t)nranks * (nranks - 1) / 2;

		if (out[i] != want) {
			fprintf(stderr, "mpi_check: rank %d: allreduce [%d] = %lld, want %lld\n",
				rank, i, (long long)out[i], (long long)want);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	free(in);
	free(out);
}

static void alltoall(void)
{
	const int per = 65536 + 5; /* bytes to each rank */
	uint8_t *sb = malloc((size_t)per * nranks), *rb = malloc((size_t)per * nranks);

	for (int d = 0; d < nranks; d++)
		fill(sb + (size_t)d * per, per, (uint32_t)(rank * 131 + d));
	memset(rb, 0, (size_t)per * nranks);
	MPI_Alltoall(sb, per, MPI_BYTE, rb, per, MPI_BYTE, MPI_COMM_WORLD);
	for (int s = 0; s < nranks; s++)
		check(rb + (size_t)s * per, per, (uint32_t)(s * 131 + rank), "alltoall");
	free(sb);
	free(rb);
}

static void bcast(uint8_t *b)
{
	for (int root = 0; root < nranks; root++) {
		for (size_t n = 1; n <= MAX_MSG; n *= 64) {
			uint32_t seed = (uint32_t)(root * 7919 + n);

			if (rank == root)
				fill(b, n, seed);
			else
				memset(b, 0, n);
			MPI_Bcast(b, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
			check(b, n, seed, "bcast");
		}
	}
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 3;
	uint8_t *sb, *rb;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	sb = malloc(MAX_MSG);
	rb = malloc(MAX_MSG);
	if (!sb || !rb) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	pingpong(sb, rb, iters < 1 ? 1 : iters);
	MPI_Barrier(MPI_COMM_WORLD);
	allreduce();
	alltoall();
	bcast(rb);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: ok ranks %d\n", nranks);
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
