#include "base/errors.h"

#include <cstring>

namespace kolo {

namespace {
std::string describe_system_error(const std::string& call, int err, const std::string& context) {
  std::string message = call + " failed: " + std::strerror(err);
  if (!context.empty()) message += " (" + context + ")";
  return message;
}
}  // namespace

SystemError::SystemError(const std::string& call, int err, const std::string& context)
    : Error(describe_system_error(call, err, context)), error_code_(err) {}

}  // namespace kolo
