// The CycleStore (orch/cycle_store.h, schema v13) of every ledger backend
// (ledger/ledger_backends.h: a SQLite file, a PostgreSQL schema): cycle runs
// kept whole and updated in place, and the audit of the transitions their
// writer applied, at most one per (run, cycle, item). One suite, both backends.
#include "orch/cycle_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ledger/ledger_backends.h"
#include "orch/ledger.h"

namespace orch {
namespace {

CycleRecord sample_cycle(const std::string& id, std::int64_t created_at) {
  CycleRecord c;
  c.id = id;
  c.name = "proofs";
  c.workspace = "/work/ws";
  c.config_file = "/work/ws/cycle.yaml";
  c.status = CycleStatus::Running;
  c.cycles = 0;
  c.doc_json = R"({"id":")" + id + R"(","cycles":[]})";
  c.created_at = created_at;
  c.updated_at = created_at + 1;
  return c;
}

CycleTransition sample_transition(const std::string& run, int cycle, const std::string& item) {
  CycleTransition t;
  t.run = run;
  t.cycle = cycle;
  t.job = "prove-" + item;
  t.item = item;
  t.from = "todo";
  t.to = "done";
  t.gate = "lake build " + item;
  t.gate_exit = 0;
  t.hash_before = "sha256:before-" + item;
  t.hash_after = "sha256:after-" + item;
  t.time_ms = 1700000000000 + cycle;
  return t;
}

#define ORCH_EXPECT_CYCLE_FIELD(field) EXPECT_EQ(actual.field, expected.field) << #field
void expect_same_cycle(const CycleRecord& actual, const CycleRecord& expected) {
  ORCH_EXPECT_CYCLE_FIELD(id);
  ORCH_EXPECT_CYCLE_FIELD(name);
  ORCH_EXPECT_CYCLE_FIELD(workspace);
  ORCH_EXPECT_CYCLE_FIELD(config_file);
  ORCH_EXPECT_CYCLE_FIELD(status);
  ORCH_EXPECT_CYCLE_FIELD(cycles);
  ORCH_EXPECT_CYCLE_FIELD(doc_json);
  ORCH_EXPECT_CYCLE_FIELD(created_at);
  ORCH_EXPECT_CYCLE_FIELD(updated_at);
}
void expect_same_transition(const CycleTransition& actual, const CycleTransition& expected) {
  ORCH_EXPECT_CYCLE_FIELD(run);
  ORCH_EXPECT_CYCLE_FIELD(cycle);
  ORCH_EXPECT_CYCLE_FIELD(job);
  ORCH_EXPECT_CYCLE_FIELD(item);
  ORCH_EXPECT_CYCLE_FIELD(from);
  ORCH_EXPECT_CYCLE_FIELD(to);
  ORCH_EXPECT_CYCLE_FIELD(gate);
  ORCH_EXPECT_CYCLE_FIELD(gate_exit);
  ORCH_EXPECT_CYCLE_FIELD(hash_before);
  ORCH_EXPECT_CYCLE_FIELD(hash_after);
  ORCH_EXPECT_CYCLE_FIELD(time_ms);
}
#undef ORCH_EXPECT_CYCLE_FIELD

// A ledger opened as the cycle runtime opens it; with_run() adds cycle run `c1`.
class Cycles : public ledger_test::LedgerOnBackend {
 protected:
  CycleStore& store() { return ledger_->cycles(); }
  void with_run() { ASSERT_TRUE(store().insert_cycle(sample_cycle("c1", 1000))); }
};

TEST_P(Cycles, ACycleRunRoundTripsEveryFieldAndUpdatesInPlace) {
  const CycleRecord inserted = sample_cycle("c1", 1000);
  ASSERT_TRUE(store().insert_cycle(inserted));
  auto found = store().find_cycle("c1");
  ASSERT_TRUE(found && *found) << (found ? "no row" : found.error().message);
  expect_same_cycle(**found, inserted);

  CycleRecord changed = inserted;
  changed.name = "proofs, renamed";
  changed.workspace = "/elsewhere";
  changed.config_file = "/elsewhere/cycle.yaml";
  changed.status = CycleStatus::MaxIterations;
  changed.cycles = 12;
  changed.doc_json = R"({"cycles":[1,2,3],"bytes":"\u00ff"})";
  changed.created_at = 999;
  changed.updated_at = 5000;
  ASSERT_TRUE(store().update_cycle(changed));
  found = store().find_cycle("c1");
  ASSERT_TRUE(found && *found);
  expect_same_cycle(**found, changed);
}

TEST_P(Cycles, CycleRunsListNewestFirst) {
  ASSERT_TRUE(store().insert_cycle(sample_cycle("c-middle", 2000)));
  ASSERT_TRUE(store().insert_cycle(sample_cycle("c-old", 1000)));
  ASSERT_TRUE(store().insert_cycle(sample_cycle("c-new", 3000)));
  auto all = store().list_cycles();
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, "c-new");
  EXPECT_EQ((*all)[1].id, "c-middle");
  EXPECT_EQ((*all)[2].id, "c-old");
  expect_same_cycle((*all)[0], sample_cycle("c-new", 3000));
}

TEST_P(Cycles, AnUnknownCycleRunIsNotFound) {
  auto missing = store().find_cycle("nope");
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_FALSE(*missing);
  auto not_there = store().update_cycle(sample_cycle("nope", 1));
  ASSERT_FALSE(not_there);
  EXPECT_EQ(not_there.error().code, ErrorCode::NotFound);
  EXPECT_NE(not_there.error().message.find("'nope'"), std::string::npos) << not_there.error().message;
  auto none = store().list_cycles();
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_P(Cycles, AnIdIsInsertedOnce) {
  ASSERT_NO_FATAL_FAILURE(with_run());
  CycleRecord again = sample_cycle("c1", 2000);
  again.name = "another";
  auto duplicate = store().insert_cycle(again);
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, ErrorCode::Store);
  EXPECT_NE(duplicate.error().message.find("inserting cycle run 'c1'"), std::string::npos)
      << duplicate.error().message;
  auto kept = store().find_cycle("c1");
  ASSERT_TRUE(kept && *kept);
  EXPECT_EQ((*kept)->name, "proofs") << "the first row is untouched";
}

// Every status is written under its name and read back as itself; the schema
// refuses any other name, and an empty document is stored as {}.
TEST_P(Cycles, EveryStatusRoundTripsUnderItsName) {
  ASSERT_NO_FATAL_FAILURE(with_run());
  const std::pair<CycleStatus, const char*> statuses[] = {
      {CycleStatus::Running, "running"},
      {CycleStatus::Converged, "converged"},
      {CycleStatus::MaxIterations, "max_iterations"},
      {CycleStatus::Budget, "budget"},
      {CycleStatus::Failed, "failed"},
  };
  for (const auto& [status, name] : statuses) {
    EXPECT_EQ(cycle_status_name(status), std::string(name));
    EXPECT_EQ(parse_cycle_status(name), status) << name;
    CycleRecord c = sample_cycle("c1", 1000);
    c.status = status;
    ASSERT_TRUE(store().update_cycle(c)) << name;
    auto found = store().find_cycle("c1");
    ASSERT_TRUE(found && *found) << name;
    EXPECT_EQ((*found)->status, status) << name;
    EXPECT_EQ(raw_query("SELECT status FROM cycles WHERE id = 'c1'"), name);
  }
  EXPECT_EQ(parse_cycle_status("Converged"), std::nullopt) << "names are compared exactly";
  EXPECT_EQ(parse_cycle_status(""), std::nullopt);
  EXPECT_NE(raw_exec("UPDATE cycles SET status = 'done'"), "");
  EXPECT_NE(raw_exec("UPDATE cycles SET doc_json = 'not json'"), "");
  EXPECT_NE(raw_exec("UPDATE cycles SET cycles = -1"), "");

  CycleRecord empty_doc = sample_cycle("c2", 1000);
  empty_doc.doc_json = "";
  ASSERT_TRUE(store().insert_cycle(empty_doc));
  auto found = store().find_cycle("c2");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->doc_json, "{}");
}

