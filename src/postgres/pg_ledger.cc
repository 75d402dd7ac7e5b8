// postgres/pg_ledger.cc — the ledger on PostgreSQL (orch/ledger.h): one PgStore,
// one connection, behind all four interfaces; and how a URL is shown.
#include <fmt/format.h>

#include "orch/postgres_store.h"
#include "postgres/pg_connection.h"
#include "postgres/pg_store.h"

namespace orch {

namespace {

class PgLedger final : public Ledger {
 public:
  explicit PgLedger(std::unique_ptr<PgStore> store) : store_(std::move(store)) {}
  Store& runs() override { return *store_; }
  TraceStore& traces() override { return *store_; }
  ReviewStore& reviews() override { return *store_; }
  CycleStore& cycles() override { return *store_; }

 private:
  std::unique_ptr<PgStore> store_;
};

}  // namespace

Expected<std::unique_ptr<Ledger>> open_postgres_ledger(const std::string& url,
                                                       const std::filesystem::path& folder) {
  auto store = ORCH_TRY(PgStore::open(url, folder));
  return std::unique_ptr<Ledger>(std::make_unique<PgLedger>(std::move(store)));
}

Expected<bool> postgres_ledger_exists(const std::string& url) {
  auto conn = ORCH_TRY(detail::PgConnection::open(url));
  auto found =
      ORCH_TRY(conn.exec("looking for the ledger",
                         "SELECT current_schema() IS NOT NULL AND "
                         "to_regclass(quote_ident(current_schema()) || '.schema_version') IS NOT NULL"));
  return found.boolean(0, 0);
}

bool is_postgres_url(const std::string& store) {
  return store.starts_with("postgresql://") || store.starts_with("postgres://");
}

std::string redact_postgres_url(const std::string& url) {
  if (!is_postgres_url(url)) return url;
  std::string out = url;
  // postgresql://USER:PASSWORD@HOST...: the authority ends at the first '/', '?' or '#'.
  const std::size_t start = out.find("://") + 3;
  const std::size_t end = out.find_first_of("/?#", start);
  const std::size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
  if (at != std::string::npos && at >= start) {
    const std::size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
  }
  // ...?password=SECRET&...: the parameter's value.
  const std::size_t query = out.find('?');
  if (query != std::string::npos) {
    std::size_t pos = query;
    while (pos != std::string::npos && pos < out.size()) {
      const std::size_t key = pos + 1;
      if (out.compare(key, 9, "password=") == 0) {
        const std::size_t value = key + 9;
        const std::size_t value_end = out.find('&', value);
        out.replace(value, (value_end == std::string::npos ? out.size() : value_end) - value, "***");
      }
      pos = out.find('&', key);
    }
  }
  return out;
}

}  // namespace orch
