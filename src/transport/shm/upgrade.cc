#include "transport/shm/upgrade.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

#include <optional>

#include "base/errors.h"
#include "transport/shm/handshake.h"
#include "transport/shm/segment.h"
#include "transport/shm/shm_link.h"

namespace kolo::transport::shm {

namespace {

using detail::kAccepted;
using detail::kRefused;
using detail::recv_byte;
using detail::recv_offer;
using detail::send_byte;
using detail::send_offer;

struct Pending {
  int peer;
  std::string name;
  std::optional<Segment> segment;
};

}  // namespace

std::string small_dev_shm_warning(uint64_t total_bytes, uint64_t free_bytes, uint64_t needed) {
  if (free_bytes >= needed) return "";
  return fmt::format(
      "/dev/shm is too small for shared-memory links ({:.1f} MiB in all, {:.1f} MiB free, "
      "{:.1f} MiB needed): same-host peers use TCP instead (a container can be given more with "
      "`docker run --shm-size=1g`; KOLO_SHM_DISABLE=1 silences this)",
      static_cast<double>(total_bytes) / (1 << 20), static_cast<double>(free_bytes) / (1 << 20),
      static_cast<double>(needed) / (1 << 20));
}

int upgrade_same_host_links(std::vector<std::unique_ptr<Link>>& links,
                            const UpgradeOptions& options, const Logger& logger) {
  const int size = static_cast<int>(links.size());
  const int rank = options.rank;
  std::vector<int> higher;
  std::vector<int> lower;
  for (int r = 0; r < size; ++r) {
    if (r == rank || !options.same_host[static_cast<size_t>(r)]) continue;
    (r > rank ? higher : lower).push_back(r);
  }
  if (higher.empty() && lower.empty()) return 0;

  // Room for every segment this rank creates (with a margin for the other ranks' segments).
  bool room = true;
  if (!higher.empty()) {
    struct statvfs info {};
    if (::statvfs("/dev/shm", &info) == 0) {
      const uint64_t total = static_cast<uint64_t>(info.f_blocks) * info.f_frsize;
      const uint64_t free_bytes = static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
      const uint64_t needed = Segment::bytes_needed(options.ring_bytes) * higher.size() * 2;
      const std::string warning = small_dev_shm_warning(total, free_bytes, needed);
      if (!warning.empty()) {
        logger.warn("{}", warning);
        room = false;
      }
    } else {
      logger.warn("/dev/shm is not available: same-host peers use TCP");
      room = false;
    }
  }

  // 1. Offer a segment to every higher same-host rank (small messages: no deadlock).
  std::vector<Pending> created;
  // Whatever goes wrong below, no name this rank created outlives this function.
  struct UnlinkAll {
    std::vector<Pending>& pending;
    ~UnlinkAll() {
      for (const Pending& p : pending) Segment::unlink(p.name);
    }
  } unlink_all{created};
  for (int peer : higher) {
    Pending pending{peer, segment_name(options.job_tag, options.round, rank, peer), std::nullopt};
    if (room) {
      std::string why;
      try {
        pending.segment = Segment::create(pending.name, options.ring_bytes, why);
      } catch (const Error& e) {
        why = e.what();  // e.g. no /dev/shm at all: TCP still works
      }
      if (!pending.segment) logger.warn("{}: {} uses TCP", why, links[peer]->peer_description());
    }
    send_offer(*links[peer], pending.segment ? std::optional(pending.name) : std::nullopt,
               options.deadline);
    created.push_back(std::move(pending));
  }
  // 2. Map what every lower rank offered, answer, and switch those links.
  int upgraded = 0;
  for (int peer : lower) {
    const auto name = recv_offer(*links[peer], options.deadline);
    if (!name) {
      continue;
    }
    std::optional<Segment> segment;
    try {
      segment.emplace(Segment::open(*name, options.ring_bytes));
    } catch (const Error& e) {
      logger.warn("cannot map {} from {} ({}): using TCP", *name, links[peer]->peer_description(),
                  e.what());
    }
    send_byte(*links[peer], segment ? kAccepted : kRefused, options.deadline);
    if (segment) {
      links[peer] = make_shm_link(std::move(*segment), /*creator=*/false, std::move(links[peer]));
      ++upgraded;
    }
  }
  // 3. Collect the answers; the names go away at once (the mappings stay).
  for (Pending& pending : created) {
    if (!pending.segment) continue;
    const uint8_t answer = recv_byte(*links[pending.peer], options.deadline);
    Segment::unlink(pending.name);
    if (answer != kAccepted) continue;
    links[pending.peer] = make_shm_link(std::move(*pending.segment), /*creator=*/true,
                                        std::move(links[pending.peer]));
    ++upgraded;
  }
  return upgraded;
}

}  // namespace kolo::transport::shm
