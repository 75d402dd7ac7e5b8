// postgres/pg_schema.h — the ledger's schema in PostgreSQL, created and checked at open.
//
// The tables and columns are those of the SQLite ledger (ledger/schema.cc, whose
// documentation is the reference for every column), at the same version
// (store_schema_version()); pg_schema.cc says where the dialects differ.
#pragma once

#include "orch/error.h"
#include "postgres/pg_connection.h"

namespace orch::detail {

// The schema version the PostgreSQL DDL of this orch produces. It must equal
// store_schema_version(): a SQLite migration is a PostgreSQL one too (a test
// checks it).
inline constexpr int kPgSchemaVersion = 15;

// Makes the connection's schema (the first of its search_path) a current orch
// ledger: creates the tables in an empty one, refuses one written by a newer
// orch, or whose version this orch cannot bring up to date. Concurrent first
// opens take turns on a transaction-level advisory lock, so the DDL runs once.
Expected<void> ensure_pg_schema(PgConnection& conn, std::int64_t now_ms);

}  // namespace orch::detail
