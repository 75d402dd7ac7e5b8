// orch/postgres_store.h — the Store, and the whole ledger, on a PostgreSQL server
// (the orch_postgres library).
//
// A ledger many machines can share (docs/store.md, "The PostgreSQL store"): the
// same tables as the SQLite ledger, in the first schema of the connection's
// search_path, created at the first open. The CLI chooses it with
// `--store postgresql://...` (or ORCH_STORE).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "orch/error.h"
#include "orch/ledger.h"
#include "orch/store.h"

namespace orch {

// Connects to `url` (postgresql://USER@HOST:PORT/DB[?options=-csearch_path%3DSCHEMA]),
// creating the ledger's tables in an empty schema, refusing a ledger written by
// a newer orch. `folder`: the local folder for attempt logs while they are
// written, snapshots and the spawn journal (Store::folder()).
Expected<std::unique_ptr<Store>> open_postgres_store(const std::string& url,
                                                     const std::filesystem::path& folder);

// The whole ledger on `url` (orch/ledger.h): its runs, traces, reviews and cycle
// runs on one connection, so a transaction begun through one is the
// transaction of all four. `url` and `folder` as for open_postgres_store.
Expected<std::unique_ptr<Ledger>> open_postgres_ledger(const std::string& url,
                                                       const std::filesystem::path& folder);

// Whether the first schema of `url`'s search_path holds an orch ledger (its
// schema_version table), without creating one: for the commands that read a
// ledger and must not make one where there is none. An error when the server
// cannot be reached.
Expected<bool> postgres_ledger_exists(const std::string& url);

// `url` as it may be shown: without its password (in the user part or a
// password= parameter). Anything else is returned as given.
std::string redact_postgres_url(const std::string& url);

// Whether `store` names a PostgreSQL server (postgresql:// or postgres://) rather
// than a SQLite file.
bool is_postgres_url(const std::string& store);

}  // namespace orch
