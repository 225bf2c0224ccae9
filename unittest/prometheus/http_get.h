// HttpGet: a blocking loopback HTTP/1.0 GET for the tests of the metrics
// endpoint (no curl needed inside a gtest). Returns the body, "" on failure.
#ifndef CHORUS_UNITTEST_PROMETHEUS_HTTP_GET_H_
#define CHORUS_UNITTEST_PROMETHEUS_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace chorus {
namespace testing {

inline std::string HttpGet(uint16_t port, const std::string& path, int* code = nullptr) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  if (code != nullptr) *code = response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// The value of the sample line that starts with `series` (name{labels}), or
// -1 when there is none.
inline double SampleValue(const std::string& text, const std::string& series) {
  size_t pos = 0;
  while ((pos = text.find(series, pos)) != std::string::npos) {
    if ((pos == 0 || text[pos - 1] == '\n') && text.size() > pos + series.size() &&
        text[pos + series.size()] == ' ') {
      return std::stod(text.substr(pos + series.size() + 1));
    }
    pos += series.size();
  }
  return -1;
}

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_PROMETHEUS_HTTP_GET_H_