TEST_P(Cycles, TransitionsComeBackInTheOrderTheyWereRecorded) {
  ASSERT_NO_FATAL_FAILURE(with_run());
  ASSERT_TRUE(store().insert_cycle(sample_cycle("c-other", 2000)));
  const CycleTransition recorded[] = {
      sample_transition("c1", 1, "lemma-b"),
      sample_transition("c1", 1, "lemma-a"),
      sample_transition("c1", 2, "lemma-b"),
  };
  for (const CycleTransition& t : recorded) {
    auto written = store().insert_transition(t);
    ASSERT_TRUE(written) << written.error().message;
    EXPECT_TRUE(*written) << t.item;
  }
  CycleTransition failed_gate = sample_transition("c-other", 1, "lemma-a");
  failed_gate.to = "stuck";
  failed_gate.gate_exit = 1;
  ASSERT_TRUE(store().insert_transition(failed_gate));

  auto listed = store().transitions("c1");
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) expect_same_transition((*listed)[i], recorded[i]);
  EXPECT_GT((*listed)[0].seq, 0);
  EXPECT_LT((*listed)[0].seq, (*listed)[1].seq);
  EXPECT_LT((*listed)[1].seq, (*listed)[2].seq);

  auto other = store().transitions("c-other");
  ASSERT_TRUE(other);
  ASSERT_EQ(other->size(), 1u);
  expect_same_transition((*other)[0], failed_gate);
  EXPECT_GT((*other)[0].seq, (*listed)[2].seq) << "seq orders the whole audit";
  auto none = store().transitions("nope");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

