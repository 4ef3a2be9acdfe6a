#include "launcher/check_build.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <sstream>

#include "base/clock.h"
#include "base/errors.h"
#include "launcher/spawn/exit_status.h"
#include "launcher/spawn/process_spawn.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

namespace {

// Prints key=value lines; every import is guarded so one missing piece does not hide the rest.
constexpr const char* kProbe = R"(import sys
print("python=" + sys.executable)
try:
    import kolo, kolo._core as core
    print("kolo=" + getattr(kolo, "__version__", "unknown"))
    print("kolo_path=" + kolo.__file__)
    for flag in ("MPI_BUILT", "NCCL_BUILT", "CUDA_BUILT", "GLOO_BUILT"):
        print(flag.lower() + "=" + str(bool(getattr(core, flag, False))))
except Exception as error:
    print("kolo_error=%s: %s" % (type(error).__name__, str(error).replace("\n", " ")))
try:
    import ctypes.util
    for library in ("nccl", "mpi"):
        print("lib_%s=%s" % (library, ctypes.util.find_library(library) or ""))
except Exception:
    pass
try:
    import torch
    print("torch=" + torch.__version__)
    print("torch_cuda=" + str(torch.cuda.is_available()))
    import kolo.torch
    print("kolo_torch=True")
except Exception as error:
    print("torch_error=%s: %s" % (type(error).__name__, str(error).replace("\n", " ")))
try:  # after torch: its CUDA build loads its own NCCL, the one kolo then uses
    status = core.nccl_status()
    print("nccl_loaded=" + str(bool(status["loaded"])))
    print("nccl_describe=" + status["describe"].replace("\n", " "))
except Exception:
    pass
)";

constexpr int kProbeTimeoutSeconds = 120;  // importing torch on a loaded machine can be slow

bool fact_true(const BuildFacts& facts, const std::string& key) {
  auto found = facts.find(key);
  return found != facts.end() && found->second == "True";
}

std::string mark(bool available) { return available ? "[X]" : "[ ]"; }

// The NCCL row: marked when kolo's NCCL backend is built and NCCL loads in the probe's process;
// the version and the file it came from, or why not (kolo._core.nccl_status()). A kolo without
// nccl_status() keeps the library search's note.
std::string nccl_line(const BuildFacts& facts, bool backend_built, const std::string& old_note) {
  auto describe = facts.find("nccl_describe");
  if (describe == facts.end()) return fmt::format("{} NCCL{}", mark(backend_built), old_note);
  const bool loaded = fact_true(facts, "nccl_loaded");
  if (backend_built && loaded) return fmt::format("[X] NCCL {}", describe->second);
  if (loaded) {
    return fmt::format(
        "[ ] NCCL {}: found, but this version of kolo has no NCCL backend (CUDA tensors take "
        "the asynchronous host path)",
        describe->second);
  }
  return fmt::format("[ ] NCCL ({})", describe->second);
}

}  // namespace

BuildFacts probe_build(const std::string& python) {
  BuildFacts facts;
  SpawnedProcess process;
  try {
    process = start_process(ProcessSpec{
        {python, "-c", kProbe}, current_environment(), "the --check-build probe", -1, true});
  } catch (const Error& error) {
    facts["python_error"] = error.what();
    return facts;
  }
  process.stderr_read.reset();  // the facts come on stdout; import warnings are not needed
  std::string out;
  const Deadline deadline{std::chrono::seconds(kProbeTimeoutSeconds)};
  char buffer[4096];
  while (!deadline.expired()) {
    pollfd fd{process.stdout_read.fd(), POLLIN, 0};
    if (::poll(&fd, 1, deadline.remaining_ms(1000)) <= 0) continue;
    ssize_t n = ::read(process.stdout_read.fd(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  if (deadline.expired()) {
    ::kill(-process.pid, SIGKILL);
    facts["python_error"] =
        fmt::format("{} did not finish the probe within {} s", python, kProbeTimeoutSeconds);
  }
  int status = 0;
  ::waitpid(process.pid, &status, 0);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t equals = line.find('=');
    if (equals != std::string::npos) facts[line.substr(0, equals)] = line.substr(equals + 1);
  }
  if (!facts.contains("python") && !facts.contains("python_error")) {
    facts["python_error"] =
        fmt::format("{} {}", python, ExitStatus::from_wait_status(status).describe());
  }
  return facts;
}

std::string format_check_build(const BuildFacts& facts, const std::string& kolorun_version) {
  auto get = [&facts](const std::string& key) {
    auto found = facts.find(key);
    return found == facts.end() ? std::string() : found->second;
  };
  std::string text =
      fmt::format("kolo v{} (horovodrun-compatible launcher kolorun):\n\n", kolorun_version);
  if (!get("python_error").empty()) {
    text += fmt::format("Python: not usable ({})\n\n", get("python_error"));
  } else {
    text += fmt::format("Python: {}\n", get("python"));
  }
  if (!get("kolo_error").empty()) {
    text += fmt::format("kolo module: cannot be imported ({})\n\n", get("kolo_error"));
  } else if (!get("kolo").empty()) {
    text += fmt::format("kolo module: {} at {}\n\n", get("kolo"), get("kolo_path"));
  }
  const bool kolo_ok = !get("kolo").empty();
  const bool torch_ok = kolo_ok && fact_true(facts, "kolo_torch");
  const std::string torch_note = !get("torch").empty() ? fmt::format(" (torch {})", get("torch"))
                                 : !get("torch_error").empty()
                                     ? fmt::format(" ({})", get("torch_error"))
                                     : std::string();
  const bool gloo = kolo_ok && fact_true(facts, "gloo_built");
  const bool mpi = kolo_ok && fact_true(facts, "mpi_built");
  const bool nccl = kolo_ok && fact_true(facts, "nccl_built");
  text += "Available Frameworks:\n";
  text += fmt::format("    [ ] TensorFlow\n    {} PyTorch{}\n    [ ] MXNet\n\n", mark(torch_ok),
                      torch_note);
  // A library present on the machine that this build cannot use is worth saying: it is the
  // usual surprise ("NCCL is installed, why is it not used?").
  auto library_note = [&get](bool built, const std::string& library) {
    const std::string path = get("lib_" + library);
    if (built || path.empty()) return std::string();
    return fmt::format(" ({} found, but this kolo build does not use it)", path);
  };
  text += "Available Controllers:\n";
  text +=
      fmt::format("    {} MPI{}\n    {} Gloo\n\n", mark(mpi), library_note(mpi, "mpi"), mark(gloo));
  text += "Available Tensor Operations:\n";
  text += fmt::format("    {}\n    [ ] DDL\n    [ ] CCL\n    {} MPI{}\n    {} Gloo\n",
                      nccl_line(facts, nccl, library_note(nccl, "nccl")), mark(mpi),
                      library_note(mpi, "mpi"), mark(gloo));
  return text;
}

int run_check_build(const std::string& kolorun_version) {
  BuildFacts facts = probe_build("python3");
  if (facts.contains("python_error")) {
    BuildFacts second = probe_build("python");
    if (!second.contains("python_error")) facts = std::move(second);
  }
  const std::string text = format_check_build(facts, kolorun_version);
  std::fputs(text.c_str(), stdout);
  return facts.contains("kolo") ? 0 : 1;
}

}  // namespace kolo::launcher
