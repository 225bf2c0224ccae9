#include "tools/admin/live.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "tools/admin/json.h"

namespace chorus {
namespace admin {

namespace {

constexpr int kTimeoutMs = 5000;

}  // namespace

Status HttpGet(const std::string& ip_port, const std::string& path, std::string* body) {
  const size_t colon = ip_port.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("want ip:port, got " + ip_port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(ip_port.c_str() + colon + 1)));
  if (inet_pton(AF_INET, ip_port.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("bad IPv4 address in " + ip_port);
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IOError(std::string("socket: ") + strerror(errno));
  timeval tv{kTimeoutMs / 1000, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  std::string response;
  Status s;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    s = Status::IOError("cannot connect to " + ip_port + ": " + strerror(errno));
  } else {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: " + ip_port + "\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
      s = Status::IOError("cannot send to " + ip_port);
    } else {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
      if (n < 0) s = Status::IOError("reading from " + ip_port + ": " + strerror(errno));
    }
  }
  close(fd);
  if (!s.ok()) return s;
  const size_t head = response.find("\r\n\r\n");
  if (response.compare(0, 12, "HTTP/1.0 200") != 0 && response.compare(0, 12, "HTTP/1.1 200") != 0) {
    return Status::IOError(ip_port + path + " answered: " + response.substr(0, response.find('\r')));
  }
  *body = head == std::string::npos ? "" : response.substr(head + 4);
  return Status::OK();
}

void QueryLive(const std::vector<std::string>& endpoints, std::vector<LiveGroup>* groups,
               std::vector<std::string>* raw, std::vector<std::string>* errors) {
  std::map<uint32_t, uint64_t> best;  // group -> largest chosen end
  for (const std::string& e : endpoints) {
    std::string body;
    Status s = HttpGet(e, "/status", &body);
    Json doc;
    if (s.ok()) s = ParseJson(body, &doc);
    if (s.ok() && doc["groups"].type != Json::kArray) s = Status::Corruption("no \"groups\" list");
    if (!s.ok()) {
      errors->push_back(e + ": " + s.ToString());
      continue;
    }
    raw->push_back(body);
    for (const Json& obj : doc["groups"].items) {
      LiveGroup g;
      g.endpoint = e;
      g.node = doc["node"].str();
      g.group = static_cast<uint32_t>(obj["group"].u64());
      g.executed = obj["executed"].u64();
      g.chosen_end = obj["chosen_end"].u64();
      g.log_start = obj["log_start"].u64();
      g.checkpoint_instance = obj["checkpoint_instance"].u64();
      g.master = obj["master"].str();
      g.is_master = obj["is_master"].truth();
      g.health = obj["health"].str();
      g.role = obj["role"].str();
      const Json& m = obj["membership"];
      if (m.type == Json::kObject) {
        g.has_membership = true;
        g.membership_version = m["version"].u64();
        g.active_from = m["active_from"].u64();
        g.pending = m["pending"].truth();
        for (const Json& member : m["members"].items) {
          g.members.push_back({member["id"].u64(), member["node"].str(), member["voter"].truth()});
        }
      } else {
        g.membership_error = obj["membership_error"].str();
      }
      best[g.group] = std::max(best[g.group], g.chosen_end);
      groups->push_back(g);
    }
  }
  for (LiveGroup& g : *groups) g.lag = best[g.group] > g.executed ? best[g.group] - g.executed : 0;
}

}  // namespace admin
}  // namespace chorus
