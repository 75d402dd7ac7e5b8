// orch review --config RUN.yaml [--yes] [--json]      the pre-flight, then the review
// orch review --resume ID [--spend-cap N] [--keep-edits|--discard-edits] [--json]   continue a review
// orch review --show ID [--json]                      a review's report
// orch review --list [--json]                         every review, newest first
// orch review --abandon ID [--json]                   end an unfinished review
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/approval_prompt.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "flows/review_run.h"
#include "orch/clock.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

namespace fs = std::filesystem;

struct ReviewArgs {
  std::string config;
  std::string resume;
  std::string show;
  std::string abandon;
  bool list = false;
  bool yes = false;
  bool json = false;
  bool keep_edits = false;
  bool discard_edits = false;
  std::int64_t spend_cap = 0;
  std::string store;
  std::string workspace = ".";
  bool workspace_given = false;
  std::string workers;
  std::string models;
};

// The one question before launch, on the terminal. No terminal: no answer.
std::optional<bool> ask_to_launch() {
  if (!isatty(STDIN_FILENO)) return std::nullopt;
  std::FILE* tty = std::fopen("/dev/tty", "r+");
  if (!tty) return std::nullopt;
  std::fputs("Launch this review? [y/N] ", tty);
  std::fflush(tty);
  char line[64] = {0};
  const bool got = std::fgets(line, sizeof line, tty) != nullptr;
  std::fclose(tty);
  return got && (line[0] == 'y' || line[0] == 'Y');
}

int print_outcome(const flows::ReviewOutcome& out, bool as_json) {
  if (as_json)
    std::printf("%s\n", json_text(out.doc, 2).c_str());
  else
    std::fputs(flows::review_markdown(out.doc).c_str(), stdout);
  if (!out.reason.empty()) std::fprintf(stderr, "orch review: %s\n", out.reason.c_str());
  return out.exit_code;
}

