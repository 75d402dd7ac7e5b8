// testing/engine_fixture.h — a fresh SQLite ledger and workspace per test, for
// tests that drive the Engine (header-only: the engine tests link the engine).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/testing.h"

namespace orch::testing {

class EngineFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(ws());
    auto s = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
  }

  std::filesystem::path ws() const { return dir_ / "ws"; }
  std::filesystem::path plan_file() const { return dir_ / "plan.yaml"; }

  // Parses and validates `yaml` against `executors` (default: the builtins);
  // every problem fails the test.
  Plan load(const std::string& yaml, const ExecutorRegistry* executors = nullptr) {
    LoadResult r = parse_plan(yaml, plan_file().string());
    for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
    const ExecutorRegistry builtins = ExecutorRegistry::with_builtins();
    Diagnostics v = validate_plan(
        r.plan, validate_options_for(ws(), plan_file().string(), executors ? *executors : builtins));
    for (const auto& d : v) ADD_FAILURE() << d.to_string();
    return r.plan;
  }

  // Runs `yaml` as a new run in ws() (options.workspace is set here).
  RunOutcome run(const std::string& yaml, EngineOptions options = {}) {
    Plan plan = load(yaml, options.executors.get());
    options.workspace = ws();
    Engine engine(*store_, options);
    auto out = engine.run(plan, yaml);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : RunOutcome{};
  }

  RunOutcome resume(const std::string& id, EngineOptions options = {},
                    std::optional<std::string> replan = std::nullopt) {
    Engine engine(*store_, options);
    auto out = engine.resume(id, replan);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : RunOutcome{};
  }

  StepRecord step(const std::string& run_id, const std::string& id) {
    auto steps = store_->steps(run_id);  // kept: a range-for over *temporary would dangle
    if (steps)
      for (auto& s : *steps)
        if (s.step_id == id) return s;
    ADD_FAILURE() << "no step " << id;
    return {};
  }

  std::vector<AttemptRecord> attempts(const std::string& run_id, const std::string& id) {
    auto a = store_->attempts(run_id, id);
    return a ? *a : std::vector<AttemptRecord>{};
  }

  std::vector<EventRecord> events(const std::string& run_id, const std::string& kind) {
    auto e = store_->events_of_kind(run_id, kind);
    return e ? *e : std::vector<EventRecord>{};
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

}  // namespace orch::testing
