#include "exec/worker_executor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "exec/refused_attempt.h"
#include "exec/subprocess.h"
#include "exec/usage_figures.h"
#include "orch/validate.h"
#include "util/strings.h"

namespace orch {
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

constexpr std::size_t kMaxWatchedFolders = 8192;
constexpr std::size_t kMaxEntriesWalked = 200'000;

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return a > std::numeric_limits<std::int64_t>::max() - b ? std::numeric_limits<std::int64_t>::max() : a + b;
}

std::string worker_input_text(const nlohmann::ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump(2);
}

// The store folder of an attempt, from where the engine puts its files
// (<store>/runs/<run>/<step>.<n>.stdout), when it lies inside the workspace (the
// default .orch/): orch's own writes there (the ledger, other steps' output) are
// not the worker's progress. Empty when it lies elsewhere or the path has
// another shape.
fs::path store_inside(const fs::path& workspace, const fs::path& stdout_path) {
  const fs::path runs = stdout_path.parent_path().parent_path();
  if (runs.filename() != "runs") return {};
  std::error_code ec;
  const fs::path store = fs::weakly_canonical(runs.parent_path(), ec);
  const fs::path root = ec ? fs::path() : fs::weakly_canonical(workspace, ec);
  if (ec || store == root) return {};
  const fs::path inside = store.lexically_relative(root);
  if (inside.empty() || *inside.begin() == "..") return {};
  return store;
}

// Watches a workspace for changes with inotify; `on_change` runs on each batch.
// The folder `ignored` (if any), and all under it, is not watched and its
// creation or removal is no change.
class WorkspaceWatch {
 public:
  WorkspaceWatch(EventLoop& loop, const fs::path& root, fs::path ignored, std::function<void()> on_change)
      : loop_(loop), ignored_(std::move(ignored)), on_change_(std::move(on_change)) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0) return;  // no inotify (limits): output alone measures progress
    // Canonical, like `ignored`, so that the paths met on the walk compare with it.
    std::error_code ec;
    fs::path canonical_root = fs::weakly_canonical(root, ec);
    add_tree(ec ? root : canonical_root);
    loop_.watch(fd_, POLLIN, [this](short) { drain(); });
  }
  ~WorkspaceWatch() {
    if (fd_ < 0) return;
    loop_.unwatch(fd_);
    ::close(fd_);
  }
  WorkspaceWatch(const WorkspaceWatch&) = delete;
  WorkspaceWatch& operator=(const WorkspaceWatch&) = delete;

 private:
  static constexpr std::uint32_t kMask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO |
                                         IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR;

  void add(const fs::path& dir) {
    if (folders_.size() >= kMaxWatchedFolders || dir == ignored_) return;
    int wd = inotify_add_watch(fd_, dir.c_str(), kMask);
    if (wd >= 0) folders_[wd] = dir;
  }

  void add_tree(const fs::path& root) {
    add(root);
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
    std::size_t walked = 0;
    for (; !ec && it != end && folders_.size() < kMaxWatchedFolders && walked < kMaxEntriesWalked;
         it.increment(ec), ++walked) {
      std::error_code type_ec;
      if (!it->is_directory(type_ec) || it->is_symlink(type_ec)) continue;
      if (it->path() == ignored_) {
        it.disable_recursion_pending();
        continue;
      }
      add(it->path());
    }
  }

  void drain() {
    alignas(inotify_event) char buffer[16 * 1024];
    bool changed = false;
    for (;;) {
      ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n <= 0) break;
      for (char* p = buffer; p < buffer + n;) {
        auto* e = reinterpret_cast<inotify_event*>(p);
        p += sizeof(inotify_event) + e->len;
        auto it = folders_.find(e->wd);
        if (it == folders_.end() || e->len == 0) {  // the folder itself, or a queue overflow
          changed = true;
          continue;
        }
        const fs::path path = it->second / e->name;  // e->name is NUL-padded: stops at the NUL
        if (path == ignored_) continue;
        changed = true;
        if ((e->mask & IN_CREATE) && (e->mask & IN_ISDIR)) add(path);
      }
    }
    if (changed) on_change_();
  }

  EventLoop& loop_;
  fs::path ignored_;
  std::function<void()> on_change_;
  int fd_ = -1;
  std::map<int, fs::path> folders_;
};

enum class ProviderErrorKind { Credentials, Transient, Other };

