// Walking the workspace for a scope snapshot, and hashing what it holds. See
// cycle_scope_internal.h.
//
// The walk opens the workspace once and goes down one folder at a time on open
// descriptors with O_NOFOLLOW (engine/snapshot_folders.h tells why): a job's
// symlink to a folder outside the workspace is a symlink, saved or compared as
// one, never a way out, even if it is swapped in while the walk runs.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/snapshot_folders.h"
#include "engine/snapshot_manifest.h"
#include "flows/cycle_scope_internal.h"
#include "util/fd.h"

namespace orch::flows::scope_detail {

namespace fs = std::filesystem;

const char* entry_type_name(EntryType type) {
  switch (type) {
    case EntryType::File:
      return "file";
    case EntryType::Symlink:
      return "symlink";
    case EntryType::Other:
      return "other";
  }
  return "other";
}

std::int64_t stat_mtime_ms(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

Expected<std::string> hash_content(int fd, int copy_to, const fs::path& shown, std::int64_t& size) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a 64, as engine's fingerprint_of
  std::vector<char> buffer(1 << 16);
  size = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(ErrorCode::Io, snapshot_detail::os_error(shown, "read"));
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      h ^= static_cast<unsigned char>(buffer[static_cast<std::size_t>(i)]);
      h *= 1099511628211ULL;
    }
    for (ssize_t put = 0; copy_to >= 0 && put < n;) {
      const ssize_t w = ::write(copy_to, buffer.data() + put, static_cast<std::size_t>(n - put));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return fail(ErrorCode::Io, snapshot_detail::os_error(shown, "save a copy of"));
      put += w;
    }
    size += n;
  }
  return fmt::format("{:016x}", h);
}

namespace {

// The names in the open folder `fd` ("." and ".." aside), sorted, read through a
// copy of the descriptor (closedir closes the one it is given).
Expected<std::vector<std::string>> scope_list_folder(int fd, const fs::path& shown) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  DIR* dir = copy < 0 ? nullptr : ::fdopendir(copy);
  if (dir == nullptr) {
    const int error = errno;
    if (copy >= 0) ::close(copy);
    errno = error;
    return fail(ErrorCode::Io, snapshot_detail::os_error(shown, "list"));
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
    errno = 0;
  }
  const int error = errno;
  ::closedir(dir);
  if (error != 0) {
    errno = error;
    return fail(ErrorCode::Io, snapshot_detail::os_error(shown, "list"));
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct ScopeWalker {
  const IgnoreRules& rules;
  const FileVisitor& on_file;
  WalkResult out;

  // Goes through the open folder `fd`, the one at `rel` ("" the workspace).
  // Recursion holds one descriptor per level: a tree deeper than the
  // descriptor limit (1024 by default) fails with EMFILE, reported.
  Expected<void> folder(int fd, const std::string& rel, const fs::path& shown) {
    for (const std::string& name : ORCH_TRY(scope_list_folder(fd, shown))) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      const fs::path child_shown = shown / name;
      struct stat st {};
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // gone since the listing: not there
        return fail(ErrorCode::Io, snapshot_detail::os_error(child_shown, "read"));
      }
      if (S_ISDIR(st.st_mode)) {
        if (rules.ignored(child, true)) continue;
        Fd sub(::openat(fd, name.c_str(), snapshot_detail::kOpenFolder));
        if (!sub.ok() && errno == ENOENT) continue;
        if (!sub.ok() || ::fstat(sub.get(), &st) != 0)
          return fail(ErrorCode::Io, snapshot_detail::os_error(child_shown, "open the folder"));
        out.folders[child] = {static_cast<mode_t>(st.st_mode & 07777), stat_mtime_ms(st)};
        ORCH_TRY(folder(sub.get(), child, child_shown));
        continue;
      }
      if (rules.ignored(child, false)) continue;
      ScopeEntry entry;
      entry.rel = child;
      if (S_ISREG(st.st_mode)) {
        // O_NONBLOCK: should it have become a FIFO meanwhile, the open does not wait.
        Fd file(::openat(fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        if (!file.ok() && errno == ENOENT) continue;
        if (!file.ok() || ::fstat(file.get(), &st) != 0)
          return fail(ErrorCode::Io, snapshot_detail::os_error(child_shown, "read"));
        if (!S_ISREG(st.st_mode))
          return fail(ErrorCode::Io, fmt::format("{}: replaced while it was read", child_shown.string()));
        entry.type = EntryType::File;
        entry.mode = static_cast<mode_t>(st.st_mode & 07777);
        entry.size = st.st_size;
        entry.mtime_ms = stat_mtime_ms(st);
        ORCH_TRY(on_file(file.get(), entry));
      } else if (S_ISLNK(st.st_mode)) {
        entry.type = EntryType::Symlink;
        entry.mtime_ms = stat_mtime_ms(st);
        std::string target(static_cast<std::size_t>(std::max<off_t>(st.st_size, 255)) + 1, '\0');
        for (;;) {
          const ssize_t n = ::readlinkat(fd, name.c_str(), target.data(), target.size());
          if (n < 0) return fail(ErrorCode::Io, snapshot_detail::os_error(child_shown, "read the symlink"));
          if (static_cast<std::size_t>(n) < target.size()) {
            target.resize(static_cast<std::size_t>(n));
            break;
          }
          target.resize(target.size() * 2);  // it grew since the stat: cut short, read again
        }
        entry.target = std::move(target);
      } else {
        entry.type = EntryType::Other;  // a FIFO, socket or device: type and mode only
        entry.mode = static_cast<mode_t>(st.st_mode & 07777);
        entry.mtime_ms = stat_mtime_ms(st);
      }
      out.entries[child] = std::move(entry);
    }
    return {};
  }
};

}  // namespace

Expected<WalkResult> walk_scope(const fs::path& workspace, const IgnoreRules& rules,
                                const FileVisitor& on_file) {
  Fd top(::open(workspace.c_str(), snapshot_detail::kOpenFolder));
  struct stat st {};
  if (!top.ok() || ::fstat(top.get(), &st) != 0)
    return fail(ErrorCode::Io, snapshot_detail::os_error(workspace, "open the workspace"));
  ScopeWalker walker{rules, on_file, {}};
  walker.out.folders[""] = {static_cast<mode_t>(st.st_mode & 07777), stat_mtime_ms(st)};
  ORCH_TRY(walker.folder(top.get(), "", workspace));
  return std::move(walker.out);
}

}  // namespace orch::flows::scope_detail
