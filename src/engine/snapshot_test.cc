// take_snapshot / restore_snapshot on real files: what an attempt may do to its
// `writes:` and what a restore must put back (engine/snapshot.h).
#include "engine/snapshot.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(ws_);
    fs::create_directories(outside_);
    ws_ = fs::canonical(ws_);
  }
  fs::path snap() const { return dir_ / "snap"; }
  void take(const std::vector<fs::path>& paths) {
    auto r = take_snapshot(paths, snap(), ws_);
    ASSERT_TRUE(r) << r.error().message;
  }
  void restore() {
    auto r = restore_snapshot(snap());
    ASSERT_TRUE(r) << r.error().message;
  }
  static struct stat info(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st;
  }
  static void set_mtime(const fs::path& p, time_t seconds) {
    timespec times[2] = {{0, UTIME_OMIT}, {seconds, 123}};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << p;
  }

  static std::set<std::string> names_in(const fs::path& folder) {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(folder)) names.insert(e.path().filename().string());
    return names;
  }

  TempDir dir_;
  fs::path ws_ = dir_ / "ws";
  fs::path outside_ = dir_ / "outside";
};

// An attempt that swaps a folder on the way to a `writes:` path for a symlink
// to outside the workspace does not get the restore to write or delete there.
TEST_F(SnapshotTest, ASymlinkPlantedOnTheWayIsNeverFollowed) {
  fs::create_directories(ws_ / "dir");
  write_file(ws_ / "dir" / "f", "inside\n");
  fs::create_directories(ws_ / "sub");
  write_file(outside_ / "f", "precious\n");
  write_file(outside_ / "new.txt", "also precious\n");
  take({ws_ / "dir" / "f", ws_ / "sub" / "new.txt"});

  fs::remove_all(ws_ / "dir");
  fs::create_directory_symlink(outside_, ws_ / "dir");
  fs::remove_all(ws_ / "sub");
  fs::create_directory_symlink(outside_, ws_ / "sub");
  restore();

  EXPECT_EQ(read_file(outside_ / "f"), "precious\n");
  EXPECT_EQ(read_file(outside_ / "new.txt"), "also precious\n");
  EXPECT_FALSE(fs::is_symlink(ws_ / "dir"));
  EXPECT_EQ(read_file(ws_ / "dir" / "f"), "inside\n");
  EXPECT_FALSE(fs::is_symlink(ws_ / "sub"));
  EXPECT_TRUE(fs::is_directory(ws_ / "sub"));
  EXPECT_FALSE(fs::exists(ws_ / "sub" / "new.txt"));
}

// A folder inside a `writes:` folder that the attempt swapped for a symlink to
// outside the workspace is made a folder again; what the symlink pointed at is
// neither listed (its entries would be extras to remove) nor written.
TEST_F(SnapshotTest, AFolderInsideTheSnapshotSwappedForASymlinkIsMadeAgain) {
  fs::create_directories(ws_ / "d" / "inner");
  write_file(ws_ / "d" / "inner" / "f", "inside\n");
  ASSERT_EQ(::chmod((ws_ / "d" / "inner").c_str(), 0750), 0);
  write_file(outside_ / "f", "precious\n");
  write_file(outside_ / "sentinel", "keep me\n");
  ASSERT_EQ(::chmod(outside_.c_str(), 0755), 0);
  take({ws_ / "d"});

  fs::remove_all(ws_ / "d" / "inner");
  fs::create_directory_symlink(outside_, ws_ / "d" / "inner");
  restore();

  EXPECT_EQ(names_in(outside_), (std::set<std::string>{"f", "sentinel"}));
  EXPECT_EQ(read_file(outside_ / "f"), "precious\n");
  EXPECT_EQ(read_file(outside_ / "sentinel"), "keep me\n");
  EXPECT_EQ(info(outside_).st_mode & 07777, 0755u);
  EXPECT_TRUE(S_ISDIR(info(ws_ / "d" / "inner").st_mode));
  EXPECT_EQ(read_file(ws_ / "d" / "inner" / "f"), "inside\n");
  EXPECT_EQ(info(ws_ / "d" / "inner").st_mode & 07777, 0750u);
}

