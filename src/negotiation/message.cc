#include "negotiation/message.h"

namespace kolo::negotiation {

std::string_view op_type_name(OpType type) {
  switch (type) {
    case OpType::allreduce:
      return "allreduce";
    case OpType::allgather:
      return "allgather";
    case OpType::broadcast:
      return "broadcast";
    case OpType::barrier:
      return "barrier";
    case OpType::alltoall:
      return "alltoall";
    case OpType::reducescatter:
      return "reducescatter";
    case OpType::join:
      return "join";
    case OpType::process_set_add:
      return "add_process_set";
    case OpType::process_set_remove:
      return "remove_process_set";
  }
  return "unknown-op";
}

std::string_view user_reduce_op_name(UserReduceOp op) {
  switch (op) {
    case UserReduceOp::average:
      return "average";
    case UserReduceOp::sum:
      return "sum";
    case UserReduceOp::min:
      return "min";
    case UserReduceOp::max:
      return "max";
    case UserReduceOp::product:
      return "product";
    case UserReduceOp::adasum:
      return "adasum";
  }
  return "unknown-reduce-op";
}

int64_t Request::num_elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

}  // namespace kolo::negotiation
