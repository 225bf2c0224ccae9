// Copyright (c) chorus authors.
#include "checks.h"

#include <chrono>
#include <thread>

#include "clock.h"
#include "workload.h"

namespace chorus {
namespace nemesis {

Status Converge(Cluster* cluster, int timeout_ms, const std::atomic<bool>* stop,
                std::string* digest, std::string* detail) {
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  bool fenced = false;
  size_t next = 0;
  while (!*stop) {
    const std::vector<int> members = cluster->members();
    detail->clear();
    if (!fenced) {
      RespReply r;
      const int via = members[next++ % members.size()];
      Status s = cluster->Command(via, {"SET", "nemesis/fence", "done"}, &r);
      fenced = s.ok() && r.type == RespReply::Type::kSimple;
      *detail = "fence SET through node " + std::to_string(Cluster::IdOf(via)) + ": " +
                (s.ok() ? r.text : s.ToString());
    }
    if (fenced) {
      std::string first;
      bool equal = true;
      for (int slot : members) {
        RespReply r;
        Status s = cluster->Command(slot, {"DEBUG", "DIGEST"}, &r);
        const std::string got = s.ok() ? r.text : s.ToString();
        *detail += "node " + std::to_string(Cluster::IdOf(slot)) + ": " + got + "; ";
        if (!s.ok() || r.type != RespReply::Type::kBulk) {
          equal = false;
        } else if (first.empty()) {
          first = got;
        } else if (got != first) {
          equal = false;
        }
      }
      if (equal) {
        *digest = first;
        return Status::OK();
      }
    }
    if (NowNs() > deadline) return Status::Timeout("the members did not converge: " + *detail);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::Stopped("interrupted");
}

Status CheckLostAcks(Cluster* cluster, const std::vector<Operation>& history, LostAcks* result) {
  std::vector<const Operation*> acked;
  for (const Operation& op : history) {
    if (op.kind == OpKind::kWrite && op.outcome == Outcome::kOk &&
        Workload::IsWriteOnceKey(op.key)) {
      acked.push_back(&op);
    }
  }
  result->acknowledged = acked.size();
  const size_t kChunk = 200;
  for (int slot : cluster->members()) {
    for (size_t begin = 0; begin < acked.size(); begin += kChunk) {
      const size_t end = std::min(acked.size(), begin + kChunk);
      std::vector<std::string> args = {"MGET"};
      for (size_t i = begin; i < end; ++i) args.push_back(acked[i]->key);
      RespReply r;
      Status s = cluster->Command(slot, args, &r, 15000);
      if (!s.ok()) return s;
      if (r.type != RespReply::Type::kArray || r.elements.size() != end - begin) {
        return Status::IOError("node " + std::to_string(Cluster::IdOf(slot)) +
                               ": MGET answered " + r.text);
      }
      for (size_t i = begin; i < end; ++i) {
        const RespReply& e = r.elements[i - begin];
        ++result->reads;
        const bool ok = e.type == RespReply::Type::kBulk && e.text == acked[i]->value;
        if (ok) continue;
        ++result->lost;
        if (result->examples.size() < 10) {
          result->examples.push_back(
              "node " + std::to_string(Cluster::IdOf(slot)) + ": " + acked[i]->key + " = '" +
              (e.type == RespReply::Type::kNil ? std::string("(absent)") : e.text) +
              "', acknowledged '" + acked[i]->value + "' (op " + std::to_string(acked[i]->id) +
              ")");
        }
      }
    }
  }
  return Status::OK();
}

}  // namespace nemesis
}  // namespace chorus