// A new file two folders down whose first folder the attempt made a symlink
// to outside: the restore removes the symlink and the folders it made for the
// file, and what lies outside stays.
TEST_F(SnapshotTest, FoldersMadeForANewFileGoEvenWhenOneWasASymlink) {
  take({ws_ / "new" / "a" / "x.txt"});
  fs::create_directories(outside_ / "a");
  write_file(outside_ / "a" / "x.txt", "precious\n");
  fs::create_directory_symlink(outside_, ws_ / "new");
  restore();
  EXPECT_FALSE(fs::exists(fs::symlink_status(ws_ / "new")));
  EXPECT_EQ(read_file(outside_ / "a" / "x.txt"), "precious\n");
}

// A hard link is made again to a file restored before it. Should the folder of
// that file be a symlink to outside by then (a left-over process could swap it
// in between; here the roots' order in the manifest makes it so), nothing is
// linked: the link is reported, and the file outside gets no link into the
// workspace (through which a later write would change it).
TEST_F(SnapshotTest, AHardLinkWhoseTargetFolderIsASymlinkIsReportedNotFollowed) {
  fs::create_directories(ws_ / "a");
  fs::create_directories(ws_ / "b");
  write_file(ws_ / "a" / "f", "linked\n");
  ASSERT_EQ(::link((ws_ / "a" / "f").c_str(), (ws_ / "b" / "g").c_str()), 0);
  take({ws_ / "a" / "f", ws_ / "b" / "g"});
  {
    std::ifstream in(snap() / "manifest.json");
    auto manifest = nlohmann::json::parse(in);
    auto& roots = manifest["roots"];
    ASSERT_EQ(roots.size(), 2u);
    ASSERT_TRUE(roots[1]["nodes"][0].contains("link_to"));
    std::swap(roots[0], roots[1]);
    std::ofstream(snap() / "manifest.json") << manifest.dump();
  }

  write_file(outside_ / "f", "precious\n");
  fs::remove_all(ws_ / "a");
  fs::create_directory_symlink(outside_, ws_ / "a");
  fs::remove(ws_ / "b" / "g");
  auto r = restore_snapshot(snap());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot link " + (ws_ / "b" / "g").string() + " again"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(info(outside_ / "f").st_nlink, 1u) << "a file outside was linked into the workspace";
  EXPECT_EQ(read_file(outside_ / "f"), "precious\n");
  EXPECT_FALSE(fs::exists(fs::symlink_status(ws_ / "b" / "g")));
  EXPECT_TRUE(S_ISDIR(info(ws_ / "a").st_mode));
  EXPECT_EQ(read_file(ws_ / "a" / "f"), "linked\n");
}

