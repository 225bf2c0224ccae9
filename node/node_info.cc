// NodeInfo: the address of a cluster node ("[id@]host:port") and its id.
#include <arpa/inet.h>

#include <cstring>
#include <set>

#include "chorus/transport.h"
#include "utils/coding.h"

namespace chorus {

namespace {

constexpr size_t kMaxHostName = 253;
constexpr size_t kMaxLabel = 63;

// Returns true and sets *addr (host byte order) when `ip` is a dotted IPv4.
bool ParseIpv4(const std::string& ip, uint32_t* addr) {
  in_addr a;
  if (ip.empty() || inet_pton(AF_INET, ip.c_str(), &a) != 1) return false;
  *addr = ntohl(a.s_addr);
  return true;
}

// Returns true and sets *canonical when `ip` is an IPv6 address (no
// brackets): the same address as inet_ntop writes it, so that two spellings
// of one address compare equal.
bool ParseIpv6(const std::string& ip, std::string* canonical) {
  in6_addr a;
  if (ip.empty() || inet_pton(AF_INET6, ip.c_str(), &a) != 1) return false;
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, &a, buf, sizeof(buf)) == nullptr) return false;
  *canonical = buf;
  return true;
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// RFC 1123 host names, and a last label that is not all digits (RFC 3696
// 2): "1.2.3" or "256.0.0.1" are mistyped addresses, not names.
bool IsHostName(const std::string& host) {
  if (host.empty() || host.size() > kMaxHostName) return false;
  size_t start = 0;
  bool last_all_digits = false;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    if (dot == std::string::npos) dot = host.size();
    const size_t len = dot - start;
    if (len == 0 || len > kMaxLabel) return false;
    if (host[start] == '-' || host[dot - 1] == '-') return false;
    last_all_digits = true;
    for (size_t i = start; i < dot; ++i) {
      const char c = host[i];
      if (!IsAlnum(c) && c != '-') return false;
      if (c < '0' || c > '9') last_all_digits = false;
    }
    start = dot + 1;
  }
  return !last_all_digits;
}

// Returns true and sets *port when `text` is a decimal number in [1, 65535].
bool ParsePort(const std::string& text, uint16_t* port) {
  uint64_t v = 0;
  if (!ParsePositiveDecimal(text, 65535, &v)) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

// Returns true and sets *id when `text` is a decimal number in [1, 2^64).
bool ParseId(const std::string& text, uint64_t* id) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;  // would overflow
    v = v * 10 + digit;
  }
  if (v == 0) return false;
  *id = v;
  return true;
}

enum class HostKind { kIpv4, kIpv6, kName, kInvalid };

HostKind KindOf(const std::string& host) {
  uint32_t v4 = 0;
  std::string v6;
  if (ParseIpv4(host, &v4)) return HostKind::kIpv4;
  if (ParseIpv6(host, &v6)) return HostKind::kIpv6;
  if (IsHostName(host)) return HostKind::kName;
  return HostKind::kInvalid;
}

}  // namespace

uint64_t NodeInfo::id() const {
  uint32_t addr = 0;
  if (node_id != 0) return node_id;
  if (!ParseIpv4(host, &addr)) return 0;
  return (static_cast<uint64_t>(addr) << 16) | port;
}

std::string NodeInfo::ToString() const {
  std::string out;
  if (node_id != 0) out = std::to_string(node_id) + "@";
  // Only an IPv6 address contains ':'; its brackets keep the port apart.
  if (host.find(':') != std::string::npos) {
    out += "[" + host + "]";
  } else {
    out += host;
  }
  return out + ":" + std::to_string(port);
}

Status NodeInfo::Validate() const {
  if (KindOf(host) == HostKind::kInvalid) {
    return Status::InvalidArgument("node '" + ToString() + "': '" + host +
                                   "' is not an IPv4 address, an IPv6 address or a host name");
  }
  if (port == 0) return Status::InvalidArgument("node '" + ToString() + "' has port 0");
  if (id() == 0) {
    return Status::InvalidArgument("node '" + ToString() +
                                   "' has no node id (only an IPv4 address derives one)");
  }
  return Status::OK();
}

Status NodeInfo::Parse(const std::string& text, NodeInfo* node) {
  auto bad = [&text](const std::string& why) {
    return Status::InvalidArgument("node address '" + text + "': " + why);
  };
  std::string rest = text;
  uint64_t node_id = 0;
  const size_t at = text.find('@');
  if (at != std::string::npos) {
    const std::string id_text = text.substr(0, at);
    if (!ParseId(id_text, &node_id)) {
      return bad("node id '" + id_text + "' is not a decimal number >= 1");
    }
    rest = text.substr(at + 1);
  }
  std::string host;
  std::string port_text;
  bool bracketed = false;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) return bad("'[' without ']'");
    host = rest.substr(1, close - 1);
    if (close + 1 >= rest.size() || rest[close + 1] != ':') return bad("no ':port' after ']'");
    port_text = rest.substr(close + 2);
    bracketed = true;
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return bad("no ':port'");
    host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return bad("an IPv6 address is written in brackets: [" + host + "]:" + port_text);
    }
  }
  HostKind kind = HostKind::kInvalid;
  std::string canonical = host;
  if (bracketed) {
    if (!ParseIpv6(host, &canonical)) return bad("'" + host + "' is not an IPv6 address");
    kind = HostKind::kIpv6;
  } else {
    kind = KindOf(host);
    if (kind == HostKind::kIpv6 || kind == HostKind::kInvalid) {
      return bad("'" + host + "' is not a dotted IPv4 address or a host name");
    }
  }
  uint16_t port = 0;
  if (!ParsePort(port_text, &port)) {
    return bad("port '" + port_text + "' is not a number in [1, 65535]");
  }
  if (kind != HostKind::kIpv4 && node_id == 0) {
    // Only an IPv4 address derives an id (compatibility); an id derived from
    // a name or an IPv6 address would change with it.
    return bad(std::string(kind == HostKind::kIpv6 ? "an IPv6 address" : "a host name") +
               " needs an explicit node id (give it an id: 7@" + rest + ")");
  }
  node->host = canonical;
  node->port = port;
  node->node_id = node_id;
  return Status::OK();
}

Status NodeInfo::ParseList(const std::string& text, std::vector<NodeInfo>* nodes) {
  if (text.empty()) return Status::InvalidArgument("empty node list");
  std::vector<NodeInfo> parsed;
  std::set<uint64_t> seen;
  std::set<std::pair<std::string, uint16_t>> addresses;
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
      return Status::InvalidArgument("node list '" + text + "' names node id " +
                                     std::to_string(node.id()) + " twice (" + item + ")");
    }
    if (!addresses.insert({node.host, node.port}).second) {
      return Status::InvalidArgument("node list '" + text + "' names the address of " + item +
                                     " twice");
    }
    parsed.push_back(node);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *nodes = std::move(parsed);
  return Status::OK();
}

}  // namespace chorus
