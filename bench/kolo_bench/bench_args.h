// kolo-bench's command line, in nccl-tests' words: -b/-e/-f sizes, -n iterations, -w warm-up,
// -d type, -o op, -c check; plus -t to pick the collectives, -a to force allreduce's algorithm
// and -g allgather's (bench/scaling fits and compares each algorithm's cost on its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/types.h"
#include "comm/collectives.h"

namespace kolo::bench {

struct BenchArgs {
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 256ull << 20;
  uint64_t factor = 4;
  int iterations = 20;
  int warmup = 5;
  DataType type = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  bool check = true;
  // -a: allreduce's algorithm (automatic: the runtime's own choice by size and topology).
  comm::AllreduceAlgorithm algorithm = comm::AllreduceAlgorithm::automatic;
  // -g: allgather's algorithm: "auto" (allgatherv's own choice), "ring", "doubling", "bruck".
  std::string allgather_algorithm = "auto";
  std::vector<std::string> collectives = {"allreduce", "allgather", "broadcast", "reducescatter",
                                          "alltoall"};
};

// Throws kolo::InvalidArgument with a usage hint. Sizes accept K/M/G suffixes (powers of 1024).
BenchArgs parse_bench_args(int argc, char** argv);
uint64_t parse_size(const std::string& text);
std::string usage();

}  // namespace kolo::bench
