// A stand-in GPU for the NCCL backend's tests: one library exporting both the CUDA runtime's and
// NCCL's functions (kolo loads it as each, so one log sees the order of every call). Device memory
// is host memory and every stream runs at once, so at nranks 1 each collective leaves the bytes a
// real GPU would. Streams and events get names (S1, S2, ... and E1, E2, ...) and every call is
// written to a log, one line each ("cudaStreamWaitEvent S1 E2", "ncclAllReduce n=8 type=7 op=0
// S1"), read with fake_gpu_log(). A communicator of more than one rank records only: a peer's
// block is left as it was. fake_gpu_fail(name, code) makes the next call of `name` answer `code`;
// fake_gpu_in_progress(polls, after) makes the next ncclGroupEnd (and ncclAllReduce) answer
// ncclInProgress, then `polls` polls of ncclCommGetAsyncError do too before answering `after`.
// fake_gpu_exit_in(name) ends the process (exit code 3) inside the next call of NCCL's `name`;
// fake_gpu_events_not_ready(n) makes the next n cudaEventQuery calls answer cudaErrorNotReady.
// With FAKE_GPU_SHARED_DIR set, communicators of several processes really communicate (see
// fake_gpu_shared.h): each collective is a rendezvous through a file mapped by all its ranks.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fake_gpu_shared.h"
#include "gpu/cuda_runtime.h"
#include "gpu/nccl_abi.h"

using namespace kolo::gpu;  // NOLINT: the fake's signatures read as CUDA's and NCCL's

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::string log_text;
std::map<const void*, std::string> handle_names;
int streams = 0;
int events = 0;
std::map<std::string, int> failures;  // function -> the code its next call answers
std::string exit_in;                  // the NCCL function whose call ends the process
int in_progress_polls = -1;           // -1: nothing scripted
int result_after_polls = ncclSuccess;
int unique_ids = 0;
int events_not_ready = 0;  // cudaEventQuery answers "not ready" this many more times
int premul_ops = 0;
std::map<int, double> premul_scalars;  // op -> scalar (float32/float64 only)
struct PendingSend {
  const void* data;
  size_t bytes;
};
std::vector<PendingSend> self_sends;
unsigned char uuid[16] = {0};

void record(const std::string& line) { log_text += line + "\n"; }

const std::string& name_of(const void* handle) {
  static const std::string unknown = "?";
  auto it = handle_names.find(handle);
  return it == handle_names.end() ? unknown : it->second;
}

int take_failure(const char* function) {
  auto it = failures.find(function);
  if (it == failures.end()) return 0;
  const int code = it->second;
  failures.erase(it);
  return code;
}

// nranks 1: the sum (or min, max, product, average) of one contribution is that contribution,
// times the PreMulSum scalar.
void reduce_one(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op) {
  if (send != recv) std::memmove(recv, send, count * nccl_type_size(type));
  auto scalar = premul_scalars.find(op);
  if (scalar == premul_scalars.end()) return;
  if (type == ncclFloat32) {
    auto* values = static_cast<float*>(recv);
    for (size_t i = 0; i < count; ++i) values[i] *= static_cast<float>(scalar->second);
  } else if (type == ncclFloat64) {
    auto* values = static_cast<double*>(recv);
    for (size_t i = 0; i < count; ++i) values[i] *= scalar->second;
  }
}

ncclResult_t nccl_answer(const char* function) {
  if (exit_in == function) std::_Exit(3);  // a rank dying inside the collective
  if (int code = take_failure(function)) return static_cast<ncclResult_t>(code);
  return ncclSuccess;
}

std::string stream_text(cudaStream_t stream) { return name_of(stream); }

fake_gpu::Comm& comm_of(ncclComm_t comm) { return *reinterpret_cast<fake_gpu::Comm*>(comm); }

// A shared communicator's reduction of `count` elements from `offset` of every rank's slot into
// `out`, in rank order (a PreMulSum's scalar multiplies each input first).
template <typename T>
void fold_typed(const fake_gpu::Comm& comm, size_t offset, size_t count, ncclRedOp_t op,
                void* out) {
  auto scalar = premul_scalars.find(op);
  auto* result = static_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) {
    T total{};
    for (int r = 0; r < comm.nranks; ++r) {
      T value = reinterpret_cast<const T*>(fake_gpu::slot(comm, r))[offset + i];
      if (scalar != premul_scalars.end()) value = static_cast<T>(value * scalar->second);
      if (r == 0) {
        total = value;
      } else if (op == ncclProd) {
        total *= value;
      } else if (op == ncclMax) {
        total = std::max(total, value);
      } else if (op == ncclMin) {
        total = std::min(total, value);
      } else {
        total += value;
      }
    }
    if (op == ncclAvg) total = static_cast<T>(total / comm.nranks);
    result[i] = total;
  }
}

