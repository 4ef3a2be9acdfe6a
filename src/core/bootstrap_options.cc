#include "core/bootstrap_options.h"

#include "negotiation/wire.h"

namespace kolo::core {

bootstrap::Options bootstrap_options(const Config& config) {
  bootstrap::Options options;
  options.start_timeout = config.start_timeout;
  options.network_interfaces = config.network_interfaces;
  options.shm_disable = config.shm_disable;
  options.shm_ring_bytes = config.shm_ring_bytes;
  options.shm_allreduce_bytes = config.shm_allreduce_bytes;
  options.shm_single_copy = config.shm_single_copy;
  options.shm_fold_whole_bytes = config.shm_fold_whole_bytes;
  options.protocol_version = negotiation::kWireVersion;
  return options;
}

}  // namespace kolo::core
