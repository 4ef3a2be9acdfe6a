#include "comm/step_parts.h"

#include <algorithm>
#include <numeric>

#include "comm/work_splitter.h"

namespace kolo::comm::detail {

namespace {
constexpr size_t kLine = 64;
}  // namespace

void for_each_part(WorkSplitter* splitter, size_t part_bytes, size_t element, size_t begin,
                   size_t end, size_t hole_begin, size_t hole_end,
                   FunctionRef<void(size_t, size_t)> fn) {
  const size_t hole = hole_end - hole_begin;
  const size_t total = end - begin - hole;
  // Offsets counted without the hole, back to offsets in the range: a run crossing the hole is
  // two calls.
  auto run = [&](size_t from, size_t to) {
    const size_t before_hole = hole == 0 ? total : hole_begin - begin;
    if (from < before_hole) fn(begin + from, std::min(to, before_hole) - from);
    if (to > before_hole) {
      const size_t after = std::max(from, before_hole);
      fn(begin + after + hole, to - after);
    }
  };
  const size_t threads = splitter == nullptr ? 1 : splitter->threads();
  const size_t parts = std::min(threads, part_bytes == 0 ? threads : total / part_bytes);
  if (parts <= 1) {
    if (total > 0) run(0, total);
    return;
  }
  const size_t unit = std::lcm(kLine, element);
  const size_t per_part = (total / parts + unit - 1) / unit * unit;
  splitter->run(parts, [&](size_t part) {
    const size_t from = std::min(total, part * per_part);
    const size_t to = std::min(total, from + per_part);
    if (to > from) run(from, to);
  });
}

}  // namespace kolo::comm::detail
