#include "node/event_queue.h"

#include <deque>
#include <string>

#include <gtest/gtest.h>

namespace chorus {
namespace event_queue_test {
namespace {

Event Message(size_t bytes) {
  Event e;
  e.kind = Event::Kind::kMessage;
  e.bytes.assign(bytes, 'm');
  return e;
}

TEST(EventQueueTest, MessagesBeyondTheByteBoundAreDroppedOthersAreNot) {
  EventQueue q;
  ASSERT_TRUE(q.PushMessage(Message(600), 1000));
  ASSERT_TRUE(q.PushMessage(Message(600), 1000));   // 600 < 1000 queued: fits
  EXPECT_FALSE(q.PushMessage(Message(1), 1000));    // 1200 queued: full
  Event timeout;
  timeout.kind = Event::Kind::kTimeout;
  EXPECT_TRUE(q.Push(timeout));  // never dropped for space
  std::deque<Event> out;
  ASSERT_TRUE(q.TakeAll(&out, 100));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].bytes.size(), 600u);
  EXPECT_EQ(out[2].kind, Event::Kind::kTimeout);
  // Taking them frees the space.
  EXPECT_TRUE(q.PushMessage(Message(900), 1000));
}

TEST(EventQueueTest, PartialTakesReleaseTheBytesTheyTake) {
  EventQueue q;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(q.PushMessage(Message(250), 1000));
  EXPECT_FALSE(q.PushMessage(Message(250), 1000));
  std::deque<Event> out;
  ASSERT_TRUE(q.TakeAll(&out, 2));
  EXPECT_EQ(out.size(), 2u);
  EXPECT_TRUE(q.PushMessage(Message(250), 1000));  // 500 + 250 queued
  EXPECT_TRUE(q.PushMessage(Message(250), 1000));  // 750 < 1000 before it
  EXPECT_FALSE(q.PushMessage(Message(250), 1000));
}

TEST(EventQueueTest, ClosedQueueRefusesAndHandsBackWhatWasQueued) {
  EventQueue q;
  ASSERT_TRUE(q.PushMessage(Message(10), 1000));
  std::deque<Event> dropped;
  q.Close(&dropped);
  EXPECT_EQ(dropped.size(), 1u);
  EXPECT_FALSE(q.Push(Message(1)));
  EXPECT_FALSE(q.PushMessage(Message(1), 1000));
  std::deque<Event> out;
  EXPECT_FALSE(q.TakeAll(&out, 10));
}

}  // namespace
}  // namespace event_queue_test
}  // namespace chorus
