// Helpers for the shared-memory transport tests: a full mesh of socket-pair links between
// threads standing in for ranks, and what /dev/shm holds.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "transport/shm/segment.h"
#include "transport/shm/shm_link.h"
#include "transport/tcp/socket_link.h"

namespace kolo::transport::testing {

// links[r][p]: rank r's link to rank p (null for p == r), described as "rank p".
inline std::vector<std::vector<std::unique_ptr<Link>>> socket_mesh(int n) {
  std::vector<std::vector<std::unique_ptr<Link>>> links(static_cast<size_t>(n));
  for (auto& row : links) row.resize(static_cast<size_t>(n));
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      auto [sa, sb] = socket_pair();
      links[a][b] = make_socket_link(std::move(sa), b, "rank " + std::to_string(b));
      links[b][a] = make_socket_link(std::move(sb), a, "rank " + std::to_string(a));
    }
  }
  return links;
}

// Two shm links joined by one segment (as make_shm_link pairs them at bootstrap).
struct ShmLinkPair {
  std::unique_ptr<Link> a;  // the creator's end
  std::unique_ptr<Link> b;
};

inline ShmLinkPair shm_link_pair(size_t ring_bytes,
                                 shm::ShmFences fences = shm::ShmFences::wait_fence_if_available) {
  auto mesh = socket_mesh(2);
  // The name lives only between create and open (unlinked before this returns).
  const std::string name = "/kolo-shm-pair-" + std::to_string(::getpid());
  std::string why;
  auto created = shm::Segment::create(name, ring_bytes, why);
  if (!created) throw std::runtime_error(why);
  auto opened = shm::Segment::open(name, ring_bytes);
  shm::Segment::unlink(name);
  return {shm::make_shm_link(std::move(*created), true, std::move(mesh[0][1]), fences),
          shm::make_shm_link(std::move(opened), false, std::move(mesh[1][0]), fences)};
}

// Names in /dev/shm containing `tag`.
inline std::vector<std::string> dev_shm_entries_with(const std::string& tag) {
  std::vector<std::string> found;
  if (DIR* dir = ::opendir("/dev/shm")) {
    while (dirent* entry = ::readdir(dir)) {
      if (std::string(entry->d_name).find(tag) != std::string::npos) found.push_back(entry->d_name);
    }
    ::closedir(dir);
  }
  return found;
}

}  // namespace kolo::transport::testing
