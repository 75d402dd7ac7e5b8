// The scope snapshot of `orch cycle`: what a cycle's jobs wrote, told from the
// workspace's files, and put back. Real files in a temporary folder.
#include "flows/cycle_scope.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/attempt_render.h"
#include "flows/cycle_scope_internal.h"
#include "testing/testing.h"
#include "util/fd.h"

namespace orch::flows {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;

// The changes as "KIND PATH" lines, in their order.
std::vector<std::string> listed(const std::vector<ScopeChange>& changes) {
  std::vector<std::string> out;
  for (const ScopeChange& c : changes)
    out.push_back(std::string(scope_change_kind_name(c.kind)) + " " + c.path);
  return out;
}

std::vector<std::string> changes_of(const fs::path& ws, const fs::path& snap) {
  auto changes = scope_changes(ws, snap);
  EXPECT_TRUE(changes) << changes.error().message;
  return changes ? listed(*changes) : std::vector<std::string>{"(error)"};
}

mode_t mode_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Every file below `folder` with its content or symlink target, for checking
// that nothing was written there.
std::vector<std::string> tree_of(const fs::path& folder) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(folder); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = it->path().lexically_relative(folder).string();
    if (it->is_symlink())
      out.push_back(rel + " -> " + fs::read_symlink(it->path()).string());
    else if (it->is_regular_file())
      out.push_back(rel + ": " + read_file(it->path()));
    else
      out.push_back(rel + "/");
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Scope {
  TempDir dir;
  fs::path ws = dir / "ws";
  fs::path snap = dir / "snap";
  Scope() { fs::create_directories(ws); }
  void take(const std::vector<std::string>& ignore = {}) {
    auto taken = take_scope_snapshot(ws, ignore, snap);
    ASSERT_TRUE(taken) << taken.error().message;
  }
  std::vector<std::string> changes() { return changes_of(ws, snap); }
  void revert_all() {
    auto changes = scope_changes(ws, snap);
    ASSERT_TRUE(changes) << changes.error().message;
    auto reverted = revert_scope_changes(ws, snap, *changes);
    ASSERT_TRUE(reverted) << reverted.error().message;
  }
};

TEST(CycleScope, AnUnchangedWorkspaceHasNoChangesEvenWhenAFileIsRewrittenAsItWas) {
  Scope s;
  write_file(s.ws / "a.txt", "a");
  write_file(s.ws / "src/b.c", "int b;\n");
  fs::create_directories(s.ws / "empty");
  fs::create_symlink("a.txt", s.ws / "link");
  write_file(s.ws / "ro.txt", "read only");
  fs::permissions(s.ws / "ro.txt", fs::perms::owner_read);
  s.take();
  EXPECT_TRUE(scope_snapshot_exists(s.snap));
  EXPECT_FALSE(fs::exists(s.dir / "snap.tmp"));
  EXPECT_EQ(s.changes(), std::vector<std::string>{});
  write_file(s.ws / "src/b.c", "int b;\n");  // same bytes, a new mtime: the content decides
  EXPECT_EQ(s.changes(), std::vector<std::string>{});
}

TEST(CycleScope, EveryKindOfChangeIsListedByPathAndRevertedByteForByte) {
  Scope s;
  const std::string binary("\0\xff\x01 bytes\n\0", 11);
  write_file(s.ws / "keep.txt", "keep");
  write_file(s.ws / "mod.txt", "old");
  write_file(s.ws / "same.txt", "abc");
  write_file(s.ws / "bin.dat", binary);
  write_file(s.ws / "gone.txt", "gone");
  write_file(s.ws / "sub/gone2.txt", "gone too");
  write_file(s.ws / "mode.sh", "#!/bin/sh\n");
  fs::permissions(s.ws / "mode.sh", static_cast<fs::perms>(0644));
  write_file(s.ws / "replaced.txt", "a file, then a symlink");
  fs::create_symlink("keep.txt", s.ws / "link");
  const std::vector<std::string> before = tree_of(s.ws);
  s.take();

  write_file(s.ws / "mod.txt", "new and longer");
  write_file(s.ws / "same.txt", "abd");  // same size, other content
  write_file(s.ws / "bin.dat", "text");
  write_file(s.ws / "new.txt", "new");
  write_file(s.ws / "deep/er/new.txt", "in new folders");
  fs::remove(s.ws / "gone.txt");
  fs::remove(s.ws / "sub/gone2.txt");
  fs::permissions(s.ws / "mode.sh", static_cast<fs::perms>(0755));
  fs::create_symlink("/etc/passwd", s.ws / "newlink");
  fs::remove(s.ws / "link");
  fs::create_symlink("mod.txt", s.ws / "link");
  fs::remove(s.ws / "replaced.txt");
  fs::create_symlink("keep.txt", s.ws / "replaced.txt");
  EXPECT_EQ(s.changes(), (std::vector<std::string>{
                             "modified bin.dat",
                             "created deep/er/new.txt",
                             "removed gone.txt",
                             "modified link",
                             "modified mod.txt",
                             "modified mode.sh",
                             "created new.txt",
                             "created newlink",
                             "modified replaced.txt",
                             "modified same.txt",
                             "removed sub/gone2.txt",
                         }));

  s.revert_all();
  EXPECT_EQ(tree_of(s.ws), before) << "every file back byte for byte; the new folders gone";
  EXPECT_EQ(read_file(s.ws / "bin.dat"), binary);
  EXPECT_EQ(mode_of(s.ws / "mode.sh"), 0644u);
  EXPECT_FALSE(fs::exists(fs::symlink_status(s.ws / "deep")));
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(s.ws / "sub"))) << "a folder of the snapshot stays";
  EXPECT_EQ(s.changes(), std::vector<std::string>{});
}

