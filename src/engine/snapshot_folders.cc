// Going through the workspace folder by folder. See snapshot_folders.h.
#include "engine/snapshot_folders.h"

#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "engine/snapshot_manifest.h"
#include "util/chmod_at.h"

namespace orch::snapshot_detail {

namespace fs = std::filesystem;

std::optional<std::vector<std::string>> WorkspaceFolders::below_workspace(const fs::path& path) const {
  if (!path.is_absolute() || !in_folder(path, workspace)) return std::nullopt;
  std::vector<std::string> names;
  for (const fs::path& part : path.lexically_relative(workspace)) {
    if (part == "..") return std::nullopt;  // openat would take it up and out
    if (!part.empty() && part != ".") names.push_back(part.string());
  }
  return names;
}

void WorkspaceFolders::open_up(Folder& folder) {
  struct stat st {};
  if (::fstat(folder.fd.get(), &st) != 0) return;
  const mode_t mode = st.st_mode & 07777;
  if ((mode & S_IRWXU) == S_IRWXU || geteuid() == 0) return;
  if (::fchmod(folder.fd.get(), mode | S_IRWXU) == 0 && folder.mode_before < 0)
    folder.mode_before = static_cast<int>(mode);
}

Folder WorkspaceFolders::open_folder(int parent, const std::string& name, fs::path path) {
  Fd fd(::openat(parent, name.c_str(), kOpenFolder));
  int error = errno;
  Folder folder(std::move(fd), std::move(path));
  struct stat st {};
  if (!folder.fd.ok() && error == EACCES && ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
      chmod_at_nofollow(parent, name.c_str(), (st.st_mode & 07777) | S_IRWXU) == 0) {
    folder.fd = Fd(::openat(parent, name.c_str(), kOpenFolder));
    error = errno;
    if (folder.fd.ok())
      folder.mode_before = static_cast<int>(st.st_mode & 07777);
    else
      chmod_at_nofollow(parent, name.c_str(), st.st_mode & 07777);
  }
  if (!folder.fd.ok()) {
    errno = error;
    problem(error == ELOOP || error == ENOTDIR
                ? fmt::format("{} is no folder any more (replaced during the restore): left as it is",
                              folder.path.string())
                : os_error(folder.path, "open the folder"));
  }
  return folder;
}

std::optional<std::vector<std::string>> WorkspaceFolders::list(const Folder& folder) {
  const int copy = ::fcntl(folder.fd.get(), F_DUPFD_CLOEXEC, 0);
  DIR* dir = copy < 0 ? nullptr : ::fdopendir(copy);
  if (dir == nullptr) {
    problem(os_error(folder.path, "list"));
    if (copy >= 0) ::close(copy);
    return std::nullopt;
  }
  ::rewinddir(dir);  // the copy shares its position with `folder`, which may have been listed before
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int error = errno;
  ::closedir(dir);
  if (error != 0) {
    errno = error;
    problem(os_error(folder.path, "list"));
    return std::nullopt;
  }
  return names;
}

bool WorkspaceFolders::remove(int parent, const std::string& name, const fs::path& path) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return true;
    problem(os_error(path, "remove"));
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    Folder folder = open_folder(parent, name, path);
    if (!folder.fd.ok()) return false;
    open_up(folder);
    const auto names = list(folder);
    if (!names) return false;
    bool emptied = true;
    for (const std::string& n : *names) emptied = remove(folder.fd.get(), n, path / n) && emptied;
    if (!emptied) return false;
  }
  if (::unlinkat(parent, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT) {
    problem(os_error(path, "remove"));
    return false;
  }
  return true;
}

bool WorkspaceFolders::real_folder(int parent, const std::string& name, const fs::path& path) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    if (!remove(parent, name, path)) return false;
  } else if (errno != ENOENT) {
    problem(os_error(path, "read"));
    return false;
  }
  if (::mkdirat(parent, name.c_str(), 0755) != 0 && errno != EEXIST) {
    problem(os_error(path, "make the folder"));
    return false;
  }
  return true;
}

bool WorkspaceFolders::walk_down(const std::vector<std::string>& names, std::vector<Folder>& chain) {
  for (std::size_t i = 0; i + 1 < names.size(); ++i) {
    const int parent = chain.back().fd.get();
    fs::path path = chain.back().path / names[i];
    if (!real_folder(parent, names[i], path)) return false;
    Folder next = open_folder(parent, names[i], std::move(path));
    if (!next.fd.ok()) return false;
    chain.push_back(std::move(next));
  }
  return true;
}

}  // namespace orch::snapshot_detail
