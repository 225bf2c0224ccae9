#include "bench/async_clients.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

namespace chorus {
namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

// A submitting thread and the slots it owns.
class Submitter {
 public:
  Submitter(Node* node, const AsyncClientsConfig& config, int first_slot, int slots,
            std::vector<ClientResult>* results)
      : node_(node),
        config_(config),
        first_slot_(first_slot),
        slots_(static_cast<size_t>(slots)),
        results_(results) {}

  void Run(Clock::time_point end) {
    end_ = end;
    for (size_t i = 0; i < slots_.size(); ++i) {
      slots_[i].value.assign(config_.value_size, static_cast<char>('a' + (first_slot_ + i) % 26));
      slots_[i].group = static_cast<uint32_t>((first_slot_ + static_cast<int>(i)) % config_.groups);
    }
    // Every slot is counted before the first call: with chain, a done may
    // hand its slot back before the loop below submitted the next one.
    in_flight_ = static_cast<int>(slots_.size());
    for (size_t i = 0; i < slots_.size(); ++i) Submit(i);
    std::vector<size_t> back;
    bool stopping = false;
    while (in_flight_ > 0) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        // One wake-up for every slot that came back meanwhile.
        while (returned_.empty()) {
          waiting_ = true;
          if (!stopping && Clock::now() < end) {
            cv_.wait_until(lock, end);
          } else {
            cv_.wait(lock);
          }
          waiting_ = false;
          if (Clock::now() >= end) break;
        }
        back.swap(returned_);
      }
      for (size_t i : back) {
        --in_flight_;
        stopping = stopping || slots_[i].stopped;
        // With chain, a slot comes back only when it is done for good.
        if (!config_.chain && !stopping && Clock::now() < end) {
          ++in_flight_;
          Submit(i);
        }
      }
      back.clear();
    }
  }

 private:
  struct Slot {
    std::string value;
    uint32_t group = 0;
    Clock::time_point began;
    bool stopped = false;  // its last call got Stopped
  };

  // REQUIRES: slot i is not in flight (the calling thread owns it).
  void Submit(size_t i) {
    Slot& slot = slots_[i];
    slot.began = Clock::now();
    const uint32_t group = slot.group;
    slot.group = (slot.group + 1) % static_cast<uint32_t>(config_.groups);
    // The slot belongs to whoever runs its done until done hands it back.
    ProposeCallback done = [this, i](const Status& s, ProposeResult*) { OnDone(i, s); };
    if (config_.batch) {
      node_->BatchProposeAsync(group, slot.value, std::move(done));
    } else {
      node_->ProposeAsync(group, slot.value, std::move(done));
    }
  }

  // On the group's loop thread (or this one, for a refusal).
  void OnDone(size_t i, const Status& s) {
    const Clock::time_point entered = Clock::now();
    ClientResult& r = (*results_)[static_cast<size_t>(first_slot_) + i];
    if (s.ok()) {
      const auto us =
          std::chrono::duration_cast<std::chrono::microseconds>(entered - slots_[i].began).count();
      r.latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
      if (config_.chain && entered < end_) {
        // Propose again from here (the loop thread): the slot stays out.
        Submit(i);  // the slot may be another done's from here on: not touched
        std::lock_guard<std::mutex> lock(mu_);
        AddDoneTime(entered);
        return;
      }
    } else {
      ++r.failures[Status::CodeName(s.code())];
      slots_[i].stopped = s.IsStopped();
    }
    std::lock_guard<std::mutex> lock(mu_);
    returned_.push_back(i);
    if (waiting_) cv_.notify_one();
    AddDoneTime(entered);  // the whole done, the hand-back and its wake-up included
  }

  // REQUIRES: mu_ held.
  void AddDoneTime(Clock::time_point entered) {
    done_ns_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - entered).count());
    ++dones_;
  }

 public:
  // Once Run returned: the time spent in this submitter's dones, and their count.
  void DoneTime(uint64_t* ns, uint64_t* dones) {
    std::lock_guard<std::mutex> lock(mu_);
    *ns += done_ns_;
    *dones += dones_;
  }

 private:

  Node* const node_;
  const AsyncClientsConfig config_;
  const int first_slot_;
  std::vector<Slot> slots_;
  std::vector<ClientResult>* const results_;
  Clock::time_point end_;  // set by Run before the first call
  int in_flight_ = 0;      // Run's thread only: slots not handed back for good

  std::mutex mu_;
  std::vector<size_t> returned_;  // guarded by mu_: slots whose done ran
  bool waiting_ = false;          // guarded by mu_: Run sleeps on cv_
  uint64_t done_ns_ = 0;          // guarded by mu_
  uint64_t dones_ = 0;            // guarded by mu_
  std::condition_variable cv_;
};

}  // namespace

std::vector<ClientResult> RunAsyncClients(Node* node, const AsyncClientsConfig& config,
                                          Clock::time_point end) {
  std::vector<ClientResult> results(static_cast<size_t>(config.outstanding));
  for (ClientResult& r : results) r.latencies_us.reserve(1 << 14);
  const int submitters = std::max(1, std::min(config.submitters, config.outstanding));
  std::vector<std::unique_ptr<Submitter>> owners;
  int first = 0;
  for (int s = 0; s < submitters; ++s) {
    const int slots = config.outstanding / submitters + (s < config.outstanding % submitters);
    owners.push_back(std::make_unique<Submitter>(node, config, first, slots, &results));
    first += slots;
  }
  std::vector<std::thread> threads;
  for (auto& owner : owners) threads.emplace_back([&owner, end] { owner->Run(end); });
  for (std::thread& t : threads) t.join();
  uint64_t ns = 0, dones = 0;
  for (auto& owner : owners) owner->DoneTime(&ns, &dones);
  if (dones > 0) {
    std::fprintf(stderr, "async_clients: %llu dones, %.3f us each on average (the time chorus's thread spent in them)\n",
                 static_cast<unsigned long long>(dones), static_cast<double>(ns) / 1e3 / dones);
  }
  return results;
}

}  // namespace bench
}  // namespace chorus
