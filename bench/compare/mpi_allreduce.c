/* MPI_Allreduce timing in kolo-bench's terms, built by bench/compare/compare.py with mpicc:
 *   mpi_allreduce MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP
 * prints "bytes time_us" per size on rank 0 (time: slowest rank's mean per iteration). In place,
 * float32 sum, as kolo's allreduce. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 6) {
    fprintf(stderr, "usage: mpi_allreduce MIN MAX FACTOR ITERS WARMUP\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long min_bytes = atol(argv[1]), max_bytes = atol(argv[2]), factor = atol(argv[3]);
  const int iters = atoi(argv[4]), warmup = atoi(argv[5]);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float* data = malloc((size_t)max_bytes + 4);
  for (long i = 0; i < max_bytes / 4; ++i) data[i] = (float)(i % 4 + 1);
  for (long bytes = min_bytes; bytes <= max_bytes;
       bytes = bytes == max_bytes ? max_bytes + 1 : (bytes * factor < max_bytes ? bytes * factor : max_bytes)) {
    const int count = (int)(bytes / 4);
    for (int i = 0; i < warmup; ++i) {
      MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    double mean = (MPI_Wtime() - start) / iters, slowest = 0;
    MPI_Reduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%ld %.3f\n", (long)count * 4, slowest * 1e6);
    fflush(stdout);
    for (long i = 0; i < count; ++i) data[i] = (float)(i % 4 + 1); /* keep values finite */
  }
  free(data);
  MPI_Finalize();
  return 0;
}
