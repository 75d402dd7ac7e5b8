#include "util/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

TEST(AtomicFile, WritesReplacesAndLeavesNoTemporaryFile) {
  testing::TempDir dir;
  const fs::path target = dir / "deep" / "trace.json";
  ASSERT_TRUE(write_file_atomically(target, "first"));
  EXPECT_EQ(testing::read_file(target), "first");
  ASSERT_TRUE(write_file_atomically(target, std::string(100000, 'x')));
  EXPECT_EQ(testing::read_file(target).size(), 100000u);
  ASSERT_TRUE(write_file_atomically(target, "third", Durability::RenameOnly));
  EXPECT_EQ(testing::read_file(target), "third");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "deep")) ++entries;
  EXPECT_EQ(entries, 1) << "the temporary file was left behind";
}

TEST(AtomicFile, CreateGivesTheNameOnceAndNeverReplaces) {
  testing::TempDir dir;
  const fs::path target = dir / "traces" / "t.json";
  auto first = create_file_atomically(target, "first", Durability::RenameOnly);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(*first);
  auto second = create_file_atomically(target, "second");
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(*second) << "the name was taken";
  EXPECT_EQ(testing::read_file(target), "first");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "traces")) ++entries;
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";
}

// Failures that hold for root too: a folder that is a file, a target that is a
// folder. Either way the error names the path and nothing is left behind.
TEST(AtomicFile, AFailureNamesThePathAndLeavesNothingBehind) {
  testing::TempDir dir;
  testing::write_file(dir / "plain", "a file, not a folder");
  auto under_file = write_file_atomically(dir / "plain" / "a.json", "x");
  ASSERT_FALSE(under_file);
  EXPECT_NE(under_file.error().message.find("plain"), std::string::npos) << under_file.error().message;

  fs::create_directories(dir / "busy" / "inside");
  auto over_folder = write_file_atomically(dir / "busy", "x");
  ASSERT_FALSE(over_folder);
  EXPECT_EQ(over_folder.error().code, ErrorCode::Io);
  EXPECT_NE(over_folder.error().message.find((dir / "busy").string()), std::string::npos);
  EXPECT_TRUE(fs::is_directory(dir / "busy" / "inside"));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2) << "a temporary file was left behind";
}

}  // namespace
}  // namespace orch
