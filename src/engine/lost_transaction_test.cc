// Engine tests: a turn whose transaction the store lost with its connection
// (ErrorCode::Disconnected: a PostgreSQL server that restarted) is written
// again by the TurnWriter and the run goes on, every step done once, every row
// and event written once; a turn lost too often ends the run, resumable (and a
// resume whose own first transaction is lost goes on too). On
// each backend of the ledger (testing/engine_fixture.h), through a store that
// loses transactions on cue (LosingStore). The PostgreSQL store's own part —
// telling a lost connection, reconnecting, settling a COMMIT whose answer was
// lost — is tested in src/postgres/pg_reconnect_test.cc, and a real restart
// under `orch run` in tests/cli/postgres/reconnect_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/turn_writer.h"
#include "orch/engine.h"
#include "testing/engine_fixture.h"
#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::EngineTest;
using orch::testing::read_file;

// Forwards to a real store, and loses the transaction in progress as a store
// whose server restarted does: at the writes and commits of a transaction whose
// number (counted from 1 over the store's life, or from the first event of kind
// `from_event` when given) is in `lose_at`, the real transaction is rolled back
// and that call, and every later one of the transaction, fails with
// ErrorCode::Disconnected until rollback() or begin().
class LosingStore final : public Store {
 public:
  LosingStore(Store& inner, std::set<int> lose_at, std::string from_event = "")
      : inner_(inner), lose_at_(std::move(lose_at)), from_event_(std::move(from_event)) {}
  int lost = 0;  // transactions lost

  const std::filesystem::path& folder() const override { return inner_.folder(); }
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
    lost_now_ = false;
    ORCH_TRY(inner_.begin());
    in_tx_ = true;
    return {};
  }
  Expected<void> commit() override {
    auto allowed = goes_on();
    const bool was_lost = lost_now_;
    in_tx_ = lost_now_ = false;
    if (!allowed) {
      if (!was_lost) (void)inner_.rollback();
      return allowed;
    }
    return inner_.commit();
  }
  Expected<void> rollback() override {
    const bool was_lost = lost_now_;
    in_tx_ = lost_now_ = false;
    if (was_lost) return {};  // the server rolled it back
    return inner_.rollback();
  }

  Expected<void> insert_run(const RunRecord& r) override {
    return write([&] { return inner_.insert_run(r); });
  }
  Expected<void> update_run(const RunRecord& r) override {
    return write([&] { return inner_.update_run(r); });
  }
  Expected<void> insert_plan_version(const PlanVersion& p) override {
    return write([&] { return inner_.insert_plan_version(p); });
  }
  Expected<void> upsert_step(const StepRecord& s) override {
    return write([&] { return inner_.upsert_step(s); });
  }
  Expected<void> insert_step(const StepRecord& s) override {
    return write([&] { return inner_.insert_step(s); });
  }
  Expected<void> insert_attempt(const AttemptRecord& a) override {
    return write([&] { return inner_.insert_attempt(a); });
  }
  Expected<void> finish_attempt(const AttemptRecord& a) override {
    return write([&] { return inner_.finish_attempt(a); });
  }
  Expected<std::int64_t> append_event(const EventRecord& e) override {
    if (e.kind == from_event_) from_event_.clear();
    ORCH_TRY(goes_on());
    return inner_.append_event(e);
  }
  Expected<void> request_cancel(const std::string& id) override { return inner_.request_cancel(id); }

  Expected<std::optional<RunRecord>> find_run(const std::string& id) override { return inner_.find_run(id); }
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
  Expected<bool> cancel_requested(const std::string& id) override {
    if (lost_now_) return std::unexpected(disconnected());
    return inner_.cancel_requested(id);
  }
  Expected<AttemptTotals> attempt_totals(const std::string& id) override { return inner_.attempt_totals(id); }

 private:
  static Error disconnected() {
    return Error{ErrorCode::Disconnected, "losing store: the connection was lost in this transaction"};
  }
  // Whether the transaction goes on at this call (outside one, a store reconnects by itself).
  Expected<void> goes_on() {
    if (!in_tx_ || !from_event_.empty()) return {};
    if (lost_now_) return std::unexpected(disconnected());
    if (!lose_at_.contains(++calls_)) return {};
    (void)inner_.rollback();
    lost_now_ = true;
    ++lost;
    return std::unexpected(disconnected());
  }
  template <class Write>
  Expected<void> write(Write w) {
    ORCH_TRY(goes_on());
    return w();
  }

  Store& inner_;
  std::set<int> lose_at_;
  std::string from_event_;  // counting starts at the first event of this kind
  int calls_ = 0;
  bool in_tx_ = false;
  bool lost_now_ = false;
};

