#include "node/value_codec.h"

#include <gtest/gtest.h>

namespace chorus {
namespace value_codec_test {
namespace {

TEST(ValueCodecTest, SingleRoundTrip) {
  std::vector<AppValue> out;
  ASSERT_TRUE(DecodeAppValues(EncodeSingleValue(7, 0x1122334455667788ull, "hello"), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].state_machine_id, 7);
  EXPECT_EQ(out[0].payload, "hello");
  EXPECT_EQ(out[0].proposal_id, 0x1122334455667788ull);
  ASSERT_TRUE(DecodeAppValues(EncodeSingleValue(1, 5, ""), &out).ok());
  EXPECT_EQ(out[0].payload, "");
  EXPECT_EQ(out[0].proposal_id, 5u);
}

TEST(ValueCodecTest, BatchRoundTrip) {
  AppValue a{1, "alpha", 11}, b{2, "", 22}, c{1, std::string(1000, 'x'), ~0ull};
  std::vector<AppValue> out;
  ASSERT_TRUE(DecodeAppValues(EncodeBatchValue({&a, &b, &c}), &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].payload, "alpha");
  EXPECT_EQ(out[0].proposal_id, 11u);
  EXPECT_EQ(out[1].state_machine_id, 2);
  EXPECT_EQ(out[1].payload, "");
  EXPECT_EQ(out[1].proposal_id, 22u);
  EXPECT_EQ(out[2].payload, c.payload);
  EXPECT_EQ(out[2].proposal_id, ~0ull);
}

TEST(ValueCodecTest, ValuesLoggedBeforeProposalIdsDecodeWithIdZero) {
  std::vector<AppValue> out;
  ASSERT_TRUE(DecodeAppValues(std::string("\x01\x07\0\0\0hello", 10), &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].state_machine_id, 7);
  EXPECT_EQ(out[0].payload, "hello");
  EXPECT_EQ(out[0].proposal_id, 0u);
  // A batch of two: (sm 1, "ab") and (sm 2, "").
  const std::string v1_batch("\x02\x02\0\0\0" "\x01\0\0\0\x02\0\0\0ab" "\x02\0\0\0\0\0\0\0", 23);
  ASSERT_TRUE(DecodeAppValues(v1_batch, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].payload, "ab");
  EXPECT_EQ(out[1].state_machine_id, 2);
  EXPECT_EQ(out[1].proposal_id, 0u);
}

TEST(ValueCodecTest, MalformedIsCorruption) {
  std::vector<AppValue> out;
  EXPECT_TRUE(DecodeAppValues("", &out).IsCorruption());
  EXPECT_TRUE(DecodeAppValues(std::string("\x09\0\0\0\0", 5), &out).IsCorruption());
  for (size_t cut = 0; cut < 13; ++cut) {
    EXPECT_TRUE(DecodeAppValues(EncodeSingleValue(1, 2, "").substr(0, cut), &out).IsCorruption()) << cut;
  }
  AppValue a{1, "alpha", 3};
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

// Found by value_codec_fuzz: a batch that failed after some good entries
// (a bad length, trailing bytes) left those entries in *out, and
// Group::Apply, which logs the error and goes on with what it got, executed
// them instead of treating the instance as a noop.
TEST(ValueCodecTest, CorruptBatchYieldsNoValues) {
  AppValue a{1, "alpha", 3};
  AppValue b{2, "beta", 4};
  const std::string batch = EncodeBatchValue({&a, &b});
  std::vector<AppValue> out;
  EXPECT_TRUE(DecodeAppValues(batch + "x", &out).IsCorruption());
  EXPECT_TRUE(out.empty());
  std::string bad_length = batch;
  bad_length[bad_length.size() - 5] = '\x7f';  // the second entry's length, high byte
  out.assign(1, AppValue{9, "stale", 9});
  EXPECT_TRUE(DecodeAppValues(bad_length, &out).IsCorruption());
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace value_codec_test
}  // namespace chorus
