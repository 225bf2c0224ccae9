#include <gtest/gtest.h>

#include "chorus/transport.h"

namespace chorus {
namespace {

TEST(NodeInfoTest, IdPacksAddressAndPort) {
  NodeInfo n{"10.1.2.3", 8080};
  const uint64_t addr = (10u << 24) | (1u << 16) | (2u << 8) | 3u;
  EXPECT_EQ((addr << 16) | 8080u, n.id());
  // Ids differ by port and by address.
  EXPECT_NE(n.id(), (NodeInfo{"10.1.2.3", 8081}).id());
  EXPECT_NE(n.id(), (NodeInfo{"10.1.2.4", 8080}).id());
  EXPECT_EQ(0u, (NodeInfo{"not-an-ip", 8080}).id());
  EXPECT_EQ(0u, (NodeInfo{"", 1}).id());
}

TEST(NodeInfoTest, ToStringRoundTrips) {
  NodeInfo n{"127.0.0.1", 65535};
  EXPECT_EQ("127.0.0.1:65535", n.ToString());
  NodeInfo back;
  ASSERT_TRUE(NodeInfo::Parse(n.ToString(), &back).ok());
  EXPECT_EQ(n, back);
  EXPECT_EQ(n.id(), back.id());
}

TEST(NodeInfoTest, ParseGood) {
  NodeInfo n;
  Status s = NodeInfo::Parse("192.168.0.7:1", &n);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ("192.168.0.7", n.host);
  EXPECT_EQ(1, n.port);
}

TEST(NodeInfoTest, ParseBad) {
  const char* bad[] = {
      "",                  // empty
      "127.0.0.1",         // missing port
      "127.0.0.1:",        // empty port
      ":80",               // empty ip
      "127.0.0.1:0",       // port 0
      "127.0.0.1:65536",   // port out of range
      "127.0.0.1:123456",  // port far out of range
      "127.0.0.1:-1",      // negative port
      "127.0.0.1:8x",      // not a number
      "256.0.0.1:80",      // bad octet
      "1.2.3:80",          // too few octets
      "localhost:80",      // a name, not an address
      " 127.0.0.1:80",     // leading space
      "127.0.0.1: 80",     // space before port
      "127.0.0.1:80 ",     // trailing space
  };
  for (const char* text : bad) {
    NodeInfo n{"untouched", 7};
    Status s = NodeInfo::Parse(text, &n);
    EXPECT_TRUE(s.IsInvalidArgument()) << "'" << text << "' -> " << s.ToString();
    // The message quotes the offending input.
    EXPECT_NE(std::string::npos, s.message().find(text)) << s.message();
    EXPECT_EQ("untouched", n.host) << text;
    EXPECT_EQ(7, n.port) << text;
  }
}

TEST(NodeInfoTest, ParseListGood) {
  std::vector<NodeInfo> nodes;
  Status s = NodeInfo::ParseList("127.0.0.1:11000,127.0.0.1:11001,10.0.0.2:9", &nodes);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(3u, nodes.size());
  EXPECT_EQ((NodeInfo{"127.0.0.1", 11000}), nodes[0]);
  EXPECT_EQ((NodeInfo{"127.0.0.1", 11001}), nodes[1]);
  EXPECT_EQ((NodeInfo{"10.0.0.2", 9}), nodes[2]);

  ASSERT_TRUE(NodeInfo::ParseList("1.2.3.4:5", &nodes).ok());
  ASSERT_EQ(1u, nodes.size());
  EXPECT_EQ((NodeInfo{"1.2.3.4", 5}), nodes[0]);
}

TEST(NodeInfoTest, ParseListBad) {
  const char* bad[] = {
      "",                                  // empty list
      ",",                                 // only a separator
      "1.2.3.4:5,",                        // trailing comma
      ",1.2.3.4:5",                        // leading comma
      "1.2.3.4:5,,1.2.3.4:6",              // empty entry
      "1.2.3.4:5, 1.2.3.4:6",              // space after comma
      "1.2.3.4:5,1.2.3.4",                 // missing port
      "1.2.3.4:5,1.2.3.4:0",               // port 0
      "1.2.3.4:5,1.2.3.4:5",               // duplicate
      "1.2.3.4:5,1.2.3.400:6",             // bad ip
  };
  for (const char* text : bad) {
    std::vector<NodeInfo> nodes{NodeInfo{"keep", 1}};
    Status s = NodeInfo::ParseList(text, &nodes);
    EXPECT_TRUE(s.IsInvalidArgument()) << "'" << text << "' -> " << s.ToString();
    ASSERT_EQ(1u, nodes.size()) << text;
    EXPECT_EQ("keep", nodes[0].host) << text;
  }
}

}  // namespace
}  // namespace chorus
