// postgres/pg_connection.h — one libpq connection, its results and parameters.
//
// Everything the PostgreSQL store says to the server goes through here, so that
// errors read the same everywhere: an orch::Error (ErrorCode::Store) naming what
// orch was doing, the server's message and its SQLSTATE. Statements are sent with
// PQexecParams: values travel as parameters, never spliced into the SQL text.
// Strings are sent in binary format (their bytes with a length): a text-format
// parameter is a C string, and would be cut silently at a NUL byte, which the
// server refuses clearly instead. Results are read in text format. libpq itself
// is loaded on the first connection (postgres/pq_api.h), not linked.
//
// A lost connection (the server restarted; postgres/pg_reconnect.h) is never
// hidden inside a transaction: the server rolled it back, and every statement
// of it, and its commit(), fail with ErrorCode::Disconnected until rollback()
// or begin(), so nothing of it lands in pieces. Outside a transaction, on a
// connection told to keep_reconnecting(), a statement (begin() among them) that
// failed because the connection was lost connects again and is sent again:
// nothing of it had been done. A COMMIT whose answer was lost is settled by
// asking the server, once reconnected, whether the transaction committed
// (txid_status of the id begin() read with BEGIN): if it did, commit()
// succeeds; if not, Disconnected; if the server cannot tell, a Store error.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "orch/error.h"
#include "postgres/pg_reconnect.h"

namespace orch::detail {

// The parameters $1, $2, ... of one statement, in order.
class PgParams {
 public:
  PgParams& text(std::string_view value);   // TEXT
  PgParams& bytes(std::string_view value);  // BYTEA (any bytes)
  PgParams& integer(std::int64_t value);
  PgParams& real(double value);  // written so that it reads back exactly
  PgParams& boolean(bool value);
  PgParams& null();
  int size() const { return static_cast<int>(values_.size()); }

 private:
  friend class PgConnection;
  PgParams& add(std::string value, bool binary, bool is_null);
  std::vector<std::string> values_;
  std::vector<int> binary_;
  std::vector<bool> null_;
};

// The rows a statement returned (owns its PGresult).
class PgResult {
 public:
  explicit PgResult(PGresult* result) : result_(result, &clear) {}
  PGresult* get() const { return result_.get(); }
  int rows() const;
  bool is_null(int row, int col) const;
  std::string text(int row, int col) const;
  std::string bytes(int row, int col) const;  // a BYTEA column (hex output), decoded
  std::int64_t integer(int row, int col) const;
  double real(int row, int col) const;
  bool boolean(int row, int col) const;
  // Rows an INSERT, UPDATE or DELETE touched.
  std::int64_t affected() const;

 private:
  static void clear(PGresult* result);
  std::unique_ptr<PGresult, void (*)(PGresult*)> result_;
};

// A notification (LISTEN/NOTIFY): its channel and what it says.
struct PgNotification {
  std::string channel;
  std::string payload;
};

class PgConnection {
 public:
  // Connects to `conninfo` (a postgresql:// URL or key=value pairs). A server
  // that cannot be reached is a Store error naming it (never the password).
  static Expected<PgConnection> open(const std::string& conninfo);

  // One statement with parameters. `what` says what orch was doing, for the error.
  Expected<PgResult> exec(std::string_view what, const char* sql, const PgParams& params = {});

  // A write of the open transaction whose answer nothing needs yet
  // (pg_pipeline.cc): sent at once, behind the transaction's other such writes
  // (libpq's pipeline mode), and answered with them when the transaction next
  // needs an answer — its next exec(), or commit(): one round trip for all of
  // them, not one each. `check`, given the rows the write touched, may turn
  // its answer into an error (a row that was not there). The first error of
  // the writes is then that exec()'s or commit()'s, and the transaction is
  // rolled back. Outside a transaction, or with a libpq older than 14, it is
  // exec() and check at once.
  using AffectedCheck = std::function<std::optional<Error>(std::int64_t affected)>;
  Expected<void> exec_later(std::string_view what, const char* sql, const PgParams& params,
                            AffectedCheck check = {});
  // Several statements without parameters (the schema's DDL).
  Expected<void> exec_script(std::string_view what, const char* sql);

  // With libpq 14 or newer, BEGIN is sent in the pipeline, answered while the
  // transaction's writes are made (its error, if any, is the next exec()'s or
  // commit()'s), and COMMIT behind the writes: a transaction that reads
  // nothing is one round trip (pg_pipeline.cc).
  Expected<void> begin();
  // A transaction that a failed statement aborted is rolled back, and the
  // commit fails (the server would answer COMMIT with ROLLBACK, silently).
  Expected<void> commit();
  Expected<void> rollback();  // outside a transaction, or one the connection was lost in: nothing to do
  bool in_transaction() const;

