/*
 * hpcscope bench mpi: PingPong, Sendrecv, Exchange and Allreduce timed the way the Intel MPI
 * Benchmarks (IMB-MPI1) time them, printed as lines that hpcscope parses.
 *
 * hpcscope embeds this file, compiles it with the MPI C compiler wrapper (mpicc) into its
 * cache directory and runs it under the launcher (mpirun, srun, mpiexec): hpcscope itself
 * never links an MPI library.
 *
 * Usage: mpibench -s SIZES -b BENCHMARKS -v VOLUME -m MAX_REPS -n MIN_REPS -r REPEAT
 *   SIZES       comma-separated message sizes in bytes (0,1,2,4,...)
 *   BENCHMARKS  comma-separated: pingpong, sendrecv, exchange, allreduce
 *   VOLUME      bytes per size and benchmark: repetitions = min(MAX_REPS, VOLUME / size)
 *               (IMB: MSGSPERSAMPLE = 1000, OVERALL_VOL = 40 MiB)
 *   MIN_REPS    lower bound of the repetitions (IMB: 1)
 *   REPEAT      timed runs per size; the run with the smallest t_avg is printed (IMB: 1)
 *
 * Timing, as IMB: two barriers, then each rank times its loop of `reps` operations with
 * MPI_Wtime and divides by reps; PingPong's time is half the round trip. t_min, t_max and
 * t_avg are over the ranks that take part (ranks 0 and 1 for PingPong, all for the others).
 * Before each timed loop a few untimed operations warm the path up.
 *
 * Output (stdout, rank 0, one line each, flushed as it goes so a crash keeps the rows):
 *   hpcscope-mpi begin 1
 *   hpcscope-mpi library <MPI_Get_library_version, first line>
 *   hpcscope-mpi standard <major>.<minor>
 *   hpcscope-mpi ranks <n>
 *   hpcscope-mpi host <rank> <MPI_Get_processor_name>
 *   hpcscope-mpi row <benchmark> <bytes> <reps> <t_min_us> <t_max_us> <t_avg_us>
 *   hpcscope-mpi end
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 64
#define TAG 1

enum bench { PINGPONG, SENDRECV, EXCHANGE, ALLREDUCE, NBENCH };
static const char *names[NBENCH] = {"pingpong", "sendrecv", "exchange", "allreduce"};

static int rank, nranks;
static char *sbuf, *rbuf;

static void die(const char *msg) {
    if (rank == 0) fprintf(stderr, "mpibench: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* One operation of benchmark b with an n-byte message. */
