#include "bench/net_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>

#include "bench/bench_cluster.h"
#include "bench/propose_wire.h"

namespace chorus {
namespace bench {

namespace {

// One connected, configured socket to 127.0.0.1:port, or -1 with the
// failed step and its errno (ECONNREFUSED from connect: worth a retry).
int ConnectOnce(uint16_t port, int* errno_out, std::string* failed_step) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *errno_out = errno;
    *failed_step = "socket";
    return -1;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const int on = 1;
  const timeval timeout{NetClients::kReplyTimeoutS, 0};
  const char* step = nullptr;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    step = "connect";
  } else if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0) {
    // Without it Nagle's algorithm holds a request back until the last
    // reply's ACK, which delayed ACKs keep back up to 40 ms.
    step = "setsockopt(TCP_NODELAY)";
  } else if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
    step = "setsockopt(SO_RCVTIMEO)";
  }
  if (step == nullptr) return fd;
  *errno_out = errno;
  *failed_step = step;
  close(fd);
  return -1;
}

Status WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("send", errno);
    }
    sent += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status ReadFull(int fd, char* buf, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = recv(fd, buf + got, size - got, 0);
    if (n == 0) return Status::IOError("node 0 closed the connection");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Status::Timeout("no reply in " + std::to_string(NetClients::kReplyTimeoutS) + " s");
      }
      return Status::FromErrno("recv", errno);
    }
    got += static_cast<size_t>(n);
  }
  return Status::OK();
}

}  // namespace

NetClients::~NetClients() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

Status NetClients::Connect(std::chrono::steady_clock::time_point deadline) {
  while (fds_.size() < static_cast<size_t>(config_.clients)) {
    int err = 0;
    std::string step;
    const int fd = ConnectOnce(config_.port, &err, &step);
    if (fd >= 0) {
      fds_.push_back(fd);
      continue;
    }
    if (err != ECONNREFUSED || Clock::now() >= deadline) {
      return Status::FromErrno(step + " 127.0.0.1:" + std::to_string(config_.port), err);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::OK();
}

std::vector<ClientResult> NetClients::Run(int64_t start_ns, int64_t end_ns) {
  const int64_t wait_ns = start_ns - MonotonicNs();
  if (wait_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
  const auto end = Clock::now() + std::chrono::nanoseconds(end_ns - MonotonicNs());
  std::vector<ClientResult> results(fds_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < fds_.size(); ++i) {
    threads.emplace_back([this, i, end, &results] { RunOne(i, end, &results[i]); });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

void NetClients::RunOne(size_t index, std::chrono::steady_clock::time_point end,
                        ClientResult* out) {
  const int fd = fds_[index];
  const std::string value(config_.value_size, static_cast<char>('a' + index % 26));
  out->latencies_us.reserve(1 << 16);
  ProposeRequest request;
  request.group = static_cast<uint32_t>(index % static_cast<size_t>(config_.groups));
  request.flags = config_.batch ? kFlagBatch : 0;
  std::string frame;
  char reply_frame[kFrameLength + kReplyBody];
  while (Clock::now() < end) {
    ++request.request_id;
    frame.clear();
    AppendRequest(request, value, &frame);
    const auto start = Clock::now();
    Status s = WriteAll(fd, frame);
    if (s.ok()) s = ReadFull(fd, reply_frame, sizeof(reply_frame));
    ProposeReply reply;
    if (s.ok() && (!ParseReply(reply_frame, &reply) || reply.request_id != request.request_id)) {
      s = Status::Corruption("a malformed reply, or one to another request");
    }
    if (!s.ok()) {
      std::fprintf(stderr, "propose_bench: client process: client %zu: %s; it stops\n", index,
                   s.ToString().c_str());
      ++out->failures[Status::CodeName(s.code())];
      break;
    }
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    const auto code = static_cast<Status::Code>(reply.code);
    if (code == Status::Code::kOk) {
      out->latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
    } else {
      ++out->failures[Status::CodeName(code)];
      if (code == Status::Code::kStopped) break;
    }
    request.group = (request.group + 1) % static_cast<uint32_t>(config_.groups);
  }
  // The server counts this close: the client is done.
  if (close(fd) != 0) std::perror("propose_bench: client process: close");
  fds_[index] = -1;
}

}  // namespace bench
}  // namespace chorus