// A resume after kill -9 reverts the recorded changes again, some of them
// already put back: that is no error, and changes nothing more.
TEST(CycleScope, RevertingTheSameChangesTwiceIsANoOp) {
  Scope s;
  write_file(s.ws / "mod.txt", "old");
  write_file(s.ws / "gone.txt", "gone");
  s.take();
  write_file(s.ws / "mod.txt", "new");
  write_file(s.ws / "deep/new.txt", "new");
  fs::remove(s.ws / "gone.txt");
  auto changes = scope_changes(s.ws, s.snap);
  ASSERT_TRUE(changes) << changes.error().message;
  ASSERT_EQ(changes->size(), 3u);
  auto first = revert_scope_changes(s.ws, s.snap, *changes);
  ASSERT_TRUE(first) << first.error().message;
  const std::vector<std::string> after = tree_of(s.ws);
  auto second = revert_scope_changes(s.ws, s.snap, *changes);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(tree_of(s.ws), after);
  EXPECT_EQ(s.changes(), std::vector<std::string>{});
}

TEST(CycleScope, ARemovedPathCarriesItsFolderMtimeOrTheNearestLeftAbove) {
  Scope s;
  write_file(s.ws / "sub/x", "x");
  write_file(s.ws / "dir/deeper/y", "y");
  write_file(s.ws / "top", "t");
  s.take();
  fs::remove(s.ws / "sub/x");
  fs::remove_all(s.ws / "dir");
  write_file(s.ws / "top", "changed");
  auto changes = scope_changes(s.ws, s.snap);
  ASSERT_TRUE(changes) << changes.error().message;
  ASSERT_EQ(listed(*changes),
            (std::vector<std::string>{"removed dir/deeper/y", "removed sub/x", "modified top"}));
  auto mtime_ms = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0);
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  };
  EXPECT_EQ((*changes)[0].mtime_ms, mtime_ms(s.ws)) << "dir/ went too: the workspace's";
  EXPECT_EQ((*changes)[1].mtime_ms, mtime_ms(s.ws / "sub"));
  EXPECT_EQ((*changes)[2].mtime_ms, mtime_ms(s.ws / "top"));
  s.revert_all();
  EXPECT_EQ(read_file(s.ws / "dir/deeper/y"), "y") << "its folders made again";
  EXPECT_EQ(s.changes(), std::vector<std::string>{});
}

