// testing/engine_fixture.h — a fresh ledger and workspace per test, for tests
// that drive the Engine (header-only: the engine tests link the engine, and
// orch_postgres and orch_testing_pg for the PostgreSQL half).
//
// Every fixture here is a GoogleTest fixture parametrised by the ledger's
// backend (kEngineBackends), so each engine test runs on both stores (issue 34):
// "sqlite", the file store/orch.db of the test's folder; "postgres", a fresh
// schema of the server ORCH_TEST_PG_URL_FILE names (testing/pg_test_schema.h;
// without one the test fails, it never skips), dropped after the test, with
// store/ as its local folder (attempt logs, snapshots, the spawn journal).
// Instantiate a suite with
//   INSTANTIATE_TEST_SUITE_P(Backends, SUITE, ::testing::ValuesIn(kEngineBackends), engine_backend_name);
// and a test that is about SQLite itself (its file, its WAL) in a suite
// instantiated with ::testing::Values("sqlite") only, saying why.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/postgres_store.h"
#include "orch/validate.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch::testing {

inline constexpr const char* kEngineBackends[] = {"sqlite", "postgres"};

// The test's name suffix: its backend.
inline std::string engine_backend_name(const ::testing::TestParamInfo<const char*>& info) {
  return info.param;
}

// One ledger on one backend, and as many connections to it as a test asks for.
class EngineLedger {
 public:
  // Makes the ledger's database: nothing for "sqlite" (the file is made at the
  // first open), a fresh schema for "postgres".
  Expected<void> create(const std::string& backend, const std::filesystem::path& folder) {
    backend_ = backend;
    folder_ = folder;
    if (is_postgres()) schema_ = ORCH_TRY(PgTestSchema::create());
    return {};
  }
  // A new connection to the ledger, as another orch process would open it.
  Expected<std::unique_ptr<Store>> open() const {
    if (is_postgres()) return open_postgres_store(schema_->url(), folder_);
    return open_sqlite_store(folder_ / "orch.db");
  }
  bool is_postgres() const { return backend_ == "postgres"; }
  // The PostgreSQL schema's URL (its search_path set), for a client outside orch.
  std::string url() const { return schema_ ? schema_->url() : std::string(); }
  const std::filesystem::path& folder() const { return folder_; }

 private:
  std::string backend_;
  std::filesystem::path folder_;
  std::unique_ptr<PgTestSchema> schema_;
};

class EngineFixture : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(ws());
    auto made = ledger_.create(GetParam(), dir_ / "store");
    ASSERT_TRUE(made) << made.error().message;
    auto s = ledger_.open();
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
  }

  std::filesystem::path ws() const { return dir_ / "ws"; }
  std::filesystem::path plan_file() const { return dir_ / "plan.yaml"; }
  bool on_postgres() const { return ledger_.is_postgres(); }

  // Another connection to the test's ledger (another `orch` process's).
  std::unique_ptr<Store> other_store() {
    auto other = ledger_.open();
    EXPECT_TRUE(other) << other.error().message;
    return other ? std::move(*other) : nullptr;
  }

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

  // Declared in this order so that they go in the other: the store's connection
  // closes, then the schema is dropped, then the folder is removed.
  TempDir dir_;
  EngineLedger ledger_;
  std::unique_ptr<Store> store_;
};

// The fixture of the engine's own tests (src/engine/engine_*_test.cc): plans
// written to plan.yaml and checked to have no diagnostic at all.
class EngineTest : public EngineFixture {
 protected:
  // ws/d/s.sock: a file a `writes: [d]` snapshot cannot make again once removed.
  void socket_in_workspace_folder_d() {
    std::filesystem::create_directories(ws() / "d");
    make_socket_file(ws() / "d" / "s.sock");
  }

  Plan load(const std::string& yaml) {
    std::filesystem::path file = plan_file();
    write_file(file, yaml);
    LoadResult r = parse_plan(yaml, file.string());
    std::string all;
    for (const auto& d : r.diagnostics) all += d.to_string() + "\n";
    EXPECT_TRUE(r.diagnostics.empty()) << all;
    auto registry = ExecutorRegistry::with_builtins();
    Diagnostics v = validate_plan(r.plan, validate_options_for(ws(), file.string(), registry));
    for (const auto& d : v) all += d.to_string() + "\n";
    EXPECT_TRUE(v.empty()) << all;
    text_ = yaml;
    return r.plan;
  }

