// Copyright (c) chorus authors.
#include "workload.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>

#include "clock.h"

namespace chorus {
namespace nemesis {
namespace {

// How a reply (or its absence) ends an operation.
Outcome OutcomeOf(const Status& sent, const RespReply& r, bool* ok_reply) {
  *ok_reply = false;
  if (!sent.ok()) return Outcome::kUnknown;
  if (r.type != RespReply::Type::kError) {
    *ok_reply = true;
    return Outcome::kOk;
  }
  if (r.text.compare(0, 8, "TRYAGAIN") == 0) return Outcome::kFailed;
  if (r.text.find("wrong number of arguments") != std::string::npos ||
      r.text.find("must not be empty") != std::string::npos) {
    return Outcome::kFailed;
  }
  return Outcome::kUnknown;
}

}  // namespace

Workload::Workload(Cluster* cluster, const WorkloadOptions& options)
    : cluster_(cluster), options_(options) {}

Workload::~Workload() { Stop(); }

void Workload::Start() {
  start_ns_ = NowNs();
  for (int t = 0; t < options_.threads; ++t) threads_.emplace_back([this, t] { Run(t); });
}

void Workload::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

std::vector<Operation> Workload::History() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Operation> h = history_;
  std::sort(h.begin(), h.end(),
            [](const Operation& a, const Operation& b) { return a.invoke_ns < b.invoke_ns; });
  return h;
}

void Workload::Run(int thread) {
  std::mt19937_64 rng(options_.seed * 1000003 + static_cast<uint64_t>(thread));
  int client = thread;
  uint64_t n = 0;
  // One connection per slot, kept between operations.
  std::map<int, std::unique_ptr<RespClient>> conns;
  // The last value this thread saw per key: CAS expects it (or absence).
  std::map<std::string, std::string> seen;
  while (!stop_) {
    const std::vector<int> members = cluster_->members();
    const int slot = members[rng() % members.size()];
    Operation op;
    op.id = next_id_++;
    op.client = client;
    op.node = Cluster::IdOf(slot);
    const int dice = static_cast<int>(rng() % 100);
    std::vector<std::string> args;
    ++n;
    const std::string value = std::to_string(client) + "." + std::to_string(n);
    if (dice < options_.write_once_percent) {
      op.kind = OpKind::kWrite;
      op.key = "u/" + std::to_string(client) + "/" + std::to_string(n);
      op.value = value;
      args = {"SET", op.key, op.value};
    } else {
      const int64_t period =
          options_.key_seconds > 0
              ? (NowNs() - start_ns_) / (static_cast<int64_t>(options_.key_seconds) * 1000000000)
              : 0;
      op.key = "r" + std::to_string(rng() % options_.keys) + "." + std::to_string(period);
      const int k = static_cast<int>(rng() % 100);
      if (k < 45) {
        op.kind = OpKind::kRead;
        args = {"GET", op.key};
      } else if (k < 75 || !options_.cas) {
        op.kind = OpKind::kWrite;
        op.value = value;
        args = {"SET", op.key, op.value};
      } else {
        op.kind = OpKind::kCas;
        op.value = value;
        op.expected = (rng() % 5 == 0) ? "" : seen[op.key];
        args = {"CHORUS.CAS", op.key, op.expected, op.value};
      }
    }
    std::unique_ptr<RespClient>& c = conns[slot];
    if (!c) c.reset(new RespClient);
    op.invoke_ns = NowNs();
    Status s;
    if (!c->connected()) s = c->Connect(cluster_->Ip(slot), Cluster::kRespPort, options_.timeout_ms);
    RespReply r;
    if (!s.ok()) {
      // Nothing was sent.
      op.outcome = Outcome::kFailed;
    } else {
      s = c->Command(args, &r);
      bool ok_reply;
      op.outcome = OutcomeOf(s, r, &ok_reply);
      if (ok_reply) {
        if (op.kind == OpKind::kRead) {
          if (r.type == RespReply::Type::kBulk) {
            op.output = r.text;
          } else if (r.type != RespReply::Type::kNil) {
            op.outcome = Outcome::kUnknown;
          }
          if (op.outcome == Outcome::kOk) seen[op.key] = op.output;
        } else if (op.kind == OpKind::kCas) {
          if (r.type != RespReply::Type::kInteger) {
            op.outcome = Outcome::kUnknown;
          } else {
            op.cas_swapped = r.integer == 1;
            if (op.cas_swapped) seen[op.key] = op.value;
          }
        } else {
          if (r.type != RespReply::Type::kSimple || r.text != "OK") op.outcome = Outcome::kUnknown;
          if (op.outcome == Outcome::kOk) seen[op.key] = op.value;
        }
      }
    }
    op.complete_ns = NowNs();
    {
      std::lock_guard<std::mutex> lock(mu_);
      history_.push_back(op);
    }
    if (op.outcome == Outcome::kUnknown) {
      c->Close();
      client += options_.threads;
    }
    if (options_.pause_ms > 0) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds(rng() % static_cast<uint64_t>(options_.pause_ms + 1)));
    }
  }
}

}  // namespace nemesis
}  // namespace chorus
