// Starts a rank on this machine with posix_spawn: safe while other threads run (the rendezvous
// server has one), and it reports a missing executable as an error instead of a child that exits.
#pragma once

#include "launcher/spawn/local_placement.h"
#include "launcher/spawn/spawner.h"

namespace kolo::launcher {

class LocalSpawner final : public Spawner {
 public:
  // The child gets: its own process group, stdin from /dev/null (as under horovodrun), stdout and
  // stderr into fresh pipes, no other inherited descriptors, an empty signal mask and default
  // SIGPIPE handling (the launcher blocks and ignores signals the rank must see normally), and
  // its own share of the launcher's CPUs unless placement is off (local_placement.h).
  SpawnedProcess spawn(const SpawnRequest& request) override;

 private:
  LocalPlacement placement_;  // kolorun's mask, read when the spawner is made
};

}  // namespace kolo::launcher
