#include "cli/orch_main.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/output_style.h"
#include "orch/engine.h"
#include "util/strings.h"

namespace orch {

namespace {
constexpr const char* kDocumentation = R"(
Documentation: man orch; docs/cli.md, docs/plan-format.md, docs/store.md, docs/models.md,
docs/workers.md, docs/tools.md, docs/planner.md, docs/chains.md, docs/task.md,
docs/routing.md, docs/memory.md, docs/review.md, docs/serve.md, docs/mcp.md (installed in
share/doc/orch/))";

// The exit codes of orch as a whole (`orch --help`, and the commands with no table of their own).
constexpr const char* kExitCodes = R"(
Exit codes:
  0    succeeded
  1    failed (a step failed, a review ended REVISE/BLOCK/INCOMPLETE, or orch could not
       write its ledger)
  2    invalid input or usage (bad plan, unknown run, run busy)
  3    needs a human: awaiting approval (`orch approve RUN STEP`, then resume), escalated,
       an ambiguous request (`orch task`: the question is printed), or a review that
       escalated a finding, reached its spend cap or was not confirmed
  4    budget exhausted
  130  interrupted or cancelled (resumable with `orch resume RUN_ID`)
)";

// A command's own exit codes, where they say more than the general table.
const std::map<std::string_view, std::string_view>& command_exit_codes() {
  static const std::map<std::string_view, std::string_view> codes = {
      {"validate", R"(
Exit codes:
  0    the plan is valid (warnings, if any, are printed)
  2    the plan is invalid (every problem as FILE:LINE: step 'ID': message), cannot be
       read, or bad usage
)"},
      {"run", R"(
Exit codes:
  0    every step done
  1    a step failed (the reason is in the report), or orch could not write or read its
       ledger (the run stays resumable)
  2    invalid input or usage: a bad plan, flag, workspace or store; nothing is recorded
  3    needs a human: a step awaits approval (`orch approve RUN STEP`, then `orch resume
       RUN`), or the run escalated
  4    budget exhausted: the steps not started are skipped with the reason
  130  interrupted (SIGINT/SIGTERM/SIGHUP) or cancelled (`orch cancel`): resumable
)"},
      {"resume", R"(
Exit codes:
  0    every step done
  1    a step failed (the reason is in the report), or orch could not write or read its
       ledger (the run stays resumable)
  2    invalid input or usage: an unknown run, one another live process drives, one that
       succeeded, a stored or --replan plan that does not validate (what a killed driver
       left is cleaned up first; nothing of the plan runs)
  3    needs a human: a step awaits approval (`orch approve RUN STEP`, then resume again),
       or the run escalated
  4    budget exhausted: the steps not started are skipped with the reason
  130  interrupted (SIGINT/SIGTERM/SIGHUP) or cancelled (`orch cancel`): resumable
)"},
      {"status", R"(
Exit codes:
  0    the run was shown, whatever its status
  1    the ledger cannot be read (not an orch ledger, damaged)
  2    no store, an unknown run, or bad usage
  With --watch, once the run ends: its own code (0 succeeded, 1 failed, 3 needs a human,
  4 budget exhausted, 130 interrupted or cancelled); 1 for a run no live process drives
  (resume it); 130 on SIGINT/SIGTERM/SIGHUP; 0 when its reader has gone.
)"},
      {"runs", R"(
Exit codes:
  0    the runs were listed (none is not an error)
  1    the ledger cannot be read (not an orch ledger, damaged)
  2    no store, or bad usage
)"},
      {"logs", R"(
Exit codes:
  0    the stream was printed (an empty one prints nothing)
  1    the log the ledger recorded is gone or unreadable, or the ledger cannot be read
  2    an unknown run, step or attempt, no store, or bad usage
)"},
      {"events", R"(
Exit codes:
  0    the events were printed (none is not an error)
  1    the ledger cannot be read (not an orch ledger, damaged)
  2    no store, an unknown run or step, or bad usage
)"},
      {"cancel", R"(
Exit codes:
  0    the run has ended: cancelled, or it finished first (its final status is printed)
  1    its driver had not stopped after --wait seconds (the request stands: it still
       stops), or the ledger cannot be read or written
  2    an unknown run, a run that already ended, no store, or bad usage
)"},
      {"approve", R"(
Exit codes:
  0    the step is approved: `orch resume RUN_ID` runs it
  1    the ledger cannot be read or written
  2    an unknown run or step, a step not awaiting approval, or bad usage
)"},
      {"serve", R"(
Exit codes:
  0    stopped by SIGINT, SIGTERM or SIGHUP
  1    it could not listen (the port in use, not an address of this machine), or the
       ledger cannot be read; orch-serve is not beside orch
  2    no store, a token file that is not one (or that others may read), a
       non-loopback --listen without --token-file, or bad usage
)"},
      {"mcp", R"(
Exit codes:
  0    standard input ended (the client closed it), or stopped by SIGINT, SIGTERM or
       SIGHUP (with --listen)
  1    standard output could not be written, it could not listen (the port in use), or
       the ledger cannot be read; orch-serve is not beside orch
  2    bad usage, a workspace that is not a folder, a models, registry or workers file
       that is not valid, a token file that is not one, or a non-loopback --listen
  A tool that fails is not an exit: it is answered as a tool error (isError).
)"},
      {"export-otlp", R"(
Exit codes:
  0    the collector took the trace
  1    the export failed (the collector's answer, or why none came), or the ledger
       cannot be read
  2    no endpoint set (OTEL_EXPORTER_OTLP_ENDPOINT), an OTEL_* variable orch cannot
       use, an unknown run, no store, or bad usage
  130  interrupted (SIGINT/SIGTERM/SIGHUP) before the collector answered
)"},
      {"cycle", R"(
Exit codes:
  0    every item reached a final state (run, resume); printed (status, show, audit, list)
  1    items are stuck, max_iterations was reached, a phase could not run, or an audit
       that does not replay to the status file
  2    a bad cycle.yaml or status file (FILE:LINE: field: message), an unknown or ended
       cycle run, no store, or bad usage
  3    the token budget stopped it (`orch cycle resume RUN --budget-tokens N`), or a
       step awaits approval
  130  interrupted: `orch cycle resume RUN` goes on
)"},
  };
  return codes;
}

std::string footer_for(std::string_view command) {
  auto it = command_exit_codes().find(command);
  return std::string(it != command_exit_codes().end() ? it->second : std::string_view(kExitCodes)) +
         kDocumentation;
}

// Output that could not be written (a full disk, a closed file) is an error, not
// a silent success. A reader that stopped reading (`orch runs | head`) is not one
// to complain about: orch says nothing and keeps its exit code.
int with_output_checked(int code) {
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int flush_errno = errno;
  if (!flush_failed && std::ferror(stdout) == 0) return code;
  struct stat out {};
  if (flush_errno == EPIPE || (fstat(STDOUT_FILENO, &out) == 0 && S_ISFIFO(out.st_mode))) return code;
  std::fprintf(stderr, "orch: cannot write the output: %s\n",
               flush_failed && flush_errno != 0 ? std::strerror(flush_errno) : "write error");
  return code == 0 ? 1 : code;
}

// The command a usage error is about: "orch", "orch run", "orch task log".
std::string command_path(CLI::App& app) {
  std::string path = app.get_name();
  CLI::App* at = &app;
  for (;;) {
    auto parsed = at->get_subcommands([](CLI::App* sub) { return sub->parsed(); });
    if (parsed.empty()) return path;
    at = parsed.front();
    path += " " + at->get_name();
  }
}

CLI::App& deepest_parsed(CLI::App& app) {
  auto parsed = app.get_subcommands([](CLI::App* sub) { return sub->parsed(); });
  return parsed.empty() ? app : deepest_parsed(*parsed.front());
}

// CLI11's messages, said the way orch says the rest: lower case, naming the
// option and what it wants ("--store: 1 required TEXT missing" -> "--store needs
// a value"; "A subcommand is required" -> the commands to choose from).
// `command_first`: the command was the first argument, so nothing came before it.
std::string usage_message(const CLI::ParseError& e, CLI::App& app, bool command_first) {
  const std::string what = e.what();
  std::smatch m;
  if (what == "A subcommand is required") {
    CLI::App& at = deepest_parsed(app);
    std::string names;
    std::vector<std::string> candidates;
    for (const CLI::App* sub : at.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      candidates.push_back(sub->get_name());
    }
    const std::string kind = &at == &app ? "command" : "subcommand";
    // What was given instead, named: a mistyped command, or an option before one.
    const std::vector<std::string> given = at.remaining();
    if (!given.empty() && given.front().starts_with('-'))
      return fmt::format(
          "unknown option '{}' before the {} (options go after it: orch {}{}COMMAND --help); {}s: {}",
          given.front(), kind, &at == &app ? "" : at.get_name(), &at == &app ? "" : " ", kind, names);
    if (!given.empty())
      return fmt::format("unknown {} '{}'{}; {}s: {}", kind, given.front(),
                         did_you_mean(given.front(), candidates), kind, names);
    return fmt::format("a {} is required: {}", kind, names);
  }
  // A value starting with '-' is read as an option, so the argument it was meant for is
  // missing (`orch memory search -cmake`): say how to give it.
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && what.ends_with(" is required")) {
    for (const std::string& given : deepest_parsed(app).remaining())
      if (given.starts_with('-') && given.size() > 1)
        return fmt::format(
            "{} ('{}' was read as an option; for a value that starts with '-', put -- "
            "before it: {} -- {})",
            what, given, command_path(app), given);
  }
  static const std::regex kValueMissing("^(\\S+): \\d+ required \\S+ missing$");
  static const std::regex kAtMost("^(\\S+): At Most (\\d+) required but received (\\d+)$");
  static const std::regex kAtLeast("^(\\S+): At least (\\d+) required but received (\\d+)$");
  static const std::regex kExactly("^Expected (exactly|at least) (\\d+) arguments to (\\S+), got (\\d+)$");
  static const std::regex kExcludes("^(\\S+) excludes (\\S+)$");
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // CLI11 lists them last first; its own record of them is in order. A long
    // list (a glob gone wrong) is cut: the first few say enough.
    std::vector<std::string> extras = deepest_parsed(app).remaining();
    // Options before the command are left over at the top (`orch --json runs`).
    // After `--`, CLI11 leaves a command's extras there too (`orch runs -- x`).
    std::string where;
    if (extras.empty()) {
      extras = app.remaining();
      if (!command_first) where = " before the command (options go after it)";
    }
    // CLI11 keeps the `--` that ends the options among them; it is not one of them.
    if (auto dashes = std::find(extras.begin(), extras.end(), "--"); dashes != extras.end())
      extras.erase(dashes);
    if (extras.empty()) return "unexpected arguments";
    std::string list;
    for (std::size_t k = 0; k < extras.size() && k < 5; ++k) {
      std::string a = extras[k].size() > 60 ? extras[k].substr(0, 57) + "..." : extras[k];
      list += (list.empty() ? "" : " ") + (a.find_first_of(" \t") == std::string::npos ? a : "'" + a + "'");
    }
    if (extras.size() > 5) list += fmt::format(" ... ({} in all)", extras.size());
    return fmt::format("unexpected argument{}{}: {}", extras.size() == 1 ? "" : "s", where, list);
  }
  // The rest name an option and a count: short. (std::regex recurses per
  // character and would overflow the stack on a message of thousands.)
  if (what.size() > 256) return what.substr(0, 253) + "...";
  if (std::regex_match(what, m, kValueMissing)) return m[1].str() + " needs a value";
  if (std::regex_match(what, m, kAtMost))
    return fmt::format("{} takes at most {} value{}, not {}", m[1].str(), m[2].str(), m[2] == "1" ? "" : "s",
                       m[3].str());
  if (std::regex_match(what, m, kAtLeast))
    return fmt::format("{} takes at least {} value{}, not {}", m[1].str(), m[2].str(), m[2] == "1" ? "" : "s",
                       m[3].str());
  if (std::regex_match(what, m, kExactly))
    return fmt::format("{} takes {} {} value{}, not {}", m[3].str(), m[1].str(), m[2].str(),
                       m[2] == "1" ? "" : "s", m[4].str());
  if (std::regex_match(what, m, kExcludes))
    return fmt::format("{} and {} cannot be given together", m[1].str(), m[2].str());
  return what;
}

