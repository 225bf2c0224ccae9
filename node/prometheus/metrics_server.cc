// MetricsServer: a deliberately small HTTP/1.0 server (GET only, one
// request per connection, one thread) in front of PrometheusText and
// StatusJson. Enough for Prometheus, curl and chorus_admin; not a web server.
#include "chorus/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>

namespace chorus {

namespace {

// How long the loop waits in poll before it looks at the stop flag, and how
// long a client may take to send its request line.
constexpr int kPollMs = 100;
constexpr int kRequestTimeoutMs = 3000;
constexpr size_t kMaxRequestBytes = 8192;

std::string Response(int code, const char* reason, const char* type, const std::string& body) {
  return "HTTP/1.0 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

class ServerImpl : public MetricsServer {
 public:
  ServerImpl(Node* node, const Options& options) : node_(node), options_(options) {}
  ~ServerImpl() override { Stop(); }

  Status Listen(const MetricsServerOptions& o) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Status::IOError(std::string("metrics server: socket: ") + strerror(errno));
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(o.port);
    if (inet_pton(AF_INET, o.ip.c_str(), &addr.sin_addr) != 1) {
      return Status::InvalidArgument("metrics server: bad ip '" + o.ip + "'");
    }
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd_, 16) != 0) {
      return Status::IOError("metrics server: cannot listen on " + o.ip + ":" +
                             std::to_string(o.port) + ": " + strerror(errno));
    }
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    try {
      thread_ = std::thread([this] { Loop(); });
    } catch (const std::system_error& e) {
      return Status::IOError(std::string("metrics server: thread: ") + e.what());
    }
    return Status::OK();
  }

  uint16_t port() const override { return port_; }

  void Stop() override {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  void Loop() {
    while (!stop_.load(std::memory_order_relaxed)) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, kPollMs) <= 0) continue;
      const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      Serve(client);
      close(client);
    }
  }

  void Serve(int client) {
    std::string request;
    char buf[1024];
    int waited = 0;
    while (request.find("\r\n\r\n") == std::string::npos &&
           request.find("\n\n") == std::string::npos && request.size() < kMaxRequestBytes) {
      if (stop_.load(std::memory_order_relaxed) || waited >= kRequestTimeoutMs) return;
      pollfd p{client, POLLIN, 0};
      if (poll(&p, 1, kPollMs) <= 0) {
        waited += kPollMs;
        continue;
      }
      const ssize_t n = read(client, buf, sizeof(buf));
      if (n <= 0) return;
      request.append(buf, static_cast<size_t>(n));
    }
    std::string response;
    const size_t end = request.find(' ', 4);
    const std::string path = request.compare(0, 4, "GET ") == 0 && end != std::string::npos
                                 ? request.substr(4, end - 4)
                                 : "";
    if (path == "/metrics") {
      response = Response(200, "OK", "text/plain; version=0.0.4",
                          PrometheusText(*node_, options_));
    } else if (path == "/status") {
      response = Response(200, "OK", "application/json", StatusJson(*node_, options_));
    } else if (path.empty()) {
      response = Response(400, "Bad Request", "text/plain", "GET /metrics or GET /status\n");
    } else {
      response = Response(404, "Not Found", "text/plain", "GET /metrics or GET /status\n");
    }
    size_t sent = 0;
    while (sent < response.size()) {
      const ssize_t n = send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  Node* const node_;
  const Options options_;  // a copy: the member list and group count
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

MetricsServer::~MetricsServer() = default;

Status MetricsServer::Start(Node* node, const Options& options, const MetricsServerOptions& server,
                            std::unique_ptr<MetricsServer>* out) {
  auto impl = std::make_unique<ServerImpl>(node, options);
  Status s = impl->Listen(server);
  if (!s.ok()) return s;
  *out = std::move(impl);
  return Status::OK();
}

}  // namespace chorus
