#include "flows/task_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "flows/task_engines.h"
#include "orch/plan_loader.h"
#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch::flows {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Rolls back on scope exit unless committed: every early return of an
// operation leaves the ledger as it was.
class Transaction {
 public:
  explicit Transaction(TraceStore& store) : store_(store) {}
  ~Transaction() {
    if (open_) (void)store_.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  Expected<void> begin() {
    ORCH_TRY(store_.begin());
    open_ = true;
    return {};
  }
  Expected<void> commit() {
    open_ = false;
    return store_.commit();
  }

 private:
  TraceStore& store_;
  bool open_ = false;
};

TraceStatus status_of(const Trace& trace) {
  switch (trace.state()) {
    case TaskState::Done:
      return TraceStatus::Done;
    case TaskState::Escalated:
      return TraceStatus::Escalated;
    case TaskState::Abandoned:
      return TraceStatus::Abandoned;
    default:
      return TraceStatus::Open;
  }
}

TraceRecord record_of(const Trace& trace, std::int64_t closed_at) {
  TraceRecord r;
  r.id = trace.id;
  r.request = trace.request;
  r.project = trace.project;
  r.workspace = trace.workspace;
  r.state = task_state_name(trace.state());
  r.status = status_of(trace);
  r.doc_json = json_text(to_json(trace));
  r.run_id = trace.run_id;
  r.created_at = trace.created_at_ms;
  r.updated_at = trace.updated_at_ms;
  r.closed_at = closed_at;
  return r;
}

Expected<Trace> trace_of(const TraceRecord& row) {
  auto doc = json::parse(row.doc_json, nullptr, false);
  if (doc.is_discarded())
    return fail(ErrorCode::Store, fmt::format("trace '{}': the stored document is not JSON", row.id));
  auto trace = trace_from_json(doc);
  if (!trace) return fail(ErrorCode::Store, fmt::format("trace '{}': {}", row.id, trace.error().message));
  trace->created_at_ms = row.created_at;
  trace->updated_at_ms = row.updated_at;
  return trace;
}

Expected<void> append(TraceStore& store, const std::string& id, std::int64_t ts, const char* kind,
                      const std::string& state, const json& data) {
  ORCH_TRY(store.append_trace_event({0, id, ts, kind, state, json_text(data)}));
  return {};
}

// The ledger is the durable record; the file is its export, rewritten whole on
// every change (atomically: a reader never sees half a trace).
Expected<void> export_trace(const Trace& trace) {
  return write_file_atomically(trace_file(trace.workspace, trace.id), json_text(to_json(trace), 2) + "\n",
                               Durability::RenameOnly);
}

// "2026-11-30-fix-the-stale-date-crash": the day and the request's first words.
std::string slug_id(const std::string& request, std::int64_t now_ms) {
  std::string slug;
  int words = 0;
  bool in_word = false;
  for (unsigned char c : request) {
    if (std::isalnum(c)) {
      if (!in_word) {
        if (words == 6) break;
        if (!slug.empty()) slug += '-';
        ++words;
        in_word = true;
      }
      if (slug.size() < 48) slug += static_cast<char>(std::tolower(c));
    } else {
      in_word = false;
    }
  }
  if (slug.empty()) slug = "request";
  return iso8601_utc(now_ms).substr(0, 10) + "-" + slug;
}

// Gives the new `trace` its id — the slug, or slug-2, slug-3, ... when taken —
// and exports it under that id. An id is taken when this ledger has it or when
// the workspace's .orch/traces/ has its file: another ledger of the workspace
// (`--store`) may have made it, and its trace file, plan and lesson must not be
// overwritten. The file is created only if the name is free (atomically, so of
// two processes racing for one id, one moves on to the next).
Expected<void> claim_fresh_id(TraceStore& store, Trace& trace, const std::string& base) {
  for (int n = 1;; ++n) {
    std::string id = n == 1 ? base : fmt::format("{}-{}", base, n);
    if (ORCH_TRY(store.find_trace(id))) continue;
    trace.id = id;
    if (ORCH_TRY(create_file_atomically(trace_file(trace.workspace, id), json_text(to_json(trace), 2) + "\n",
                                        Durability::RenameOnly)))
      return {};
  }
}

// The trace under the write lock (inside `tx`).
Expected<Trace> locked_trace(TaskEnv& env, const std::string& id) {
  auto row = ORCH_TRY(env.traces->find_trace(id));
  if (!row) return fail(ErrorCode::NotFound, fmt::format("no trace '{}'", id));
  return trace_of(*row);
}

// Writes the changed trace and its event inside the open transaction.
Expected<void> save(TaskEnv& env, Trace& trace, std::int64_t now, std::int64_t closed_at) {
  trace.updated_at_ms = now;
  return env.traces->update_trace(record_of(trace, closed_at));
}

Expected<std::int64_t> closed_at_of(TaskEnv& env, const std::string& id) {
  auto row = ORCH_TRY(env.traces->find_trace(id));
  return row ? row->closed_at : 0;
}

json verdict_json(const VerifyRecord& v, const std::string& run_id) {
  json items = json::array();
  for (const auto& o : v.items)
    items.push_back({{"check", o.check}, {"status", check_status_name(o.status)}});
  return {{"verdict", verdict_name(v.verdict)},
          {"confidence", v.confidence},
          {"run_id", run_id},
          {"items", items}};
}

Expected<Trace> close_locked(TaskEnv& env, const std::string& id, const std::string& result,
                             const std::string& summary, TaskState final_state) {
  Transaction tx(*env.traces);
  ORCH_TRY(tx.begin());
  Trace trace = ORCH_TRY(locked_trace(env, id));
  ORCH_TRY(check_close(trace, result));
  const std::int64_t now = env.now_ms();
  trace.result = result;
  if (!summary.empty()) trace.summary = summary;
  enter_state(trace, final_state, summary, iso8601_utc(now));
  ORCH_TRY(save(env, trace, now, now));
  ORCH_TRY(append(*env.traces, id, now, "closed", task_state_name(final_state),
                  {{"result", result}, {"summary", summary}}));
  ORCH_TRY(tx.commit());
  return trace;
}

// After a close: export, learn, store what the learning loop did, export again.
Expected<Trace> after_close(TaskEnv& env, Trace trace) {
  ORCH_TRY(export_trace(trace));
  run_learning_loop(env, trace);
  {
    Transaction tx(*env.traces);
    ORCH_TRY(tx.begin());
    Trace stored = ORCH_TRY(locked_trace(env, trace.id));
    stored.learning_results = trace.learning_results;
    const std::int64_t now = env.now_ms();
    const std::int64_t closed_at = ORCH_TRY(closed_at_of(env, trace.id));
    for (const auto& [step, outcome] : trace.learning_results.items())
      ORCH_TRY(
          append(*env.traces, trace.id, now, "learning_result", "", {{"step", step}, {"outcome", outcome}}));
    stored.updated_at_ms = trace.updated_at_ms;
    ORCH_TRY(env.traces->update_trace(record_of(stored, closed_at)));
    ORCH_TRY(tx.commit());
    trace = std::move(stored);
  }
  ORCH_TRY(export_trace(trace));
  return trace;
}

}  // namespace

