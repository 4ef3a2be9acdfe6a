#include "transport/shm/arena_setup.h"

#include <algorithm>

#include "base/errors.h"
#include "transport/shm/handshake.h"

namespace kolo::transport::shm {

namespace {

using detail::kAccepted;
using detail::kRefused;

std::optional<HostArena> lead(std::vector<std::unique_ptr<Link>>& links, const ArenaOptions& options,
                              const std::vector<int>& members, const Logger& logger) {
  const auto ranks = static_cast<int>(members.size());
  const std::string name = arena_name(options.job_tag, options.round, options.rank);
  std::optional<Arena> arena;
  std::string why;
  try {
    arena = Arena::create(name, ranks, options.chunk_bytes, why);
  } catch (const Error& e) {
    why = e.what();
  }
  // Whatever happens below, the name does not outlive this function.
  struct Unlink {
    const std::string& name;
    ~Unlink() { Mapping::unlink(name); }
  } unlink{name};
  if (!arena) logger.warn("no shared-memory collective arena for this host: {}", why);
  for (int peer : members) {
    if (peer != options.rank) {
      detail::send_offer(*links[peer], arena ? std::optional(name) : std::nullopt, options.deadline);
    }
  }
  bool everyone = arena.has_value();
  if (arena) {
    for (int peer : members) {
      if (peer != options.rank) {
        everyone = detail::recv_byte(*links[peer], options.deadline) == kAccepted && everyone;
      }
    }
    Mapping::unlink(name);
    for (int peer : members) {
      if (peer != options.rank) {
        detail::send_byte(*links[peer], everyone ? kAccepted : kRefused, options.deadline);
      }
    }
  }
  if (!everyone) return std::nullopt;
  return HostArena{std::make_unique<Arena>(std::move(*arena)), 0, members};
}

std::optional<HostArena> join(std::vector<std::unique_ptr<Link>>& links,
                              const ArenaOptions& options, const std::vector<int>& members,
                              const Logger& logger) {
  Link& leader = *links[members.front()];
  const auto name = detail::recv_offer(leader, options.deadline);
  if (!name) return std::nullopt;
  const auto ranks = static_cast<int>(members.size());
  std::optional<Arena> arena;
  try {
    arena.emplace(Arena::open(*name, ranks, options.chunk_bytes));
  } catch (const Error& e) {
    logger.warn("cannot map the collective arena {} from {}: {}", *name,
                leader.peer_description(), e.what());
  }
  detail::send_byte(leader, arena ? kAccepted : kRefused, options.deadline);
  if (detail::recv_byte(leader, options.deadline) != kAccepted || !arena) return std::nullopt;
  const auto slot = static_cast<int>(std::find(members.begin(), members.end(), options.rank) -
                                     members.begin());
  return HostArena{std::make_unique<Arena>(std::move(*arena)), slot, members};
}

}  // namespace

std::optional<HostArena> setup_host_arena(std::vector<std::unique_ptr<Link>>& links,
                                          const ArenaOptions& options, const Logger& logger) {
  std::vector<int> members;
  for (int r = 0; r < static_cast<int>(options.same_host.size()); ++r) {
    if (r == options.rank || options.same_host[static_cast<size_t>(r)]) members.push_back(r);
  }
  if (members.size() < 2) return std::nullopt;
  if (members.front() == options.rank) return lead(links, options, members, logger);
  return join(links, options, members, logger);
}

}  // namespace kolo::transport::shm
