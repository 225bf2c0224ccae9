#include "chorus/transport.h"

namespace chorus {

Transport::~Transport() = default;

Status Transport::SendBatch(MessageBatch batch) {
  // The last send of each message may take it; the others copy it.
  std::vector<size_t> last(batch.messages.size(), batch.sends.size());
  for (size_t i = 0; i < batch.sends.size(); ++i) {
    const size_t index = batch.sends[i].second;
    if (index < last.size()) last[index] = i;
  }
  Status first;
  for (size_t i = 0; i < batch.sends.size(); ++i) {
    const auto& [to, index] = batch.sends[i];
    if (index >= batch.messages.size()) {
      if (first.ok()) first = Status::InvalidArgument("MessageBatch send names no message");
      continue;
    }
    std::string& message = batch.messages[index];
    Status s = Send(to, last[index] == i ? std::move(message) : message);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

Status Transport::SetPeers(const std::vector<NodeInfo>&) {
  return Status::NotSupported("this transport has a fixed set of members (no SetPeers)");
}

}  // namespace chorus
