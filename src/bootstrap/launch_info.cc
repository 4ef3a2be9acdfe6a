#include "bootstrap/launch_info.h"

#include <fmt/format.h>

#include <cstdlib>

#include "base/errors.h"
#include "bootstrap/machine_identity.h"
#include "bootstrap/mpi_launch_env.h"

namespace kolo::bootstrap {

LaunchInfo LaunchInfo::from_env(const EnvLookup& lookup) {
  auto get = [&](const std::string& name) -> std::optional<std::string> {
    if (auto found = find_setting(lookup, name)) return std::move(found->value);
    return std::nullopt;
  };
  auto get_int = [&](const std::string& name, int fallback) {
    auto text = get(name);
    if (!text) return fallback;
    char* end = nullptr;
    long value = std::strtol(text->c_str(), &end, 10);
    if (end == text->c_str() || *end != '\0' || value < 0) {
      throw InvalidArgument("KOLO_" + name + "/HOROVOD_" + name + "='" + *text +
                            "' is not a non-negative integer");
    }
    return static_cast<int>(value);
  };
  LaunchInfo info;
  // No kolorun variables but an MPI launcher's (mpirun, srun): rank and size come from those.
  if (!get("RANK") && !get("SIZE")) {
    if (auto mpi = detect_mpi_launch_env(lookup); mpi && mpi->size > 1) {
      info.rank = mpi->rank;
      info.size = mpi->size;
      info.rendezvous_over_mpi = true;
      info.mpi_size_variable = mpi->size_variable;
      info.launcher_local_rank = mpi->local_rank;
      info.hostname = get("HOSTNAME").value_or("");
      info.machine = machine_identity(lookup);
      return info;
    }
  }
  info.rank = get_int("RANK", 0);
  info.size = get_int("SIZE", 1);
  if (info.size < 1 || info.rank >= info.size) {
    throw InvalidArgument(
        fmt::format("rank {} is not within size {} (KOLO_RANK/KOLO_SIZE)", info.rank, info.size));
  }
  info.hostname = get("HOSTNAME").value_or("");
  info.machine = machine_identity(lookup);
  // Horovod's gloo mode names its store HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT; kolo's own are shorter.
  info.rendezvous_addr = get("RENDEZVOUS_ADDR").value_or(get("GLOO_RENDEZVOUS_ADDR").value_or(""));
  info.rendezvous_port =
      static_cast<uint16_t>(get_int("RENDEZVOUS_PORT", get_int("GLOO_RENDEZVOUS_PORT", 0)));
  info.secret_hex = get("SECRET").value_or("");
  if (info.size > 1 && info.rendezvous_addr.empty()) {
    throw InvalidArgument(fmt::format(
        "KOLO_SIZE={} but no rendezvous address (KOLO_RENDEZVOUS_ADDR) is set: start the job with "
        "kolorun or horovodrun",
        info.size));
  }
  return info;
}

}  // namespace kolo::bootstrap
