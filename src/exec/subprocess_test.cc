#include "exec/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "exec/exec_testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using orch::testing::process_gone;
using orch::testing::read_pids;
using orch::testing::run_until;
using orch::testing::TempDir;
using orch::testing::wait_gone;
using orch::testing::write_file;
using SteadyClock = std::chrono::steady_clock;

// One started process and everything it reported.
struct Child {
  std::string out;
  std::string err;
  std::optional<ProcessExit> exit;
  int exits = 0;
  std::unique_ptr<Subprocess> process;

  Expected<void> start(EventLoop& loop, Subprocess::Options options) {
    Subprocess::Handlers handlers;
    handlers.on_stdout = [this](std::string_view b) { out.append(b); };
    handlers.on_stderr = [this](std::string_view b) { err.append(b); };
    handlers.on_exit = [this](ProcessExit e) {
      exit = std::move(e);
      ++exits;
    };
    auto started = Subprocess::start(options, loop, std::move(handlers));
    if (!started) return std::unexpected(started.error());
    process = std::move(*started);
    return {};
  }
};

Subprocess::Options sh(const std::string& script, const fs::path& cwd = {}) {
  Subprocess::Options options;
  options.argv = {"/bin/sh", "-c", script};
  options.cwd = cwd;
  return options;
}

TEST(Subprocess, ReportsExitCodeAndOutput) {
  EventLoop loop;
  Child run;
  ASSERT_TRUE(run.start(loop, sh("echo out; echo err >&2; exit 3")));
  EXPECT_GT(run.process->pid(), 0);
  EXPECT_TRUE(run.process->running());
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_FALSE(run.exit->signaled);
  EXPECT_EQ(run.exit->code, 3);
  EXPECT_EQ(run.out, "out\n");
  EXPECT_EQ(run.err, "err\n");
  EXPECT_FALSE(run.process->running());
  loop.run_once(10ms);
  EXPECT_EQ(run.exits, 1);
  EXPECT_TRUE(loop.idle());
}

// A NUL byte would end the argument or variable early, so the process would get
// less than it was given: nothing is started and the error says which one.
TEST(Subprocess, ANulByteInAnArgumentOrVariableIsRefused) {
  EventLoop loop;
  Child run;
  auto options = sh("true");
  options.argv.push_back(std::string("cut\0here", 8));
  auto refused = run.start(loop, options);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "argument 3 holds a NUL byte, which no process argument can carry");
  options = sh("true");
  options.env = {{"FINE", "x"}, {"CUT", std::string("a\0b", 3)}};
  refused = run.start(loop, options);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("environment variable 'CUT' holds a NUL byte"), std::string::npos);
  EXPECT_FALSE(run.process);
}

// One argument or variable over Linux's 128 KiB is refused before the spawn,
// naming it and its size, instead of exec's bare "Argument list too long"; at
// the limit it goes through.
TEST(Subprocess, AnArgumentOrVariableOverTheKernelsLimitIsNamed) {
  EventLoop loop;
  Child run;
  auto options = sh("true");
  options.argv.push_back(std::string(200000, 'x'));
  auto refused = run.start(loop, options);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("argument 3 is 200000 bytes, more than the 131071 bytes"),
            std::string::npos)
      << refused.error().message;
  options = sh("true");
  options.env = {{"ORCH_IN_note", std::string(200000, 'y')}};
  refused = run.start(loop, options);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("environment variable 'ORCH_IN_note' is 200000 bytes"),
            std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(run.process);
  options = sh("printf %s \"$BIG\" | wc -c");
  options.env = {{"BIG", std::string(131072 - 2 - 3, 'z')}};
  Child fits;
  ASSERT_TRUE(fits.start(loop, options));
  ASSERT_TRUE(run_until(loop, [&] { return fits.exit.has_value(); }));
  EXPECT_EQ(fits.out, "131067\n");
}

