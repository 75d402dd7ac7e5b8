// The ledger writes of one scheduler turn. See turn_writer.h.
#include "engine/turn_writer.h"

#include "util/json_text.h"

namespace orch {

namespace fs = std::filesystem;

namespace {

// `data` with every string in it masked: masking the dumped text instead could
// turn a number that happens to equal a secret into invalid JSON.
void mask_strings(nlohmann::json& data, const SecretMasker& secrets) {
  if (data.is_string()) {
    data = secrets.mask(data.get_ref<const std::string&>());
  } else if (data.is_structured()) {
    for (auto& item : data) mask_strings(item, secrets);
  }
}

// Runs `op`; while it fails because the store lost the transaction with its
// connection, has `rewrite` write the transaction again and runs `op` again,
// at most TurnWriter::kRewrites times.
template <class Op, class Rewrite>
Expected<void> surviving_lost_transactions(Op op, Rewrite rewrite) {
  Expected<void> done = op();
  for (int n = 0; n < TurnWriter::kRewrites && !done && done.error().code == ErrorCode::Disconnected; ++n) {
    done = rewrite();
    if (done) done = op();
  }
  return done;
}

}  // namespace

TurnWriter::TurnWriter(Store& store, Clock& clock, std::shared_ptr<SecretMasker> secrets)
    : store_(store), clock_(clock), secrets_(std::move(secrets)) {}

Expected<void> TurnWriter::begin() {
  if (open_) return {};
  ORCH_TRY(store_.begin());
  open_ = true;
  written_.clear();
  return {};
}

void TurnWriter::make(Write w) {
  if (error_) return;
  bool again = false;  // after a rewrite, `w` is made as one written again
  auto made = surviving_lost_transactions(
      [&] {
        auto done = w(again);
        again = true;
        return done;
      },
      [this] { return rewrite(); });
  if (!made) {
    error_ = made.error();
    return;
  }
  written_.push_back(std::move(w));
}

Expected<void> TurnWriter::rewrite() {
  (void)store_.rollback();   // the store forgets the lost transaction (the server rolled it back)
  ORCH_TRY(store_.begin());  // and connects again, waiting for the server
  for (const Write& w : written_) ORCH_TRY(w(true));
  return {};
}

void TurnWriter::fail(const Error& e) {
  if (!error_) error_ = e;
}

void TurnWriter::event(const std::string& kind, const std::string& step_id, int attempt,
                       const nlohmann::json& data) {
  if (error_) return;
  if (auto t = begin(); !t) {
    error_ = t.error();
    return;
  }
  EventRecord e;
  e.run_id = run_id_;
  e.ts = clock_.wall_ms();
  e.kind = kind;
  e.step_id = step_id;
  e.attempt = attempt;
  if (secrets_->empty()) {
    e.data_json = json_text(data);
  } else {
    nlohmann::json masked = data;
    mask_strings(masked, *secrets_);
    e.data_json = json_text(masked);
  }
  make([this, e = std::move(e)](bool) { return store_.record_event(e); });
}

bool TurnWriter::step_changed(std::vector<StepState>& steps, int i) {
  if (error_) return false;
  if (auto t = begin(); !t) {
    error_ = t.error();
    return false;
  }
  StepState& s = steps[static_cast<std::size_t>(i)];
  if (s.dirty) return false;
  s.dirty = true;
  dirty_steps_.push_back(i);
  return true;
}

void TurnWriter::attempt_started(int i) {
  if (auto t = begin(); !t) fail(t.error());
  unwritten_attempts_.push_back(i);
}

void TurnWriter::attempt_finished(const AttemptRecord& a, bool row_unwritten) {
  if (auto t = begin(); !t) fail(t.error());
  if (error_) return;
  // One write for an attempt that starts and ends in one transaction.
  make([this, a, row_unwritten](bool) {
    return row_unwritten ? store_.insert_attempt(a) : store_.finish_attempt(a);
  });
}

void TurnWriter::run_row(const RunRecord& run) {
  make([this, run](bool again) -> Expected<void> {
    if (!again) return store_.update_run(run);
    // A cancel that landed since the lost transaction read the flag is kept.
    RunRecord row = run;
    row.cancel_requested = ORCH_TRY(store_.cancel_requested(run.id)) || run.cancel_requested;
    return store_.update_run(row);
  });
}

void TurnWriter::write(std::function<Expected<void>()> write) {
  if (auto t = begin(); !t) fail(t.error());
  make([write = std::move(write)](bool) { return write(); });
}

void TurnWriter::snapshot_spent(const std::string& dir) {
  spent_snapshots_.push_back(dir);
}

Expected<void> TurnWriter::commit(std::vector<StepState>& steps) {
  if (!open_) return {};
  // Attempts started in this transaction and still running: their rows, as running.
  for (int i : unwritten_attempts_) {
    StepState& s = steps[static_cast<std::size_t>(i)];
    if (!s.has_flight() || !s.flight().row_unwritten) continue;
    Flight& f = s.flight();
    f.row_unwritten = false;
    make([this, a = f.attempt](bool) { return store_.insert_attempt(a); });
    // What the executor writes with it (a queued item a worker claims), unless
    // it will not start: it failed to render, or was cancelled meanwhile.
    if (s.executor == nullptr || !f.pending_render_error.empty() || !f.cancel_reason.empty()) continue;
    f.recorded = true;
    // The spec does not change before the commit (the write made again reads it).
    make([this, executor = s.executor, spec = &f.spec](bool) { return executor->record(*spec, store_); });
  }
  unwritten_attempts_.clear();
  // Each changed step is written once per transaction, however often it changed
  // in it (a builtin chain starts and finishes many steps in one turn).
  for (int i : dirty_steps_) {
    StepState& s = steps[static_cast<std::size_t>(i)];
    s.dirty = false;
    const StepStatus st = s.rec.status;
    if (!s.in_flight && (st == StepStatus::Done || st == StepStatus::Failed || st == StepStatus::Skipped ||
                         st == StepStatus::Cancelled))
      s.release_flight();
    // The row is read when the write is made again too: it does not change before the commit.
    make([this, &steps, i](bool) { return store_.upsert_step(steps[static_cast<std::size_t>(i)].rec); });
  }
  dirty_steps_.clear();
  if (error_) return std::unexpected(*error_);
  open_ = false;
  auto committed =
      surviving_lost_transactions([this] { return store_.commit(); }, [this] { return rewrite(); });
  written_.clear();
  if (!committed) {
    // A COMMIT that failed (the ledger locked past the busy timeout, the disk
    // full) can leave the transaction open, holding the write lock: let it go.
    (void)store_.rollback();
    return committed;
  }
  for (const std::string& snapshot : spent_snapshots_) {
    std::error_code ec;
    fs::remove_all(snapshot, ec);  // only space: a leftover is harmless
  }
  spent_snapshots_.clear();
  return {};
}

void TurnWriter::rollback() {
  written_.clear();
  if (!open_) return;
  (void)store_.rollback();
  open_ = false;
}

}  // namespace orch
