// kolo-bench: nccl-tests-style throughput and latency of kolo's collectives, straight on the
// communicator the runtime would use (bootstrap, TCP mesh, shared memory for same-host peers),
// without the negotiation and fusion layers above it. Run it under the launcher:
//   kolorun -np 2 kolo-bench -b 8 -e 256M -f 4 -n 20 -w 5 -d float -o sum
// Time is the slowest rank's average per iteration; #wrong sums every rank's wrong elements.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

#include "bench_args.h"
#include "bench_cases.h"
#include "comm/collective_arena.h"
#include "comm/collectives.h"
#include "comm/single_copy.h"
#include "core/bootstrap_options.h"
#include "core/config.h"
#include "core/rank_placement.h"
#include "core/reduce_threads.h"

namespace kolo::bench {
namespace {

double slowest(comm::Communicator& comm, double seconds) {
  comm::allreduce(comm, {reinterpret_cast<std::byte*>(&seconds), sizeof(seconds)}, 1,
                  DataType::float64, ReduceOp::max);
  return seconds;
}

uint64_t total(comm::Communicator& comm, uint64_t value) {
  comm::allreduce(comm, {reinterpret_cast<std::byte*>(&value), sizeof(value)}, 1, DataType::int64,
                  ReduceOp::sum);
  return value;
}

// Multiplies by -f; the largest size (-e) is always measured, even off the geometric series.
uint64_t next_size(uint64_t bytes, const BenchArgs& args) {
  if (bytes == args.max_bytes) return args.max_bytes + 1;
  if (bytes == 0) return 1;
  return std::min(bytes * args.factor, args.max_bytes);
}

int run(int argc, char** argv) {
  const BenchArgs args = parse_bench_args(argc, argv);
  const core::Config config = core::Config::from_process_env();
  const bootstrap::LaunchInfo launch = bootstrap::LaunchInfo::from_env(process_env_lookup());
  const Logger logger(config.log_level,
                      fmt::format("[kolo-bench rank {}/{}]", launch.rank, launch.size));
  bootstrap::Connected connected =
      bootstrap::connect_world(launch, core::bootstrap_options(config), /*round=*/0, logger);
  std::vector<transport::Link*> links;
  for (auto& link : connected.links) links.push_back(link.get());
  // Placed as the runtime places a rank (core/rank_placement.h), so that a plain `kolorun -np N
  // kolo-bench` measures what a plain training job gets.
  const core::RankPlacement placement = core::place_rank(
      config, process_env_lookup(), connected.world.local_rank, connected.world.local_size, logger);
  comm::CommunicatorOptions options;
  options.peer_timeout = config.peer_timeout;
  options.host_cpus = placement.host_cpus;
  comm::Communicator comm(launch.rank, std::move(links), connected.world.topology, options);
  // This thread runs the collectives, as the runtime's background thread does: the same helpers.
  const core::ReduceHelpers reduce_helpers(config, placement, connected.world.local_size, comm,
                                           logger);
  // The same choices the runtime's kolo backend makes.
  comm::AllreduceOptions allreduce_options;
  allreduce_options.algorithm = args.algorithm;  // automatic unless -a forces one
  allreduce_options.small_message_bytes = config.small_allreduce_bytes;
  if (config.hierarchical_allreduce) {
    allreduce_options.hierarchical =
        *config.hierarchical_allreduce ? comm::Hierarchical::on : comm::Hierarchical::off;
  }
  const bool print = comm.rank() == 0;
  uint64_t errors = 0;

  if (print) {
    std::printf(
        "# kolo-bench: %d ranks on %d host(s), type %s, op %s, %d iterations, %d warm-up%s\n",
        comm.size(), comm.topology().num_hosts(), std::string(dtype_name(args.type)).c_str(),
        std::string(reduce_op_name(args.op)).c_str(), args.iterations, args.warmup,
        config.shm_disable ? ", shared memory disabled" : "");
  }
  for (const std::string& collective : args.collectives) {
    if (print) {
      std::printf("#\n# %s\n#%12s %12s %9s %7s %11s %10s %10s %7s\n", collective.c_str(), "size",
                  "count", "type", "redop", "time(us)", "algbw", "busbw", "#wrong");
      std::printf("#%12s %12s %9s %7s %11s %10s %10s %7s\n", "(B)", "(elements)", "", "", "",
                  "(GB/s)", "(GB/s)", "");
    }
    for (uint64_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes = next_size(bytes, args)) {
      const Measurement m = run_case(comm, collective, bytes, args, allreduce_options);
      const double seconds = slowest(comm, m.seconds);
      const uint64_t wrong = total(comm, m.wrong);
      errors += wrong;
      const double algbw = seconds > 0 ? static_cast<double>(m.bytes) / seconds / 1e9 : 0;
      if (print) {
        const bool reduces = collective == "allreduce" || collective == "reducescatter";
        std::printf(
            " %12llu %12llu %9s %7s %11.2f %10.3f %10.3f %7s\n",
            static_cast<unsigned long long>(m.bytes), static_cast<unsigned long long>(m.count),
            std::string(dtype_name(args.type)).c_str(),
            reduces ? std::string(reduce_op_name(args.op)).c_str() : "none", seconds * 1e6, algbw,
            algbw * m.bus_factor, args.check ? std::to_string(wrong).c_str() : "N/A");
        std::fflush(stdout);
      }
    }
  }
  if (print)
    std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(errors),
                errors == 0 ? "OK" : "FAILED");
  // Which way this machine's ranks moved large allgather and alltoall blocks (single_copy.h).
  if (print && comm.arena() != nullptr &&
      comm.arena()->single_copy != comm::CollectiveArena::SingleCopy::unknown) {
    const size_t from = comm::detail::single_copy_blocks_from(comm, *comm.arena());  // probed
    std::printf("# single-copy reads (allgather, alltoall): %s\n",
                from == SIZE_MAX ? "never"
                                 : ("from blocks of " + std::to_string(from) + " bytes" +
                                    (comm.arena()->single_copy_measured ? " (measured)" : ""))
                                       .c_str());
  }
  // Leave together; from here a rank that already left is not an error for the others.
  comm.stop_watching_uninvolved_peers();
  comm::barrier(comm);
  return errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kolo::bench

int main(int argc, char** argv) {
  try {
    return kolo::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kolo-bench: %s\n", e.what());
    return 2;
  }
}
