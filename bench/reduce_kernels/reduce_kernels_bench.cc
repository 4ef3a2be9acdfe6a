// Google Benchmark of comm's reduction kernels against memcpy, the bandwidth ceiling:
//   build/<name>/reduce_kernels_bench --benchmark_filter=64M
// bytes_per_second counts the buffer's bytes once (as memcpy's). A reduction moves 3 bytes of
// memory traffic per buffer byte (read both inputs, write one), a memcpy 2, so at sizes beyond the
// caches a kernel that streams at memory speed reaches about 2/3 of memcpy's figure.
// BM_split_fold: a 100 MiB float32 sum folded in 1 MiB steps (as the host arena and the ring do)
// by 1, 2 or 4 threads through comm::WorkSplitter (KOLO_REDUCE_THREADS), median of 5 runs:
//   build/<name>/reduce_kernels_bench --benchmark_filter=split_fold
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "base/types.h"
#include "comm/step_parts.h"
#include "comm/work_splitter.h"
#include "kernels/reduce.h"

namespace kolo::kernels {
namespace {

constexpr int64_t kSizes[] = {64 << 10, 1 << 20, 64 << 20};

void BM_memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::vector<std::byte> from(bytes, std::byte{1}), to(bytes, std::byte{2});
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_reduce(benchmark::State& state, DataType type, ReduceOp op) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / dtype_size(type);
  // Ones (as bytes 0x3c/0x3f/... vary per type) are fine: timing does not depend on values for
  // these kernels except for denormals, which 0x01 bytes avoid in float32/float64.
  std::vector<std::byte> inout(bytes, std::byte{0x3c}), in(bytes, std::byte{0x3c});
  const ReduceFn fn = reduce_function(type, op);
  for (auto _ : state) {
    fn(inout.data(), in.data(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_split_fold(benchmark::State& state) {
  constexpr size_t kBytes = size_t{100} << 20, kStep = size_t{1} << 20;
  comm::WorkSplitter splitter(static_cast<size_t>(state.range(0)));
  std::vector<std::byte> inout(kBytes, std::byte{0x3c}), in(kBytes, std::byte{0x3c});
  const ReduceFn fn = reduce_function(DataType::float32, ReduceOp::sum);
  for (auto _ : state) {
    for (size_t at = 0; at < kBytes; at += kStep) {
      comm::detail::for_each_part(&splitter, comm::kSplitPartBytes, 4, at, at + kStep, 0, 0,
                                  [&](size_t begin, size_t bytes) {
                                    fn(inout.data() + begin, in.data() + begin, bytes / 4);
                                  });
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBytes));
}
BENCHMARK(BM_split_fold)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->UseRealTime();

void sizes(benchmark::internal::Benchmark* bench) {
  for (int64_t size : kSizes) bench->Arg(size);
  bench->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_memcpy)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, float32_sum, DataType::float32, ReduceOp::sum)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, float32_min, DataType::float32, ReduceOp::min)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, float32_max, DataType::float32, ReduceOp::max)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, float32_prod, DataType::float32, ReduceOp::product)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, float64_sum, DataType::float64, ReduceOp::sum)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, float16_sum, DataType::float16, ReduceOp::sum)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, bfloat16_sum, DataType::bfloat16, ReduceOp::sum)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, int32_sum, DataType::int32, ReduceOp::sum)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, int64_sum, DataType::int64, ReduceOp::sum)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, int8_sum, DataType::int8, ReduceOp::sum)->Apply(sizes);
BENCHMARK_CAPTURE(BM_reduce, int32_max, DataType::int32, ReduceOp::max)->Apply(sizes);

}  // namespace
}  // namespace kolo::kernels

BENCHMARK_MAIN();
