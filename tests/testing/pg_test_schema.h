// testing/pg_test_schema.h — a fresh PostgreSQL schema for one test, dropped after.
//
// The server is the one named by the file in ORCH_TEST_PG_URL_FILE (a
// postgresql:// URL; CTest's `postgres` fixture starts a throwaway server and
// sets it). Without it, create() fails: a PostgreSQL test fails, it never skips.
// Each test gets its own schema, t_<pid>_<n>_<random>, and a URL whose
// search_path is that schema, so tests of one server run side by side.
#pragma once

#include <memory>
#include <string>

#include "orch/error.h"

namespace orch::testing {

class PgTestSchema {
 public:
  static Expected<std::unique_ptr<PgTestSchema>> create();
  ~PgTestSchema();  // DROP SCHEMA ... CASCADE
  PgTestSchema(const PgTestSchema&) = delete;
  PgTestSchema& operator=(const PgTestSchema&) = delete;

  const std::string& name() const { return name_; }
  // The server's URL with the schema as its search_path (options=-csearch_path=NAME).
  const std::string& url() const { return url_; }
  // The server's URL as given.
  const std::string& server_url() const { return server_url_; }
  // Runs `sql` (no parameters) on a connection of its own to url(); "" when it
  // worked, the server's message when not.
  std::string exec(const std::string& sql) const;
  // The first column of the first row `sql` returns, as text ("" when no row or an error).
  std::string query(const std::string& sql) const;

 private:
  PgTestSchema(std::string server_url, std::string name);
  std::string server_url_, name_, url_;
};

// The URL of the test server: the content of the file ORCH_TEST_PG_URL_FILE names.
Expected<std::string> pg_test_server_url();

}  // namespace orch::testing