// A writer resumed after kill -9 offers the transitions it applied again: the
// second of a (run, cycle, item) is reported as there already, and writes nothing.
TEST_P(Cycles, ASecondTransitionOfAnItemInACycleWritesNothing) {
  ASSERT_NO_FATAL_FAILURE(with_run());
  const CycleTransition first = sample_transition("c1", 1, "lemma-a");
  ASSERT_TRUE(store().insert_transition(first));
  CycleTransition again = first;
  again.job = "another-job";
  again.to = "stuck";
  again.gate_exit = 2;
  again.hash_after = "sha256:other";
  again.time_ms = first.time_ms + 60000;
  auto second = store().insert_transition(again);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_FALSE(*second);
  auto listed = store().transitions("c1");
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  expect_same_transition((*listed)[0], first);

  // The same item in the next cycle, or another item in the same one, is new.
  auto next_cycle = store().insert_transition(sample_transition("c1", 2, "lemma-a"));
  ASSERT_TRUE(next_cycle);
  EXPECT_TRUE(*next_cycle);
  auto other_item = store().insert_transition(sample_transition("c1", 1, "lemma-b"));
  ASSERT_TRUE(other_item);
  EXPECT_TRUE(*other_item);
  listed = store().transitions("c1");
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->size(), 3u);
}

// An unknown run is refused at once, even inside a transaction (where the
// foreign key would only fail the COMMIT), and the transaction goes on.
TEST_P(Cycles, ATransitionOfAnUnknownRunIsNotFound) {
  ASSERT_NO_FATAL_FAILURE(with_run());
  auto alone = store().insert_transition(sample_transition("ghost", 1, "lemma-a"));
  ASSERT_FALSE(alone);
  EXPECT_EQ(alone.error().code, ErrorCode::NotFound);
  EXPECT_NE(alone.error().message.find("'ghost'"), std::string::npos) << alone.error().message;

  Store& runs = ledger_->runs();
  ASSERT_TRUE(runs.begin());
  auto inside = store().insert_transition(sample_transition("ghost", 1, "lemma-b"));
  ASSERT_FALSE(inside);
  EXPECT_EQ(inside.error().code, ErrorCode::NotFound);
  ASSERT_TRUE(store().insert_transition(sample_transition("c1", 1, "lemma-a")));
  ASSERT_TRUE(runs.commit());

  EXPECT_EQ(raw_query("SELECT count(*) FROM cycle_transitions"), "1");
  EXPECT_EQ(raw_query("SELECT count(*) FROM cycle_transitions WHERE run = 'ghost'"), "0");
}

TEST_P(Cycles, CycleRunsAndTransitionsSurviveReopening) {
  ASSERT_NO_FATAL_FAILURE(with_run());
  CycleRecord done = sample_cycle("c1", 1000);
  done.status = CycleStatus::Converged;
  done.cycles = 2;
  ASSERT_TRUE(store().update_cycle(done));
  ASSERT_TRUE(store().insert_transition(sample_transition("c1", 1, "lemma-a")));
  ASSERT_TRUE(store().insert_transition(sample_transition("c1", 2, "lemma-b")));
  ASSERT_NO_FATAL_FAILURE(reopen());
  auto found = store().find_cycle("c1");
  ASSERT_TRUE(found && *found);
  expect_same_cycle(**found, done);
  auto listed = store().transitions("c1");
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2u);
  expect_same_transition((*listed)[0], sample_transition("c1", 1, "lemma-a"));
  expect_same_transition((*listed)[1], sample_transition("c1", 2, "lemma-b"));
  // After the reopen the recorded ones are still recorded once.
  auto again = store().insert_transition(sample_transition("c1", 2, "lemma-b"));
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
}