// The flags every command takes, before or after its name (cli/output_style.h).
struct GlobalFlags {
  std::string color = "auto";
  bool quiet = false;
  int verbose = 0;
};

// Adds them to `app` and to every (sub)command under it: CLI11 reads an option
// on the command it follows, so each needs its own.
void add_global_flags(CLI::App& app, GlobalFlags& flags) {
  app.add_option("--color", flags.color,
                 "colour statuses: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->group("Output");
  app.add_flag("-q,--quiet", flags.quiet,
               "run, resume: say nothing but errors and JSON documents (no progress, table or notes)")
      ->group("Output");
  // Counted across the command line: `orch -v run p.yaml -v` is -vv.
  app.add_flag_function(
         "-v,--verbose", [&flags](std::int64_t n) { flags.verbose += static_cast<int>(n); },
         "run, resume: say each attempt as it starts; -vv (debug, any command): the ledger and set-up files "
         "read")
      ->group("Output");
  for (CLI::App* sub : app.get_subcommands({})) add_global_flags(*sub, flags);
}

Expected<void> apply_global_flags(const GlobalFlags& flags) {
  if (flags.quiet && flags.verbose > 0)
    return fail(ErrorCode::InvalidInput, "--quiet and --verbose cannot be given together");
  using cli::ColorMode;
  using cli::LogLevel;
  cli::OutputStyle& style = cli::output_style();
  style.color = flags.color == "always"  ? ColorMode::Always
                : flags.color == "never" ? ColorMode::Never
                                         : ColorMode::Auto;
  style.level = flags.quiet          ? LogLevel::Error
                : flags.verbose >= 2 ? LogLevel::Debug
                : flags.verbose == 1 ? LogLevel::Verbose
                                     : LogLevel::Note;
  return {};
}

}  // namespace

