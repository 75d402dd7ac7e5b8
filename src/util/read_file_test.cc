#include "util/read_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

TEST(ReadFile, ReadsAFileWhole) {
  testing::TempDir dir;
  testing::write_file(dir / "f", std::string(200000, 'x') + "end");
  auto text = read_file_text(dir / "f");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(text->size(), 200003u);
  EXPECT_TRUE(text->ends_with("end"));
}

TEST(ReadFile, RefusesWhatIsNotAFileOfAtMostTheLimit) {
  testing::TempDir dir;
  auto missing = read_file_text(dir / "nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::NotFound);
  auto folder = read_file_text(dir.path());
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.error().message.find("is a folder, not a file"), std::string::npos);
  // A stream that never ends stops at the limit.
  auto endless = read_file_text("/dev/zero", 1 << 20);
  ASSERT_FALSE(endless);
  EXPECT_NE(endless.error().message.find("/dev/zero: larger than 1048576 bytes"), std::string::npos)
      << endless.error().message;
}

// A named pipe is never waited on to be opened: with no writer it is said to
// have given nothing, at once; with a writer, what it sends is read to its end.
TEST(ReadFile, ANamedPipeIsReadFromItsWriterAndNeverWaitedOn) {
  testing::TempDir dir;
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto began = std::chrono::steady_clock::now();
  auto nobody = read_file_text(fifo);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
  ASSERT_FALSE(nobody);
  EXPECT_NE(nobody.error().message.find("is a named pipe that gave nothing"), std::string::npos)
      << nobody.error().message;

  // A reader of its own keeps the writer's open from waiting; the writer is there
  // before read_file_text opens the pipe, and sends in two pieces, then closes.
  const int keep = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(keep, 0);
  std::promise<void> opened;
  std::thread writer([&] {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    opened.set_value();
    if (w < 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)!::write(w, "first\n", 6);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)!::write(w, "second\n", 7);
    ::close(w);
  });
  opened.get_future().wait();
  auto text = read_file_text(fifo);
  writer.join();
  ::close(keep);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "first\nsecond\n");
}

}  // namespace
}  // namespace orch
