#include "transport/wait_arming.h"

#include "transport/wait_fence.h"

namespace kolo::transport {

int WaitArming::arm(Link& link, bool want_send, bool want_recv) {
  const Link::WaitArm armed = link.arm_wait(want_send, want_recv);
  if (armed.events < 0) {
    ready_ = true;
  } else if (armed.check_after_fence) {
    to_check_.push_back(&link);
  }
  return armed.events;
}

bool WaitArming::settle() {
  if (ready_ || to_check_.empty()) return ready_;
  // Every flag store above happens before every check below (see wait_fence.h).
  wait_fence();
  ++fences_;
  for (Link* link : to_check_) {
    if (link->ready_after_fence()) {
      ready_ = true;
      break;
    }
  }
  return ready_;
}

}  // namespace kolo::transport
