// NodeInfo: the address of a cluster member and the node id derived from it.
#include <arpa/inet.h>

#include <set>

#include "chorus/transport.h"
#include "utils/coding.h"

namespace chorus {

namespace {

// Returns true and sets *addr (host byte order) when `ip` is a dotted IPv4.
bool ParseIpv4(const std::string& ip, uint32_t* addr) {
  in_addr a;
  if (ip.empty() || inet_pton(AF_INET, ip.c_str(), &a) != 1) return false;
  *addr = ntohl(a.s_addr);
  return true;
}

// Returns true and sets *port when `text` is a decimal number in [1, 65535].
bool ParsePort(const std::string& text, uint16_t* port) {
  uint64_t v = 0;
  if (!ParsePositiveDecimal(text, 65535, &v)) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

}  // namespace

uint64_t NodeInfo::id() const {
  uint32_t addr = 0;
  if (node_id != 0) return node_id;
  if (!ParseIpv4(host, &addr)) return 0;
  return (static_cast<uint64_t>(addr) << 16) | port;
}

std::string NodeInfo::ToString() const { return host + ":" + std::to_string(port); }

Status NodeInfo::Parse(const std::string& text, NodeInfo* node) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("node address '" + text + "' has no ':port'");
  }
  const std::string ip = text.substr(0, colon);
  uint32_t addr = 0;
  if (!ParseIpv4(ip, &addr)) {
    return Status::InvalidArgument("node address '" + text + "': '" + ip +
                                   "' is not a dotted IPv4 address");
  }
  uint16_t port = 0;
  if (!ParsePort(text.substr(colon + 1), &port)) {
    return Status::InvalidArgument("node address '" + text + "': port '" +
                                   text.substr(colon + 1) + "' is not a number in [1, 65535]");
  }
  node->host = ip;
  node->port = port;
  return Status::OK();
}

Status NodeInfo::ParseList(const std::string& text, std::vector<NodeInfo>* nodes) {
  if (text.empty()) return Status::InvalidArgument("empty node list");
  std::vector<NodeInfo> parsed;
  std::set<uint64_t> seen;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) {
      return Status::InvalidArgument("node list '" + text + "' has an empty entry");
    }
    NodeInfo node;
    Status s = Parse(item, &node);
    if (!s.ok()) return Status::InvalidArgument("node list '" + text + "': " + s.message());
    if (!seen.insert(node.id()).second) {
      return Status::InvalidArgument("node list '" + text + "' names " + item + " twice");
    }
    parsed.push_back(node);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *nodes = std::move(parsed);
  return Status::OK();
}

}  // namespace chorus
