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
#include "cli/json_docs.h"
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
    const LogsQuery query{args->run_id, args->step, args->attempt, args->err};
    auto chosen = find_attempt((*store)->runs(), query);
    if (!chosen) return report_error(chosen.error());
    if (!args->json) {
      auto read = (*store)->runs().read_attempt_output(
          chosen->attempt, args->err ? AttemptStream::Stderr : AttemptStream::Stdout,
          [](std::string_view bytes) { std::fwrite(bytes.data(), 1, bytes.size(), stdout); });
      return read ? kExitSucceeded : report_error(read.error());
    }
    std::string text;
    auto read = (*store)->runs().read_attempt_output(
        chosen->attempt, args->err ? AttemptStream::Stderr : AttemptStream::Stdout,
        [&](std::string_view bytes) { text += bytes; });
    if (!read) return report_error(read.error());
    std::printf("%s\n", json_text(logs_json(query, *chosen, *read, text), 2).c_str());
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
