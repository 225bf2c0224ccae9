#include "utils/crc32c.h"

#include <string>

#include <gtest/gtest.h>

#include "utils/coding.h"

namespace chorus {
namespace crc32c_test {
namespace {

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 (iSCSI) test vectors.
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(crc32c::Value(ones), 0x62a8ab43u);
  std::string inc(32, '\0');
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c::Value(inc), 0x46dd794eu);
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xe3069283u);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string a = "hello, ", b = "chorus replicated world";
  EXPECT_EQ(crc32c::Extend(crc32c::Value(a), b.data(), b.size()), crc32c::Value(a + b));
}

// Extend takes the SSE4.2 instruction where the CPU has it: both paths must
// agree byte for byte, at every length and alignment, and when continued.
TEST(Crc32cTest, HardwareAndPortableAgree) {
  std::string data(4096 + 16, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n < 300; ++n) {
      const uint32_t portable = crc32c::internal::ExtendPortable(7, data.data() + offset, n);
      EXPECT_EQ(crc32c::Extend(7, data.data() + offset, n), portable) << offset << " " << n;
      if (crc32c::internal::HardwareAvailable()) {
        ASSERT_EQ(crc32c::internal::ExtendHardware(7, data.data() + offset, n), portable)
            << offset << " " << n;
      }
    }
  }
  const uint32_t whole = crc32c::internal::ExtendPortable(0, data.data(), data.size());
  EXPECT_EQ(crc32c::Value(data), whole);
  EXPECT_EQ(crc32c::Extend(crc32c::Value(data.data(), 1001), data.data() + 1001,
                           data.size() - 1001),
            whole);
}

TEST(CodingTest, FixedRoundTrip) {
  std::string s;
  PutFixed32(&s, 0xdeadbeefu);
  PutFixed64(&s, 0x0123456789abcdefull);
  ASSERT_EQ(s.size(), 12u);
  EXPECT_EQ(DecodeFixed32(s.data()), 0xdeadbeefu);
  EXPECT_EQ(DecodeFixed64(s.data() + 4), 0x0123456789abcdefull);
}

}  // namespace
}  // namespace crc32c_test
}  // namespace chorus