int run(const ReviewArgs& a) {
  const int modes =
      !a.config.empty() + !a.resume.empty() + !a.show.empty() + !a.abandon.empty() + (a.list ? 1 : 0);
  if (modes != 1)
    return report_error(Error{ErrorCode::InvalidInput,
                              "give one of --config RUN.yaml, --resume ID, --show ID, --list, --abandon ID"});
  if (a.spend_cap != 0 && a.resume.empty())
    return report_error(Error{ErrorCode::InvalidInput,
                              "--spend-cap goes with --resume (in RUN.yaml it is spend_cap_tokens)"});
  if ((a.keep_edits || a.discard_edits) && a.resume.empty())
    return report_error(Error{ErrorCode::InvalidInput, "--keep-edits and --discard-edits go with --resume"});
  if (a.keep_edits && a.discard_edits)
    return report_error(Error{ErrorCode::InvalidInput, "give --keep-edits or --discard-edits, not both"});
  std::error_code ec;
  const fs::path workspace = fs::weakly_canonical(fs::absolute(a.workspace), ec);
  if (ec || !fs::is_directory(workspace))
    return report_error(
        Error{ErrorCode::NotFound, fmt::format("--workspace {}: no such folder", a.workspace)});
  const std::string store_path = a.store.empty() ? (workspace / kDefaultStore).string() : a.store;

  flows::ReviewEnv env;
  env.workspace = workspace;
  env.now_ms = [] { return Clock::system().wall_ms(); };
  env.handle_signals = true;
  env.on_note = [](const std::string& line) { std::fprintf(stderr, "orch review: %s\n", line.c_str()); };
  env.ask_approval = terminal_approval_prompt();
  std::unique_ptr<Ledger> ledger;
  auto open = [&](bool must_exist) -> Expected<void> {
    ledger = ORCH_TRY(open_ledger(store_path, must_exist, workspace));
    env.store = &ledger->runs();
    env.reviews = &ledger->reviews();
    return {};
  };

  if (a.list || !a.show.empty()) {
    // Listing a ledger that does not exist lists nothing; it does not make one.
    if (a.list && !store_may_exist(store_path)) {
      if (a.json) std::printf("[]\n");
      return kExitSucceeded;
    }
    if (auto opened = open(!a.show.empty()); !opened) return report_error(opened.error());
    if (a.list) {
      auto all = env.reviews->list_reviews();
      if (!all) return report_error(all.error());
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : *all) {
        if (a.json)
          out.push_back({{"id", r.id},
                         {"name", r.name},
                         {"status", review_status_name(r.status)},
                         {"verdict", r.verdict},
                         {"rounds", r.rounds},
                         {"workspace", r.workspace}});
        else
          std::printf("%-40s %-10s %-10s %d round%s  %s\n", r.id.c_str(), review_status_name(r.status),
                      r.verdict.empty() ? "-" : r.verdict.c_str(), r.rounds, r.rounds == 1 ? "" : "s",
                      r.name.c_str());
      }
      if (a.json) std::printf("%s\n", json_text(out, 2).c_str());
      return kExitSucceeded;
    }
    auto r = flows::find_review(env, a.show);
    if (!r) return report_error(r.error());
    const auto doc = nlohmann::json::parse(r->doc_json, nullptr, false);
    if (a.json)
      std::printf("%s\n", json_text(doc, 2).c_str());
    else
      std::fputs(flows::review_markdown(doc).c_str(), stdout);
    return kExitSucceeded;
  }

  if (!a.abandon.empty()) {
    if (auto opened = open(true); !opened) return report_error(opened.error());
    auto r = flows::find_review(env, a.abandon);
    if (!r) return report_error(r.error());
    env.workspace = r->workspace;  // where its .orch/reviews/ copies are
    auto outcome = flows::abandon_review(env, r->id);
    if (!outcome) return report_error(outcome.error());
    if (a.json) std::printf("%s\n", json_text(outcome->doc, 2).c_str());
    return outcome->exit_code;
  }

  if (!a.resume.empty()) {
    // A review goes on in the workspace it was launched in, with its files.
    if (auto opened = open(true); !opened) return report_error(opened.error());
    auto r = flows::find_review(env, a.resume);
    if (!r) return report_error(r.error());
    if (a.workspace_given && fs::path(r->workspace) != workspace)
      return report_error(Error{ErrorCode::InvalidInput,
                                fmt::format("review '{}' was launched in {}, not {}: resume it there", r->id,
                                            r->workspace, workspace.string())});
    env.workspace = r->workspace;
    const auto doc = nlohmann::json::parse(r->doc_json, nullptr, false);
    std::string workers_file = a.workers, models_file = a.models;
    if (doc.is_object() && doc.contains("config") && doc["config"].is_object()) {
      if (workers_file.empty()) workers_file = doc["config"].value("workers_file", std::string());
      if (models_file.empty()) models_file = doc["config"].value("models_file", std::string());
    }
    auto executors = cli_executors(models_file, "", workers_file);
    if (!executors) return report_error(executors.error());
    env.executors = *executors;
    catch_stop_signals();  // and each round's engine while it runs
    auto outcome = flows::resume_review(
        env, r->id, a.spend_cap > 0 ? std::optional<std::int64_t>(a.spend_cap) : std::nullopt,
        a.keep_edits      ? LaterEdits::Keep
        : a.discard_edits ? LaterEdits::Discard
                          : LaterEdits::Refuse);
    run_has_ended();  // the report is printed whatever comes
    if (!outcome) return report_error(outcome.error());
    return print_outcome(*outcome, a.json);
  }

  // --config: everything is resolved and confirmed before the ledger is touched,
  // so a config that does not resolve, or a review not launched, leaves nothing.
  auto loaded = flows::load_review_config(a.config);
  if (!loaded) return report_error(loaded.error());
  auto config = flows::resolve_review_config(std::move(*loaded), workspace, a.workers, a.models);
  if (!config) return report_error(config.error());
  auto executors = cli_executors(config->models_file, "", config->workers_file);
  if (!executors) return report_error(executors.error());
  env.executors = *executors;
  if (auto checked = flows::check_review_executors(env, *config); !checked)
    return report_error(checked.error());
  const auto cost = flows::estimate_review_cost(*config, workspace);
  std::fputs(flows::preflight_report(*config, cost, workspace).c_str(), a.json ? stderr : stdout);
  std::fflush(stdout);
  // A review of these artifacts that has not ended: the user may mean to go on
  // with it rather than start another (the ledger is read, not made).
  if (store_may_exist(store_path)) {
    if (auto opened = open(true); !opened) return report_error(opened.error());
    auto unfinished = flows::unfinished_reviews_of(env, config->artifacts);
    if (!unfinished) return report_error(unfinished.error());
    for (const std::string& line : *unfinished)
      std::fprintf(stderr, "orch review: WARNING: %s\n", line.c_str());
  }
  if (!a.yes) {
    const auto answer = ask_to_launch();
    if (!answer) {
      std::fprintf(stderr,
                   "orch review: not launched: there is no terminal to confirm on; run again with --yes to "
                   "launch (nothing was recorded)\n");
      return kExitEscalated;
    }
    if (!*answer) {
      std::fprintf(stderr, "orch review: not launched (nothing was recorded)\n");
      return kExitEscalated;
    }
  }
  if (auto opened = open(false); !opened) return report_error(opened.error());
  catch_stop_signals();  // and each round's engine while it runs
  auto outcome = flows::start_review(env, *config);
  run_has_ended();  // the report is printed whatever comes
  if (!outcome) return report_error(outcome.error());
  return print_outcome(*outcome, a.json);
}

}  // namespace

