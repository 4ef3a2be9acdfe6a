#include "backends/mpi_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "base/env.h"
#include "base/errors.h"

namespace kolo::backends {

namespace {

struct LoadResult {
  std::optional<MpiPlugin> plugin;
  std::string failure;  // why not, when !plugin
};

std::string directory_of(const std::string& file) {
  return std::filesystem::path(file).parent_path().string();
}

// Runs at exit before the plugin's MPI_Finalize (exit handlers run in reverse order of
// registration, and this one is registered after MPI_Init). MPI_Finalize waits for every rank: a
// rank ending in failure (an uncaught Python exception, sys.exit(1)) while its peers compute or
// sleep would wait there, alive, until they finished, and mpirun would learn of the failure only
// then. Leaving without it lets mpirun end the job at once, as it does for Horovod's ranks, which
// finalize MPI together at shutdown. A rank ending normally still finalizes (and waits).
[[maybe_unused]] void leave_without_finalize_when_failing(int status, void* /*unused*/) {
  if (status == 0) return;
  std::fflush(nullptr);
  std::_Exit(status);
}

}  // namespace

std::vector<std::string> mpi_plugin_candidates() {
  std::vector<std::string> candidates;
  if (auto chosen = find_setting(process_env_lookup(), "MPI_PLUGIN")) {
    candidates.push_back(std::move(chosen->value));
    return candidates;  // an explicit choice is the only one tried
  }
  // The directory of the library this code is in (libkolo.so), as loaded and with links resolved
  // (a development stage links libkolo.so from the build directory, where the plugin is built).
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&mpi_plugin_candidates), &info) != 0 &&
      info.dli_fname != nullptr) {
    const std::string loaded = info.dli_fname;
    candidates.push_back(directory_of(loaded) + "/" + kMpiPluginFile);
    std::error_code ignored;
    const auto resolved = std::filesystem::canonical(loaded, ignored);
    if (!ignored && directory_of(resolved.string()) != directory_of(loaded)) {
      candidates.push_back(directory_of(resolved.string()) + "/" + kMpiPluginFile);
    }
  }
  return candidates;
}

const MpiPlugin& MpiPlugin::get() {
  // Loaded once and never unloaded: the plugin finalizes MPI at process exit.
  static const LoadResult loaded = [] {
    LoadResult result;
    std::vector<std::string> reasons;
    for (const std::string& path : mpi_plugin_candidates()) {
      if (!std::filesystem::exists(path)) {
        reasons.push_back(path + ": no such file");
        continue;
      }
      // RTLD_GLOBAL: Open MPI loads its own components, which look for libmpi's symbols there.
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (handle == nullptr) {
        reasons.push_back(::dlerror());
        continue;
      }
      using Entry = const KoloMpiPluginV1* (*)(uint32_t);
      auto entry = reinterpret_cast<Entry>(::dlsym(handle, KOLO_MPI_PLUGIN_ENTRY));
      const KoloMpiPluginV1* table =
          entry == nullptr ? nullptr : entry(KOLO_MPI_PLUGIN_ABI_VERSION);
      if (table == nullptr) {
        reasons.push_back(fmt::format("{}: not a kolo MPI plugin of ABI version {} (rebuild kolo)",
                                      path, KOLO_MPI_PLUGIN_ABI_VERSION));
        continue;
      }
      result.plugin = MpiPlugin(path, table);
      return result;
    }
    result.failure = fmt::format(
        "kolo's MPI plugin ({}) is not available ({}). It is built when MPI's development files "
        "are found at build time: install them (Debian: apt-get install libopenmpi-dev "
        "openmpi-bin) and rebuild kolo, or point KOLO_MPI_PLUGIN at the plugin",
        kMpiPluginFile,
        reasons.empty() ? "nowhere to look" : fmt::format("{}", fmt::join(reasons, "; ")));
    return result;
  }();
  if (!loaded.plugin) throw Error(loaded.failure);
  return *loaded.plugin;
}

bool MpiPlugin::available() {
  try {
    (void)get();
    return true;
  } catch (const Error&) {
    return false;
  }
}

void MpiPlugin::check(int result, const KoloMpiError& error, const std::string& what) {
  if (result == KOLO_MPI_UNSUPPORTED) {
    throw UnsupportedOperation(fmt::format("{}: {}", what, error.text));
  }
  if (result != 0) throw Error(fmt::format("{}: {}", what, error.text));
}

int MpiPlugin::initialize() const {
  KoloMpiError error{};
  int level = 0;
  check(table_->initialize(&level, &error), error, "initializing MPI");
#if defined(__GLIBC__)
  // glibc's on_exit: the handler sees the exit status (atexit's do not). Once per process.
  [[maybe_unused]] static const int registered =
      ::on_exit(&leave_without_finalize_when_failing, nullptr);
#endif
  return level;
}

std::pair<int, int> MpiPlugin::world() const {
  KoloMpiError error{};
  int rank = 0;
  int size = 0;
  check(table_->world(&rank, &size, &error), error, "reading MPI_COMM_WORLD");
  return {rank, size};
}

std::string MpiPlugin::library_version() const { return table_->library_version(); }

}  // namespace kolo::backends