// What an agent CLI's error text says of its provider's answer: an HTTP status
// written in it (401/403: credentials; 408, 429, 5xx: transient), or the words
// providers use for the same ("overloaded", "rate limit", "invalid api key").
ProviderErrorKind error_kind_of(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto has = [&](std::string_view word) { return lower.find(word) != std::string::npos; };
  // A three-digit number standing alone (not part of a longer one).
  auto status = [&](std::string_view code) {
    for (std::size_t at = lower.find(code); at != std::string::npos; at = lower.find(code, at + 1)) {
      const bool left = at == 0 || !std::isdigit(static_cast<unsigned char>(lower[at - 1]));
      const bool right = at + 3 >= lower.size() || !std::isdigit(static_cast<unsigned char>(lower[at + 3]));
      if (left && right) return true;
    }
    return false;
  };
  if (status("401") || status("403") || has("invalid api key") || has("authentication") || has("/login"))
    return ProviderErrorKind::Credentials;
  if (status("408") || status("429") || has("overloaded") || has("rate limit") || has("rate_limit") ||
      has("timed out") || has("timeout"))
    return ProviderErrorKind::Transient;
  for (int code = 500; code <= 599; ++code)
    if (status(std::to_string(code))) return ProviderErrorKind::Transient;
  return ProviderErrorKind::Other;
}

