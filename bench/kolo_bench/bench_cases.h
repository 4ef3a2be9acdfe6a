// One collective at one size: fill inputs with small integers (exact in every type, so any
// summation order gives the same bits), run once and count wrong elements against a reference
// folded locally, then warm up and time `iterations` runs.
#pragma once

#include <cstdint>
#include <string>

#include "bench_args.h"
#include "comm/collectives.h"

namespace kolo::bench {

struct Measurement {
  // The size column: the whole buffer (allgather: the gathered output; reducescatter: the
  // input; alltoall: one rank's send buffer), whole elements per rank, at least one.
  uint64_t bytes = 0;
  uint64_t count = 0;     // elements in it
  double seconds = 0;     // per iteration, this rank
  uint64_t wrong = 0;     // wrong elements on this rank (0 when not checked)
  double bus_factor = 1;  // busbw = algbw * bus_factor (nccl-tests' definitions)
};

Measurement run_case(comm::Communicator& comm, const std::string& collective, uint64_t bytes,
                     const BenchArgs& args, const comm::AllreduceOptions& allreduce_options);

}  // namespace kolo::bench
