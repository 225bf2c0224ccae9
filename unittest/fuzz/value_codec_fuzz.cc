// Fuzzes the two value envelopes: the application envelope of node/
// (value_codec.h: single and batch values, both formats) and the proposer
// envelope of paxos/ (value.h). Properties (a break is __builtin_trap()):
//   - DecodeAppValues never crashes, and on ok the bytes are canonical:
//     re-encoding the decoded values in the same format gives them back
//     (the version 1 formats, which carry no proposal id, re-encode through
//     the current format and decode to the same values);
//   - decode(encode(values)) == values for the values it decoded, as a batch;
//   - DecodeValue accepts exactly the inputs of at least 16 bytes, and
//     EncodeValue of what it returned gives the input back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "node/value_codec.h"
#include "paxos/value.h"
#include "unittest/fuzz/fuzz_require.h"

namespace chorus {
namespace {

using chorus::fuzz::Require;

bool Same(const std::vector<AppValue>& a, const std::vector<AppValue>& b, bool ids) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].state_machine_id != b[i].state_machine_id || a[i].payload != b[i].payload) {
      return false;
    }
    if (ids && a[i].proposal_id != b[i].proposal_id) return false;
  }
  return true;
}

void CheckAppValues(const std::string& bytes) {
  std::vector<AppValue> values;
  const Status s = DecodeAppValues(bytes, &values);
  if (!s.ok()) {
    Require(s.IsCorruption() && values.empty());
    return;
  }
  Require(!bytes.empty());
  const char format = bytes[0];
  std::vector<const AppValue*> ptrs;
  for (const AppValue& v : values) ptrs.push_back(&v);
  if (format == 0x03 || format == 0x01) {
    Require(values.size() == 1);
    const std::string single =
        EncodeSingleValue(values[0].state_machine_id, values[0].proposal_id, values[0].payload);
    if (format == 0x03) Require(single == bytes);
    if (format == 0x01) Require(values[0].proposal_id == 0);
    std::vector<AppValue> again;
    Require(DecodeAppValues(single, &again).ok() && Same(again, values, true));
  } else {
    Require(format == 0x04 || format == 0x02);
    const std::string batch = EncodeBatchValue(ptrs);
    if (format == 0x04) Require(batch == bytes);
    if (format == 0x02) {
      for (const AppValue& v : values) Require(v.proposal_id == 0);
    }
  }
  // Whatever the format it came in, the values survive a batch round trip.
  std::vector<AppValue> again;
  Require(DecodeAppValues(EncodeBatchValue(ptrs), &again).ok() && Same(again, values, true));
}

void CheckEnvelope(const std::string& bytes) {
  uint64_t proposer = 0;
  uint64_t id = 0;
  std::string data = "untouched";
  const bool ok = paxos::DecodeValue(bytes, &proposer, &id, &data);
  Require(ok == (bytes.size() >= 16));
  if (ok) Require(paxos::EncodeValue(proposer, id, data) == bytes);
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  chorus::CheckAppValues(bytes);
  chorus::CheckEnvelope(bytes);
  // A paxos value is an envelope around the application's bytes.
  if (size >= 16) chorus::CheckAppValues(bytes.substr(16));
  return 0;
}
