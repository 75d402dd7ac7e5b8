#include "orch/workspace.h"

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_file;

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = root_ / "ws";
    fs::create_directories(ws_ / "sub");
    fs::create_directories(root_ / "outside");
    write_file(ws_ / "sub" / "f.txt", "x");
    write_file(root_ / "outside" / "secret", "s");
  }
  TempDir root_holder_;
  fs::path root_ = root_holder_.path();
  fs::path ws_;
};

TEST_F(WorkspaceTest, RelativePathsInside) {
  auto p = resolve_in_workspace(ws_, "sub/f.txt");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(*p, ws_ / "sub" / "f.txt");
  EXPECT_EQ(resolve_in_workspace(ws_, "new/deeper/file").value(), ws_ / "new" / "deeper" / "file");
  EXPECT_EQ(resolve_in_workspace(ws_, ".").value(), ws_);
  EXPECT_EQ(resolve_in_workspace(ws_, "sub/").value(), ws_ / "sub");
  EXPECT_EQ(resolve_in_workspace(ws_, "./sub/./f.txt").value(), ws_ / "sub" / "f.txt");
}

TEST_F(WorkspaceTest, DotDotInsideIsNormalised) {
  EXPECT_EQ(resolve_in_workspace(ws_, "a/../b").value(), ws_ / "b");
  EXPECT_EQ(resolve_in_workspace(ws_, "sub/../sub/f.txt").value(), ws_ / "sub" / "f.txt");
  EXPECT_EQ(resolve_in_workspace(ws_, "sub/..").value(), ws_);
}

TEST_F(WorkspaceTest, DotDotEscapeIsRefused) {
  auto p = resolve_in_workspace(ws_, "../x");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(p.error().message, "path '../x' escapes the workspace " + ws_.string());
  EXPECT_FALSE(resolve_in_workspace(ws_, "sub/../../outside/secret"));
  EXPECT_FALSE(resolve_in_workspace(ws_, ".."));
}

TEST_F(WorkspaceTest, AbsolutePaths) {
  EXPECT_EQ(resolve_in_workspace(ws_, (ws_ / "sub" / "f.txt").string()).value(), ws_ / "sub" / "f.txt");
  EXPECT_EQ(resolve_in_workspace(ws_, ws_.string()).value(), ws_);
  auto out = resolve_in_workspace(ws_, "/etc/passwd");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message, "path '/etc/passwd' escapes the workspace " + ws_.string());
}

TEST_F(WorkspaceTest, SiblingWithSamePrefixIsOutside) {
  fs::create_directories(root_ / "ws2");
  auto p = resolve_in_workspace(ws_, (root_ / "ws2" / "f").string());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("escapes the workspace"), std::string::npos);
  EXPECT_FALSE(resolve_in_workspace(ws_, "../ws2/f"));
}

TEST_F(WorkspaceTest, EmptyPathIsAnError) {
  auto p = resolve_in_workspace(ws_, "");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::InvalidInput);
  auto no_ws = resolve_in_workspace("", "a");
  ASSERT_FALSE(no_ws);
  EXPECT_EQ(no_ws.error().message, "path 'a': no workspace given");
}

TEST_F(WorkspaceTest, SymlinkInsidePointingInsideIsFine) {
  fs::create_directory_symlink("sub", ws_ / "alias");
  EXPECT_EQ(resolve_in_workspace(ws_, "alias/f.txt").value(), ws_ / "sub" / "f.txt");
  fs::create_symlink(ws_ / "sub" / "f.txt", ws_ / "abs-link");
  EXPECT_EQ(resolve_in_workspace(ws_, "abs-link").value(), ws_ / "sub" / "f.txt");
  // A chain of links that stays inside.
  fs::create_symlink("abs-link", ws_ / "chain");
  EXPECT_EQ(resolve_in_workspace(ws_, "chain").value(), ws_ / "sub" / "f.txt");
}

TEST_F(WorkspaceTest, SymlinkPointingOutsideIsRefused) {
  fs::create_directory_symlink(root_ / "outside", ws_ / "link");
  auto p = resolve_in_workspace(ws_, "link/secret");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(p.error().message, "path 'link/secret' resolves to '" + (root_ / "outside" / "secret").string() +
                                   "', outside the workspace " + ws_.string());
  // Not yet existing files below the link are outside too.
  EXPECT_FALSE(resolve_in_workspace(ws_, "link/new/file"));
  // ".." after a symlink is taken from where the link leads, like the kernel does.
  fs::create_directory_symlink(root_ / "outside", ws_ / "sub" / "up");
  // (Lexically "sub/up/../x" would be ws/sub/x.)
  auto up = resolve_in_workspace(ws_, "sub/up/../x");
  ASSERT_FALSE(up);
  EXPECT_NE(up.error().message.find("resolves to '" + (root_ / "x").string() + "'"), std::string::npos)
      << up.error().message;
}

TEST_F(WorkspaceTest, DanglingSymlinkIsFollowed) {
  fs::create_symlink(root_ / "outside" / "not-yet", ws_ / "dangling-out");
  auto out = resolve_in_workspace(ws_, "dangling-out");
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("resolves to '" + (root_ / "outside" / "not-yet").string()), std::string::npos)
      << out.error().message;
  fs::create_symlink("sub/not-yet", ws_ / "dangling-in");
  EXPECT_EQ(resolve_in_workspace(ws_, "dangling-in").value(), ws_ / "sub" / "not-yet");
}

TEST_F(WorkspaceTest, SymlinkLoopIsAnError) {
  fs::create_symlink("loop-b", ws_ / "loop-a");
  fs::create_symlink("loop-a", ws_ / "loop-b");
  auto p = resolve_in_workspace(ws_, "loop-a/x");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("too many levels of symbolic links"), std::string::npos);
}

TEST_F(WorkspaceTest, WorkspaceGivenThroughSymlinkOrRelative) {
  fs::create_directory_symlink(ws_, root_ / "ws-link");
  // The workspace is canonicalised; paths through either name resolve inside it.
  EXPECT_EQ(resolve_in_workspace(root_ / "ws-link", "sub/f.txt").value(), ws_ / "sub" / "f.txt");
  EXPECT_EQ(resolve_in_workspace(ws_, (root_ / "ws-link" / "sub" / "f.txt").string()).value(),
            ws_ / "sub" / "f.txt");
  auto p = resolve_in_workspace(root_ / "ws-link", "../x");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message, "path '../x' escapes the workspace " + ws_.string());
  fs::path saved = fs::current_path();
  fs::current_path(root_);
  auto rel = resolve_in_workspace("ws", "sub/f.txt");
  fs::current_path(saved);
  EXPECT_EQ(rel.value(), ws_ / "sub" / "f.txt");
}

TEST_F(WorkspaceTest, WorkspaceNeedNotExistYet) {
  EXPECT_EQ(resolve_in_workspace(root_ / "later", "a/b").value(), root_ / "later" / "a" / "b");
  EXPECT_FALSE(resolve_in_workspace(root_ / "later", "../ws"));
}

}  // namespace
}  // namespace orch
