#include "core/timeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/errors.h"

namespace kolo::core {
namespace {

std::string temp_path(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("kolo_timeline_" + tag + "_" + std::to_string(::getpid()) + ".json"))
      .string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The events of a file the writer produced: one JSON object per line between "[" and "]".
std::vector<std::string> events_of(const std::string& text) {
  EXPECT_EQ(text.rfind("[\n", 0), 0u) << text;
  EXPECT_GE(text.size(), 4u);
  EXPECT_EQ(text.substr(text.size() - 3), "\n]\n") << text;
  std::vector<std::string> events;
  if (text.size() < 5) return events;  // "[\n]\n": no event yet
  std::istringstream lines(text.substr(2, text.size() - 5));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == ',') line.pop_back();
    if (line.empty()) continue;
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
    events.push_back(line);
  }
  return events;
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_string("plain"), "\"plain\"");
  EXPECT_EQ(json_string("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
}

TEST(TimelineWriter, FileIsACompleteArrayAfterEveryBatchAndAtClose) {
  const std::string path = temp_path("writer");
  {
    TimelineWriter writer(path);
    EXPECT_EQ(read(path), "[\n]\n");  // valid before any event
    writer.push(R"({"name":"a","ph":"i","ts":1,"pid":0,"tid":0})");
    // The writer thread flushes on its own; wait (bounded) until the event is on disk.
    for (int i = 0; i < 500 && events_of(read(path)).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(events_of(read(path)).size(), 1u);
    for (int i = 0; i < 1000; ++i) {
      writer.push(R"({"name":"b","ph":"i","ts":)" + std::to_string(i) + R"(,"pid":0,"tid":0})");
    }
    writer.close();
    writer.push(R"({"name":"late","ph":"i","ts":0,"pid":0,"tid":0})");  // dropped
  }
  const auto events = events_of(read(path));
  EXPECT_EQ(events.size(), 1001u);
  EXPECT_EQ(events.back(), R"({"name":"b","ph":"i","ts":999,"pid":0,"tid":0})");
  std::filesystem::remove(path);
}

TEST(TimelineWriter, ContinuingKeepsAnEarlierRoundsEventsInOneArray) {
  const std::string path = temp_path("continue");
  {
    TimelineWriter first(path);
    first.push(R"({"name":"round1","ph":"i","ts":1,"pid":0,"tid":0})");
  }
  {
    TimelineWriter second(path, /*continue_file=*/true);
    second.push(R"({"name":"round2","ph":"i","ts":2,"pid":0,"tid":0})");
  }
  const auto events = events_of(read(path));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[0].find("round1"), std::string::npos);
  EXPECT_NE(events[1].find("round2"), std::string::npos);
  {
    TimelineWriter fresh(path);  // not continuing: truncated as before
  }
  EXPECT_TRUE(events_of(read(path)).empty());
  std::filesystem::remove(path);
}

TEST(TimelineWriter, ContinuingAnEmptyArrayOrAForeignFileStartsCleanly) {
  const std::string path = temp_path("continue_foreign");
  {
    TimelineWriter empty(path);  // "[" and the closing only
  }
  {
    TimelineWriter second(path, /*continue_file=*/true);
    second.push(R"({"name":"only","ph":"i","ts":2,"pid":0,"tid":0})");
  }
  EXPECT_EQ(events_of(read(path)).size(), 1u);  // no stray comma before the first event
  {
    std::ofstream foreign(path);
    foreign << "not a timeline";
  }
  {
    TimelineWriter again(path, /*continue_file=*/true);
    again.push(R"({"name":"new","ph":"i","ts":3,"pid":0,"tid":0})");
  }
  const auto events = events_of(read(path));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("new"), std::string::npos);
  std::filesystem::remove(path);
  {
    TimelineWriter missing(path, /*continue_file=*/true);  // no file yet: created
  }
  EXPECT_EQ(read(path), "[\n]\n");
  std::filesystem::remove(path);
}

