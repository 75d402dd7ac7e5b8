// PgStore::lock and locked: run locks as session-level advisory locks.
//
// A lock is pg_try_advisory_lock on a key hashed from the ledger's schema and
// the name, taken on a connection of its own that lives as long as the
// StoreLock: the server releases a session lock when its session ends, so a
// holder killed by kill -9, or whose machine is gone, frees it as soon as the
// server sees the connection drop — no lock file left behind, on any machine.
// Its own connection, because a session lock is the session's: taken on the
// store's connection it would outlive the StoreLock object until a matching
// unlock, and two locks of one store would stack instead of conflicting.
// The holder writes its pid and host into lock_holders, which the Busy message
// reads; the row is consulted only while the lock is held.
//
// A restart of the server ends every session, and so releases every lock. The
// store keeps a table of the locks it handed out that are still held
// (PgLockTable), and before each transaction it begins or commits, looks at
// each one's connection (keep_locks): a poll of its socket, nothing more while
// the server has said nothing on it. One the server has gone from is connected
// again (the store's back-off, pg_reconnect.h) and its lock taken again; if
// another process took it meanwhile, the lock is lost for good and every
// begin() and commit() of the store fails with ErrorCode::Busy, naming that
// process: a driver learns it no longer holds its run before it writes
// anything more, and stops, rather than go on beside the new one.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "postgres/pg_store.h"

namespace orch {

using detail::PgConnection;
using detail::PgParams;

namespace {

// The key's text: locks are per ledger (schema), not per database.
std::string lock_key_text(const std::string& schema, const std::string& name) {
  return schema + '\n' + name;
}

std::string this_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return std::string();
  return buf;
}

std::int64_t lock_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The holder's row, written when the lock is taken (and taken again).
Expected<void> record_holder(PgConnection& conn, const std::string& name) {
  ORCH_TRY(conn.exec(fmt::format("recording the holder of the lock of '{}'", name),
                     "INSERT INTO lock_holders (name, pid, host, taken_at) VALUES ($1, $2, $3, $4) "
                     "ON CONFLICT (name) DO UPDATE SET pid = excluded.pid, host = excluded.host, "
                     "taken_at = excluded.taken_at",
                     PgParams().text(name).integer(getpid()).text(this_host()).integer(lock_now_ms())));
  return {};
}

// Who holds the lock of `name` (a pid, and the machine when not this one), for
// the Busy message.
std::string lock_holder(PgConnection& conn, const std::string& name) {
  std::string holder = "unknown";
  auto row = conn.exec("reading a lock's holder", "SELECT pid, host FROM lock_holders WHERE name = $1",
                       PgParams().text(name));
  if (row && row->rows() > 0) {
    holder = row->text(0, 0);
    if (const std::string host = row->text(0, 1); !host.empty() && host != this_host())
      holder += " on " + host;
  }
  return holder;
}

}  // namespace

namespace detail {

// A lock held by its connection: closing the connection releases it.
class PgStoreLock final : public StoreLock {
 public:
  PgStoreLock(PgConnection conn, std::string name, std::string key, std::shared_ptr<PgLockTable> table);
  ~PgStoreLock() override;

  // The lock still held: nothing came on its connection, or it was taken
  // again on a new one; else Busy (see the top of this file).
  Expected<void> keep(const PgReconnectPolicy& policy);

