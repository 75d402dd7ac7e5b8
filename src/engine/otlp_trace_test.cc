// The OTLP request of a run, built from its ledger rows: one span for the run,
// one per started step and one per attempt, linked by parent ids, with tokens,
// cost and status as OTLP's JSON encoding writes them.
#include "engine/otlp_trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/in_memory_store.h"
#include "testing/testing.h"
#include "util/json_text.h"

namespace orch {
// Named after the file: a unity build compiles the tests of a binary together.
namespace otlp_trace_test {

using ojson = nlohmann::ordered_json;

// A span's attributes as key -> AnyValue.
std::map<std::string, ojson> attributes_of(const ojson& span) {
  std::map<std::string, ojson> out;
  for (const ojson& a : span.at("attributes")) out[a.at("key").get<std::string>()] = a.at("value");
  return out;
}

std::string string_value(const ojson& span, const std::string& key) {
  auto attrs = attributes_of(span);
  return attrs.contains(key) ? attrs[key].value("stringValue", "<not a string>") : "<none>";
}
std::string int_value(const ojson& span, const std::string& key) {
  auto attrs = attributes_of(span);
  return attrs.contains(key) ? attrs[key].value("intValue", "<not an int>") : "<none>";
}
double double_value(const ojson& span, const std::string& key) {
  auto attrs = attributes_of(span);
  return attrs.contains(key) ? attrs[key].value("doubleValue", -1.0) : -1.0;
}

const ojson& spans_of(const ojson& request) {
  return request.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans");
}

// The span of that name; fails the test when there is none.
ojson span_named(const ojson& request, const std::string& name) {
  for (const ojson& s : spans_of(request))
    if (s.at("name") == name) return s;
  ADD_FAILURE() << "no span named " << name << " in " << json_text(request, 2);
  return ojson::object();
}

bool is_hex(const std::string& s, std::size_t length) {
  return s.size() == length && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

class OtlpTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Run r1 failed: a done in one attempt, b failed in two (the second timed
    // out), c skipped without starting.
    RunRecord run;
    run.id = "r1";
    run.name = "demo";
    run.status = RunStatus::Failed;
    run.reason = "step 'b' failed";
    run.workspace = "/ws";
    run.exit_code = 1;
    run.created_at = 1'700'000'000'000;
    run.updated_at = 1'700'000'009'000;
    run.finished_at = 1'700'000'010'000;
    ASSERT_TRUE(store_.insert_run(run));
    ASSERT_TRUE(store_.upsert_step(step("a", 0, "shell", StepStatus::Done, "")));
    ASSERT_TRUE(store_.upsert_step(step("b", 1, "llm:small", StepStatus::Failed, "timed out after 2s")));
    ASSERT_TRUE(store_.upsert_step(step("c", 2, "shell", StepStatus::Skipped, "b failed")));
    ASSERT_TRUE(
        store_.insert_attempt(attempt("a", 1, AttemptStatus::Succeeded, "", 10, 20, 0.5, 1'000, 2'000)));
    ASSERT_TRUE(store_.insert_attempt(
        attempt("b", 1, AttemptStatus::Failed, "HTTP 500 from the provider", 5, 0, 0.01, 3'000, 4'000)));
    ASSERT_TRUE(store_.insert_attempt(
        attempt("b", 2, AttemptStatus::TimedOut, "timed out after 2s", 7, 3, 0.02, 5'000, 7'000)));
  }

  static StepRecord step(const std::string& id, int idx, const std::string& executor, StepStatus status,
                         const std::string& reason) {
    StepRecord s;
    s.run_id = "r1";
    s.step_id = id;
    s.idx = idx;
    s.executor = executor;
    s.status = status;
    s.reason = reason;
    return s;
  }

  static AttemptRecord attempt(const std::string& step_id, int number, AttemptStatus status,
                               const std::string& reason, std::int64_t in, std::int64_t out, double cost,
                               std::int64_t start_offset, std::int64_t end_offset) {
    AttemptRecord a;
    a.run_id = "r1";
    a.step_id = step_id;
    a.number = number;
    a.status = status;
    a.ending = status == AttemptStatus::TimedOut ? AttemptEnding::TimedOut : AttemptEnding::Exited;
    a.exit_code = status == AttemptStatus::Succeeded ? 0 : 3;
    a.reason = reason;
    a.tokens_in = in;
    a.tokens_out = out;
    a.cost_usd = cost;
    a.started_at = 1'700'000'000'000 + start_offset;
    a.finished_at = 1'700'000'000'000 + end_offset;
    a.duration_ms = end_offset - start_offset;
    return a;
  }

  ojson build() {
    OtlpResource resource;
    resource.attributes = {{"service.name", "orch-test"}, {"deployment.environment", "ci"}};
    auto built = build_otlp_trace(store_, "r1", resource);
    EXPECT_TRUE(built) << built.error().message;
    return built ? *built : ojson::object();
  }

  testing::TempDir dir_;
  testing::InMemoryStore store_{dir_ / "store"};
};

TEST_F(OtlpTraceTest, ASpanForTheRunEachStartedStepAndEachAttempt) {
  const ojson request = build();
  const ojson& spans = spans_of(request);
  ASSERT_EQ(spans.size(), 1u + 2u + 3u) << "run + steps a, b (c never started) + 3 attempts\n"
                                        << json_text(request, 2);
  for (const ojson& s : spans) EXPECT_NE(s.at("name"), "c") << "a step that never started has no span";

  const ojson run = span_named(request, "run demo");
  const ojson a = span_named(request, "a");
  const ojson b = span_named(request, "b");
  const ojson a1 = span_named(request, "a attempt 1");
  const ojson b1 = span_named(request, "b attempt 1");
  const ojson b2 = span_named(request, "b attempt 2");

  // One trace; the run is the root, steps its children, attempts their step's.
  const std::string trace_id = run.at("traceId");
  EXPECT_TRUE(is_hex(trace_id, 32)) << trace_id;
  std::set<std::string> span_ids;
  for (const ojson& s : spans) {
    EXPECT_EQ(s.at("traceId"), trace_id);
    EXPECT_TRUE(is_hex(s.at("spanId"), 16)) << s.at("spanId");
    span_ids.insert(s.at("spanId").get<std::string>());
    EXPECT_EQ(s.at("kind"), 1) << "SPAN_KIND_INTERNAL";
  }
  EXPECT_EQ(span_ids.size(), spans.size()) << "span ids are distinct";
  EXPECT_FALSE(run.contains("parentSpanId"));
  EXPECT_EQ(a.at("parentSpanId"), run.at("spanId"));
  EXPECT_EQ(b.at("parentSpanId"), run.at("spanId"));
  EXPECT_EQ(a1.at("parentSpanId"), a.at("spanId"));
  EXPECT_EQ(b1.at("parentSpanId"), b.at("spanId"));
  EXPECT_EQ(b2.at("parentSpanId"), b.at("spanId"));

  // Times in Unix nanoseconds, as strings: a step runs from its first attempt's
  // start to its last attempt's end.
  EXPECT_EQ(run.at("startTimeUnixNano"), "1700000000000000000");
  EXPECT_EQ(run.at("endTimeUnixNano"), "1700000010000000000");
  EXPECT_EQ(b.at("startTimeUnixNano"), "1700000003000000000");
  EXPECT_EQ(b.at("endTimeUnixNano"), "1700000007000000000");
  EXPECT_EQ(b2.at("startTimeUnixNano"), "1700000005000000000");
  EXPECT_EQ(b2.at("endTimeUnixNano"), "1700000007000000000");

  // Resource and scope.
  const ojson& rs = request.at("resourceSpans").at(0);
  EXPECT_EQ(rs.at("resource").at("attributes").at(0),
            (ojson{{"key", "service.name"}, {"value", {{"stringValue", "orch-test"}}}}));
  EXPECT_EQ(rs.at("resource").at("attributes").at(1).at("key"), "deployment.environment");
  EXPECT_EQ(rs.at("scopeSpans").at(0).at("scope").at("name"), "orch");
}

TEST_F(OtlpTraceTest, TokensAndCostAreAttributesSummedUpwards) {
  const ojson request = build();
  const ojson a1 = span_named(request, "a attempt 1");
  EXPECT_EQ(int_value(a1, "gen_ai.usage.input_tokens"), "10");
  EXPECT_EQ(int_value(a1, "gen_ai.usage.output_tokens"), "20");
  EXPECT_DOUBLE_EQ(double_value(a1, "orch.cost_usd"), 0.5);
  EXPECT_EQ(int_value(a1, "orch.attempt.number"), "1");
  EXPECT_EQ(int_value(a1, "orch.attempt.exit_code"), "0");
  EXPECT_EQ(string_value(a1, "orch.attempt.status"), "succeeded");

  const ojson b = span_named(request, "b");
  EXPECT_EQ(string_value(b, "orch.step.id"), "b");
  EXPECT_EQ(string_value(b, "orch.step.executor"), "llm:small");
  EXPECT_EQ(string_value(b, "orch.step.status"), "failed");
  EXPECT_EQ(int_value(b, "gen_ai.usage.input_tokens"), "12");
  EXPECT_EQ(int_value(b, "gen_ai.usage.output_tokens"), "3");
  EXPECT_NEAR(double_value(b, "orch.cost_usd"), 0.03, 1e-12);

  const ojson run = span_named(request, "run demo");
  EXPECT_EQ(string_value(run, "orch.run.id"), "r1");
  EXPECT_EQ(string_value(run, "orch.run.status"), "failed");
  EXPECT_EQ(int_value(run, "gen_ai.usage.input_tokens"), "22");
  EXPECT_EQ(int_value(run, "gen_ai.usage.output_tokens"), "23");
  EXPECT_NEAR(double_value(run, "orch.cost_usd"), 0.53, 1e-12);
}

TEST_F(OtlpTraceTest, StatusIsOkForSuccessAndErrorWithTheReasonForFailure) {
  const ojson request = build();
  EXPECT_EQ(span_named(request, "run demo").at("status"),
            (ojson{{"code", 2}, {"message", "step 'b' failed"}}));
  EXPECT_EQ(span_named(request, "a").at("status"), (ojson{{"code", 1}}));
  EXPECT_EQ(span_named(request, "a attempt 1").at("status"), (ojson{{"code", 1}}));
  EXPECT_EQ(span_named(request, "b").at("status"), (ojson{{"code", 2}, {"message", "timed out after 2s"}}));
  EXPECT_EQ(span_named(request, "b attempt 1").at("status"),
            (ojson{{"code", 2}, {"message", "HTTP 500 from the provider"}}));
  const ojson b2 = span_named(request, "b attempt 2");
  EXPECT_EQ(b2.at("status").at("code"), 2) << "timed_out is an error";
  EXPECT_EQ(string_value(b2, "orch.attempt.reason"), "timed out after 2s");
}

TEST_F(OtlpTraceTest, IdsDependOnlyOnTheLedgersNames) {
  EXPECT_EQ(json_text(build()), json_text(build())) << "a second export sends the same spans";
  EXPECT_EQ(otlp_trace_id("r1"), spans_of(build()).at(0).at("traceId"));
  EXPECT_NE(otlp_trace_id("r1"), otlp_trace_id("r2"));
  EXPECT_NE(otlp_span_id("r1"), otlp_span_id("r2"));
  EXPECT_NE(otlp_span_id("r1", "a", 1), otlp_span_id("r1", "a", 2));
  EXPECT_NE(otlp_span_id("r1", "a"), otlp_span_id("r1", "a", 1));
  EXPECT_NE(otlp_span_id("r1", "ab", 1), otlp_span_id("r1a", "b", 1)) << "names are not run together";
}

TEST_F(OtlpTraceTest, AnUnfinishedRunEndsAtTheLastTheLedgerKnows) {
  auto run = store_.find_run("r1");
  ASSERT_TRUE(run && *run);
  RunRecord r = **run;
  r.status = RunStatus::Running;
  r.reason.clear();
  r.finished_at = 0;
  r.exit_code = -1;
  ASSERT_TRUE(store_.update_run(r));
  AttemptRecord running = attempt("c", 1, AttemptStatus::Running, "", 0, 0, 0, 8'000, 0);
  running.finished_at = 0;
  running.exit_code = -1;
  ASSERT_TRUE(store_.insert_attempt(running));

  const ojson request = build();
  EXPECT_EQ(spans_of(request).size(), 1u + 3u + 4u);
  const ojson root = span_named(request, "run demo");
  EXPECT_EQ(root.at("status"), (ojson{{"code", 0}})) << "a running run is neither OK nor an error";
  EXPECT_EQ(root.at("endTimeUnixNano"), "1700000009000000000") << "its row's last update";
  const ojson c1 = span_named(request, "c attempt 1");
  EXPECT_EQ(c1.at("status").at("code"), 0);
  EXPECT_EQ(c1.at("startTimeUnixNano"), "1700000008000000000");
  EXPECT_EQ(c1.at("endTimeUnixNano"), "1700000009000000000");
  EXPECT_EQ(int_value(c1, "orch.attempt.exit_code"), "<none>") << "not known while it runs";
}

TEST_F(OtlpTraceTest, BytesThatAreNotUtf8AreSentReplaced) {
  ASSERT_TRUE(store_.insert_attempt(
      attempt("c", 1, AttemptStatus::Failed, std::string("bad \xff\xfe bytes"), 0, 0, 0, 8'000, 9'000)));
  const std::string body = json_text(build());
  const ojson back = ojson::parse(body, nullptr, false);
  ASSERT_FALSE(back.is_discarded()) << body;
  EXPECT_EQ(span_named(back, "c attempt 1").at("status").at("message"), "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");
}

TEST_F(OtlpTraceTest, AnUnknownRunIsNotFound) {
  auto built = build_otlp_trace(store_, "nope");
  ASSERT_FALSE(built);
  EXPECT_EQ(built.error().code, ErrorCode::NotFound);
}

// The trace of a run the engine drove: the spans follow from what it recorded.
TEST(OtlpTraceOfARun, FollowsTheLedgerTheEngineWrote) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir / "ws");
  testing::InMemoryStore store(dir / "store");
  const std::string yaml = R"(name: traced
steps:
  - {id: a, sh: "echo hi"}
  - {id: b, deps: [a], sh: "exit 3", attempts: 2}
  - {id: c, deps: [b], sh: "echo never"}
)";
  LoadResult loaded = parse_plan(yaml, (dir / "plan.yaml").string());
  ASSERT_TRUE(loaded.diagnostics.empty());
  const ExecutorRegistry builtins = ExecutorRegistry::with_builtins();
  ASSERT_TRUE(
      validate_plan(loaded.plan, validate_options_for(dir / "ws", (dir / "plan.yaml").string(), builtins))
          .empty());
  EngineOptions options;
  options.workspace = dir / "ws";
  Engine engine(store, options);
  auto outcome = engine.run(loaded.plan, yaml);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->status, RunStatus::Failed);

  auto built = build_otlp_trace(store, outcome->run_id);
  ASSERT_TRUE(built) << built.error().message;
  const ojson& spans = spans_of(*built);
  EXPECT_EQ(spans.size(), 1u + 2u + 3u) << "the run, a and b (c skipped), a once and b twice";
  EXPECT_EQ(span_named(*built, "run traced").at("status").at("code"), 2);
  EXPECT_EQ(int_value(span_named(*built, "b attempt 2"), "orch.attempt.exit_code"), "3");
  EXPECT_EQ(span_named(*built, "a").at("status").at("code"), 1);
  EXPECT_EQ(string_value(spans.at(0), "orch.run.id"), outcome->run_id);
}

}  // namespace otlp_trace_test
}  // namespace orch
