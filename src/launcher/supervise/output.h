// Rank output, as horovodrun prints it: every line a rank writes to stdout appears on kolorun's
// stdout as "[<rank>]<stdout>:<line>", and stderr lines on kolorun's stderr as
// "[<rank>]<stderr>:<line>". Lines are written whole (one write each), so ranks never interleave
// mid-line; a last line without a newline is completed with one when the rank's pipe closes.
// With --output-filename DIR each rank's raw output (no prefix) also goes to
// DIR/rank.<rank>/stdout and .../stderr, the rank zero-padded so the directories sort.
#pragma once

#include <poll.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/spawn/pipe.h"

namespace kolo::launcher {

enum class StreamKind { out, err };

// Splits a byte stream into lines ending in "\n", "\r\n" or a lone "\r" (progress bars redraw a
// line with "\r"; horovodrun forwards those as lines too). A line longer than `max_line` without a
// terminator is cut there, so a rank printing without newlines cannot grow kolorun's memory.
class LineSplitter {
 public:
  using Emit = std::function<void(std::string_view line)>;  // the line includes its terminator
  explicit LineSplitter(size_t max_line = 1 << 20) : max_line_(max_line) {}

  void feed(std::string_view bytes, const Emit& emit);
  // Emits what is left as a final line, adding the missing "\n".
  void finish(const Emit& emit);

 private:
  size_t max_line_;
  std::string pending_;
};

// "[3]<stdout>:"; with a `timestamp`, horovodrun puts asctime in front:
// "Tue Jun  4 12:00:00 2024[3]<stdout>:".
std::string line_prefix(int rank, StreamKind stream, const std::optional<std::string>& timestamp);
// horovodrun's padding of the rank in log directory names: as many digits as size - 1 has.
std::string padded_rank(int rank, int size);

struct OutputOptions {
  int stdout_fd = 1;
  int stderr_fd = 2;
  std::optional<std::string> log_dir;  // --output-filename
  int world_size = 1;                  // for padding rank numbers in log_dir
  bool timestamp = false;
};

class OutputMultiplexer {
 public:
  explicit OutputMultiplexer(OutputOptions options);
  OutputMultiplexer(const OutputMultiplexer&) = delete;
  OutputMultiplexer& operator=(const OutputMultiplexer&) = delete;

  // Sees each stderr line of a rank first; returns true to keep the line out of the output (the
  // remote agent's status line).
  using LineFilter = std::function<bool(std::string_view line)>;

  // Takes the read ends of a rank's pipes (made non-blocking here); creates its log files.
  void add_rank(int rank, UniqueFd stdout_read, UniqueFd stderr_read,
                LineFilter stderr_filter = {});

  // The open pipes, for the caller's poll(2), and what to do when poll reports one of them.
  void append_pollfds(std::vector<pollfd>& fds) const;
  void handle(const pollfd& ready);
  // Reads everything a rank has already written (without waiting): called when the rank exits,
  // so its last words appear before the launcher's report about it.
  void drain_rank(int rank);
  // Polls only the pipes, once, up to `timeout_ms`; returns false when none is open.
  bool pump(int timeout_ms);

  [[nodiscard]] bool rank_open(int rank) const;
  [[nodiscard]] bool all_closed() const;
  // Completes partial lines and closes every pipe and log file.
  void close_all();

 private:
  struct Channel {
    int rank = 0;
    StreamKind kind = StreamKind::out;
    UniqueFd pipe;
    UniqueFd log_file;
    LineSplitter splitter;
    LineFilter filter;
  };

  // Reads until the pipe would block or ends; returns false at end of stream (pipe closed).
  bool read_available(Channel& channel);
  void write_line(const Channel& channel, std::string_view line);
  void close_channel(Channel& channel);

  OutputOptions options_;
  std::vector<Channel> channels_;
};

}  // namespace kolo::launcher
