#include "bench_cases.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/errors.h"
#include "comm/collectives.h"
#include "comm/patient_waits.h"
#include "kernels/reduce.h"

namespace kolo::bench {

namespace {

void store(DataType type, std::byte* at, double value) {
  switch (type) {
    case DataType::float32: {
      const float v = static_cast<float>(value);
      std::memcpy(at, &v, 4);
      return;
    }
    case DataType::float64:
      std::memcpy(at, &value, 8);
      return;
    case DataType::float16: {
      const uint16_t v = kernels::float_to_half(static_cast<float>(value));
      std::memcpy(at, &v, 2);
      return;
    }
    case DataType::bfloat16: {
      const uint16_t v = kernels::float_to_bfloat16(static_cast<float>(value));
      std::memcpy(at, &v, 2);
      return;
    }
    case DataType::int32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(at, &v, 4);
      return;
    }
    case DataType::int64: {
      const int64_t v = static_cast<int64_t>(value);
      std::memcpy(at, &v, 8);
      return;
    }
    case DataType::int8: {
      const int8_t v = static_cast<int8_t>(value);
      std::memcpy(at, &v, 1);
      return;
    }
    case DataType::uint8: {
      const uint8_t v = static_cast<uint8_t>(value);
      std::memcpy(at, &v, 1);
      return;
    }
    default:
      throw InvalidArgument("kolo-bench: unsupported type");
  }
}

// Small integers: exact in every type, and sums of a few ranks stay exact too.
double value(int seed, size_t i) { return static_cast<double>((seed + i) % 4 + 1); }

std::vector<std::byte> filled(DataType type, size_t count, int seed, size_t offset = 0) {
  const size_t element = dtype_size(type);
  std::vector<std::byte> data(count * element);
  for (size_t i = 0; i < count; ++i)
    store(type, data.data() + i * element, value(seed, offset + i));
  return data;
}

// op over every rank's input, folded locally with the same kernels.
std::vector<std::byte> folded(DataType type, ReduceOp op, size_t count, int ranks,
                              size_t offset = 0) {
  const kernels::ReduceFn combine = kernels::reduce_function(type, op);
  auto result = filled(type, count, 0, offset);
  for (int r = 1; r < ranks; ++r) {
    const auto input = filled(type, count, r, offset);
    if (count > 0) combine(result.data(), input.data(), count);
  }
  return result;
}

uint64_t count_wrong(const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                     size_t element) {
  uint64_t wrong = 0;
  for (size_t i = 0; i + element <= want.size(); i += element) {
    if (std::memcmp(got.data() + i, want.data() + i, element) != 0) ++wrong;
  }
  return wrong;
}

double timed(comm::Communicator& comm, const std::function<void()>& run, const BenchArgs& args) {
  // The collectives run on this thread, which has nothing else to do: as a blocking call driven
  // by its caller (core::Session::drive), whose waits spin through a wake-up's latency. With the
  // background thread's short adaptive spin instead, a run fell at random into the mode where
  // every wait sleeps (np 2 pinned, broadcast of 256 KiB: 18 to 81 us from run to run; 16-17
  // us in every run with this scope).
  const comm::PatientWaits patient;
  for (int i = 0; i < args.warmup; ++i) run();
  comm::barrier(comm);  // every rank starts its clock together
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < args.iterations; ++i) run();
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / args.iterations;
}

// A per-rank collective's elements per rank: the size rounded down to whole elements per rank, but
// at least one (as bench/compare's MPI and gloo programs, so all peers time the same buffers).
size_t per_rank_count(size_t count, size_t ranks) {
  return count == 0 ? 0 : std::max<size_t>(1, count / ranks);
}

using AllgathervFunction = void (*)(comm::Communicator&, ConstBytes, Bytes,
                                    std::span<const size_t>);

// -g: allgatherv's automatic choice, or one algorithm forced (bench/scaling compares them).
AllgathervFunction allgather_function(const std::string& name) {
  if (name == "ring") return comm::allgatherv_ring;
  if (name == "doubling") return comm::allgatherv_doubling;
  if (name == "bruck") return comm::allgatherv_bruck;
  return comm::allgatherv;
}

}  // namespace