fs::path trace_file(const fs::path& workspace, const std::string& id) {
  return workspace / ".orch" / "traces" / (id + ".json");
}

fs::path trace_plan_file(const fs::path& workspace, const std::string& id) {
  return workspace / ".orch" / "plans" / (id + ".yaml");
}

Expected<TaskSettings> load_task_settings(const fs::path& workspace) {
  TaskSettings settings;
  const fs::path file = workspace / ".orch" / "task.yaml";
  std::error_code ec;
  if (!fs::exists(file, ec)) return settings;
  const std::string text = ORCH_TRY(read_file_text(file));
  auto root = detail::read_yaml_doc(text);
  if (!root)
    return fail(ErrorCode::InvalidInput, fmt::format("{}:{}: YAML syntax error: {}", file.string(),
                                                     root.error().line, root.error().message));
  if (root->is_null()) return settings;
  if (!root->is_map())
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}:{}: expected a mapping of settings", file.string(), root->line));
  std::vector<std::string> problems;
  std::map<std::string, int> seen;  // key -> its first line
  for (const detail::DocEntry& entry : root->entries) {
    const std::string key = yaml_key(entry.key);
    const int line = entry.key.line;
    const detail::DocNode& value = entry.value;
    if (auto [first, fresh] = seen.emplace(key, line); !fresh) {
      problems.push_back(fmt::format("{}:{}: {}: written twice (first at line {})", file.string(), line, key,
                                     first->second));
      continue;
    }
    auto duration_of = [&](std::chrono::milliseconds& into) {
      if (!value.is_scalar()) {
        problems.push_back(fmt::format("{}:{}: {}: expected a positive duration such as 30m or 24h",
                                       file.string(), line, key));
        return;
      }
      // The parser's own reason: a unit it does not know, a value too large, ...
      auto d = parse_duration(value.scalar);
      if (!d)
        problems.push_back(fmt::format("{}:{}: {}: {}", file.string(), line, key, d.error().message));
      else if (d->count() <= 0)
        problems.push_back(fmt::format("{}:{}: {}: '{}' must be more than 0 (e.g. 30m or 24h)", file.string(),
                                       line, key, value.scalar));
      else
        into = *d;
    };
    if (key == "abandon_after")
      duration_of(settings.abandon_after);
    else if (key == "verify_timeout")
      duration_of(settings.verify_timeout);
    else
      problems.push_back(fmt::format("{}:{}: unknown setting '{}'{} (known: abandon_after, verify_timeout)",
                                     file.string(), line, key,
                                     did_you_mean(key, {"abandon_after", "verify_timeout"})));
  }
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "\n") + p;
    return fail(ErrorCode::InvalidInput, all);
  }
  return settings;
}

