// The last elementwise step of a reduction's result: Average's division by the number of ranks
// and Horovod's postscale factor. Collectives apply it exactly once to every element, where the
// element's total is computed (a rank's own slice before the slice is copied to the others), so
// no rank makes a separate pass over the whole result afterwards, and the bits are the same as
// such a pass would give (the step is elementwise and deterministic).
#pragma once

#include <cstddef>

#include "base/types.h"

namespace kolo::kernels {

struct ResultScale {
  int average_over = 1;    // Average: the number of ranks to divide by; 1: no division
  double postscale = 1.0;  // applied first (average_buffer's order)

  [[nodiscard]] bool identity() const { return average_over == 1 && postscale == 1.0; }
  // Throws InvalidArgument naming the problem when `type` cannot be scaled this way (a boolean
  // average, a factor that is not finite). Collectives call it before any byte moves: a
  // throw halfway through would leave the other ranks waiting for this one's slice.
  void check(DataType type) const;
  // data[0..count) of `type`, as average_buffer (average_over > 1) or scale_buffer.
  void apply(void* data, size_t count, DataType type) const;
};

}  // namespace kolo::kernels
