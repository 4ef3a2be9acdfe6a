#include "launcher/spawn/process_spawn.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>

#include <optional>

#include "base/errors.h"
#include "placement/affinity.h"

namespace kolo::launcher {

namespace {

// posix_spawn's attribute and file-action objects, released on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    ::posix_spawn_file_actions_init(&actions_);
    ::posix_spawnattr_init(&attributes_);
  }
  ~SpawnSetup() {
    ::posix_spawn_file_actions_destroy(&actions_);
    ::posix_spawnattr_destroy(&attributes_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attributes_;
};

void check(int result, const char* call, const std::string& context) {
  if (result != 0) throw SystemError(call, result, context);
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (auto& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

// Restricts the calling thread to some CPUs while it lives, then gives it its mask back.
class ThreadCpus {
 public:
  explicit ThreadCpus(const std::vector<int>& cpus) : saved_(placement::thread_affinity()) {
    placement::set_thread_affinity(cpus);
  }
  ~ThreadCpus() {
    try {
      placement::set_thread_affinity(saved_);
    } catch (const SystemError&) {  // the mask it had a moment ago: cannot fail but by a bug
    }
  }
  ThreadCpus(const ThreadCpus&) = delete;
  ThreadCpus& operator=(const ThreadCpus&) = delete;

 private:
  std::vector<int> saved_;
};

}  // namespace

SpawnedProcess start_process(const ProcessSpec& spec, const std::optional<std::vector<int>>& cpus) {
  const std::string& who = spec.who;
  if (spec.argv.empty()) throw InvalidArgument("no command to start for " + who);
  std::optional<Pipe> out;
  std::optional<Pipe> err;
  if (spec.pipe_output) {
    out = Pipe::create("stdout pipe for a child process");
    err = Pipe::create("stderr pipe for a child process");
  }

  SpawnSetup setup;
  if (spec.stdin_fd >= 0) {
    check(::posix_spawn_file_actions_adddup2(&setup.actions_, spec.stdin_fd, 0),
          "posix_spawn_file_actions_adddup2", who);
  } else {
    check(::posix_spawn_file_actions_addopen(&setup.actions_, 0, "/dev/null", O_RDONLY, 0),
          "posix_spawn_file_actions_addopen", who);
  }
  if (spec.pipe_output) {
    check(::posix_spawn_file_actions_adddup2(&setup.actions_, out->write.fd(), 1),
          "posix_spawn_file_actions_adddup2", who);
    check(::posix_spawn_file_actions_adddup2(&setup.actions_, err->write.fd(), 2),
          "posix_spawn_file_actions_adddup2", who);
  }
  // Descriptors the launcher inherited without close-on-exec must not reach the child (a rank
  // holding a pipe from kolorun's parent would keep that parent waiting for end-of-file).
  check(::posix_spawn_file_actions_addclosefrom_np(&setup.actions_, 3),
        "posix_spawn_file_actions_addclosefrom_np", who);

  sigset_t empty;
  sigemptyset(&empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGCHLD);
  check(::posix_spawnattr_setsigmask(&setup.attributes_, &empty), "posix_spawnattr_setsigmask",
        who);
  check(::posix_spawnattr_setsigdefault(&setup.attributes_, &defaults),
        "posix_spawnattr_setsigdefault", who);
  check(::posix_spawnattr_setpgroup(&setup.attributes_, 0), "posix_spawnattr_setpgroup", who);
  check(::posix_spawnattr_setflags(&setup.attributes_, POSIX_SPAWN_SETPGROUP |
                                                           POSIX_SPAWN_SETSIGMASK |
                                                           POSIX_SPAWN_SETSIGDEF),
        "posix_spawnattr_setflags", who);

  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = to_envp_strings(spec.env);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);

  pid_t pid = -1;
  // posix_spawn has no affinity attribute, but the child starts with the spawning thread's mask:
  // this thread takes the child's CPUs for the moment of the spawn.
  std::optional<ThreadCpus> restrict;
  if (cpus) restrict.emplace(*cpus);
  // glibc's posix_spawnp waits until the exec succeeded or failed, and returns exec's errno.
  int result =
      ::posix_spawnp(&pid, argv[0], &setup.actions_, &setup.attributes_, argv.data(), envp.data());
  restrict.reset();
  if (result != 0) {
    throw SystemError("posix_spawnp", result,
                      fmt::format("starting '{}' for {}", spec.argv[0], who));
  }
  SpawnedProcess process;
  process.pid = pid;
  if (spec.pipe_output) {
    process.stdout_read = std::move(out->read);
    process.stderr_read = std::move(err->read);
  }
  return process;
}

}  // namespace kolo::launcher
