// Fakes for driving the runtime (node/) deterministically: a manual clock, a
// timer scheduler whose tasks the test fires by hand, and a LogStorage and a
// Transport that record what the group loop does, in one order shared by
// both (an EventOrder), so that a test can ask what had happened before what.
// None of them sleeps: waiting is on a condition variable, for a predicate.
#ifndef CHORUS_UNITTEST_SUPPORT_RUNTIME_FAKES_H_
#define CHORUS_UNITTEST_SUPPORT_RUNTIME_FAKES_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "chorus/log_storage.h"
#include "chorus/transport.h"
#include "node/runtime_env.h"
#include "paxos.pb.h"
#include "utils/coding.h"

namespace chorus {
namespace testing {

// How long a fake waits for a predicate before the test gives up. Generous:
// it bounds a hang, it never measures speed.
constexpr auto kFakeWaitLimit = std::chrono::seconds(30);

// A clock that moves only when told. Thread-safe.
class ManualClock : public Clock {
 public:
  SteadyTime Now() override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  void Advance(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }

 private:
  std::mutex mu_;
  // Far from the epoch, so that "now - something" never underflows.
  SteadyTime now_ = SteadyTime() + std::chrono::hours(24);  // GUARDED_BY(mu_)
};

// Tasks run only when the test fires them (on the test's thread), due on a
// ManualClock. Thread-safe: the group schedules from its loop and from
// proposing threads while the test fires.
class ManualTimerScheduler : public TimerScheduler {
 public:
  explicit ManualTimerScheduler(ManualClock* clock) : clock_(clock) {}

  struct Task {
    TaskId id = 0;
    std::chrono::milliseconds delay{0};
    SteadyTime due;
  };

  TaskId ScheduleAfter(TimerThread::Callback fn, void* arg,
                       std::chrono::milliseconds delay) override {
    return ScheduleAfter([fn, arg] { fn(arg); }, delay);
  }
  TaskId ScheduleAfter(std::function<void()> fn, std::chrono::milliseconds delay) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return TimerThread::kInvalidTaskId;
    const TaskId id = next_id_++;
    tasks_[id] = Entry{Task{id, delay, clock_->Now() + delay}, std::move(fn)};
    ++scheduled_;
    cv_.notify_all();
    return id;
  }
  int Unschedule(TaskId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (id == running_ && id != 0) return 1;
    return tasks_.erase(id) == 1 ? 0 : -1;
  }

  // Refuses every later schedule (as a stopped TimerThread does).
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }

  // Pending tasks, in id (schedule) order.
  std::vector<Task> Pending() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Task> out;
    for (const auto& [id, e] : tasks_) out.push_back(e.task);
    return out;
  }
  // Pending tasks of exactly this delay.
  std::vector<Task> PendingWithDelay(std::chrono::milliseconds delay) {
    std::vector<Task> out;
    for (const Task& t : Pending()) {
      if (t.delay == delay) out.push_back(t);
    }
    return out;
  }
  uint64_t scheduled() {
    std::lock_guard<std::mutex> lock(mu_);
    return scheduled_;
  }

  // Runs task `id` now, whatever its due time. Returns false if it is not
  // pending (cancelled or already run).
  bool Fire(TaskId id) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = tasks_.find(id);
      if (it == tasks_.end()) return false;
      fn = std::move(it->second.fn);
      tasks_.erase(it);
      running_ = id;
    }
    fn();
    std::lock_guard<std::mutex> lock(mu_);
    running_ = 0;
    return true;
  }
  // Runs every task due at the clock's now, earliest first; returns how many.
  int FireDue() {
    int n = 0;
    for (;;) {
      TaskId next = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        const SteadyTime now = clock_->Now();
        SteadyTime best = now;
        for (const auto& [id, e] : tasks_) {
          if (e.task.due <= now && (next == 0 || e.task.due < best)) {
            next = id;
            best = e.task.due;
          }
        }
      }
      if (next == 0 || !Fire(next)) return n;
      ++n;
    }
  }

  // Blocks until pred(Pending()) holds; returns false after kFakeWaitLimit.
  bool WaitFor(const std::function<bool(const std::vector<Task>&)>& pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kFakeWaitLimit, [&] {
      std::vector<Task> pending;
      for (const auto& [id, e] : tasks_) pending.push_back(e.task);
      return pred(pending);
    });
  }
  // Blocks until a task of `delay` scheduled after task `after` is pending;
  // returns its id (0: none came).
  TaskId WaitForDelay(std::chrono::milliseconds delay, TaskId after = 0) {
    TaskId found = 0;
    WaitFor([&](const std::vector<Task>& pending) {
      for (const Task& t : pending) {
        if (t.delay == delay && t.id > after) found = t.id;
      }
      return found != 0;
    });
    return found;
  }
  // Blocks until `n` tasks of `delay` are pending; false if they never are.
  bool WaitForCount(std::chrono::milliseconds delay, size_t n) {
    return WaitFor([&](const std::vector<Task>& pending) {
      size_t k = 0;
      for (const Task& t : pending) k += t.delay == delay;
      return k >= n;
    });
  }

 private:
  struct Entry {
    Task task;
    std::function<void()> fn;
  };
  ManualClock* const clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<TaskId, Entry> tasks_;  // GUARDED_BY(mu_)
  TaskId next_id_ = 1;             // GUARDED_BY(mu_)
  TaskId running_ = 0;             // GUARDED_BY(mu_): the task Fire runs now
  uint64_t scheduled_ = 0;         // GUARDED_BY(mu_)
  bool stopped_ = false;           // GUARDED_BY(mu_)
};

