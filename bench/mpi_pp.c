/*
 * mpi_pp: the MPI figures of issue 17's ratios, between ranks 0 and 1.
 *   latency    ping-pong of SIZE bytes (MPI_Send / MPI_Recv), one-way
 *              microseconds = elapsed / (2 x iterations), after a warm-up;
 *   bandwidth  rank 0 posts WINDOW MPI_Isend of BW_SIZE bytes, rank 1 as
 *              many MPI_Irecv, then a 4-byte reply closes the window (as
 *              osu_bw does); MiB/s over all windows.
 * The received data are checked (the first and last byte of every message
 * carry the iteration), so a transport that loses or reorders bytes fails
 * rather than measures. Prints "mpi_pp: lat SIZE us V" and
 * "mpi_pp: bw SIZE MiB/s V" (rank 0), exit 1 on a data error.
 * Usage: mpi_pp [SIZE ITERS BW_SIZE BW_ITERS]   (8 20000 1048576 200)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 16

static int check(const unsigned char *b, size_t n, unsigned char v)
{
	return b[0] == v && b[n - 1] == v;
}

static double latency(int rank, size_t size, int iters, unsigned char *buf)
{
	double t0 = 0;
	int i, bad = 0;

	for (i = -iters / 10 - 1; i < iters; i++) {
		unsigned char v = (unsigned char)i;

		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			buf[0] = buf[size - 1] = v;
			MPI_Send(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
		bad |= !check(buf, size, v);
	}
	if (bad)
		return -1;
	return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

static double bandwidth(int rank, size_t size, int iters, unsigned char *bufs)
{
	MPI_Request req[WINDOW];
	double t0 = 0;
	int i, w, ack = 0, bad = 0;

	for (i = -2; i < iters; i++) {
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		for (w = 0; w < WINDOW; w++) {
			unsigned char *b = bufs + (size_t)w * size;

			if (rank == 0) {
				b[0] = b[size - 1] = (unsigned char)(i + w);
				MPI_Isend(b, (int)size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[w]);
			} else {
				MPI_Irecv(b, (int)size, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[w]);
			}
		}
		MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
		if (rank == 0) {
			MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			for (w = 0; w < WINDOW; w++)
				bad |=
				    !check(bufs + (size_t)w * size, size, (unsigned char)(i + w));
			ack = bad;
			MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
		}
		if (ack)
			return -1;
	}
	return (double)size * WINDOW * iters / (MPI_Wtime() - t0) / 1048576.0;
}

int main(int argc, char **argv)
{
	size_t size = 8, bw_size = 1048576;
	int iters = 20000, bw_iters = 200, rank, n;
	unsigned char *buf, *bufs;
	double lat, bw;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc == 5) {
		size = strtoul(argv[1], NULL, 0);
		iters = atoi(argv[2]);
		bw_size = strtoul(argv[3], NULL, 0);
		bw_iters = atoi(argv[4]);
	}
	if (n != 2 || !size || !bw_size || iters < 1 || bw_iters < 1) {
		if (!rank)
			fprintf(stderr, "mpi_pp: 2 ranks and positive sizes and counts\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = calloc(1, size);
	bufs = calloc(WINDOW, bw_size);
	if (!buf || !bufs)
		MPI_Abort(MPI_COMM_WORLD, 2);
	lat = latency(rank, size, iters, buf);
	bw = bandwidth(rank, bw_size, bw_iters, bufs);
	if (rank == 0) {
		if (lat < 0 || bw < 0) {
			fprintf(stderr, "mpi_pp: data error\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		printf("mpi_pp: lat %zu us %.3f\n", size, lat);
		printf("mpi_pp: bw %zu MiB/s %.1f\n", bw_size, bw);
	}
	free(buf);
	free(bufs);
	MPI_Finalize();
	return 0;
}
