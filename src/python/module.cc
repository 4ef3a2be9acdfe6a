// kolo._core: the nanobind module, and the only place where C++ meets Python. Arrays cross as
// DLPack (nb::ndarray): pointer, shape, dtype and device; kolo is never compiled against a
// framework. The Python layer keeps inputs and outputs referenced until their handle completes;
// nothing here touches Python objects without the GIL, and every blocking wait releases it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>

#include "backends/mpi_plugin.h"
#include "base/errors.h"
#include "core/launcher_watch.h"
#include "core/runtime.h"
#include "gpu/cuda_ipc.h"
#include "gpu/cuda_runtime.h"
#include "gpu/nccl_library.h"
#include "python/device_sync.h"
#include "python/dlpack_types.h"
#include "python/enqueue.h"

namespace nb = nanobind;

namespace kolo::python {

namespace {

using core::HandleId;
using core::runtime;

// What gpu/ found for NCCL or the CUDA runtime (NcclStatus, CudaStatus), as a dict.
template <typename Status>
nb::dict library_status(const Status& status) {
  nb::dict d;
  d["loaded"] = status.loaded;
  d["version"] = status.version;
  d["version_string"] = status.version_string();
  d["path"] = status.path;
  d["origin"] = status.origin;
  d["reason"] = status.reason;
  d["describe"] = status.describe();
  return d;
}

// An output the runtime allocated (allgather, alltoall, reducescatter), as an array of the
// caller's framework that owns its memory (zero-copy; nanobind imports the framework at run time,
// kolo is not built against it).
nb::object as_array(const core::OwnedBuffer& buffer, bool as_torch) {
  if (!buffer.data) return nb::none();
  auto* keep = new std::shared_ptr<std::byte[]>(buffer.data);
  nb::capsule owner(keep,
                    [](void* p) noexcept { delete static_cast<std::shared_ptr<std::byte[]>*>(p); });
  std::vector<size_t> shape(buffer.shape.begin(), buffer.shape.end());
  const auto dtype = dlpack_from_dtype(buffer.dtype);
  if (as_torch) {
    return nb::cast(nb::ndarray<nb::pytorch>(buffer.data.get(), shape.size(), shape.data(), owner,
                                             nullptr, dtype));
  }
  return nb::cast(
      nb::ndarray<nb::numpy>(buffer.data.get(), shape.size(), shape.data(), owner, nullptr, dtype));
}

nb::object take_output(HandleId handle, bool as_torch) {
  return as_array(runtime().release(handle), as_torch);
}

// alltoall: (received rows, rows received from each rank).
nb::tuple take_alltoall_output(HandleId handle, bool as_torch) {
  core::OwnedBuffer buffer = runtime().release(handle);
  return nb::make_tuple(as_array(buffer, as_torch), buffer.received_splits);
}

}  // namespace

// How often a blocking wait lets Python look for a pending signal: a Ctrl-C is answered within
// this, and an operation that completes sooner never pays for it.
constexpr std::chrono::milliseconds kSignalCheckInterval{100};

// Waits for `handle` with the GIL released, in slices; between them runs Python's signal
// handlers, so Ctrl-C during a blocking collective (a peer that never submits it, a long
// transfer) raises KeyboardInterrupt in the main thread. Horovod's wait ignores signals until
// the operation ends, which with a stuck peer is the peer timeout or never.
void wait_interruptibly(HandleId handle) {
  // Waiting between the slices too, for the deadlock watch (HandleTable::begin_caller_wait).
  struct CallerWait {
    CallerWait() { runtime().begin_caller_wait(); }
    ~CallerWait() { runtime().end_caller_wait(); }
    CallerWait(const CallerWait&) = delete;
    CallerWait& operator=(const CallerWait&) = delete;
  } waiting;
  for (;;) {
    bool done = false;
    {
      nb::gil_scoped_release unlocked;
      done = runtime().wait_for(handle, kSignalCheckInterval);
    }
    if (done) return;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
  }
}

}  // namespace kolo::python