static void op(int b, long n) {
    int right = (rank + 1) % nranks, left = (rank - 1 + nranks) % nranks;
    MPI_Request req[2];
    switch (b) {
    case PINGPONG:
        if (rank == 0) {
            MPI_Send(sbuf, (int)n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)n, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(rbuf, (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)n, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
        }
        break;
    case SENDRECV:
        MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, right, TAG, rbuf, (int)n, MPI_BYTE, left, TAG,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    case EXCHANGE:
        MPI_Isend(sbuf, (int)n, MPI_BYTE, left, TAG, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(sbuf + n, (int)n, MPI_BYTE, right, TAG, MPI_COMM_WORLD, &req[1]);
        MPI_Recv(rbuf, (int)n, MPI_BYTE, left, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(rbuf + n, (int)n, MPI_BYTE, right, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        break;
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, (int)(n / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    }
}

static int parse_list(const char *s, long *out, int max) {
    int k = 0;
    while (*s && k < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0) return -1;
        out[k++] = v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return k;
}

int main(int argc, char **argv) {
    long sizes[MAX_SIZES];
    int nsizes = 0, use[NBENCH] = {0}, i, b, r;
    long volume = 40L * 1048576L, max_reps = 1000, min_reps = 1, repeat = 1, maxsize = 0;
    char proc[MPI_MAX_PROCESSOR_NAME];
    int len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    for (i = 1; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "-s")) {
            nsizes = parse_list(v, sizes, MAX_SIZES);
            if (nsizes <= 0) die("bad -s size list");
        } else if (!strcmp(f, "-b")) {
            char tmp[256];
            strncpy(tmp, v, sizeof tmp - 1);
            tmp[sizeof tmp - 1] = 0;
            for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
                int found = 0;
                for (b = 0; b < NBENCH; b++)
                    if (!strcmp(t, names[b])) use[b] = found = 1;
                if (!found) die("unknown benchmark in -b");
            }
        } else if (!strcmp(f, "-v")) volume = atol(v);
        else if (!strcmp(f, "-m")) max_reps = atol(v);
        else if (!strcmp(f, "-n")) min_reps = atol(v);
        else if (!strcmp(f, "-r")) repeat = atol(v);
        else die("unknown flag");
    }
    if (nsizes == 0) die("no sizes (-s)");
    if (max_reps < 1 || min_reps < 1 || repeat < 1 || volume < 1) die("bad -v/-m/-n/-r");
    if (nranks < 2) die("needs at least 2 ranks: start it with the launcher (mpirun -np 2)");
    for (i = 0; i < nsizes; i++)
        if (sizes[i] > maxsize) maxsize = sizes[i];
    if (maxsize > (1L << 30)) die("message sizes above 1 GiB are not supported");
    sbuf = malloc(2 * (size_t)maxsize + 8);
    rbuf = malloc(2 * (size_t)maxsize + 8);
    if (!sbuf || !rbuf) die("cannot allocate the message buffers");
    memset(sbuf, 1, 2 * (size_t)maxsize + 8);
    memset(rbuf, 0, 2 * (size_t)maxsize + 8);

    MPI_Get_processor_name(proc, &len);
    char *hosts = rank == 0 ? malloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(proc, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        int major, minor;
        MPI_Get_version(&major, &minor);
        printf("hpcscope-mpi begin 1\n");
#if MPI_VERSION >= 3
        {
            char lib[MPI_MAX_LIBRARY_VERSION_STRING];
            int l;
            MPI_Get_library_version(lib, &l);
            lib[strcspn(lib, "\r\n")] = 0;
            printf("hpcscope-mpi library %s\n", lib);
        }
#endif
        printf("hpcscope-mpi standard %d.%d\n", major, minor);
        printf("hpcscope-mpi ranks %d\n", nranks);
        for (r = 0; r < nranks; r++)
            printf("hpcscope-mpi host %d %s\n", r, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        fflush(stdout);
    }

    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)nranks) : NULL;
    for (b = 0; b < NBENCH; b++) {
        if (!use[b]) continue;
        for (i = 0; i < nsizes; i++) {
            long n = sizes[i];
            if (b == ALLREDUCE && n % 4 != 0) continue; /* MPI_FLOAT elements, as IMB */
            long reps = n > 0 ? volume / n : max_reps;
            if (reps > max_reps) reps = max_reps;
            if (reps < min_reps) reps = min_reps;
            int active = b != PINGPONG || rank < 2;
            double best[3] = {0, 0, 0};
            for (r = 0; r < repeat; r++) {
                long warm = reps < 20 ? 2 : 2 + reps / 20, k;
                for (k = 0; k < warm; k++) op(b, n);
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_Barrier(MPI_COMM_WORLD);
                double t = MPI_Wtime();
                for (k = 0; k < reps; k++) op(b, n);
                t = (MPI_Wtime() - t) / (double)reps * 1e6;
                if (b == PINGPONG) t /= 2.0;
                if (!active) t = -1.0;
                MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
                if (rank == 0) {
                    double mn = 0, mx = 0, sum = 0;
                    int cnt = 0, q;
                    for (q = 0; q < nranks; q++) {
                        if (all[q] < 0) continue;
                        if (cnt == 0 || all[q] < mn) mn = all[q];
                        if (cnt == 0 || all[q] > mx) mx = all[q];
                        sum += all[q];
                        cnt++;
                    }
                    double avg = sum / cnt;
                    if (r == 0 || avg < best[2]) {
                        best[0] = mn;
                        best[1] = mx;
                        best[2] = avg;
                    }
                }
            }
            if (rank == 0) {
                printf("hpcscope-mpi row %s %ld %ld %.4f %.4f %.4f\n", names[b], n, reps, best[0],
                       best[1], best[2]);
                fflush(stdout);
            }
        }
    }
    if (rank == 0) {
        printf("hpcscope-mpi end\n");
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    free(hosts);
    free(all);
    MPI_Finalize();
    return 0;
}
