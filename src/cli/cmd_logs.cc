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

const char* source_name(OutputSource s) {
  switch (s) {
    case OutputSource::File:
      return "file";
    case OutputSource::Ledger:
      return "ledger";
    case OutputSource::None:
      return "none";
  }
  return "none";
}

// The --json document (schemas/logs.schema.json) of the stream read into `text`.
nlohmann::ordered_json logs_json(const LogsArgs& args, const AttemptRecord& a, std::size_t attempts,
                                 const OutputRead& read, const std::string& text) {
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
          {"path", read.file},
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
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv);
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
      auto read = (*store)->runs().read_attempt_output(
          *chosen, args->err ? AttemptStream::Stderr : AttemptStream::Stdout,
          [](std::string_view bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); });
      return read ? kExitSucceeded : report_error(read.error());
    }
    std::string text;
    auto read = (*store)->runs().read_attempt_output(
        *chosen, args->err ? AttemptStream::Stderr : AttemptStream::Stdout,
        [&](std::string_view bytes) { text += bytes; });
    if (!read) return report_error(read.error());
    std::printf("%s\n", json_text(logs_json(*args, *chosen, attempts->size(), *read, text), 2).c_str());
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
