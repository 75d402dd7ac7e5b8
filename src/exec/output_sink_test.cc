#include "exec/output_sink.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;

TEST(OutputSink, SecretsAreMaskedInTheFileAndTheKeptTextEvenWhenSplit) {
  TempDir dir;
  auto secrets = SecretMasker::from_assignments({"API_KEY=sk-abc123xyz"});
  OutputSink sink(dir / "out", 1000, true, &secrets);
  sink.append("key: sk-ab");
  sink.append("c123");
  sink.append("xyz done\n");
  sink.finish();
  EXPECT_EQ(read_file(dir / "out"), "key: *** done\n");
  EXPECT_EQ(sink.kept(), "key: *** done\n");
  EXPECT_EQ(sink.total_bytes(), 23) << "the cap and the count are about the bytes the process wrote";
}

TEST(OutputSink, ASecretCutByTheCapDoesNotLeakItsStart) {
  TempDir dir;
  auto secrets = SecretMasker::from_assignments({"API_KEY=sk-abc123xyz"});
  OutputSink sink(dir / "out", 10, false, &secrets);
  sink.append("key: sk-abc123xyz and more");
  sink.finish();
  std::string file = read_file(dir / "out");
  EXPECT_EQ(file.rfind("key: ***", 0), 0u) << file;
  EXPECT_EQ(file.find("sk-a"), std::string::npos) << file;
  EXPECT_NE(file.find("output truncated at 10 bytes"), std::string::npos) << file;
}

TEST(OutputSink, NoFileUntilTheFirstByte) {
  TempDir dir;
  fs::path path = dir / "a/b/out";
  OutputSink sink(path, 100, true);
  sink.append("");
  sink.finish();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(dir / "a"));
  EXPECT_EQ(sink.total_bytes(), 0);
  EXPECT_FALSE(sink.truncated());
  EXPECT_EQ(sink.kept(), "");
}

TEST(OutputSink, AStreamWithinTheHoldMakesNoFile) {
  TempDir dir;
  fs::path path = dir / "a/out";
  auto secrets = SecretMasker::from_assignments({"API_KEY=sk-abc123xyz"});
  OutputSink sink(path, 1000, false, &secrets, 64);
  sink.append("key: sk-ab");
  sink.append("c123xyz\n");
  EXPECT_FALSE(sink.held()) << "not before finish()";
  sink.finish();
  EXPECT_TRUE(sink.held());
  EXPECT_EQ(sink.held_text(), "key: ***\n");
  EXPECT_EQ(sink.total_bytes(), 18);
  EXPECT_FALSE(fs::exists(dir / "a")) << "neither the file nor its folder";
}

TEST(OutputSink, AStreamThatOutgrowsTheHoldGoesWholeToItsFile) {
  TempDir dir;
  OutputSink sink(dir / "out", 1000, true, nullptr, 8);
  sink.append("12345");
  EXPECT_FALSE(fs::exists(dir / "out"));
  sink.append("6789");  // 9 bytes: more than the hold
  EXPECT_TRUE(fs::exists(dir / "out"));
  sink.append("abc");
  sink.finish();
  EXPECT_FALSE(sink.held());
  EXPECT_EQ(sink.held_text(), "");
  EXPECT_EQ(read_file(dir / "out"), "123456789abc");
  EXPECT_EQ(sink.kept(), "123456789abc");
}

TEST(OutputSink, AHeldStreamOverTheCapHoldsItsMarker) {
  TempDir dir;
  OutputSink sink(dir / "out", 4, false, nullptr, 1024);
  sink.append("abcdefgh");
  sink.finish();
  ASSERT_TRUE(sink.held());
  EXPECT_EQ(sink.held_text(), "abcd" + OutputSink::truncation_marker(4, 4));
  EXPECT_FALSE(fs::exists(dir / "out"));
  // The same with a hold too small for the marker: the file has it all.
  OutputSink small(dir / "small", 4, false, nullptr, 10);
  small.append("abcdefgh");
  small.finish();
  EXPECT_FALSE(small.held());
  EXPECT_EQ(read_file(dir / "small"), "abcd" + OutputSink::truncation_marker(4, 4));
}