// Writes the prompt for {prompt_file} or stdin, readable by orch's user only.
Expected<void> write_prompt_file(const fs::path& path, const std::string& prompt) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // A new file, never one that is there already (nor a link planted in its name).
  fs::remove(path, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return fail(ErrorCode::Io,
                fmt::format("cannot write the prompt file {}: {}", path.string(), std::strerror(errno)));
  std::size_t done = 0;
  while (done < prompt.size()) {
    const ssize_t n = ::write(fd, prompt.data() + done, prompt.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return fail(ErrorCode::Io,
                  fmt::format("cannot write the prompt file {}: {}", path.string(), std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return {};
}

std::int64_t bytes_in(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
}

class WorkerAttempt final : public RunningAttempt {
 public:
  WorkerAttempt(const WorkerConfig& worker, const AttemptSpec& spec, EventLoop& loop,
                Executor::DoneCallback done)
      : worker_(worker),
        loop_(loop),
        done_(std::move(done)),
        stdout_path_(spec.stdout_path),
        stderr_path_(spec.stderr_path) {}

  ~WorkerAttempt() override {
    loop_.cancel_timer(stall_timer_);
    watch_.reset();
    process_.reset();  // the process is gone before its prompt file
    remove_prompt_file();
  }

  Expected<void> begin(ShellExecutor& shell, AttemptSpec spec) {
    if (worker_needs_prompt_file(worker_)) {
      prompt_file_ = worker_prompt_file(spec);
      ORCH_TRY(write_prompt_file(prompt_file_, worker_prompt(spec)));
      if (worker_.prompt_on_stdin) spec.stdin_path = prompt_file_;
    }
    spec.argv = fill_worker_argv(worker_, spec);
    // A worker's inputs reach it in its prompt, not as ORCH_IN_<NAME> variables
    // too: an input longer than Linux lets one variable be (128 KiB) would keep
    // the worker from starting, whichever way its prompt goes.
    std::erase_if(spec.env, [](const auto& var) { return var.first.starts_with("ORCH_IN_"); });
    for (const auto& [k, v] : worker_.env) spec.env.emplace_back(k, v);
    if (worker_.timeout)
      spec.timeout = spec.timeout ? std::min(*spec.timeout, *worker_.timeout) : *worker_.timeout;
    auto started = shell.start(spec, loop_, [this](AttemptOutcome o) { on_done(std::move(o)); });
    if (!started) return std::unexpected(started.error());
    process_ = std::move(*started);
    if (worker_.stall_after) {
      last_progress_ = loop_.clock().now();
      watch_ = std::make_unique<WorkspaceWatch>(loop_, spec.workspace,
                                                store_inside(spec.workspace, spec.stdout_path),
                                                [this] { last_progress_ = loop_.clock().now(); });
      arm_stall_timer();
    }
    return {};
  }

  void cancel(const std::string& reason) override {
    if (process_) process_->cancel(reason);
  }
  int process_group() const override { return process_ ? process_->process_group() : 0; }

 private:
  void arm_stall_timer() {
    milliseconds every = std::clamp(*worker_.stall_after / 5, milliseconds(20), milliseconds(1000));
    stall_timer_ = loop_.add_timer(every, [this] {
      stall_timer_ = 0;
      check_stall();
    });
  }

  void check_stall() {
    // What the process wrote, counted past max_output too: a log file cut at its
    // cap stops growing while the worker goes on writing.
    const std::int64_t written = process_ ? process_->output_bytes() : -1;
    std::int64_t out = written >= 0 ? written : bytes_in(stdout_path_);
    std::int64_t err = written >= 0 ? 0 : bytes_in(stderr_path_);
    auto now = loop_.clock().now();
    if (out != out_bytes_ || err != err_bytes_) {
      out_bytes_ = out;
      err_bytes_ = err;
      last_progress_ = now;
    }
    if (now - last_progress_ >= *worker_.stall_after) {
      stalled_ = true;
      stall_message_ =
          fmt::format("stalled: worker '{}' wrote no output and changed no file in the workspace for {}",
                      worker_.name, format_duration(*worker_.stall_after));
      watch_.reset();
      if (process_) process_->cancel(stall_message_);
      return;
    }
    arm_stall_timer();
  }

  void on_done(AttemptOutcome o) {
    loop_.cancel_timer(stall_timer_);
    stall_timer_ = 0;
    watch_.reset();
    remove_prompt_file();
    if (stalled_ && o.ending == AttemptEnding::Cancelled) {
      o.ending = AttemptEnding::Stalled;
      o.message = stall_message_;
    }
    if (worker_.output != WorkerOutput::Text && o.ending != AttemptEnding::SpawnFailed &&
        o.ending != AttemptEnding::SetupFailed)
      read_structured_output(o);
    Executor::DoneCallback done = std::move(done_);
    done(std::move(o));  // last: the engine may destroy *this
  }

  // The JSON documents of the output: the one document (json), or every line
  // that parses (jsonl). nullopt when a json worker's output is not JSON.
  std::optional<std::vector<nlohmann::json>> output_documents(const std::string& text) const {
    std::vector<nlohmann::json> docs;
    if (worker_.output == WorkerOutput::Json) {
      auto doc = nlohmann::json::parse(text, nullptr, false);
      if (doc.is_discarded()) return std::nullopt;
      docs.push_back(std::move(doc));
      return docs;
    }
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      auto line = trim(std::string_view(text).substr(start, end - start));
      if (!line.empty()) {
        auto doc = nlohmann::json::parse(line, nullptr, false);
        if (!doc.is_discarded()) docs.push_back(std::move(doc));
      }
      start = end + 1;
    }
    return docs;
  }

  // Reads what a json/jsonl worker's output says it spent, whatever became of
  // the attempt (every attempt's spend counts against the budget, a failed one
  // too), then — for an attempt that exited 0 — whether its answer is an error
  // and what its result is.
  void read_structured_output(AttemptOutcome& o) const {
    const bool exited_zero = o.ending == AttemptEnding::Exited && o.exit_code == 0;
    auto fail_with = [&](std::string message) {
      o.ending = AttemptEnding::Error;
      o.message = std::move(message);
    };
    // Cut at max_output, the output is not what the worker wrote: its last line
    // (the answer, the usage) may be the part that was dropped.
    if (o.stdout_truncated) {
      o.spend_unknown = true;  // the usage was in what was dropped: the engine charges the reservation
      if (exited_zero)
        fail_with(fmt::format(
            "worker '{}': its output ({} bytes) was cut at max_output, so its {} cannot be read from it; "
            "raise the step's max_output",
            worker_.name, o.stdout_bytes, worker_.output == WorkerOutput::Json ? "JSON" : "last lines"));
      return;
    }
    const auto docs = output_documents(o.result);
    if (!docs) {
      if (exited_zero)
        fail_with(fmt::format("worker '{}': its output is not JSON (output: json): {}", worker_.name,
                              quote_for_message(o.result, 200)));
      return;
    }
    auto last_with = [&](const std::string& path) -> const nlohmann::json* {
      if (path.empty()) return nullptr;
      for (auto it = docs->rbegin(); it != docs->rend(); ++it)
        if (const nlohmann::json* v = json_at_path(*it, path)) return v;
      return nullptr;
    };
    std::string usage_problem;
    for (auto [path, field] : {std::pair{&worker_.tokens_in_path, &o.tokens_in},
                               std::pair{&worker_.tokens_out_path, &o.tokens_out},
                               std::pair{&worker_.cache_read_path, &o.cache_read_tokens},
                               std::pair{&worker_.cache_write_path, &o.cache_write_tokens}}) {
      const nlohmann::json* v = last_with(*path);
      if (!v) continue;
      if (auto count = token_count(*v))
        *field = *count;
      else if (usage_problem.empty())
        usage_problem = fmt::format("worker '{}': usage '{}' = {}: {}", worker_.name, *path,
                                    quote_for_message(v->dump(), 80), count.error().message);
    }
    // Cache tokens are input tokens the CLI counted apart: the budget counts them too.
    o.tokens_in = saturating_add(o.tokens_in, saturating_add(o.cache_read_tokens, o.cache_write_tokens));
    if (const nlohmann::json* v = last_with(worker_.cost_path)) {
      if (v->is_number() && v->get<double>() >= 0 && std::isfinite(v->get<double>()))
        o.cost_usd = v->get<double>();
      else if (usage_problem.empty())
        usage_problem = fmt::format("worker '{}': usage '{}' is not a non-negative number: {}", worker_.name,
                                    worker_.cost_path, quote_for_message(v->dump(), 80));
    }
    if (!exited_zero) return;  // the attempt failed already: its own reason stands
    if (!usage_problem.empty()) return fail_with(std::move(usage_problem));
    if (auto why = answered_error(last_with)) {
      fail_with(fmt::format("worker '{}' answered with an error ('{}'): {}", worker_.name, worker_.error_path,
                            *why));
      // As the llm executor treats a provider's answer: refused credentials are
      // the set-up (not retried), an overload or a rate limit passes by itself
      // (retried with back-off), anything else is an ordinary failure.
      switch (error_kind_of(*why)) {
        case ProviderErrorKind::Credentials:
          o.ending = AttemptEnding::SetupFailed;
          break;
        case ProviderErrorKind::Transient:
          o.transient = true;
          break;
        case ProviderErrorKind::Other:
          break;
      }
      return;
    }
    const nlohmann::json* result = last_with(worker_.result_path);
    if (!result || result->is_null())
      return fail_with(fmt::format("worker '{}': its output has no '{}' (the worker's result path)",
                                   worker_.name, worker_.result_path));
    o.result = result->is_string() ? result->get<std::string>() : result->dump();
  }

  // The error text when the answer's error path says it is an error (true, a
  // non-empty string, a non-empty object or list), or nullopt.
  template <typename LastWith>
  std::optional<std::string> answered_error(const LastWith& last_with) const {
    const nlohmann::json* flag = last_with(worker_.error_path);
    if (!flag) return std::nullopt;
    const bool is_error = flag->is_boolean()  ? flag->get<bool>()
                          : flag->is_string() ? !flag->get_ref<const std::string&>().empty()
                          : flag->is_number() ? flag->get<double>() != 0
                                              : (flag->is_object() || flag->is_array()) && !flag->empty();
    if (!is_error) return std::nullopt;
    const nlohmann::json* text = last_with(worker_.error_message_path);
    if (!text && flag->is_string()) text = flag;
    if (!text && flag->is_object())
      if (auto it = flag->find("message"); it != flag->end()) text = &*it;
    if (!text) text = last_with(worker_.result_path);
    if (!text) return std::string("(the answer gives no error text)");
    return quote_for_message(text->is_string() ? text->get<std::string>() : text->dump(), 500);
  }

  void remove_prompt_file() {
    if (prompt_file_.empty()) return;
    std::error_code ec;
    fs::remove(prompt_file_, ec);
    prompt_file_.clear();
  }

  const WorkerConfig& worker_;
  EventLoop& loop_;
  Executor::DoneCallback done_;
  fs::path prompt_file_;  // {prompt_file} / stdin: prompt; removed when the attempt ends
  fs::path stdout_path_, stderr_path_;
  std::int64_t out_bytes_ = 0, err_bytes_ = 0;
  Clock::TimePoint last_progress_{};
  bool stalled_ = false;
  std::string stall_message_;
  EventLoop::TimerId stall_timer_ = 0;
  std::unique_ptr<WorkspaceWatch> watch_;
  std::unique_ptr<RunningAttempt> process_;  // last: destroyed (group killed) first
};

}  // namespace

const nlohmann::json* json_at_path(const nlohmann::json& doc, const std::string& path) {
  const nlohmann::json* at = &doc;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    std::string key = path.substr(start, dot - start);
    if (at->is_object()) {
      auto it = at->find(key);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array() && !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit)) {
      std::size_t i = std::stoul(key);
      if (i >= at->size()) return nullptr;
      at = &(*at)[i];
    } else {
      return nullptr;
    }
    start = dot + 1;
  }
  return at;
}

