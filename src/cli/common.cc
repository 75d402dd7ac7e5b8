#include "cli/common.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cli/number_option.h"
#include "cli/output_style.h"
#include "engine/signals.h"
#include "exec/llm_executor.h"
#include "exec/tool_executor.h"
#include "exec/worker_executor.h"
#include "orch/postgres_store.h"
#include "orch/workspace.h"

namespace orch::cli {

int exit_code_for_error(const Error& e) {
  switch (e.code) {
    case ErrorCode::InvalidInput:
    case ErrorCode::NotFound:
    case ErrorCode::Busy:
      return kExitInvalid;
    case ErrorCode::Interrupted:
      return kExitInterrupted;
    default:
      return kExitFailed;
  }
}

int report_error(const Error& e) {
  std::fprintf(stderr, "orch: %s\n", e.message.c_str());
  return exit_code_for_error(e);
}

bool store_may_exist(const std::string& path) {
  // A server that cannot be answered: the open that follows says why.
  if (is_postgres_url(path)) return postgres_ledger_exists(path).value_or(true);
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

std::string shown_store(const std::string& path) {
  return redact_postgres_url(path);
}

Expected<std::unique_ptr<Ledger>> open_ledger(const std::string& path, bool must_exist,
                                              const std::filesystem::path& workspace) {
  if (path.empty())
    return fail(ErrorCode::InvalidInput,
                "--store is empty: give the ledger's file (e.g. .orch/orch.db) or a postgresql:// URL");
  if (is_postgres_url(path)) {
    // A command that reads a ledger does not make one in an empty schema.
    if (must_exist) {
      auto exists = postgres_ledger_exists(path);
      if (!exists)
        return fail(exists.error().code,
                    fmt::format("--store {}: {}", shown_store(path), exists.error().message));
      if (!*exists)
        return fail(ErrorCode::NotFound,
                    fmt::format("no orch ledger at {} (run `orch run PLAN --store URL` first, or check the "
                                "URL's search_path)",
                                shown_store(path)));
    }
    // The ledger is on the server; logs while they are written, snapshots and
    // the spawn journal stay in a local folder.
    const std::filesystem::path folder =
        std::filesystem::absolute(workspace.empty() ? ".orch" : workspace / ".orch");
    log(LogLevel::Debug, fmt::format("ledger {} (local folder {})", shown_store(path), folder.string()));
    auto ledger = open_postgres_ledger(path, folder);
    if (!ledger)
      return fail(ledger.error().code,
                  fmt::format("--store {}: {}", shown_store(path), ledger.error().message));
    return ledger;
  }
  // The file an open would reach: a ledger named through a symlink is the one the
  // link names, and its folder (run locks, the runs' outputs) is that file's, so
  // two paths to one ledger are one store. Messages name the path as given.
  auto resolved = resolve_symlinks(path);
  if (!resolved)
    return fail(ErrorCode::InvalidInput, fmt::format("--store {}: {}", path, resolved.error().message));
  const std::filesystem::path real = std::move(*resolved);
  log(LogLevel::Debug,
      fmt::format("ledger {}{}", path, real.string() != path ? " (" + real.string() + ")" : ""));
  if (std::error_code ec; std::filesystem::is_directory(real, ec))
    return fail(ErrorCode::InvalidInput,
                fmt::format("--store {} is a folder: give the ledger's file in it (e.g. {}/orch.db)", path,
                            std::filesystem::path(path).string()));
  std::error_code ec;
  const auto status = std::filesystem::status(real, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("--store {} is not a regular file: give the ledger's file (e.g. .orch/orch.db)", path));
  if (must_exist && !std::filesystem::exists(status))
    return fail(ErrorCode::NotFound,
                fmt::format("no orch store at {} (run `orch run PLAN` first, or pass --store PATH)", path));
  // A new ledger's own folder is made (.orch), but not a tree of them: a mistyped
  // path is refused, not built.
  if (!std::filesystem::exists(status)) {
    const std::filesystem::path folder = std::filesystem::path(path).parent_path();
    // The nearest existing folder on the way must be one (`.orch` a file, a path
    // under a file): a usage error, like a mistyped path.
    for (std::filesystem::path up = folder; !up.empty(); up = up.parent_path()) {
      const auto up_status = std::filesystem::status(up, ec);
      if (!std::filesystem::exists(up_status)) {
        if (up == up.parent_path()) break;
        continue;
      }
      if (!std::filesystem::is_directory(up_status))
        return fail(ErrorCode::InvalidInput,
                    fmt::format("--store {}: {} is a file, not a folder", path, up.string()));
      break;
    }
    const std::filesystem::path above = folder.parent_path();
    if (!folder.empty() && !above.empty() && !std::filesystem::exists(folder, ec) &&
        !std::filesystem::is_directory(above, ec))
      return fail(ErrorCode::InvalidInput,
                  fmt::format("--store {}: the folder {} does not exist (orch makes the ledger's own folder, "
                              "not the ones above it)",
                              path, above.string()));
  }
  // A symlink that names no file yet: the folder it leads to must be there (orch
  // does not build a tree where the link points).
  if (std::error_code ec2; !std::filesystem::exists(status) &&
                           std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec2)) &&
                           !std::filesystem::is_directory(real.parent_path(), ec2))
    return fail(ErrorCode::InvalidInput,
                fmt::format("--store {}: it leads to {}, whose folder does not exist", path, real.string()));
  return open_sqlite_ledger(real);
}

