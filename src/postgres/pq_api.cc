#include "postgres/pq_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>
#include <string>

namespace orch::detail {

namespace {

// Resolves `name` into `slot`; false (and `missing` set) when the library lacks it.
template <class Fn>
bool resolve_pq(void* library, const char* name, Fn& slot, std::string& missing) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    missing = name;
    return false;
  }
  slot = reinterpret_cast<Fn>(symbol);
  return true;
}

struct LoadedPq {
  PqApi api{};
  std::string error;  // empty when loaded
};

LoadedPq load_pq_once() {
  LoadedPq out;
  void* library = nullptr;
  std::string why;
  for (const char* name : {"libpq.so.5", "libpq.so"}) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* e = dlerror();
    if (why.empty()) why = e != nullptr ? e : name;
  }
  if (library == nullptr) {
    out.error = fmt::format(
        "cannot load libpq, which a PostgreSQL store needs: {} (install the libpq5 package)", why);
    return out;
  }
  PqApi& a = out.api;
  std::string missing;
  const bool ok = resolve_pq(library, "PQconnectdbParams", a.connectdb_params, missing) &&
                  resolve_pq(library, "PQfinish", a.finish, missing) &&
                  resolve_pq(library, "PQstatus", a.status, missing) &&
                  resolve_pq(library, "PQerrorMessage", a.error_message, missing) &&
                  resolve_pq(library, "PQexec", a.exec, missing) &&
                  resolve_pq(library, "PQexecParams", a.exec_params, missing) &&
                  resolve_pq(library, "PQresultStatus", a.result_status, missing) &&
                  resolve_pq(library, "PQresultErrorField", a.result_error_field, missing) &&
                  resolve_pq(library, "PQclear", a.clear, missing) &&
                  resolve_pq(library, "PQntuples", a.ntuples, missing) &&
                  resolve_pq(library, "PQgetvalue", a.getvalue, missing) &&
                  resolve_pq(library, "PQgetlength", a.getlength, missing) &&
                  resolve_pq(library, "PQgetisnull", a.getisnull, missing) &&
                  resolve_pq(library, "PQcmdTuples", a.cmd_tuples, missing) &&
                  resolve_pq(library, "PQtransactionStatus", a.transaction_status, missing) &&
                  resolve_pq(library, "PQbackendPID", a.backend_pid, missing) &&
                  resolve_pq(library, "PQhost", a.host, missing) &&
                  resolve_pq(library, "PQport", a.port, missing) &&
                  resolve_pq(library, "PQdb", a.db, missing) &&
                  resolve_pq(library, "PQsetNoticeProcessor", a.set_notice_processor, missing);
  if (!ok) out.error = fmt::format("the libpq found lacks {} (libpq 10 or newer is needed)", missing);
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
