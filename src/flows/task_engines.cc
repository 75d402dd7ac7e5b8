#include "flows/task_engines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "memory/memory.h"
#include "route/classify.h"
#include "route/route_request.h"
#include "route/tool_route.h"
#include "util/atomic_file.h"
#include "util/json_text.h"

namespace orch::flows {

using json = nlohmann::json;

namespace {

// Runs one engine: its result object gets "stage" and "status" ("ok" unless
// the engine set one); an Error or an exception becomes {"status": "FAILED",
// "error": ...}. Never throws.
template <class Fn>
json isolated(TaskState stage, Fn&& fn) {
  json result;
  try {
    Expected<json> r = fn();
    if (r) {
      result = std::move(*r);
      if (!result.contains("status")) result["status"] = "ok";
    } else {
      result = {{"status", "FAILED"}, {"error", r.error().message}};
    }
  } catch (const std::exception& e) {
    result = {{"status", "FAILED"}, {"error", std::string("exception: ") + e.what()}};
  } catch (...) {
    result = {{"status", "FAILED"}, {"error", "an unknown exception"}};
  }
  result["stage"] = task_state_name(stage);
  return result;
}

json hits_json(const std::vector<memory::Hit>& hits) {
  json out = json::array();
  for (const auto& h : hits)
    out.push_back({{"kind", h.kind},
                   {"id", h.id},
                   {"title", h.title},
                   {"path", h.path},
                   {"score", std::round(h.score * 1000) / 1000},
                   {"snippet", h.snippet}});
  return out;
}

Expected<std::unique_ptr<memory::MemoryIndex>> open_index(TaskEnv& env) {
  auto index = ORCH_TRY(memory::MemoryIndex::open(memory::memory_paths(env.workspace)));
  ORCH_TRY(index->reindex());
  return index;
}

std::string recall_query(const Trace& trace) {
  std::string q = trace.request;
  for (const auto& tag : trace.recall_tags) q += " " + tag;
  return q;
}

}  // namespace

Expected<ClassifiedRequest> classify_request(TaskEnv& env, const std::string& request,
                                             const std::optional<std::string>& assume_intent) {
  const route::RouteTables tables = ORCH_TRY(route::RouteTables::load(env.workspace));
  route::Classification c = route::classify(tables, request);
  ClassifiedRequest out;
  out.intents = tables.intent_names();
  // What the request said by itself: the trace keeps it, whatever --assume decides.
  const bool ambiguous = c.ambiguous;
  bool assumed = false;
  if (assume_intent) {
    const route::IntentSpec* spec = tables.find_intent(*assume_intent);
    if (!spec) {
      std::string known;
      for (const auto& n : out.intents) known += (known.empty() ? "" : ", ") + n;
      return fail(ErrorCode::InvalidInput,
                  fmt::format("--assume '{}': not an intent (known: {})", *assume_intent, known));
    }
    // Classified as if the request had named the intent: its base complexity,
    // engines, budget and checklist (route/classify.h).
    if (c.intent != *assume_intent) {
      c = route::classify_as(tables, request, *assume_intent);
      assumed = true;
    }
  }
  out.intent = c.intent;
  out.ambiguous = ambiguous;
  out.complexity = c.complexity;
  out.engines = c.engines;
  out.recall_tags = c.recall_tags;
  out.budget_tokens = c.budget_tokens;
  for (const auto& item : c.verify) {
    json j = {{"check", item.check}};
    if (!item.command.empty()) j["command"] = item.command;
    if (item.attest) j["attest"] = true;
    out.verify.push_back(std::move(j));
  }
  json scores = json::array();
  for (const auto& s : c.scores)
    scores.push_back({{"intent", s.intent}, {"hits", s.hits}, {"matched", s.matched}});
  out.classification = {{"intent_reason", c.intent_reason},
                        {"scores", scores},
                        {"complexity_reasons", c.complexity_reasons},
                        {"word_count", c.word_count},
                        {"assumed", assumed}};
  if (ambiguous && !assume_intent) return out;

  // The capability gate: a similar closed trace or note, then a registry tool.
  bool similar_found = false;
  out.engine_results["similarity_gate"] = isolated(TaskState::Classify, [&]() -> Expected<json> {
    auto index = ORCH_TRY(open_index(env));
    auto hits = ORCH_TRY(index->similar(request, 3));
    std::vector<memory::Hit> similar;
    for (const auto& h : hits)
      if (h.score >= memory::kSimilarThreshold) similar.push_back(h);
    similar_found = !similar.empty();
    return json{{"summary", similar_found ? fmt::format("{} similar (best {:.2f}: {})", similar.size(),
                                                        similar[0].score, similar[0].title)
                                          : std::string("nothing similar (threshold 0.6)")},
                {"hits", hits_json(hits)}};
  });
  const bool covered = route::covered_by_tool(env.registry, request);
  const route::ModelNeed need = route::model_need(similar_found, c.complexity, covered);
  out.llm = route::model_need_name(need);
  out.strategy = route::strategy_for(tables, c.complexity, need);
  std::string bad;
  out.pipeline = parse_pipeline(route::pipeline_for(tables, out.strategy), &bad);
  if (!bad.empty() || out.pipeline.empty())
    return fail(ErrorCode::InvalidInput,
                fmt::format("strategies table: strategy '{}' has {}", out.strategy,
                            bad.empty() ? std::string("no stages") : "the unknown stage '" + bad + "'"));
  out.classification["gate"] = {
      {"similar_found", similar_found}, {"covered_by_tool", covered}, {"llm", out.llm}};
  return out;
}

std::string run_stage_engines(TaskEnv& env, Trace& trace, TaskState stage) {
  std::vector<std::string> notes;
  auto record = [&](const char* name, json result) {
    const std::string status = result.value("status", std::string());
    notes.push_back(status == "FAILED" ? fmt::format("{} FAILED", name) : fmt::format("{} {}", name, status));
    trace.engine_results[name] = std::move(result);
  };
  const memory::MemoryPaths paths = memory::memory_paths(env.workspace);
  switch (stage) {
    case TaskState::Recall: {
      // Depth follows complexity (seed 000): a trivial request looks at the
      // lessons only (the fault history); others recall every kind of note.
      record("recall", isolated(stage, [&]() -> Expected<json> {
               auto index = ORCH_TRY(open_index(env));
               memory::RecallOptions options;
               options.limit = 5;
               if (trace.complexity == "trivial") options.kinds = {"lesson"};
               auto hits = ORCH_TRY(index->recall(recall_query(trace), options));
               return json{{"summary", fmt::format("{} hit{}", hits.size(), hits.size() == 1 ? "" : "s")},
                           {"hits", hits_json(hits)}};
             }));
      record("context", isolated(stage, [&]() -> Expected<json> {
               auto index = ORCH_TRY(open_index(env));
               // A quarter of the request's token budget for recalled context.
               const std::int64_t budget = std::max<std::int64_t>(trace.budget.value("tokens", 0LL) / 4, 100);
               auto pack = ORCH_TRY(memory::pack_context(*index, recall_query(trace), budget));
               std::string text;
               json items = json::array();
               for (const auto& h : pack.items) {
                 text += fmt::format("### {} ({}: {})\n{}\n\n", h.title, h.kind, h.path, h.content);
                 items.push_back({{"kind", h.kind},
                                  {"id", h.id},
                                  {"title", h.title},
                                  {"path", h.path},
                                  {"tokens", h.tokens}});
               }
               return json{
                   {"summary", fmt::format("{} item{}, {} of {} tokens", pack.items.size(),
                                           pack.items.size() == 1 ? "" : "s", pack.tokens, pack.budget)},
                   {"items", items},
                   {"tokens", pack.tokens},
                   {"budget", pack.budget},
                   {"text", text}};
             }));
      record("skills", isolated(stage, [&]() -> Expected<json> {
               auto skills = ORCH_TRY(memory::discover_skills(paths, trace.request, 3));
               json list = json::array();
               for (const auto& s : skills)
                 list.push_back({{"name", s.name},
                                 {"description", s.description},
                                 {"path", s.path},
                                 {"score", std::round(s.score * 1000) / 1000}});
               return json{
                   {"summary", fmt::format("{} skill{}", skills.size(), skills.size() == 1 ? "" : "s")},
                   {"skills", list}};
             }));
      break;
    }
    case TaskState::Similarity:
      record("similarity", isolated(stage, [&]() -> Expected<json> {
               auto index = ORCH_TRY(open_index(env));
               auto hits = ORCH_TRY(index->similar(trace.request, 5));
               return json{
                   {"summary", hits.empty() ? std::string("nothing similar")
                                            : fmt::format("best {:.2f}: {}", hits[0].score, hits[0].title)},
                   {"hits", hits_json(hits)}};
             }));
      break;
    case TaskState::Route:
      record("route", isolated(stage, [&]() -> Expected<json> {
               const route::RouteTables tables = ORCH_TRY(route::RouteTables::load(env.workspace));
               auto decision = ORCH_TRY(route::route_request(tables, env.registry, trace.request));
               auto label = [](const route::LabelChoice& l) {
                 return json{{"name", l.decided() ? l.name : std::string("unknown")},
                             {"confidence", l.confidence},
                             {"reason", l.reason}};
               };
               json j = {{"request_type", label(decision.request_type)},
                         {"domain", label(decision.domain)},
                         {"tool",
                          {{"chosen", decision.tool.chosen},
                           {"tool", decision.tool.tool},
                           {"command", decision.tool.command},
                           {"capability", decision.tool.capability},
                           {"reason", decision.tool.reason}}}};
               j["summary"] = decision.tool.chosen
                                  ? fmt::format("tool {} {}", decision.tool.tool, decision.tool.command)
                                  : "no tool: " + decision.tool.reason;
               return j;
             }));
      break;
    case TaskState::Plan:
      record("planner", isolated(stage, [&]() -> Expected<json> {
               if (!env.planner) return json{{"status", "skipped"}, {"summary", "no planner configured"}};
               auto planned = ORCH_TRY(env.planner(trace.request));
               const auto file = trace_plan_file(env.workspace, trace.id);
               ORCH_TRY(write_file_atomically(file, planned.text));
               return json{{"summary", planned.summary()},           {"path", plan_path_name(planned.path)},
                           {"steps", planned.plan.steps.size()},     {"file", file.string()},
                           {"planning_runs", planned.planning_runs}, {"plan", planned.text}};
             }));
      break;
    default:
      break;
  }
  std::string note;
  for (const auto& n : notes) note += (note.empty() ? "" : "; ") + n;
  return note;
}

void run_learning_loop(TaskEnv& env, Trace& trace) {
  const memory::MemoryPaths paths = memory::memory_paths(env.workspace);
  const TaskState none = TaskState::Classify;
  auto lesson = memory::lesson_from_trace(to_json(trace));
  auto step = [&](const char* name, auto&& fn) {
    json r = isolated(none, fn);
    r.erase("stage");
    trace.learning_results[name] = std::move(r);
  };
  // The workspace's memory, opened by the first step that needs it and shared
  // by the rest: the lessons and the fault ledger (MemoryStore), and the index.
  std::unique_ptr<memory::MemoryIndex> index;
  auto open_memory = [&]() -> Expected<memory::MemoryIndex*> {
    if (!index) index = ORCH_TRY(memory::MemoryIndex::open(paths));
    return index.get();
  };
  step("harvest", [&]() -> Expected<json> {
    if (!lesson) return std::unexpected(lesson.error());
    ORCH_TRY(memory::check_lesson(*lesson));  // before the database is made
    memory::LessonStore& lessons = ORCH_TRY(open_memory())->store().lessons();
    auto note = ORCH_TRY(memory::harvest_lesson(lessons, paths, *lesson));
    return json{{"summary", memory::workspace_relative(paths, note)},
                {"note", memory::workspace_relative(paths, note)}};
  });
  step("faults", [&]() -> Expected<json> {
    if (!lesson) return std::unexpected(lesson.error());
    ORCH_TRY(memory::check_lesson(*lesson));
    memory::FaultLedger& faults = ORCH_TRY(open_memory())->store().faults();
    ORCH_TRY(memory::update_fault_ledger(faults, paths, *lesson));
    return json{{"summary", fmt::format("{} failure{} recorded", lesson->verify_failures.size(),
                                        lesson->verify_failures.size() == 1 ? "" : "s")}};
  });
  step("reindex", [&]() -> Expected<json> {
    memory::MemoryIndex* memory_index = ORCH_TRY(open_memory());
    auto stats = ORCH_TRY(memory_index->reindex());
    return json{
        {"summary", fmt::format("{} notes, {} lessons, {} traces", stats.notes, stats.lessons, stats.traces)},
        {"skipped", stats.skipped}};
  });
}

}  // namespace orch::flows
