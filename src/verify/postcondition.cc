// verify/postcondition.cc — evaluate_post(): dispatch, and the checks on how the
// attempt ended and on its result text. result_json lives in result_json_check.cc,
// the file checks in file_checks.cc.
//
// exit_zero runs once per attempt at thousands of attempts a second, so it does no
// more than build its reason; result_matches keeps compiled patterns per thread.
#include "orch/postcondition.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <string>
#include <unordered_map>

#include "util/regex.h"
#include "verify/check_text.h"
#include "verify/postcondition_internal.h"

namespace orch {

namespace {

using detail::byte_count;
using detail::in_quotes;
using detail::one_line;

// Reasons are stored as one line of valid UTF-8; long ones (many schema
// violations) are cut here.
constexpr std::size_t kReasonLimit = 1000;

CheckResult held(std::string reason) { return {PostKind::None, true, std::move(reason)}; }
CheckResult failed(std::string reason) { return {PostKind::None, false, std::move(reason)}; }

std::string signal_text(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return fmt::format("signal {}", signal);
  return fmt::format("signal {} (SIG{})", signal, abbrev);
}

CheckResult check_exit_zero(const AttemptOutcome& outcome) {
  const std::string& message = outcome.message;
  switch (outcome.ending) {
    case AttemptEnding::Exited:
      if (outcome.exit_code == 0) return held("exit_zero: exited with code 0");
      return failed(fmt::format("exit_zero: exited with code {}{}", outcome.exit_code,
                                failure_output_suffix(outcome.output_tail)));
    case AttemptEnding::Signaled:
      return failed("exit_zero: killed by " + signal_text(outcome.signal) +
                    failure_output_suffix(outcome.output_tail));
    case AttemptEnding::TimedOut:
      // The executor's message says how long ("timed out after 2s").
      if (message.starts_with("timed out")) return failed("exit_zero: " + message);
      return failed(message.empty() ? "exit_zero: timed out" : "exit_zero: timed out: " + message);
    case AttemptEnding::Stalled:
      return failed(message.empty() ? "exit_zero: stalled" : "exit_zero: " + message);
    case AttemptEnding::Cancelled:
      return failed(message.empty() ? "exit_zero: cancelled" : "exit_zero: cancelled: " + message);
    case AttemptEnding::SpawnFailed:
      return failed("exit_zero: could not start: " + (message.empty() ? std::string("unknown error") : message));
    case AttemptEnding::Error:
      // A process that exited non-zero before its executor found fault with it
      // (a tool whose contract it broke): what it printed is the cause.
      return failed((message.empty() ? "exit_zero: the executor failed" : "exit_zero: " + message) +
                    (outcome.exit_code > 0 ? failure_output_suffix(outcome.output_tail) : std::string()));
    case AttemptEnding::SetupFailed:
      return failed("exit_zero: set-up failure: " +
                    (message.empty() ? std::string("unknown cause") : message));
    case AttemptEnding::Interrupted:
      return failed(message.empty() ? "exit_zero: interrupted" : "exit_zero: interrupted: " + message);
  }
  return failed("exit_zero: unknown attempt ending");
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

CheckResult check_result_nonempty(const AttemptOutcome& outcome) {
  const std::string& result = outcome.result;
  if (result.empty())
    return failed("result_nonempty: the result is empty" + detail::truncation_note(outcome));
  for (char c : result)
    if (!is_space(c)) return held("result_nonempty: " + byte_count(result.size()));
  return failed(fmt::format("result_nonempty: the result is only whitespace ({})", byte_count(result.size())));
}

CheckResult check_result_contains(const Postcondition& post, const AttemptOutcome& outcome) {
  std::string expected = in_quotes(post.text);
  if (outcome.result.find(post.text) != std::string::npos) {
    return held(fmt::format("result_contains {}: found", expected));
  }
  return failed(fmt::format("result_contains {}: not found in the result ({}){}", expected,
                            byte_count(outcome.result.size()), detail::truncation_note(outcome)));
}

// Compiling (and JIT-compiling) a pattern costs more than matching a short result,
// and a step's pattern is the same on every attempt. The cache is per thread, so
// it needs no lock; it is bounded by clearing it when full.
Expected<Regex> cached_regex(const std::string& pattern) {
  constexpr std::size_t kMaxCached = 64;
  thread_local std::unordered_map<std::string, Regex> cache;
  if (auto it = cache.find(pattern); it != cache.end()) return it->second;
  auto compiled = Regex::compile(pattern);
  if (!compiled) return compiled;
  if (cache.size() >= kMaxCached) cache.clear();
  cache.emplace(pattern, *compiled);
  return compiled;
}

CheckResult check_result_matches(const Postcondition& post, const AttemptOutcome& outcome) {
  auto regex = cached_regex(post.pattern);
  if (!regex) return failed("result_matches: " + regex.error().message);
  auto matched = regex->search(outcome.result);
  if (!matched) return failed("result_matches: " + matched.error().message);
  std::string expected = in_quotes(post.pattern);
  if (*matched) return held(fmt::format("result_matches {}: matched", expected));
  return failed(fmt::format("result_matches {}: no match in the result ({}){}", expected,
                            byte_count(outcome.result.size()), detail::truncation_note(outcome)));
}

CheckResult dispatch(const Postcondition& post, const CheckContext& ctx) {
  switch (post.kind) {
    case PostKind::None: return held("none: always holds");
    case PostKind::ShellZero: return failed("shell_zero must be run by the engine");
    case PostKind::FileExists:
      return detail::check_file_exists(post, ctx);
    case PostKind::FileContains:
      return detail::check_file_contains(post, ctx);
    default: break;
  }
  // The remaining kinds judge the attempt.
  if (ctx.outcome == nullptr) {
    return failed(fmt::format("{}: no attempt outcome to check", post_kind_name(post.kind)));
  }
  const AttemptOutcome& outcome = *ctx.outcome;
  switch (post.kind) {
    case PostKind::ExitZero: return check_exit_zero(outcome);
    case PostKind::ResultNonempty: return check_result_nonempty(outcome);
    case PostKind::ResultContains: return check_result_contains(post, outcome);
    case PostKind::ResultMatches: return check_result_matches(post, outcome);
    case PostKind::ResultJson:
      return detail::check_result_json(post, ctx);
    default: break;
  }
  return failed(fmt::format("{}: not a postcondition evaluate_post() can check", post_kind_name(post.kind)));
}

// True when `reason` is already one line of printable ASCII within the limit
// (the common case), so it needs no escaping pass.
bool is_plain(const std::string& reason) {
  if (reason.size() > kReasonLimit) return false;
  for (char c : reason) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

}  // namespace

namespace detail {

std::string truncation_note(const AttemptOutcome& outcome) {
  return outcome.stdout_truncated ? " (stdout was cut at max_output)" : "";
}

}  // namespace detail

CheckResult evaluate_post(const Postcondition& post, const CheckContext& ctx) {
  CheckResult result = dispatch(post, ctx);
  result.kind = post.kind;
  if (!is_plain(result.reason)) result.reason = one_line(result.reason, kReasonLimit);
  return result;
}

std::string failure_output_suffix(std::string_view tail) {
  constexpr std::size_t kMax = 300;
  while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.remove_suffix(1);
  if (tail.size() > kMax) {
    tail = tail.substr(tail.size() - kMax);
    if (auto nl = tail.find('\n'); nl != std::string_view::npos && nl + 1 < tail.size())
      tail.remove_prefix(nl + 1);
  }
  while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.front()))) tail.remove_prefix(1);
  return tail.empty() ? std::string() : "; output: " + one_line(tail, kMax);
}

}  // namespace orch
