/*
 * A minimal MPI ping-pong, written independently of hpcscope's benchmark, as a reference
 * for `hpcscope bench mpi` (bench/mpi/compare.sh).
 *
 * Usage: pingpong_ref SIZE... ; prints "SIZE T_US" per size from rank 0, where T_US is half
 * the round trip in µs, the best of 5 timed loops of min(1000, 40 MiB / SIZE) round trips
 * after 10 untimed ones. Send and receive buffers are distinct, as in IMB: with one buffer
 * for both, every message above the eager limit moves cache lines that the other core just
 * wrote, which on shared memory made 32 KiB - 4 MiB messages 2-4x slower here.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, i, k, r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = malloc(4 << 20), *rbuf = malloc(4 << 20);
    /* Written once: untouched calloc memory reads as the one shared zero page, always in
     * cache, which made 1-4 MiB messages 3x faster than real data. */
    memset(buf, 1, 4 << 20);
    memset(rbuf, 0, 4 << 20);
    for (i = 1; i < argc; i++) {
        long n = atol(argv[i]);
        long reps = n > 0 ? (40L << 20) / n : 1000;
        if (reps > 1000) reps = 1000;
        if (reps < 1) reps = 1;
        double best = 1e30;
        for (r = 0; r < 6; r++) {
            long iters = r == 0 ? 10 : reps; /* the first loop warms up */
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            for (k = 0; k < iters; k++) {
                if (rank == 0) {
                    MPI_Send(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(rbuf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            t = (MPI_Wtime() - t) / (double)iters / 2.0 * 1e6;
            if (r > 0 && t < best) best = t;
        }
        if (rank == 0) printf("%ld %.4f\n", n, best);
    }
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
