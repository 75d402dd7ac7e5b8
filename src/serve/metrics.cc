// GET /metrics: the ledger in Prometheus's text format. See metrics.h.
#include "serve/metrics.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace orch::serve {

namespace {

// The upper bounds of orch_attempt_duration_seconds's buckets (+Inf after).
constexpr std::array<double, 12> kDurationBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    10,  60};

// A label value as the format wants it: backslash, quote and newline escaped.
std::string label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// A sample value: integers as integers, the rest exactly enough to read back.
std::string number(double v) {
  return fmt::format("{}", v);
}

class Exposition {
 public:
  // # HELP and # TYPE of a metric family, once, before its samples.
  void family(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(std::string_view name, const std::string& labels, double value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " " + number(value) + "\n";
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string reason_class(const AttemptRecord& a) {
  if (a.status == AttemptStatus::Failed && a.ending == AttemptEnding::Exited && a.exit_code == 0)
    return "postcondition";
  if (a.status == AttemptStatus::Succeeded) return "none";
  if (a.status == AttemptStatus::Interrupted) return "interrupted";
  return attempt_ending_name(a.ending);
}

Expected<std::string> render_metrics(Store& store, const Clock& clock,
                                     const std::vector<distrib::WorkerRow>* workers) {
  const std::vector<RunRecord> runs = ORCH_TRY(store.list_runs());
  std::map<std::string, int> runs_by_status;
  std::map<std::string, long> steps_by_status;
  std::map<std::pair<std::string, std::string>, long> attempts_by_outcome;
  // By run, executor, provider and model: what each spent (tokens, cost).
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::pair<std::int64_t, double>>
      spent;
  std::array<long, kDurationBuckets.size()> buckets{};
  std::array<long, kDurationBuckets.size()> step_buckets{};
  long steps_timed = 0;
  double step_seconds = 0;
  long durations = 0, running = 0, stalls = 0, pending_approvals = 0;
  double duration_sum = 0;
  Exposition x;
  std::string headroom;  // its samples, written after the others' families

  for (const char* status : {"running", "succeeded", "failed", "cancelled", "budget_exhausted", "escalated",
                             "interrupted", "awaiting_approval"})
    runs_by_status[status] = 0;
  for (const RunRecord& run : runs) {
    ++runs_by_status[run_status_name(run.status)];
    std::map<std::string, std::string> executor_of;
    for (const StepRecord& s : ORCH_TRY(store.steps(run.id))) {
      ++steps_by_status[step_status_name(s.status)];
      // A step that ended after running: how long its attempts took, summed.
      if ((s.status == StepStatus::Done || s.status == StepStatus::Failed) && s.last_attempt > 0) {
        const double seconds = static_cast<double>(s.wall_ms) / 1000.0;
        for (std::size_t i = 0; i < kDurationBuckets.size(); ++i)
          if (seconds <= kDurationBuckets[i]) ++step_buckets[i];
        ++steps_timed;
        step_seconds += seconds;
      }
      if (s.status == StepStatus::AwaitingApproval) ++pending_approvals;
      executor_of[s.step_id] = s.executor;
    }
    for (const AttemptRecord& a : ORCH_TRY(store.attempts(run.id))) {
      if (a.status == AttemptStatus::Running) {
        ++running;
      } else {
        ++attempts_by_outcome[{attempt_status_name(a.status), reason_class(a)}];
        if (a.status == AttemptStatus::Stalled) ++stalls;
        const double seconds = static_cast<double>(a.duration_ms) / 1000.0;
        for (std::size_t i = 0; i < kDurationBuckets.size(); ++i)
          if (seconds <= kDurationBuckets[i]) ++buckets[i];
        ++durations;
        duration_sum += seconds;
      }
      // "PROVIDER/MODEL" (ledger v15); "" for an attempt that called no model.
      const std::size_t slash = a.model.find('/');
      const std::string provider = slash == std::string::npos ? "" : a.model.substr(0, slash);
      const std::string model = slash == std::string::npos ? a.model : a.model.substr(slash + 1);
      auto& [tokens, cost] = spent[{run.id, executor_of[a.step_id], provider, model}];
      tokens += a.tokens_in + a.tokens_out;
      cost += a.cost_usd;
    }
    if (run.status != RunStatus::Running) continue;
    // Headroom: what is left of each limit the plan set.
    auto limits = nlohmann::json::parse(run.budget_json, nullptr, false);
    if (!limits.is_object()) continue;
    const AttemptTotals totals = ORCH_TRY(store.attempt_totals(run.id));
    const std::string id = label(run.id);
    auto left = [&](const char* resource, double limit, double used) {
      headroom += fmt::format("orch_budget_headroom{{run=\"{}\",resource=\"{}\"}} {}\n", id, resource,
                              number(limit - used));
    };
    if (limits.contains("tokens"))
      left("tokens", limits["tokens"].get<double>(), static_cast<double>(totals.tokens));
    if (limits.contains("cost_usd")) left("cost_usd", limits["cost_usd"].get<double>(), totals.cost_usd);
    if (limits.contains("attempts"))
      left("attempts", limits["attempts"].get<double>(), static_cast<double>(totals.counted));
    if (limits.contains("wall_ms")) {
      const double wall_ms =
          static_cast<double>(std::max<std::int64_t>(run.spent_wall_ms, clock.wall_ms() - run.created_at));
      left("wall_seconds", limits["wall_ms"].get<double>() / 1000.0, wall_ms / 1000.0);
    }
  }

  x.family("orch_runs", "gauge", "Runs in the ledger, by status.");
  for (const auto& [status, n] : runs_by_status)
    x.sample("orch_runs", fmt::format("status=\"{}\"", status), n);
  x.family("orch_steps", "gauge", "Steps of every run in the ledger, by status.");
  for (const auto& [status, n] : steps_by_status)
    x.sample("orch_steps", fmt::format("status=\"{}\"", status), static_cast<double>(n));
  x.family("orch_attempts_total", "counter",
           "Finished attempts, by outcome (their status) and reason class (how they ended).");
  for (const auto& [key, n] : attempts_by_outcome)
    x.sample("orch_attempts_total", fmt::format("outcome=\"{}\",reason_class=\"{}\"", key.first, key.second),
             static_cast<double>(n));
  x.family("orch_attempts_running", "gauge", "Attempts running now.");
  x.sample("orch_attempts_running", "", static_cast<double>(running));
  const auto spend_labels = [](const auto& key) {
    return fmt::format("run=\"{}\",executor=\"{}\",provider=\"{}\",model=\"{}\"", label(std::get<0>(key)),
                       label(std::get<1>(key)), label(std::get<2>(key)), label(std::get<3>(key)));
  };
  x.family("orch_tokens_total", "counter",
           "Tokens spent (input and output), by run, executor, and the provider and model called.");
  for (const auto& [key, value] : spent)
    x.sample("orch_tokens_total", spend_labels(key), static_cast<double>(value.first));
  x.family("orch_cost_usd_total", "counter",
           "Cost spent in US dollars, by run, executor, and the provider and model called.");
  for (const auto& [key, value] : spent) x.sample("orch_cost_usd_total", spend_labels(key), value.second);
  x.family("orch_budget_headroom", "gauge",
           "What is left of each budget limit of a running run (tokens, cost_usd, attempts, wall_seconds).");
  std::string text = x.take() + headroom;
  Exposition h;
  h.family("orch_attempt_duration_seconds", "histogram", "How long finished attempts took.");
  for (std::size_t i = 0; i < kDurationBuckets.size(); ++i)
    h.sample("orch_attempt_duration_seconds_bucket", fmt::format("le=\"{}\"", number(kDurationBuckets[i])),
             static_cast<double>(buckets[i]));
  h.sample("orch_attempt_duration_seconds_bucket", "le=\"+Inf\"", static_cast<double>(durations));
  h.sample("orch_attempt_duration_seconds_sum", "", duration_sum);
  h.sample("orch_attempt_duration_seconds_count", "", static_cast<double>(durations));
  h.family("orch_step_duration_seconds", "histogram",
           "How long finished steps (done or failed) took: their attempts' durations summed.");
  for (std::size_t i = 0; i < kDurationBuckets.size(); ++i)
    h.sample("orch_step_duration_seconds_bucket", fmt::format("le=\"{}\"", number(kDurationBuckets[i])),
             static_cast<double>(step_buckets[i]));
  h.sample("orch_step_duration_seconds_bucket", "le=\"+Inf\"", static_cast<double>(steps_timed));
  h.sample("orch_step_duration_seconds_sum", "", step_seconds);
  h.sample("orch_step_duration_seconds_count", "", static_cast<double>(steps_timed));
  h.family("orch_stalls_total", "counter", "Attempts stopped for making no progress.");
  h.sample("orch_stalls_total", "", static_cast<double>(stalls));
  h.family("orch_approvals_pending", "gauge", "Steps waiting for a person's approval.");
  h.sample("orch_approvals_pending", "", static_cast<double>(pending_approvals));
  if (workers != nullptr) {
    long live = 0, gone = 0, slots = 0, leases = 0;
    for (const distrib::WorkerRow& w : *workers) {
      if (w.live) {
        ++live;
        slots += w.slots;
      } else if (w.stopped_at == 0) {
        ++gone;  // stopped heartbeating without saying it stopped
      }
      leases += static_cast<long>(w.running.size());
    }
    h.family("orch_workers", "gauge", "Registered orch workers: live, or gone (silent past their lease).");
    h.sample("orch_workers", "state=\"live\"", static_cast<double>(live));
    h.sample("orch_workers", "state=\"gone\"", static_cast<double>(gone));
    h.family("orch_worker_slots", "gauge", "The live workers' slots.");
    h.sample("orch_worker_slots", "", static_cast<double>(slots));
    h.family("orch_leases", "gauge", "Attempts claimed by a worker under a lease now.");
    h.sample("orch_leases", "", static_cast<double>(leases));
  }
  return text + h.take();
}

}  // namespace orch::serve
