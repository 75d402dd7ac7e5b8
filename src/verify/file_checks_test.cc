#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "orch/postcondition.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_file;

class FileChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = root_.path() / "ws";
    fs::create_directories(ws_ / "out");
    fs::create_directories(root_.path() / "outside");
    write_file(ws_ / "out" / "report.txt", "all 12 tests PASS\n");
    write_file(root_.path() / "outside" / "secret.txt", "PASS outside");
  }
  CheckResult run(PostKind kind, std::string path, std::string text = "") {
    Postcondition post;
    post.kind = kind;
    post.path = std::move(path);
    post.text = std::move(text);
    CheckContext ctx;
    ctx.workspace = ws_;
    ctx.outcome = &outcome_;
    return evaluate_post(post, ctx);
  }
  TempDir root_;
  fs::path ws_;
  AttemptOutcome outcome_;
};

TEST_F(FileChecks, FileExistsHeld) {
  auto r = run(PostKind::FileExists, "out/report.txt");
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.kind, PostKind::FileExists);
  EXPECT_EQ(r.reason, "file_exists 'out/report.txt': found (18 bytes)");
  auto dir = run(PostKind::FileExists, "out");
  EXPECT_TRUE(dir.held);
  EXPECT_EQ(dir.reason, "file_exists 'out': found (directory)");
}

TEST_F(FileChecks, FileExistsMissing) {
  auto r = run(PostKind::FileExists, "out/missing.txt");
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "file_exists 'out/missing.txt': no such file in the workspace (" +
                          (ws_ / "out" / "missing.txt").string() + ")");
  EXPECT_FALSE(run(PostKind::FileExists, "out/report.txt/below").held);
}

TEST_F(FileChecks, FileExistsEscapingPathNamesIt) {
  auto r = run(PostKind::FileExists, "../outside/secret.txt");
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "file_exists: path '../outside/secret.txt' escapes the workspace " + ws_.string());
  auto abs = run(PostKind::FileExists, "/etc/passwd");
  EXPECT_FALSE(abs.held);
  EXPECT_EQ(abs.reason, "file_exists: path '/etc/passwd' escapes the workspace " + ws_.string());
}

TEST_F(FileChecks, SymlinkMadeAtRunTimeThatEscapesFails) {
  // A step replaced its output with a link to a file outside the workspace.
  fs::create_symlink(root_.path() / "outside" / "secret.txt", ws_ / "out" / "result.txt");
  auto exists = run(PostKind::FileExists, "out/result.txt");
  EXPECT_FALSE(exists.held);
  EXPECT_EQ(exists.reason, "file_exists: path 'out/result.txt' resolves to '" +
                               (root_.path() / "outside" / "secret.txt").string() + "', outside the workspace " +
                               ws_.string());
  auto contains = run(PostKind::FileContains, "out/result.txt", "PASS");
  EXPECT_FALSE(contains.held);
  EXPECT_NE(contains.reason.find("file_contains: path 'out/result.txt' resolves to '"), std::string::npos)
      << contains.reason;
}

TEST_F(FileChecks, SymlinkInsideIsFollowed) {
  fs::create_symlink("report.txt", ws_ / "out" / "latest");
  EXPECT_TRUE(run(PostKind::FileExists, "out/latest").held);
  EXPECT_TRUE(run(PostKind::FileContains, "out/latest", "PASS").held);
}

TEST_F(FileChecks, FileContainsHeldAndFailed) {
  auto r = run(PostKind::FileContains, "out/report.txt", "PASS");
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.kind, PostKind::FileContains);
  EXPECT_EQ(r.reason, "file_contains 'PASS' in 'out/report.txt': found");
  auto f = run(PostKind::FileContains, "out/report.txt", "FAIL");
  EXPECT_FALSE(f.held);
  EXPECT_EQ(f.reason, "file_contains 'FAIL' in 'out/report.txt': not found in the file (18 bytes)");
}

TEST_F(FileChecks, FileContainsMissingFileSaysSo) {
  auto r = run(PostKind::FileContains, "out/none.txt", "PASS");
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "file_contains 'PASS' in 'out/none.txt': no such file in the workspace (" +
                          (ws_ / "out" / "none.txt").string() + ")");
}

TEST_F(FileChecks, FileContainsRefusesDirectoriesAndPipes) {
  auto dir = run(PostKind::FileContains, "out", "PASS");
  EXPECT_FALSE(dir.held);
  EXPECT_NE(dir.reason.find("is a directory, not a regular file"), std::string::npos) << dir.reason;
  ASSERT_EQ(::mkfifo((ws_ / "pipe").c_str(), 0600), 0);
  auto pipe = run(PostKind::FileContains, "pipe", "PASS");  // must not block
  EXPECT_FALSE(pipe.held);
  EXPECT_NE(pipe.reason.find("is a named pipe, not a regular file"), std::string::npos) << pipe.reason;
}

TEST_F(FileChecks, FileContainsEscapingPath) {
  auto r = run(PostKind::FileContains, "../outside/secret.txt", "PASS");
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "file_contains: path '../outside/secret.txt' escapes the workspace " + ws_.string());
}

TEST_F(FileChecks, FileContainsUnreadable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  write_file(ws_ / "locked.txt", "PASS");
  fs::permissions(ws_ / "locked.txt", fs::perms::none);
  auto r = run(PostKind::FileContains, "locked.txt", "PASS");
  EXPECT_FALSE(r.held);
  EXPECT_NE(r.reason.find("cannot open"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("Permission denied"), std::string::npos) << r.reason;
}

TEST_F(FileChecks, FileContainsBigFileAcrossChunkBoundaries) {
  // The needle straddles the 1 MiB read boundary.
  std::string big(1024 * 1024 - 3, 'x');
  big += "NEEDLE";
  big += std::string(3 * 1024 * 1024, 'y');
  write_file(ws_ / "big.log", big);
  EXPECT_TRUE(run(PostKind::FileContains, "big.log", "NEEDLE").held);
  auto miss = run(PostKind::FileContains, "big.log", "NEEDLF");
  EXPECT_FALSE(miss.held);
  EXPECT_EQ(miss.reason, "file_contains 'NEEDLF' in 'big.log': not found in the file (4.0 MiB (4194307 bytes))");
}

TEST_F(FileChecks, RelativeWorkspaceAndAbsolutePathInside) {
  EXPECT_TRUE(run(PostKind::FileExists, (ws_ / "out" / "report.txt").string()).held);
}

}  // namespace
}  // namespace orch