int orch_main(int argc, char** argv) {
  // A closed stdout (orch status | head) must not kill orch mid-transaction.
  std::signal(SIGPIPE, SIG_IGN);
  // Past a file-size limit (ulimit -f) a write fails with EFBIG, which orch
  // reports (a step's output file, the ledger), instead of killing orch with
  // SIGXFSZ mid-transaction. Steps get the default back.
  std::signal(SIGXFSZ, SIG_IGN);
  // Each running attempt holds a few files (its pipes, its pidfd): at -j 1000 the
  // usual soft limit of 1024 would fail attempts that had succeeded. The soft limit
  // is raised toward the hard one, to at most 65536: children inherit it, and some
  // programs close every descriptor up to the limit (a hard limit may be millions).
  constexpr rlim_t kOpenFiles = 65536;
  if (rlimit files{};
      getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < std::min(files.rlim_max, kOpenFiles)) {
    files.rlim_cur = std::min(files.rlim_max, kOpenFiles);
    (void)setrlimit(RLIMIT_NOFILE, &files);
  }
  CLI::App app{
      "orch — a durable, verifiable orchestrator for AI-agent and tool workflows.\n"
      "Runs a plan of steps through a ledger, checks every step against its postconditions,\n"
      "retries with the reason it failed, enforces budgets, and resumes after a crash.",
      "orch"};
  app.footer(footer_for(""));
  app.set_version_flag("--version", std::string("orch ") + ORCH_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, cli::Command> commands;
  // Returns whether the subcommand `fn` added is called `name`.
  auto add = [&](std::string_view name, cli::Command (*fn)(CLI::App&)) {
    std::size_t before = app.get_subcommands({}).size();
    cli::Command c = fn(app);
    CLI::App* sub = app.get_subcommands({})[before];
    commands[sub] = std::move(c);
    return sub->get_name() == name;
  };
  struct Entry {
    std::string_view name;
    cli::Command (*fn)(CLI::App&);
    bool whole_tree = false;  // reads the other commands (completion)
  };
  static constexpr Entry kCommands[] = {
      {"validate", cli::add_validate},
      {"run", cli::add_run},
      {"resume", cli::add_resume},
      {"status", cli::add_status},
      {"runs", cli::add_runs},
      {"logs", cli::add_logs},
      {"events", cli::add_events},
      {"cancel", cli::add_cancel},
      {"plan", cli::add_plan},
      {"approve", cli::add_approve},
      {"chain", cli::add_chain},
      {"task", cli::add_task},
      {"route", cli::add_route},
      {"budget-check", cli::add_budget_check},
      {"similarity", cli::add_similarity},
      {"memory", cli::add_memory},
      {"review", cli::add_review},
      {"cycle", cli::add_cycle},
      {"worker", cli::add_worker},
      {"workers", cli::add_workers},
      {"serve", cli::add_serve},
      {"mcp", cli::add_mcp},
      {"export-otlp", cli::add_export_otlp},
      {"tools", cli::add_tools},
      {"completion", cli::add_completion, true},
  };
  // Building every subcommand's options costs more than a millisecond, which short
  // commands (`orch task log`) feel: when the first argument names a subcommand,
  // only that one is built. Anything else (`orch`, `orch --help`, a typo) builds
  // them all, so help and errors list every command; so does `orch completion`,
  // which prints the whole tree.
  const Entry* only = nullptr;
  if (argc > 1)
    for (const Entry& e : kCommands)
      if (e.name == argv[1]) only = &e;
  const bool lazy = only != nullptr && !only->whole_tree;
  if (!lazy || !add(only->name, only->fn)) {
    for (const Entry& e : kCommands)
      if (!lazy || &e != only) add(e.name, e.fn);
  }
  for (auto& [sub, _] : commands) sub->footer(footer_for(sub->get_name()));
  GlobalFlags global;
  add_global_flags(app, global);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string command = command_path(app);
    std::fprintf(stderr, "orch: %s\nRun `%s --help` for usage.\n",
                 usage_message(e, app, only != nullptr).c_str(), command.c_str());
    return kExitInvalid;
  }
  if (auto set = apply_global_flags(global); !set) {
    std::fprintf(stderr, "orch: %s\n", set.error().message.c_str());
    return kExitInvalid;
  }
  for (auto& [sub, command] : commands)
    if (sub->parsed()) return with_output_checked(command());
  return kExitInvalid;
}

}  // namespace orch