Expected<void> check_workspace(const std::string& workspace) {
  std::error_code ec;
  auto status = std::filesystem::status(workspace, ec);
  std::string why;
  if (ec)
    why = ec.message();
  else if (!std::filesystem::exists(status))
    why = "No such file or directory";
  else if (!std::filesystem::is_directory(status))
    why = "it is a file, not a folder";
  else if (access(workspace.c_str(), X_OK) != 0)  // read-only is fine: steps may only read
    why = fmt::format("{} (steps run in it: it must be a folder one can enter)", std::strerror(errno));
  if (why.empty()) return {};
  return fail(ErrorCode::InvalidInput,
              fmt::format("workspace '{}' is not a usable folder: {}", workspace, why));
}

namespace {
volatile std::sig_atomic_t g_run_ended = 0;
volatile std::sig_atomic_t g_stop_after_end = 0;  // a signal came after run_has_ended()
std::atomic<unsigned> g_caught_before{0};  // SignalWatch::caught() when this handler was put in

void on_stop_signal(int sig) {
  if (g_run_ended != 0) {
    g_stop_after_end = 1;
    return;
  }
  // The engine caught an earlier signal of this burst and has stopped the run
  // (or is stopping it): this one comes after its handler went, before
  // run_has_ended(). The report of the stopped run is still to be printed.
  if (SignalWatch::caught() != g_caught_before.load(std::memory_order_relaxed)) return;
  // Before the run: as if orch had no handler (a shell loop sees the signal).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);
}
}  // namespace

void on_stop_signals(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  // One ignored when orch started stays ignored (`nohup`, a script's `&`).
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction now {};
    if (sigaction(sig, nullptr, &now) == 0 && now.sa_handler != SIG_IGN) sigaction(sig, &sa, nullptr);
  }
}

void catch_stop_signals() {
  g_run_ended = 0;
  g_stop_after_end = 0;
  g_caught_before.store(SignalWatch::caught(), std::memory_order_relaxed);
  on_stop_signals(on_stop_signal);
}

void run_has_ended() {
  g_run_ended = 1;
}

bool stop_asked_after_run() {
  return g_stop_after_end != 0;
}

Expected<std::string> latest_run_id(Store& store) {
  auto runs = ORCH_TRY(store.list_runs());
  if (runs.empty()) return fail(ErrorCode::NotFound, "the store has no runs yet");
  return runs.front().id;
}

namespace {
bool smart_terminal(int fd) {
  if (isatty(fd) != 1) return false;
  const char* term = std::getenv("TERM");
  return term != nullptr && *term != '\0' && std::string_view(term) != "dumb";
}
}  // namespace

bool stdout_is_tty() {
  return smart_terminal(STDOUT_FILENO);
}
bool stderr_is_tty() {
  return smart_terminal(STDERR_FILENO);
}
int stderr_columns() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

void add_executor_file_flags(CLI::App& sub, std::string& models, std::string& registry,
                             std::string& workers) {
  sub.add_option("--models", models, "models file for llm steps (default: .orch/models.yaml if present)")
      ->check(not_empty("the models file"));
  sub.add_option("--registry", registry,
                 "tool registry for tool:NAME steps (default: .orch/registry.yml if present)")
      ->check(not_empty("the tool registry file"));
  sub.add_option("--workers", workers,
                 "agent CLIs for worker:NAME steps (default: .orch/workers.yaml if present)")
      ->check(not_empty("the workers file"));
}

Expected<std::shared_ptr<ExecutorRegistry>> cli_executors(const std::string& models_flag,
                                                          const std::string& registry_flag,
                                                          const std::string& workers_flag) {
  auto registry = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
  auto catalog = std::make_shared<LlmCatalog>();
  std::filesystem::path file = models_flag;
  if (file.empty() && std::filesystem::exists(kDefaultModels)) file = kDefaultModels;
  if (!file.empty()) {
    log(LogLevel::Debug, "models file " + file.string());
    *catalog = ORCH_TRY(load_llm_catalog(file));
  }
  auto llm = std::make_shared<LlmExecutor>(catalog);
  registry->add("llm", llm);
  registry->add("llm:", llm);
  auto tools = std::make_shared<ToolRegistry>();
  std::filesystem::path tools_file = registry_flag;
  if (tools_file.empty() && std::filesystem::exists(kDefaultToolRegistry)) tools_file = kDefaultToolRegistry;
  if (!tools_file.empty()) {
    log(LogLevel::Debug, "tool registry " + tools_file.string());
    *tools = ORCH_TRY(load_tool_registry(tools_file));
  }
  registry->add("tool:", std::make_shared<ToolExecutor>(tools));
  auto workers = std::make_shared<WorkerCatalog>();
  std::filesystem::path workers_file = workers_flag;
  if (workers_file.empty() && std::filesystem::exists(kDefaultWorkers)) workers_file = kDefaultWorkers;
  if (!workers_file.empty()) {
    log(LogLevel::Debug, "workers file " + workers_file.string());
    *workers = ORCH_TRY(load_worker_catalog(workers_file));
  }
  registry->add("worker:", std::make_shared<WorkerExecutor>(workers));
  return registry;
}

}  // namespace orch::cli
