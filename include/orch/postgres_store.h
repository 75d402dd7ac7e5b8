// orch/postgres_store.h — the Store on a PostgreSQL server (the orch_postgres library).
//
// A ledger many machines can share (docs/store.md, "The PostgreSQL store"): the
// same tables as the SQLite ledger, in the first schema of the connection's
// search_path, created at the first open. Not yet chosen by the CLI.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "orch/error.h"
#include "orch/store.h"

namespace orch {

// Connects to `url` (postgresql://USER@HOST:PORT/DB[?options=-csearch_path%3DSCHEMA]),
// creating the ledger's tables in an empty schema, refusing a ledger written by
// a newer orch. `folder`: the local folder for attempt logs while they are
// written, snapshots and the spawn journal (Store::folder()).
Expected<std::unique_ptr<Store>> open_postgres_store(const std::string& url,
                                                     const std::filesystem::path& folder);

}  // namespace orch
