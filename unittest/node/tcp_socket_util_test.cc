// socket_util: addresses of both families, resolution, listening by name.
#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "node/socket_util.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace tcp_socket_util_test {
namespace {

TEST(SocketUtilTest, NumericAddressesOfBothFamilies) {
  SockAddr a;
  ASSERT_TRUE(NumericSockAddr("10.0.0.1", 80, &a));
  EXPECT_EQ(AF_INET, a.family());
  EXPECT_EQ(sizeof(sockaddr_in), a.len);
  EXPECT_EQ("10.0.0.1:80", a.ToString());
  ASSERT_TRUE(NumericSockAddr("::1", 7000, &a));
  EXPECT_EQ(AF_INET6, a.family());
  EXPECT_EQ(sizeof(sockaddr_in6), a.len);
  EXPECT_EQ("[::1]:7000", a.ToString());
  EXPECT_FALSE(NumericSockAddr("localhost", 1, &a));
  EXPECT_FALSE(NumericSockAddr("[::1]", 1, &a));
  EXPECT_EQ(0u, a.len);
}

TEST(SocketUtilTest, ResolveNamesAndNumbers) {
  std::vector<SockAddr> addrs;
  ASSERT_TRUE(ResolveTcp("127.0.0.1", 5, &addrs).ok());
  ASSERT_EQ(1u, addrs.size());
  EXPECT_EQ("127.0.0.1:5", addrs[0].ToString());
  Status s = ResolveTcp("localhost", 6, &addrs);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_FALSE(addrs.empty());
  for (const SockAddr& a : addrs) {
    // Loopback, whichever family.
    EXPECT_TRUE(a.ToString() == "[::1]:6" || a.ToString().compare(0, 4, "127.") == 0)
        << a.ToString();
  }
  s = ResolveTcp("no-such-host.invalid", 7, &addrs);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("no-such-host.invalid")) << s.message();
  EXPECT_TRUE(addrs.empty());
}

TEST(SocketUtilTest, ListenByNameAndConnect) {
  const uint16_t port = testing::FreePort();
  int listen_fd = -1;
  Status s = ListenTcp(NodeInfo{"localhost", port, 1}, &listen_fd);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<SockAddr> addrs;
  ASSERT_TRUE(ResolveTcp("localhost", port, &addrs).ok());
  // One of the name's addresses accepts.
  bool reached = false;
  for (const SockAddr& a : addrs) {
    int fd = -1;
    bool connected = false;
    if (!StartConnect(a, 0, &fd, &connected).ok()) continue;
    if (!connected) {
      pollfd p{fd, POLLOUT, 0};
      connected = poll(&p, 1, 5000) == 1 && CheckConnected(fd).ok();
    }
    reached = reached || connected;
    close(fd);
  }
  EXPECT_TRUE(reached);
  close(listen_fd);
  s = ListenTcp(NodeInfo{"no-such-host.invalid", port, 1}, &listen_fd);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
}

}  // namespace
}  // namespace tcp_socket_util_test
}  // namespace chorus
