#include "exec/shell_executor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "exec/output_sink.h"
#include "exec/subprocess.h"
#include "exec/usage_figures.h"
#include "orch/workspace.h"
#include "util/strings.h"

namespace orch {
namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

namespace {

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

enum class ReadStatus { Ok, Missing, TooLarge, NotAFile, Escapes, Failed };

// Reads at most `cap` bytes of `path`; TooLarge when it holds more. Only a
// regular file is read (NotAFile otherwise): O_NONBLOCK, so that a named pipe
// the step left there cannot block orch in open(); O_NOFOLLOW, since the paths
// given are resolved already (a symlink now is one swapped in since).
ReadStatus read_capped(const fs::path& path, std::int64_t cap, std::string& out, int& err) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    err = errno;
    return err == ENOENT ? ReadStatus::Missing : ReadStatus::Failed;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return ReadStatus::NotAFile;
  }
  char buffer[64 * 1024];
  ReadStatus status = ReadStatus::Ok;
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      status = ReadStatus::Failed;
      break;
    }
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    if (static_cast<std::int64_t>(out.size()) > cap) {
      status = ReadStatus::TooLarge;
      break;
    }
  }
  ::close(fd);
  return status;
}

class ShellAttempt final : public RunningAttempt {
 public:
  ShellAttempt(const AttemptSpec& spec, EventLoop& loop, Executor::DoneCallback done)
      : loop_(loop),
        done_(std::move(done)),
        started_(SteadyClock::now()),
        workspace_(spec.workspace),
        usage_path_(spec.usage_path),
        output_file_(spec.output_file),
        max_output_(spec.max_output),
        kill_grace_(spec.kill_grace),
        secrets_(spec.secrets),
        stdout_(spec.stdout_path, spec.max_output, true, secrets_.get()),
        stderr_(spec.stderr_path, spec.max_output, false, secrets_.get()) {
    if (secrets_ && !secrets_->empty()) {
      tail_stdout_.emplace(*secrets_);
      tail_stderr_.emplace(*secrets_);
    }
  }

  ~ShellAttempt() override { loop_.cancel_timer(timeout_timer_); }

  std::int64_t output_bytes() const override { return stdout_.total_bytes() + stderr_.total_bytes(); }

  void begin(const AttemptSpec& spec) {
    Subprocess::Options options;
    options.argv = spec.argv;
    options.env = spec.env;
    options.cwd = spec.workspace;
    options.stdin_file = spec.stdin_path;
    Subprocess::Handlers handlers;
    handlers.on_stdout = [this](std::string_view bytes) {
      stdout_.append(bytes);
      tail_.append(tail_stdout_ ? tail_stdout_->push(bytes) : std::string(bytes));
    };
    handlers.on_stderr = [this](std::string_view bytes) {
      stderr_.append(bytes);
      tail_.append(tail_stderr_ ? tail_stderr_->push(bytes) : std::string(bytes));
    };
    handlers.on_exit = [this](ProcessExit exit) { on_exit(std::move(exit)); };
    auto process = Subprocess::start(options, loop_, std::move(handlers));
    if (!process) {
      // Reported from the loop, never from inside start(); skipped if the attempt is gone.
      std::string message = process.error().message;
      loop_.defer([this, alive = std::weak_ptr<bool>(alive_), message = std::move(message)] {
        if (alive.expired()) return;
        AttemptOutcome outcome;
        outcome.ending = AttemptEnding::SpawnFailed;
        outcome.message = message;
        apply_stop(outcome);
        report(std::move(outcome));
      });
      return;
    }
    process_ = std::move(*process);
    if (spec.timeout) {
      auto timeout = *spec.timeout;
      timeout_timer_ = loop_.add_timer(timeout, [this, timeout] {
        timeout_timer_ = 0;
        stop(Stop::TimedOut, fmt::format("timed out after {}", format_duration(timeout)));
      });
    }
  }

  void cancel(const std::string& reason) override { stop(Stop::Cancelled, reason); }
  int process_group() const override { return process_ ? static_cast<int>(process_->pid()) : 0; }

 private:
  enum class Stop { None, TimedOut, Cancelled };

  void stop(Stop why, std::string message) {
    if (reported_ || stop_ != Stop::None) return;
    stop_ = why;
    stop_message_ = std::move(message);
    loop_.cancel_timer(timeout_timer_);
    timeout_timer_ = 0;
    if (process_) process_->terminate(kill_grace_);
  }

  // A timeout or cancel overrides how the process itself ended.
  void apply_stop(AttemptOutcome& outcome) const {
    if (stop_ == Stop::None) return;
    outcome.ending = stop_ == Stop::TimedOut ? AttemptEnding::TimedOut : AttemptEnding::Cancelled;
    outcome.message = stop_message_;
  }