std::string worker_prompt(const AttemptSpec& spec) {
  std::string out = spec.goal;
  auto add_section = [&out](const std::string& text) {
    if (text.empty()) return;
    if (!out.empty()) out += "\n\n";
    out += text;
  };
  if (spec.inputs.is_object()) {
    if (auto it = spec.inputs.find("prompt"); it != spec.inputs.end()) add_section(worker_input_text(*it));
    std::string rest;
    for (const auto& [name, value] : spec.inputs.items()) {
      if (name == "prompt" || name == "model") continue;
      rest += fmt::format("{}### {}\n{}", rest.empty() ? "" : "\n\n", name, worker_input_text(value));
    }
    if (!rest.empty()) add_section("## Inputs\n\n" + rest);
  }
  if (!spec.previous_failure.empty())
    add_section("## The previous attempt failed\n\nFix this and try again:\n" + spec.previous_failure);
  return out;
}

bool worker_needs_prompt_file(const WorkerConfig& worker) {
  if (worker.prompt_on_stdin) return true;
  for (const auto& a : worker.argv)
    if (a.find("{prompt_file}") != std::string::npos) return true;
  return false;
}

fs::path worker_prompt_file(const AttemptSpec& spec) {
  // Beside the attempt's output files (<store>/runs/<run>/<step>.<n>.stdout).
  const std::string name = fmt::format("{}.{}.prompt", spec.step_id, spec.attempt);
  if (!spec.stdout_path.empty()) return spec.stdout_path.parent_path() / name;
  return fs::temp_directory_path() / fmt::format("orch-{}-{}", spec.run_id, name);
}

