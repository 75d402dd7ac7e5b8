// The executors of a run executed by workers. See workers_dispatch.h.
#include "cli/workers_dispatch.h"

#include <fmt/format.h>

#include "cli/common.h"
#include "cli/output_style.h"
#include "distrib/remote_executor.h"
#include "orch/postgres_store.h"

namespace orch::cli {

Error workers_need_postgres(const std::string& store) {
  return Error{
      ErrorCode::InvalidInput,
      fmt::format("--on-workers needs a PostgreSQL ledger (--store postgresql://... or ORCH_STORE), which "
                  "`orch worker` processes on any machine claim the steps from; {} is a SQLite file",
                  shown_store(store))};
}

Expected<std::shared_ptr<ExecutorRegistry>> workers_executors(const std::string& store,
                                                              const ExecutorRegistry& local) {
  if (!is_postgres_url(store)) return std::unexpected(workers_need_postgres(store));
  distrib::RemoteDispatch::Options options;
  options.note = [](const std::string& text) { log(LogLevel::Note, text); };
  auto dispatch = ORCH_TRY(distrib::RemoteDispatch::open(store, std::move(options)));
  return dispatch->wrap(local);
}

}  // namespace orch::cli