Expected<Trace> find_task(TaskEnv& env, const std::string& ref) {
  std::string id = ref;
  std::error_code ec;
  if (ref.ends_with(".json") && fs::is_regular_file(ref, ec)) {
    const std::string text = ORCH_TRY(read_file_text(ref));
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {
      // "[json.exception.parse_error.101] parse error at line 1, column 5: ...": the id helps no one.
      std::string why = e.what();
      if (const auto end = why.find("] "); why.starts_with("[json.exception") && end != std::string::npos)
        why = why.substr(end + 2);
      return fail(ErrorCode::InvalidInput, fmt::format("{}: not a trace file: not valid JSON: {}", ref, why));
    }
    if (!doc.is_object() || !doc.contains("id") || !doc["id"].is_string())
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{}: not a trace file: valid JSON, but no \"id\" string", ref));
    id = doc["id"].get<std::string>();
  }
  auto row = ORCH_TRY(env.traces->find_trace(id));
  if (row) return trace_of(*row);
  // A unique prefix.
  auto all = ORCH_TRY(env.traces->list_traces());
  std::vector<const TraceRecord*> matches;
  for (const auto& r : all)
    if (r.id.starts_with(id)) matches.push_back(&r);
  if (matches.size() == 1) return trace_of(*matches[0]);
  if (matches.empty())
    return fail(ErrorCode::NotFound, fmt::format("no trace '{}' (see `orch task list`)", ref));
  std::string names;
  for (std::size_t i = 0; i < matches.size() && i < 5; ++i) names += (i ? ", " : "") + matches[i]->id;
  return fail(ErrorCode::InvalidInput, fmt::format("'{}' matches {} traces: {}", ref, matches.size(), names));
}

Expected<std::vector<Trace>> list_tasks(TaskEnv& env, bool open_only) {
  auto rows = ORCH_TRY(env.traces->list_traces());
  std::vector<Trace> out;
  for (const auto& row : rows) {
    if (open_only && row.status != TraceStatus::Open) continue;
    out.push_back(ORCH_TRY(trace_of(row)));
  }
  return out;
}

