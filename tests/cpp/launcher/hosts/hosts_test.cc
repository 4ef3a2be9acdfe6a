#include "launcher/hosts/hosts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "base/errors.h"
#include "launcher/hosts/local_host.h"
#include "launcher/launcher_test_util.h"

namespace kolo::launcher {
namespace {

using testing::error_of;

TEST(ParseHosts, ListOfHostsAndSlots) {
  EXPECT_EQ(parse_hosts("worker-0:2,worker-1:4,10.0.0.3:1"),
            (std::vector<HostSlots>{{"worker-0", 2}, {"worker-1", 4}, {"10.0.0.3", 1}}));
  EXPECT_EQ(parse_hosts(" a:1 , b_2.example.com:3 "),
            (std::vector<HostSlots>{{"a", 1}, {"b_2.example.com", 3}}));
}

TEST(ParseHosts, BadEntriesAreNamed) {
  EXPECT_NE(error_of([] { parse_hosts("a:2,b"); }).find("invalid host entry 'b'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("a:2,b"); }).find("missing ':<slots>'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("a:x"); }).find("'x' is not a number"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("a:0"); }).find("at least 1"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("a:-1"); }).find("a:-1"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("a:2,"); }).find("empty entry"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts(""); }).find("empty entry"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts(":2"); }).find("invalid host name ''"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("us er:2"); }).find("invalid host name"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("a:2,a:1"); }).find("host 'a' is listed twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts("a:99999999999"); }).find("too large"), std::string::npos);
}

TEST(ParseHostfile, BothFormsCommentsAndBlankLines) {
  const char* text =
      "# cluster\n"
      "\n"
      "node1 slots=4\n"
      "node2:2   # two GPUs\n"
      "  node3   slots=1 max_slots=8\n";
  EXPECT_EQ(parse_hostfile(text, "hosts.txt"),
            (std::vector<HostSlots>{{"node1", 4}, {"node2", 2}, {"node3", 1}}));
}

TEST(ParseHostfile, ErrorsNameFileAndLine) {
  std::string error = error_of([] { parse_hostfile("a slots=2\nb slots=x\n", "hf"); });
  EXPECT_NE(error.find("hf:2:"), std::string::npos) << error;
  EXPECT_NE(error.find("'x' is not a number"), std::string::npos) << error;
  EXPECT_NE(error_of([] { parse_hostfile("a\n", "hf"); }).find("hf:1: missing slot count"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hostfile("a cpus=2\n", "hf"); }).find("unexpected 'cpus=2'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hostfile("a:1 slots=2\n", "hf"); }).find("slots given twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hostfile("a slots=0\n", "hf"); }).find("at least 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hostfile("# nothing\n\n", "hf"); }).find("lists no hosts"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hostfile("a:1\na slots=1\n", "hf"); }).find("listed twice"),
            std::string::npos);
}

TEST(ParseHostfile, ReadsFileAndReportsMissingOne) {
  char path[] = "/tmp/kolo_hostfile_XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "localhost slots=3\n";
  EXPECT_EQ(parse_hostfile(read_text_file(path, "hostfile"), path),
            (std::vector<HostSlots>{{"localhost", 3}}));
  std::remove(path);
  EXPECT_THROW(read_text_file(path, "hostfile"), SystemError);
}

SlotAssignment slot(const char* host, int rank, int size, int local_rank, int local_size,
                    int cross_rank, int cross_size) {
  return SlotAssignment{host, rank, size, local_rank, local_size, cross_rank, cross_size};
}

TEST(AssignSlots, SingleHost) {
  EXPECT_EQ(assign_slots({{"localhost", 2}}, 2),
            (std::vector<SlotAssignment>{slot("localhost", 0, 2, 0, 2, 0, 1),
                                         slot("localhost", 1, 2, 1, 2, 0, 1)}));
}

TEST(AssignSlots, TwoHostsFilledInOrder) {
  EXPECT_EQ(
      assign_slots({{"a", 2}, {"b", 2}}, 4),
      (std::vector<SlotAssignment>{slot("a", 0, 4, 0, 2, 0, 2), slot("a", 1, 4, 1, 2, 0, 2),
                                   slot("b", 2, 4, 0, 2, 1, 2), slot("b", 3, 4, 1, 2, 1, 2)}));
}

TEST(AssignSlots, FewerRanksThanSlotsLeavesLastHostPartial) {
  // a:2,b:2 with -np 3: local rank 1 exists only on a, so its cross group has one member.
  EXPECT_EQ(assign_slots({{"a", 2}, {"b", 2}}, 3),
            (std::vector<SlotAssignment>{slot("a", 0, 3, 0, 2, 0, 2), slot("a", 1, 3, 1, 2, 0, 1),
                                         slot("b", 2, 3, 0, 1, 1, 2)}));
}

TEST(AssignSlots, UnevenHosts) {
  auto plan = assign_slots({{"a", 1}, {"b", 3}, {"c", 2}}, 6);
  ASSERT_EQ(plan.size(), 6u);
  EXPECT_EQ(plan[0], slot("a", 0, 6, 0, 1, 0, 3));
  EXPECT_EQ(plan[1], slot("b", 1, 6, 0, 3, 1, 3));
  EXPECT_EQ(plan[2], slot("b", 2, 6, 1, 3, 0, 2));
  EXPECT_EQ(plan[3], slot("b", 3, 6, 2, 3, 0, 1));
  EXPECT_EQ(plan[4], slot("c", 4, 6, 0, 2, 2, 3));
  EXPECT_EQ(plan[5], slot("c", 5, 6, 1, 2, 1, 2));
  EXPECT_EQ(hosts_in_plan(plan), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(AssignSlots, HostsWithoutRanksAreNotInThePlan) {
  auto plan = assign_slots({{"a", 4}, {"b", 4}}, 2);
  EXPECT_EQ(hosts_in_plan(plan), (std::vector<std::string>{"a"}));
  EXPECT_EQ(plan[1], slot("a", 1, 2, 1, 2, 0, 1));
}

TEST(AssignSlots, TooManyProcessesNamesBothNumbers) {
  std::string error = error_of([] { assign_slots({{"a", 2}, {"b", 1}}, 4); });
  EXPECT_NE(error.find("requested more processes (4) than there are available slots (3)"),
            std::string::npos)
      << error;
  EXPECT_NE(error_of([] { assign_slots({{"a", 2}}, 0); }).find("at least 1"), std::string::npos);
}

TEST(LocalHost, LoopbackAndOwnNamesAreLocal) {
  EXPECT_TRUE(is_local_host("localhost", "node7"));
  EXPECT_TRUE(is_local_host("LOCALHOST", "node7"));
  EXPECT_TRUE(is_local_host("127.0.0.1", "node7"));
  EXPECT_TRUE(is_local_host("127.0.1.1", "node7"));
  EXPECT_TRUE(is_local_host("::1", "node7"));
  // Other loopback addresses stand for hosts of their own, reached over ssh.
  EXPECT_FALSE(is_local_host("127.0.0.2", "node7"));
  EXPECT_TRUE(is_local_host("node7", "node7"));
  EXPECT_TRUE(is_local_host("node7", "node7.cluster.example"));
  EXPECT_TRUE(is_local_host("node7.cluster.example", "node7"));
  EXPECT_FALSE(is_local_host("node8", "node7"));
  EXPECT_FALSE(is_local_host("10.0.0.7", "node7"));
  EXPECT_FALSE(is_local_host("node77", "node7"));
  EXPECT_TRUE(is_local_host(machine_hostname(), machine_hostname()));
}

}  // namespace
}  // namespace kolo::launcher
