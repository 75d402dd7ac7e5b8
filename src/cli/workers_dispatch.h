// cli/workers_dispatch.h — the executors of a run executed by `orch worker`s.
#pragma once

#include <memory>
#include <string>

#include "orch/error.h"
#include "orch/executor.h"

namespace orch::cli {

// `local` with every executor that starts a process or a call replaced by one
// that queues its attempts in the PostgreSQL ledger at `store` for the workers
// (distrib/remote_executor.h). A store that is not PostgreSQL is an
// InvalidInput error: only a shared ledger can hand attempts to other machines.
Expected<std::shared_ptr<ExecutorRegistry>> workers_executors(const std::string& store,
                                                              const ExecutorRegistry& local);

// The error for --on-workers on a SQLite store.
Error workers_need_postgres(const std::string& store);

}  // namespace orch::cli
