/* A test MPI program with a known number of messages of known sizes per rank.
 *
 *   messages
 *
 * With n ranks (n even), rank r:
 *   - sends 10 messages of (r + 1) x 1000 doubles to rank r + 1 (MPI_Send) and receives 10
 *     of (p + 1) x 1000 doubles from rank p = r - 1 (MPI_Recv, into a buffer of exactly that
 *     many), around a ring (even ranks send first, odd ranks receive first);
 *   - makes one MPI_Allreduce of 7 ints;
 *   - broadcasts 5 elements of the predefined datatype MPI_Type_match_size gives for a
 *     4-byte real: a handle the program does not name itself (with Open MPI, libmpi's own
 *     object rather than the program's copy of it);
 *   - broadcasts 2 elements of a derived datatype (3 contiguous doubles): a size the
 *     probes cannot know;
 *   - ends with one MPI_Barrier.
 * So rank r sends 80000 x (r + 1) bytes in MPI_Send, receives 80000 x (p + 1) in MPI_Recv,
 * 28 in MPI_Allreduce and 20 in one MPI_Bcast; the other MPI_Bcast has 2 elements of
 * unknown size.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size % 2) {
    if (rank == 0) fprintf(stderr, "messages: needs an even number of ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int out_n = (rank + 1) * 1000, in_n = (prev + 1) * 1000;
  double *out = calloc(out_n, sizeof(double)), *in = calloc(in_n, sizeof(double));
  for (int i = 0; i < 10; i++) {
    if (rank % 2 == 0) {
      MPI_Send(out, out_n, MPI_DOUBLE, next, 0, MPI_COMM_WORLD);
      MPI_Recv(in, in_n, MPI_DOUBLE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in, in_n, MPI_DOUBLE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(out, out_n, MPI_DOUBLE, next, 0, MPI_COMM_WORLD);
    }
  }
  int v[7] = {rank, 1, 2, 3, 4, 5, 6}, sum[7];
  MPI_Allreduce(v, sum, 7, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  MPI_Datatype real4;
  MPI_Type_match_size(MPI_TYPECLASS_REAL, 4, &real4);
  float f[5] = {0};
  MPI_Bcast(f, 5, real4, 0, MPI_COMM_WORLD);

  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_DOUBLE, &triple);
  MPI_Type_commit(&triple);
  double t[6] = {0};
  MPI_Bcast(t, 2, triple, 0, MPI_COMM_WORLD);
  MPI_Type_free(&triple);

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("messages: %d ranks, allreduce %d\n", size, sum[0]);
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