// The per-attempt values of an orch that runs this one inside a step are not
// passed on: an attempt sees only the ones its own orch gives it.
TEST(Subprocess, AnOuterOrchsAttemptValuesAreNotInherited) {
  ::setenv("ORCH_IN_note", "outer", 1);
  ::setenv("ORCH_P0", "outer", 1);
  ::setenv("ORCH_RESULT", "outer", 1);
  ::setenv("ORCH_PATHS", "kept", 1);
  EventLoop loop;
  Child run;
  auto options = sh("echo \"[$ORCH_IN_note][$ORCH_P0][$ORCH_RESULT][$ORCH_PATHS][$ORCH_IN_mine]\"");
  options.env = {{"ORCH_IN_mine", "given"}};
  ASSERT_TRUE(run.start(loop, options));
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_EQ(run.out, "[][][][kept][given]\n");
  for (const char* name : {"ORCH_IN_note", "ORCH_P0", "ORCH_RESULT", "ORCH_PATHS"}) ::unsetenv(name);
}

TEST(Subprocess, ReportsTheSignal) {
  EventLoop loop;
  Child run;
  ASSERT_TRUE(run.start(loop, sh("kill -SEGV $$")));
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_TRUE(run.exit->signaled);
  EXPECT_EQ(run.exit->signal, SIGSEGV);
}

TEST(Subprocess, RunsInItsOwnProcessGroup) {
  EventLoop loop;
  Child run;
  ASSERT_TRUE(run.start(loop, sh("ps -o pgid= -p $$ | tr -d ' '; echo $$")));
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  auto newline = run.out.find('\n');
  ASSERT_NE(newline, std::string::npos) << run.out << run.err;
  EXPECT_EQ(run.out.substr(0, newline) + "\n", run.out.substr(newline + 1));
  EXPECT_NE(std::to_string(::getpgrp()) + "\n", run.out.substr(newline + 1));
}

TEST(Subprocess, EnvironmentIsOrchsPlusOverrides) {
  ::setenv("ORCH_TEST_INHERITED", "from-orch", 1);
  ::setenv("ORCH_TEST_OVERRIDDEN", "old", 1);
  EventLoop loop;
  Child run;
  auto options = sh("echo $ORCH_TEST_INHERITED $ORCH_TEST_OVERRIDDEN $ORCH_TEST_ADDED");
  options.env = {
      {"ORCH_TEST_OVERRIDDEN", "first"}, {"ORCH_TEST_ADDED", "added"}, {"ORCH_TEST_OVERRIDDEN", "new"}};
  ASSERT_TRUE(run.start(loop, options));
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_EQ(run.out, "from-orch new added\n");
}

TEST(Subprocess, OverriddenPathIsUsedToFindTheProgram) {
  TempDir dir;
  write_file(dir / "bin/orch-test-tool", "#!/bin/sh\necho tool ran\n");
  fs::permissions(dir / "bin/orch-test-tool", fs::perms::owner_all);
  EventLoop loop;
  Child run;
  Subprocess::Options options;
  options.argv = {"orch-test-tool"};
  options.env = {{"PATH", (dir / "bin").string() + ":/usr/bin:/bin"}};
  ASSERT_TRUE(run.start(loop, options));
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_EQ(run.out, "tool ran\n");
}

// Sets a folder's modification time an hour back, as a PATH folder nobody has
// touched lately (a lookup in a folder changed in the last second is not kept).
void age(const fs::path& dir) {
  fs::last_write_time(dir, fs::last_write_time(dir) - std::chrono::hours(1));
}

// Runs `options` once to its end: what it printed, or "failed: " and why it
// could not start.
std::string run_to_end(EventLoop& loop, const Subprocess::Options& options) {
  Child c;
  auto started = c.start(loop, options);
  if (!started) return "failed: " + started.error().message;
  EXPECT_TRUE(run_until(loop, [&] { return c.exit.has_value(); }));
  return c.out;
}