TEST(TimelineWriter, UnwritablePathIsAnErrorNamingIt) {
  try {
    TimelineWriter writer("/nonexistent-dir/t.json");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-dir/t.json"), std::string::npos);
  }
}

size_t count(const std::vector<std::string>& events, const std::string& needle) {
  size_t n = 0;
  for (const auto& e : events) n += e.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

TEST(Timeline, PhasesOfAFusedAllreduceInOrderAndBalanced) {
  const std::string path = temp_path("phases");
  {
    Timeline timeline(path, /*mark_cycles=*/true);
    timeline.cycle_started();
    timeline.negotiation_started("a", negotiation::OpType::allreduce);
    timeline.rank_ready("b", negotiation::OpType::allreduce, 1);        // b first seen from rank 1
    timeline.negotiation_started("b", negotiation::OpType::allreduce);  // no second begin
    negotiation::Response response;
    response.op = negotiation::OpType::allreduce;
    response.names = {"a", "b"};
    timeline.agreed(response);
    timeline.group_started({response.names, 7, 4096});
    timeline.phase_started(response.names, "MEMCPY_IN_FUSION_BUFFER");
    timeline.phase_ended(response.names);
    timeline.phase_started(response.names, "KOLO_ALLREDUCE");
    timeline.phase_ended(response.names);
    timeline.group_finished(response.names);
    timeline.close();
  }
  const auto events = events_of(read(path));
  EXPECT_EQ(count(events, R"("name":"CYCLE_START","ph":"i","s":"g")"), 1u);
  EXPECT_EQ(count(events, R"("name":"process_name")"), 2u);
  EXPECT_EQ(count(events, R"("name":"NEGOTIATE_ALLREDUCE","ph":"B")"), 2u);
  EXPECT_EQ(count(events, R"("name":"1","ph":"i")"), 1u);
  EXPECT_EQ(count(events, R"("name":"QUEUE","ph":"B")"), 2u);
  EXPECT_EQ(count(events, R"("name":"MEMCPY_IN_FUSION_BUFFER","ph":"B")"), 2u);
  EXPECT_EQ(count(events, R"("args":{"group":7,"tensors":2,"bytes":4096})"), 4u);
  EXPECT_EQ(count(events, R"("ph":"B")"), count(events, R"("ph":"E")"));
  // Tensor a's row, in order.
  std::vector<std::string> a_phases;
  for (const auto& e : events) {
    if (e.find(R"("pid":1,)") == std::string::npos || e.find(R"("ph":"B")") == std::string::npos) {
      continue;
    }
    a_phases.push_back(e.substr(9, e.find('"', 9) - 9));
  }
  EXPECT_EQ(a_phases, (std::vector<std::string>{"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "QUEUE",
                                                "MEMCPY_IN_FUSION_BUFFER", "KOLO_ALLREDUCE"}));
  std::filesystem::remove(path);
}

TEST(Timeline, StoppingEndsOpenPhasesAndErrorsAreRecorded) {
  const std::string path = temp_path("stop");
  {
    Timeline timeline(path, /*mark_cycles=*/false);
    timeline.cycle_started();  // not marked
    timeline.negotiation_started("x", negotiation::OpType::broadcast);
    negotiation::Response failed;
    failed.op = negotiation::OpType::allgather;
    failed.names = {"y"};
    failed.error = "Mismatched \"shape\"";
    timeline.agreed(failed);
    timeline.end_open_phases();
    timeline.close();
  }
  const auto events = events_of(read(path));
  EXPECT_EQ(count(events, "CYCLE_START"), 0u);
  EXPECT_EQ(count(events, R"("name":"NEGOTIATE_BROADCAST","ph":"B")"), 1u);
  EXPECT_EQ(count(events, R"("error":"Mismatched \"shape\"")"), 1u);
  EXPECT_EQ(count(events, R"("ph":"B")"), count(events, R"("ph":"E")"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kolo::core
