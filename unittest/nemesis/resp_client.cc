// Copyright (c) chorus authors.
#include "resp_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "clock.h"

namespace chorus {
namespace nemesis {
namespace {

int RemainingMs(int64_t deadline_ns) {
  const int64_t left = (deadline_ns - NowNs()) / 1000000;
  return left <= 0 ? 0 : static_cast<int>(left);
}

}  // namespace

RespClient::~RespClient() { Close(); }

void RespClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  in_.clear();
}

Status RespClient::Connect(const std::string& ip, int port, int timeout_ms) {
  Close();
  timeout_ms_ = timeout_ms;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address: " + ip);
  }
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) return Status::FromErrno("socket", errno);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const std::string where = ip + ":" + std::to_string(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (errno != EINPROGRESS) {
      Status s = Status::FromErrno("connect " + where, errno);
      Close();
      return s;
    }
    pollfd p{fd_, POLLOUT, 0};
    const int n = ::poll(&p, 1, timeout_ms);
    int err = 0;
    socklen_t len = sizeof(err);
    if (n <= 0) {
      Close();
      return Status::Timeout("connect " + where);
    }
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      Close();
      return Status::FromErrno("connect " + where, err);
    }
  }
  return Status::OK();
}

Status RespClient::Command(const std::vector<std::string>& args, RespReply* reply) {
  if (fd_ < 0) return Status::IOError("not connected");
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  }
  deadline_ns_ = NowNs() + static_cast<int64_t>(timeout_ms_) * 1000000;
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::send(fd_, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, RemainingMs(deadline_ns_)) <= 0) {
        Close();
        return Status::Timeout("send");
      }
      continue;
    }
    Status s = Status::FromErrno("send", errno);
    Close();
    return s;
  }
  Status s = ReadReply(reply, 0);
  if (!s.ok()) Close();
  return s;
}

Status RespClient::Fill() {
  char buf[16 << 10];
  while (true) {
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return Status::OK();
    }
    if (n == 0) return Status::IOError("connection closed by the server");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Status::FromErrno("recv", errno);
    pollfd p{fd_, POLLIN, 0};
    const int ms = RemainingMs(deadline_ns_);
    if (ms == 0 || ::poll(&p, 1, ms) <= 0) return Status::Timeout("no reply in time");
  }
}

Status RespClient::ReadLine(std::string* line) {
  size_t pos;
  while ((pos = in_.find("\r\n")) == std::string::npos) {
    Status s = Fill();
    if (!s.ok()) return s;
  }
  line->assign(in_, 0, pos);
  in_.erase(0, pos + 2);
  return Status::OK();
}

Status RespClient::ReadBytes(size_t n, std::string* out) {
  while (in_.size() < n + 2) {
    Status s = Fill();
    if (!s.ok()) return s;
  }
  out->assign(in_, 0, n);
  in_.erase(0, n + 2);
  return Status::OK();
}

Status RespClient::ReadReply(RespReply* reply, int depth) {
  if (depth > 4) return Status::Corruption("RESP reply nested too deep");
  std::string line;
  Status s = ReadLine(&line);
  if (!s.ok()) return s;
  if (line.empty()) return Status::Corruption("empty RESP line");
  const std::string rest = line.substr(1);
  *reply = RespReply();
  switch (line[0]) {
    case '+':
      reply->type = RespReply::Type::kSimple;
      reply->text = rest;
      return Status::OK();
    case '-':
      reply->type = RespReply::Type::kError;
      reply->text = rest;
      return Status::OK();
    case ':':
      reply->type = RespReply::Type::kInteger;
      reply->integer = std::strtoll(rest.c_str(), nullptr, 10);
      return Status::OK();
    case '$': {
      const long long n = std::strtoll(rest.c_str(), nullptr, 10);
      if (n < 0) {
        reply->type = RespReply::Type::kNil;
        return Status::OK();
      }
      reply->type = RespReply::Type::kBulk;
      return ReadBytes(static_cast<size_t>(n), &reply->text);
    }
    case '*': {
      const long long n = std::strtoll(rest.c_str(), nullptr, 10);
      if (n < 0) {
        reply->type = RespReply::Type::kNil;
        return Status::OK();
      }
      reply->type = RespReply::Type::kArray;
      reply->elements.resize(static_cast<size_t>(n));
      for (RespReply& e : reply->elements) {
        s = ReadReply(&e, depth + 1);
        if (!s.ok()) return s;
      }
      return Status::OK();
    }
    default:
      return Status::Corruption("not a RESP reply: " + line.substr(0, 64));
  }
}

}  // namespace nemesis
}  // namespace chorus
