#include "launcher/supervise/output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kolo::launcher {
namespace {

std::vector<std::string> split(LineSplitter& splitter, const std::vector<std::string>& chunks,
                               bool finish) {
  std::vector<std::string> lines;
  auto emit = [&](std::string_view line) { lines.emplace_back(line); };
  for (const auto& chunk : chunks) splitter.feed(chunk, emit);
  if (finish) splitter.finish(emit);
  return lines;
}

using Lines = std::vector<std::string>;

TEST(LineSplitter, WholeLinesAcrossChunks) {
  LineSplitter splitter;
  EXPECT_EQ(split(splitter, {"hel", "lo\nwor", "ld\n\n"}, false),
            (Lines{"hello\n", "world\n", "\n"}));
}

TEST(LineSplitter, PartialLastLineIsCompletedAtFinish) {
  LineSplitter splitter;
  EXPECT_EQ(split(splitter, {"a\nno newline"}, false), (Lines{"a\n"}));
  EXPECT_EQ(split(splitter, {}, true), (Lines{"no newline\n"}));
  EXPECT_EQ(split(splitter, {}, true), Lines{});  // nothing left twice
}

TEST(LineSplitter, CarriageReturnsEndLinesAndCrLfIsOne) {
  LineSplitter splitter;
  EXPECT_EQ(split(splitter, {"10%\r20%\r", "\ndone\r\n"}, false),
            (Lines{"10%\r", "20%\r\n", "done\r\n"}));
  LineSplitter held;
  EXPECT_EQ(split(held, {"50%\r"}, false), Lines{});  // waits: "\r\n" may be split across reads
  EXPECT_EQ(split(held, {"60%"}, true), (Lines{"50%\r", "60%\n"}));
}

TEST(LineSplitter, OverlongLinesAreCut) {
  LineSplitter splitter(4);
  EXPECT_EQ(split(splitter, {"abcdefghij\n"}, false), (Lines{"abcd\n", "efgh\n", "ij\n"}));
}

TEST(OutputFormat, PrefixesAndPadding) {
  EXPECT_EQ(line_prefix(1, StreamKind::out, std::nullopt), "[1]<stdout>:");
  EXPECT_EQ(line_prefix(12, StreamKind::err, std::nullopt), "[12]<stderr>:");
  EXPECT_EQ(line_prefix(0, StreamKind::out, std::string("Mon Jan  1 00:00:00 2024")),
            "Mon Jan  1 00:00:00 2024[0]<stdout>:");
  EXPECT_EQ(padded_rank(3, 1), "3");
  EXPECT_EQ(padded_rank(3, 10), "3");
  EXPECT_EQ(padded_rank(3, 11), "03");
  EXPECT_EQ(padded_rank(42, 128), "042");
}

// A temporary file standing in for kolorun's stdout or stderr.
class Capture {
 public:
  Capture() {
    char name[] = "/tmp/kolo_output_test_XXXXXX";
    fd_ = ::mkstemp(name);
    path_ = name;
  }
  ~Capture() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  std::string text() const {
    std::ifstream file(path_);
    std::stringstream content;
    content << file.rdbuf();
    return content.str();
  }

