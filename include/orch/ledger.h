// orch/ledger.h — one durable ledger, and the four interfaces it serves.
//
// A ledger holds the engine's runs (orch/store.h), the traces of `orch task`
// (orch/trace_store.h), the reviews of `orch review` (orch/review_store.h) and
// the cycle runs of `orch cycle` (orch/cycle_store.h), in one database: a
// transaction begun through one of them is the transaction of all four. A Ledger
// is what a backend opens; it hands out the four as references, so each part of
// orch takes the one it needs, without a cast. They live as long as the Ledger,
// and are used from one thread at a time.
#pragma once

#include <filesystem>
#include <memory>

#include "orch/cycle_store.h"
#include "orch/error.h"
#include "orch/review_store.h"
#include "orch/store.h"
#include "orch/trace_store.h"

namespace orch {

class Ledger {
 public:
  virtual ~Ledger() = default;
  virtual Store& runs() = 0;
  virtual TraceStore& traces() = 0;
  virtual ReviewStore& reviews() = 0;
  virtual CycleStore& cycles() = 0;
};

// The SQLite ledger at `db_path`, opened (or created, and migrated) as
// open_sqlite_store does.
Expected<std::unique_ptr<Ledger>> open_sqlite_ledger(const std::filesystem::path& db_path);

}  // namespace orch
