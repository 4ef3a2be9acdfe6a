// Prepares one sleep in poll(2) on several links, paying at most one wait fence
// (wait_fence.h) however many shared-memory links it covers: begin(), arm() every link the
// sleep waits for, then settle(), which issues the fence once if any armed link asked for it and
// then asks those links whether they can progress already. Only if settle() says no may the
// caller sleep on the events arm() returned. comm::Communicator keeps one per communicator.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/link.h"

namespace kolo::transport {

class WaitArming {
 public:
  void begin() {
    to_check_.clear();
    ready_ = false;
  }

  // Arms `link` (Link::arm_wait): the poll(2) events to wait for on its fd, or a negative value
  // if it can progress already (then the caller must not sleep; settle() also says so).
  int arm(Link& link, bool want_send, bool want_recv);

  // After every arm(): true if a link armed since begin() can progress already (do not sleep).
  // Issues the fence only when some link asked for it and none is known ready (no sleep follows).
  bool settle();

  // Fences issued so far (tests count them; one per settle() at most).
  [[nodiscard]] uint64_t fences() const { return fences_; }

 private:
  std::vector<Link*> to_check_;  // armed links that look again after the fence
  bool ready_ = false;
  uint64_t fences_ = 0;
};

}  // namespace kolo::transport
