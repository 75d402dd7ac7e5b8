// orch logs RUN_ID STEP [--attempt N] [--stderr]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "util/strings.h"

namespace orch::cli {

namespace {
struct LogsArgs {
  std::string run_id;
  std::string step;
  int attempt = 0;
  bool err = false;
  std::string store = kDefaultStore;
};
}  // namespace

Command add_logs(CLI::App& app) {
  auto args = std::make_shared<LogsArgs>();
  CLI::App* sub = app.add_subcommand("logs", "Print the stdout (or stderr) an attempt of a step wrote.");
  sub->add_option("RUN_ID", args->run_id, "the run")->required()->check(not_empty(kRunIdWanted));
  sub->add_option("STEP", args->step, "the step id")->required()->check(not_empty("a step id"));
  sub->add_option("--attempt", args->attempt, "attempt number (default: the latest)")
      ->transform(whole_number(1));
  sub->add_flag("--stderr", args->err, "print stderr instead of stdout");
  sub->add_option("--store", args->store, "ledger database (default: .orch/orch.db)");
  return [args]() -> int {
    auto store = open_store(args->store, true);
    if (!store) return report_error(store.error());
    auto run = (*store)->find_run(args->run_id);
    if (!run) return report_error(run.error());
    if (!*run) return report_error((*store)->no_run(args->run_id));
    auto attempts = (*store)->attempts(args->run_id, args->step);
    if (!attempts) return report_error(attempts.error());
    if (attempts->empty()) {
      // A step the run does not have is not the same as one that never ran.
      auto steps = (*store)->steps(args->run_id);
      if (!steps) return report_error(steps.error());
      std::vector<std::string> ids;
      for (const auto& s : *steps) ids.push_back(s.step_id);
      if (std::find(ids.begin(), ids.end(), args->step) == ids.end())
        return report_error(
            Error{ErrorCode::NotFound, fmt::format("run {} has no step '{}'{}", args->run_id, args->step,
                                                   did_you_mean(args->step, ids))});
      return report_error(Error{
          ErrorCode::NotFound, fmt::format("run {} has no attempts of step '{}'", args->run_id, args->step)});
    }
    const AttemptRecord* chosen = &attempts->back();
    if (args->attempt > 0) {
      chosen = nullptr;
      for (const auto& a : *attempts)
        if (a.number == args->attempt) chosen = &a;
      if (!chosen)
        return report_error(
            Error{ErrorCode::NotFound, fmt::format("step '{}' has no attempt {} (it has {})", args->step,
                                                   args->attempt, attempts->size())});
    }
    const std::string& path = args->err ? chosen->stderr_path : chosen->stdout_path;
    if (path.empty()) {  // kept in the ledger row (attempts.stdout_text / stderr_text)
      const std::string& text = args->err ? chosen->stderr_text : chosen->stdout_text;
      std::fwrite(text.data(), 1, text.size(), stdout);
      return kExitSucceeded;
    }
    // Paths are recorded absolute; a project moved with its store keeps its logs
    // in the store's runs/RUN/ folder, where they are looked for next.
    const std::filesystem::path moved =
        (*store)->folder() / "runs" / args->run_id / std::filesystem::path(path).filename();
    // O_NONBLOCK: a FIFO put where a log was is refused below, not waited on.
    std::string opened = path;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    const int path_errno = fd < 0 ? errno : 0;
    int moved_errno = 0;
    if (fd < 0 && moved != std::filesystem::path(path)) {
      opened = moved.string();
      fd = ::open(moved.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      moved_errno = fd < 0 ? errno : 0;
    }
    if (fd < 0) {
      const std::int64_t recorded = args->err ? chosen->stderr_bytes : chosen->stdout_bytes;
      // No file and nothing recorded: the stream wrote nothing, so no file was made.
      if (path_errno == ENOENT && (moved_errno == 0 || moved_errno == ENOENT) &&
          (recorded == 0 || chosen->status == AttemptStatus::Running))
        return kExitSucceeded;
      std::string where = fmt::format("{}: {}", path, std::strerror(path_errno));
      if (moved_errno != 0) where += fmt::format("; {}: {}", moved.string(), std::strerror(moved_errno));
      return report_error(
          Error{ErrorCode::Io,
                fmt::format("cannot read the {} of attempt {} of step '{}' ({} bytes "
                            "recorded): {}",
                            args->err ? "stderr" : "stdout", chosen->number, args->step, recorded, where)});
    }
    if (struct stat st{}; ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return report_error(Error{
          ErrorCode::Io, fmt::format("cannot read the {} of attempt {} of step '{}': {} "
                                     "is not a regular file (orch's logs are)",
                                     args->err ? "stderr" : "stdout", chosen->number, args->step, opened)});
    }
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int read_errno = errno;
        ::close(fd);
        return report_error(
            Error{ErrorCode::Io, fmt::format("reading {}: {}", opened, std::strerror(read_errno))});
      }
      if (n == 0) break;
      std::fwrite(buf, 1, static_cast<std::size_t>(n), stdout);
    }
    ::close(fd);
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
