// Horovod's response cache: responses that already succeeded once, each known by a bit index, so
// that a tensor submitted again with the same parameters is agreed on with one bit of a
// bitwise-AND allreduce instead of a trip through the coordinator.
//
// Every rank holds its own cache, and they stay identical in everything but the stored local
// Request: all ranks put the same responses, touch the same bits and erase the same bits in the
// same order (the controller drives them from agreed data only), and every decision here
// (which bit a new entry takes, which entry is evicted) is deterministic. Lookups never change
// the cache, because they are local and differ between ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "negotiation/message.h"

namespace kolo::negotiation {

class ResponseCache {
 public:
  enum class State { miss, hit, invalid };
  struct Lookup {
    State state = State::miss;
    uint32_t bit = 0;  // hit or invalid: the entry's bit
  };

  // capacity 0 disables the cache: nothing is stored, every lookup misses.
  explicit ResponseCache(size_t capacity);

  [[nodiscard]] bool enabled() const { return capacity_ > 0; }
  [[nodiscard]] size_t capacity() const { return capacity_; }
  [[nodiscard]] size_t size() const { return by_name_.size(); }
  // Bits handed out so far (the highest bit + 1): the width of the bit vectors the ranks
  // exchange. Identical on every rank because the caches evolve identically.
  [[nodiscard]] uint32_t bit_count() const { return static_cast<uint32_t>(entries_.size()); }

  // hit: an entry for request.name exists and was produced by an equal request; invalid: an entry
  // exists but the request differs (shape, dtype, ...), so it must be erased on every rank.
  [[nodiscard]] Lookup lookup(const Request& request) const;

  // Stores a successful single-tensor response and the local request that produced it, replacing
  // an entry with the same name; evicts the least recently used entry when full. No-op when
  // disabled. Throws InvalidArgument for an error response or one with several names.
  void put(const Response& response, const Request& local_request);

  [[nodiscard]] bool contains(uint32_t bit) const;
  // The cached response at `bit` (must be present).
  [[nodiscard]] const Response& response(uint32_t bit) const;
  [[nodiscard]] std::optional<uint32_t> bit_of(const std::string& name) const;
  // Marks the entry most recently used (call only for agreed hits, the same on every rank).
  void touch(uint32_t bit);
  void erase(uint32_t bit);

 private:
  struct Entry {
    Response response;
    Request request;
    std::list<uint32_t>::iterator lru_position;
  };

  size_t capacity_;
  std::vector<std::optional<Entry>> entries_;  // indexed by bit
  std::unordered_map<std::string, uint32_t> by_name_;
  std::list<uint32_t> lru_;       // front: most recently used
  std::set<uint32_t> free_bits_;  // erased bits below bit_count(), reused lowest first
};

}  // namespace kolo::negotiation
