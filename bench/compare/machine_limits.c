/* The machine's limits that bound every shared-memory collective, as medians of ROUNDS runs:
 *   cc -O2 -o machine_limits bench/compare/machine_limits.c && ./machine_limits [ROUNDS]
 * 1. memcpy bandwidth of one core, from 4 KiB (in L1) to 256 MiB (from DRAM): a collective
 *    through shared memory copies every byte at least twice (in and out of the shared buffer).
 * 2. The round trip of a flag between two processes on two cores (each spins on a shared cache
 *    line), the floor of one barrier step; and with the waiter asleep on a futex, woken by the
 *    other: what a step costs once a rank stopped spinning.
 * 3. The same flag round trip with three processes pinned to two cores (one always descheduled;
 *    waiters yield): what each step of a 3-rank collective costs on this 2-core machine.
 * 4. memcpy of S bytes on both cores at once (warm buffers, as a benchmark's), the slower side's
 *    time per copy: the floor of an np-2 collective in which each rank copies S bytes (allgather
 *    and alltoall of an S-byte buffer with one copy per byte: its own half and its peer's).
 * Processes are pinned with sched_setaffinity to cores 0 and 1 (the second process to core 1).
 * Runs are short (milliseconds, as a benchmark's sub-microsecond sizes), so that on a machine
 * shared with other work most rounds run between preemptions; the median keeps those.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* values, int n) {
  qsort(values, n, sizeof(double), by_value);
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

static void pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

/* GB/s of memcpy of `bytes`, repeated to at least 64 MiB of traffic. */
static double copy_bandwidth(size_t bytes) {
  char* from = malloc(bytes);
  char* to = malloc(bytes);
  memset(from, 1, bytes);
  memset(to, 2, bytes);
  const int repeat = bytes >= (64u << 20) ? 2 : (int)((64u << 20) / bytes);
  memcpy(to, from, bytes); /* warm */
  const double start = now();
  for (int i = 0; i < repeat; ++i) {
    memcpy(to, from, bytes);
    __asm__ volatile("" ::: "memory");
  }
  const double seconds = now() - start;
  free(from);
  free(to);
  return (double)bytes * repeat / seconds / 1e9;
}

struct Shared {
  _Alignas(64) volatile uint32_t turn; /* also the futex word */
  _Alignas(64) volatile uint32_t sleepers;
  _Alignas(64) volatile uint32_t started; /* children pinned and running: the clock starts */
};

static long futex(volatile uint32_t* word, int op, uint32_t value) {
  return syscall(SYS_futex, (uint32_t*)word, op, value, NULL, NULL, 0);
}

/* Waits until turn == mine: spinning, yielding, or asleep on the futex. */
static void wait_turn(struct Shared* s, uint32_t mine, int mode) {
  while (s->turn != mine) {
    if (mode == 1) {
      __atomic_add_fetch(&s->sleepers, 1, __ATOMIC_SEQ_CST);
      const uint32_t seen = s->turn;
      if (seen != mine) futex(&s->turn, FUTEX_WAIT, seen);
      __atomic_sub_fetch(&s->sleepers, 1, __ATOMIC_SEQ_CST);
    } else if (mode == 2) {
      sched_yield();
    } else {
      __builtin_ia32_pause();
    }
  }
}

static void pass_turn(struct Shared* s, uint32_t next, int mode) {
  __atomic_store_n(&s->turn, next, __ATOMIC_SEQ_CST);
  if (mode == 1 && __atomic_load_n(&s->sleepers, __ATOMIC_SEQ_CST) > 0) {
    futex(&s->turn, FUTEX_WAKE, 1);
  }
}

/* Microseconds per round trip of the turn among `procs` processes (turn passes 0 -> 1 -> ...),
 * process p pinned to core p % 2. mode: 0 spin, 1 futex sleep, 2 yield. */