TEST(Subprocess, APathLookupIsRememberedUntilAPathFolderChanges) {
  TempDir dir;
  fs::create_directories(dir / "first");
  write_file(dir / "second/orch-test-hashed", "#!/bin/sh\necho second\n");
  fs::permissions(dir / "second/orch-test-hashed", fs::perms::owner_all);
  age(dir / "first");
  age(dir / "second");
  EventLoop loop;
  Subprocess::Options options;
  options.argv = {"orch-test-hashed"};
  options.env = {{"PATH", (dir / "first").string() + ":" + (dir / "second").string() + ":/usr/bin:/bin"}};
  auto run = [&] { return run_to_end(loop, options); };
  const std::size_t before = subprocess_path_searches();
  EXPECT_EQ(run(), "second\n");
  EXPECT_EQ(run(), "second\n");
  EXPECT_EQ(run(), "second\n");
  EXPECT_EQ(subprocess_path_searches(), before + 1) << "searched once, then remembered";

  // A program of the same name in an earlier folder is found at once.
  write_file(dir / "first/orch-test-hashed", "#!/bin/sh\necho first\n");
  fs::permissions(dir / "first/orch-test-hashed", fs::perms::owner_all);
  EXPECT_EQ(run(), "first\n");
  fs::remove(dir / "first/orch-test-hashed");
  EXPECT_EQ(run(), "second\n");

  // Made unexecutable without its folder changing: the remembered path fails
  // and the search decides, as without the cache (as execvp: found, but not
  // executable).
  age(dir / "first");
  EXPECT_EQ(run(), "second\n");
  fs::permissions(dir / "second/orch-test-hashed", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(run(), "failed: cannot run 'orch-test-hashed': Permission denied");
  fs::permissions(dir / "second/orch-test-hashed", fs::perms::owner_all);
  EXPECT_EQ(run(), "second\n");

  // Removed: not found, with the usual message.
  fs::remove(dir / "second/orch-test-hashed");
  EXPECT_EQ(run(), "failed: cannot run 'orch-test-hashed': No such file or directory (not found in PATH)");
}

// A folder named twice in PATH is searched once; what is added to it later is
// still found first.
TEST(Subprocess, AFolderNamedTwiceInPathIsSearchedOnceAndStillWatched) {
  TempDir dir;
  write_file(dir / "second/orch-test-twice", "#!/bin/sh\necho second\n");
  fs::permissions(dir / "second/orch-test-twice", fs::perms::owner_all);
  fs::create_directories(dir / "first");
  age(dir / "first");
  age(dir / "second");
  EventLoop loop;
  Subprocess::Options options;
  options.argv = {"orch-test-twice"};
  const std::string first = (dir / "first").string();
  options.env = {
      {"PATH", first + ":" + first + ":" + (dir / "second").string() + ":" + first + ":/usr/bin:/bin"}};
  auto run = [&] { return run_to_end(loop, options); };
  const std::size_t before = subprocess_path_searches();
  EXPECT_EQ(run(), "second\n");
  EXPECT_EQ(run(), "second\n");
  EXPECT_EQ(subprocess_path_searches(), before + 1) << "searched once, then remembered";
  write_file(dir / "first/orch-test-twice", "#!/bin/sh\necho first\n");
  fs::permissions(dir / "first/orch-test-twice", fs::perms::owner_all);
  EXPECT_EQ(run(), "first\n");
  fs::remove(dir / "first/orch-test-twice");
  fs::remove(dir / "second/orch-test-twice");
  EXPECT_EQ(run(), "failed: cannot run 'orch-test-twice': No such file or directory (not found in PATH)");
}

// A relative PATH entry is resolved in the step's working folder, as the child
// would: the lookup cache leaves such a PATH alone.
TEST(Subprocess, ARelativePathEntryIsResolvedInTheWorkingFolder) {
  TempDir dir;
  write_file(dir / "ws/tools/orch-test-relative", "#!/bin/sh\necho from the workspace\n");
  fs::permissions(dir / "ws/tools/orch-test-relative", fs::perms::owner_all);
  age(dir / "ws/tools");
  EventLoop loop;
  Subprocess::Options options;
  options.argv = {"orch-test-relative"};
  options.cwd = dir / "ws";
  options.env = {{"PATH", "tools:/usr/bin:/bin"}};
  for (int i = 0; i < 2; ++i) {
    Child c;
    ASSERT_TRUE(c.start(loop, options));
    ASSERT_TRUE(run_until(loop, [&] { return c.exit.has_value(); }));
    EXPECT_EQ(c.out, "from the workspace\n");
  }
}

TEST(Subprocess, WorkingFolderIsCwd) {
  TempDir dir;
  EventLoop loop;
  Child run;
  Subprocess::Options options;
  options.argv = {"pwd"};
  options.cwd = dir.path();
  ASSERT_TRUE(run.start(loop, options));
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_EQ(run.out, dir.path().string() + "\n");
}

TEST(Subprocess, StdinIsDevNull) {
  EventLoop loop;
  Child run;
  Subprocess::Options options;
  options.argv = {"cat"};
  auto start = SteadyClock::now();
  ASSERT_TRUE(run.start(loop, options));
  ASSERT_TRUE(run_until(
      loop, [&] { return run.exit.has_value(); }, 5s));
  EXPECT_LT(SteadyClock::now() - start, 2s);
  EXPECT_EQ(run.exit->code, 0);
  EXPECT_EQ(run.out, "");
}

TEST(Subprocess, MissingProgramFailsToStartWithAClearMessage) {
  EventLoop loop;
  Child run;
  Subprocess::Options options;
  options.argv = {"nosuchcmd-orch-test", "arg"};
  auto started = run.start(loop, options);
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code, ErrorCode::Spawn);
  EXPECT_EQ(started.error().message,
            "cannot run 'nosuchcmd-orch-test': No such file or directory (not found in PATH)");
  EXPECT_TRUE(loop.idle());

  options.argv = {"/no/such/program"};
  started = run.start(loop, options);
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().message, "cannot run '/no/such/program': No such file or directory");

  options.argv = {"true"};
  options.env = {{"PATH", "/nonexistent-orch-dir"}};
  started = run.start(loop, options);
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().message, "cannot run 'true': No such file or directory (not found in PATH)");

  options.argv = {};
  EXPECT_FALSE(run.start(loop, options));
}

