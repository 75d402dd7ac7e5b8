// util/chmod_at.h — set the mode of a file named relative to a folder, never
// through a symlink, without needing /proc.
#pragma once

#include <sys/types.h>

namespace orch {

// fchmodat(dirfd, name, mode, AT_SYMLINK_NOFOLLOW) that also works where /proc is
// not mounted (a minimal container, a chroot). glibc 2.36 emulates the flag
// through /proc/self/fd and fails with EOPNOTSUPP without it, even for a plain
// file; Linux 6.6's fchmodat2 takes the flag itself. On an older kernel (ENOSYS)
// or under a seccomp filter that refuses the new call (EPERM), glibc's fchmodat
// does it. A symlink is never followed: its mode cannot be set (EOPNOTSUPP).
// Returns 0, or -1 with errno set.
int chmod_at_nofollow(int dirfd, const char* name, mode_t mode);

}  // namespace orch