bool fold(const fake_gpu::Comm& comm, size_t offset, size_t count, ncclDataType_t type,
          ncclRedOp_t op, void* out) {
  switch (type) {
    case ncclFloat32:
      fold_typed<float>(comm, offset, count, op, out);
      return true;
    case ncclFloat64:
      fold_typed<double>(comm, offset, count, op, out);
      return true;
    case ncclInt32:
      fold_typed<int32_t>(comm, offset, count, op, out);
      return true;
    case ncclInt64:
      fold_typed<int64_t>(comm, offset, count, op, out);
      return true;
    default:
      return false;
  }
}

// One rendezvous of a shared communicator: post `bytes` of `mine`, then `use` the slots.
template <typename Use>
ncclResult_t shared_call(fake_gpu::Comm& comm, const void* mine, size_t bytes, Use use) {
  if (!fake_gpu::post(comm, mine, bytes)) return ncclSystemError;
  const bool ok = use();
  if (!fake_gpu::finish(comm)) return ncclSystemError;
  return ok ? ncclSuccess : ncclInvalidArgument;
}

}  // namespace

// ---- the test's controls ----
EXPORT const char* fake_gpu_log() { return log_text.c_str(); }
EXPORT void fake_gpu_clear_log() { log_text.clear(); }
EXPORT void fake_gpu_fail(const char* function, int code) { failures[function] = code; }
EXPORT void fake_gpu_in_progress(int polls, int after) {
  in_progress_polls = polls;
  result_after_polls = after;
}
EXPORT void fake_gpu_exit_in(const char* function) { exit_in = function; }
EXPORT void fake_gpu_events_not_ready(int queries) { events_not_ready = queries; }
EXPORT void fake_gpu_set_uuid(const unsigned char* bytes) { std::memcpy(uuid, bytes, 16); }

// ---- the CUDA runtime ----
EXPORT const char* cudaGetErrorString(cudaError_t error) {
  return error == 2 ? "out of memory (fake)" : "fake CUDA error";
}
EXPORT cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 12080;
  return kCudaSuccess;
}
EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return kCudaSuccess;
}
EXPORT cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return kCudaSuccess;
}
EXPORT cudaError_t cudaSetDevice(int device) {
  if (int code = take_failure("cudaSetDevice")) return code;
  return device == 0 ? kCudaSuccess : 101;  // cudaErrorInvalidDevice
}
EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  *stream = reinterpret_cast<cudaStream_t>(new int(0));
  handle_names[*stream] = "S" + std::to_string(++streams);
  record("cudaStreamCreateWithFlags " + name_of(*stream) + " flags=" + std::to_string(flags));
  return kCudaSuccess;
}
EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  record("cudaStreamDestroy " + name_of(stream));
  handle_names.erase(stream);
  delete reinterpret_cast<int*>(stream);
  return kCudaSuccess;
}
EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (int code = take_failure("cudaStreamWaitEvent")) return code;
  record("cudaStreamWaitEvent " + name_of(stream) + " " + name_of(event));
  return kCudaSuccess;
}
EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  *event = reinterpret_cast<cudaEvent_t>(new int(0));
  handle_names[*event] = "E" + std::to_string(++events);
  record("cudaEventCreateWithFlags " + name_of(*event) + " flags=" + std::to_string(flags));
  return kCudaSuccess;
}
EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  record("cudaEventDestroy " + name_of(event));
  handle_names.erase(event);
  delete reinterpret_cast<int*>(event);
  return kCudaSuccess;
}
EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  record("cudaEventRecord " + name_of(event) + " " + stream_text(stream));
  return kCudaSuccess;
}
EXPORT cudaError_t cudaEventQuery(cudaEvent_t) {
  if (events_not_ready > 0) {
    --events_not_ready;
    return kCudaErrorNotReady;
  }
  return kCudaSuccess;
}
EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t) { return kCudaSuccess; }
EXPORT cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  if (int code = take_failure("cudaMalloc")) return code;
  *pointer = std::malloc(bytes == 0 ? 1 : bytes);
  record("cudaMalloc " + std::to_string(bytes));
  return kCudaSuccess;
}
EXPORT cudaError_t cudaFree(void* pointer) {
  std::free(pointer);
  record("cudaFree");
  return kCudaSuccess;
}
EXPORT cudaError_t cudaMemcpyAsync(void* destination, const void* source, size_t bytes, int kind,
                                   cudaStream_t stream) {
  std::memmove(destination, source, bytes);
  record("cudaMemcpyAsync " + std::to_string(bytes) + " kind=" + std::to_string(kind) + " " +
         stream_text(stream));
  return kCudaSuccess;
}
// cudaDeviceProp begins with char name[256], then the 16-byte cudaUUID_t.
EXPORT cudaError_t cudaGetDeviceProperties_v2(void* properties, int device) {
  if (device != 0) return 101;
  std::memcpy(properties, "Fake GPU", 9);
  std::memcpy(static_cast<char*>(properties) + 256, uuid, 16);
  return kCudaSuccess;
}

