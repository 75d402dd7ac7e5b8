// testing/sqlite_ledger.h — the SQLite backend's ledger file, written by hand.
//
// The CLI tests read the ledger through the CLI (testing/ledger_view.h). A few put
// the ledger in a state no orch command makes — a plan version stored by an
// older orch that checked less, a run's row changed under a resume at one exact
// moment — and can only do that by writing the SQLite file, as a user's sqlite3
// would. Those tests are tests of the SQLite backend: a ledger of another kind
// needs its own way to make that state.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <string>

namespace orch::testing {

// Runs `sql` on the SQLite ledger at `db` (e.g. .orch/orch.db); "" when it
// succeeded, else SQLite's message.
inline std::string sqlite_ledger_exec(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    std::string why = h != nullptr ? sqlite3_errmsg(h) : "cannot open " + db.string();
    sqlite3_close(h);
    return why;
  }
  std::string why;
  if (sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) why = sqlite3_errmsg(h);
  sqlite3_close(h);
  return why;
}

}  // namespace orch::testing