TEST(CycleScope, IgnoredPathsAreNeitherSavedNorListedNorReverted) {
  Scope s;
  write_file(s.ws / "build/a", "a");
  write_file(s.ws / "src/x.o", "obj");
  write_file(s.ws / "src/x.c", "x");
  s.take({"build/**", "*.o", "docs/", "gen/**/*.tmp"});
  write_file(s.ws / "build/a", "rebuilt");
  write_file(s.ws / "build/new/b", "b");
  write_file(s.ws / "src/x.o", "obj 2");
  write_file(s.ws / "src/deep/y.o", "obj");
  write_file(s.ws / "docs/readme", "doc");
  write_file(s.ws / "lib/docs/n.md", "doc at depth");
  write_file(s.ws / "gen/t.tmp", "directly under gen/");
  write_file(s.ws / "gen/a/b/t.tmp", "deeper");
  write_file(s.ws / ".orch/store.db", "orch's own");
  write_file(s.ws / "lib/.orch/x", "orch's own");
  write_file(s.ws / ".git/HEAD", "ref: refs/heads/main");
  write_file(s.ws / "mod/.git", "gitdir: ../.git/modules/mod");  // a submodule's
  write_file(s.ws / "build.txt", "not under build/");
  write_file(s.ws / "docs.md", "not the docs/ folder");
  write_file(s.ws / "gen/t.c", "not a .tmp");
  EXPECT_EQ(s.changes(),
            (std::vector<std::string>{"created build.txt", "created docs.md", "created gen/t.c"}));
  s.revert_all();
  EXPECT_EQ(s.changes(), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(s.ws / "build.txt"));
  EXPECT_EQ(read_file(s.ws / "build/a"), "rebuilt") << "an ignored file is left as it is";
  EXPECT_EQ(read_file(s.ws / "src/x.o"), "obj 2");
  EXPECT_EQ(read_file(s.ws / "gen/a/b/t.tmp"), "deeper");
  EXPECT_EQ(read_file(s.ws / ".git/HEAD"), "ref: refs/heads/main");
  EXPECT_TRUE(fs::exists(s.ws / "gen/t.tmp")) << "gen/ holds an ignored file: it stays";
  auto refused = revert_scope_changes(s.ws, s.snap, {{".orch/store.db", ScopeChangeKind::Created, 0}});
  ASSERT_FALSE(refused);
  EXPECT_HAS(refused.error().message, "ignored");
  EXPECT_TRUE(fs::exists(s.ws / ".orch/store.db"));
}

TEST(CycleScope, TheIgnorePatternsMatchLikeGitignoreWithDoubleStars) {
  const scope_detail::IgnoreRules rules({"build/**", "*.o", "docs/", "a/**/z", "/top.txt", "src/*.gen"},
                                        {"snap"});
  EXPECT_TRUE(rules.ignored("build", true));
  EXPECT_FALSE(rules.ignored("build", false)) << "build/** is a folder";
  EXPECT_FALSE(rules.ignored("x/build", true)) << "build/** is tied to the top";
  EXPECT_TRUE(rules.ignored("x.o", false));
  EXPECT_TRUE(rules.ignored("p/q/x.o", false));
  EXPECT_TRUE(rules.ignored("p/docs", true));
  EXPECT_FALSE(rules.ignored("p/docs", false));
  EXPECT_TRUE(rules.ignored("a/z", false)) << "** matches no folder too";
  EXPECT_TRUE(rules.ignored("a/b/c/z", false));
  EXPECT_FALSE(rules.ignored("b/a/z", false));
  EXPECT_TRUE(rules.ignored("top.txt", false));
  EXPECT_FALSE(rules.ignored("x/top.txt", false));
  EXPECT_TRUE(rules.ignored("src/a.gen", false));
  EXPECT_FALSE(rules.ignored("src/x/a.gen", false)) << "* never matches a /";
  EXPECT_TRUE(rules.ignored("snap", true));
  EXPECT_TRUE(rules.ignored(".orch", true));
  EXPECT_TRUE(rules.ignored("x/.git", false));
  EXPECT_FALSE(rules.ignored("src/main.c", false));
}