// One sequence shared by a node's recorders: every recorded event takes the
// next number, so "returned before sent" is a comparison. Thread-safe.
class EventOrder {
 public:
  uint64_t Next() { return next_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  std::atomic<uint64_t> next_{1};
};

// Wraps a LogStorage and records every Write: the batch, its sync flag, its
// status, and the EventOrder number taken after it returned.
class RecordingLogStorage : public LogStorage {
 public:
  struct WriteRecord {
    LogWriteBatch batch;
    bool sync = false;
    bool ok = false;
    uint64_t returned = 0;  // EventOrder number, taken once the write returned
  };

  RecordingLogStorage(std::unique_ptr<LogStorage> base, EventOrder* order)
      : base_(std::move(base)), order_(order) {}

  Status Write(const LogWriteBatch& batch, bool sync) override {
    Status s = base_->Write(batch, sync);
    std::lock_guard<std::mutex> lock(mu_);
    writes_.push_back(WriteRecord{batch, sync, s.ok(), order_->Next()});
    return s;
  }
  Status Get(uint64_t i, std::string* record) override { return base_->Get(i, record); }
  Status GetMaxInstanceId(uint64_t* i) override { return base_->GetMaxInstanceId(i); }
  Status GetMinInstanceId(uint64_t* i) override { return base_->GetMinInstanceId(i); }
  Status GetVariable(const std::string& n, std::string* v) override {
    return base_->GetVariable(n, v);
  }

  std::vector<WriteRecord> writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }

 private:
  const std::unique_ptr<LogStorage> base_;
  EventOrder* const order_;
  mutable std::mutex mu_;
  std::vector<WriteRecord> writes_;  // GUARDED_BY(mu_)
};

// A Transport that records every frame sent (with its EventOrder number,
// taken before it is passed on) and hands it to `base` if there is one.
// Without a base it delivers nothing and receives nothing.
class RecordingTransport : public Transport {
 public:
  struct Sent {
    uint64_t to = 0;
    std::string bytes;
    uint64_t order = 0;
  };

  RecordingTransport(Transport* base, EventOrder* order) : base_(base), order_(order) {}

  Status Start(Receiver receiver) override {
    return base_ != nullptr ? base_->Start(std::move(receiver)) : Status::OK();
  }
  Status Send(uint64_t to, std::string message) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      sent_.push_back(Sent{to, message, order_->Next()});
      cv_.notify_all();
    }
    return base_ != nullptr ? base_->Send(to, std::move(message)) : Status::OK();
  }
  void Stop() override {
    if (base_ != nullptr) base_->Stop();
  }

  std::vector<Sent> sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  // Blocks until pred(sent()) holds; returns false after kFakeWaitLimit.
  bool WaitFor(const std::function<bool(const std::vector<Sent>&)>& pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kFakeWaitLimit, [&] { return pred(sent_); });
  }

 private:
  Transport* const base_;
  EventOrder* const order_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Sent> sent_;  // GUARDED_BY(mu_)
};

// Splits a frame the group loop sent (fixed32 group index, then a
// serialized PaxosMsg). Returns false if it is not one.
inline bool DecodeGroupFrame(const std::string& frame, uint32_t* group, paxos::PaxosMsg* msg) {
  if (frame.size() < 4) return false;
  *group = DecodeFixed32(frame.data());
  return msg->ParseFromString(frame.substr(4));
}

// The messages of `type` among `sent`.
inline std::vector<paxos::PaxosMsg> SentOfType(const std::vector<RecordingTransport::Sent>& sent,
                                               paxos::MsgType type) {
  std::vector<paxos::PaxosMsg> out;
  for (const auto& s : sent) {
    uint32_t group = 0;
    paxos::PaxosMsg msg;
    if (DecodeGroupFrame(s.bytes, &group, &msg) && msg.type() == type) out.push_back(msg);
  }
  return out;
}

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_RUNTIME_FAKES_H_
