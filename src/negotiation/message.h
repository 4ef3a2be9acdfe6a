// What ranks tell the coordinator (Request) and what it answers (Response). A Request describes
// one named collective submitted on one rank; a Response tells every rank to run one collective
// on one or more tensors (by name), in the order of the response list, or to fail them with an
// error that names the tensor, the ranks and the differing values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/types.h"

namespace kolo::negotiation {

// Values are part of the wire protocol: append only.
enum class OpType : uint8_t {
  allreduce = 0,
  allgather = 1,
  broadcast = 2,
  barrier = 3,
  alltoall = 4,
  reducescatter = 5,
  join = 6,
  // Collective over all ranks of the global set: registers (add) or drops (remove) a process set.
  // Its arguments travel in `args` (see Request::args); core/session_control.cc applies them.
  process_set_add = 7,
  process_set_remove = 8,
};
std::string_view op_type_name(OpType type);

// Reduction as the user names it (Average included); the executor maps it onto ReduceOp.
enum class UserReduceOp : uint8_t {
  average = 0,
  sum = 1,
  min = 2,
  max = 3,
  product = 4,
  adasum = 5
};
std::string_view user_reduce_op_name(UserReduceOp op);

// cuda_through_host: a CUDA tensor on the asynchronous host path (kolo/torch/staging.py): its
// bytes are in host memory and the collective runs there, but it is still a CUDA tensor for the
// mismatch checks, so a rank that passes a CPU tensor where its peers pass CUDA ones fails them all
// (Horovod's "Mismatched CPU/GPU device") instead of agreeing silently.
enum class DeviceKind : uint8_t { cpu = 0, cuda = 1, cuda_through_host = 2 };

struct Request {
  int32_t rank = 0;  // submitting rank (within the process set)
  std::string name;
  OpType op = OpType::allreduce;
  UserReduceOp reduce_op = UserReduceOp::sum;
  DataType dtype = DataType::float32;
  std::vector<int64_t> shape;
  int32_t root = 0;  // broadcast only
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t process_set = 0;
  DeviceKind device = DeviceKind::cpu;
  int32_t device_index = -1;
  // alltoall: rows of the first dimension sent to each rank, in rank order (empty: an even split).
  std::vector<int64_t> splits;
  // Grouped ops: the members of one group carry the same non-zero id and the group's size; the
  // coordinator releases a group only once every member is ready on every rank.
  int32_t group_id = 0;
  int32_t group_size = 0;
  // The arguments of a control operation (empty for collectives):
  //   process_set_add: the set's ranks, ascending;
  //   process_set_remove: {set id, busy}, busy = 1 when this rank still has operations pending
  //   on the set (the coordinator then refuses the removal on every rank);
  //   join: none.
  std::vector<int64_t> args;
  // Non-empty: this rank's caller got the arguments wrong (found before sending: splits that do
  // not fit the tensor, a reduction reducescatter lacks, ...) and was told so at once; the
  // request still goes to the coordinator, which fails the name on every rank with this message,
  // so the other ranks get an error instead of waiting for this one forever.
  std::string invalid;

  [[nodiscard]] int64_t num_elements() const;
  bool operator==(const Request&) const = default;
};

// Everything a rank sends the coordinator in one cycle.
struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;  // this rank is shutting down
  bool operator==(const RequestList&) const = default;
};

struct Response {
  OpType op = OpType::allreduce;
  std::vector<std::string> names;  // one or more tensors, executed together
  UserReduceOp reduce_op = UserReduceOp::sum;
  DataType dtype = DataType::float32;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t process_set = 0;
  DeviceKind device = DeviceKind::cpu;
  // allgather: first dimension of names[i] on rank r at first_dims[i * size + r].
  std::vector<int64_t> first_dims;
  // Non-empty: the op failed on every rank with this message (mismatch, shutdown, ...).
  std::string error;
  // The tensor's shape as submitted (allreduce, barrier: what a joined rank, which never submitted
  // the tensor, needs to take part with zeros).
  std::vector<int64_t> shape;
  // The agreed arguments of a control operation (empty for collectives):
  //   process_set_add: the set's ranks; process_set_remove: {set id};
  //   join: {the rank that joined last} (what hvd.join() returns).
  std::vector<int64_t> args;
  // alltoall: rows rank r sends rank d for names[i] at splits[(i * size + r) * size + d].
  std::vector<int64_t> splits;
  // Grouped ops: the group's id (0: not grouped); the response names every member.
  int32_t group_id = 0;
  bool operator==(const Response&) const = default;
};

// Values the autotuner on rank 0 chose; every rank applies them in the cycle whose ResponseList
// carries them, so all ranks switch together.
struct TunedParameters {
  double cycle_time_ms = 1.0;
  uint64_t fusion_threshold = 0;  // bytes
  bool cache_enabled = true;
  bool final = false;  // the search is over: these stay
  bool operator==(const TunedParameters&) const = default;
};

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;                // every rank stops its background loop after this cycle
  std::vector<int32_t> shutdown_ranks;  // with shutdown: the ranks that announced it
  std::optional<TunedParameters> parameters;  // autotune: switch to these after this cycle
  bool operator==(const ResponseList&) const = default;
};

}  // namespace kolo::negotiation