TEST(CycleScope, ASnapshotInsideTheWorkspaceIsNotPartOfIt) {
  Scope s;
  write_file(s.ws / "a", "a");
  const fs::path inside = s.ws / "snap";
  ASSERT_TRUE(take_scope_snapshot(s.ws, {}, inside));
  EXPECT_TRUE(scope_snapshot_exists(inside));
  EXPECT_EQ(changes_of(s.ws, inside), std::vector<std::string>{});
  write_file(s.ws / "b", "b");
  EXPECT_EQ(changes_of(s.ws, inside), std::vector<std::string>{"created b"});
  auto again = take_scope_snapshot(s.ws, {}, inside);
  ASSERT_FALSE(again) << "a snapshot folder that exists is never overwritten";
  EXPECT_EQ(again.error().code, ErrorCode::InvalidInput);
}

TEST(CycleScope, AHalfWrittenSnapshotIsNoSnapshotAndANewOneReplacesIt) {
  Scope s;
  write_file(s.ws / "a", "a");
  fs::create_directories(s.dir / "snap.tmp/files");  // a take killed before its rename
  write_file(s.dir / "snap.tmp/files/0", "a");
  EXPECT_FALSE(scope_snapshot_exists(s.snap));
  auto changes = scope_changes(s.ws, s.snap);
  ASSERT_FALSE(changes);
  EXPECT_EQ(changes.error().code, ErrorCode::NotFound);
  s.take();
  EXPECT_TRUE(scope_snapshot_exists(s.snap));
  EXPECT_FALSE(fs::exists(s.dir / "snap.tmp"));

  write_file(s.dir / "old/manifest.json", R"({"version": 99, "ignore": [], "folders": [], "entries": []})");
  EXPECT_FALSE(scope_snapshot_exists(s.dir / "old")) << "another version";
  write_file(s.dir / "bad/manifest.json", "{\"version\": 1, ");
  EXPECT_FALSE(scope_snapshot_exists(s.dir / "bad"));
}

TEST(CycleScope, AFolderReplacedWithASymlinkSendsNoWriteOutsideTheWorkspace) {
  for (const bool only_the_removed : {false, true}) {
    Scope s;
    write_file(s.ws / "sub/a.txt", "a");
    write_file(s.ws / "sub/deeper/b.txt", "b");
    const fs::path outside = s.dir / "outside";
    write_file(outside / "keep", "outside");
    s.take();
    fs::remove_all(s.ws / "sub");
    fs::create_directory_symlink(outside, s.ws / "sub");
    auto changes = scope_changes(s.ws, s.snap);
    ASSERT_TRUE(changes) << changes.error().message;
    EXPECT_EQ(listed(*changes),
              (std::vector<std::string>{"created sub", "removed sub/a.txt", "removed sub/deeper/b.txt"}));
    if (only_the_removed) changes->erase(changes->begin());  // the symlink is a job's own, say
    auto reverted = revert_scope_changes(s.ws, s.snap, *changes);
    ASSERT_TRUE(reverted) << reverted.error().message;
    EXPECT_EQ(tree_of(outside), std::vector<std::string>{"keep: outside"}) << only_the_removed;
    EXPECT_TRUE(fs::is_directory(fs::symlink_status(s.ws / "sub"))) << "a real folder again";
    EXPECT_EQ(read_file(s.ws / "sub/deeper/b.txt"), "b");
    EXPECT_EQ(s.changes(), std::vector<std::string>{});
  }
}

TEST(CycleScope, AFileReplacedWithASymlinkToOutsideIsPutBackWithoutWritingThrough) {
  Scope s;
  write_file(s.ws / "f.txt", "mine");
  const fs::path outside = s.dir / "outside.txt";
  write_file(outside, "theirs");
  s.take();
  fs::remove(s.ws / "f.txt");
  fs::create_symlink(outside, s.ws / "f.txt");
  EXPECT_EQ(s.changes(), std::vector<std::string>{"modified f.txt"});
  s.revert_all();
  EXPECT_EQ(read_file(outside), "theirs");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(s.ws / "f.txt")));
  EXPECT_EQ(read_file(s.ws / "f.txt"), "mine");
}

TEST(CycleScope, OnlyTheChangesGivenAreRevertedAndAFolderStillInUseStays) {
  Scope s;
  write_file(s.ws / "a", "a");
  s.take();
  write_file(s.ws / "new/own.txt", "a job's own file");
  write_file(s.ws / "new/stray.txt", "a stray write");
  write_file(s.ws / "a", "changed by its job");
  auto reverted = revert_scope_changes(s.ws, s.snap, {{"new/stray.txt", ScopeChangeKind::Created, 0}});
  ASSERT_TRUE(reverted) << reverted.error().message;
  EXPECT_EQ(s.changes(), (std::vector<std::string>{"modified a", "created new/own.txt"}));
}

