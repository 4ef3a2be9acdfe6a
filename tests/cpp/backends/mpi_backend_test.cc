// The MPI backend's collectives on real MPI ranks. Run by ctest, this binary starts itself under
// `mpirun -np 2` and `-np 3` (MpiBackendUnderMpirun); each rank then runs the MpiRanks tests,
// which check every collective, element type and reduction against a scalar reference.
#include "backends/mpi_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>

#include "base/errors.h"
#include "kernels/typed_values.h"

namespace kolo::backends {
namespace {

using namespace kernels::testing;

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

class MpiRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!under_mpirun()) GTEST_SKIP() << "runs only on ranks started by mpirun";
    const MpiPlugin& plugin = MpiPlugin::get();
    plugin.initialize();
    std::tie(rank_, size_) = plugin.world();
    backend_ = std::make_unique<MpiBackend>(plugin, rank_, size_);
  }
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<MpiBackend> backend_;
};

TEST_F(MpiRanks, AllreduceEveryTypeAndReduction) {
  for (DataType type : all_dtypes()) {
    for (ReduceOp op : all_ops()) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{65537}}) {
        std::vector<std::vector<std::byte>> inputs;
        for (int r = 0; r < size_; ++r) inputs.push_back(make_input(type, op, r, count));
        std::vector<std::byte> data = inputs[rank_];
        if (!op_defined(type, op)) {
          // Every rank refuses alike (before any MPI call), naming the type and the reduction.
          try {
            backend_->allreduce(data, count, type, op);
            ADD_FAILURE() << "float bitwise reduction accepted";
          } catch (const Error& error) {
            EXPECT_NE(std::string(error.what()).find(std::string(dtype_name(type))),
                      std::string::npos)
                << error.what();
          }
          continue;
        }
        backend_->allreduce(data, count, type, op);
        EXPECT_EQ(first_difference(data, reference_reduce(inputs, type, op), type), "")
            << dtype_name(type) << " " << reduce_op_name(op) << " count " << count;
      }
    }
  }
}

TEST_F(MpiRanks, AllgathervUnevenBlocks) {
  std::vector<size_t> bytes(size_);
  for (int r = 0; r < size_; ++r) bytes[r] = static_cast<size_t>(r) * 3 + (r == 1 ? 0 : 1);
  std::vector<std::byte> mine(bytes[rank_], std::byte(rank_ + 1));
  std::vector<std::byte> out(std::accumulate(bytes.begin(), bytes.end(), size_t{0}));
  backend_->allgatherv(mine, out, bytes);
  size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    for (size_t i = 0; i < bytes[r]; ++i) EXPECT_EQ(out[offset + i], std::byte(r + 1));
    offset += bytes[r];
  }
}

TEST_F(MpiRanks, BroadcastFromEveryRoot) {
  for (int root = 0; root < size_; ++root) {
    std::vector<std::byte> data(4099, std::byte(rank_ == root ? 0x5a + root : 0));
    backend_->broadcast(data, root);
    for (std::byte b : data) ASSERT_EQ(b, std::byte(0x5a + root));
  }
}

TEST_F(MpiRanks, ReducescatterUnevenCounts) {
  for (DataType type : {DataType::float32, DataType::bfloat16, DataType::int64}) {
    std::vector<size_t> counts(size_);
    for (int r = 0; r < size_; ++r) counts[r] = static_cast<size_t>(r) + 2;
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    std::vector<std::vector<std::byte>> inputs;
    for (int r = 0; r < size_; ++r) inputs.push_back(make_input(type, ReduceOp::sum, r, total));
    const std::vector<std::byte> reduced = reference_reduce(inputs, type, ReduceOp::sum);
    std::vector<std::byte> data = inputs[rank_];
    std::vector<std::byte> out(counts[rank_] * dtype_size(type));
    backend_->reducescatter(data, counts, type, ReduceOp::sum, out);
    const size_t first = std::accumulate(counts.begin(), counts.begin() + rank_, size_t{0});
    const auto begin = reduced.begin() + static_cast<std::ptrdiff_t>(first * dtype_size(type));
    const std::vector<std::byte> expected(begin, begin + static_cast<std::ptrdiff_t>(out.size()));
    EXPECT_EQ(first_difference(out, expected, type), "") << dtype_name(type);
  }
}

TEST_F(MpiRanks, AlltoallvUnevenBlocks) {
  // Rank s sends (s + 1) * (d + 1) bytes of value 16 * s + d to rank d.
  auto block = [](int from, int to) { return static_cast<size_t>((from + 1) * (to + 1)); };
  std::vector<size_t> send(size_);
  std::vector<size_t> receive(size_);
  std::vector<std::byte> in;
  for (int d = 0; d < size_; ++d) {
    send[d] = block(rank_, d);
    receive[d] = block(d, rank_);
    in.insert(in.end(), send[d], std::byte(16 * rank_ + d));
  }
  std::vector<std::byte> out(std::accumulate(receive.begin(), receive.end(), size_t{0}));
  backend_->alltoallv(in, send, out, receive);
  size_t offset = 0;
  for (int s = 0; s < size_; ++s) {
    for (size_t i = 0; i < receive[s]; ++i) EXPECT_EQ(out[offset + i], std::byte(16 * s + rank_));
    offset += receive[s];
  }
}

TEST_F(MpiRanks, BarrierAndAWorldThatIsNotMpis) {
  backend_->barrier();
  try {
    MpiBackend wrong(MpiPlugin::get(), rank_, size_ + 1);
    ADD_FAILURE() << "a kolo world larger than MPI's was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("mpirun"), std::string::npos) << error.what();
  }
}

// ctest's side: start this binary under mpirun and require every rank to pass every test above.
void run_under_mpirun(int ranks) {
#ifndef KOLO_MPI_PLUGIN_PATH
  GTEST_SKIP() << "the MPI plugin is not built";
#else
  if (under_mpirun()) GTEST_SKIP() << "already a rank";
  ::setenv("KOLO_MPI_PLUGIN", KOLO_MPI_PLUGIN_PATH, 1);
  std::array<char, 4096> self{};  // this binary (in the shell, /proc/self/exe is the shell)
  ASSERT_GT(::readlink("/proc/self/exe", self.data(), self.size() - 1), 0);
  // `timeout`: a hung rank fails the test instead of blocking ctest.
  const std::string command = "timeout 100 mpirun --allow-run-as-root --oversubscribe -np " +
                              std::to_string(ranks) + " '" + self.data() +
                              "' --gtest_color=no --gtest_filter='MpiRanks.*' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> chunk{};
  while (size_t n = std::fread(chunk.data(), 1, chunk.size(), pipe)) output.append(chunk.data(), n);
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  size_t passed = 0;
  for (size_t at = output.find("[  PASSED  ] 6 tests"); at != std::string::npos;
       at = output.find("[  PASSED  ] 6 tests", at + 1)) {
    ++passed;
  }
  EXPECT_EQ(passed, static_cast<size_t>(ranks)) << output;
  EXPECT_EQ(output.find("SKIPPED"), std::string::npos) << output;
#endif
}

TEST(MpiBackendUnderMpirun, TwoRanks) { run_under_mpirun(2); }
TEST(MpiBackendUnderMpirun, ThreeRanks) { run_under_mpirun(3); }

}  // namespace
}  // namespace kolo::backends