// ---- NCCL ----
EXPORT ncclResult_t ncclGetVersion(int* version) {
  *version = 22105;
  return ncclSuccess;
}
EXPORT const char* ncclGetErrorString(ncclResult_t) { return "fake NCCL error"; }
EXPORT const char* ncclGetLastError(ncclComm_t) { return "fake last error"; }
EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0, sizeof(id->internal));
  if (fake_gpu::shared_dir() != nullptr) {  // one file per communicator, named by its id
    std::snprintf(id->internal, sizeof(id->internal), "fake-%d-%d", static_cast<int>(getpid()),
                  ++unique_ids);
  } else {
    std::memcpy(id->internal, "fake-nccl-id", 12);
  }
  record("ncclGetUniqueId");
  return nccl_answer("ncclGetUniqueId");
}
EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t* config) {
  if (config == nullptr || config->blocking != 0) return ncclInvalidUsage;
  record("ncclCommInitRankConfig nranks=" + std::to_string(nranks) +
         " rank=" + std::to_string(rank) + " id=" + std::string(id.internal));
  *comm = reinterpret_cast<ncclComm_t>(fake_gpu::open_comm(nranks, rank, id.internal));
  return ncclInProgress;
}
EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* state) {
  if (in_progress_polls > 0) {
    --in_progress_polls;
    *state = ncclInProgress;
  } else if (in_progress_polls == 0) {
    in_progress_polls = -1;
    *state = static_cast<ncclResult_t>(result_after_polls);
  } else {
    *state = ncclSuccess;
  }
  return ncclSuccess;
}
EXPORT ncclResult_t ncclCommAbort(ncclComm_t) {
  record("ncclCommAbort");
  return ncclSuccess;
}
EXPORT ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*) {
  return ncclInternalError;
}
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t) { return ncclSuccess; }
EXPORT ncclResult_t ncclCommDestroy(ncclComm_t) { return ncclSuccess; }
EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                             ncclScalarResidence_t residence, ncclComm_t) {
  *op = static_cast<ncclRedOp_t>(ncclAvg + 1 + premul_ops++);
  std::string value;
  if (type == ncclFloat32) {
    premul_scalars[*op] = *static_cast<float*>(scalar);
    value = std::to_string(*static_cast<float*>(scalar));
  } else if (type == ncclFloat64) {
    premul_scalars[*op] = *static_cast<double*>(scalar);
    value = std::to_string(*static_cast<double*>(scalar));
  } else {
    value = "bits:" + std::to_string(*static_cast<uint16_t*>(scalar));
  }
  record("ncclRedOpCreatePreMulSum type=" + std::to_string(type) + " scalar=" + value +
         " residence=" + std::to_string(residence) + " op=" + std::to_string(*op));
  return nccl_answer("ncclRedOpCreatePreMulSum");
}
EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t) {
  record("ncclRedOpDestroy op=" + std::to_string(op));
  premul_scalars.erase(op);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  record("ncclAllReduce n=" + std::to_string(count) + " type=" + std::to_string(type) +
         " op=" + std::to_string(op) + (send == recv ? " in-place " : " ") + stream_text(stream));
  if (ncclResult_t failed = nccl_answer("ncclAllReduce")) return failed;
  fake_gpu::Comm& c = comm_of(comm);
  if (c.area != nullptr) {
    return shared_call(c, send, count * nccl_type_size(type),
                       [&] { return fold(c, 0, count, type, op, recv); });
  }
  if (c.nranks == 1) reduce_one(send, recv, count, type, op);
  if (in_progress_polls >= 0) return ncclInProgress;
  return ncclSuccess;
}
EXPORT ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                                  int root, ncclComm_t comm, cudaStream_t stream) {
  record("ncclBroadcast n=" + std::to_string(count) + " type=" + std::to_string(type) +
         " root=" + std::to_string(root) + " " + stream_text(stream));
  if (ncclResult_t failed = nccl_answer("ncclBroadcast")) return failed;
  fake_gpu::Comm& c = comm_of(comm);
  const size_t bytes = count * nccl_type_size(type);
  if (c.area != nullptr) {
    return shared_call(c, send, root == c.rank ? bytes : 0, [&] {
      std::memmove(recv, fake_gpu::slot(c, root), bytes);
      return true;
    });
  }
  if (root == c.rank && send != recv) std::memmove(recv, send, bytes);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type,
                                  ncclComm_t comm, cudaStream_t stream) {
  record("ncclAllGather n=" + std::to_string(count) + " type=" + std::to_string(type) + " " +
         stream_text(stream));
  if (ncclResult_t failed = nccl_answer("ncclAllGather")) return failed;
  const size_t bytes = count * nccl_type_size(type);
  fake_gpu::Comm& c = comm_of(comm);
  if (c.area != nullptr) {
    return shared_call(c, send, bytes, [&] {
      for (int r = 0; r < c.nranks; ++r) {
        std::memmove(static_cast<char*>(recv) + r * bytes, fake_gpu::slot(c, r), bytes);
      }
      return true;
    });
  }
  std::memmove(static_cast<char*>(recv) + c.rank * bytes, send, bytes);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  record("ncclReduce n=" + std::to_string(count) + " type=" + std::to_string(type) +
         " op=" + std::to_string(op) + " root=" + std::to_string(root) +
         (recv == nullptr ? " recv=null " : " ") + stream_text(stream));
  if (ncclResult_t failed = nccl_answer("ncclReduce")) return failed;
  fake_gpu::Comm& c = comm_of(comm);
  if (c.area != nullptr) {
    return shared_call(c, send, count * nccl_type_size(type),
                       [&] { return root != c.rank || fold(c, 0, count, type, op, recv); });
  }
  if (root == c.rank && c.nranks == 1) reduce_one(send, recv, count, type, op);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count,
                                      ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) {
  record("ncclReduceScatter n=" + std::to_string(count) + " type=" + std::to_string(type) +
         " op=" + std::to_string(op) + " " + stream_text(stream));
  if (ncclResult_t failed = nccl_answer("ncclReduceScatter")) return failed;
  fake_gpu::Comm& c = comm_of(comm);
  if (c.area != nullptr) {
    return shared_call(c, send, count * static_cast<size_t>(c.nranks) * nccl_type_size(type), [&] {
      return fold(c, count * static_cast<size_t>(c.rank), count, type, op, recv);
    });
  }
  if (c.nranks == 1) reduce_one(send, recv, count, type, op);
  return ncclSuccess;
}
EXPORT ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                             ncclComm_t comm, cudaStream_t stream) {
  record("ncclSend n=" + std::to_string(count) + " peer=" + std::to_string(peer) + " " +
         stream_text(stream));
  if (ncclResult_t failed = nccl_answer("ncclSend")) return failed;
  if (peer == comm_of(comm).rank) self_sends.push_back({send, count * nccl_type_size(type)});
  return ncclSuccess;
}
EXPORT ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer,
                             ncclComm_t comm, cudaStream_t stream) {
  record("ncclRecv n=" + std::to_string(count) + " peer=" + std::to_string(peer) + " " +
         stream_text(stream));
  if (ncclResult_t failed = nccl_answer("ncclRecv")) return failed;
  if (peer == comm_of(comm).rank && !self_sends.empty()) {
    std::memmove(recv, self_sends.front().data,
                 std::min(self_sends.front().bytes, count * nccl_type_size(type)));
    self_sends.erase(self_sends.begin());
  }
  return ncclSuccess;
}
EXPORT ncclResult_t ncclGroupStart() {
  record("ncclGroupStart");
  return ncclSuccess;
}
EXPORT ncclResult_t ncclGroupEnd() {
  record("ncclGroupEnd");
  if (ncclResult_t failed = nccl_answer("ncclGroupEnd")) return failed;
  return in_progress_polls >= 0 ? ncclInProgress : ncclSuccess;
}
