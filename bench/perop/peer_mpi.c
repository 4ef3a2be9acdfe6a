/* OpenMPI's MPI_Allreduce of 8 bytes (2 floats, sum, in place), each call timed alone; built by
 * bench/perop/run.py with mpicc and run under mpirun:
 *   peer_mpi ITERS WARMUP
 * Rank 0 prints "case<TAB>median_us<TAB>p90_us". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 3) {
    fprintf(stderr, "usage: peer_mpi ITERS WARMUP\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int iters = atoi(argv[1]), warmup = atoi(argv[2]);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float data[2] = {1.0f, 1.0f};
  double* samples = malloc(sizeof(double) * (size_t)iters);
  for (int i = 0; i < warmup; ++i) {
    MPI_Allreduce(MPI_IN_PLACE, data, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < iters; ++i) {
    const double start = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, data, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    samples[i] = (MPI_Wtime() - start) * 1e6;
    data[0] = data[1] = 1.0f;
  }
  qsort(samples, (size_t)iters, sizeof(double), by_value);
  if (rank == 0) {
    printf("MPI_Allreduce 8 B (C)\t%.2f\t%.2f\n", samples[iters / 2], samples[iters * 9 / 10]);
  }
  free(samples);
  MPI_Finalize();
  return 0;
}
