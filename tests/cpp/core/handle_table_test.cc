#include "core/handle_table.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <thread>

#include "base/errors.h"
#include "core/tensor_queue.h"

namespace kolo::core {
namespace {

TEST(HandleTable, CompleteThenWaitAndRelease) {
  HandleTable table;
  HandleId h = table.create();
  EXPECT_FALSE(table.poll(h));
  std::thread finisher([&] { table.complete(h); });
  table.wait(h);
  finisher.join();
  EXPECT_TRUE(table.poll(h));
  (void)table.release(h);
  EXPECT_THROW((void)table.poll(h), InvalidArgument);
}

TEST(HandleTable, FailureIsRethrownWithItsMessage) {
  HandleTable table;
  HandleId h = table.create();
  table.fail(h, "rank 2 closed the connection");
  try {
    table.wait(h);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "rank 2 closed the connection");
  }
}

TEST(HandleTable, WaitForGivesUpWhilePendingAndSeesTheLaterResult) {
  HandleTable table;
  HandleId h = table.create();
  EXPECT_FALSE(table.wait_for(h, std::chrono::milliseconds(20)));
  EXPECT_FALSE(table.anyone_waiting());  // the timed-out waiter is no longer counted
  std::thread finisher([&] {
    // complete() only once the waiter is inside, so the wait really is woken.
    while (!table.anyone_waiting()) std::this_thread::yield();
    table.complete(h);
  });
  EXPECT_TRUE(table.wait_for(h, std::chrono::hours(1)));
  finisher.join();
  EXPECT_FALSE(table.anyone_waiting());
  (void)table.release(h);
}

TEST(HandleTable, WaitForRethrowsAFailureAndRefusesUnknownHandles) {
  HandleTable table;
  HandleId h = table.create();
  table.fail(h, "rank 1 closed the connection");
  EXPECT_THROW((void)table.wait_for(h, std::chrono::milliseconds(1)), Error);
  (void)table.release(h);
  EXPECT_THROW((void)table.wait_for(h, std::chrono::milliseconds(1)), InvalidArgument);
  EXPECT_FALSE(table.anyone_waiting());
}

TEST(HandleTable, ReleaseOfPendingHandleIsRefused) {
  HandleTable table;
  HandleId h = table.create();
  EXPECT_THROW((void)table.release(h), InvalidArgument);
  EXPECT_NE(table.create(), h);
}

TEST(HandleTable, ReleaseIfDoneLeavesPendingHandlesAndForgetsDoneOnes) {
  HandleTable table;
  HandleId pending = table.create();
  HandleId done = table.create();
  HandleId failed = table.create();
  table.complete(done);
  table.fail(failed, "tensor 'x' mismatched");
  EXPECT_FALSE(table.release_if_done(pending));
  EXPECT_FALSE(table.poll(pending));  // still known, still pending
  EXPECT_FALSE(table.anyone_waiting());
  EXPECT_TRUE(table.release_if_done(done));
  EXPECT_THROW((void)table.poll(done), InvalidArgument);  // forgotten
  try {
    (void)table.release_if_done(failed);
    ADD_FAILURE() << "a failed handle did not rethrow";
  } catch (const InvalidArgument&) {
    ADD_FAILURE() << "the failure came back as an invalid argument";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("tensor 'x' mismatched"), std::string::npos);
  }
  EXPECT_THROW((void)table.poll(failed), InvalidArgument);  // forgotten after its error
  EXPECT_THROW((void)table.release_if_done(12345), InvalidArgument);
}

TEST(HandleTable, SucceededTellsDoneFromFailedAndKeepsTheHandle) {
  HandleTable table;
  HandleId pending = table.create();
  HandleId done = table.create();
  HandleId failed = table.create();
  table.complete(done);
  table.fail(failed, "rank 1 closed the connection");
  EXPECT_FALSE(table.succeeded(pending));
  EXPECT_TRUE(table.succeeded(done));
  EXPECT_FALSE(table.succeeded(failed));
  EXPECT_TRUE(table.poll(failed));  // done, though not a success
  // Nothing was forgotten: each one is still released (and a failure rethrown) later.
  EXPECT_TRUE(table.release_if_done(done));
  EXPECT_THROW((void)table.release_if_done(failed), Error);
  EXPECT_THROW((void)table.succeeded(done), InvalidArgument);
  EXPECT_FALSE(table.anyone_waiting());
}