TEST(Subprocess, MissingWorkingFolderIsNamed) {
  TempDir dir;
  EventLoop loop;
  Child run;
  auto started = run.start(loop, sh("true", dir / "missing"));
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find((dir / "missing").string()), std::string::npos)
      << started.error().message;
}

TEST(Subprocess, Exit127IsAnExitNotAFailedStart) {
  EventLoop loop;
  Child run;
  ASSERT_TRUE(run.start(loop, sh("exit 127")));  // /bin/sh exists: a real exit 127
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_FALSE(run.exit->signaled);
  EXPECT_EQ(run.exit->code, 127);
}

// The child starts with no blocked signal and with default dispositions for the
// signals orch may ignore or catch, whatever orch's own are (orch blocks SIGINT
// and SIGTERM for its signalfd; a caller may ignore SIGPIPE). An ignored signal
// outside that list stays ignored, as with posix_spawn.
TEST(Subprocess, ChildStartsWithNoBlockedSignalAndDefaultDispositions) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction old_pipe {};
  struct sigaction old_winch {};
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  ASSERT_EQ(::sigaction(SIGWINCH, &ignore, &old_winch), 0);
  sigset_t block;
  sigset_t old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);

  EventLoop loop;
  Child run;
  auto started = run.start(loop, sh("grep -E '^Sig(Blk|Ign):' /proc/self/status"));
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::sigaction(SIGWINCH, &old_winch, nullptr);
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  ASSERT_EQ(run.exit->code, 0) << run.err;
  auto mask_of = [&](const std::string& field) -> unsigned long long {
    const auto at = run.out.find(field + ":");
    if (at == std::string::npos) return ~0ULL;
    return std::stoull(run.out.substr(at + field.size() + 1), nullptr, 16);
  };
  auto bit = [](int sig) { return 1ULL << (sig - 1); };
  EXPECT_EQ(mask_of("SigBlk"), 0ULL) << run.out;
  const unsigned long long ignored = mask_of("SigIgn");
  EXPECT_EQ(ignored & bit(SIGPIPE), 0ULL) << run.out;
  EXPECT_NE(ignored & bit(SIGWINCH), 0ULL) << run.out;
}

