// What kolorun and its remote agent (`kolorun --remote-agent`, started over ssh on each remote
// host) say to each other over the ssh session's three streams:
//  - stdin, launcher to agent: the rank's environment as a block of hex-encoded NAME=value lines
//    (the job secret is in it: it must not appear on any command line), then control lines
//    ("signal 15"; "end-if-stopped 5000" once the other ranks have ended: end the rank should it
//    stay stopped for longer than that many milliseconds), then end-of-file when the launcher is
//    gone, on which the agent kills the rank;
//  - stdout/stderr, agent to launcher: the rank's own output, untouched, and as the agent's very
//    last stderr line a status line saying precisely how the rank ended, which the launcher takes
//    out of the output and uses for its failure report.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "launcher/spawn/exit_status.h"
#include "launcher/spawn/rank_environment.h"

namespace kolo::launcher {

// The environment block the launcher writes first; ends with "end\n".
std::string encode_agent_environment(const Environment& env);

// Reads the agent's stdin line by line (buffered, so the control lines after the environment are
// kept). Not thread-safe; one per agent.
class AgentInput {
 public:
  explicit AgentInput(int fd) : fd_(fd) {}
  // Reads the environment block; throws InvalidArgument when the stream ends early or a line is
  // not well formed.
  Environment read_environment();
  // Reads what is available without blocking (the fd is non-blocking once the environment has
  // been read); returns the signals asked for, and sets `closed` at end-of-file.
  std::vector<int> read_signal_requests(bool& closed);
  // The allowance of the last "end-if-stopped" line read so far (see StoppedRankWatch), if any.
  [[nodiscard]] std::optional<Duration> stopped_watch() const { return stopped_watch_; }

 private:
  // One line without its "\n" (blocking), or nullopt at end-of-file.
  std::optional<std::string> next_line();

  int fd_;
  std::string buffer_;
  std::optional<Duration> stopped_watch_;
};

// "signal 15\n": asks the agent to send that signal to the rank's process group.
std::string agent_signal_request(int signal);
// "end-if-stopped 5000\n": the other ranks have ended; the agent watches its rank as kolorun
// watches local ones (launcher/stopped_rank_watch.h) and kills it once stopped for longer.
std::string agent_stopped_watch_request(Duration allowance);

// The agent's last stderr line, and its parse (nullopt when `line` is not one). `line` may end in
// "\n".
std::string agent_status_line(const ExitStatus& status);
std::optional<ExitStatus> parse_agent_status_line(std::string_view line);

}  // namespace kolo::launcher