  void on_exit(ProcessExit exit) {
    loop_.cancel_timer(timeout_timer_);
    timeout_timer_ = 0;
    stdout_.finish();
    stderr_.finish();
    if (tail_stdout_) tail_.append(tail_stdout_->finish(false));
    if (tail_stderr_) tail_.append(tail_stderr_->finish(false));

    AttemptOutcome outcome;
    outcome.output_tail = tail_.text();
    outcome.stdout_bytes = stdout_.total_bytes();
    outcome.stderr_bytes = stderr_.total_bytes();
    outcome.stdout_truncated = stdout_.truncated();
    outcome.stderr_truncated = stderr_.truncated();
    outcome.exit_code = exit.signaled ? -1 : exit.code;
    outcome.signal = exit.signaled ? exit.signal : 0;
    if (exit.signaled) {
      outcome.ending = AttemptEnding::Signaled;
      outcome.message = fmt::format("killed by {}", signal_name(exit.signal));
    } else {
      outcome.ending = AttemptEnding::Exited;
      if (exit.code != 0) outcome.message = fmt::format("exited with code {}", exit.code);
    }
    apply_stop(outcome);

    // Output past max_output is cut from the log with a marker; the result is
    // what the step printed within the cap, never the marker.
    if (!output_file_) outcome.result = trim_one_newline(stdout_.kept_stream());
    if (outcome.ending == AttemptEnding::Exited) {
      settle_exited(outcome);
    } else {
      charge_usage(outcome);
    }
    if (secrets_ && output_file_) outcome.result = secrets_->mask(outcome.result);
    report(std::move(outcome));  // last: may destroy *this
  }

  // What only matters when the process ran to completion: the output file and
  // whether its output could be saved (and, as for any ending, the usage file).
  void settle_exited(AttemptOutcome& outcome) const {
    auto fail_with = [&outcome](std::string message) {
      outcome.ending = AttemptEnding::Error;
      outcome.message = std::move(message);
    };
    if (output_file_) {
      // Resolved now, symlinks included: a link the step made to outside the
      // workspace is refused, not read.
      auto resolved = resolve_in_workspace(workspace_, output_file_->string());
      const fs::path path = resolved ? *resolved : fs::path();
      int err = 0;
      switch (!resolved ? ReadStatus::Escapes : read_capped(path, max_output_, outcome.result, err)) {
        case ReadStatus::Escapes:
          outcome.result.clear();
          fail_with(fmt::format("output file: {}", resolved.error().message));
          break;
        case ReadStatus::Ok:
          break;
        case ReadStatus::Missing:
          outcome.result.clear();
          // A failed exit is the better reason; only a clean exit without the file is an error.
          if (outcome.exit_code == 0)
            fail_with(fmt::format("the step did not write its output file '{}'", path.string()));
          break;
        case ReadStatus::TooLarge:
          outcome.result.clear();
          fail_with(fmt::format("output file '{}' is larger than max_output ({} bytes)", path.string(),
                                max_output_));
          break;
        case ReadStatus::NotAFile:
          outcome.result.clear();
          fail_with(fmt::format("output file '{}' is not a regular file", path.string()));
          break;
        case ReadStatus::Failed:
          outcome.result.clear();
          fail_with(fmt::format("cannot read output file '{}': {}", path.string(), std::strerror(err)));
          break;
      }
    }
    charge_usage(outcome);
    for (const OutputSink* sink : {&stdout_, &stderr_}) {
      if (outcome.ending == AttemptEnding::Exited && !sink->error().empty()) {
        fail_with(fmt::format("cannot save the step's output: {}", sink->error()));
      }
    }
  }

  // What the step reported spending in its usage file, however it ended: a step
  // killed at its timeout, cancelled or killed by a signal may well have paid for
  // its calls already, and the budgets must hear of it. A file that cannot be read
  // fails a step that exited; one that was stopped keeps its ending, and its
  // message says the report was not charged.
  void charge_usage(AttemptOutcome& outcome) const {
    if (usage_path_.empty()) return;
    auto usage = read_usage_file(usage_path_);
    if (usage) {
      if (*usage) {
        outcome.tokens_in = (*usage)->tokens_in;
        outcome.tokens_out = (*usage)->tokens_out;
        outcome.cost_usd = (*usage)->cost_usd;
      }
      return;
    }
    if (outcome.ending == AttemptEnding::Exited) {
      outcome.ending = AttemptEnding::Error;
      outcome.message = usage.error().message;
    } else {
      outcome.message +=
          fmt::format("{}not charged: {}", outcome.message.empty() ? "" : "; ", usage.error().message);
    }
  }

