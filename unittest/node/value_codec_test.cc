#include "node/value_codec.h"

#include <gtest/gtest.h>

namespace chorus {
namespace {

TEST(ValueCodecTest, SingleRoundTrip) {
  std::vector<AppValue> out;
  ASSERT_TRUE(DecodeAppValues(EncodeSingleValue(7, "hello"), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].state_machine_id, 7);
  EXPECT_EQ(out[0].payload, "hello");
  ASSERT_TRUE(DecodeAppValues(EncodeSingleValue(1, ""), &out).ok());
  EXPECT_EQ(out[0].payload, "");
}

TEST(ValueCodecTest, BatchRoundTrip) {
  AppValue a{1, "alpha"}, b{2, ""}, c{1, std::string(1000, 'x')};
  std::vector<AppValue> out;
  ASSERT_TRUE(DecodeAppValues(EncodeBatchValue({&a, &b, &c}), &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].payload, "alpha");
  EXPECT_EQ(out[1].state_machine_id, 2);
  EXPECT_EQ(out[1].payload, "");
  EXPECT_EQ(out[2].payload, c.payload);
}

TEST(ValueCodecTest, MalformedIsCorruption) {
  std::vector<AppValue> out;
  EXPECT_TRUE(DecodeAppValues("", &out).IsCorruption());
  EXPECT_TRUE(DecodeAppValues(std::string("\x09\0\0\0\0", 5), &out).IsCorruption());
  AppValue a{1, "alpha"};
  std::string batch = EncodeBatchValue({&a});
  for (size_t cut = 5; cut < batch.size(); ++cut) {
    EXPECT_TRUE(DecodeAppValues(batch.substr(0, cut), &out).IsCorruption()) << cut;
  }
  EXPECT_TRUE(DecodeAppValues(batch + "x", &out).IsCorruption());
  std::string huge_count = batch;
  huge_count[1] = '\xff';
  huge_count[2] = '\xff';
  EXPECT_TRUE(DecodeAppValues(huge_count, &out).IsCorruption());
}

}  // namespace
}  // namespace chorus