 private:
  int fd_ = -1;
  std::string path_;
};

void write_to(const UniqueFd& fd, const std::string& text) {
  ASSERT_TRUE(write_fully(fd.fd(), text.data(), text.size()));
}

void pump_until_closed(OutputMultiplexer& mux) {
  for (int i = 0; i < 1000 && !mux.all_closed(); ++i) mux.pump(10);
  ASSERT_TRUE(mux.all_closed());
}

TEST(OutputMultiplexer, PrefixesEachRanksLinesOnTheRightStream) {
  Capture out, err;
  OutputMultiplexer mux(OutputOptions{out.fd(), err.fd(), std::nullopt, 2, false});
  Pipe out0 = Pipe::create("test"), err0 = Pipe::create("test");
  Pipe out1 = Pipe::create("test"), err1 = Pipe::create("test");
  mux.add_rank(0, std::move(out0.read), std::move(err0.read));
  mux.add_rank(1, std::move(out1.read), std::move(err1.read));

  // Rank 0 writes half a line, rank 1 a whole one: rank 0's half must not be split by rank 1's.
  write_to(out0.write, "hello ");
  write_to(out1.write, "one\n");
  mux.pump(100);
  mux.pump(0);
  write_to(out0.write, "world\ntail");
  write_to(err1.write, "oops\n");
  out0.write.reset();
  err0.write.reset();
  out1.write.reset();
  err1.write.reset();
  pump_until_closed(mux);

  const std::string stdout_text = out.text();
  EXPECT_NE(stdout_text.find("[1]<stdout>:one\n"), std::string::npos) << stdout_text;
  EXPECT_NE(stdout_text.find("[0]<stdout>:hello world\n"), std::string::npos) << stdout_text;
  EXPECT_NE(stdout_text.find("[0]<stdout>:tail\n"), std::string::npos) << stdout_text;
  EXPECT_EQ(stdout_text.size(), std::string("[1]<stdout>:one\n[0]<stdout>:hello world\n"
                                            "[0]<stdout>:tail\n")
                                    .size());
  EXPECT_EQ(err.text(), "[1]<stderr>:oops\n");
}

TEST(OutputMultiplexer, DrainRankReadsWhatIsBufferedWithoutWaiting) {
  Capture out, err;
  OutputMultiplexer mux(OutputOptions{out.fd(), err.fd(), std::nullopt, 1, false});
  Pipe o = Pipe::create("test"), e = Pipe::create("test");
  mux.add_rank(0, std::move(o.read), std::move(e.read));
  write_to(o.write, "last words\n");
  mux.drain_rank(0);  // the writer is still open: must return, not block
  EXPECT_EQ(out.text(), "[0]<stdout>:last words\n");
  EXPECT_TRUE(mux.rank_open(0));
  o.write.reset();
  e.write.reset();
  mux.drain_rank(0);
  EXPECT_FALSE(mux.rank_open(0));
}

TEST(OutputMultiplexer, WritesRawPerRankLogFiles) {
  char dir_template[] = "/tmp/kolo_logs_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = std::string(dir_template) + "/nested/logs";
  Capture out, err;
  {
    OutputMultiplexer mux(OutputOptions{out.fd(), err.fd(), dir, 12, false});
    Pipe o = Pipe::create("test"), e = Pipe::create("test");
    mux.add_rank(7, std::move(o.read), std::move(e.read));
    write_to(o.write, "to stdout\n");
    write_to(e.write, "to stderr");
    o.write.reset();
    e.write.reset();
    pump_until_closed(mux);
  }
  auto read = [](const std::string& path) {
    std::ifstream file(path);
    std::stringstream content;
    content << file.rdbuf();
    return content.str();
  };
  EXPECT_EQ(read(dir + "/rank.07/stdout"), "to stdout\n");
  EXPECT_EQ(read(dir + "/rank.07/stderr"), "to stderr\n");
  EXPECT_EQ(out.text(), "[7]<stdout>:to stdout\n");
  EXPECT_EQ(err.text(), "[7]<stderr>:to stderr\n");
  std::filesystem::remove_all(dir_template);
}

TEST(OutputMultiplexer, TimestampedLinesKeepTheRankPrefix) {
  Capture out, err;
  OutputMultiplexer mux(OutputOptions{out.fd(), err.fd(), std::nullopt, 1, true});
  Pipe o = Pipe::create("test"), e = Pipe::create("test");
  mux.add_rank(0, std::move(o.read), std::move(e.read));
  write_to(o.write, "x\n");
  o.write.reset();
  e.write.reset();
  pump_until_closed(mux);
  const std::string text = out.text();
  // "Www Mmm dd hh:mm:ss yyyy[0]<stdout>:x\n"
  EXPECT_EQ(text.size(), 24 + std::string("[0]<stdout>:x\n").size()) << text;
  EXPECT_EQ(text.substr(24), "[0]<stdout>:x\n");
}

}  // namespace
}  // namespace kolo::launcher
