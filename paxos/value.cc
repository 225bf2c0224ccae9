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

bool DecodeValue(const std::string& bytes, uint64_t* proposer, uint64_t* id, std::string* data) {
  if (bytes.size() < 16) return false;
  *proposer = DecodeFixed64(bytes.data());
  *id = DecodeFixed64(bytes.data() + 8);
  data->assign(bytes, 16, std::string::npos);
  return true;
}

}  // namespace paxos
}  // namespace chorus
