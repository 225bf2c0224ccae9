#include <gtest/gtest.h>

#include "chorus/transport.h"

namespace chorus {
namespace node_info_test {
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

TEST(NodeInfoTest, ParseWithIdsIpv6AndHostNames) {
  struct Case {
    const char* text;
    const char* host;
    uint16_t port;
    uint64_t node_id;
    const char* back;  // ToString()
  };
  const Case good[] = {
      {"7@127.0.0.1:80", "127.0.0.1", 80, 7, "7@127.0.0.1:80"},
      {"1@[::1]:7000", "::1", 7000, 1, "1@[::1]:7000"},
      {"2@[0:0::1]:7000", "::1", 7000, 2, "2@[::1]:7000"},  // canonical form
      {"3@[FE80::A]:1", "fe80::a", 1, 3, "3@[fe80::a]:1"},
      {"4@[::ffff:10.0.0.1]:9", "::ffff:10.0.0.1", 9, 4, "4@[::ffff:10.0.0.1]:9"},
      {"5@localhost:11000", "localhost", 11000, 5, "5@localhost:11000"},
      {"18446744073709551615@db-3.example.com:65535", "db-3.example.com", 65535,
       18446744073709551615ull, "18446744073709551615@db-3.example.com:65535"},
      {"9@a:1", "a", 1, 9, "9@a:1"},
      {"10@x1.2y:1", "x1.2y", 1, 10, "10@x1.2y:1"},  // digits inside labels
  };
  for (const Case& c : good) {
    NodeInfo n;
    Status s = NodeInfo::Parse(c.text, &n);
    ASSERT_TRUE(s.ok()) << c.text << ": " << s.ToString();
    EXPECT_EQ(c.host, n.host) << c.text;
    EXPECT_EQ(c.port, n.port) << c.text;
    EXPECT_EQ(c.node_id, n.node_id) << c.text;
    EXPECT_EQ(c.node_id, n.id()) << c.text;
    EXPECT_EQ(c.back, n.ToString()) << c.text;
    EXPECT_TRUE(n.Validate().ok()) << c.text;
    NodeInfo again;
    ASSERT_TRUE(NodeInfo::Parse(n.ToString(), &again).ok()) << c.text;
    EXPECT_EQ(n, again) << c.text;
  }
}

TEST(NodeInfoTest, AnIpv4AddressKeepsItsDerivedIdWithoutAnExplicitOne) {
  NodeInfo n;
  ASSERT_TRUE(NodeInfo::Parse("10.1.2.3:8080", &n).ok());
  EXPECT_EQ(0u, n.node_id);
  EXPECT_EQ((NodeInfo{"10.1.2.3", 8080}).id(), n.id());
  EXPECT_EQ("10.1.2.3:8080", n.ToString());
  // An explicit id wins over the derived one.
  ASSERT_TRUE(NodeInfo::Parse("12@10.1.2.3:8080", &n).ok());
  EXPECT_EQ(12u, n.id());
}

TEST(NodeInfoTest, ParseBadIdsIpv6AndHostNames) {
  const std::string long_label(64, 'a');
  std::string long_name;
  while (long_name.size() < 254) long_name += "abcdefgh.";
  long_name += "x";
  const std::string bad[] = {
      "localhost:80",           // a host name needs an id
      "[::1]:80",               // so does IPv6
      "::1:80",                 // IPv6 without brackets
      "1@::1:80",               // same, with an id
      "1@[::1]",                // no port
      "1@[::1]80",              // no ':' after ']'
      "1@[::1:80",              // no ']'
      "1@[]:80",                // empty IPv6
      "1@[127.0.0.1]:80",       // IPv4 in brackets
      "1@[db.example]:80",      // a name in brackets
      "1@[::g]:80",             // not hex
      "0@127.0.0.1:80",         // id 0
      "@127.0.0.1:80",          // empty id
      "-1@127.0.0.1:80",        // negative id
      "x@127.0.0.1:80",         // not a number
      "18446744073709551616@h:1",  // id above 2^64 - 1
      "1@2@h:1",                // two '@'
      "1@:80",                  // empty host
      "1@-db:80",               // label starts with '-'
      "1@db-:80",               // label ends with '-'
      "1@db..example:80",       // empty label
      "1@db.:80",               // trailing dot
      "1@.db:80",               // leading dot
      "1@db_1:80",              // '_' is not allowed
      "1@d b:80",               // space
      "1@1.2.3:80",             // all-digit last label: a mistyped IPv4
      "1@256.0.0.1:80",         // same
      "1@db.123:80",            // same
      "1@" + long_label + ":80",  // label over 63
      "1@" + long_name + ":80",   // name over 253
      "1@localhost:0",          // port 0
      "1@localhost:65536",      // port out of range
      "1@localhost",            // no port
      "1@localhost:",           // empty port
  };
  for (const std::string& text : bad) {
    NodeInfo n{"untouched", 7, 3};
    Status s = NodeInfo::Parse(text, &n);
    EXPECT_TRUE(s.IsInvalidArgument()) << "'" << text << "' -> " << s.ToString();
    EXPECT_NE(std::string::npos, s.message().find(text)) << s.message();
    EXPECT_EQ((NodeInfo{"untouched", 7, 3}), n) << text;
  }
}

TEST(NodeInfoTest, AHostNameWithoutAnIdSaysHowToGiveOne) {
  NodeInfo n;
  Status s = NodeInfo::Parse("db3.example:7000", &n);
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(std::string::npos, s.message().find("7@db3.example:7000")) << s.message();
  s = NodeInfo::Parse("[::1]:7000", &n);
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(std::string::npos, s.message().find("7@[::1]:7000")) << s.message();
}

TEST(NodeInfoTest, Validate) {
  EXPECT_TRUE((NodeInfo{"127.0.0.1", 1}).Validate().ok());
  EXPECT_TRUE((NodeInfo{"::1", 1, 4}).Validate().ok());
  EXPECT_TRUE((NodeInfo{"db.example", 1, 4}).Validate().ok());
  EXPECT_TRUE((NodeInfo{"::1", 1}).Validate().IsInvalidArgument());         // no id
  EXPECT_TRUE((NodeInfo{"db.example", 1}).Validate().IsInvalidArgument());  // no id
  EXPECT_TRUE((NodeInfo{"127.0.0.1", 0, 4}).Validate().IsInvalidArgument());
  EXPECT_TRUE((NodeInfo{"[::1]", 1, 4}).Validate().IsInvalidArgument());  // brackets stored
  EXPECT_TRUE((NodeInfo{"", 1, 4}).Validate().IsInvalidArgument());
  EXPECT_TRUE((NodeInfo{"a b", 1, 4}).Validate().IsInvalidArgument());
}

TEST(NodeInfoTest, ParseListWithIds) {
  std::vector<NodeInfo> nodes;
  Status s = NodeInfo::ParseList("1@[::1]:7000,2@localhost:7001,127.0.0.1:7002", &nodes);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(3u, nodes.size());
  EXPECT_EQ((NodeInfo{"::1", 7000, 1}), nodes[0]);
  EXPECT_EQ((NodeInfo{"localhost", 7001, 2}), nodes[1]);
  EXPECT_EQ((NodeInfo{"127.0.0.1", 7002}), nodes[2]);

  const char* bad[] = {
      "1@h1:5,1@h2:6",                 // one id twice
      "1@h:5,2@h:5",                   // one address twice
      "1@[::1]:5,2@[0::1]:5",          // the same address, spelled twice
      "1@h:5,h2:6",                    // a name without an id
  };
  for (const char* text : bad) {
    std::vector<NodeInfo> keep{NodeInfo{"keep", 1}};
    s = NodeInfo::ParseList(text, &keep);
    EXPECT_TRUE(s.IsInvalidArgument()) << "'" << text << "' -> " << s.ToString();
    ASSERT_EQ(1u, keep.size()) << text;
  }
}

}  // namespace
}  // namespace node_info_test
}  // namespace chorus