static double round_trip_us(int procs, int mode, int trips) {
  struct Shared* s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
  s->turn = 0;
  s->sleepers = 0;
  s->started = 0;
  for (int p = 1; p < procs; ++p) {
    if (fork() == 0) {
      pin(p % 2);
      __atomic_add_fetch(&s->started, 1, __ATOMIC_SEQ_CST);
      for (int i = 0; i < trips; ++i) {
        wait_turn(s, (uint32_t)(i * procs + p), mode);
        pass_turn(s, (uint32_t)(i * procs + p + 1), mode);
      }
      _exit(0);
    }
  }
  pin(0);
  while (s->started != (uint32_t)(procs - 1)) sched_yield(); /* fork and pinning not timed */
  const double start = now();
  for (int i = 0; i < trips; ++i) {
    wait_turn(s, (uint32_t)(i * procs), mode);
    pass_turn(s, (uint32_t)(i * procs + 1), mode);
  }
  wait_turn(s, (uint32_t)(trips * procs), mode);
  const double seconds = now() - start;
  while (wait(NULL) > 0) {
  }
  munmap(s, sizeof(*s));
  return seconds / trips * 1e6;
}

/* Microseconds per memcpy of `bytes` on cores 0 and 1 at once, the slower process's. */
static double both_cores_copy_us(size_t bytes) {
  volatile uint32_t* go = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                               -1, 0);
  double* took = (double*)(go + 16);
  const int repeat = (int)((256u << 20) / bytes);
  for (int p = 0; p < 2; ++p) {
    if (fork() == 0) {
      pin(p);
      char* from = malloc(bytes);
      char* to = malloc(bytes);
      memset(from, 1, bytes);
      memset(to, 2, bytes);
      memcpy(to, from, bytes); /* warm */
      __atomic_add_fetch(go, 1, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(go, __ATOMIC_SEQ_CST) != 2) __builtin_ia32_pause();
      const double start = now();
      for (int i = 0; i < repeat; ++i) {
        memcpy(to, from, bytes);
        __asm__ volatile("" ::: "memory");
      }
      took[p] = (now() - start) / repeat * 1e6;
      _exit(0);
    }
  }
  while (wait(NULL) > 0) {
  }
  const double slower = took[0] > took[1] ? took[0] : took[1];
  munmap((void*)go, 4096);
  return slower;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 && atoi(argv[1]) > 0 && atoi(argv[1]) <= 64 ? atoi(argv[1]) : 5;
  double values[64];
  printf("# machine limits, medians of %d rounds; load average before: ", rounds);
  FILE* load = fopen("/proc/loadavg", "r");
  char text[64] = "?";
  if (load != NULL && fgets(text, sizeof(text), load) != NULL) text[strcspn(text, " ")] = 0;
  if (load != NULL) fclose(load);
  printf("%s\n# memcpy, one core\n#%11s %10s\n", text, "bytes", "GB/s");
  pin(0);
  static const size_t sizes[] = {4u << 10, 32u << 10, 256u << 10, 2u << 20, 16u << 20, 64u << 20,
                                 256u << 20};
  for (int k = 0; k < 7; ++k) {
    for (int r = 0; r < rounds; ++r) values[r] = copy_bandwidth(sizes[k]);
    printf(" %11zu %10.2f\n", sizes[k], median(values, rounds));
  }
  static const char* names[] = {"2 processes, 2 cores, spinning",
                                "2 processes, 2 cores, futex sleep + wake",
                                "3 processes, 2 cores, sched_yield"};
  static const int procs[] = {2, 2, 3}, modes[] = {0, 1, 2}, trips[] = {2000, 500, 500};
  printf("# flag round trip (one barrier step's floor)\n");
  for (int k = 0; k < 3; ++k) {
    for (int r = 0; r < rounds; ++r) values[r] = round_trip_us(procs[k], modes[k], trips[k]);
    printf(" %-44s %8.3f us\n", names[k], median(values, rounds));
  }
  printf("# memcpy on both cores at once (np-2 single-copy floor)\n#%11s %10s\n", "bytes",
         "us/copy");
  static const size_t both[] = {64u << 10, 256u << 10, 1u << 20, 4u << 20};
  for (int k = 0; k < 4; ++k) {
    for (int r = 0; r < rounds; ++r) values[r] = both_cores_copy_us(both[k]);
    printf(" %11zu %10.2f\n", both[k], median(values, rounds));
  }
  return 0;
}
