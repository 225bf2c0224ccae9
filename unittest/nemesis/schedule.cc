// Copyright (c) chorus authors.
#include "schedule.h"

#include <algorithm>
#include <random>
#include <sstream>

namespace chorus {
namespace nemesis {
namespace {

const char* const kNames[kFaultKinds] = {"kill",     "pause",    "partition",
                                         "isolate_master", "bridge", "loss",
                                         "transfer", "member_change", "isolate_follower"};

}  // namespace

const char* FaultKindName(FaultKind kind) { return kNames[static_cast<int>(kind)]; }

Status ParseFaultKinds(const std::string& list, std::vector<FaultKind>* kinds) {
  kinds->clear();
  std::istringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    bool found = false;
    for (int k = 0; k < kFaultKinds; ++k) {
      if (name == kNames[k]) {
        kinds->push_back(static_cast<FaultKind>(k));
        found = true;
      }
    }
    if (!found) {
      std::string all;
      for (const char* n : kNames) all += std::string(all.empty() ? "" : ", ") + n;
      return Status::InvalidArgument("unknown fault '" + name + "' (known: " + all + ")");
    }
  }
  if (kinds->empty()) return Status::InvalidArgument("no fault kinds");
  return Status::OK();
}

std::vector<FaultStep> MakeSchedule(uint64_t seed, double seconds,
                                    const std::vector<FaultKind>& kinds, int member_changes) {
  std::mt19937_64 rng(seed);
  std::vector<FaultStep> steps;
  int64_t at = 1000;  // a second of calm load first
  const int64_t end = static_cast<int64_t>(seconds * 1000);
  // Kinds are dealt from a shuffled deck, refilled when empty: a short run
  // still meets every kind once before any kind comes twice.
  std::vector<FaultKind> deck;
  int skipped = 0;
  while (skipped < 1000) {
    if (deck.empty()) {
      deck = kinds;
      std::shuffle(deck.begin(), deck.end(), rng);
    }
    FaultStep s;
    s.kind = deck.back();
    deck.pop_back();
    if (s.kind == FaultKind::kMemberChange) {
      if (member_changes == 0) {
        ++skipped;
        continue;
      }
      --member_changes;
    }
    s.pick = rng();
    s.hold_ms = 1000 + static_cast<int>(rng() % 2000);
    s.quiet_ms = 500 + static_cast<int>(rng() % 1000);
    if (at + s.hold_ms > end) break;
    s.start_ms = at;
    at += s.hold_ms + s.quiet_ms;
    steps.push_back(s);
  }
  return steps;
}

std::string DescribeStep(const FaultStep& step) {
  std::ostringstream o;
  o << "+" << step.start_ms << "ms " << FaultKindName(step.kind) << " hold " << step.hold_ms
    << "ms quiet " << step.quiet_ms << "ms pick " << (step.pick % 1000);
  return o.str();
}

}  // namespace nemesis
}  // namespace chorus
