// postgres/pq_api.h — libpq, loaded the first time orch opens a PostgreSQL store.
//
// Linking libpq would make every orch process load it and the ~22 libraries it
// depends on (TLS, Kerberos, LDAP, ...) at start-up: about 4 ms on this machine
// (a C program linked with -lpq starts in 5.1 ms, without it in 1.0 ms), paid by
// `orch task log`, `orch status` and every other command that never speaks to a
// server. So orch links no libpq (the same choice as libcurl, exec/curl_api.h):
// pg_connection.cc reaches it through this table of the functions it uses,
// filled by dlopen("libpq.so.5") (the library's soname since PostgreSQL 8.3) on
// first use. Types and constants still come from <libpq-fe.h>, so the calls are
// checked by the compiler as before.
//
// Thread-safe: load_pq() loads once (std::call_once).
#pragma once

#include <libpq-fe.h>

#include "orch/error.h"

namespace orch::detail {

struct PqApi {
  PGconn* (*connectdb_params)(const char* const* keywords, const char* const* values, int expand_dbname);
  void (*finish)(PGconn*);
  ConnStatusType (*status)(const PGconn*);
  char* (*error_message)(const PGconn*);
  PGresult* (*exec)(PGconn*, const char* command);
  PGresult* (*exec_params)(PGconn*, const char* command, int n_params, const Oid* param_types,
                           const char* const* param_values, const int* param_lengths,
                           const int* param_formats, int result_format);
  // Statements with parameters are prepared once per connection (pg_connection.cc).
  PGresult* (*prepare)(PGconn*, const char* name, const char* query, int n_params, const Oid* param_types);
  PGresult* (*exec_prepared)(PGconn*, const char* name, int n_params, const char* const* param_values,
                             const int* param_lengths, const int* param_formats, int result_format);
  ExecStatusType (*result_status)(const PGresult*);
  char* (*result_error_field)(const PGresult*, int field_code);
  void (*clear)(PGresult*);
  int (*ntuples)(const PGresult*);
  char* (*getvalue)(const PGresult*, int row, int col);
  int (*getlength)(const PGresult*, int row, int col);
  int (*getisnull)(const PGresult*, int row, int col);
  char* (*cmd_tuples)(PGresult*);
  PGTransactionStatusType (*transaction_status)(const PGconn*);
  int (*backend_pid)(const PGconn*);
  char* (*host)(const PGconn*);
  char* (*port)(const PGconn*);
  char* (*db)(const PGconn*);
  PQnoticeProcessor (*set_notice_processor)(PGconn*, PQnoticeProcessor, void* arg);
  // The connection's socket: whether an idle connection is still open
  // (pg_reconnect.cc); LISTEN/NOTIFY (distrib/: workers woken by the queue,
  // drivers by completions).
  // A transaction's writes sent behind each other, their answers read at once
  // (pg_pipeline.cc). The pipeline functions came with libpq 14: null in an
  // older one, and every write is then sent and answered one by one.
  int (*send_query_params)(PGconn*, const char* command, int n_params, const Oid* param_types,
                           const char* const* param_values, const int* param_lengths,
                           const int* param_formats, int result_format);
  int (*send_query_prepared)(PGconn*, const char* name, int n_params, const char* const* param_values,
                             const int* param_lengths, const int* param_formats, int result_format);
  int (*send_prepare)(PGconn*, const char* name, const char* query, int n_params, const Oid* param_types);
  PGresult* (*get_result)(PGconn*);
  int (*enter_pipeline_mode)(PGconn*);
  int (*exit_pipeline_mode)(PGconn*);
  int (*pipeline_sync)(PGconn*);
  // Asks the server to send what it has answered so far without a sync, and
  // sends it: a transaction begun in the pipeline has its id back while its
  // writes are made (pg_pipeline.cc). Null without a pipeline.
  int (*send_flush_request)(PGconn*);
  int (*flush)(PGconn*);
  int (*socket)(const PGconn*);
  int (*consume_input)(PGconn*);
  PGnotify* (*notifies)(PGconn*);
  void (*freemem)(void*);
};

// libpq's functions, or an Io error naming the library and what the dynamic
// loader said ("libpq.so.5: cannot open shared object file ...: install libpq5").
Expected<const PqApi*> load_pq();

// The table load_pq() filled; only for code that runs once a connection exists
// (a PgResult, a PgConnection), so the load has succeeded.
const PqApi& pq();

}  // namespace orch::detail