std::vector<std::string> fill_worker_argv(const WorkerConfig& worker, const AttemptSpec& spec) {
  std::string model = worker.model;
  if (spec.inputs.is_object())
    if (auto it = spec.inputs.find("model"); it != spec.inputs.end() && it->is_string())
      model = it->get<std::string>();
  const std::string prompt = worker_prompt(spec);
  std::vector<std::string> argv;
  for (const auto& a : worker.argv) {
    // One pass per slot, over orch's template only: a filled value is never re-scanned.
    std::string filled;
    for (std::size_t i = 0; i < a.size();) {
      auto slot = [&](const char* name, const std::string& value) {
        std::string token = fmt::format("{{{}}}", name);
        if (a.compare(i, token.size(), token) != 0) return false;
        filled += value;
        i += token.size();
        return true;
      };
      if (slot("prompt", prompt) || slot("prompt_file", worker_prompt_file(spec).string()) ||
          slot("workspace", spec.workspace.string()) || slot("model", model))
        continue;
      filled += a[i++];
    }
    argv.push_back(std::move(filled));
  }
  return argv;
}

std::optional<std::string> worker_not_runnable(const WorkerConfig& worker, const char* path) {
  if (worker.argv.empty() || worker.argv[0].find('{') != std::string::npos) return std::nullopt;
  if (path == nullptr) {
    path = std::getenv("PATH");
    for (const auto& [name, value] : worker.env)
      if (name == "PATH") path = value.c_str();
  }
  auto why = program_not_runnable(worker.argv[0], path);
  if (!why) return std::nullopt;
  return fmt::format("worker '{}': {}", worker.name, *why);
}

std::optional<std::string> WorkerExecutor::setup_problem(const Step& step) const {
  const WorkerConfig* worker = catalog_->find(step.executor);
  if (!worker) return std::nullopt;  // check_step says so
  // A PATH the step sets for itself, when it is plain text (not a template).
  const char* path = nullptr;
  if (auto it = step.env.find("PATH"); it != step.env.end() && it->second.find("${") == std::string::npos)
    path = it->second.c_str();
  return worker_not_runnable(*worker, path);
}

WorkerExecutor::WorkerExecutor(std::shared_ptr<const WorkerCatalog> catalog) : catalog_(std::move(catalog)) {}