// argv[0] is searched for as execvp does: a file found but not executable does
// not stop the search (a later folder's is run), and is the reason given when no
// folder has one that is; a file without #! that is not a program is not handed
// to /bin/sh.
TEST(Subprocess, PathSearchSkipsAFileThatIsNotExecutable) {
  TempDir dir;
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b");
  write_file(dir.path() / "a" / "tool", "#!/bin/sh\necho from a\n");
  write_file(dir.path() / "b" / "tool", "#!/bin/sh\necho from b\n");
  fs::permissions(dir.path() / "b" / "tool", fs::perms::owner_all);
  {
    // Relative entries, so the search is the child's (in its working folder),
    // not an answer remembered by orch.
    EventLoop loop;
    Child run;
    Subprocess::Options options;
    options.argv = {"tool"};
    options.env = {{"PATH", "a:b"}};
    options.cwd = dir.path();
    ASSERT_TRUE(run.start(loop, options));
    ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
    EXPECT_EQ(run.exit->code, 0) << run.err;
    EXPECT_EQ(run.out, "from b\n");
  }
  {
    EventLoop loop;
    Child run;
    Subprocess::Options options;
    options.argv = {"tool"};
    options.env = {{"PATH", (dir.path() / "a").string()}};
    auto started = run.start(loop, options);
    ASSERT_FALSE(started);
    EXPECT_NE(started.error().message.find("Permission denied"), std::string::npos)
        << started.error().message;
  }
  {
    write_file(dir.path() / "b" / "plain", "echo from a script without an interpreter line\n");
    fs::permissions(dir.path() / "b" / "plain", fs::perms::owner_all);
    EventLoop loop;
    Child run;
    Subprocess::Options options;
    options.argv = {"plain"};
    options.env = {{"PATH", (dir.path() / "b").string()}};
    auto started = run.start(loop, options);
    ASSERT_FALSE(started);
    EXPECT_NE(started.error().message.find("Exec format error"), std::string::npos)
        << started.error().message;
    EXPECT_EQ(run.out, "");
  }
}

TEST(Subprocess, WorksWithoutPidfd) {
  EventLoop loop;
  Child run;
  auto options = sh("echo hi; exit 4");
  options.use_pidfd = false;
  ASSERT_TRUE(run.start(loop, options));
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_EQ(run.exit->code, 4);
  EXPECT_EQ(run.out, "hi\n");
}

TEST(Subprocess, GrandchildThatOutlivesTheLeaderIsKilled) {
  TempDir dir;
  for (bool pidfd : {true, false}) {
    EventLoop loop;
    Child run;
    auto options = sh("(sleep 5; echo late > late.txt) & echo $! > pids; exit 0", dir.path());
    options.use_pidfd = pidfd;
    auto start = SteadyClock::now();
    ASSERT_TRUE(run.start(loop, options));
    ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
    EXPECT_LT(SteadyClock::now() - start, 3s);
    EXPECT_EQ(run.exit->code, 0);
    auto pids = read_pids(dir / "pids");
    ASSERT_EQ(pids.size(), 1u);
    EXPECT_TRUE(wait_gone(pids[0])) << "grandchild " << pids[0] << " survived (pidfd=" << pidfd << ")";
    EXPECT_FALSE(fs::exists(dir / "late.txt"));
  }
}

TEST(Subprocess, TerminateStopsTheWholeGroup) {
  TempDir dir;
  EventLoop loop;
  Child run;
  ASSERT_TRUE(run.start(loop, sh("sleep 30 & echo $! > pids; sleep 30 & echo $! >> pids; wait", dir.path())));
  ASSERT_TRUE(run_until(
      loop, [&] { return read_pids(dir / "pids").size() == 2; }, 5s));
  auto start = SteadyClock::now();
  run.process->terminate(5s);
  ASSERT_TRUE(run_until(loop, [&] { return run.exit.has_value(); }));
  EXPECT_LT(SteadyClock::now() - start, 2s);
  EXPECT_TRUE(run.exit->signaled);
  EXPECT_EQ(run.exit->signal, SIGTERM);
  for (pid_t pid : read_pids(dir / "pids")) EXPECT_TRUE(wait_gone(pid)) << pid;
}

