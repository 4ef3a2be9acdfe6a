#include "backends/backend_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "backends/kolo_backend.h"
#include "backends/mpi_backend.h"
#include "base/errors.h"

namespace kolo::backends {

CpuOperations parse_cpu_operations(std::string_view text, std::string_view variable) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.empty() || lower == "gloo" || lower == "kolo") return CpuOperations::kolo;
  if (lower == "mpi") return CpuOperations::mpi;
  throw InvalidArgument(fmt::format(
      "{}='{}' is not a CPU backend kolo has: use 'gloo' (kolo's own transports, the default) or "
      "'mpi'",
      variable, text));
}

std::string_view cpu_operations_name(CpuOperations choice) {
  return choice == CpuOperations::mpi ? "mpi" : "gloo";
}

std::unique_ptr<Backend> make_backend(CpuOperations choice, comm::Communicator& comm,
                                      const comm::AllreduceOptions& options, int world_size) {
  if (choice == CpuOperations::mpi && comm.size() == world_size) {
    return std::make_unique<MpiBackend>(MpiPlugin::get(), comm.rank(), comm.size());
  }
  return std::make_unique<KoloBackend>(comm, options);
}

}  // namespace kolo::backends