void WorkerExecutor::check_step(const Step& step, Diagnostics& out) const {
  auto problem = [&](std::string_view field, std::string message) {
    out.push_back(step_diagnostic(step, {field}, std::move(message)));
  };
  if (!catalog_->find(step.executor)) {
    std::vector<std::string> names;
    for (const auto& [name, w] : catalog_->workers) names.push_back(name);
    std::string name = step.executor.substr(step.executor.find(':') + 1);
    if (names.empty())
      problem("executor",
              fmt::format("no workers are configured for '{}': pass --workers FILE, or put one at "
                          ".orch/workers.yaml (docs/workers.md)",
                          step.executor));
    else
      problem("executor", fmt::format("no worker '{}' in the workers file (workers: {}){}", name,
                                      join(names, ", "), did_you_mean(name, names)));
  }
  if (trim(step.goal).empty() && !(step.inputs.is_object() && step.inputs.contains("prompt")))
    problem("executor", "a worker step needs a 'goal' or inputs.prompt: it is the worker's task");
  if (!step.run.empty() || step.sh)
    problem(step.sh ? "sh" : "run",
            "a worker step takes no 'run' or 'sh': the "
            "command comes from the workers file");
}

std::vector<Postcondition> WorkerExecutor::default_post() const {
  Postcondition exit_zero, nonempty;
  exit_zero.kind = PostKind::ExitZero;
  nonempty.kind = PostKind::ResultNonempty;
  return {exit_zero, nonempty};
}

SpendEstimate WorkerExecutor::estimate(const Step& step) const {
  SpendEstimate e;
  const WorkerConfig* worker = catalog_->find(step.executor);
  if (worker && worker->reserve_tokens) {
    e.tokens = *worker->reserve_tokens;
    return e;
  }
  const std::size_t bytes = step.goal.size() + (step.inputs.is_object() ? step.inputs.dump().size() : 0);
  e.tokens = static_cast<std::int64_t>(bytes / 4) + 1;
  return e;
}

std::string WorkerExecutor::describe(const AttemptSpec& spec) const {
  const WorkerConfig* worker = catalog_->find(spec.executor);
  if (!worker) return Executor::describe(spec);
  std::string out;
  for (const auto& a : fill_worker_argv(*worker, spec)) out += (out.empty() ? "" : " ") + shell_quote(a);
  // A prompt that goes by file is shown too: it is what the worker is asked to do.
  if (worker_needs_prompt_file(*worker))
    out += fmt::format("\nprompt ({}):\n{}",
                       worker->prompt_on_stdin ? "on its standard input" : "in {prompt_file}",
                       worker_prompt(spec));
  return out;
}

Expected<std::unique_ptr<RunningAttempt>> WorkerExecutor::start(const AttemptSpec& spec, EventLoop& loop,
                                                                DoneCallback done) {
  const WorkerConfig* worker = catalog_->find(spec.executor);
  if (!worker)
    return fail(ErrorCode::InvalidInput, fmt::format("no worker for executor '{}'", spec.executor));
  // The worker's CLI not being there is its set-up, not the work: no attempt could
  // pass until a person installs it (or fixes the workers file), so it is not retried.
  const char* path = nullptr;
  for (const auto& [name, value] : spec.env)
    if (name == "PATH") path = value.c_str();
  if (auto why = worker_not_runnable(*worker, path))
    return refused_attempt(*why, loop, std::move(done), AttemptEnding::SetupFailed);
  // Linux takes at most 128 KiB in one argument: a longer prompt in {prompt}
  // cannot start, whatever the retry; the workers file must pass it another way.
  // (MAX_ARG_STRLEN: 32 pages, less the terminating NUL; subprocess.cc checks the same.)
  const std::size_t kMaxArgument = 32 * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) - 1;
  for (const auto& a : fill_worker_argv(*worker, spec))
    if (a.size() > kMaxArgument)
      return refused_attempt(
          fmt::format(
              "worker '{}': its prompt makes an argument of {} bytes, more than the {} Linux passes in "
              "one; give the worker the prompt as a file ({{prompt_file}} in argv) or on its standard "
              "input (stdin: prompt), docs/workers.md",
              worker->name, a.size(), kMaxArgument),
          loop, std::move(done), AttemptEnding::SetupFailed);
  auto attempt = std::make_unique<WorkerAttempt>(*worker, spec, loop, std::move(done));
  ORCH_TRY(attempt->begin(shell_, spec));
  return std::unique_ptr<RunningAttempt>(std::move(attempt));
}

}  // namespace orch
