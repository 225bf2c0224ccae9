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

namespace chorus {
namespace admin {

namespace {

constexpr int kTimeoutMs = 5000;

// The raw value after "key": in `obj` (a number, true/false/null, or a
// string without its quotes); "" when absent.
std::string Field(const std::string& obj, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t p = obj.find(k);
  if (p == std::string::npos) return "";
  size_t v = p + k.size();
  if (v < obj.size() && obj[v] == '"') {
    const size_t end = obj.find('"', v + 1);
    return end == std::string::npos ? "" : obj.substr(v + 1, end - v - 1);
  }
  size_t end = v;
  while (end < obj.size() && obj[end] != ',' && obj[end] != '}' && obj[end] != ']') ++end;
  return obj.substr(v, end - v);
}

uint64_t Num(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

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
    if (!s.ok()) {
      errors->push_back(e + ": " + s.ToString());
      continue;
    }
    raw->push_back(body);
    const std::string node = Field(body, "node");
    const size_t list = body.find("\"groups\":[");
    size_t p = list == std::string::npos ? std::string::npos : body.find("{\"group\":", list);
    while (p != std::string::npos) {
      const size_t end = body.find('}', p);
      const std::string obj = body.substr(p, end == std::string::npos ? std::string::npos : end - p + 1);
      LiveGroup g;
      g.endpoint = e;
      g.node = node;
      g.group = static_cast<uint32_t>(Num(Field(obj, "group")));
      g.executed = Num(Field(obj, "executed"));
      g.chosen_end = Num(Field(obj, "chosen_end"));
      g.log_start = Num(Field(obj, "log_start"));
      g.checkpoint_instance = Num(Field(obj, "checkpoint_instance"));
      g.master = Field(obj, "master");
      if (g.master == "null") g.master.clear();
      g.is_master = Field(obj, "is_master") == "true";
      g.health = Field(obj, "health");
      best[g.group] = std::max(best[g.group], g.chosen_end);
      groups->push_back(g);
      p = end == std::string::npos ? end : body.find("{\"group\":", end);
    }
  }
  for (LiveGroup& g : *groups) g.lag = best[g.group] > g.executed ? best[g.group] - g.executed : 0;
}

}  // namespace admin
}  // namespace chorus
