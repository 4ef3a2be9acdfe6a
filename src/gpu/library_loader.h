// Finding an optional shared library (NCCL, the CUDA runtime) at run time: kolo is never linked or
// compiled against them, so one wheel serves CPU-only machines and every CUDA version. A search is
// an ordered list of candidates; the first that loads wins. "Already in the process" comes first
// (RTLD_NOLOAD): torch's CUDA wheels load their own NCCL and runtime, and a second copy of either
// in one process would not share its state.
#pragma once

#include <string>
#include <vector>

namespace kolo::gpu {

struct LibraryCandidate {
  enum class How {
    already_loaded,  // dlopen(name, RTLD_NOLOAD): a library of that soname the process has
    explicit_path,   // a path the user named (an environment variable): if it fails, stop there
    search,          // dlopen(name): the dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache)
  };
  How how;
  std::string name;    // a soname ("libnccl.so.2") or a path
  std::string origin;  // for messages: "already loaded by the process", "KOLO_NCCL_LIBRARY", ...
};

// An open library, kept open for the life of the process (never closed: the tables point into it).
struct OpenedLibrary {
  void* handle = nullptr;
  std::string path;    // the file the dynamic linker actually mapped
  std::string origin;  // the candidate's origin
};

struct LibrarySearch {
  bool found = false;
  OpenedLibrary library;
  // Why each candidate tried did not load (dlerror's text), in order; empty when found first try.
  std::vector<std::string> reasons;
  // The reasons as one clause for a message ("no library was tried" when there are none).
  [[nodiscard]] std::string reasons_text() const;
};

// Tries `candidates` in order. An explicit_path that fails ends the search (the user named it:
// quietly taking another library would hide the mistake).
LibrarySearch open_first(const std::vector<LibraryCandidate>& candidates);

// The file a handle came from (dlinfo's link map), or `fallback` when the linker does not say.
std::string loaded_path(void* handle, const std::string& fallback);

// dlsym; nullptr when missing.
void* find_symbol(void* handle, const char* symbol);

// Resolves `symbol` into the function-pointer `slot` of a table; records its name in `missing`
// when the library lacks it (so one message can name every missing function).
template <typename Function>
void resolve_symbol(void* handle, const char* symbol, Function*& slot,
                    std::vector<std::string>& missing) {
  slot = reinterpret_cast<Function*>(find_symbol(handle, symbol));
  if (slot == nullptr) missing.emplace_back(symbol);
}

}  // namespace kolo::gpu
