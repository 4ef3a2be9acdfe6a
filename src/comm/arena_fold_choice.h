// Internal to comm/: how an allreduce step through the host's arena folds
// (allreduce_shared_memory): whole on every rank (each rank folds every other slot into its buffer:
// one barrier), or a slice each (each rank folds its 1/n of every slot, then reads the others'
// results: two barriers).
//
// Folding whole costs a rank the other ranks' values, (n - 1) x the step, read from slots just
// written on other cores; a slice each reads about 2 (n - 1) / n steps' worth and waits at one
// more barrier. At np 2 the two cost the same: on this project's idle 2-core machine both folds
// took the same time from 2 KiB to 4 MiB (kolo-bench, KOLO_SHM_FOLD_WHOLE_BYTES 2 KiB to 1 MiB,
// within 3%). With more ranks folding whole reads (n - 1)(n - 2) / n steps more while the barrier
// grows slowly: on an H200 host's 16 cores (bench/compare, session 33) the 8 KiB allreduce, folded
// whole, was 1.81x Open MPI at np 4, 1.24x at np 8 and 0.87x at np 16, while 256 KiB (sliced)
// held 1.6x. So past 4 ranks a step is folded whole only while the others' values stay within
// kFoldWholeOthersBytes (np 8: 6.8 KiB, np 16: 3.2 KiB). An oversubscribed host keeps the one
// barrier: each barrier waits for descheduled ranks there (np 3 on 2 cores: 4-16 KiB folded whole
// as fast as sliced or faster).
#pragma once

#include <cstddef>

namespace kolo::comm::detail {

constexpr size_t kFoldWholeBytes = size_t{16} * 1024;
constexpr size_t kFoldWholeOthersBytes = size_t{48} * 1024;

// `configured`: KOLO_SHM_FOLD_WHOLE_BYTES (0: the rule above). A step with fewer elements than
// ranks always folds whole (the slices would be empty).
inline bool folds_whole(size_t step_bytes, size_t elements, int ranks, bool oversubscribed,
                        size_t configured) {
  if (elements < static_cast<size_t>(ranks)) return true;
  if (configured > 0) return step_bytes <= configured;
  if (step_bytes > kFoldWholeBytes) return false;
  if (ranks <= 4 || oversubscribed) return true;
  return step_bytes * static_cast<size_t>(ranks - 1) <= kFoldWholeOthersBytes;
}

}  // namespace kolo::comm::detail
