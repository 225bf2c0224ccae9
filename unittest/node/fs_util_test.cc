// fs_util: the durable mkdir -p.
#include "node/fs_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "unittest/support/test_util.h"

namespace chorus {
namespace fs_util_test {
namespace {

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(CreateDirsTest, CreatesEveryMissingComponentAndAcceptsExistingOnes) {
  testing::TempDir root;
  const std::string deep = root.path() + "/a/b/c";
  ASSERT_TRUE(CreateDirs(deep).ok());
  EXPECT_TRUE(IsDir(root.path() + "/a"));
  EXPECT_TRUE(IsDir(root.path() + "/a/b"));
  EXPECT_TRUE(IsDir(deep));
  EXPECT_TRUE(CreateDirs(deep).ok());  // all there: nothing to do
  EXPECT_TRUE(CreateDirs(root.path() + "/a/d").ok());
  EXPECT_TRUE(IsDir(root.path() + "/a/d"));
}

TEST(CreateDirsTest, RelativePathsSyncTheCurrentDirectoryAsParent) {
  testing::TempDir root;
  char cwd[4096];
  ASSERT_NE(nullptr, getcwd(cwd, sizeof(cwd)));
  ASSERT_EQ(0, chdir(root.path().c_str()));
  const Status s = CreateDirs("rel/child");
  ASSERT_EQ(0, chdir(cwd));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(IsDir(root.path() + "/rel/child"));
}

TEST(CreateDirsTest, AFileInTheWayIsAnIoErrorNamingIt) {
  testing::TempDir root;
  ASSERT_TRUE(WriteWholeFile(root.path() + "/f", "x").ok());
  const Status s = CreateDirs(root.path() + "/f/g");
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(std::string::npos, s.ToString().find(root.path() + "/f"));
}

}  // namespace
}  // namespace fs_util_test
}  // namespace chorus