NB_MODULE(_core, m) {
  using namespace kolo::python;
  m.doc() = "kolo's C++ runtime (framework-free; arrays cross through DLPack)";
  // From the import on, a rank whose kolorun is killed ends too (before init() as well).
  kolo::core::end_with_launcher(kolo::process_env_lookup());

  // Horovod's classes: a failure between ranks (mismatch, dead peer, shutdown) is a
  // HorovodInternalError, a RuntimeError; a bad argument found before anything is sent is a
  // ValueError (Horovod's std::invalid_argument). nanobind tries the translator registered last
  // first, so InvalidArgument (a kolo::Error) must come after Error.
  nb::exception<kolo::Error>(m, "KoloError", PyExc_RuntimeError);
  nb::exception<kolo::InvalidArgument>(m, "KoloValueError", PyExc_ValueError);
  // Elastic: the launcher's round leaves this worker out (its host was removed). Deliberately
  // not a KoloError (HorovodInternalError), which elastic.run would answer with another reset:
  // the worker is meant to end with exit code 0.
  nb::exception<kolo::WorkerRemovedError>(m, "WorkerRemovedError", PyExc_Exception);

  // init(dynamic_process_sets=None): what the program passes wins over the environment.
  m.def(
      "init",
      [](std::optional<bool> dynamic_process_sets) {
        kolo::core::runtime().init({.dynamic_process_sets = dynamic_process_sets});
      },
      nb::kw_only(), nb::arg("dynamic_process_sets").none() = nb::none(),
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "shutdown", [] { kolo::core::runtime().shutdown(); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("is_initialized", [] { return kolo::core::runtime().initialized(); });
  // Elastic training (docs/elastic_protocol.md).
  m.def("elastic_round", [] { return kolo::core::runtime().elastic_round(); });
  m.def(
      "elastic_hosts_updated", [] { return kolo::core::runtime().elastic_hosts_updated(); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "elastic_commit", [](int64_t commits) { kolo::core::runtime().elastic_commit(commits); },
      nb::arg("commits"), nb::call_guard<nb::gil_scoped_release>());
  m.def("rank", [] { return kolo::core::runtime().world().rank; });
  m.def("size", [] { return kolo::core::runtime().world().size; });
  m.def("local_rank", [] { return kolo::core::runtime().world().local_rank; });
  m.def("local_size", [] { return kolo::core::runtime().world().local_size; });
  m.def("cross_rank", [] { return kolo::core::runtime().world().cross_rank; });
  m.def("cross_size", [] { return kolo::core::runtime().world().cross_size; });
  // What placement did at init (core/rank_placement.h): {"cpus", "job_cpus", "threads" (None:
  // leave the framework's count), "summary"}.
  m.def("placement", [] {
    const kolo::core::RankPlacement placement = kolo::core::runtime().placement();
    nb::dict result;
    result["cpus"] = placement.cpus;
    result["job_cpus"] = placement.job_cpus;
    result["threads"] = placement.threads ? nb::object(nb::int_(*placement.threads)) : nb::none();
    result["summary"] = placement.summary;
    return result;
  });

  bind_enqueue(m);
  bind_device_sync(m);
  // Process sets and join: collective over all ranks; they block, so the GIL is released.
  m.def(
      "add_process_set",
      [](std::vector<int> ranks, bool during_init) {
        return kolo::core::runtime().add_process_set(std::move(ranks), during_init);
      },
      nb::arg("ranks"), nb::arg("during_init") = false, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "remove_process_set", [](int32_t id) { return kolo::core::runtime().remove_process_set(id); },
      nb::arg("id"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "process_set_ranks", [](int32_t id) { return kolo::core::runtime().process_set_ranks(id); },
      nb::arg("id"));
  m.def("process_set_ids", [] { return kolo::core::runtime().process_set_ids(); });
  // join waits like synchronize(): Ctrl-C ends the wait (the join request stays with the
  // runtime, as an interrupted operation does).
  m.def(
      "join",
      [](int device) {
        const HandleId handle = [device] {
          nb::gil_scoped_release unlocked;
          return runtime().request_join(device);
        }();
        try {
          wait_interruptibly(handle);
        } catch (const kolo::Error&) {
          // take_number() below rethrows it and releases the handle.
        }
        nb::gil_scoped_release unlocked;
        return static_cast<int>(runtime().take_number(handle));
      },
      nb::arg("device") = -1);
  m.def("poll", [](kolo::core::HandleId h) { return kolo::core::runtime().poll(h); });
  // Done without a failure, the handle kept (kolo.torch's shared GPU path reads the results of
  // several done handshakes at once; each is still synchronized later).
  m.def("succeeded", [](kolo::core::HandleId h) { return kolo::core::runtime().succeeded(h); });
  m.def("callers_drive", [] { return kolo::core::runtime().callers_drive(); });
  m.def("wait", &wait_interruptibly);
  // wait() then release() in one call, for operations without a runtime-allocated output: the
  // handle is forgotten whether the operation succeeded or failed (and then raises). Not after
  // a Ctrl-C: the operation still runs and may write the caller's arrays, which the Python
  // layer keeps referenced while the handle exists.
  m.def("finish", [](kolo::core::HandleId h) {
    // Done already (all but the first few of a batch of async ops): forgotten under one lock,
    // without giving up the GIL and taking it back (a round trip through the GIL's condition
    // variable per handle). The check registers no waiter: see HandleTable::release_if_done.
    if (kolo::core::runtime().release_if_done(h)) return;
    try {
      wait_interruptibly(h);
    } catch (const kolo::Error&) {
      (void)kolo::core::runtime().release(h);
      throw;
    }
    (void)kolo::core::runtime().release(h);
  });
  m.def("take_output", &take_output, nb::arg("handle"), nb::arg("as_torch") = false);
  m.def("take_alltoall_output", &take_alltoall_output, nb::arg("handle"),
        nb::arg("as_torch") = false);
  m.def("stats", [] {
    auto s = kolo::core::runtime().stats();
    nb::dict d;
    d["cycles"] = s.cycles;
    d["fast_cycles"] = s.fast_cycles;
    d["full_exchanges"] = s.full_exchanges;
    d["driven_cycles"] = s.driven_cycles;
    d["cache_hits"] = s.cache_hits;
    d["cache_entries"] = s.cache_entries;
    d["cache_capacity"] = s.cache_capacity;
    d["negotiation_us"] = s.negotiation_us;
    d["fused_groups"] = s.fused_groups;
    d["fused_tensors"] = s.fused_tensors;
    d["autotuning"] = s.tuning.autotuning;
    d["fusion_threshold"] = s.tuning.current.fusion_threshold;
    d["cycle_time_ms"] = s.tuning.current.cycle_time_ms;
    d["cache_enabled"] = s.tuning.current.cache_enabled;
    return d;
  });
  m.def(
      "start_timeline",
      [](const std::string& path, bool mark_cycles) {
        kolo::core::runtime().start_timeline(path, mark_cycles);
      },
      nb::arg("file_path"), nb::arg("mark_cycles") = false);
  m.def(
      "stop_timeline", [] { kolo::core::runtime().stop_timeline(); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("config", [] {
    auto c = kolo::core::runtime().config();
    nb::dict d;
    d["cycle_time_ms"] = static_cast<double>(c.cycle_time.count()) / 1000.0;
    d["fusion_threshold"] = c.fusion_threshold;
    d["cache_capacity"] = c.cache_capacity;
    d["peer_timeout_s"] = static_cast<double>(c.peer_timeout.count()) / 1000.0;
    d["cpu_operations"] = std::string(kolo::backends::cpu_operations_name(c.cpu_operations));
    d["dynamic_process_sets"] = c.dynamic_process_sets;
    return d;
  });

  // What this build contains, for hvd.mpi_built() / nccl_built() / gloo_built(): collectives run
  // on kolo's own transports (the role Horovod's Gloo plays) or, when chosen, on MPI through the
  // plugin; NCCL is loaded at run time (gpu/), never linked. Adasum runs on kolo's
  // transports (comm/adasum.cc). MPI_BUILT: the plugin exists and loads (a dlopen of about 2 ms;
  // MPI itself is only initialized when a job needs it).
  m.attr("MPI_BUILT") = kolo::backends::MpiPlugin::available();
  // MPI's thread support, 0 (single) to 3 (multiple); initializes MPI when it is not yet.
  m.def(
      "mpi_thread_level", [] { return kolo::backends::MpiPlugin::get().initialize(); },
      nb::call_guard<nb::gil_scoped_release>());
  m.attr("VERSION") = KOLO_VERSION_STRING;  // the file VERSION, through CMake: kolo.__version__
  // NCCL_BUILT: this build has the backend that runs CUDA tensors' collectives in NCCL
  // (core/executor_device.cc; kolo/torch/nccl_submit.py submits to it). Whether NCCL and the CUDA
  // runtime are in reach of this process is nccl_status() / cuda_status(): found with dlopen on the
  // first call (gpu/), so call them after importing torch, whose CUDA build loads its own copies
  // (those are the ones kolo uses).
  m.attr("NCCL_BUILT") = true;
  m.attr("CUDA_BUILT") = false;
  m.def("nccl_status", [] { return library_status(kolo::gpu::nccl_library().status); });
  m.def("cuda_status", [] { return library_status(kolo::gpu::cuda_runtime().status); });
  // CUDA IPC for ranks sharing one GPU (kolo/torch/shared_gpu.py): mailboxes this rank exports,
  // its peers' mapped into this process. Pointers travel as integers.
  m.def("cuda_ipc_unavailable",
        [] { return kolo::gpu::cuda_ipc_unavailable(kolo::gpu::cuda_runtime()); });
  m.def("cuda_ipc_export", [](int device, size_t bytes) {
    const auto exported = kolo::gpu::export_device_memory(kolo::gpu::cuda_runtime(), device, bytes);
    return nb::make_tuple(exported.pointer,
                          nb::bytes(exported.handle.data(), exported.handle.size()));
  });
  m.def("cuda_ipc_import", [](int device, const nb::bytes& handle) {
    return kolo::gpu::import_device_memory(kolo::gpu::cuda_runtime(), device,
                                           std::string(handle.c_str(), handle.size()));
  });
  m.def("cuda_ipc_close", [](int device, std::uintptr_t pointer) {
    kolo::gpu::close_imported_memory(kolo::gpu::cuda_runtime(), device, pointer);
  });
  m.def("cuda_ipc_free", [](int device, std::uintptr_t pointer) {
    kolo::gpu::free_exported_memory(kolo::gpu::cuda_runtime(), device, pointer);
  });
  m.attr("GLOO_BUILT") = true;
  m.attr("ADASUM_BUILT") = true;

  // Op and reduction codes, shared with the Python layer so it never hard-codes numbers.
  m.attr("OP_ALLREDUCE") = static_cast<int>(kolo::negotiation::OpType::allreduce);
  m.attr("OP_ALLGATHER") = static_cast<int>(kolo::negotiation::OpType::allgather);
  m.attr("OP_BROADCAST") = static_cast<int>(kolo::negotiation::OpType::broadcast);
  m.attr("OP_BARRIER") = static_cast<int>(kolo::negotiation::OpType::barrier);
  m.attr("OP_ALLTOALL") = static_cast<int>(kolo::negotiation::OpType::alltoall);
  m.attr("OP_REDUCESCATTER") = static_cast<int>(kolo::negotiation::OpType::reducescatter);
  // DataType codes for enqueue_pointers (base/types.h).
  m.attr("DTYPE_UINT8") = static_cast<int>(kolo::DataType::uint8);
  m.attr("DTYPE_INT8") = static_cast<int>(kolo::DataType::int8);
  m.attr("DTYPE_INT16") = static_cast<int>(kolo::DataType::int16);
  m.attr("DTYPE_INT32") = static_cast<int>(kolo::DataType::int32);
  m.attr("DTYPE_INT64") = static_cast<int>(kolo::DataType::int64);
  m.attr("DTYPE_FLOAT16") = static_cast<int>(kolo::DataType::float16);
  m.attr("DTYPE_BFLOAT16") = static_cast<int>(kolo::DataType::bfloat16);
  m.attr("DTYPE_FLOAT32") = static_cast<int>(kolo::DataType::float32);
  m.attr("DTYPE_FLOAT64") = static_cast<int>(kolo::DataType::float64);
  m.attr("DTYPE_BOOL") = static_cast<int>(kolo::DataType::boolean);
  m.attr("REDUCE_AVERAGE") = static_cast<int>(kolo::negotiation::UserReduceOp::average);
  m.attr("REDUCE_SUM") = static_cast<int>(kolo::negotiation::UserReduceOp::sum);
  m.attr("REDUCE_MIN") = static_cast<int>(kolo::negotiation::UserReduceOp::min);
  m.attr("REDUCE_MAX") = static_cast<int>(kolo::negotiation::UserReduceOp::max);
  m.attr("REDUCE_PRODUCT") = static_cast<int>(kolo::negotiation::UserReduceOp::product);
  m.attr("REDUCE_ADASUM") = static_cast<int>(kolo::negotiation::UserReduceOp::adasum);
}
