// rendezvous::Store: the key-value store ranks bootstrap from (addresses, host identity) and that
// elastic mode reuses for new rounds. get/wait block until the keys exist or the timeout passes.
// Values are byte strings. Implementations: InMemoryStore (tests, threads), TcpStore (a client of
// the authenticated TcpStoreServer that kolorun runs).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"

namespace kolo::rendezvous {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until `key` exists; throws TimeoutError naming the key.
  virtual std::string get(const std::string& key, Duration timeout) = 0;
  // Atomically adds `delta` to the integer stored at `key` (absent: 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Waits until every key exists; throws TimeoutError naming the missing ones.
  virtual void wait(const std::vector<std::string>& keys, Duration timeout) = 0;
};

}  // namespace kolo::rendezvous