 private:
  PgConnection conn_;
  std::string name_;
  std::string key_;
  std::shared_ptr<PgLockTable> table_;
  std::optional<Error> lost_;  // another process took the lock meanwhile
};

class PgLockTable {
 public:
  std::vector<PgStoreLock*> held;
};

PgStoreLock::PgStoreLock(PgConnection conn, std::string name, std::string key,
                         std::shared_ptr<PgLockTable> table)
    : conn_(std::move(conn)), name_(std::move(name)), key_(std::move(key)), table_(std::move(table)) {
  table_->held.push_back(this);
}

PgStoreLock::~PgStoreLock() {
  std::erase(table_->held, this);
  if (lost_) return;  // nothing of it is this process's any more: the row is the new holder's
  // Still held while the row goes: no later holder's row is taken with it.
  (void)conn_.exec("forgetting a lock's holder", "DELETE FROM lock_holders WHERE name = $1 AND pid = $2",
                   PgParams().text(name_).integer(getpid()));
  // Released before the connection closes: closing is asynchronous (the
  // server ends the session after the client has gone), and the lock must be
  // free when the destructor returns, as a file lock is.
  (void)conn_.exec("releasing a lock", "SELECT pg_advisory_unlock_all()");
}

Expected<void> PgStoreLock::keep(const PgReconnectPolicy& policy) {
  if (lost_) return std::unexpected(*lost_);
  if (conn_.nothing_came()) return {};
  // Something came on a connection that asked nothing: the server's farewell
  // (a restart, pg_terminate_backend) or a notice. A statement tells which.
  const std::string what = fmt::format("checking the connection holding the lock of '{}'", name_);
  auto alive = conn_.exec(what, "SELECT 1");
  if (alive) return {};
  if (!conn_.lost()) return std::unexpected(alive.error());
  const std::string why = conn_.lost_why();
  const int tries = ORCH_TRY(conn_.reconnect(policy, false));
  auto got =
      ORCH_TRY(conn_.exec(fmt::format("taking the lock of '{}' again", name_),
                          "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", PgParams().text(key_)));
  if (got.boolean(0, 0)) {
    ORCH_TRY(record_holder(conn_, name_));
    report_pg(
        fmt::format("lost the connection holding the lock of '{}' to {} ({}); reconnected after {} {}, "
                    "and took the lock again",
                    name_, conn_.where(), why, tries, tries == 1 ? "try" : "tries"));
    return {};
  }
  lost_ =
      Error{ErrorCode::Busy,
            fmt::format("{}: lost the lock of '{}' with its connection ({}), and another orch process (pid "
                        "{}) took it meanwhile: this one stops, and leaves '{}' to it",
                        conn_.where(), name_, why, lock_holder(conn_, name_), name_)};
  return std::unexpected(*lost_);
}

}  // namespace detail

Expected<std::unique_ptr<StoreLock>> PgStore::lock(
    const std::string& name, const std::function<std::string(const std::string& holder)>& when_busy) {
  PgConnection conn = ORCH_TRY(PgConnection::open(url_));
  const std::string key = lock_key_text(schema_, name);
  auto got =
      ORCH_TRY(conn.exec(fmt::format("taking the lock of '{}'", name),
                         "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", PgParams().text(key)));
  if (got.boolean(0, 0)) {
    ORCH_TRY(record_holder(conn, name));
    if (!locks_) locks_ = std::make_shared<detail::PgLockTable>();
    return std::unique_ptr<StoreLock>(
        std::make_unique<detail::PgStoreLock>(std::move(conn), name, key, locks_));
  }
  // Held: name the holder as a file lock does (its pid), and its machine when
  // that is not this one.
  const std::string holder = lock_holder(conn, name);
  if (when_busy) return fail(ErrorCode::Busy, when_busy(holder));
  return fail(ErrorCode::Busy,
              fmt::format("run {} is already being driven by another orch process (pid {}); wait for it to "
                          "finish or `orch cancel {}`",
                          name, holder, name));
}

Expected<void> PgStore::keep_locks() {
  if (!locks_) return {};
  for (detail::PgStoreLock* lock : locks_->held) ORCH_TRY(lock->keep(reconnect_));
  return {};
}

bool PgStore::locked(const std::string& name) {
  // Looked up in pg_locks, never by trying the lock: a try that succeeded would
  // hold it for a moment and could refuse a driver starting then. A bigint key
  // shows as its high half in classid, its low half in objid, objsubid 1.
  auto held = conn_->exec(
      "checking a lock",
      "WITH k AS (SELECT hashtextextended($1, 0) AS key) "
      "SELECT EXISTS (SELECT 1 FROM pg_locks, k WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
      "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
      "AND classid = ((k.key >> 32) & 4294967295)::oid AND objid = (k.key & 4294967295)::oid)",
      PgParams().text(lock_key_text(schema_, name)));
  return held && held->boolean(0, 0);
}

}  // namespace orch
