// orch logs RUN_ID STEP [--attempt N] [--stderr] [--json]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {
struct LogsArgs {
  std::string run_id;
  std::string step;
  int attempt = 0;
  bool err = false;
  bool json = false;
  std::string store = kDefaultStore;
};

// Where the bytes of a stream came from (schemas/logs.schema.json, "source").
enum class Source { File, Ledger, None };

const char* source_name(Source s) {
  switch (s) {
    case Source::File:
      return "file";
    case Source::Ledger:
      return "ledger";
    case Source::None:
      return "none";
  }
  return "none";
}

struct StreamRead {
  Source source = Source::None;
  std::string path;  // the file read, for Source::File
};

using Sink = std::function<void(std::string_view)>;

// Hands the stream `err` (stderr, else stdout) of attempt `a` to `sink`, piece by
// piece: from its log file, or from the ledger row an llm call's output is kept in.
Expected<StreamRead> read_stream(const Store& store, const LogsArgs& args, const AttemptRecord& a,
                                 const Sink& sink) {
  const char* stream = args.err ? "stderr" : "stdout";
  const std::string& path = args.err ? a.stderr_path : a.stdout_path;
  if (path.empty()) {  // kept in the ledger row (attempts.stdout_text / stderr_text)
    const std::string& text = args.err ? a.stderr_text : a.stdout_text;
    // Nothing kept and nothing written: a builtin step's, which has no streams.
    if (text.empty() && (args.err ? a.stderr_bytes : a.stdout_bytes) == 0)
      return StreamRead{Source::None, ""};
    sink(text);
    return StreamRead{Source::Ledger, ""};
  }
  // Paths are recorded absolute; a project moved with its store keeps its logs
  // in the store's runs/RUN/ folder, where they are looked for next.
  const std::filesystem::path moved =
      store.folder() / "runs" / args.run_id / std::filesystem::path(path).filename();
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
    const std::int64_t recorded = args.err ? a.stderr_bytes : a.stdout_bytes;
    // No file and nothing recorded: the stream wrote nothing, so no file was made.
    if (path_errno == ENOENT && (moved_errno == 0 || moved_errno == ENOENT) &&
        (recorded == 0 || a.status == AttemptStatus::Running))
      return StreamRead{Source::None, ""};
    std::string where = fmt::format("{}: {}", path, std::strerror(path_errno));
    if (moved_errno != 0) where += fmt::format("; {}: {}", moved.string(), std::strerror(moved_errno));
    return fail(ErrorCode::Io, fmt::format("cannot read the {} of attempt {} of step '{}' ({} bytes "
                                           "recorded): {}",
                                           stream, a.number, args.step, recorded, where));
  }
  if (struct stat st{}; ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(ErrorCode::Io, fmt::format("cannot read the {} of attempt {} of step '{}': {} "
                                           "is not a regular file (orch's logs are)",
                                           stream, a.number, args.step, opened));
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int read_errno = errno;
      ::close(fd);
      return fail(ErrorCode::Io, fmt::format("reading {}: {}", opened, std::strerror(read_errno)));
    }
    if (n == 0) break;
    sink(std::string_view(buf, static_cast<std::size_t>(n)));
  }
  ::close(fd);
  return StreamRead{Source::File, opened};
}

// The --json document (schemas/logs.schema.json) of the stream read into `text`.
nlohmann::ordered_json logs_json(const LogsArgs& args, const AttemptRecord& a, std::size_t attempts,
                                 const StreamRead& read, const std::string& text) {
  std::int64_t bytes = args.err ? a.stderr_bytes : a.stdout_bytes;
  // A running attempt's byte count is written when it ends: until then, its file's.
  if (a.status == AttemptStatus::Running) bytes = std::max<std::int64_t>(bytes, std::ssize(text));
  // json_text() replaces what is not UTF-8; read back, such a text is not the stream's.
  const nlohmann::ordered_json as_text = text;
  const bool lossy = nlohmann::ordered_json::parse(json_text(as_text)).get<std::string>() != text;
  return {{"run_id", args.run_id},
          {"step", args.step},
          {"attempt", a.number},
          {"attempts", attempts},
          {"status", attempt_status_name(a.status)},
          {"stream", args.err ? "stderr" : "stdout"},
          {"source", source_name(read.source)},
          {"path", read.path},
          {"bytes", bytes},
          {"truncated", args.err ? a.stderr_truncated : a.stdout_truncated},
          {"text", as_text},
          {"text_bytes", text.size()},
          {"lossy", lossy},
          {"output_tail", a.output_tail}};
}
}  // namespace

Command add_logs(CLI::App& app) {
  auto args = std::make_shared<LogsArgs>();
  CLI::App* sub = app.add_subcommand("logs", "Print the stdout (or stderr) an attempt of a step wrote.");
  sub->add_option("RUN_ID", args->run_id, "the run")->required()->check(not_empty(kRunIdWanted));
  sub->add_option("STEP", args->step, "the step id")->required()->check(not_empty("a step id"));
  sub->add_option("--attempt", args->attempt, "attempt number (default: the latest)")
      ->transform(whole_number(1));
  sub->add_flag("--stderr", args->err, "print stderr instead of stdout");
  sub->add_flag(
      "--json", args->json,
      "print {run_id, step, attempt, attempts, status, stream, source, path, bytes, truncated, text, "
      "text_bytes, lossy, output_tail} (schemas/logs.schema.json)");
  sub->add_option("--store", args->store, "ledger database (default: .orch/orch.db)");
  return [args]() -> int {
    auto store = open_ledger(args->store, true);
    if (!store) return report_error(store.error());
    auto run = (*store)->runs().find_run(args->run_id);
    if (!run) return report_error(run.error());
    if (!*run) return report_error((*store)->runs().no_run(args->run_id));
    auto attempts = (*store)->runs().attempts(args->run_id, args->step);
    if (!attempts) return report_error(attempts.error());
    if (attempts->empty()) {
      // A step the run does not have is not the same as one that never ran.
      auto steps = (*store)->runs().steps(args->run_id);
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
    if (!args->json) {
      auto read = read_stream((*store)->runs(), *args, *chosen, [](std::string_view bytes) {
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
      });
      return read ? kExitSucceeded : report_error(read.error());
    }
    std::string text;
    auto read = read_stream((*store)->runs(), *args, *chosen, [&](std::string_view bytes) { text += bytes; });
    if (!read) return report_error(read.error());
    std::printf("%s\n", json_text(logs_json(*args, *chosen, attempts->size(), *read, text), 2).c_str());
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
