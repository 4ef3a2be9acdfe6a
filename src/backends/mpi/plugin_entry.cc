// libkolo_mpi.so's one exported symbol: the versioned function table libkolo dlopens.
#include "backends/mpi/collectives.h"
#include "backends/mpi/mpi_state.h"
#include "backends/mpi/plugin_abi.h"

namespace {

const char* library_version() {
  static char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  static const bool filled = [] {
    int length = 0;
    MPI_Get_library_version(text, &length);
    return true;
  }();
  (void)filled;
  return text;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const KoloMpiPluginV1* kolo_mpi_plugin_v1(
    uint32_t requested_abi_version) {
  using namespace kolo::backends::mpi_plugin;
  static const KoloMpiPluginV1 table = {
      KOLO_MPI_PLUGIN_ABI_VERSION,
      &library_version,
      &initialize,
      &world,
      &comm_create,
      &comm_free,
      &broadcast,
      &barrier,
      &allreduce,
      &allgatherv,
      &reducescatter,
      &alltoallv,
  };
  return requested_abi_version == KOLO_MPI_PLUGIN_ABI_VERSION ? &table : nullptr;
}