  // ---- a lost connection (pg_reconnect.cc) ----
  // Statements outside a transaction reconnect with `policy` when the connection
  // was lost (the store's connection; a lock's does not: pg_store_lock.cc).
  void keep_reconnecting(const PgReconnectPolicy& policy) { reconnect_ = policy; }
  // Whether the server has gone from this connection (what reconnect() is for).
  bool lost() const;
  // Whether the server sent nothing on this connection since its last answer
  // (a poll of the socket): on a connection that asks nothing, anything that
  // came is the server's farewell, or a notice, and a statement tells which.
  bool nothing_came() const;
  // Connects again to the same server (policy's back-off, pg_reconnect.h);
  // says so on stderr when `say`. Returns the tries it took, or a Store error
  // naming the server and how long it tried.
  Expected<int> reconnect(const PgReconnectPolicy& policy, bool say = true);
  // What the server or libpq said when the connection was lost, on one line.
  const std::string& lost_why() const { return lost_why_; }

  // The server process serving this connection (pg_backend_pid()).
  int backend_pid() const;
  // "HOST:PORT/DATABASE", for messages (no user, no password).
  std::string where() const;

  // LISTEN/NOTIFY: the socket to wait on for notifications (poll for POLLIN),
  // and those that arrived, read off it without blocking (a
  // Store error when the connection is lost). A notification that came with
  // the answer to a statement was read off the socket with it, and no poll
  // will see it: notifications_waiting() says so, and its owner takes it with
  // notifications() before it waits on the socket again.
  int socket() const;
  Expected<std::vector<PgNotification>> notifications();
  bool notifications_waiting() const { return !notified_.empty(); }

 private:
  explicit PgConnection(PGconn* conn) : conn_(conn, &finish) {}
  static void finish(PGconn* conn);
  Error error(std::string_view what, const PGresult* result) const;
  // The error of a statement of a transaction the connection was lost in.
  Error lost_transaction(std::string_view what) const;
  // `result` (of a statement just sent) or its error; notes a lost connection.
  Expected<PgResult> checked(std::string_view what, PgResult result);
  // `sql` prepared on this session (its name), preparing it on first use; null
  // when the connection holds kMaxPrepared statements already.
  Expected<const std::string*> prepared(std::string_view what, const char* sql, int n_params);
  // Whether a failed statement outside a transaction may be sent again once reconnected.
  bool may_resend() const { return lost_ && !in_tx_ && reconnect_.has_value(); }
  // commit() after a COMMIT whose answer was lost: did it land? (pg_reconnect.cc)
  Expected<void> settle_lost_commit(const Error& lost);
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn_;
  std::string conninfo_;                        // to connect again
  std::optional<PgReconnectPolicy> reconnect_;  // keep_reconnecting
  bool in_tx_ = false;                          // between begin() and commit()/rollback()
  bool lost_ = false;                           // the server has gone (reconnect() brings it back)
  std::string lost_why_;
  std::string xid_;  // the transaction's id (txid_current()), from begin()
  // ---- the pipeline (pg_pipeline.cc) ----
  // What a statement sent in the pipeline answers: a write's rows touched (its
  // check), the id of the transaction begun in it, or the COMMIT.
  enum class Answer { Write, TransactionId, Commit };
  struct Later {
    std::string what;
    AffectedCheck check;
    std::string prepares;  // the SQL of a statement being prepared (its name goes if it fails)
    Answer answer = Answer::Write;
    // Sent guarded (a write with a check): it fails on the server when it
    // touches no row, and answers with the rows it touched (pg_pipeline.cc).
    bool guarded = false;
  };
  // In libpq's pipeline mode (entered now if not yet); false when it cannot be.
  bool pipeline();
  // Sends `sql` in the pipeline (prepared when it has parameters), its answer
  // read later; an error when it could not be sent (the connection is gone).
  Expected<void> send_later(std::string_view what, const char* sql, const PgParams& params,
                            AffectedCheck check, Answer answer);
  // begin() in the pipeline: BEGIN and the transaction's id asked for, their
  // answers flushed back by the server while the transaction's writes go on.
  // False when they could not be sent (begin() then asks in a round trip).
  bool begin_later();
  // commit() in the pipeline, behind the writes: one round trip for all of
  // them. Nullopt when it cannot be (the transaction's id is not known:
  // commit() then reads the writes' answers first).
  std::optional<Expected<void>> commit_later();
  // Reads the answer of the first statement waiting (its error kept for drain()).
  void answer_first();
  // Reads the answers of the writes sent with exec_later and leaves pipeline
  // mode: their first error, a lost connection's as lost_transaction().
  Expected<void> drain();
  // The error of a write the pipeline skipped, an earlier one having failed.
  Error skipped(std::string_view what) const;
  std::vector<Later> later_;  // sent, not yet answered, in order
  std::size_t answered_ = 0;  // of later_, those whose answer was read (answer_first)
  std::optional<Error> later_error_;  // the first error of those
  bool pipelined_ = false;    // in libpq's pipeline mode
  // Past this many writes waiting, they are answered at once: the server's
  // answers must never fill the socket while orch is still sending.
  static constexpr std::size_t kMaxLater = 512;

  // Those libpq read with a statement's answer, kept for notifications().
  void keep_notifications();
  std::vector<PgNotification> notified_;
  static constexpr std::size_t kMaxPrepared = 256;
  std::unordered_map<std::string, std::string> prepared_;  // SQL text -> statement name, this session's
  int prepared_seq_ = 0;                                   // names orch_1, orch_2, ... of this session
};

}  // namespace orch::detail