  RunOutcome run(const std::string& yaml, EngineOptions options = {}) {
    Plan plan = load(yaml);
    options.workspace = ws();
    Engine engine(*store_, options);
    auto out = engine.run(plan, text_);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : RunOutcome{};
  }

  RunOutcome resume(const std::string& id, std::optional<std::string> replan = std::nullopt) {
    Engine engine(*store_, EngineOptions{});
    auto out = engine.resume(id, replan);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : RunOutcome{};
  }

  std::string text_;
};

// The engine tests about SQLite itself (the ledger's file and its WAL): on the
// "sqlite" backend only.
class EngineSqliteTest : public EngineTest {};

// Forwards to a real store and counts the calls the batching claims to save.
class CountingStore final : public Store {
 public:
  explicit CountingStore(Store& inner) : inner_(inner) {}
  int commits = 0;
  int step_writes = 0;
  int attempts_inserted = 0;
  int attempts_finished = 0;

  std::function<void()> before_begin;    // runs before every begin()
  std::function<void()> after_find_run;  // runs once, after the next find_run()

  const std::filesystem::path& folder() const override { return inner_.folder(); }
  // The store's own locks and outputs (a PostgreSQL store's are on its server).
  std::filesystem::path location() const override { return inner_.location(); }
  Expected<std::unique_ptr<StoreLock>> lock(
      const std::string& name,
      const std::function<std::string(const std::string& holder)>& when_busy) override {
    return inner_.lock(name, when_busy);
  }
  bool locked(const std::string& name) override { return inner_.locked(name); }
  Expected<OutputRead> read_attempt_output(const AttemptRecord& a, AttemptStream stream,
                                           const std::function<void(std::string_view)>& sink) const override {
    return inner_.read_attempt_output(a, stream, sink);
  }
  Expected<void> begin() override {
    if (before_begin) before_begin();
    return inner_.begin();
  }
  Expected<void> commit() override {
    ++commits;
    return inner_.commit();
  }
  Expected<void> rollback() override { return inner_.rollback(); }
  Expected<void> insert_run(const RunRecord& r) override { return inner_.insert_run(r); }
  Expected<void> update_run(const RunRecord& r) override { return inner_.update_run(r); }
  Expected<void> insert_plan_version(const PlanVersion& p) override { return inner_.insert_plan_version(p); }
  Expected<void> upsert_step(const StepRecord& s) override {
    ++step_writes;
    return inner_.upsert_step(s);
  }
  Expected<void> insert_step(const StepRecord& s) override {
    ++step_writes;
    return inner_.insert_step(s);
  }
  Expected<void> insert_attempt(const AttemptRecord& a) override {
    ++attempts_inserted;
    return inner_.insert_attempt(a);
  }
  Expected<void> finish_attempt(const AttemptRecord& a) override {
    ++attempts_finished;
    return inner_.finish_attempt(a);
  }
  Expected<std::int64_t> append_event(const EventRecord& e) override { return inner_.append_event(e); }
  Expected<void> request_cancel(const std::string& id) override { return inner_.request_cancel(id); }
  Expected<std::optional<RunRecord>> find_run(const std::string& id) override {
    auto found = inner_.find_run(id);
    if (after_find_run) std::exchange(after_find_run, nullptr)();  // once
    return found;
  }
  Expected<std::vector<RunRecord>> list_runs() override { return inner_.list_runs(); }
  Expected<std::vector<RunRecord>> owned_runs(OwnerKind kind, const std::string& owner) override {
    return inner_.owned_runs(kind, owner);
  }
  Expected<PlanVersion> latest_plan(const std::string& id) override { return inner_.latest_plan(id); }
  Expected<std::vector<PlanVersion>> plan_versions(const std::string& id) override {
    return inner_.plan_versions(id);
  }
  Expected<std::vector<StepRecord>> steps(const std::string& id) override { return inner_.steps(id); }
  Expected<std::vector<AttemptRecord>> attempts(const std::string& id, const std::string& step) override {
    return inner_.attempts(id, step);
  }
  Expected<std::vector<EventRecord>> events(const std::string& id, std::int64_t after, int limit) override {
    return inner_.events(id, after, limit);
  }
  Expected<std::vector<EventRecord>> events_of_kind(const std::string& id, const std::string& kind) override {
    return inner_.events_of_kind(id, kind);
  }
  Expected<bool> cancel_requested(const std::string& id) override { return inner_.cancel_requested(id); }
  Expected<AttemptTotals> attempt_totals(const std::string& id) override { return inner_.attempt_totals(id); }

 private:
  Store& inner_;
};

}  // namespace orch::testing
