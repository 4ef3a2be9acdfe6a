#include "transport/shm/job_names.h"

#include <dirent.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/mman.h>

#include <vector>

#include "base/errors.h"

namespace kolo::transport::shm {

std::string job_tag(const std::string& secret_hex) {
  // A cryptographic hash rather than std::hash: the launcher and ranks built elsewhere must agree,
  // and the secret must not be recoverable from names anyone on the host can list.
  const std::string input = "kolo shm segment " + secret_hex;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw Error("OpenSSL SHA-256 failed while naming the job's shared-memory objects");
  }
  std::string tag;
  for (unsigned int i = 0; i < 8 && i < length; ++i) tag += fmt::format("{:02x}", digest[i]);
  return tag;
}

int remove_job_leftovers(const std::string& job_tag) {
  const std::string prefix = "kolo-" + job_tag + "-";
  std::vector<std::string> names;
  if (DIR* dir = ::opendir("/dev/shm")) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.starts_with(prefix)) names.push_back(name);
    }
    ::closedir(dir);
  }
  int removed = 0;
  for (const std::string& name : names) {
    if (::shm_unlink(("/" + name).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace kolo::transport::shm
