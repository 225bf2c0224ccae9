// How application values travel inside one paxos value.
//
// A paxos value is opaque to the protocol core. The runtime packs into it the
// state machine each application value is for, and with batching several
// application values at once:
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
};

// Packs one value for `state_machine_id`.
std::string EncodeSingleValue(int state_machine_id, const std::string& payload);

// Packs several values (in order) into one batch.
std::string EncodeBatchValue(const std::vector<const AppValue*>& values);

// Unpacks a paxos value into its application values (one for a single).
Status DecodeAppValues(const std::string& value, std::vector<AppValue>* out);

}  // namespace chorus

#endif  // CHORUS_NODE_VALUE_CODEC_H_
