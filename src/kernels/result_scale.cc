#include "kernels/result_scale.h"

#include <fmt/format.h>

#include <cmath>

#include "base/errors.h"
#include "kernels/reduce.h"

namespace kolo::kernels {

void ResultScale::check(DataType type) const {
  if (identity()) return;
  if (average_over < 1) {
    throw InvalidArgument(fmt::format("cannot average over {} ranks", average_over));
  }
  if (!std::isfinite(postscale)) {
    throw InvalidArgument(
        fmt::format("scale factor {} for {} data is not finite", postscale, dtype_name(type)));
  }
  if (type == DataType::boolean) {
    throw InvalidArgument(
        average_over > 1
            ? fmt::format("cannot average {} data (only numeric types average)", dtype_name(type))
            : fmt::format("cannot scale {} data by {} (only numeric types scale)", dtype_name(type),
                          postscale));
  }
}

void ResultScale::apply(void* data, size_t count, DataType type) const {
  if (average_over > 1) return average_buffer(data, count, type, average_over, postscale);
  scale_buffer(data, count, type, postscale);
}

}  // namespace kolo::kernels