// 12 processes appending their name to ran.txt, and a chain of builtins (many
// writes in one turn), 3 at a time.
std::string appending_plan() {
  std::string yaml = "concurrency: 3\nsteps:\n";
  for (int i = 0; i < 12; ++i) yaml += fmt::format("  - {{id: p{}, sh: 'echo p{} >> ran.txt'}}\n", i, i);
  yaml += "  - {id: b0, executor: builtin:echo, inputs: {text: one}}\n";
  for (int i = 1; i < 8; ++i)
    yaml += fmt::format("  - {{id: b{}, executor: builtin:echo, inputs: {{text: one}}, deps: [b{}]}}\n", i,
                        i - 1);
  return yaml;
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST_P(EngineTest, ATurnTheStoreLostIsWrittenAgainAndTheRunGoesOnAsIfNothingHappened) {
  // Losses at the very first write (the new run's row), at writes made again
  // (100-103: a turn lost four times in a row), and along the run, further apart
  // than the largest turn's writes (each loss makes its turn written again).
  LosingStore losing(*store_, {1, 2, 40, 100, 101, 102, 103, 160, 161, 220});
  Plan plan = load(appending_plan());
  EngineOptions options;
  options.workspace = ws();
  Engine engine(losing, options);
  auto out = engine.run(plan, text_);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Succeeded) << out->reason;
  EXPECT_GE(losing.lost, 9) << "the plan made fewer writes than the test means to lose";

  std::vector<std::string> want;
  for (int i = 0; i < 12; ++i) want.push_back(fmt::format("p{}", i));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(sorted_lines(read_file(ws() / "ran.txt")), want) << "every process ran once";
  auto steps = store_->steps(out->run_id);
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 20u);
  for (const StepRecord& s : *steps) {
    EXPECT_EQ(s.status, StepStatus::Done) << s.step_id << ": " << s.reason;
    EXPECT_EQ(attempts(out->run_id, s.step_id).size(), 1u) << s.step_id << ": one attempt, written once";
  }
  EXPECT_EQ(events(out->run_id, "run_started").size(), 1u);
  EXPECT_EQ(events(out->run_id, "step_done").size(), 20u) << "each event written once";
  EXPECT_EQ(events(out->run_id, "attempt_started").size(), 20u);
  EXPECT_EQ(events(out->run_id, "run_finished").size(), 1u);
  auto run = store_->find_run(out->run_id);
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->status, RunStatus::Succeeded);
  EXPECT_EQ((*run)->spent_attempts, 20);
}

TEST_P(EngineTest, ATurnLostMoreTimesThanItIsWrittenAgainEndsTheRunResumable) {
  std::set<int> lose_at;
  for (int n = 40; n < 40 + 1 + TurnWriter::kRewrites; ++n) lose_at.insert(n);
  LosingStore losing(*store_, lose_at);
  Plan plan = load(appending_plan());
  EngineOptions options;
  options.workspace = ws();
  std::string run_id;
  options.on_started = [&](const std::string& id) { run_id = id; };
  {
    Engine engine(losing, options);
    auto out = engine.run(plan, text_);
    ASSERT_FALSE(out) << "a store that keeps losing the turn ends the run";
    EXPECT_EQ(out.error().code, ErrorCode::Disconnected);
  }
  ASSERT_FALSE(run_id.empty());
  auto left = store_->find_run(run_id);
  ASSERT_TRUE(left && *left);
  EXPECT_EQ((*left)->status, RunStatus::Running) << "left as a dead driver leaves it";
  // The resume's own first transaction lost too (its steps' rows, its run row): written again.
  LosingStore losing_again(*store_, {1, 3}, "run_resumed");
  Engine resuming(losing_again, EngineOptions{});
  auto resumed = resuming.resume(run_id, std::nullopt);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(resumed->status, RunStatus::Succeeded) << resumed->reason;
  EXPECT_EQ(losing_again.lost, 2);
  for (const char* step : {"p0", "p11", "b7"}) EXPECT_EQ(this->step(run_id, step).status, StepStatus::Done);
}

}  // namespace
}  // namespace orch
