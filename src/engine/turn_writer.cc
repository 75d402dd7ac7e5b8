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

}  // namespace

TurnWriter::TurnWriter(Store& store, Clock& clock, std::shared_ptr<SecretMasker> secrets)
    : store_(store), clock_(clock), secrets_(std::move(secrets)) {}

Expected<void> TurnWriter::begin() {
  if (open_) return {};
  ORCH_TRY(store_.begin());
  open_ = true;
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
  if (auto r = store_.append_event(e); !r) error_ = r.error();
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
  auto r = row_unwritten ? store_.insert_attempt(a) : store_.finish_attempt(a);
  if (!r) error_ = r.error();
}

void TurnWriter::run_row(const RunRecord& run) {
  if (error_) return;
  if (auto r = store_.update_run(run); !r) error_ = r.error();
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
    if (error_) continue;
    if (auto r = store_.insert_attempt(f.attempt); !r) error_ = r.error();
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
    if (error_) continue;
    if (auto r = store_.upsert_step(s.rec); !r) error_ = r.error();
  }
  dirty_steps_.clear();
  if (error_) return std::unexpected(*error_);
  open_ = false;
  if (auto c = store_.commit(); !c) {
    // A COMMIT that failed (the ledger locked past the busy timeout, the disk
    // full) can leave the transaction open, holding the write lock: let it go.
    (void)store_.rollback();
    return c;
  }
  for (const std::string& snapshot : spent_snapshots_) {
    std::error_code ec;
    fs::remove_all(snapshot, ec);  // only space: a leftover is harmless
  }
  spent_snapshots_.clear();
  return {};
}

void TurnWriter::rollback() {
  if (!open_) return;
  (void)store_.rollback();
  open_ = false;
}

}  // namespace orch