Command add_review(CLI::App& app) {
  auto* sub = app.add_subcommand("review",
                                 "Review artifacts with fan-out reviewers (lenses), a deterministic gate, a "
                                 "judge with a hallucination gate, "
                                 "and fix rounds until dry (docs/review.md).\n"
                                 "Exit: 0 PASS; 1 REVISE, BLOCK or INCOMPLETE; 2 bad RUN.yaml or an "
                                 "unresolved field, or a review that cannot be resumed or abandoned; 3 "
                                 "escalated (two-strikes), "
                                 "spend cap reached, not confirmed, or awaiting approval; 130 interrupted");
  auto args = std::make_shared<ReviewArgs>();
  sub->add_option("--config", args->config, "RUN.yaml: what to review and how (docs/review.md)");
  sub->add_option("--resume", args->resume,
                  "continue review ID (after a crash, Ctrl-C, an approval or the spend cap)")
      ->check(not_empty("a review id (`orch review --list`)"));
  sub->add_option("--show", args->show, "print review ID's report (Markdown, or the document with --json)");
  sub->add_flag("--list", args->list, "list the reviews in the ledger, newest first");
  sub->add_option("--abandon", args->abandon,
                  "end review ID, unfinished (running or at its spend cap), as abandoned: nothing more runs, "
                  "its files stay as they are, and it is no longer resumable")
      ->check(not_empty("a review id (`orch review --list`)"));
  sub->add_flag("--yes,-y", args->yes,
                "launch without the final question (the Pre-Flight Report is still printed)");
  sub->add_flag("--json", args->json, "print the review document (schemas/review-report.schema.json)");
  sub->add_flag(
      "--keep-edits", args->keep_edits,
      "with --resume of a fix killed with its orch: keep the files changed since it stopped as they "
      "are (the fix runs again on them)");
  sub->add_flag("--discard-edits", args->discard_edits,
                "with --resume of a fix killed with its orch: put every file back as before the fix, changes "
                "made since it stopped included");
  sub->add_option("--spend-cap", args->spend_cap,
                  "with --resume: a new spend cap in tokens (to go past the old one)")
      ->transform(whole_number(1, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--store", args->store,
                  std::string(kStoreHelpPrefix) + " (default: WORKSPACE/.orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  sub->add_option("--workspace", args->workspace,
                  "the folder the artifacts are in (default: .; --resume: the review's own)")
      ->check(not_empty("the project folder"))
      ->each([args](const std::string&) { args->workspace_given = true; });
  sub->add_option("--workers", args->workers,
                  "workers file (default: RUN.yaml's 'workers', or .orch/workers.yaml)")
      ->check(not_empty("the workers file"));
  sub->add_option("--models", args->models,
                  "models file (default: RUN.yaml's 'models', or .orch/models.yaml)")
      ->check(not_empty("the models file"));
  return [args] { return run(*args); };
}

}  // namespace orch::cli
