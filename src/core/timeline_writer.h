// The timeline's file: Chrome-trace events (one JSON object each) go through a queue to a thread
// of their own, so the background loop never waits on the disk. After every batch the file ends
// with "]", which the next batch overwrites: the file is a complete JSON array whenever a batch
// has been flushed, also while the job runs or after it crashed.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace kolo::core {

class TimelineWriter {
 public:
  // Creates (truncates) `path`; throws kolo::Error naming the path when it cannot. With
  // `continue_file`, a file this writer made before (an earlier elastic round's) is continued
  // instead, so the job keeps one timeline across resets; anything else there is truncated.
  explicit TimelineWriter(const std::string& path, bool continue_file = false);
  ~TimelineWriter();
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  // Queues one event (a JSON object); dropped after close(). Thread-safe.
  void push(std::string event);
  // Writes everything queued, leaves the file a complete JSON array and stops the thread.
  // Thread-safe and idempotent.
  void close();
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  void run();
  void write_batch(std::deque<std::string>& batch);

  std::string path_;
  std::FILE* file_ = nullptr;
  bool wrote_event_ = false;  // writer thread only
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::string> queue_;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace kolo::core
