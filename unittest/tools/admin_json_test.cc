// chorus_admin's JSON reader (tools/admin/json.h) on /status-like documents
// and on bad input.
#include "tools/admin/json.h"

#include <gtest/gtest.h>

namespace chorus {
namespace admin {
namespace admin_json_test {
namespace {

TEST(AdminJsonTest, ReadsNestedStatusDocuments) {
  Json doc;
  ASSERT_TRUE(ParseJson("{\"node\":\"4@127.0.0.1:7004\",\"node_id\":18446744073709551615,"
                        "\"groups\":[{\"group\":0,\"master\":null,\"is_master\":false,"
                        "\"membership\":{\"version\":3,\"pending\":true,\"members\":["
                        "{\"id\":1,\"node\":\"a\\\"b\\\\c\\u0041\",\"voter\":true},"
                        "{\"id\":4,\"voter\":false}]}}],\"x\":-1.5e3}\n",
                        &doc)
                  .ok());
  EXPECT_EQ(doc["node"].str(), "4@127.0.0.1:7004");
  EXPECT_EQ(doc["node_id"].u64(), 18446744073709551615ull);
  const Json& g = doc["groups"].items.at(0);
  EXPECT_TRUE(g["master"].is_null());
  EXPECT_FALSE(g["is_master"].truth());
  EXPECT_EQ(g["membership"]["version"].u64(), 3u);
  EXPECT_TRUE(g["membership"]["pending"].truth());
  ASSERT_EQ(g["membership"]["members"].items.size(), 2u);
  EXPECT_EQ(g["membership"]["members"].items[0]["node"].str(), "a\"b\\cA");
  EXPECT_FALSE(g["membership"]["members"].items[1]["voter"].truth());
  EXPECT_TRUE(doc["missing"]["deeper"].is_null());
  EXPECT_EQ(doc["x"].u64(), 0u);  // not a non-negative integer
  EXPECT_EQ(doc["x"].text, "-1.5e3");
}

TEST(AdminJsonTest, RefusesBadDocuments) {
  Json doc;
  for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "\"open", "{} x", "nul",
                          "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                          "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"}) {
    EXPECT_TRUE(ParseJson(bad, &doc).IsCorruption()) << bad;
  }
  EXPECT_TRUE(ParseJson(" [ ] ", &doc).ok());
  EXPECT_EQ(doc.type, Json::kArray);
}

}  // namespace
}  // namespace admin_json_test
}  // namespace admin
}  // namespace chorus
