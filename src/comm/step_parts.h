// Cutting one arena step's local memory work (the copies into and out of the slots, the fold of
// the rank's slice) into parts for the WorkSplitter's threads. Parts begin on whole 64-byte
// lines (and whole elements) from the range's start, so two threads seldom write one cache line,
// and each element is still computed by one thread with the same operations as without parts.
#pragma once

#include <cstddef>

#include "base/function_ref.h"

namespace kolo::comm {

class WorkSplitter;

// Large copies and folds are cut into parts of at least this many bytes: below, waking a helper
// and sharing cache lines cost more than the part's copy takes (a part of 128 KiB is copied in
// about 10 us by one core).
constexpr size_t kSplitPartBytes = size_t{128} * 1024;

namespace detail {

// Calls fn(begin, bytes) for the runs of [begin, end) outside the hole [hole_begin, hole_end)
// (empty: none; within [begin, end) otherwise), cut into at most splitter->threads() parts of
// at least `part_bytes` and run on the splitter's threads; all on this thread without a splitter
// or when the range is too small to cut. Returns when every call returned.
void for_each_part(WorkSplitter* splitter, size_t part_bytes, size_t element, size_t begin,
                   size_t end, size_t hole_begin, size_t hole_end,
                   FunctionRef<void(size_t, size_t)> fn);

}  // namespace detail
}  // namespace kolo::comm
