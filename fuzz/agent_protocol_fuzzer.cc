// What the remote agent reads on its stdin from the launcher over ssh (launcher/agent_protocol.h):
// the environment block, then signal requests until end-of-file; and the status line the launcher
// reads back from the agent's stderr. The input is the whole stdin stream. A decoded environment
// must encode and decode to itself (so no name or value is read wrongly), and only positive
// signal numbers may come out.
#include <fcntl.h>
#include <unistd.h>

#include "fuzz/fuzz_support.h"
#include "launcher/spawn/agent_protocol.h"

namespace {

using namespace kolo;

// A pipe whose read end holds `bytes` and then end-of-file (the inputs fit in a pipe's buffer).
int stream_of(std::string_view bytes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fds[1], bytes.data() + written, bytes.size() - written);
    if (n <= 0) std::abort();
    written += static_cast<size_t>(n);
  }
  ::close(fds[1]);
  return fds[0];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 32768) return 0;
  const std::string_view text = fuzz::as_text(data, size);

  const int fd = stream_of(text);
  launcher::AgentInput input(fd);
  if (auto env = fuzz::decode_or_refuse([&] { return input.read_environment(); })) {
    const int again_fd = stream_of(launcher::encode_agent_environment(*env));
    launcher::AgentInput again(again_fd);
    fuzz::require(again.read_environment() == *env, "environment round trip");
    ::close(again_fd);

    bool closed = false;
    for (int signal : input.read_signal_requests(closed)) {
      fuzz::require(signal > 0, "only positive signal numbers");
    }
    fuzz::require(closed, "end-of-file seen");
  }
  ::close(fd);

  // Every line as the launcher's output filter sees the agent's stderr.
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (auto status = launcher::parse_agent_status_line(text.substr(start, end - start))) {
      fuzz::require(
          launcher::parse_agent_status_line(launcher::agent_status_line(*status)) == status,
          "status line round trip");
    }
    start = end + 1;
  }
  return 0;
}