Expected<PlannedTask> plan_task(TaskEnv& env, const std::string& request, const PlanTaskOptions& options) {
  PlannedTask planned;
  if (request.find_first_not_of(" \t\r\n") == std::string::npos)
    return fail(ErrorCode::InvalidInput, "the request is empty: say what to do");
  planned.abandoned = ORCH_TRY(gc_tasks(env, env.settings.abandon_after));

  ClassifiedRequest c = ORCH_TRY(classify_request(env, request, options.assume_intent));
  if (c.ambiguous && !options.assume_intent) {
    std::string list;
    for (const auto& i : c.intents) list += (list.empty() ? "" : ", ") + i;
    planned.ambiguous =
        AmbiguousRequest{fmt::format("No intent keyword matched \"{}\". What kind of work is it? One of: {} "
                                     "(then run again with --assume INTENT, or reword the request).",
                                     request, list),
                         c.intents};
    return planned;
  }

  const std::int64_t now = env.now_ms();
  Trace trace;
  trace.request = request;
  trace.project = options.project;
  trace.workspace = env.workspace.string();
  trace.intent = c.intent;
  trace.ambiguous = c.ambiguous;
  trace.complexity = c.complexity;
  trace.strategy = c.strategy;
  trace.engines = c.engines;
  trace.pipeline = c.pipeline;
  trace.verify = c.verify;
  trace.recall_tags = c.recall_tags;
  trace.llm = c.llm;
  trace.budget = {{"tokens", c.budget_tokens}, {"spent_tokens", 0}};
  trace.classification = c.classification;
  trace.engine_results = c.engine_results;
  trace.created_at_ms = now;
  trace.updated_at_ms = now;
  {
    Transaction tx(*env.traces);
    ORCH_TRY(tx.begin());
    const std::string note =
        options.assume_intent
            ? fmt::format("intent {} (assumed), {}, {}", trace.intent, trace.complexity, trace.strategy)
            : fmt::format("intent {}, {}, {}", trace.intent, trace.complexity, trace.strategy);
    enter_state(trace, TaskState::Classify, note, iso8601_utc(now));
    // Exported before the commit (claiming the id): a trace whose file cannot be
    // written (a file where .orch/traces should be) is not left open in the
    // ledger, half made; and one the ledger did not take leaves no file.
    ORCH_TRY(claim_fresh_id(*env.traces, trace, slug_id(request, now)));
    auto recorded = [&]() -> Expected<void> {
      ORCH_TRY(env.traces->insert_trace(record_of(trace, 0)));
      ORCH_TRY(append(*env.traces, trace.id, now, "trace_created", "CLASSIFY",
                      {{"request", request},
                       {"intent", trace.intent},
                       {"complexity", trace.complexity},
                       {"strategy", trace.strategy},
                       {"llm", trace.llm}}));
      return tx.commit();
    }();
    if (!recorded) {
      std::error_code ec;
      fs::remove(trace_file(trace.workspace, trace.id), ec);
      return std::unexpected(recorded.error());
    }
  }

  // The engine stages at the head of the pipeline: orch runs them and logs them.
  const std::vector<TaskState> pipeline = trace.pipeline;  // `trace` is replaced in the loop
  for (TaskState stage : pipeline) {
    if (stage != TaskState::Route && stage != TaskState::Recall && stage != TaskState::Similarity &&
        stage != TaskState::Plan)
      break;
    const std::string note = run_stage_engines(env, trace, stage);
    Transaction tx(*env.traces);
    ORCH_TRY(tx.begin());
    Trace stored = ORCH_TRY(locked_trace(env, trace.id));
    ORCH_TRY(check_enter(stored, stage));
    stored.engine_results = trace.engine_results;
    const std::int64_t at = env.now_ms();
    enter_state(stored, stage, note, iso8601_utc(at));
    ORCH_TRY(save(env, stored, at, 0));
    ORCH_TRY(append(*env.traces, stored.id, at, "state_entered", task_state_name(stage), {{"note", note}}));
    for (const auto& [engine, outcome] : stored.engine_results.items())
      if (outcome.is_object() && outcome.value("stage", "") == task_state_name(stage))
        ORCH_TRY(append(*env.traces, stored.id, at, "engine_result", task_state_name(stage),
                        {{"engine", engine}, {"status", outcome.value("status", "")}}));
    ORCH_TRY(export_trace(stored));
    ORCH_TRY(tx.commit());
    trace = std::move(stored);
  }
  planned.trace = std::move(trace);
  return planned;
}

namespace {

// Enters `state` on `trace`, read under the write lock of the open `tx`: the
// transition, its events and the trace row in one commit, then the export.
Expected<Trace> enter_locked(TaskEnv& env, Transaction& tx, Trace trace, TaskState state,
                             const std::string& note, const VerifyRecord* verdict,
                             const std::string& verdict_run) {
  ORCH_TRY(check_enter(trace, state));
  const std::int64_t now = env.now_ms();
  const bool retry = trace.state() == TaskState::Verify && state == TaskState::Execute;
  enter_state(trace, state, note, iso8601_utc(now));
  ORCH_TRY(append(*env.traces, trace.id, now, "state_entered", task_state_name(state),
                  {{"note", note}, {"retry", retry ? trace.retries : 0}}));
  if (verdict && state == TaskState::Verify) {
    VerifyRecord v = *verdict;
    v.t = iso8601_utc(now);
    v.retry = trace.retries;
    trace.verifications.push_back(v);
    ORCH_TRY(append(*env.traces, trace.id, now, "verify_verdict", "VERIFY",
                    verdict_json(v, verdict_run.empty() ? trace.run_id : verdict_run)));
  }
  ORCH_TRY(save(env, trace, now, 0));
  ORCH_TRY(tx.commit());
  ORCH_TRY(export_trace(trace));
  return trace;
}

}  // namespace

