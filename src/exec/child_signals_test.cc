#include "exec/child_signals.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace orch {
namespace {

constexpr std::uint64_t bit(int sig) {
  return std::uint64_t{1} << (sig - 1);
}

void on_signal(int /*sig*/) {}

// The text of /proc/self/status, read with system calls only (a forked child of
// the test may not allocate).
std::size_t read_status(char* buffer, std::size_t capacity) {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t size = 0;
  while (size < capacity) {
    const ssize_t n = ::read(fd, buffer + size, capacity - size);
    if (n <= 0) break;
    size += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return size;
}

// Installs a handler on SIGUSR1 and a real-time signal, ignores SIGINT (one of
// the signals given back their default) and SIGWINCH (one that is not), and puts
// everything back when it goes.
class Dispositions {
 public:
  Dispositions() {
    struct sigaction handler {};
    handler.sa_handler = on_signal;
    sigemptyset(&handler.sa_mask);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGUSR1, &handler, &old_usr1_);
    ::sigaction(SIGRTMIN + 3, &handler, &old_rt_);
    ::sigaction(SIGINT, &ignore, &old_int_);
    ::sigaction(SIGWINCH, &ignore, &old_winch_);
  }
  ~Dispositions() {
    ::sigaction(SIGUSR1, &old_usr1_, nullptr);
    ::sigaction(SIGRTMIN + 3, &old_rt_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGWINCH, &old_winch_, nullptr);
  }
  Dispositions(const Dispositions&) = delete;
  Dispositions& operator=(const Dispositions&) = delete;

 private:
  struct sigaction old_usr1_ {};
  struct sigaction old_rt_ {};
  struct sigaction old_int_ {};
  struct sigaction old_winch_ {};
};

TEST(ChildSignals, ParsesTheMasksOfAStatusText) {
  const std::string status =
      "Name:\tcat\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n"
      "SigIgn:\t0000000000001004\nSigCgt:\t8000000000000201\nCapInh:\t0000000000000000\n";
  SignalDispositions found;
  ASSERT_TRUE(parse_status_dispositions(status, &found));
  EXPECT_EQ(found.ignored, bit(SIGPIPE) | bit(SIGQUIT));
  EXPECT_EQ(found.caught, bit(64) | bit(SIGUSR1) | bit(SIGHUP));
}

TEST(ChildSignals, AMissingOrMalformedLineIsNotAnAnswer) {
  SignalDispositions found;
  EXPECT_FALSE(parse_status_dispositions("", &found));
  EXPECT_FALSE(parse_status_dispositions("SigIgn:\t0000000000000000\n", &found));
  EXPECT_FALSE(parse_status_dispositions("SigIgn:\t0\nSigCgt:\t00000000000000zz\n", &found));
  EXPECT_FALSE(parse_status_dispositions("SigIgn:\t0\nSigCgt:\t\n", &found));
  EXPECT_FALSE(parse_status_dispositions("SigIgn:\t0\nSigCgt:\t00000000000000000\n", &found));  // 17 digits
  EXPECT_FALSE(parse_status_dispositions("SigIgn:\t0\nXSigCgt:\t0\n", &found));  // not at a line's start
  // A file cut short before its end still has the lines it has.
  ASSERT_TRUE(parse_status_dispositions("SigIgn:\t1\nSigCgt:\t2", &found));
  EXPECT_EQ(found.ignored, 1U);
  EXPECT_EQ(found.caught, 2U);
}

// What the kernel says of this process once handlers are installed is what the
// parser reads.
TEST(ChildSignals, ReadsTheKernelsViewOfThisProcess) {
  Dispositions installed;
  char buffer[8192];
  const std::size_t size = read_status(buffer, sizeof buffer);
  SignalDispositions found;
  ASSERT_TRUE(parse_status_dispositions(std::string_view(buffer, size), &found));
  EXPECT_NE(found.caught & bit(SIGUSR1), 0U);
  EXPECT_NE(found.caught & bit(SIGRTMIN + 3), 0U);
  EXPECT_NE(found.ignored & bit(SIGINT), 0U);
  EXPECT_NE(found.ignored & bit(SIGWINCH), 0U);
  EXPECT_EQ(found.caught & bit(SIGHUP), 0U);
}

// In a forked child (as a vfork child would): after the reset no signal has a
// handler, SIGINT (in `defaults`) is no longer ignored and SIGWINCH (not in it)
// still is. Run once reading the status file and once asking signal by signal.
void expect_reset(const char* status_path) {
  Dispositions installed;
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    reset_signal_dispositions(defaults, status_path);
    char buffer[8192];
    const std::size_t size = read_status(buffer, sizeof buffer);
    SignalDispositions after;
    if (!parse_status_dispositions(std::string_view(buffer, size), &after)) ::_exit(10);
    if ((after.caught & ~(bit(32) | bit(33))) != 0) ::_exit(11);  // the C library's own may stay
    if ((after.ignored & bit(SIGINT)) != 0) ::_exit(12);
    if ((after.ignored & bit(SIGWINCH)) == 0) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: unreadable status, 11: a handler left, 12: SIGINT still ignored, "
                                       "13: SIGWINCH no longer ignored";
}

TEST(ChildSignals, ResetFromTheStatusFile) {
  expect_reset("/proc/self/status");
}

TEST(ChildSignals, ResetAskingEachSignalWhenTheStatusFileCannotBeRead) {
  expect_reset("/nonexistent/status");
}

}  // namespace
}  // namespace orch
