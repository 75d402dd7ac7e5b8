// ledger/schema.h — the ledger's durable schema, as an ordered list of migrations.
//
// The schema text and its column-by-column documentation live in schema.cc (read
// that file, or docs/store.md, before opening `sqlite3 .orch/orch.db`).
// Migration N turns a version N-1 ledger into version N; migrate.cc applies the
// missing ones in order, inside one transaction. Adding schema v2 means adding
// one entry to kMigrations; a migration that has shipped is never edited.
#pragma once

#include <cstdint>
#include <span>

namespace orch {

struct Migration {
  int version;              // the schema version this migration produces
  const char* description;  // recorded in the schema_version table
  const char* sql;          // one or more statements, run with sqlite3_exec
  // The statements edit sqlite_schema directly (PRAGMA writable_schema): the
  // migration then bumps the schema cookie so that every connection reloads it,
  // and checks the result with PRAGMA integrity_check and `verify`.
  bool edits_schema_text = false;
  const char* verify = nullptr;  // a query that returns 1 when the migration took effect
};

// All migrations, versions 1, 2, ... in order; the last one's version is the
// current schema version (store_schema_version()).
std::span<const Migration> schema_migrations();  // schema_migrations.cc

// The v1 schema's statements (schema.cc, where every table is documented).
const char* schema_v1_sql();

// PRAGMA application_id of an orch ledger: the ASCII bytes "orch". It marks the
// file as ours before any table is read, so a foreign SQLite database that
// happens to have a `runs` or `schema_version` table is never mistaken for one.
inline constexpr std::int32_t kOrchApplicationId = 0x6F726368;

// What a ledger file is, for the error about a file that is no SQLite database
// at all (SqliteDb::open): "<path>: not a SQLite database, so not an orch ledger".
inline constexpr const char* kLedgerFileKind = "an orch ledger";

}  // namespace orch