TEST(CycleScope, AReadOnlyFileIsPutBackWithItsMode) {
  Scope s;
  write_file(s.ws / "ro.txt", "read only");
  fs::permissions(s.ws / "ro.txt", static_cast<fs::perms>(0444));
  s.take();
  fs::permissions(s.ws / "ro.txt", static_cast<fs::perms>(0644));
  write_file(s.ws / "ro.txt", "written anyway");
  EXPECT_EQ(s.changes(), std::vector<std::string>{"modified ro.txt"});
  s.revert_all();
  EXPECT_EQ(read_file(s.ws / "ro.txt"), "read only");
  EXPECT_EQ(mode_of(s.ws / "ro.txt"), 0444u);
}

TEST(CycleScope, AFifoIsComparedByTypeAndModeAndACreatedOneRemoved) {
  Scope s;
  ASSERT_EQ(::mkfifo((s.ws / "old.fifo").c_str(), 0600), 0);
  s.take();
  ASSERT_EQ(::mkfifo((s.ws / "new.fifo").c_str(), 0600), 0);
  ASSERT_EQ(::chmod((s.ws / "old.fifo").c_str(), 0640), 0);
  EXPECT_EQ(s.changes(), (std::vector<std::string>{"created new.fifo", "modified old.fifo"}));
  s.revert_all();
  EXPECT_FALSE(fs::exists(fs::symlink_status(s.ws / "new.fifo")));
  EXPECT_EQ(mode_of(s.ws / "old.fifo"), 0600u);
  fs::remove(s.ws / "old.fifo");
  EXPECT_EQ(s.changes(), std::vector<std::string>{"removed old.fifo"});
  auto reverted = revert_scope_changes(s.ws, s.snap, *scope_changes(s.ws, s.snap));
  ASSERT_FALSE(reverted) << "a FIFO cannot be made again";
  EXPECT_HAS(reverted.error().message, "old.fifo");
}

TEST(CycleScope, TheContentHashIsEnginesFingerprintOfTheContent) {
  TempDir d;
  std::string content(200000, 'x');
  content += "tail";
  write_file(d / "f", content);
  Fd fd(::open((d / "f").c_str(), O_RDONLY));
  std::int64_t size = 0;
  auto hash = scope_detail::hash_content(fd.get(), -1, d / "f", size);
  ASSERT_TRUE(hash) << hash.error().message;
  EXPECT_EQ(*hash, fingerprint_of(content));
  EXPECT_EQ(size, static_cast<std::int64_t>(content.size()));
}

TEST(CycleScope, AChangeIsBlamedOnTheJobsRunningWhenItHappenedOrOnAllOfThem) {
  const std::vector<JobWindow> windows = {{"a", 100, 200}, {"b", 150, 300}, {"c", 450, 500}, {"a", 600, 700}};
  auto at = [&](std::int64_t ms) { return jobs_for_change({"x", ScopeChangeKind::Modified, ms}, windows); };
  EXPECT_EQ(at(160), (std::vector<std::string>{"a", "b"})) << "overlapping windows";
  EXPECT_EQ(at(260), std::vector<std::string>{"b"});
  EXPECT_EQ(at(450), std::vector<std::string>{"c"}) << "a disjoint window";
  EXPECT_EQ(at(650), std::vector<std::string>{"a"});
  EXPECT_EQ(at(349), std::vector<std::string>{"b"}) << "within the slack after b";
  EXPECT_EQ(at(351), (std::vector<std::string>{"a", "b", "c"})) << "in no window: every job, once, in order";
  EXPECT_EQ(at(50), (std::vector<std::string>{"a"})) << "within the slack before a";
  EXPECT_EQ(jobs_for_change({"x", ScopeChangeKind::Removed, 351}, windows, 0),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(jobs_for_change({"x", ScopeChangeKind::Created, 5}, {}), std::vector<std::string>{});
}

}  // namespace
}  // namespace orch::flows