// Folders the attempt made read-only or unreadable (to its owner too) are
// opened up to be brought back in line, and get their modes back; a read-only
// folder it created goes with all it holds.
TEST_F(SnapshotTest, FoldersTheAttemptLockedAreStillRestored) {
  fs::create_directories(ws_ / "d" / "ro");
  fs::create_directories(ws_ / "d" / "hidden");
  write_file(ws_ / "d" / "ro" / "f", "ro\n");
  write_file(ws_ / "d" / "hidden" / "f", "hidden\n");
  ASSERT_EQ(::chmod((ws_ / "d" / "ro").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((ws_ / "d" / "hidden").c_str(), 0750), 0);
  take({ws_ / "d"});

  write_file(ws_ / "d" / "ro" / "f", "changed\n");
  write_file(ws_ / "d" / "ro" / "extra", "x\n");
  write_file(ws_ / "d" / "hidden" / "extra", "x\n");
  fs::create_directories(ws_ / "d" / "made" / "deeper");
  write_file(ws_ / "d" / "made" / "deeper" / "f", "x\n");
  ASSERT_EQ(::chmod((ws_ / "d" / "made" / "deeper").c_str(), 0500), 0);
  ASSERT_EQ(::chmod((ws_ / "d" / "ro").c_str(), 0500), 0);
  ASSERT_EQ(::chmod((ws_ / "d" / "hidden").c_str(), 0), 0);
  restore();

  EXPECT_EQ(read_file(ws_ / "d" / "ro" / "f"), "ro\n");
  EXPECT_EQ(read_file(ws_ / "d" / "hidden" / "f"), "hidden\n");
  EXPECT_FALSE(fs::exists(ws_ / "d" / "ro" / "extra"));
  EXPECT_FALSE(fs::exists(ws_ / "d" / "hidden" / "extra"));
  EXPECT_FALSE(fs::exists(ws_ / "d" / "made"));
  EXPECT_EQ(info(ws_ / "d" / "ro").st_mode & 07777, 0755u);
  EXPECT_EQ(info(ws_ / "d" / "hidden").st_mode & 07777, 0750u);
}

// The race the restore is built against: a process left over from the attempt
// keeps swapping a folder of the snapshot between the real folder and a symlink
// to outside the workspace while restores run. Whatever each restore reports,
// nothing outside is ever listed-and-removed, written or given another mode.
// (A restore that checks a path and then uses it by path loses this race.)
TEST_F(SnapshotTest, AFolderSwappedForASymlinkDuringTheRestoreSendsNothingOutside) {
  fs::create_directories(ws_ / "d" / "inner");
  write_file(ws_ / "d" / "inner" / "f", "inside\n");
  write_file(ws_ / "d" / "inner" / "g", "inside too\n");
  ASSERT_EQ(::chmod((ws_ / "d" / "inner").c_str(), 0700), 0);
  write_file(outside_ / "sentinel", "precious\n");
  ASSERT_EQ(::chmod(outside_.c_str(), 0755), 0);
  take({ws_ / "d"});
  write_file(ws_ / "d" / "inner" / "f", "changed\n");

  const fs::path inner = ws_ / "d" / "inner", parked = ws_ / "parked";
  std::atomic<bool> stop = false;
  std::thread swapper([&] {
    while (!stop) {
      // Symlink in, real folder parked beside the snapshot...
      std::error_code ec;
      fs::remove(parked, ec);
      if (::symlink(outside_.c_str(), parked.c_str()) != 0) continue;
      ::renameat2(AT_FDCWD, inner.c_str(), AT_FDCWD, parked.c_str(), RENAME_EXCHANGE);
      for (int spin = 0; spin < 2000; ++spin) std::atomic_signal_fence(std::memory_order_seq_cst);
      // ...and back. What is parked then (the symlink, or a folder a restore
      // made meanwhile) goes.
      ::renameat2(AT_FDCWD, inner.c_str(), AT_FDCWD, parked.c_str(), RENAME_EXCHANGE);
      struct stat st {};
      if (::lstat(parked.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fs::remove_all(parked, ec);
    }
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(800);
  int restores = 0;
  while (std::chrono::steady_clock::now() < until) {
    (void)restore_snapshot(snap());  // problems expected: the folder keeps changing under it
    ++restores;
  }
  stop = true;
  swapper.join();

  EXPECT_EQ(names_in(outside_), std::set<std::string>{"sentinel"}) << "after " << restores << " restores";
  EXPECT_EQ(read_file(outside_ / "sentinel"), "precious\n");
  EXPECT_EQ(info(outside_).st_mode & 07777, 0755u);
  // Once nothing swaps any more, a restore puts it all back.
  fs::remove_all(parked);
  restore();
  EXPECT_TRUE(S_ISDIR(info(inner).st_mode));
  EXPECT_EQ(read_file(inner / "f"), "inside\n");
  EXPECT_EQ(read_file(inner / "g"), "inside too\n");
  EXPECT_EQ(names_in(inner), (std::set<std::string>{"f", "g"}));
}

// Content, modes (folders' special bits too, whatever the umask), and
// modification times come back; a folder's after its contents.
TEST_F(SnapshotTest, ModesAndModificationTimesComeBack) {
  fs::create_directories(ws_ / "d" / "inner");
  write_file(ws_ / "d" / "inner" / "f", "one\n");
  ASSERT_EQ(::chmod((ws_ / "d" / "inner" / "f").c_str(), 0640), 0);
  ASSERT_EQ(::chmod((ws_ / "d" / "inner").c_str(), 02775), 0);
  ASSERT_EQ(::chmod((ws_ / "d").c_str(), 01777), 0);
  set_mtime(ws_ / "d" / "inner" / "f", 1'600'000'000);
  set_mtime(ws_ / "d" / "inner", 1'600'000'100);
  set_mtime(ws_ / "d", 1'600'000'200);
  take({ws_ / "d"});

  write_file(ws_ / "d" / "inner" / "f", "changed\n");
  write_file(ws_ / "d" / "inner" / "extra", "new\n");
  ASSERT_EQ(::chmod((ws_ / "d" / "inner").c_str(), 0700), 0);
  restore();

  EXPECT_EQ(read_file(ws_ / "d" / "inner" / "f"), "one\n");
  EXPECT_FALSE(fs::exists(ws_ / "d" / "inner" / "extra"));
  EXPECT_EQ(info(ws_ / "d" / "inner" / "f").st_mode & 07777, 0640u);
  EXPECT_EQ(info(ws_ / "d" / "inner").st_mode & 07777, 02775u);
  EXPECT_EQ(info(ws_ / "d").st_mode & 07777, 01777u);
  EXPECT_EQ(info(ws_ / "d" / "inner" / "f").st_mtim.tv_sec, 1'600'000'000);
  EXPECT_EQ(info(ws_ / "d" / "inner" / "f").st_mtim.tv_nsec, 123);
  EXPECT_EQ(info(ws_ / "d" / "inner").st_mtim.tv_sec, 1'600'000'100);
  EXPECT_EQ(info(ws_ / "d").st_mtim.tv_sec, 1'600'000'200);
}

// Where /proc is not mounted (a minimal container, a chroot) modes still come
// back: glibc 2.36's fchmodat(AT_SYMLINK_NOFOLLOW) needs /proc, the restore does not.
TEST_F(SnapshotTest, ModesComeBackWhereProcIsNotMounted) {
  fs::create_directories(ws_ / "d");
  write_file(ws_ / "d" / "f", "one\n");
  write_file(ws_ / "d" / "ro", "read-only\n");
  ASSERT_EQ(::chmod((ws_ / "d" / "f").c_str(), 0640), 0);
  ASSERT_EQ(::chmod((ws_ / "d" / "ro").c_str(), 0444), 0);
  ASSERT_EQ(::chmod((ws_ / "d").c_str(), 02775), 0);
  const int rc = testing::without_proc([this] {
    if (!take_snapshot({ws_ / "d"}, snap(), ws_)) return 1;
    write_file(ws_ / "d" / "f", "changed\n");
    if (::chmod((ws_ / "d" / "f").c_str(), 0600) != 0 || ::chmod((ws_ / "d").c_str(), 0700) != 0) return 2;
    auto r = restore_snapshot(snap());
    if (!r) {
      std::fprintf(stderr, "restore: %s\n", r.error().message.c_str());
      return 3;
    }
    return 0;
  });
  if (rc == testing::kNoNamespace) GTEST_SKIP() << "no mount namespace here (needs CAP_SYS_ADMIN)";
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(read_file(ws_ / "d" / "f"), "one\n");
  EXPECT_EQ(info(ws_ / "d" / "f").st_mode & 07777, 0640u);
  EXPECT_EQ(info(ws_ / "d" / "ro").st_mode & 07777, 0444u);
  EXPECT_EQ(info(ws_ / "d").st_mode & 07777, 02775u);
}

// A file changed in place gets its content back in place: its other hard link,
// not in `writes:`, sees the old content again and is still the same file.
TEST_F(SnapshotTest, AFileChangedInPlaceIsRestoredInPlaceForItsOtherLinks) {
  write_file(ws_ / "h1", "original\n");
  ASSERT_EQ(::link((ws_ / "h1").c_str(), (ws_ / "h2").c_str()), 0);
  take({ws_ / "h1"});
  {
    std::ofstream out(ws_ / "h1", std::ios::app);
    out << "appended\n";
  }
  restore();
  EXPECT_EQ(read_file(ws_ / "h1"), "original\n");
  EXPECT_EQ(read_file(ws_ / "h2"), "original\n");
  EXPECT_EQ(info(ws_ / "h1").st_ino, info(ws_ / "h2").st_ino);
}

// Two links inside one `writes:` folder stay one file after a restore that had
// to make them again.
TEST_F(SnapshotTest, HardLinksInsideTheSnapshotStayLinked) {
  fs::create_directories(ws_ / "d");
  write_file(ws_ / "d" / "a", "same\n");
  ASSERT_EQ(::link((ws_ / "d" / "a").c_str(), (ws_ / "d" / "b").c_str()), 0);
  take({ws_ / "d"});
  fs::remove_all(ws_ / "d");
  restore();
  EXPECT_EQ(read_file(ws_ / "d" / "b"), "same\n");
  EXPECT_EQ(info(ws_ / "d" / "a").st_ino, info(ws_ / "d" / "b").st_ino);
}

// A new file's restore removes it and the folders the attempt made to hold it,
// up to the first one that was there before.
TEST_F(SnapshotTest, FoldersMadeForANewFileGoWithIt) {
  take({ws_ / "newdir" / "a" / "x.txt"});
  fs::create_directories(ws_ / "newdir" / "a");
  write_file(ws_ / "newdir" / "a" / "x.txt", "new\n");
  restore();
  EXPECT_FALSE(fs::exists(ws_ / "newdir"));
  EXPECT_TRUE(fs::is_directory(ws_));
}

// `writes: [.]`: the workspace folder itself is kept (a shell sitting in it
// stays in it); its entries are brought back in line.
TEST_F(SnapshotTest, TheWorkspaceItselfIsSyncedNotRemade) {
  write_file(ws_ / "keep", "keep\n");
  fs::create_symlink("keep", ws_ / "link");
  ASSERT_EQ(::mkfifo((ws_ / "fifo").c_str(), 0600), 0);
  const ino_t before = info(ws_).st_ino;
  take({ws_});
  write_file(ws_ / "keep", "changed\n");
  write_file(ws_ / "extra", "x\n");
  fs::remove(ws_ / "link");
  fs::remove(ws_ / "fifo");
  write_file(ws_ / "link", "a file now\n");
  restore();
  EXPECT_EQ(info(ws_).st_ino, before);
  EXPECT_EQ(read_file(ws_ / "keep"), "keep\n");
  EXPECT_FALSE(fs::exists(ws_ / "extra"));
  ASSERT_TRUE(fs::is_symlink(ws_ / "link"));
  EXPECT_EQ(fs::read_symlink(ws_ / "link"), "keep");
  EXPECT_TRUE(S_ISFIFO(info(ws_ / "fifo").st_mode));
}

// A file name is bytes: names (and symlink targets) that are not UTF-8 come
// back exactly, and two that differ only in such bytes stay two files.
TEST_F(SnapshotTest, NamesThatAreNotUtf8ComeBackExactly) {
  fs::create_directories(ws_ / "d");
  const std::string first = "a\xe9", second = "a\xe8";
  write_file(ws_ / "d" / first, "FIRST\n");
  write_file(ws_ / "d" / second, "SECOND\n");
  fs::create_symlink(first, ws_ / "d" / "link");
  take({ws_ / "d"});
  fs::remove_all(ws_ / "d");
  fs::create_directories(ws_ / "d");
  write_file(ws_ / "d" / "other", "x\n");
  restore();
  EXPECT_EQ(read_file(ws_ / "d" / first), "FIRST\n");
  EXPECT_EQ(read_file(ws_ / "d" / second), "SECOND\n");
  EXPECT_EQ(fs::read_symlink(ws_ / "d" / "link").string(), first);
  EXPECT_FALSE(fs::exists(ws_ / "d" / "other"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(ws_ / "d")) ++entries;
  EXPECT_EQ(entries, 3);
}

// A read-only file the attempt changed (it made it writable for a moment) is
// still put back in place, so its other hard link sees the old content too.
TEST_F(SnapshotTest, AReadOnlyFileIsRestoredInPlace) {
  write_file(ws_ / "h1", "original\n");
  ASSERT_EQ(::link((ws_ / "h1").c_str(), (ws_ / "h2").c_str()), 0);
  ASSERT_EQ(::chmod((ws_ / "h1").c_str(), 0444), 0);
  take({ws_ / "h1"});
  ASSERT_EQ(::chmod((ws_ / "h1").c_str(), 0644), 0);
  write_file(ws_ / "h1", "changed\n");
  ASSERT_EQ(::chmod((ws_ / "h1").c_str(), 0444), 0);
  restore();
  EXPECT_EQ(read_file(ws_ / "h2"), "original\n");
  EXPECT_EQ(info(ws_ / "h1").st_ino, info(ws_ / "h2").st_ino);
  EXPECT_EQ(info(ws_ / "h1").st_mode & 07777, 0444u);
}

// A sparse file is copied as one: its snapshot and its restored self take the
// blocks of its data, not of its size.
TEST_F(SnapshotTest, ASparseFileStaysSparse) {
  const fs::path big = ws_ / "sparse.img";
  {
    std::ofstream out(big, std::ios::binary);
    out << "head";
  }
  fs::resize_file(big, off_t{1} << 30);  // 1 GiB, almost all hole
  take({big});
  {
    std::fstream f(big, std::ios::in | std::ios::out | std::ios::binary);
    f << "HEAD";
  }
  restore();
  const struct stat st = info(big);
  EXPECT_EQ(st.st_size, off_t{1} << 30);
  EXPECT_LT(st.st_blocks * 512, 16 << 20) << "the restored file was filled in";
  std::ifstream in(big, std::ios::binary);
  char head[5] = {};
  in.read(head, 4);
  EXPECT_STREQ(head, "head");
  std::uintmax_t snapshot_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(snap()))
    if (e.is_regular_file()) snapshot_bytes += static_cast<std::uintmax_t>(info(e.path()).st_blocks) * 512;
  EXPECT_LT(snapshot_bytes, 16u << 20) << "the snapshot was filled in";
}

// What cannot be put back (a socket, which cannot be made again) is reported,
// and everything else is still restored.
TEST_F(SnapshotTest, ARestoreGoesOnPastWhatItCannotPutBackAndSaysWhat) {
  fs::create_directories(ws_ / "d");
  write_file(ws_ / "d" / "f", "one\n");
  const fs::path sock = ws_ / "d" / "s.sock";
  orch::testing::make_socket_file(sock);
  write_file(ws_ / "g", "two\n");
  take({ws_ / "d", ws_ / "g"});
  fs::remove(sock);
  write_file(ws_ / "d" / "f", "changed\n");
  write_file(ws_ / "g", "changed\n");
  auto r = restore_snapshot(snap());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("s.sock: a socket or device cannot be made again"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(read_file(ws_ / "d" / "f"), "one\n");
  EXPECT_EQ(read_file(ws_ / "g"), "two\n");
}

// A snapshot whose manifest was never written (orch died while taking it) is
// refused, and nothing is touched.
TEST_F(SnapshotTest, AnIncompleteSnapshotIsRefusedAndChangesNothing) {
  write_file(ws_ / "f", "now\n");
  fs::create_directories(snap() / "files");
  auto r = restore_snapshot(snap());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no complete snapshot"), std::string::npos);
  EXPECT_EQ(read_file(ws_ / "f"), "now\n");
}

// What differs from the snapshot is listed, and nothing is changed: a file
// edited (even to the same size), one gone, one made where nothing was, one
// replaced by a folder; a file touched but not changed is not listed.
TEST_F(SnapshotTest, ChangesSinceTheSnapshotAreListedWithoutChangingAnything) {
  write_file(ws_ / "same.txt", "same\n");
  write_file(ws_ / "edited.txt", "abcd\n");
  write_file(ws_ / "gone.txt", "gone\n");
  write_file(ws_ / "d" / "inner.txt", "inner\n");
  write_file(ws_ / "typed", "file\n");
  take({ws_ / "same.txt", ws_ / "edited.txt", ws_ / "gone.txt", ws_ / "new.txt", ws_ / "d", ws_ / "typed"});
  auto none = snapshot_changes(snap());
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());

  set_mtime(ws_ / "same.txt", 1000);
  write_file(ws_ / "edited.txt", "abXd\n");
  set_mtime(ws_ / "edited.txt", 2000);
  fs::remove(ws_ / "gone.txt");
  write_file(ws_ / "new.txt", "new\n");
  write_file(ws_ / "d" / "inner.txt", "INNER\n");
  fs::remove(ws_ / "typed");
  fs::create_directories(ws_ / "typed");
  auto changes = snapshot_changes(snap());
  ASSERT_TRUE(changes) << changes.error().message;
  std::map<std::string, SnapshotChange> by_path;
  for (const auto& c : *changes) by_path[c.path.lexically_relative(ws_).string()] = c;
  EXPECT_EQ(by_path.size(), 5u);
  EXPECT_FALSE(by_path.contains("same.txt"));
  ASSERT_TRUE(by_path.contains("edited.txt"));
  EXPECT_TRUE(by_path["edited.txt"].exists);
  EXPECT_EQ(by_path["edited.txt"].mtime_ms, 2000000);
  ASSERT_TRUE(by_path.contains("gone.txt"));
  EXPECT_FALSE(by_path["gone.txt"].exists);
  EXPECT_TRUE(by_path.contains("new.txt"));
  EXPECT_TRUE(by_path.contains("d/inner.txt"));
  EXPECT_TRUE(by_path.contains("typed"));
  EXPECT_EQ(read_file(ws_ / "edited.txt"), "abXd\n") << "nothing was changed";

  // A restore may leave some of them as they are now.
  auto r = restore_snapshot(snap(), {ws_ / "edited.txt"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(read_file(ws_ / "edited.txt"), "abXd\n");
  EXPECT_EQ(read_file(ws_ / "gone.txt"), "gone\n");
  EXPECT_EQ(read_file(ws_ / "d" / "inner.txt"), "inner\n");
  EXPECT_FALSE(fs::exists(ws_ / "new.txt"));
  EXPECT_TRUE(fs::is_regular_file(ws_ / "typed"));

  EXPECT_FALSE(snapshot_changes(dir_ / "no-snapshot"));
}

}  // namespace
}  // namespace orch
