// util/chmod_at.cc — see chmod_at.h.
#include "util/chmod_at.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace orch {

namespace {

#ifdef SYS_fchmodat2
constexpr long kFchmodat2 = SYS_fchmodat2;
#else
constexpr long kFchmodat2 = 452;  // the same number on every architecture (Linux 6.6)
#endif

}  // namespace

int chmod_at_nofollow(int dirfd, const char* name, mode_t mode) {
  if (::syscall(kFchmodat2, dirfd, name, mode, AT_SYMLINK_NOFOLLOW) == 0) return 0;
  if (errno != ENOSYS && errno != EPERM) return -1;
  return ::fchmodat(dirfd, name, mode, AT_SYMLINK_NOFOLLOW);
}

}  // namespace orch
