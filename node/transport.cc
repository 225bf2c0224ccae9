#include "chorus/transport.h"

namespace chorus {

Transport::~Transport() = default;

Status Transport::SetPeers(const std::vector<NodeInfo>&) {
  return Status::NotSupported("this transport has a fixed set of members (no SetPeers)");
}

}  // namespace chorus
