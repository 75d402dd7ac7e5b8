// cli/common.h — what every subcommand shares: opening the store, reporting
// errors with the right exit code, and terminal detection.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "orch/engine.h"
#include "orch/error.h"
#include "orch/ledger.h"
#include "orch/store.h"

namespace CLI {
class App;
}  // namespace CLI

namespace orch::cli {

constexpr const char* kDefaultStore = ".orch/orch.db";

// Exit code for an error: invalid input, unknown run, busy run → 2; everything else → 1.
int exit_code_for_error(const Error& e);

// Prints "orch: <message>" to stderr and returns the exit code for it.
int report_error(const Error& e);

// What --store says (docs/cli.md): a SQLite ledger file, or a postgresql:// URL.
// Every --store option reads ORCH_STORE when it is not given (--store wins).
constexpr const char* kStoreHelpPrefix = "ledger database file, or a postgresql:// URL";
constexpr const char* kStoreEnv = "ORCH_STORE";
constexpr const char* kStoreNotEmpty = "the ledger's file (e.g. .orch/orch.db) or a postgresql:// URL";

// Opens the ledger (its runs, traces, reviews and cycle runs: orch/ledger.h).
// `path` is a SQLite file, or a postgresql:// URL (orch/postgres_store.h), whose
// local folder for logs, snapshots and the spawn journal is `.orch/` under
// `workspace` ("" = the current directory). When `must_exist`, a missing SQLite
// file is a NotFound error ("no orch store at .orch/orch.db (run `orch run PLAN`
// first, or pass --store)"); a PostgreSQL ledger is made at the first open.
Expected<std::unique_ptr<Ledger>> open_ledger(const std::string& path, bool must_exist,
                                              const std::filesystem::path& workspace = {});

// Whether the ledger `path` names may exist: a SQLite file that is there, or
// any PostgreSQL URL (the server knows). Listing a ledger that is not there
// lists nothing, without making one.
bool store_may_exist(const std::string& path);

// `path` as messages show it: a URL without its password.
std::string shown_store(const std::string& path);

constexpr const char* kDefaultModels = ".orch/models.yaml";
constexpr const char* kDefaultToolRegistry = ".orch/registry.yml";
constexpr const char* kDefaultWorkers = ".orch/workers.yaml";

// The executors a plan may use: the builtins, shell, and `llm` / `llm:MODEL` with
// the models file `models_flag` (--models), else .orch/models.yaml when it
// exists, else none (an llm step then fails validation saying so); `tool:NAME`
// with the tool registry `registry_flag` (--registry), else .orch/registry.yml
// when it exists, else none (docs/tools.md); `worker:NAME` with the workers file `workers_flag` (--workers),
// else .orch/workers.yaml when it exists (docs/workers.md). A models file, registry or workers file that
// cannot be read or is invalid is an InvalidInput/NotFound error.
Expected<std::shared_ptr<ExecutorRegistry>> cli_executors(const std::string& models_flag,
                                                          const std::string& registry_flag = "",
                                                          const std::string& workers_flag = "");

// The --models, --registry and --workers options whose values cli_executors() takes.
void add_executor_file_flags(CLI::App& sub, std::string& models, std::string& registry, std::string& workers);

// --workspace must name an existing folder; checked before anything is read or
// recorded, so `run` and `validate` refuse a bad one alike (InvalidInput:
// "workspace 'x' is not a usable folder: No such file or directory").
Expected<void> check_workspace(const std::string& workspace);

// Stop signals (SIGINT, SIGTERM, SIGHUP) around a run, for the moments the
// engine does not handle them itself (it does while it drives the run, and puts
// this handler back after). Until run_has_ended(), one ends orch at once, as the
// signal's default action does, unless the engine caught one since this was
// called: then the run is stopping or has stopped, its report is to come, and
// the signal is dropped. After run_has_ended() they are all dropped, so that a
// second Ctrl-C (or a `timeout` that signals twice) while the report is printed
// neither loses it nor changes the exit code.
void catch_stop_signals();
void run_has_ended();
// Whether a stop signal came after run_has_ended() (and was dropped): what
// waits after the report — the trace's export — gives up then.
bool stop_asked_after_run();
// Puts `handler` in for SIGINT, SIGTERM and SIGHUP (SA_RESTART), leaving one that
// was ignored when orch started ignored (`nohup`, a script's `&`).
void on_stop_signals(void (*handler)(int));

// The newest run in the store, for commands whose RUN_ID is optional.
Expected<std::string> latest_run_id(Store& store);

// Whether stdout / stderr is a terminal that can redraw in place: a TTY whose
// TERM is set and not "dumb" (an editor's shell buffer, `env -i`). Elsewhere
// orch prints plain lines.
bool stdout_is_tty();
bool stderr_is_tty();
// The terminal's width on stderr in columns, or 0 when it cannot be told.
int stderr_columns();

}  // namespace orch::cli
