// Getting a lost connection back: the policy, PgConnection::reconnect and the
// settling of a COMMIT whose answer was lost. See pg_reconnect.h.
#include "postgres/pg_reconnect.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "postgres/pg_connection.h"
#include "postgres/pq_api.h"

namespace orch::detail {

using Millis = std::chrono::milliseconds;

namespace {

std::function<void(const std::string&)>& pg_reporter() {
  static std::function<void(const std::string&)> reporter;
  return reporter;
}

// A draw in [0, 1) for the waits' jitter.
double reconnect_jitter() {
  thread_local std::mt19937_64 bits{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(bits);
}

std::string seconds_text(Millis d) {
  return fmt::format("{:.1f} s", static_cast<double>(d.count()) / 1000.0);
}

}  // namespace

Expected<PgReconnectPolicy> PgReconnectPolicy::from_environment() {
  PgReconnectPolicy policy;
  const char* text = std::getenv("ORCH_PG_RECONNECT_S");
  if (text == nullptr || *text == '\0') return policy;
  char* end = nullptr;
  const long long seconds = std::strtoll(text, &end, 10);
  if (*end != '\0' || seconds < 0 || seconds > 86'400 || !std::isdigit(static_cast<unsigned char>(*text)))
    return fail(ErrorCode::InvalidInput,
                fmt::format("ORCH_PG_RECONNECT_S='{}' is not a number of seconds from 0 to 86400 (how long "
                            "orch tries to connect again to a PostgreSQL server it lost; 0: never)",
                            text));
  policy.give_up_after = std::chrono::seconds(seconds);
  return policy;
}

Millis PgReconnectPolicy::wait_after(int tries, double jitter) const {
  Millis wait = first_wait;
  for (int i = 1; i < tries && wait < longest_wait; ++i) wait *= 2;
  wait = std::min(wait, longest_wait);
  return wait - Millis(static_cast<std::int64_t>(jitter * static_cast<double>(wait.count()) / 2));
}

void report_pg(const std::string& line) {
  if (pg_reporter()) {
    pg_reporter()(line);
    return;
  }
  std::fprintf(stderr, "orch: %s\n", line.c_str());
}

void set_pg_reporter(std::function<void(const std::string&)> reporter) {
  pg_reporter() = std::move(reporter);
}

// ---- PgConnection's part ------------------------------------------------------------

bool PgConnection::lost() const {
  return lost_ || pq().status(conn_.get()) == CONNECTION_BAD;
}

bool PgConnection::nothing_came() const {
  if (lost()) return false;
  pollfd fd{pq().socket(conn_.get()), POLLIN, 0};
  return ::poll(&fd, 1, 0) == 0;
}

Expected<int> PgConnection::reconnect(const PgReconnectPolicy& policy, bool say) {
  const std::string why = lost_why_.empty() ? "the connection was closed" : lost_why_;
  if (policy.give_up_after <= Millis(0))
    return fail(ErrorCode::Store,
                fmt::format("{}: lost the connection ({}); ORCH_PG_RECONNECT_S=0: orch does "
                            "not connect again",
                            where(), why));
  const auto began = std::chrono::steady_clock::now();
  // open()'s refusal names the server, which the messages here name already.
  const std::string refused_prefix = fmt::format("postgres: cannot connect to {}: ", where());
  for (int tries = 1;; ++tries) {
    auto fresh = open(conninfo_);
    const auto took = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - began);
    if (fresh) {
      conn_ = std::move(fresh->conn_);
      prepared_.clear();  // the old session's statements went with it
      prepared_seq_ = 0;
      later_.clear();  // and its transaction's writes (the caller writes them again)
      pipelined_ = false;
      lost_ = false;
      in_tx_ = false;
      xid_.clear();
      if (say)
        report_pg(fmt::format("lost the connection to {} ({}); reconnected after {} {} ({})", where(), why,
                              tries, tries == 1 ? "try" : "tries", seconds_text(took)));
      return tries;
    }
    if (took >= policy.give_up_after) {
      std::string last = fresh.error().message;
      if (last.starts_with(refused_prefix)) last.erase(0, refused_prefix.size());
      for (char& c : last)
        if (c == '\n' || c == '\t') c = ' ';
      return fail(ErrorCode::Store,
                  fmt::format("{}: lost the connection ({}) and could not connect again in {} ({} tries; the "
                              "last: {}); ORCH_PG_RECONNECT_S sets how long orch tries",
                              where(), why, seconds_text(took), tries, last));
    }
    std::this_thread::sleep_for(
        std::min(policy.wait_after(tries, reconnect_jitter()), policy.give_up_after - took));
  }
}

Expected<void> PgConnection::settle_lost_commit(const Error& lost) {
  // Without the transaction's id, or not reconnecting, nothing can tell: an
  // error that says so, never a guess either way.
  if (xid_.empty() || !reconnect_)
    return fail(ErrorCode::Store,
                fmt::format("{} (whether the transaction committed is not known: orch does not "
                            "connect again to ask)",
                            lost.message));
  const std::string xid = xid_;
  ORCH_TRY(reconnect(*reconnect_));
  const auto began = std::chrono::steady_clock::now();
  for (int tries = 1;; ++tries) {
    // txid_status: 'committed', 'aborted', 'in progress' (its server process has
    // not ended yet: a network cut, not a restart), or NULL (too old to know).
    auto status =
        ORCH_TRY(exec("asking whether a commit whose answer was lost landed", "SELECT txid_status($1)",
                      PgParams().integer(std::strtoll(xid.c_str(), nullptr, 10))));
    const std::string said = status.is_null(0, 0) ? "" : status.text(0, 0);
    if (said == "committed") return {};
    if (said == "aborted")
      return std::unexpected(Error{ErrorCode::Disconnected,
                                   fmt::format("{}: committing: the connection to the server was lost in "
                                               "this transaction ({}), which the server rolled back",
                                               where(), lost_why_.empty() ? lost.message : lost_why_)});
    const auto took = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - began);
    if (said != "in progress" || took >= reconnect_->give_up_after)
      return fail(ErrorCode::Store, fmt::format("{} (whether transaction {} committed is not known: the "
                                                "server says '{}')",
                                                lost.message, xid, said.empty() ? "nothing" : said));
    std::this_thread::sleep_for(reconnect_->wait_after(tries, reconnect_jitter()));
  }
}

}  // namespace orch::detail
