// How application values travel inside one paxos value.
//
// A paxos value is opaque to the protocol core. The runtime packs into it the
// state machine each application value is for and the proposal id its
// proposer was given (ExecuteContext::proposal_id), and with batching
// several application values at once:
//   single: 0x03 | sm_id (fixed32) | proposal_id (fixed64) | payload
//   batch:  0x04 | count (fixed32) |
//           count x [ sm_id (fixed32) | proposal_id (fixed64) | len (fixed32) | payload ]
// Values logged before proposal ids existed decode with proposal_id 0:
//   single: 0x01 | sm_id (fixed32) | payload
//   batch:  0x02 | count (fixed32) | count x [ sm_id (fixed32) | len (fixed32) | payload ]
// Decoding checks every length: malformed bytes are Corruption, never data.
#ifndef CHORUS_NODE_VALUE_CODEC_H_
#define CHORUS_NODE_VALUE_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

struct AppValue {
  int state_machine_id = 0;
  std::string payload;
  uint64_t proposal_id = 0;
};

// Bytes a batch adds per value on top of its payload.
constexpr size_t kBatchEntryOverheadBytes = 16;

// Packs one value.
std::string EncodeSingleValue(int state_machine_id, uint64_t proposal_id,
                              const std::string& payload);

// Packs several values (in order) into one batch.
std::string EncodeBatchValue(const std::vector<const AppValue*>& values);

// Unpacks a paxos value into its application values (one for a single).
// Returns Corruption, and leaves *out empty, when any part of it is malformed
// (a bad entry or trailing bytes: none of the entries is trusted then).
Status DecodeAppValues(const std::string& value, std::vector<AppValue>* out);

}  // namespace chorus

#endif  // CHORUS_NODE_VALUE_CODEC_H_
