#include "paxos/value.h"

#include "utils/coding.h"

namespace chorus {
namespace paxos {

std::string EncodeValue(uint64_t proposer, uint64_t id, const std::string& data) {
  std::string out;
  out.reserve(16 + data.size());
  PutFixed64(&out, proposer);
  PutFixed64(&out, id);
  out.append(data);
  return out;
}

std::string EncodeSystemValue(uint64_t proposer, uint64_t id, SystemValueKind kind,
                              const std::string& payload) {
  std::string data;
  data.reserve(1 + payload.size());
  data.push_back(static_cast<char>(kind));
  data.append(payload);
  return EncodeValue(proposer, id | kSystemValueBit, data);
}

bool DecodeSystemValue(uint64_t id, const std::string& data, SystemValueKind* kind,
                       std::string* payload) {
  if ((id & kSystemValueBit) == 0) return false;
  if (data.empty() ||
      static_cast<uint8_t>(data[0]) != static_cast<uint8_t>(SystemValueKind::kMembershipChange)) {
    *kind = static_cast<SystemValueKind>(0);
    return false;
  }
  *kind = static_cast<SystemValueKind>(static_cast<uint8_t>(data[0]));
  payload->assign(data, 1, std::string::npos);
  return true;
}

bool DecodeValue(const std::string& bytes, uint64_t* proposer, uint64_t* id, std::string* data) {
  if (bytes.size() < 16) return false;
  *proposer = DecodeFixed64(bytes.data());
  *id = DecodeFixed64(bytes.data() + 8);
  data->assign(bytes, 16, std::string::npos);
  return true;
}

}  // namespace paxos
}  // namespace chorus
