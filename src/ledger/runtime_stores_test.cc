// The TraceStore (orch/trace_store.h) and the ReviewStore (orch/review_store.h)
// of every ledger backend (ledger/ledger_backends.h: SQLite and PostgreSQL), and
// the ledger's promise that its four interfaces share one transaction. One
// suite, both backends.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ledger/ledger_backends.h"
#include "orch/ledger.h"

namespace orch {
namespace {

using RuntimeStores = ledger_test::LedgerOnBackend;

TraceRecord sample_trace(const std::string& id, std::int64_t created_at) {
  TraceRecord t;
  t.id = id;
  t.request = "fix the stale date crash";
  t.project = "asunama";
  t.workspace = "/work/ws";
  t.state = "RECALL";
  t.status = TraceStatus::Open;
  t.doc_json = R"({"id":")" + id + R"(","pipeline":["RECALL","EXECUTE"]})";
  t.run_id = "";
  t.created_at = created_at;
  t.updated_at = created_at + 5;
  t.closed_at = 0;
  return t;
}

// One ledger, four views of it, without a cast: a transaction begun through
// the runs is the traces', the reviews' and the cycle runs' too.
TEST_P(RuntimeStores, TheLedgersFourInterfacesShareOneTransaction) {
  Store& runs = ledger_->runs();
  TraceStore& traces = ledger_->traces();
  ReviewStore& reviews = ledger_->reviews();
  CycleStore& cycles = ledger_->cycles();
  ASSERT_TRUE(runs.begin());
  ASSERT_TRUE(traces.insert_trace(sample_trace("t-rolled-back", 1000)));
  ReviewRecord r;
  r.id = "rv";
  r.name = "n";
  r.workspace = "/w";
  r.doc_json = "{}";
  ASSERT_TRUE(reviews.insert_review(r));
  CycleRecord c;
  c.id = "cy";
  ASSERT_TRUE(cycles.insert_cycle(c));
  ASSERT_TRUE(runs.rollback());
  auto trace = traces.find_trace("t-rolled-back");
  ASSERT_TRUE(trace);
  EXPECT_FALSE(trace->has_value()) << "the rollback through the runs undid the trace";
  auto review = reviews.find_review("rv");
  ASSERT_TRUE(review);
  EXPECT_FALSE(review->has_value());
  auto cycle = cycles.find_cycle("cy");
  ASSERT_TRUE(cycle);
  EXPECT_FALSE(cycle->has_value());
  ASSERT_TRUE(traces.begin());
  ASSERT_TRUE(traces.insert_trace(sample_trace("t-kept", 1000)));
  ASSERT_TRUE(runs.commit()) << "one transaction, whichever view ends it";
  auto kept = traces.find_trace("t-kept");
  ASSERT_TRUE(kept && kept->has_value());
}

// Schema v4: a trace round-trips, updates in place, lists newest first; its
// events are append-only in the schema itself.
TEST_P(RuntimeStores, TracesRoundTripAndTheirEventsAreAppendOnly) {
  TraceStore& store = ledger_->traces();
  ASSERT_TRUE(store.begin());
  ASSERT_TRUE(store.insert_trace(sample_trace("t-old", 1000)));
  ASSERT_TRUE(store.insert_trace(sample_trace("t-new", 2000)));
  ASSERT_TRUE(store.append_trace_event({0, "t-old", 1001, "trace_created", "CLASSIFY", ""}));
  ASSERT_TRUE(store.append_trace_event({0, "t-old", 1002, "state_entered", "RECALL", R"({"note":"n"})"}));
  ASSERT_TRUE(store.commit());
  EXPECT_FALSE(store.insert_trace(sample_trace("t-old", 3000))) << "an id is inserted once";

  TraceRecord changed = sample_trace("t-old", 1000);
  changed.state = "ESCALATED";
  changed.status = TraceStatus::Escalated;
  changed.run_id = "run-1";
  changed.closed_at = 1234;
  ASSERT_TRUE(store.update_trace(changed));
  auto found = store.find_trace("t-old");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->state, "ESCALATED");
  EXPECT_EQ((*found)->status, TraceStatus::Escalated);
  EXPECT_EQ((*found)->run_id, "run-1");
  EXPECT_EQ((*found)->closed_at, 1234);
  EXPECT_EQ((*found)->doc_json, changed.doc_json);
  EXPECT_EQ((*found)->project, "asunama");
  EXPECT_EQ((*found)->created_at, 1000);
  EXPECT_EQ((*found)->updated_at, 1005);

