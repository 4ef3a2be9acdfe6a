#include "gpu/library_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <link.h>

namespace kolo::gpu {

std::string loaded_path(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

void* find_symbol(void* handle, const char* symbol) { return ::dlsym(handle, symbol); }

std::string LibrarySearch::reasons_text() const {
  return reasons.empty() ? std::string("no library was tried")
                         : fmt::format("{}", fmt::join(reasons, "; "));
}

LibrarySearch open_first(const std::vector<LibraryCandidate>& candidates) {
  LibrarySearch search;
  for (const LibraryCandidate& candidate : candidates) {
    const bool no_load = candidate.how == LibraryCandidate::How::already_loaded;
    // RTLD_LOCAL: kolo looks its symbols up by handle; it must not change what other libraries
    // of the process resolve to.
    void* handle =
        ::dlopen(candidate.name.c_str(), RTLD_NOW | RTLD_LOCAL | (no_load ? RTLD_NOLOAD : 0));
    if (handle != nullptr) {
      search.found = true;
      search.library = {handle, loaded_path(handle, candidate.name), candidate.origin};
      return search;
    }
    if (no_load) {
      (void)::dlerror();  // not loaded: not a failure worth reporting
      continue;
    }
    const char* error = ::dlerror();
    search.reasons.push_back(fmt::format("{} ({}): {}", candidate.name, candidate.origin,
                                         error != nullptr ? error : "cannot be loaded"));
    if (candidate.how == LibraryCandidate::How::explicit_path) break;
  }
  return search;
}

}  // namespace kolo::gpu
