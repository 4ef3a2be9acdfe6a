// Finding and loading libkolo_mpi.so, the MPI plugin (backends/mpi/), at run time: libkolo never
// links MPI, so a build or a machine without MPI runs everything else unchanged. The plugin is
// looked for next to libkolo.so (where pip installs it), or at KOLO_MPI_PLUGIN when set.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "backends/mpi/plugin_abi.h"

namespace kolo::backends {

inline constexpr const char* kMpiPluginFile = "libkolo_mpi.so";

// Where the plugin is looked for, in order.
std::vector<std::string> mpi_plugin_candidates();

class MpiPlugin {
 public:
  // The process's plugin, loaded on first use and kept to exit (MPI is initialized at most once
  // per process and finalized by the plugin at exit). Throws Error saying where kolo looked, why
  // loading failed, and what to install.
  static const MpiPlugin& get();
  // Whether the plugin exists and loads (hvd.mpi_built()); never throws.
  static bool available();

  // MPI_Init_thread once (later calls only report); returns the thread level 0..3 (3: multiple).
  // From then on a process exiting with a non-zero status skips MPI_Finalize, which would wait
  // for every other rank, so that mpirun sees the failure at once and ends the job.
  int initialize() const;
  // (rank, size) in MPI_COMM_WORLD; needs initialize().
  [[nodiscard]] std::pair<int, int> world() const;
  [[nodiscard]] std::string library_version() const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const KoloMpiPluginV1& table() const { return *table_; }

  // Throws Error("<what>: <plugin message>") when `result` is a failure; UnsupportedOperation when
  // the plugin lacks the type or reduction (KOLO_MPI_UNSUPPORTED), which fails only the tensor.
  static void check(int result, const KoloMpiError& error, const std::string& what);

 private:
  MpiPlugin(std::string path, const KoloMpiPluginV1* table)
      : path_(std::move(path)), table_(table) {}
  std::string path_;
  const KoloMpiPluginV1* table_;
};

}  // namespace kolo::backends
