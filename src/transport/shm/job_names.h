// Names of a job's shared-memory objects in /dev/shm, and their removal. Every name starts with
// "kolo-<job tag>-", the tag derived from (never equal to) the job secret, so the launcher can
// remove whatever a rank killed between creating and unlinking an object left behind.
#pragma once

#include <string>

namespace kolo::transport::shm {

// Stable across the ranks (and the launcher) of one job; unrelated jobs differ: the first 16 hex
// digits of SHA-256("kolo shm segment " + secret_hex).
std::string job_tag(const std::string& secret_hex);

// Unlinks every /dev/shm object of the job `job_tag`; returns how many it removed.
int remove_job_leftovers(const std::string& job_tag);

}  // namespace kolo::transport::shm