TEST(OutputSink, WritesBytesExactlyAndCreatesFolders) {
  TempDir dir;
  fs::path path = dir / "a/b/out";
  std::string bytes("\xff\xfe\0abc\r\n", 8);
  OutputSink sink(path, 100, true);
  sink.append(bytes.substr(0, 3));
  sink.append(bytes.substr(3));
  sink.finish();
  EXPECT_EQ(read_file(path), bytes);
  EXPECT_EQ(sink.kept(), bytes);
  EXPECT_EQ(sink.total_bytes(), 8);
  EXPECT_FALSE(sink.truncated());
  EXPECT_EQ(sink.error(), "");
}

TEST(OutputSink, ExactlyTheCapIsNotTruncated) {
  TempDir dir;
  OutputSink sink(dir / "out", 5, false);
  sink.append("12345");
  sink.finish();
  EXPECT_EQ(read_file(dir / "out"), "12345");
  EXPECT_FALSE(sink.truncated());
  EXPECT_EQ(sink.kept(), "");  // not kept in memory
}

TEST(OutputSink, BeyondTheCapIsCountedDiscardedAndMarked) {
  TempDir dir;
  OutputSink sink(dir / "out", 10, true);
  sink.append("0123456");
  sink.append("789abcdef");
  sink.append("ghijklmnop");
  sink.finish();
  sink.finish();  // idempotent
  std::string expected = "0123456789\n[orch: output truncated at 10 bytes; 16 bytes discarded]\n";
  EXPECT_EQ(read_file(dir / "out"), expected);
  EXPECT_EQ(sink.kept(), expected);
  EXPECT_EQ(sink.total_bytes(), 26);
  EXPECT_TRUE(sink.truncated());
}

TEST(OutputSink, ZeroCapStillSaysWhatWasDiscarded) {
  TempDir dir;
  OutputSink sink(dir / "out", 0, false);
  sink.append("abc");
  sink.finish();
  EXPECT_EQ(read_file(dir / "out"), OutputSink::truncation_marker(0, 3));
  EXPECT_TRUE(sink.truncated());
}

TEST(OutputSink, NoPathKeepsOnlyMemory) {
  OutputSink sink("", 4, true);
  sink.append("abcdef");
  sink.finish();
  EXPECT_EQ(sink.kept(), "abcd" + OutputSink::truncation_marker(4, 2));
  EXPECT_EQ(sink.error(), "");
}

TEST(OutputSink, UnwritablePathIsReportedAndCountingGoesOn) {
  TempDir dir;
  write_file(dir / "file", "x");
  OutputSink sink(dir / "file/out", 100, true);  // the parent is a file
  sink.append("hello");
  sink.append(" world");
  sink.finish();
  EXPECT_NE(sink.error(), "");
  EXPECT_NE(sink.error().find((dir / "file").string()), std::string::npos) << sink.error();
  EXPECT_EQ(sink.total_bytes(), 11);
  EXPECT_EQ(sink.kept(), "hello world");
}

TEST(OutputTail, KeepsTheLastBytesInArrivalOrder) {
  OutputTail tail(8);
  tail.append("abc");
  tail.append("def");
  EXPECT_EQ(tail.text(), "abcdef");
  tail.append("ghijk");
  EXPECT_EQ(tail.text(), "defghijk");
  for (int i = 0; i < 100; ++i) tail.append("x");
  tail.append("END");
  EXPECT_EQ(tail.text(), "xxxxxEND");
  tail.append("0123456789");
  EXPECT_EQ(tail.text(), "23456789");
}

TEST(OutputTail, DefaultIsTwoKiB) {
  OutputTail tail;
  tail.append(std::string(5000, 'a'));
  tail.append("b");
  EXPECT_EQ(tail.text().size(), 2048u);
  EXPECT_EQ(tail.text().back(), 'b');
}

TEST(OutputTail, DoesNotStartInsideAUtf8Character) {
  OutputTail tail(4);
  tail.append("a\xc3\xa9\xc3\xa9");  // "aéé": the last 4 bytes are "éé"
  EXPECT_EQ(tail.text(), "\xc3\xa9\xc3\xa9");
  tail.append("z");  // last 4 bytes: "\xa9\xc3\xa9z" — starts with a continuation byte
  EXPECT_EQ(tail.text(), "\xc3\xa9z");
}

TEST(OutputTail, ShortOutputIsKeptWhole) {
  OutputTail tail(4);
  tail.append("\xa9x");  // not cut: the output really starts this way
  EXPECT_EQ(tail.text(), "\xa9x");
}

}  // namespace
}  // namespace orch