Expected<Trace> log_task(TaskEnv& env, const std::string& trace_ref, TaskState state, const std::string& note,
                         const VerifyOptions& verify, bool* interrupted) {
  if (interrupted) *interrupted = false;
  if (state != TaskState::Verify) {
    // No command to run: the trace is looked up, checked and moved under one
    // write lock, read and parsed once.
    Transaction tx(*env.traces);
    ORCH_TRY(tx.begin());
    Trace found = ORCH_TRY(find_task(env, trace_ref));
    if (!verify.attest.empty() || !verify.refute.empty() || verify.attest_all)
      return fail(ErrorCode::InvalidInput, "--attest and --refute apply to --state VERIFY only");
    return enter_locked(env, tx, std::move(found), state, note, nullptr, "");
  }
  Trace found = ORCH_TRY(find_task(env, trace_ref));
  // Refuse an illegal VERIFY before running any command; checked again under
  // the lock by record_state, since the trace may move while the commands run.
  ORCH_TRY(check_enter(found, state));
  VerifyOptions options = verify;
  options.workspace = found.workspace;
  if (!options.executors) options.executors = env.executors;
  options.handle_signals = env.handle_signals;
  auto ran = ORCH_TRY(run_verifier(*env.store, found, options));
  if (ran.interrupted) {
    if (interrupted) *interrupted = true;
    return found;
  }
  return record_state(env, found.id, state, note, &ran.record, ran.run_id);
}

Expected<Trace> record_state(TaskEnv& env, const std::string& trace_id, TaskState state,
                             const std::string& note, const VerifyRecord* verdict,
                             const std::string& verdict_run) {
  Transaction tx(*env.traces);
  ORCH_TRY(tx.begin());
  Trace trace = ORCH_TRY(locked_trace(env, trace_id));
  return enter_locked(env, tx, std::move(trace), state, note, verdict, verdict_run);
}

Expected<Trace> update_task(TaskEnv& env, const std::string& trace_id,
                            const std::function<void(Trace&)>& change) {
  Transaction tx(*env.traces);
  ORCH_TRY(tx.begin());
  Trace trace = ORCH_TRY(locked_trace(env, trace_id));
  change(trace);
  const std::int64_t closed_at = ORCH_TRY(closed_at_of(env, trace_id));
  ORCH_TRY(save(env, trace, env.now_ms(), closed_at));
  ORCH_TRY(tx.commit());
  ORCH_TRY(export_trace(trace));
  return trace;
}

Expected<Trace> close_task(TaskEnv& env, const std::string& trace_ref, const std::string& result,
                           const std::string& summary) {
  Trace found = ORCH_TRY(find_task(env, trace_ref));
  if (result != "pass" && result != "fail")
    return fail(ErrorCode::InvalidInput, fmt::format("--result must be pass or fail, not '{}'", result));
  Trace closed = ORCH_TRY(close_locked(env, found.id, result, summary,
                                       result == "pass" ? TaskState::Done : TaskState::Escalated));
  return after_close(env, std::move(closed));
}

Expected<std::vector<std::string>> gc_tasks(TaskEnv& env, std::chrono::milliseconds older_than) {
  std::vector<std::string> abandoned;
  auto rows = ORCH_TRY(env.traces->list_traces());
  const std::int64_t now = env.now_ms();
  for (const auto& row : rows) {
    if (row.status != TraceStatus::Open || now - row.updated_at <= older_than.count()) continue;
    // A trace whose run a live process drives (`task run`, `orch resume`) is not
    // abandoned, however long its step takes: only a dead session's is.
    if (!row.run_id.empty() && env.store->locked(row.run_id)) continue;
    const std::string note = fmt::format("abandoned by gc: untouched since {} (more than {} s)",
                                         iso8601_utc(row.updated_at), older_than.count() / 1000);
    // Re-checked under the lock: a trace logged meanwhile is not stale any more.
    Transaction tx(*env.traces);
    ORCH_TRY(tx.begin());
    Trace trace = ORCH_TRY(locked_trace(env, row.id));
    if (is_final(trace.state()) || now - trace.updated_at_ms <= older_than.count()) continue;
    trace.result = "abandoned";
    enter_state(trace, TaskState::Abandoned, note, iso8601_utc(now));
    ORCH_TRY(save(env, trace, now, now));
    ORCH_TRY(append(*env.traces, trace.id, now, "closed", "ABANDONED",
                    {{"result", "abandoned"}, {"summary", note}}));
    ORCH_TRY(tx.commit());
    ORCH_TRY(after_close(env, std::move(trace)));
    abandoned.push_back(row.id);
  }
  return abandoned;
}

}  // namespace orch::flows
