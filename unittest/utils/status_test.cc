#include "utils/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace chorus {
namespace status_test {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, ErrorsCarryCodeAndMessage) {
  Status s = Status::Corruption("record 7: bad crc");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_FALSE(s.IsNotFound());
  EXPECT_EQ(s.message(), "record 7: bad crc");
  EXPECT_EQ(s.ToString(), "Corruption: record 7: bad crc");
}

TEST(StatusTest, CopiesAreIndependentValues) {
  Status a = Status::Busy("too many waiters");
  Status b = a;
  a = Status::OK();
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(b.IsBusy());
  EXPECT_EQ(b.message(), "too many waiters");
}

TEST(StatusTest, FromErrnoNamesTheError) {
  Status s = Status::FromErrno("open /nonexistent", ENOENT);
  EXPECT_TRUE(s.IsIOError());
  EXPECT_NE(s.message().find("open /nonexistent: "), std::string::npos);
  EXPECT_NE(s.message().find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace status_test
}  // namespace chorus