  auto missing = store.find_trace("nope");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
  auto not_there = store.update_trace(sample_trace("nope", 1));
  ASSERT_FALSE(not_there);
  EXPECT_EQ(not_there.error().code, ErrorCode::NotFound);

  auto all = store.list_traces();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, "t-new");

  auto events = store.trace_events("t-old");
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].data_json, "{}");
  EXPECT_EQ((*events)[0].kind, "trace_created");
  EXPECT_EQ((*events)[0].ts, 1001);
  EXPECT_EQ((*events)[1].state, "RECALL");
  EXPECT_EQ((*events)[1].data_json, R"({"note":"n"})");
  EXPECT_LT((*events)[0].seq, (*events)[1].seq);

  EXPECT_NE(raw_exec("UPDATE trace_events SET kind = 'x'"), "") << "rewriting history";
  EXPECT_NE(raw_exec("DELETE FROM trace_events"), "") << "erasing history";
  EXPECT_NE(raw_exec("UPDATE traces SET status = 'paused'"), "") << "an unknown status";
  EXPECT_EQ(raw_query("SELECT count(*) FROM trace_events"), "2");
}

// Schema v5: a review round-trips, updates in place and lists newest first; the
// schema refuses an unknown status or verdict and a document that is not JSON.
TEST_P(RuntimeStores, ReviewsRoundTripAndTheSchemaChecksThem) {
  ReviewStore& store = ledger_->reviews();
  ReviewRecord r{"rv-old", "paper", "/ws", ReviewStatus::Running, "", 0, R"({"rounds":[]})", 1000, 1000};
  ASSERT_TRUE(store.insert_review(r));
  ReviewRecord newer = r;
  newer.id = "rv-new";
  newer.created_at = 2000;
  ASSERT_TRUE(store.insert_review(newer));
  EXPECT_FALSE(store.insert_review(r)) << "an id is inserted once";

  r.status = ReviewStatus::SpendCap;
  r.verdict = "REVISE";
  r.rounds = 2;
  r.doc_json = R"({"rounds":[1,2]})";
  r.updated_at = 1500;
  ASSERT_TRUE(store.update_review(r));
  auto found = store.find_review("rv-old");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->status, ReviewStatus::SpendCap);
  EXPECT_EQ((*found)->verdict, "REVISE");
  EXPECT_EQ((*found)->rounds, 2);
  EXPECT_EQ((*found)->doc_json, r.doc_json);
  EXPECT_EQ((*found)->updated_at, 1500);
  EXPECT_EQ((*found)->name, "paper");
  EXPECT_EQ((*found)->workspace, "/ws");

  auto missing = store.find_review("nope");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
  ReviewRecord ghost = r;
  ghost.id = "nope";
  auto not_there = store.update_review(ghost);
  ASSERT_FALSE(not_there);
  EXPECT_EQ(not_there.error().code, ErrorCode::NotFound);

  auto all = store.list_reviews();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, "rv-new");

  EXPECT_NE(raw_exec("UPDATE reviews SET status = 'paused'"), "") << "an unknown status";
  EXPECT_NE(raw_exec("UPDATE reviews SET verdict = 'MAYBE'"), "") << "an unknown verdict";
  EXPECT_NE(raw_exec("UPDATE reviews SET doc = 'not json'"), "") << "a broken document";
  EXPECT_EQ(review_status_name(ReviewStatus::SpendCap), std::string("spend_cap"));
  EXPECT_EQ(parse_review_status("escalated"), ReviewStatus::Escalated);
  EXPECT_EQ(review_status_name(ReviewStatus::Abandoned), std::string("abandoned"));
  EXPECT_EQ(parse_review_status("abandoned"), ReviewStatus::Abandoned);
  EXPECT_EQ(raw_exec("UPDATE reviews SET status = 'abandoned'"), "") << "abandoning every review";
}

INSTANTIATE_TEST_SUITE_P(Backends, RuntimeStores, ::testing::ValuesIn(ledger_test::kLedgerBackends),
                         ledger_test::ledger_backend_name);

}  // namespace
}  // namespace orch