  void report(AttemptOutcome outcome) {
    reported_ = true;
    outcome.duration = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started_);
    Executor::DoneCallback done = std::move(done_);
    done(std::move(outcome));  // last: the engine may destroy *this
  }

  EventLoop& loop_;
  Executor::DoneCallback done_;
  SteadyClock::time_point started_;
  fs::path workspace_;
  fs::path usage_path_;
  std::optional<fs::path> output_file_;
  std::int64_t max_output_;
  std::chrono::milliseconds kill_grace_;
  std::shared_ptr<const SecretMasker> secrets_;  // before the sinks, which point into it
  OutputSink stdout_;
  OutputSink stderr_;
  OutputTail tail_;
  std::optional<MaskingStream> tail_stdout_;  // the tail's own maskers: it outlives the sinks' caps
  std::optional<MaskingStream> tail_stderr_;
  Stop stop_ = Stop::None;
  std::string stop_message_;
  bool reported_ = false;
  EventLoop::TimerId timeout_timer_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the deferred spawn failure
  std::unique_ptr<Subprocess> process_;                         // last member: destroyed (group killed) first
};

}  // namespace

void ShellExecutor::check_step(const Step&, Diagnostics&) const {}

std::vector<Postcondition> ShellExecutor::default_post() const {
  Postcondition exit_zero;
  exit_zero.kind = PostKind::ExitZero;
  return {exit_zero};
}

Expected<std::unique_ptr<RunningAttempt>> ShellExecutor::start(const AttemptSpec& spec, EventLoop& loop,
                                                               DoneCallback done) {
  auto attempt = std::make_unique<ShellAttempt>(spec, loop, std::move(done));
  attempt->begin(spec);
  return std::unique_ptr<RunningAttempt>(std::move(attempt));
}

Expected<std::optional<UsageReport>> read_usage_file(const fs::path& path) {
  std::string text;
  int err = 0;
  switch (read_capped(path, 1024 * 1024, text, err)) {
    case ReadStatus::Ok:
      break;
    case ReadStatus::Missing:
      return std::optional<UsageReport>{};
    case ReadStatus::TooLarge:
      return fail(ErrorCode::InvalidInput, fmt::format("usage file '{}' is over 1 MiB", path.string()));
    case ReadStatus::NotAFile:
    case ReadStatus::Escapes:
      return fail(ErrorCode::InvalidInput,
                  fmt::format("usage file '{}' is not a regular file", path.string()));
    case ReadStatus::Failed:
      return fail(ErrorCode::Io,
                  fmt::format("cannot read usage file '{}': {}", path.string(), std::strerror(err)));
  }
  // An empty file reports nothing, as no file does (a step made it and spent nothing).
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return std::optional<UsageReport>{};
  nlohmann::json doc;
  std::vector<std::string> keys;  // the top object's, in order, repeats included
  try {
    doc =
        nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& key) {
          if (event == nlohmann::json::parse_event_t::key && depth == 1 && key.is_string())
            keys.push_back(key.get<std::string>());
          return true;
        });
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (auto bracket = what.find("] "); bracket != std::string::npos) what = what.substr(bracket + 2);
    return fail(ErrorCode::InvalidInput,
                fmt::format("usage file '{}' is not valid JSON: {}", path.string(), what));
  }
  auto bad = [&path](const std::string& problem) {
    return fail(ErrorCode::InvalidInput, fmt::format("usage file '{}': {}", path.string(), problem));
  };
  if (!doc.is_object())
    return bad("expected a JSON object like {\"tokens_in\":0,\"tokens_out\":0,\"cost_usd\":0}");
  // A misspelt key would leave the budget blind to what the step spent.
  const std::vector<std::string> known{"tokens_in", "tokens_out", "cost_usd"};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].starts_with("x-")) continue;  // notes, as in a plan
    if (std::find(known.begin(), known.end(), keys[i]) == known.end())
      return bad(fmt::format(
          "unknown key \"{}\"{} (it takes tokens_in, tokens_out, cost_usd and notes under x- keys)",
          quote_for_message(keys[i], 40), did_you_mean(keys[i], known)));
    if (std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i), keys[i]) !=
        keys.begin() + static_cast<std::ptrdiff_t>(i))
      return bad(fmt::format("\"{}\" is written twice", keys[i]));
  }
  UsageReport usage;
  for (auto [key, field] :
       {std::pair{"tokens_in", &usage.tokens_in}, std::pair{"tokens_out", &usage.tokens_out}}) {
    auto it = doc.find(key);
    if (it == doc.end()) continue;
    auto count = token_count(*it);
    if (!count) return bad(fmt::format("\"{}\" = {}: {}", key, it->dump(), count.error().message));
    *field = *count;
  }
  if (auto it = doc.find("cost_usd"); it != doc.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      return bad(fmt::format("\"cost_usd\" must be a non-negative number, not {}", it->dump()));
    }
    usage.cost_usd = it->get<double>();
  }
  return std::optional<UsageReport>(usage);
}

std::string trim_one_newline(std::string text) {
  if (text.ends_with("\r\n")) {
    text.resize(text.size() - 2);
  } else if (text.ends_with('\n')) {
    text.pop_back();
  }
  return text;
}

std::string format_duration(std::chrono::milliseconds duration) {
  auto ms = duration.count();
  if (ms >= 1000 && ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

}  // namespace orch
