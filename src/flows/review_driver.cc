#include "flows/review_driver.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "engine/phase_runner.h"
#include "flows/review_plans.h"
#include "flows/review_score.h"
#include "flows/stage_plan.h"
#include "util/atomic_file.h"
#include "util/iso_time.h"
#include "util/json_text.h"

namespace orch::flows::review_run_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const StepRecord* step_of(const Phase& p, const std::string& id) {
  for (const auto& s : p.steps)
    if (s.step_id == id) return &s;
  return nullptr;
}

int attempts_of(const Phase& p, const std::string& id) {
  int n = 0;
  for (const auto& a : p.attempts)
    if (a.step_id == id && a.counted) ++n;
  return n;
}

// Why a reviewer (or the judge) is recorded failed: the step's own reason when it
// failed, the parse error when it ended done but its answer could not be read.
std::string failure_of(const StepRecord* s, const Expected<ReviewOutput>& out) {
  if (s && s->status != StepStatus::Done && !s->reason.empty()) return s->reason;
  return out ? std::string() : out.error().message;
}

// Everything spent by the review's runs so far.
Expected<std::int64_t> spent_tokens(ReviewEnv& env, const std::string& id) {
  return owner_spent_tokens(*env.store, OwnerKind::Review, id);
}

std::vector<std::vector<Finding>> findings_of_rounds(const json& rounds) {
  std::vector<std::vector<Finding>> out;
  for (const auto& r : rounds) {
    std::vector<Finding> list;
    for (const auto& f : r["findings"])
      if (auto parsed = finding_from_json(f)) list.push_back(std::move(*parsed));
    out.push_back(std::move(list));
  }
  return out;
}

bool round_complete(const json& r) {
  const bool unchecked = r.contains("judge") && !r["judge"].value("unchecked", json::array()).empty();
  return r.value("failed_lenses", 0) == 0 && !unchecked;
}

// What track_rounds needs besides the findings: whether each round was complete
// and which ids were handed to the fixer after it (a fix that ran).
std::vector<RoundFacts> facts_of_rounds(const json& rounds) {
  std::vector<RoundFacts> out;
  for (const auto& r : rounds) {
    RoundFacts f;
    f.complete = round_complete(r);
    const auto status = parse_fix_status(r["fix"].value("status", std::string()));
    if (status == FixStatus::Applied || status == FixStatus::RolledBack)
      for (const auto& id : r["fix"]["to_fix"]) f.patched.insert(id.get<std::string>());
    out.push_back(std::move(f));
  }
  return out;
}

Expected<void> Driver::save() {
  const std::int64_t spent = ORCH_TRY(spent_tokens(env_, record_.id));
  doc_["tokens"] = {{"spent", spent}, {"cap", c_.spend_cap_tokens}};
  doc_["config"] = review_config_json(c_);
  // Findings with their history, escalations, score: recomputed from the rounds.
  const json& rounds = doc_["rounds"];
  const auto per_round = findings_of_rounds(rounds);
  std::map<std::string, json> findings;
  std::vector<std::string> order;
  for (std::size_t r = 0; r < per_round.size(); ++r) {
    for (const auto& f : per_round[r]) {
      json history = json::array();
      if (auto it = findings.find(f.id); it != findings.end())
        history = std::move(it->second["history"]);
      else
        order.push_back(f.id);
      const char* status = finding_standing_name(standing_of(f));
      history.push_back({{"round", r + 1}, {"severity", severity_name(f.severity)}, {"status", status}});
      json latest = finding_json(f);
      latest["history"] = std::move(history);
      findings[f.id] = std::move(latest);
    }
  }
  // "gone" is judged by the last complete round: one where a lens failed says
  // nothing about what is left.
  std::set<std::string> in_last;
  for (std::size_t r = per_round.size(); r-- > 0;) {
    if (!round_complete(rounds[r])) continue;
    for (const auto& f : per_round[r]) in_last.insert(f.id);
    break;
  }
  const RoundProgress p = progress();
  std::set<std::string> escalated;
  json esc = json::array();
  for (const auto& e : p.escalated) {
    escalated.insert(e.id);
    esc.push_back({{"id", e.id}, {"round", e.round}});
  }
  json list = json::array();
  for (const auto& id : order) {
    json f = std::move(findings[id]);
    f["state"] = escalated.contains(id) ? "escalated" : in_last.contains(id) ? "open" : "gone";
    list.push_back(std::move(f));
  }
  doc_["findings"] = std::move(list);
  doc_["escalations"] = std::move(esc);
  // The score is that of the last complete round (every lens ran, every claim
  // checked): a round in which a lens failed found nothing that can be scored,
  // and a review with no complete round has no score at all (null), never 100.
  doc_["score"] = nullptr;
  for (std::size_t r = per_round.size(); r-- > 0;) {
    if (!round_complete(rounds[r])) continue;
    const QualityScore score = quality_score(per_round[r], c_.rubric);
    json thresholds = json::object();
    for (const auto& [name, min] : c_.rubric.thresholds) thresholds[name] = min;
    doc_["score"] = {{"score", score.score},
                     {"band", score.band},
                     {"thresholds", thresholds},
                     {"round", static_cast<int>(r) + 1}};
    break;
  }
  record_.rounds = static_cast<int>(rounds.size());
  record_.verdict = rounds.empty() ? "" : rounds.back().value("verdict", std::string());
  doc_["status"] = review_status_name(record_.status);
  doc_["verdict"] = record_.verdict;
  record_.updated_at = env_.now_ms();
  doc_["updated_at"] = iso8601_utc(record_.updated_at, TimePrecision::Seconds);
  record_.doc_json = json_text(doc_);
  ORCH_TRY(env_.reviews->update_review(record_));
  // A copy for people and tools: .orch/reviews/ID.json and ID.md (the ledger stays the authority).
  const fs::path dir = env_.workspace / ".orch" / "reviews";
  std::error_code ec;
  fs::create_directories(dir, ec);
  ORCH_TRY(
      write_file_atomically(dir / (record_.id + ".json"), json_text(doc_, 2) + "\n", Durability::RenameOnly));
  ORCH_TRY(write_file_atomically(dir / (record_.id + ".md"), review_markdown(doc_), Durability::RenameOnly));
  return {};
}