Measurement run_case(comm::Communicator& comm, const std::string& collective, uint64_t bytes,
                     const BenchArgs& args, const comm::AllreduceOptions& allreduce_options) {
  const DataType type = args.type;
  const size_t element = dtype_size(type);
  const int n = comm.size();
  const int rank = comm.rank();
  const auto ranks = static_cast<size_t>(n);
  Measurement m;
  size_t count = bytes / element;

  if (collective == "allreduce") {
    auto data = filled(type, count, rank);
    comm::allreduce(comm, data, count, type, args.op, allreduce_options);
    if (args.check) m.wrong = count_wrong(data, folded(type, args.op, count, n), element);
    m.seconds = timed(
        comm, [&] { comm::allreduce(comm, data, count, type, args.op, allreduce_options); }, args);
    m.bus_factor = 2.0 * (n - 1) / n;
  } else if (collective == "broadcast") {
    auto data = filled(type, count, rank);
    comm::broadcast(comm, data, 0);
    if (args.check) m.wrong = count_wrong(data, filled(type, count, 0), element);
    m.seconds = timed(
        comm, [&] { comm::broadcast(comm, data, 0); }, args);
  } else if (collective == "allgather") {
    const size_t per_rank = per_rank_count(count, ranks);
    count = per_rank * ranks;
    const auto mine = filled(type, per_rank, rank);
    std::vector<std::byte> out(count * element);
    const std::vector<size_t> sizes(ranks, per_rank * element);
    const auto allgatherv = allgather_function(args.allgather_algorithm);
    allgatherv(comm, mine, out, sizes);
    if (args.check) {
      std::vector<std::byte> want;
      for (int r = 0; r < n; ++r) {
        const auto block = filled(type, per_rank, r);
        want.insert(want.end(), block.begin(), block.end());
      }
      m.wrong = count_wrong(out, want, element);
    }
    m.seconds = timed(
        comm, [&] { allgatherv(comm, mine, out, sizes); }, args);
    m.bus_factor = static_cast<double>(n - 1) / n;
  } else if (collective == "reducescatter") {
    const size_t per_rank = per_rank_count(count, ranks);
    count = per_rank * ranks;
    const std::vector<size_t> counts(ranks, per_rank);
    const auto input = filled(type, count, rank);
    auto data = input;
    std::vector<std::byte> out(per_rank * element);
    comm::reducescatter(comm, data, counts, type, args.op, out);
    if (args.check) {
      m.wrong = count_wrong(out, folded(type, args.op, per_rank, n, per_rank * rank), element);
    }
    m.seconds = timed(
        comm, [&] { comm::reducescatter(comm, data, counts, type, args.op, out); }, args);
    m.bus_factor = static_cast<double>(n - 1) / n;
  } else if (collective == "alltoall") {
    const size_t per_rank = per_rank_count(count, ranks);
    count = per_rank * ranks;
    std::vector<std::byte> in;
    for (int d = 0; d < n; ++d) {
      const auto block = filled(type, per_rank, rank * n + d);
      in.insert(in.end(), block.begin(), block.end());
    }
    std::vector<std::byte> out(in.size());
    const std::vector<size_t> sizes(ranks, per_rank * element);
    comm::alltoallv(comm, in, sizes, out, sizes);
    if (args.check) {
      std::vector<std::byte> want;
      for (int s = 0; s < n; ++s) {
        const auto block = filled(type, per_rank, s * n + rank);
        want.insert(want.end(), block.begin(), block.end());
      }
      m.wrong = count_wrong(out, want, element);
    }
    m.seconds = timed(
        comm, [&] { comm::alltoallv(comm, in, sizes, out, sizes); }, args);
    m.bus_factor = static_cast<double>(n - 1) / n;
  } else {
    throw InvalidArgument("kolo-bench: unknown collective " + collective);
  }
  m.count = count;
  m.bytes = count * element;
  return m;
}

}  // namespace kolo::bench
