// engine/turn_writer.h — the ledger writes of one scheduler turn, in one transaction.
//
// Every write the scheduler makes while a run goes on passes through here: the
// first write of a turn opens the transaction (BEGIN), the turn's end commits
// it. What changes many times in a turn is written once, at commit: a step row
// (step_changed), and the row of an attempt that started in the turn
// (attempt_started: inserted finished if it also ended in the turn — a builtin
// — else inserted running, before any process is spawned; with it what its
// executor records of it, Executor::record: a work item a worker claims).
// Events and finished attempts of earlier turns are written as they come.
// Snapshots of attempts that ended go only once that is committed
// (snapshot_spent).
//
// The first ledger error is kept (error()) and nothing more is written after it:
// the scheduler sees it at the end of the turn, stops what runs, and the open
// transaction is rolled back. Secrets are masked out of every event's strings.
//
// But a transaction the store lost with its connection to a server that
// restarted (ErrorCode::Disconnected: nothing of it landed, and the store
// connects again at its next begin()) is not an error of the run: the writes of
// the turn so far, each kept as it was made (written_), are written again in a
// new transaction, in their order, and the turn goes on as if nothing had
// happened — up to kRewrites times a turn, then the error is the run's. A run
// row written again reads the cancel flag first (FOR UPDATE, as the turn that
// wrote it did), so a cancel that landed meanwhile is kept, not overwritten.
// Nothing is started before its turn's commit succeeded, so a process is still
// spawned only after its attempt row is durable.
// One thread; one run at a time (set_run).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/step_state.h"
#include "orch/clock.h"
#include "orch/error.h"
#include "orch/store.h"
#include "util/secrets.h"

namespace orch {

class TurnWriter {
 public:
  TurnWriter(Store& store, Clock& clock, std::shared_ptr<SecretMasker> secrets);

  void set_run(const std::string& run_id) { run_id_ = run_id; }

  // Opens the turn's transaction unless one is open.
  Expected<void> begin();
  bool open() const { return open_; }

  // The first ledger error of the run, once one happened (nothing is written after it).
  const std::optional<Error>& error() const { return error_; }
  bool failed() const { return error_.has_value(); }
  // Keeps `e` as the run's ledger error unless one is kept already.
  void fail(const Error& e);

  // An event, masked, in the turn's transaction.
  void event(const std::string& kind, const std::string& step_id = "", int attempt = 0,
             const nlohmann::json& data = nlohmann::json::object());
  // Step `i` of `steps` changed: its row is written at commit. Returns false when
  // it was already queued in this turn.
  bool step_changed(std::vector<StepState>& steps, int i);
  // Attempt of step `i` started in this turn: its row (Flight::row_unwritten) is
  // inserted at commit unless attempt_finished wrote it first.
  void attempt_started(int i);
  // The finished row of an attempt: one insert when its row is still unwritten
  // (started in this turn), else the update of its running row.
  void attempt_finished(const AttemptRecord& attempt, bool row_unwritten);
  // The run's row.
  void run_row(const RunRecord& run);
  // A snapshot folder to remove once this turn is committed.
  void snapshot_spent(const std::string& dir);
  // Any other write of the transaction (a new run's rows, a resume's): made
  // now, and made again with the turn if the store loses the transaction.
  // `write` must give the same rows when called again (it holds copies, or
  // reads what does not change before the commit).
  void write(std::function<Expected<void>()> write);

  // Writes the queued rows and commits. A step settled for good (not in
  // flight, done/failed/skipped/cancelled) frees its attempt state here. On
  // failure the transaction is rolled back and the error returned.
  Expected<void> commit(std::vector<StepState>& steps);
  // Ends the open transaction without writing (after a ledger error).
  void rollback();

  // How often one turn is written again after the store lost it.
  static constexpr int kRewrites = 5;

 private:
  // One write of the transaction: done when called; again (`again`) when the
  // transaction is written anew.
  using Write = std::function<Expected<void>(bool again)>;
  // Makes `w` and keeps it (the first error kept otherwise).
  void make(Write w);
  // The transaction begun again and written_ made again, in order.
  Expected<void> rewrite();
  Store& store_;
  Clock& clock_;
  std::shared_ptr<SecretMasker> secrets_;
  std::string run_id_;
  bool open_ = false;
  std::optional<Error> error_;
  std::vector<int> dirty_steps_;         // steps whose row commit() writes
  std::vector<int> unwritten_attempts_;  // steps whose attempt row commit() inserts
  std::vector<std::string> spent_snapshots_;
  std::vector<Write> written_;  // the open transaction's writes so far
};

}  // namespace orch
