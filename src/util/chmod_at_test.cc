#include "util/chmod_at.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "testing/testing.h"
#include "util/fd.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

TEST(ChmodAt, SetsTheModeOfAFileAndNeverFollowsASymlink) {
  testing::TempDir dir;
  testing::write_file(dir / "f", "x");
  ASSERT_EQ(::chmod((dir / "f").c_str(), 0644), 0);
  fs::create_symlink("f", dir / "link");
  Fd folder(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(folder.ok());

  EXPECT_EQ(chmod_at_nofollow(folder.get(), "f", 0600), 0) << std::strerror(errno);
  EXPECT_EQ(mode_of(dir / "f"), 0600u);
  errno = 0;
  EXPECT_EQ(chmod_at_nofollow(folder.get(), "link", 0777), -1);
  EXPECT_EQ(errno, EOPNOTSUPP) << std::strerror(errno);
  EXPECT_EQ(mode_of(dir / "f"), 0600u) << "the symlink was followed";
  errno = 0;
  EXPECT_EQ(chmod_at_nofollow(folder.get(), "missing", 0600), -1);
  EXPECT_EQ(errno, ENOENT);
}

// glibc 2.36's fchmodat(AT_SYMLINK_NOFOLLOW) goes through /proc/self/fd and fails
// without it, even on a plain file; chmod_at_nofollow does not need /proc.
TEST(ChmodAt, WorksWhereProcIsNotMounted) {
  testing::TempDir dir;
  testing::write_file(dir / "f", "x");
  ASSERT_EQ(::chmod((dir / "f").c_str(), 0644), 0);
  const std::string path = (dir / "f").string();
  const int rc = testing::without_proc([&path] {
    if (::syscall(452, AT_FDCWD, path.c_str(), 0644, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOSYS)
      return 3;  // a kernel before 6.6: only glibc's way is there
    return chmod_at_nofollow(AT_FDCWD, path.c_str(), 0640) == 0 ? 0 : 1;
  });
  if (rc == testing::kNoNamespace) GTEST_SKIP() << "no mount namespace here (needs CAP_SYS_ADMIN)";
  if (rc == 3) GTEST_SKIP() << "this kernel has no fchmodat2 (Linux < 6.6)";
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(mode_of(dir / "f"), 0640u);
}

}  // namespace
}  // namespace orch
