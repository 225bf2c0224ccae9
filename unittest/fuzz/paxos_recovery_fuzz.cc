// Fuzzes what the protocol core parses from its log (a LogStorage's records
// and variables, after the storage checked its own checksum): recovery in
// Core::Open (the promise and window variables, InstanceRecord protobufs,
// the chained checksums of the chosen prefix), then the reads of a recovered
// core (ReadChosen, catch-up served from the log, a proposal over the
// recovered votes). Input: entries, each
//   tag (1) | len (2, little-endian) | len bytes
// tag & 3: 0 or 1: a record at instance tag >> 2 (0..63); 2: the promise
// variable; 3: the window variable (tag >> 2 even) or the log start
// variable (odd: a LogStartPb, trim.h). Bad logs must give a Status, never a
// crash; a core that opened must keep chosen_end within the log (or at its
// log start), and its log start at or below chosen_end, also after a trim
// and a checkpoint install.
// A break is __builtin_trap().
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "paxos.pb.h"
#include "paxos/acceptor.h"
#include "paxos/core.h"
#include "paxos/trim.h"
#include "unittest/fuzz/fuzz_require.h"
#include "unittest/fuzz/paxos_fuzz_input.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace paxos {
namespace fuzz {
namespace {

using chorus::fuzz::Require;

void Run(const uint8_t* p, const uint8_t* end) {
  std::map<uint64_t, std::string> records;
  std::map<std::string, std::string> variables;
  while (p < end) {
    const uint8_t tag = *p++;
    size_t len = 0;
    if (p < end) len = *p++;
    if (p < end) len |= static_cast<size_t>(*p++) << 8;
    len = std::min<size_t>(len, static_cast<size_t>(end - p));
    std::string bytes(reinterpret_cast<const char*>(p), len);
    p += len;
    if ((tag & 3) < 2) {
      records[tag >> 2] = std::move(bytes);
    } else {
      const char* name = (tag & 3) == 2          ? kPromiseVariable
                         : ((tag >> 2) & 1) == 0 ? kWindowVariable
                                                 : kLogStartVariable;
      variables[name] = std::move(bytes);
    }
  }
  // One batch, each key once (the LogStorage contract).
  LogWriteBatch batch;
  batch.records.assign(records.begin(), records.end());
  batch.variables.assign(variables.begin(), variables.end());
  testing::MemLogStorage log;
  Require(log.Write(batch, true).ok());

  std::unique_ptr<Core> core;
  const Status s = Core::Open(FuzzCoreOptions(kSelf), &log, &core);
  if (!s.ok()) {
    Require(core == nullptr);
    return;
  }
  uint64_t start = 0;
  uint32_t checksum = 0;
  if (!ReadLogStart(&log, &start, &checksum).ok()) start = 0;
  Require(core->log_start() == start);
  Require(core->chosen_end() <=
          std::max<uint64_t>(start, records.empty() ? 0 : records.rbegin()->first + 1));
  Require(core->log_start() <= core->chosen_end());
  Outputs out;
  core->Start(&out);
  // From the log start: below it nothing is kept, and a fuzzed log start may
  // be anywhere up to the instance ceiling (past it, chosen_end grows only
  // by the contiguous chosen records the input holds).
  for (uint64_t i = core->log_start(); i < core->chosen_end(); ++i) {
    ChosenValue value;
    const Status r = core->ReadChosen(i, &value);
    Require(r.ok() || r.IsNotFound() || r.IsCorruption());
  }
  // A lagging peer asks for everything: served from the cache and the log.
  PaxosMsg ask;
  ask.set_type(ASK_LEARN);
  ask.set_cluster_id(kCluster);
  ask.set_from(1);
  ask.set_instance(0);
  core->OnMessage(ask.SerializeAsString(), &out, 1);
  core->Propose(1, "v", &out);
  // A checkpoint at chosen_end trims; one beyond it installs.
  const uint64_t chosen = core->chosen_end();
  core->OnCheckpoint(chosen, UINT64_MAX, &out);
  Require(core->log_start() <= core->chosen_end());
  const Status installed = core->InstallCheckpoint(chosen + 3, checksum, &out);
  Require(installed.ok() || installed.IsStopped() || installed.IsInvalidArgument());
  Require(!installed.ok() || core->chosen_end() >= chosen + 3);
  Require(core->log_start() <= core->chosen_end());
}

}  // namespace
}  // namespace fuzz
}  // namespace paxos
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chorus::paxos::fuzz::Run(data, data + size);
  return 0;
}
