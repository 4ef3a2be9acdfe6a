/* OpenMPI's collectives timed in kolo-bench's terms, built by bench/compare/compare.py with mpicc:
 *   mpi_collectives COLLECTIVES MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP
 * COLLECTIVES: a comma list of allreduce, allgather, broadcast, reducescatter, alltoall. Rank 0
 * prints "collective bytes time_us wrong" per size: time is the slowest rank's mean per
 * iteration (allreduce in place on the same buffer, as kolo-bench), wrong the
 * elements (over all ranks) that differ from the expected result of a first, checked run.
 * Sizes and inputs as kolo-bench and gloo_collectives.py (float32, sum): the size is the whole
 * buffer (allgather: the gathered output; reducescatter: the input; alltoall: one rank's send
 * buffer), rounded down to whole float32 elements per rank, at least one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, ranks;

/* Small integers: exact in float32, and their sums over a few ranks too. */
static float value(long seed, long i) { return (float)((seed + i) % 4 + 1); }

static long per_rank_elements(const char* collective, long bytes) {
  const long count = bytes / 4;
  if (strcmp(collective, "allreduce") == 0 || strcmp(collective, "broadcast") == 0)
    return count > 0 ? count : 1;
  return count / ranks > 0 ? count / ranks : 1;
}

/* One collective on prepared buffers; `in` and `out` hold the whole (per-rank) buffers. */
static void run(const char* c, float* in, float* out, int per) {
  if (strcmp(c, "allreduce") == 0) {
    MPI_Allreduce(MPI_IN_PLACE, in, per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (strcmp(c, "broadcast") == 0) {
    MPI_Bcast(in, per, MPI_FLOAT, 0, MPI_COMM_WORLD);
  } else if (strcmp(c, "allgather") == 0) {
    MPI_Allgather(in, per, MPI_FLOAT, out, per, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (strcmp(c, "reducescatter") == 0) {
    MPI_Reduce_scatter_block(in, out, per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else {
    MPI_Alltoall(in, per, MPI_FLOAT, out, per, MPI_FLOAT, MPI_COMM_WORLD);
  }
}

/* Fills `in` with this rank's input (in_count elements). */
static void fill(const char* c, float* in, long in_count, long per) {
  for (long i = 0; i < in_count; ++i) {
    in[i] = strcmp(c, "alltoall") == 0 ? value((long)rank * ranks + i / per, i % per)
                                       : value(rank, i);
  }
}

/* Elements of this rank's result that differ from what the collective must give. */
static long wrong_elements(const char* c, const float* in, const float* out, long per) {
  long wrong = 0;
  if (strcmp(c, "allreduce") == 0 || strcmp(c, "reducescatter") == 0) {
    const int scattered = strcmp(c, "reducescatter") == 0;
    const float* got = scattered ? out : in;
    const long offset = scattered ? (long)rank * per : 0;
    for (long i = 0; i < per; ++i) {
      float want = 0;
      for (int r = 0; r < ranks; ++r) want += value(r, offset + i);
      wrong += got[i] != want;
    }
  } else if (strcmp(c, "broadcast") == 0) {
    for (long i = 0; i < per; ++i) wrong += in[i] != value(0, i);
  } else if (strcmp(c, "allgather") == 0) {
    for (long i = 0; i < per * ranks; ++i) wrong += out[i] != value(i / per, i % per);
  } else {
    for (long i = 0; i < per * ranks; ++i)
      wrong += out[i] != value(i / per * ranks + rank, i % per);
  }
  return wrong;
}

/* Times one collective over the sizes MIN..MAX (times FACTOR; MAX always). */
static void time_collective(const char* c, long min_bytes, long max_bytes, long factor, int iters,
                            int warmup) {
  const int whole = strcmp(c, "allreduce") == 0 || strcmp(c, "broadcast") == 0;
  const long largest = per_rank_elements(c, max_bytes) * (whole ? 1 : ranks);
  float* in = malloc((size_t)largest * 4);
  float* out = malloc((size_t)largest * 4);
  for (long bytes = min_bytes; bytes <= max_bytes;
       bytes = bytes == max_bytes ? max_bytes + 1
                                  : (bytes * factor < max_bytes ? bytes * factor : max_bytes)) {
    const long per = per_rank_elements(c, bytes);
    const long total = whole ? per : per * ranks; /* the size column, in elements */
    const long in_count = strcmp(c, "allgather") == 0 ? per : total;
    fill(c, in, in_count, per);
    run(c, in, out, (int)per);
    long wrong = wrong_elements(c, in, out, per), all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int i = 0; i < warmup; ++i) run(c, in, out, (int)per);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) run(c, in, out, (int)per);
    double mean = (MPI_Wtime() - start) / iters, slowest = 0;
    MPI_Reduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s %ld %.3f %ld\n", c, total * 4, slowest * 1e6, all_wrong);
    fflush(stdout);
  }
  free(in);
  free(out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  static const char* known[] = {"allreduce", "allgather", "broadcast", "reducescatter",
                                "alltoall"};
  char* names = argc == 7 ? argv[1] : "";
  int known_names = argc == 7;
  for (char* c = names; known_names && *c;) {
    const size_t length = strcspn(c, ",");
    int found = 0;
    for (int k = 0; k < 5; ++k) found |= strlen(known[k]) == length && !strncmp(c, known[k], length);
    known_names = found;
    c += length + (c[length] == ',');
  }
  if (!known_names || !*names) {
    fprintf(stderr, "usage: mpi_collectives COLLECTIVE[,COLLECTIVE...] MIN MAX FACTOR ITERS WARMUP"
                    " (allreduce, allgather, broadcast, reducescatter, alltoall)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (char* c = strtok(names, ","); c != NULL; c = strtok(NULL, ",")) {
    time_collective(c, atol(argv[2]), atol(argv[3]), atol(argv[4]), atoi(argv[5]), atoi(argv[6]));
  }
  MPI_Finalize();
  return 0;
}