// The audit is append-only in the schema itself, for a person with sqlite3 or
// psql too: no UPDATE, no DELETE, no row put in place of another; a recorded
// (run, cycle, item) offered again (SQLite: INSERT OR REPLACE; PostgreSQL: ON
// CONFLICT DO NOTHING) writes nothing rather than deleting the first.
TEST_P(Cycles, TheTransitionsAreAppendOnly) {
  ASSERT_NO_FATAL_FAILURE(with_run());
  ASSERT_TRUE(store().insert_transition(sample_transition("c1", 1, "lemma-a")));
  const std::string seq = raw_query("SELECT seq FROM cycle_transitions");
  const std::string columns =
      "run, cycle, job, item, from_state, to_state, gate, gate_exit, hash_before, hash_after, time_ms";
  const std::string forged_row = "('c1', 1, 'j', 'lemma-a', 'todo', 'forged', '', 0, '', '', 0)";
  // Each dialect's way to put a row in place of another: refused.
  std::vector<std::string> forgeries = {"UPDATE cycle_transitions SET to_state = 'forged'",
                                        "DELETE FROM cycle_transitions"};
  // And its ways to offer a recorded (run, cycle, item) again: they write nothing.
  std::vector<std::string> repeats;
  if (is_postgres()) {
    forgeries.push_back("INSERT INTO cycle_transitions (" + columns + ") VALUES " + forged_row +
                        " ON CONFLICT (run, cycle, item) DO UPDATE SET to_state = 'forged'");
    repeats.push_back("INSERT INTO cycle_transitions (" + columns + ") SELECT " + columns +
                      " FROM cycle_transitions ON CONFLICT DO NOTHING");
    repeats.push_back("INSERT INTO cycle_transitions (" + columns + ") VALUES " + forged_row +
                      " ON CONFLICT DO NOTHING");
  } else {
    forgeries.push_back("INSERT OR REPLACE INTO cycle_transitions VALUES (" + seq +
                        ", 'c1', 1, 'j', 'lemma-other', 'todo', 'forged', '', 0, '', '', 0)");
    repeats.push_back("INSERT OR REPLACE INTO cycle_transitions SELECT * FROM cycle_transitions");
    repeats.push_back("INSERT OR REPLACE INTO cycle_transitions (" + columns + ") VALUES " + forged_row);
  }
  for (const std::string& sql : forgeries) {
    const std::string error = raw_exec(sql);
    EXPECT_NE(error.find("append-only"), std::string::npos) << sql << ": " << error;
  }
  for (const std::string& sql : repeats) EXPECT_EQ(raw_exec(sql), "") << sql;
  EXPECT_EQ(raw_query("SELECT count(*) FROM cycle_transitions"), "1");
  EXPECT_EQ(raw_query("SELECT seq || ' ' || to_state FROM cycle_transitions"), seq + " done");
  EXPECT_NE(raw_exec("INSERT INTO cycle_transitions (run, cycle, job, item, from_state, to_state, gate,"
                     " gate_exit, hash_before, hash_after, time_ms)"
                     " VALUES ('c1', 0, 'j', 'lemma-z', 'todo', 'done', '', 0, '', '', 0)"),
            "")
      << "cycles count from 1";
}

// One transaction, whichever of the ledger's four interfaces begins and ends it.
TEST_P(Cycles, TheCycleStoreSharesTheLedgersTransaction) {
  Store& runs = ledger_->runs();
  ASSERT_TRUE(runs.begin());
  ASSERT_TRUE(store().insert_cycle(sample_cycle("c-rolled-back", 1000)));
  ASSERT_TRUE(store().insert_transition(sample_transition("c-rolled-back", 1, "lemma-a")));
  ASSERT_TRUE(runs.rollback());
  auto gone = store().find_cycle("c-rolled-back");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(*gone);
  auto no_transitions = store().transitions("c-rolled-back");
  ASSERT_TRUE(no_transitions);
  EXPECT_TRUE(no_transitions->empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, Cycles, ::testing::ValuesIn(ledger_test::kLedgerBackends),
                         ledger_test::ledger_backend_name);

}  // namespace
}  // namespace orch
