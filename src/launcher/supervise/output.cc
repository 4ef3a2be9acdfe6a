#include "launcher/supervise/output.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <ctime>

#include "base/errors.h"

namespace kolo::launcher {

namespace {

void make_directory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw SystemError("mkdir", errno, "output directory " + path);
  }
}

// mkdir -p: the output directory may be nested and need not exist yet.
void make_directories(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    make_directory(path.substr(0, slash));
  }
  make_directory(path);
}

UniqueFd create_log_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError("open", errno, "rank log file " + path);
  return UniqueFd(fd);
}

// time.asctime(time.localtime()) as horovodrun writes it: "Tue Jun  4 12:00:00 2024".
std::string asctime_now() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char text[64];
  size_t length = std::strftime(text, sizeof(text), "%a %b %e %H:%M:%S %Y", &local);
  return std::string(text, length);
}

}  // namespace

void LineSplitter::feed(std::string_view bytes, const Emit& emit) {
  for (char c : bytes) {
    // A '\r' is held back until the next byte shows whether it starts "\r\n" (one terminator).
    if (!pending_.empty() && pending_.back() == '\r' && c != '\n') {
      emit(pending_);
      pending_.clear();
    }
    pending_.push_back(c);
    if (c == '\n') {
      emit(pending_);
      pending_.clear();
    } else if (c != '\r' && pending_.size() >= max_line_) {
      pending_.push_back('\n');
      emit(pending_);
      pending_.clear();
    }
  }
}

void LineSplitter::finish(const Emit& emit) {
  if (pending_.empty()) return;
  pending_.push_back('\n');
  emit(pending_);
  pending_.clear();
}

std::string line_prefix(int rank, StreamKind stream, const std::optional<std::string>& timestamp) {
  return fmt::format("{}[{}]<{}>:", timestamp.value_or(""), rank,
                     stream == StreamKind::out ? "stdout" : "stderr");
}

std::string padded_rank(int rank, int size) {
  const int width = static_cast<int>(std::to_string(size > 1 ? size - 1 : 0).size());
  return fmt::format("{:0{}}", rank, width);
}

OutputMultiplexer::OutputMultiplexer(OutputOptions options) : options_(std::move(options)) {
  if (options_.log_dir) make_directories(*options_.log_dir);
}

void OutputMultiplexer::add_rank(int rank, UniqueFd stdout_read, UniqueFd stderr_read,
                                 LineFilter stderr_filter) {
  UniqueFd out_log;
  UniqueFd err_log;
  if (options_.log_dir) {
    const std::string dir =
        fmt::format("{}/rank.{}", *options_.log_dir, padded_rank(rank, options_.world_size));
    make_directory(dir);
    out_log = create_log_file(dir + "/stdout");
    err_log = create_log_file(dir + "/stderr");
  }
  for (UniqueFd* pipe : {&stdout_read, &stderr_read}) {
    int flags = ::fcntl(pipe->fd(), F_GETFL);
    if (flags < 0 || ::fcntl(pipe->fd(), F_SETFL, flags | O_NONBLOCK) != 0) {
      throw SystemError("fcntl(O_NONBLOCK)", errno, fmt::format("output pipe of rank {}", rank));
    }
  }
  channels_.push_back(Channel{
      rank, StreamKind::out, std::move(stdout_read), std::move(out_log), LineSplitter(), {}});
  channels_.push_back(Channel{rank, StreamKind::err, std::move(stderr_read), std::move(err_log),
                              LineSplitter(), std::move(stderr_filter)});
}

void OutputMultiplexer::append_pollfds(std::vector<pollfd>& fds) const {
  for (const auto& channel : channels_) {
    if (channel.pipe.valid()) fds.push_back(pollfd{channel.pipe.fd(), POLLIN, 0});
  }
}

void OutputMultiplexer::handle(const pollfd& ready) {
  if (ready.revents == 0) return;
  for (auto& channel : channels_) {
    if (channel.pipe.valid() && channel.pipe.fd() == ready.fd) {
      if (!read_available(channel)) close_channel(channel);
      return;
    }
  }
}

void OutputMultiplexer::drain_rank(int rank) {
  for (auto& channel : channels_) {
    if (channel.rank == rank && channel.pipe.valid() && !read_available(channel)) {
      close_channel(channel);
    }
  }
}

bool OutputMultiplexer::pump(int timeout_ms) {
  std::vector<pollfd> fds;
  append_pollfds(fds);
  if (fds.empty()) return false;
  int ready = ::poll(fds.data(), fds.size(), timeout_ms);
  if (ready < 0 && errno != EINTR) throw SystemError("poll", errno, "rank output pipes");
  for (const auto& fd : fds) handle(fd);
  return true;
}

bool OutputMultiplexer::rank_open(int rank) const {
  for (const auto& channel : channels_) {
    if (channel.rank == rank && channel.pipe.valid()) return true;
  }
  return false;
}

bool OutputMultiplexer::all_closed() const {
  for (const auto& channel : channels_) {
    if (channel.pipe.valid()) return false;
  }
  return true;
}

void OutputMultiplexer::close_all() {
  for (auto& channel : channels_) {
    if (channel.pipe.valid()) close_channel(channel);
  }
}

bool OutputMultiplexer::read_available(Channel& channel) {
  char buffer[16384];
  while (true) {
    ssize_t n = ::read(channel.pipe.fd(), buffer, sizeof(buffer));
    if (n > 0) {
      channel.splitter.feed(std::string_view(buffer, static_cast<size_t>(n)),
                            [&](std::string_view line) { write_line(channel, line); });
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    return false;  // end of stream, or an error that means the same for us
  }
}

void OutputMultiplexer::write_line(const Channel& channel, std::string_view line) {
  if (channel.filter && channel.filter(line)) return;
  std::optional<std::string> timestamp;
  if (options_.timestamp) timestamp = asctime_now();
  std::string text = line_prefix(channel.rank, channel.kind, timestamp);
  text.append(line);
  // A closed stdout (kolorun | head) must not stop the job: keep draining, drop what cannot go.
  const int target = channel.kind == StreamKind::out ? options_.stdout_fd : options_.stderr_fd;
  (void)write_fully(target, text.data(), text.size());
  if (channel.log_file.valid()) (void)write_fully(channel.log_file.fd(), line.data(), line.size());
}

void OutputMultiplexer::close_channel(Channel& channel) {
  channel.splitter.finish([&](std::string_view line) { write_line(channel, line); });
  channel.pipe.reset();
  channel.log_file.reset();
}

}  // namespace kolo::launcher
