// Internal to comm/: the pause instruction of a spin-wait (keeps a spinning hyperthread from
// starving its sibling and saves power while a peer on another core is a few hundred
// nanoseconds away).
#pragma once

namespace kolo::comm::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace kolo::comm::detail
