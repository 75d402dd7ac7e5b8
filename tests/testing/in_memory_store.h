// testing/in_memory_store.h — a Store that keeps its ledger in memory, for tests.
//
// It keeps the contract of orch/store.h as the SQLite store does (the store
// conformance suite, src/ledger/store_conformance_test.cc, runs on both):
// append-only finished attempts, events numbered in order, one transaction at a
// time whose writes a rollback undoes, runs newest first, an owner's runs found
// by owner. Nothing is written to disk but what the engine itself puts in
// folder() (attempt logs, snapshots, run locks), so an engine test that reads
// only the ledger needs no database file. Not thread-safe; one process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "orch/store.h"

namespace orch::testing {

class InMemoryStore final : public Store {
 public:
  // `folder`: where the engine keeps logs, snapshots and locks.
  explicit InMemoryStore(std::filesystem::path folder) : folder_(std::move(folder)) {}

  const std::filesystem::path& folder() const override { return folder_; }

  Expected<void> begin() override;
  Expected<void> commit() override;
  Expected<void> rollback() override;

  Expected<void> insert_run(const RunRecord& run) override;
  Expected<void> update_run(const RunRecord& run) override;
  Expected<void> insert_plan_version(const PlanVersion& plan) override;
  Expected<void> upsert_step(const StepRecord& step) override;
  Expected<void> insert_attempt(const AttemptRecord& attempt) override;
  Expected<void> finish_attempt(const AttemptRecord& attempt) override;
  Expected<std::int64_t> append_event(const EventRecord& event) override;
  Expected<void> request_cancel(const std::string& run_id) override;

  Expected<std::optional<RunRecord>> find_run(const std::string& run_id) override;
  Expected<std::vector<RunRecord>> list_runs() override;
  Expected<std::vector<RunRecord>> owned_runs(OwnerKind kind, const std::string& owner_id) override;
  Expected<PlanVersion> latest_plan(const std::string& run_id) override;
  Expected<std::vector<PlanVersion>> plan_versions(const std::string& run_id) override;
  Expected<std::vector<StepRecord>> steps(const std::string& run_id) override;
  Expected<std::vector<AttemptRecord>> attempts(const std::string& run_id,
                                                const std::string& step_id) override;
  Expected<std::vector<EventRecord>> events(const std::string& run_id, std::int64_t after_seq,
                                            int limit) override;
  Expected<std::vector<EventRecord>> events_of_kind(const std::string& run_id,
                                                    const std::string& kind) override;
  Expected<bool> cancel_requested(const std::string& run_id) override;
  Expected<AttemptTotals> attempt_totals(const std::string& run_id) override;
  // Outputs are kept in memory once an attempt is final (as a database-backed
  // store keeps them in rows), and read from there: its log files may go.
  Expected<OutputRead> read_attempt_output(const AttemptRecord& a, AttemptStream stream,
                                           const std::function<void(std::string_view)>& sink) const override;

  int transactions_committed() const { return commits_; }

 private:
  // What a rollback puts back: the whole ledger as it was at begin().
  struct Tables {
    std::vector<RunRecord> runs;  // in insertion order
    std::map<std::pair<std::string, int>, PlanVersion> plans;
    std::map<std::pair<std::string, std::string>, StepRecord> steps;
    std::map<std::tuple<std::string, std::string, int>, AttemptRecord> attempts;
    std::vector<EventRecord> events;
    std::int64_t next_seq = 1;  // a committed seq is never given again
    // A final attempt's streams, by (run, step, number, stream).
    std::map<std::tuple<std::string, std::string, int, int>, std::string> outputs;
  };

  RunRecord* run_row(const std::string& run_id);
  // Takes a final attempt's log files into `outputs`.
  Expected<void> keep_outputs(const AttemptRecord& a);
  int step_idx(const std::string& run_id, const std::string& step_id) const;

  std::filesystem::path folder_;
  Tables tables_;
  std::optional<Tables> before_;  // set while a transaction is open
  int commits_ = 0;
};

}  // namespace orch::testing