TEST(Subprocess, IgnoredTermIsFollowedByKillAfterTheGrace) {
  EventLoop loop;
  Child run;
  ASSERT_TRUE(run.start(loop, sh("trap '' TERM; echo ready; while :; do sleep 1; done")));
  ASSERT_TRUE(run_until(
      loop, [&] { return run.out == "ready\n"; }, 5s));
  auto start = SteadyClock::now();
  run.process->terminate(300ms);
  ASSERT_TRUE(run_until(
      loop, [&] { return run.exit.has_value(); }, 5s));
  auto elapsed = SteadyClock::now() - start;
  EXPECT_GE(elapsed, 290ms);
  EXPECT_LT(elapsed, 3s);
  EXPECT_TRUE(run.exit->signaled);
  EXPECT_EQ(run.exit->signal, SIGKILL);
}

TEST(Subprocess, DestroyingKillsAndReapsTheGroup) {
  TempDir dir;
  EventLoop loop;
  Child run;
  ASSERT_TRUE(run.start(loop, sh("sleep 30 & echo $! > pids; wait", dir.path())));
  pid_t leader = run.process->pid();
  ASSERT_TRUE(run_until(
      loop, [&] { return read_pids(dir / "pids").size() == 1; }, 5s));
  run.process.reset();
  EXPECT_EQ(::kill(leader, 0), -1);  // reaped synchronously: not even a zombie
  EXPECT_EQ(errno, ESRCH);
  EXPECT_TRUE(wait_gone(read_pids(dir / "pids")[0]));
  EXPECT_TRUE(loop.idle());
  EXPECT_EQ(run.exits, 0);
}

TEST(Subprocess, PipesHeldOpenByAnEscapedProcessAreDrainedForABoundedTime) {
  TempDir dir;
  EventLoop loop;
  Child run;
  // setsid leaves the process group, so the group kill cannot reach it; it keeps
  // stdout open for 3 s, and the exit must not wait for that.
  auto options = sh(
      "setsid sh -c 'echo $$ > pids; exec sleep 3' & while [ ! -s pids ]; do :; done; echo done", dir.path());
  options.drain_limit = 200ms;
  auto start = SteadyClock::now();
  ASSERT_TRUE(run.start(loop, options));
  ASSERT_TRUE(run_until(
      loop, [&] { return run.exit.has_value(); }, 5s));
  auto elapsed = SteadyClock::now() - start;
  EXPECT_GE(elapsed, 200ms);
  EXPECT_LT(elapsed, 2s);
  EXPECT_EQ(run.out, "done\n");
  for (pid_t pid : read_pids(dir / "pids")) ::kill(pid, SIGKILL);
}

TEST(Subprocess, ManyAtOnceAreEachReportedOnce) {
  EventLoop loop;
  constexpr int kCount = 50;
  std::vector<std::unique_ptr<Child>> runs;
  for (int i = 0; i < kCount; ++i) {
    runs.push_back(std::make_unique<Child>());
    ASSERT_TRUE(
        runs.back()->start(loop, sh("echo " + std::to_string(i) + "; exit " + std::to_string(i % 7))));
  }
  auto all_done = [&] {
    for (const auto& r : runs) {
      if (!r->exit) return false;
    }
    return true;
  };
  ASSERT_TRUE(run_until(loop, all_done, 15s));
  loop.run_once(20ms);
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(runs[i]->exits, 1);
    EXPECT_EQ(runs[i]->exit->code, i % 7);
    EXPECT_EQ(runs[i]->out, std::to_string(i) + "\n");
  }
  EXPECT_TRUE(loop.idle());
}

}  // namespace
}  // namespace orch
