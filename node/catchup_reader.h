// CatchupReader: serves the catch-up reads of every group of a Node on one
// thread of its own, so that no group loop waits on the disk for a peer that
// lags behind.
//
// A group's core answers a catch-up request from its cache of recent values;
// for older ones it plans a paxos::CatchupRead (paxos/catchup.h) instead of
// reading its log in the middle of a round, where the read would delay the
// round's fsync and everything behind it. The group loop hands each read
// here once the round that planned it is persisted (a read may cover records
// that round wrote); this thread builds the LEARN_VALUES reply with
// paxos::ReadCatchup from the group's LogStorage, which allows concurrent
// readers (chorus/log_storage.h), and sends it through the Transport.
//
// Why a thread of its own: the TimerThread must only post events (its
// callbacks run on the one timer thread of the process, and a disk read
// there would delay every timer of every group); a thread per group would
// idle almost always. One per Node serves reads in the order the groups
// handed them over.
//
// Why bounded, and dropping: a peer keeps one catch-up request outstanding
// per group and asks again on its next learn tick when no reply came, so
// when the disk is slower than the asks, new reads only repeat ones already
// queued. Beyond max_queued the new read is dropped and counted: the read
// queued earlier still answers that peer, and a lost one is asked for again.
// The queue holds descriptions (a few dozen bytes each); replies are built
// one at a time, so the reader holds at most one batch in memory.
#ifndef CHORUS_NODE_CATCHUP_READER_H_
#define CHORUS_NODE_CATCHUP_READER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <thread>

#include "chorus/log_storage.h"
#include "chorus/status.h"
#include "chorus/transport.h"
#include "paxos/outputs.h"
#include "utils/logging.h"
#include "utils/mutex.h"

namespace chorus {

class CatchupReader {
 public:
  // `transport` and `logger` are borrowed and must outlive the reader.
  // REQUIRES: max_queued >= 1.
  CatchupReader(Transport* transport, Logger* logger, size_t max_queued);
  // Stops (see Stop).
  ~CatchupReader();

  CatchupReader(const CatchupReader&) = delete;
  CatchupReader& operator=(const CatchupReader&) = delete;

  // Starts the thread. IOError if it cannot be created. Call once.
  Status Start();

  // Thread-safe. Queues `read` of group `group` (its reply is framed for
  // that group) from `log`, which is borrowed: it must stay valid until
  // Stop() returned. REQUIRES: the round that planned `read` is persisted.
  // Returns false, and counts the read in dropped(), when max_queued reads
  // already wait or Stop() was called.
  bool Submit(uint32_t group, LogStorage* log, const paxos::CatchupRead& read);

  // Drops the reads still queued (counted in dropped()), waits for the one
  // being served, joins the thread. After it returns no log is read and
  // nothing is sent. Idempotent; thread-safe.
  void Stop();

  // Thread-safe counters.
  // Replies sent (each held at least one value).
  uint64_t served() const { return served_.load(std::memory_order_relaxed); }
  // Reads refused by Submit or dropped by Stop.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Reads that stopped at a bad record in the log (logged; the good values
  // before it were still sent).
  uint64_t bad_records() const { return bad_records_.load(std::memory_order_relaxed); }

 private:
  struct Job {
    uint32_t group = 0;
    LogStorage* log = nullptr;
    paxos::CatchupRead read;
  };

  void Run();
  void Serve(const Job& job);

  Transport* const transport_;
  Logger* const logger_;
  const size_t max_queued_;

  Mutex mu_;
  CondVar wake_;  // queue_ non-empty, or stopping_
  std::deque<Job> queue_ GUARDED_BY(mu_);  // at most max_queued_ jobs
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;            // started by Start, joined by Stop
  Mutex stop_mu_;            // serialises Stop (the join)

  std::atomic<uint64_t> served_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> bad_records_{0};
};

}  // namespace chorus

#endif  // CHORUS_NODE_CATCHUP_READER_H_
