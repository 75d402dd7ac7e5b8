#include "testing/pg_test_schema.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

namespace orch::testing {

Expected<std::string> pg_test_server_url() {
  const char* file = std::getenv("ORCH_TEST_PG_URL_FILE");
  if (!file || !*file) {
    return fail(
        ErrorCode::InvalidInput,
        "ORCH_TEST_PG_URL_FILE is not set: the PostgreSQL tests need a server (run them through ctest, "
        "whose `postgres` fixture starts one, or set it to a file holding a postgresql:// URL)");
  }
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::string url = text.str();
  while (!url.empty() && (url.back() == '\n' || url.back() == ' ' || url.back() == '\r')) url.pop_back();
  if (!in || url.empty())
    return fail(ErrorCode::NotFound,
                fmt::format("ORCH_TEST_PG_URL_FILE={}: no URL in it (is the server up?)", file));
  return url;
}

namespace {

// Runs `sql` on a new connection to `url`: "" when it worked, else the error.
// With `value`, the first column of its first row is put there.
std::string run_sql(const std::string& url, const std::string& sql, std::string* value = nullptr) {
  PGconn* conn = PQconnectdb(url.c_str());
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);  // DROP ... CASCADE's list
  std::string error;
  if (PQstatus(conn) != CONNECTION_OK) {
    error = PQerrorMessage(conn);
  } else {
    PGresult* result = PQexec(conn, sql.c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK && PQresultStatus(result) != PGRES_TUPLES_OK)
      error = PQresultErrorMessage(result);
    else if (value != nullptr && PQntuples(result) > 0 && PQnfields(result) > 0)
      *value = PQgetvalue(result, 0, 0);
    PQclear(result);
  }
  PQfinish(conn);
  return error;
}

}  // namespace

PgTestSchema::PgTestSchema(std::string server_url, std::string name)
    : server_url_(std::move(server_url)), name_(std::move(name)) {
  url_ = server_url_ + (server_url_.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
         name_;
}

Expected<std::unique_ptr<PgTestSchema>> PgTestSchema::create() {
  std::string server = ORCH_TRY(pg_test_server_url());
  static std::atomic<int> counter{0};
  std::random_device random;
  std::string name = fmt::format("t_{}_{}_{:08x}", getpid(), counter++, random());
  if (std::string error = run_sql(server, "CREATE SCHEMA " + name); !error.empty())
    return fail(ErrorCode::Store, fmt::format("creating schema {} on {}: {}", name, server, error));
  return std::unique_ptr<PgTestSchema>(new PgTestSchema(std::move(server), std::move(name)));
}

PgTestSchema::~PgTestSchema() {
  (void)run_sql(server_url_, "DROP SCHEMA IF EXISTS " + name_ + " CASCADE");
}

std::string PgTestSchema::exec(const std::string& sql) const {
  return run_sql(url_, sql);
}

std::string PgTestSchema::query(const std::string& sql) const {
  std::string value;
  (void)run_sql(url_, sql, &value);
  return value;
}

}  // namespace orch::testing