// Runs the round's phase through the engine's phase runner: its run is found by
// its owner key (this review, the round, the phase), started, resumed, or
// resumed under a raised spend cap. nullopt: the review must pause (the outcome
// is in paused_).
Expected<std::optional<Phase>> Driver::phase(int round, const char* name,
                                             const std::function<ojson(std::int64_t)>& build) {
  const std::string run_name = phase_run_name(record_.id, round, name);
  EngineOptions eo;
  eo.workspace = env_.workspace;
  eo.executors = env_.executors;
  eo.handle_signals = env_.handle_signals;
  eo.ask_approval = env_.ask_approval;
  PhaseRunner runner(*env_.store, std::move(eo));
  PhaseRequest request;
  request.key = RunOwner{OwnerKind::Review, record_.id, round, name};
  request.tokens_left =
      c_.spend_cap_tokens - ORCH_TRY(owner_spent_tokens(*env_.store, OwnerKind::Review, record_.id));
  request.build = [&](std::int64_t left) -> Expected<BuiltPlan> {
    std::string text = json_text(build(left), 2);
    Plan plan = ORCH_TRY(load_built_plan(env_.workspace, *env_.executors, text, run_name,
                                         "the review's " + std::string(name) + " plan"));
    return BuiltPlan{std::move(plan), std::move(text)};
  };
  request.later_edits = later_edits_;
  request.who = fmt::format("review {}: the {} of round {}", record_.id, name, round);
  request.resume_command = fmt::format("orch review --resume {}", record_.id);
  request.on_note = [this](const std::string& line) { note(line); };
  request.on_start = [&](PhaseStart start, const std::string& run_id) {
    note(start == PhaseStart::ResumedUnderRaisedCap
             ? fmt::format("round {}: {}: resuming run {} under the raised spend cap", round, name, run_id)
         : start == PhaseStart::Resumed ? fmt::format("round {}: {}: resuming run {}", round, name, run_id)
                                        : fmt::format("round {}: {}", round, name));
  };
  const PhaseResult ran = ORCH_TRY(runner.run(request));
  Phase p;
  p.run_id = ran.run_id;
  p.status = ran.status;
  // A run the cap stopped under an earlier, lower cap (one raised, but not past
  // what was spent): its reason counts against that cap, not the one now.
  p.reason = ran.start == PhaseStart::Ended && ran.status == RunStatus::BudgetExhausted
                 ? "nothing is left of the spend cap"
                 : ran.reason;
  if (ran.start == PhaseStart::NoBudget) return std::optional<Phase>(std::move(p));
  // A phase that did not end, or that `orch cancel` stopped, pauses the review:
  // nothing of the phase is recorded and no further phase runs (a cancelled
  // reviewer must not make the round INCOMPLETE and the loop go on).
  if (ran.start != PhaseStart::Ended &&
      (p.status == RunStatus::Interrupted || p.status == RunStatus::AwaitingApproval ||
       p.status == RunStatus::Running || p.status == RunStatus::Cancelled)) {
    ReviewOutcome out;
    out.id = record_.id;
    out.status = ReviewStatus::Running;
    out.exit_code = exit_code_for(p.status);
    out.reason = p.status == RunStatus::AwaitingApproval
                     ? fmt::format("round {}: {}: {} (then `orch review --resume {}`)", round, name, p.reason,
                                   record_.id)
                 : p.status == RunStatus::Cancelled
                     ? fmt::format(
                           "cancelled in round {} ({}): run {} was cancelled (orch cancel); the review "
                           "stopped: to go on, `orch review --resume {}`",
                           round, name, p.run_id, record_.id)
                     : fmt::format("interrupted in round {} ({}): continue with `orch review --resume {}`",
                                   round, name, record_.id);
    doc_["rounds_in_progress"] = round;
    if (p.status == RunStatus::Cancelled) doc_["stop_reason"] = out.reason;
    ORCH_TRY(save());
    out.doc = doc_;
    paused_ = std::move(out);
    return std::optional<Phase>();
  }
  p.steps = ORCH_TRY(env_.store->steps(p.run_id));
  p.attempts = ORCH_TRY(env_.store->attempts(p.run_id));
  return std::optional<Phase>(std::move(p));
}

