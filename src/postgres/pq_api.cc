#include "postgres/pq_api.h"

#include <fmt/format.h>

#include <mutex>
#include <string>

#include "util/dl_library.h"

namespace orch::detail {

namespace {

struct LoadedPq {
  PqApi api{};
  std::string error;  // empty when loaded
};

LoadedPq load_pq_once() {
  LoadedPq out;
  std::string why;
  void* library = open_first_library({"libpq.so.5", "libpq.so"}, why);
  if (library == nullptr) {
    out.error = fmt::format(
        "cannot load libpq, which a PostgreSQL store needs: {} (install the libpq5 package)", why);
    return out;
  }
  PqApi& a = out.api;
  std::string missing;
  const bool ok = resolve_symbol(library, "PQconnectdbParams", a.connectdb_params, missing) &&
                  resolve_symbol(library, "PQfinish", a.finish, missing) &&
                  resolve_symbol(library, "PQstatus", a.status, missing) &&
                  resolve_symbol(library, "PQerrorMessage", a.error_message, missing) &&
                  resolve_symbol(library, "PQexec", a.exec, missing) &&
                  resolve_symbol(library, "PQexecParams", a.exec_params, missing) &&
                  resolve_symbol(library, "PQprepare", a.prepare, missing) &&
                  resolve_symbol(library, "PQexecPrepared", a.exec_prepared, missing) &&
                  resolve_symbol(library, "PQresultStatus", a.result_status, missing) &&
                  resolve_symbol(library, "PQresultErrorField", a.result_error_field, missing) &&
                  resolve_symbol(library, "PQclear", a.clear, missing) &&
                  resolve_symbol(library, "PQntuples", a.ntuples, missing) &&
                  resolve_symbol(library, "PQgetvalue", a.getvalue, missing) &&
                  resolve_symbol(library, "PQgetlength", a.getlength, missing) &&
                  resolve_symbol(library, "PQgetisnull", a.getisnull, missing) &&
                  resolve_symbol(library, "PQcmdTuples", a.cmd_tuples, missing) &&
                  resolve_symbol(library, "PQtransactionStatus", a.transaction_status, missing) &&
                  resolve_symbol(library, "PQbackendPID", a.backend_pid, missing) &&
                  resolve_symbol(library, "PQhost", a.host, missing) &&
                  resolve_symbol(library, "PQport", a.port, missing) &&
                  resolve_symbol(library, "PQdb", a.db, missing) &&
                  resolve_symbol(library, "PQsetNoticeProcessor", a.set_notice_processor, missing) &&
                  resolve_symbol(library, "PQsocket", a.socket, missing) &&
                  resolve_symbol(library, "PQconsumeInput", a.consume_input, missing) &&
                  resolve_symbol(library, "PQnotifies", a.notifies, missing) &&
                  resolve_symbol(library, "PQfreemem", a.freemem, missing) &&
                  resolve_symbol(library, "PQsendQueryParams", a.send_query_params, missing) &&
                  resolve_symbol(library, "PQsendQueryPrepared", a.send_query_prepared, missing) &&
                  resolve_symbol(library, "PQsendPrepare", a.send_prepare, missing) &&
                  resolve_symbol(library, "PQgetResult", a.get_result, missing);
  if (!ok) out.error = fmt::format("the libpq found lacks {} (libpq 10 or newer is needed)", missing);
  // libpq 14 and newer: a pipeline. Without it, writes go one by one.
  std::string no_pipeline;
  if (!(resolve_symbol(library, "PQenterPipelineMode", a.enter_pipeline_mode, no_pipeline) &&
        resolve_symbol(library, "PQexitPipelineMode", a.exit_pipeline_mode, no_pipeline) &&
        resolve_symbol(library, "PQpipelineSync", a.pipeline_sync, no_pipeline) &&
        resolve_symbol(library, "PQsendFlushRequest", a.send_flush_request, no_pipeline) &&
        resolve_symbol(library, "PQflush", a.flush, no_pipeline)))
    a.enter_pipeline_mode = nullptr;
  return out;
}

LoadedPq& loaded_pq() {
  static LoadedPq loaded;
  return loaded;
}

}  // namespace

Expected<const PqApi*> load_pq() {
  static std::once_flag once;
  std::call_once(once, [] { loaded_pq() = load_pq_once(); });
  if (!loaded_pq().error.empty()) return fail(ErrorCode::Io, loaded_pq().error);
  return &loaded_pq().api;
}

const PqApi& pq() {
  return loaded_pq().api;
}

}  // namespace orch::detail
