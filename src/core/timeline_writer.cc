#include "core/timeline_writer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "base/errors.h"

namespace kolo::core {

namespace {
// Written after each batch and overwritten by the next one.
constexpr char kClosing[] = "\n]\n";
constexpr long kClosingBytes = sizeof(kClosing) - 1;

// Opens a file a TimelineWriter left (it ends with kClosing) for continuing; nullptr for a
// missing file or one that does not end so. `wrote_event` tells whether it holds events.
std::FILE* open_to_continue(const std::string& path, bool& wrote_event) {
  std::FILE* file = std::fopen(path.c_str(), "r+");
  if (file == nullptr) return nullptr;
  char tail[kClosingBytes] = {};
  const bool ours = std::fseek(file, 0, SEEK_END) == 0 && std::ftell(file) > kClosingBytes &&
                    std::fseek(file, -kClosingBytes, SEEK_END) == 0 &&
                    std::fread(tail, 1, kClosingBytes, file) == kClosingBytes &&
                    std::memcmp(tail, kClosing, kClosingBytes) == 0;
  if (!ours) {
    std::fclose(file);
    return nullptr;
  }
  std::fseek(file, 0, SEEK_END);
  wrote_event = std::ftell(file) > 1 + kClosingBytes;  // more than "[" and the closing
  return file;
}
}  // namespace

TimelineWriter::TimelineWriter(const std::string& path, bool continue_file) : path_(path) {
  if (continue_file) file_ = open_to_continue(path, wrote_event_);
  if (file_ == nullptr) {
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr) {
      throw Error(
          fmt::format("cannot write the timeline file '{}': {}", path, std::strerror(errno)));
    }
    std::fputs("[", file_);
    std::fputs(kClosing, file_);
    std::fflush(file_);
  }
  thread_ = std::thread([this] { run(); });
}

TimelineWriter::~TimelineWriter() { close(); }

void TimelineWriter::push(std::string event) {
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    queue_.push_back(std::move(event));
  }
  wake_.notify_one();
}

void TimelineWriter::close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
}

void TimelineWriter::run() {
  for (;;) {
    std::deque<std::string> batch;
    bool stop = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      batch.swap(queue_);
      stop = closing_;
    }
    write_batch(batch);
    if (stop) return;
  }
}

void TimelineWriter::write_batch(std::deque<std::string>& batch) {
  if (batch.empty()) return;
  // Step back over the closing bracket the previous batch left.
  std::fseek(file_, -kClosingBytes, SEEK_END);
  for (const std::string& event : batch) {
    std::fputs(wrote_event_ ? ",\n" : "\n", file_);
    std::fputs(event.c_str(), file_);
    wrote_event_ = true;
  }
  std::fputs(kClosing, file_);
  std::fflush(file_);
}

}  // namespace kolo::core