Expected<ReviewOutcome> Driver::stop(ReviewStatus status, const std::string& reason, int exit_code) {
  record_.status = status;
  doc_["stop_reason"] = reason;
  doc_.erase("rounds_in_progress");
  ORCH_TRY(save());
  note(fmt::format("review {}: {} ({})", record_.id, review_status_name(status), reason));
  ReviewOutcome out;
  out.id = record_.id;
  out.status = status;
  out.doc = doc_;
  out.exit_code = exit_code;
  out.reason = reason;
  return out;
}

Expected<ReviewOutcome> Driver::abandon(ReviewStatus was) {
  const int done = static_cast<int>(doc_["rounds"].size());
  const bool mid_round = doc_.contains("rounds_in_progress");
  return stop(
      ReviewStatus::Abandoned,
      fmt::format("abandoned by `orch review --abandon` ({}, {} round{} done{}); nothing more runs, and "
                  "the files are left as they are",
                  review_status_name(was), done, done == 1 ? "" : "s", mid_round ? ", one cut off" : ""),
      kExitSucceeded);
}

Expected<std::optional<ReviewOutcome>> Driver::spend_cap_stop(int round, const char* phase,
                                                              const std::string& why) {
  const std::int64_t spent = ORCH_TRY(spent_tokens(env_, record_.id));
  ReviewOutcome out = ORCH_TRY(
      stop(ReviewStatus::SpendCap,
           fmt::format("the spend cap of {} tokens was reached in round {} ({}) with {} spent: {}; raise it "
                       "with `orch review --resume {} --spend-cap N`",
                       c_.spend_cap_tokens, round, phase, spent, why, record_.id),
           kExitEscalated));
  return std::optional<ReviewOutcome>(std::move(out));
}

Expected<ReviewOutcome> Driver::drive() {
  record_.status = ReviewStatus::Running;
  doc_["stop_reason"] = "";  // a resumed review is running again
  while (true) {
    const json& rounds = doc_["rounds"];
    if (!rounds.empty()) {
      const json& last = rounds.back();
      const int n = last["round"].get<int>();
      if (parse_fix_status(last["fix"].value("status", std::string())) == FixStatus::Pending) {
        auto paused = ORCH_TRY(run_fix(n));
        if (paused) return *paused;
        continue;
      }
      if (last["final"].get<bool>()) {
        const std::string verdict = last["verdict"].get<std::string>();
        const RoundProgress p = progress();
        const std::string why =
            p.converged_round ? fmt::format("converged: {} dry round{} in a row at round {}", c_.dry_rounds,
                                            c_.dry_rounds == 1 ? "" : "s", *p.converged_round)
                              : fmt::format("max_rounds ({}) reached without converging", c_.max_rounds);
        if (!p.escalated.empty())
          return stop(ReviewStatus::Escalated,
                      fmt::format("{}; verdict {}; {} finding{} escalated by two-strikes", why, verdict,
                                  p.escalated.size(), p.escalated.size() == 1 ? "" : "s"),
                      kExitEscalated);
        if (verdict == "PASS") return stop(ReviewStatus::Passed, why + "; verdict PASS", kExitSucceeded);
        return stop(ReviewStatus::Failed, fmt::format("{}; verdict {}", why, verdict), kExitFailed);
      }
    }
    const int next = static_cast<int>(rounds.size()) + 1;
    auto ended = ORCH_TRY(run_round(next));
    if (ended) return *ended;
  }
}

}  // namespace orch::flows::review_run_detail
