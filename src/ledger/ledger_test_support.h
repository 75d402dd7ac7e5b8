// ledger/ledger_test_support.h — records, a raw SQLite connection and old ledgers for the ledger's tests.
//
// Sample records fill every field with a distinct, non-default value so a round
// trip through the store proves each column is written and read back.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "ledger/schema.h"
#include "orch/store.h"

namespace orch::ledger_test {

// Bytes that are not UTF-8, with an embedded NUL: step output may be anything.
inline std::string binary_bytes() {
  return std::string("ok\xff\xfe\x00\x80tail\xc3(", 13);
}

inline RunRecord sample_run(const std::string& id, std::int64_t created_at = 1700000000123) {
  RunRecord r;
  r.id = id;
  r.name = "plan of " + id;
  r.status = RunStatus::BudgetExhausted;
  r.reason = "budget 'tokens' exhausted";
  r.plan_path = "/work/plans/" + id + ".yaml";
  r.workspace = "/work/ws";
  r.plan_version = 3;
  r.concurrency = 7;
  r.keep_going = true;
  r.exit_code = 4;
  r.created_at = created_at;
  r.updated_at = created_at + 1;
  r.finished_at = created_at + 2;
  r.spent_tokens = 9'000'000'000LL;  // beyond 32 bits
  r.spent_cost_usd = 0.1 + 0.2;      // not exactly representable in decimal
  r.spent_attempts = 11;
  r.spent_wall_ms = 123456;
  r.owner_pid = 4242;
  r.cancel_requested = false;
  return r;
}

inline StepRecord sample_step(const std::string& run_id, const std::string& step_id, int idx) {
  StepRecord s;
  s.run_id = run_id;
  s.step_id = step_id;
  s.idx = idx;
  s.goal = "goal of " + step_id;
  s.executor = "shell";
  s.status = StepStatus::Done;
  s.reason = "";
  s.result = binary_bytes();
  s.fingerprint = "fp-" + step_id;
  s.attempts_counted = 2;
  s.last_attempt = 3;
  s.tokens_in = 100;
  s.tokens_out = 200;
  s.cost_usd = 1e-300;
  s.wall_ms = 5000;
  s.started_at = 1700000001000;
  s.finished_at = 1700000006000;
  return s;
}

// A freshly started attempt (status running, nothing known about its end yet).
inline AttemptRecord started_attempt(const std::string& run_id, const std::string& step_id, int number) {
  AttemptRecord a;
  a.run_id = run_id;
  a.step_id = step_id;
  a.number = number;
  a.status = AttemptStatus::Running;
  a.fingerprint = "fp-" + step_id;
  a.stdout_path = "runs/" + run_id + "/" + step_id + "/" + std::to_string(number) + ".stdout";
  a.stderr_path = "runs/" + run_id + "/" + step_id + "/" + std::to_string(number) + ".stderr";
  a.started_at = 1700000002000;
  a.snapshot_dir = "snapshots/" + step_id;
  return a;
}

// The same attempt, finished, with every field set.
inline AttemptRecord finished_attempt(const std::string& run_id, const std::string& step_id, int number) {
  AttemptRecord a = started_attempt(run_id, step_id, number);
  a.status = AttemptStatus::TimedOut;
  a.counted = false;
  a.ending = AttemptEnding::TimedOut;
  a.exit_code = 137;
  a.signal = 9;
  a.reason = "timed out after 5s";
  a.checks_json = R"([{"kind":"exit_zero","held":false,"reason":"killed"}])";
  a.stdout_bytes = 1LL << 33;
  a.stderr_bytes = 17;
  a.stdout_truncated = true;
  a.stderr_truncated = true;
  a.output_tail = binary_bytes();
  a.tokens_in = 12;
  a.tokens_out = 34;
  a.cost_usd = -2.5;
  a.finished_at = 1700000007000;
  a.duration_ms = 5000;
  return a;
}

inline EventRecord sample_event(const std::string& run_id, const std::string& kind, std::int64_t ts = 1) {
  EventRecord e;
  e.run_id = run_id;
  e.ts = ts;
  e.kind = kind;
  e.step_id = "a";
  e.attempt = 1;
  e.data_json = R"({"why":"test"})";
  return e;
}

// Field-by-field comparisons, so a failure names the column that did not survive.
#define ORCH_EXPECT_FIELD(field) EXPECT_EQ(actual.field, expected.field) << #field
inline void expect_same(const RunRecord& actual, const RunRecord& expected) {
  ORCH_EXPECT_FIELD(id);
  ORCH_EXPECT_FIELD(name);
  ORCH_EXPECT_FIELD(status);
  ORCH_EXPECT_FIELD(reason);
  ORCH_EXPECT_FIELD(plan_path);
  ORCH_EXPECT_FIELD(workspace);
  ORCH_EXPECT_FIELD(plan_version);
  ORCH_EXPECT_FIELD(concurrency);
  ORCH_EXPECT_FIELD(keep_going);
  ORCH_EXPECT_FIELD(exit_code);
  ORCH_EXPECT_FIELD(created_at);
  ORCH_EXPECT_FIELD(updated_at);
  ORCH_EXPECT_FIELD(finished_at);
  ORCH_EXPECT_FIELD(spent_tokens);
  ORCH_EXPECT_FIELD(spent_cost_usd);
  ORCH_EXPECT_FIELD(spent_attempts);
  ORCH_EXPECT_FIELD(spent_wall_ms);
  ORCH_EXPECT_FIELD(owner_pid);
  ORCH_EXPECT_FIELD(cancel_requested);
}
inline void expect_same(const PlanVersion& actual, const PlanVersion& expected) {
  ORCH_EXPECT_FIELD(run_id);
  ORCH_EXPECT_FIELD(version);
  ORCH_EXPECT_FIELD(path);
  ORCH_EXPECT_FIELD(text);
  ORCH_EXPECT_FIELD(created_at);
}
inline void expect_same(const StepRecord& actual, const StepRecord& expected) {
  ORCH_EXPECT_FIELD(run_id);
  ORCH_EXPECT_FIELD(step_id);
  ORCH_EXPECT_FIELD(idx);
  ORCH_EXPECT_FIELD(goal);
  ORCH_EXPECT_FIELD(executor);
  ORCH_EXPECT_FIELD(status);
  ORCH_EXPECT_FIELD(reason);
  ORCH_EXPECT_FIELD(result);
  ORCH_EXPECT_FIELD(fingerprint);
  ORCH_EXPECT_FIELD(attempts_counted);
  ORCH_EXPECT_FIELD(last_attempt);
  ORCH_EXPECT_FIELD(tokens_in);
  ORCH_EXPECT_FIELD(tokens_out);
  ORCH_EXPECT_FIELD(cost_usd);
  ORCH_EXPECT_FIELD(wall_ms);
  ORCH_EXPECT_FIELD(started_at);
  ORCH_EXPECT_FIELD(finished_at);
}
inline void expect_same(const AttemptRecord& actual, const AttemptRecord& expected) {
  ORCH_EXPECT_FIELD(run_id);
  ORCH_EXPECT_FIELD(step_id);
  ORCH_EXPECT_FIELD(number);
  ORCH_EXPECT_FIELD(status);
  ORCH_EXPECT_FIELD(counted);
  ORCH_EXPECT_FIELD(ending);
  ORCH_EXPECT_FIELD(exit_code);
  ORCH_EXPECT_FIELD(signal);
  ORCH_EXPECT_FIELD(reason);
  ORCH_EXPECT_FIELD(checks_json);
  ORCH_EXPECT_FIELD(fingerprint);
  ORCH_EXPECT_FIELD(stdout_path);
  ORCH_EXPECT_FIELD(stderr_path);
  ORCH_EXPECT_FIELD(stdout_bytes);
  ORCH_EXPECT_FIELD(stderr_bytes);
  ORCH_EXPECT_FIELD(stdout_truncated);
  ORCH_EXPECT_FIELD(stderr_truncated);
  ORCH_EXPECT_FIELD(output_tail);
  ORCH_EXPECT_FIELD(tokens_in);
  ORCH_EXPECT_FIELD(tokens_out);
  ORCH_EXPECT_FIELD(cost_usd);
  ORCH_EXPECT_FIELD(started_at);
  ORCH_EXPECT_FIELD(finished_at);
  ORCH_EXPECT_FIELD(duration_ms);
  ORCH_EXPECT_FIELD(snapshot_dir);
}
inline void expect_same(const EventRecord& actual, const EventRecord& expected) {
  ORCH_EXPECT_FIELD(run_id);
  ORCH_EXPECT_FIELD(ts);
  ORCH_EXPECT_FIELD(kind);
  ORCH_EXPECT_FIELD(step_id);
  ORCH_EXPECT_FIELD(attempt);
  ORCH_EXPECT_FIELD(data_json);
}
#undef ORCH_EXPECT_FIELD

// A plain sqlite3 connection (no orch code), as a user's `sqlite3 orch.db` would be.
class RawDb {
 public:
  explicit RawDb(const std::filesystem::path& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) ADD_FAILURE() << "cannot open " << path;
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  // Runs SQL; returns "" on success, else SQLite's error message.
  std::string exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK) return "";
    std::string text = message != nullptr ? message : "error";
    sqlite3_free(message);
    return text;
  }
  // The first column of the first row, as text ("" when no row or an error).
  std::string query(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    std::string value;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK &&
        sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
    }
    sqlite3_finalize(statement);
    return value;
  }
  // How many times the program SQLite compiles `sql` to has the opcode `op`
  // (its EXPLAIN listing); -1 when it does not compile.
  int count_opcode(const std::string& sql, std::string_view op) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, ("EXPLAIN " + sql).c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sqlite3_errmsg(db_) << " in " << sql;
      return -1;
    }
    int count = 0;
    while (sqlite3_step(statement) == SQLITE_ROW) {
      const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(statement, 1));
      if (name != nullptr && op == name) ++count;
    }
    sqlite3_finalize(statement);
    return count;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Makes `raw` an orch ledger of schema `version` (the first `version` migrations,
// with no schema_version rows: the caller inserts those and its old rows).
inline void make_old_ledger(RawDb& raw, int version) {
  ASSERT_EQ(raw.exec("PRAGMA journal_mode = WAL"), "");
  ASSERT_EQ(raw.exec(fmt::format("PRAGMA application_id = {}", kOrchApplicationId)), "");
  for (int v = 0; v < version; ++v) {
    const Migration& m = schema_migrations()[static_cast<std::size_t>(v)];
    ASSERT_EQ(raw.exec(m.sql), "");
    // As migrate.cc does: a rewritten CREATE text is re-read only once the schema
    // cookie moves (a later ALTER would otherwise edit the stale text).
    if (m.edits_schema_text) {
      const int cookie = std::stoi(raw.query("PRAGMA schema_version"));
      ASSERT_EQ(raw.exec(fmt::format("PRAGMA schema_version = {}", cookie + 1)), "");
    }
  }
}

}  // namespace orch::ledger_test
