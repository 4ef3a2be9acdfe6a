// How a rank ended, in the words the failure report uses and the number kolorun exits with.
#pragma once

#include <string>

namespace kolo::launcher {

struct ExitStatus {
  enum class Kind { exited, signaled };
  Kind kind = Kind::exited;
  int value = 0;  // exit code, or signal number

  static ExitStatus exited_with(int code) { return {Kind::exited, code}; }
  static ExitStatus killed_by(int signal) { return {Kind::signaled, signal}; }
  // From a waitpid(2) status word.
  static ExitStatus from_wait_status(int status);

  [[nodiscard]] bool success() const { return kind == Kind::exited && value == 0; }
  // What a shell would report: the exit code, or 128 + signal number.
  [[nodiscard]] int shell_code() const { return kind == Kind::exited ? value : 128 + value; }
  // "exited with code 3" or "was killed by signal SIGKILL (9)".
  [[nodiscard]] std::string describe() const;
  bool operator==(const ExitStatus&) const = default;
};

// "SIGKILL", "SIGTERM", ...; "signal 42" for numbers without a name.
std::string signal_name(int signal);

}  // namespace kolo::launcher
