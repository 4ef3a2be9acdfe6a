// The part of core's Config that bootstrap needs, as bootstrap's own plain options struct, so
// bootstrap/ never sees core's settings.
#pragma once

#include "bootstrap/bootstrap.h"
#include "core/config.h"

namespace kolo::core {

bootstrap::Options bootstrap_options(const Config& config);

}  // namespace kolo::core
