#include "gpu/nccl_library.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kolo::gpu {

namespace {

std::vector<std::string> resolve_all(void* handle, NcclFunctions& f) {
  std::vector<std::string> missing;
  resolve_symbol(handle, "ncclGetVersion", f.get_version, missing);
  resolve_symbol(handle, "ncclGetErrorString", f.get_error_string, missing);
  resolve_symbol(handle, "ncclGetLastError", f.get_last_error, missing);
  resolve_symbol(handle, "ncclGetUniqueId", f.get_unique_id, missing);
  resolve_symbol(handle, "ncclCommInitRankConfig", f.comm_init_rank_config, missing);
  resolve_symbol(handle, "ncclCommSplit", f.comm_split, missing);
  resolve_symbol(handle, "ncclCommFinalize", f.comm_finalize, missing);
  resolve_symbol(handle, "ncclCommDestroy", f.comm_destroy, missing);
  resolve_symbol(handle, "ncclCommAbort", f.comm_abort, missing);
  resolve_symbol(handle, "ncclCommGetAsyncError", f.comm_get_async_error, missing);
  resolve_symbol(handle, "ncclAllReduce", f.all_reduce, missing);
  resolve_symbol(handle, "ncclBroadcast", f.broadcast, missing);
  resolve_symbol(handle, "ncclAllGather", f.all_gather, missing);
  resolve_symbol(handle, "ncclReduce", f.reduce, missing);
  resolve_symbol(handle, "ncclReduceScatter", f.reduce_scatter, missing);
  resolve_symbol(handle, "ncclSend", f.send, missing);
  resolve_symbol(handle, "ncclRecv", f.recv, missing);
  resolve_symbol(handle, "ncclGroupStart", f.group_start, missing);
  resolve_symbol(handle, "ncclGroupEnd", f.group_end, missing);
  resolve_symbol(handle, "ncclRedOpCreatePreMulSum", f.red_op_create_pre_mul_sum, missing);
  resolve_symbol(handle, "ncclRedOpDestroy", f.red_op_destroy, missing);
  return missing;
}

std::string code_to_string(int code) {
  return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
}

}  // namespace

std::string NcclStatus::version_string() const {
  return version > 0 ? code_to_string(version) : std::string("unknown");
}

std::string NcclStatus::describe() const {
  if (loaded) return fmt::format("{} ({}, {})", version_string(), path, origin);
  return reason;
}

std::vector<LibraryCandidate> nccl_candidates(const EnvLookup& lookup,
                                              const std::string& system_name) {
  using How = LibraryCandidate::How;
  std::vector<LibraryCandidate> candidates{
      {How::already_loaded, kNcclSoname, "already loaded by the process"}};
  if (auto file = find_setting(lookup, "NCCL_LIBRARY")) {
    candidates.push_back({How::explicit_path, file->value, file->variable});
  } else if (auto lib = find_setting(lookup, "NCCL_LIB")) {
    candidates.push_back({How::explicit_path, lib->value + "/" + kNcclSoname, lib->variable});
  } else if (auto home = find_setting(lookup, "NCCL_HOME")) {
    candidates.push_back({How::explicit_path, home->value + "/lib/" + kNcclSoname, home->variable});
  }
  candidates.push_back({How::search, system_name, "the system's dynamic linker search"});
  return candidates;
}

NcclLibrary load_nccl(const std::vector<LibraryCandidate>& candidates) {
  NcclLibrary library;
  NcclStatus& status = library.status;
  const LibrarySearch search = open_first(candidates);
  if (!search.found) {
    status.reason = fmt::format(
        "NCCL not found: {}. CUDA tensors use the host path. torch's CUDA wheels bring NCCL "
        "(nvidia-nccl-cu12/cu13); or set KOLO_NCCL_LIBRARY to a libnccl.so.2",
        search.reasons_text());
    return library;
  }
  status.path = search.library.path;
  status.origin = search.library.origin;
  void* handle = search.library.handle;
  NcclFunctions& f = library.functions;
  std::vector<std::string> unused;
  resolve_symbol(handle, "ncclGetVersion", f.get_version, unused);
  int version = 0;
  if (f.get_version == nullptr || f.get_version(&version) != ncclSuccess) {
    status.reason = fmt::format("{} ({}) is not a usable NCCL: ncclGetVersion {}", status.path,
                                status.origin, f.get_version == nullptr ? "is missing" : "failed");
    return library;
  }
  status.version = version;
  if (version < kMinimumNcclVersion) {
    status.reason = fmt::format("NCCL {} at {} ({}) is too old: kolo needs {} or newer",
                                code_to_string(version), status.path, status.origin,
                                code_to_string(kMinimumNcclVersion));
    return library;
  }
  const std::vector<std::string> missing = resolve_all(handle, f);
  if (!missing.empty()) {
    status.reason = fmt::format("NCCL {} at {} ({}) lacks {}", code_to_string(version), status.path,
                                status.origin, fmt::join(missing, ", "));
    return library;
  }
  status.loaded = true;
  return library;
}

const NcclLibrary& nccl_library() {
  static const NcclLibrary library = load_nccl(nccl_candidates(process_env_lookup()));
  return library;
}

std::string nccl_error_text(const NcclLibrary& library, ncclResult_t result) {
  const char* text = library.functions.get_error_string != nullptr
                         ? library.functions.get_error_string(result)
                         : nullptr;
  return fmt::format("{} (ncclResult_t {})", text != nullptr ? text : "unknown NCCL error",
                     static_cast<int>(result));
}

}  // namespace kolo::gpu