TEST(HandleTable, ACallersWaitCountsAsWaitingBetweenItsSlices) {
  HandleTable table;
  HandleId h = table.create();
  table.begin_caller_wait();
  EXPECT_TRUE(table.anyone_waiting());  // between slices: no thread inside wait_for
  EXPECT_FALSE(table.wait_for(h, std::chrono::milliseconds(1)));
  EXPECT_TRUE(table.anyone_waiting());  // the slice ended, the caller's wait did not
  table.end_caller_wait();
  EXPECT_FALSE(table.anyone_waiting());
  table.complete(h);
  (void)table.release(h);
}

TEST(HandleTable, CompleteAllFinishesEveryHandleBeforeAWaiterWakes) {
  HandleTable table;
  const HandleId first = table.create();
  const HandleId second = table.create();
  const HandleId untouched = table.create();
  bool second_done_when_woken = false;
  std::thread waiter([&] {
    table.wait(first);
    second_done_when_woken = table.poll(second);
  });
  std::vector<std::pair<HandleId, OwnedBuffer>> finished;
  finished.emplace_back(first, OwnedBuffer{});
  finished.emplace_back(second, make_owned_buffer(8, {2}, DataType::float32));
  finished.emplace_back(kNoHandle, OwnedBuffer{});  // a joined rank's stand-in: ignored
  table.complete_all(finished);
  waiter.join();
  EXPECT_TRUE(second_done_when_woken);
  EXPECT_EQ(table.release(second).bytes, 8u);
  EXPECT_TRUE(table.release_if_done(first));
  EXPECT_FALSE(table.poll(untouched));
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

TEST(TensorQueue, OneWakeUpPerBatchNeverLeavesAnEntryUnsignalled) {
  TensorQueue queue;
  EXPECT_FALSE(readable(queue.wake_fd()));
  queue.push(TensorEntry{});
  EXPECT_TRUE(readable(queue.wake_fd()));
  queue.push(TensorEntry{});  // already signalled: no second write needed
  EXPECT_EQ(queue.take_all().size(), 2u);
  EXPECT_FALSE(readable(queue.wake_fd()));
  queue.push(TensorEntry{});  // the next batch signals again
  EXPECT_TRUE(readable(queue.wake_fd()));
  EXPECT_EQ(queue.take_all().size(), 1u);
}

TEST(TensorQueue, TakeAllPreservesOrderAndWakes) {
  TensorQueue queue;
  for (int i = 0; i < 3; ++i) {
    TensorEntry entry;
    entry.request.name = "t" + std::to_string(i);
    queue.push(std::move(entry));
  }
  auto taken = queue.take_all();
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].request.name, "t0");
  EXPECT_EQ(taken[2].request.name, "t2");
  EXPECT_TRUE(queue.take_all().empty());
}

// The background thread leaves entries queued for a caller to drive to that caller until they are
// old (Session::undriven_entries): the age is the oldest waiting entry's, from its push.
TEST(TensorQueue, EntriesAgeFromTheOldestPushUntilTaken) {
  using std::chrono::hours;
  TensorQueue queue;
  EXPECT_FALSE(queue.has_entries_older_than(hours(0)));
  queue.push(TensorEntry{}, /*wake=*/false);
  EXPECT_FALSE(readable(queue.wake_fd()));
  EXPECT_TRUE(queue.has_entries_older_than(hours(0)));
  EXPECT_FALSE(queue.has_entries_older_than(hours(1)));
  queue.push(TensorEntry{}, /*wake=*/false);
  EXPECT_EQ(queue.take_all().size(), 2u);
  EXPECT_FALSE(queue.has_entries_older_than(hours(0)));
}

}  // namespace
}  // namespace kolo::core
