// The work_items queue's statements. See work_queue.h.
#include "distrib/work_queue.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "postgres/pg_rows.h"
#include "util/strings.h"

namespace orch::distrib {

using detail::PgParams;
using detail::PgResult;

namespace {

// The server's clock in ms: every lease is reckoned on it.
#define ORCH_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

// The driver reads what changed, then acknowledges it (finished -> settled,
// expired -> lost): each statement may be sent again after a lost connection
// (pg_connection.h) without an outcome being taken and then lost with the answer.
// Keys acknowledged at once: $2 the step ids, $3 the attempts (array literals).
#define ORCH_KEYS_IN "(step_id, attempt) IN (SELECT * FROM unnest($2::text::text[], $3::text::int[]))"
#define ORCH_SETTLE "UPDATE work_items SET state = 'settled' WHERE run_id = $1 AND state = 'finished' AND "
constexpr const char kSettle[] = ORCH_SETTLE ORCH_KEYS_IN;
// The finished items, less those taken already, which it acknowledges: the
// acknowledgement of one read rides on the next statement (this one, or an
// enqueue), so that no round trip of its own is on the way of a run's progress.
constexpr const char kSettleAndRead[] =
    "WITH settled AS (" ORCH_SETTLE ORCH_KEYS_IN
    ") "
    "SELECT step_id, attempt, outcome, worker FROM work_items WHERE run_id = $1 AND state = 'finished' "
    "AND NOT " ORCH_KEYS_IN;

// The insert, the acknowledgement of finished items ($8, $9) and the workers'
// wake-up, in one round trip.
constexpr const char kEnqueueAndWake[] =
    "WITH queued AS (INSERT INTO work_items (run_id, step_id, attempt, executor, labels, spec, state, "
    "queued_at) VALUES ($1, $2, $3, $4, $5::text::text[], $6, 'queued', " ORCH_NOW_MS
    ") ON CONFLICT DO NOTHING), "
    "settled AS (" ORCH_SETTLE
    "(step_id, attempt) IN (SELECT * FROM unnest($8::text::text[], $9::text::int[]))) "
    "SELECT pg_notify($7, $1)";

constexpr const char kExpire[] = "UPDATE work_items SET state = 'expired', finished_at = " ORCH_NOW_MS
                                 ", reason = 'lease expired on ' || worker "
                                 "WHERE run_id = $1 AND state = 'claimed' AND lease_until < " ORCH_NOW_MS;
constexpr const char kExpired[] =
    "SELECT step_id, attempt, worker, reason FROM work_items WHERE run_id = $1 AND state = 'expired'";
constexpr const char kForget[] =
    "UPDATE work_items SET state = 'lost' WHERE run_id = $1 AND state = 'expired' AND " ORCH_KEYS_IN;

constexpr const char kWithdraw[] = "UPDATE work_items SET state = 'expired', finished_at = " ORCH_NOW_MS
                                   ", reason = $4 "
                                   "WHERE run_id = $1 AND step_id = $2 AND attempt = $3 AND state = 'queued'";

constexpr const char kRequestCancel[] =
    "UPDATE work_items SET cancel_requested = true "
    "WHERE run_id = $1 AND step_id = $2 AND attempt = $3 AND state = 'claimed'";

// A worker is live while not stopped and heartbeating within its lease.
#define ORCH_LIVE_WORKER "k.stopped_at = 0 AND k.heartbeat_at >= " ORCH_NOW_MS " - k.lease_ms"

constexpr const char kStranded[] =
    "SELECT w.step_id, w.attempt, array_to_string(w.labels, ',') FROM work_items w "
    "WHERE w.run_id = $1 AND w.state = 'queued' AND NOT EXISTS "
    "(SELECT 1 FROM workers k WHERE " ORCH_LIVE_WORKER " AND w.labels <@ k.labels)";

// A name is taken while its worker lives; a stopped or silent one's row is reused.
constexpr const char kRegister[] =
    "INSERT INTO workers AS k (name, host, pid, slots, labels, lease_ms, started_at, heartbeat_at, "
    "stopped_at) "
    "VALUES ($1, $2, $3, $4, $5::text::text[], $6, " ORCH_NOW_MS ", " ORCH_NOW_MS
    ", 0) "
    "ON CONFLICT (name) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, slots = EXCLUDED.slots, "
    "labels = EXCLUDED.labels, lease_ms = EXCLUDED.lease_ms, started_at = EXCLUDED.started_at, "
    "heartbeat_at = EXCLUDED.heartbeat_at, stopped_at = 0 "
    "WHERE NOT (" ORCH_LIVE_WORKER ") RETURNING name";

constexpr const char kLiveHolder[] =
    "SELECT host, pid, " ORCH_NOW_MS " - heartbeat_at FROM workers WHERE name = $1";

constexpr const char kRelease[] =
    "UPDATE work_items SET lease_until = 0 WHERE run_id = $1 AND step_id = $2 AND attempt = $3 AND worker = "
    "$4 "
    "AND state = 'claimed'";

constexpr const char kReleasePreviousLife[] =
    "UPDATE work_items SET lease_until = 0 WHERE worker = $1 AND state = 'claimed'";

// Only an item whose attempt the ledger has running is claimed: one its driver's
// resume closed (the driver died) is never started by a worker. Each claim is an
// event of the run (attempt_claimed), in the same transaction.
constexpr const char kClaim[] =
    "WITH picked AS ("
    "  SELECT w.run_id, w.step_id, w.attempt FROM work_items w "
    "  JOIN attempts a ON a.run_id = w.run_id AND a.step_id = w.step_id AND a.number = w.attempt "
    "  WHERE w.state = 'queued' AND a.status = 'running' AND w.labels <@ $3::text::text[] "
    "  ORDER BY w.queued_at, w.run_id, w.step_id LIMIT $4 FOR UPDATE OF w SKIP LOCKED), "
    "claimed AS ("
    "  UPDATE work_items u SET state = 'claimed', worker = $1, claimed_at = " ORCH_NOW_MS
    ", lease_until = " ORCH_NOW_MS
    " + $5 "
    "  FROM picked p WHERE u.run_id = p.run_id AND u.step_id = p.step_id AND u.attempt = p.attempt "
    "  RETURNING u.run_id, u.step_id, u.attempt, u.spec), "
    "noted AS ("
    "  INSERT INTO events (run_id, ts, kind, step_id, attempt, data) "
    "  SELECT run_id, " ORCH_NOW_MS
    ", 'attempt_claimed', step_id, attempt, "
    "         json_build_object('worker', $1::text, 'host', $2::text)::text FROM claimed) "
    "SELECT run_id, step_id, attempt, spec FROM claimed";

constexpr const char kBeat[] = "UPDATE workers SET heartbeat_at = " ORCH_NOW_MS " WHERE name = $1";

constexpr const char kRenew[] = "UPDATE work_items SET lease_until = " ORCH_NOW_MS
                                " + $2 WHERE worker = $1 AND state = 'claimed' "
                                "RETURNING run_id, step_id, attempt, cancel_requested";

// The fenced completion and the driver's wake-up (sent at commit) in one
// statement. Its one row counts the items it finished, plus the item when this
// worker had finished it already with this very outcome (the statement sent
// again after a lost connection whose answer was lost): accepted when not 0.
// The wake-up carries the outcome when it fits a notification (kDoneNote).
constexpr const char kComplete[] =
    "WITH done AS (UPDATE work_items w SET state = 'finished', outcome = $5, finished_at = " ORCH_NOW_MS
    " WHERE run_id = $1 AND step_id = $2 AND attempt = $3 AND state = 'claimed' AND worker = $4 "
    "AND EXISTS (SELECT 1 FROM attempts a WHERE a.run_id = w.run_id AND a.step_id = w.step_id "
    "            AND a.number = w.attempt AND a.status = 'running') RETURNING w.run_id), "
    "note AS (SELECT run_id, json_build_array(run_id, $2::text, $3::integer, $4::text, encode($5, "
    "'hex'))::text "
    "         AS said FROM done), "
    "woke AS MATERIALIZED (SELECT pg_notify($6, CASE WHEN octet_length(said) <= 7000 THEN said ELSE run_id "
    "END) "
    "FROM note) "
    "SELECT (SELECT count(*) FROM woke) + "
    "(SELECT count(*) FROM work_items WHERE run_id = $1 AND step_id = $2 AND attempt = $3 AND worker = $4 "
    "AND state IN ('finished', 'settled') AND outcome = $5)";

constexpr const char kStop[] = "UPDATE workers SET stopped_at = " ORCH_NOW_MS " WHERE name = $1";

constexpr const char kWorkers[] =
    "SELECT k.name, k.host, k.pid, k.slots, array_to_string(k.labels, ','), k.lease_ms, k.started_at, "
    "k.heartbeat_at, k.stopped_at, (" ORCH_LIVE_WORKER ") FROM workers k ORDER BY k.name";
constexpr const char kClaimedItems[] =
    "SELECT worker, run_id, step_id, attempt FROM work_items WHERE state = 'claimed' "
    "ORDER BY worker, run_id, step_id, attempt";

constexpr const char kWorkerRuns[] =
    "SELECT id FROM runs WHERE dispatch = 'workers' AND status = 'running' ORDER BY created_at";

// 256 KiB per attempt_output row, as PgStore's own copies (pg_store_output.cc).
constexpr std::size_t kChunkBytes = 256 * 1024;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t at; (at = text.find(separator, start)) != std::string::npos; start = at + 1)
    parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  return parts;
}

// A PostgreSQL array literal of `items`, each quoted ("a\"b" for a"b).
std::string array_literal(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const std::string& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : item) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// The keys' step ids and attempts, as two array parameters (ORCH_KEYS_IN).
PgParams& add_keys(PgParams& params, const std::vector<WorkKey>& keys) {
  std::vector<std::string> steps, attempts;
  for (const WorkKey& k : keys) {
    steps.push_back(k.step_id);
    attempts.push_back(std::to_string(k.attempt));
  }
  return params.text(array_literal(steps)).text(array_literal(attempts));
}

// The run, then its keys.
PgParams keys_params(const std::string& run_id, const std::vector<WorkKey>& keys) {
  PgParams params;
  params.text(run_id);
  return add_keys(params, keys);
}

PgParams key_params(const WorkKey& k) {
  return PgParams().text(k.run_id).text(k.step_id).integer(k.attempt);
}

std::vector<std::string> split_labels(const std::string& joined) {
  return joined.empty() ? std::vector<std::string>{} : split(joined, ',');
}

}  // namespace

std::optional<TakenOutcome> done_note(std::string_view payload) {
  if (!payload.starts_with('[')) return std::nullopt;
  const nlohmann::json note = nlohmann::json::parse(payload, nullptr, false);
  if (!note.is_array() || note.size() != 5 || !note[0].is_string() || !note[1].is_string() ||
      !note[2].is_number_integer() || !note[3].is_string() || !note[4].is_string())
    return std::nullopt;
  const std::string& hex = note[4].get_ref<const std::string&>();
  if (hex.size() % 2 != 0) return std::nullopt;
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string outcome(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < outcome.size(); ++i) {
    const int high = digit(hex[2 * i]), low = digit(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    outcome[i] = static_cast<char>(high * 16 + low);
  }
  return TakenOutcome{{note[0].get<std::string>(), note[1].get<std::string>(), note[2].get<int>()},
                      std::move(outcome),
                      note[3].get<std::string>()};
}

std::string label_array(const std::vector<std::string>& labels) {
  return "{" + join(labels, ",") + "}";
}

Expected<std::vector<std::string>> parse_labels(const std::string& text) {
  std::vector<std::string> labels;
  for (const std::string& piece : split(text, ',')) {
    const std::string label(trim(piece));
    if (label.empty()) continue;
    if (label.size() > 64 ||
        label.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
            std::string::npos)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("--labels: '{}' is not a label: use 1 to 64 letters, digits, '_', '.' or '-'",
                              quote_for_message(label)));
    labels.push_back(label);
  }
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  return labels;
}

Expected<void> WorkQueue::enqueue(const WorkKey& key, const std::string& executor,
                                  const std::vector<std::string>& labels, const std::string& spec,
                                  const std::vector<WorkKey>& settle) {
  PgParams params = key_params(key).text(executor).text(label_array(labels)).bytes(spec).text(kWorkChannel);
  ORCH_TRY(
      conn_.exec(fmt::format("queueing attempt {} of step '{}' for the workers", key.attempt, key.step_id),
                 kEnqueueAndWake, add_keys(params, settle)));
  return {};
}

Expected<void> WorkQueue::enqueue_in_transaction(const WorkKey& key, const std::string& executor,
                                                 const std::vector<std::string>& labels,
                                                 const std::string& spec,
                                                 const std::vector<WorkKey>& settle) {
  PgParams params = key_params(key).text(executor).text(label_array(labels)).bytes(spec).text(kWorkChannel);
  return conn_.exec_later(
      fmt::format("queueing attempt {} of step '{}' for the workers", key.attempt, key.step_id),
      kEnqueueAndWake, add_keys(params, settle));
}

Expected<std::vector<TakenOutcome>> WorkQueue::finished(const std::string& run_id,
                                                        const std::vector<WorkKey>& settle) {
  PgResult r = ORCH_TRY(
      conn_.exec("reading the workers' finished attempts", kSettleAndRead, keys_params(run_id, settle)));
  std::vector<TakenOutcome> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({{run_id, r.text(i, 0), static_cast<int>(r.integer(i, 1))}, r.bytes(i, 2), r.text(i, 3)});
  return out;
}

Expected<void> WorkQueue::settle(const std::string& run_id, const std::vector<WorkKey>& keys) {
  if (keys.empty()) return {};
  ORCH_TRY(conn_.exec("acknowledging finished attempts", kSettle, keys_params(run_id, keys)));
  return {};
}

Expected<std::vector<LostItem>> WorkQueue::expired(const std::string& run_id) {
  ORCH_TRY(conn_.exec("expiring the workers' leases", kExpire, PgParams().text(run_id)));
  PgResult r = ORCH_TRY(conn_.exec("reading the expired attempts", kExpired, PgParams().text(run_id)));
  std::vector<LostItem> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({{run_id, r.text(i, 0), static_cast<int>(r.integer(i, 1))}, r.text(i, 2), r.text(i, 3)});
  return out;
}

Expected<void> WorkQueue::forget(const std::string& run_id, const std::vector<WorkKey>& keys) {
  if (keys.empty()) return {};
  ORCH_TRY(conn_.exec("acknowledging expired attempts", kForget, keys_params(run_id, keys)));
  return {};
}

Expected<void> WorkQueue::withdraw(const WorkKey& key, const std::string& reason) {
  ORCH_TRY(conn_.exec("withdrawing a queued attempt", kWithdraw, key_params(key).text(reason)));
  return {};
}

Expected<void> WorkQueue::request_cancel(const WorkKey& key) {
  ORCH_TRY(conn_.exec("asking a worker to stop an attempt", kRequestCancel, key_params(key)));
  ORCH_TRY(conn_.exec("waking the workers", "SELECT pg_notify($1, $2)",
                      PgParams().text(kCancelChannel).text(key.run_id)));
  return {};
}

Expected<std::vector<StrandedItem>> WorkQueue::stranded(const std::string& run_id) {
  PgResult r =
      ORCH_TRY(conn_.exec("looking for attempts no worker can take", kStranded, PgParams().text(run_id)));
  std::vector<StrandedItem> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({{run_id, r.text(i, 0), static_cast<int>(r.integer(i, 1))}, split_labels(r.text(i, 2))});
  return out;
}

Expected<void> WorkQueue::register_worker(const WorkerRow& w) {
  PgResult r = ORCH_TRY(conn_.exec(fmt::format("registering worker '{}'", w.name), kRegister,
                                   PgParams()
                                       .text(w.name)
                                       .text(w.host)
                                       .integer(w.pid)
                                       .integer(w.slots)
                                       .text(label_array(w.labels))
                                       .integer(w.lease_ms)));
  if (r.rows() == 0) {
    PgResult holder =
        ORCH_TRY(conn_.exec("reading the live worker's row", kLiveHolder, PgParams().text(w.name)));
    std::string who = holder.rows() == 1
                          ? fmt::format(" on {} (pid {}, last heartbeat {} ms ago)", holder.text(0, 0),
                                        holder.integer(0, 1), holder.integer(0, 2))
                          : std::string();
    return fail(ErrorCode::Busy,
                fmt::format("a worker named '{}' is running{}: give this one another --name", w.name, who));
  }
  ORCH_TRY(conn_.exec("handing on what this worker's previous life held", kReleasePreviousLife,
                      PgParams().text(w.name)));
  return {};
}

Expected<std::vector<ClaimedItem>> WorkQueue::claim(const std::string& worker, const std::string& host,
                                                    const std::vector<std::string>& labels, int count,
                                                    std::int64_t lease_ms) {
  PgResult r = ORCH_TRY(conn_.exec(
      "claiming queued attempts", kClaim,
      PgParams().text(worker).text(host).text(label_array(labels)).integer(count).integer(lease_ms)));
  std::vector<ClaimedItem> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({{r.text(i, 0), r.text(i, 1), static_cast<int>(r.integer(i, 2))}, r.bytes(i, 3)});
  return out;
}

Expected<HeartbeatReply> WorkQueue::heartbeat(const std::string& worker, std::int64_t lease_ms) {
  ORCH_TRY(conn_.exec("sending the worker's heartbeat", kBeat, PgParams().text(worker)));
  PgResult r =
      ORCH_TRY(conn_.exec("renewing the worker's leases", kRenew, PgParams().text(worker).integer(lease_ms)));
  HeartbeatReply reply;
  for (int i = 0; i < r.rows(); ++i) {
    WorkKey key{r.text(i, 0), r.text(i, 1), static_cast<int>(r.integer(i, 2))};
    if (r.boolean(i, 3)) reply.cancelled.push_back(key);
    reply.held.push_back(std::move(key));
  }
  return reply;
}

Expected<bool> WorkQueue::complete(const std::string& worker, const WorkKey& key, const std::string& outcome,
                                   const std::vector<OutputFile>& outputs) {
  const auto completion = [&] {
    return conn_.exec(fmt::format("completing attempt {} of step '{}'", key.attempt, key.step_id), kComplete,
                      key_params(key).text(worker).bytes(outcome).text(kDoneChannel));
  };
  // An attempt that printed nothing: the completion alone, one statement in its
  // own transaction, one round trip (sent again after a lost connection, it
  // finds the item finished by this worker already and says accepted).
  const bool printed = std::any_of(outputs.begin(), outputs.end(), [](const OutputFile& f) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(f.path, ec);
    return !ec && size > 0;
  });
  if (!printed) {
    PgResult r = ORCH_TRY(completion());
    return r.integer(0, 0) > 0;
  }
  ORCH_TRY(conn_.begin());
  auto done = [&]() -> Expected<bool> {
    PgResult r = ORCH_TRY(completion());
    if (r.integer(0, 0) == 0) return false;
    for (const OutputFile& f : outputs) {
      std::ifstream in(f.path, std::ios::binary);
      if (!in) continue;  // the stream wrote nothing: no file was made
      std::string chunk(kChunkBytes, '\0');
      int seq = 0;
      while (in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        const auto got = static_cast<std::size_t>(in.gcount());
        if (got == 0) break;
        ORCH_TRY(conn_.exec(
            fmt::format("keeping the {} of attempt {} of step '{}'", f.stream, key.attempt, key.step_id),
            detail::pg_rows::kInsertOutputChunk,
            key_params(key).text(f.stream).integer(seq++).bytes(std::string_view(chunk.data(), got))));
      }
    }
    return true;
  }();
  if (!done || !*done) {
    (void)conn_.rollback();
    return done;
  }
  ORCH_TRY(conn_.commit());
  return true;
}

Expected<void> WorkQueue::release(const std::string& worker, const WorkKey* key) {
  if (key == nullptr) {
    ORCH_TRY(
        conn_.exec("handing back this worker's attempts", kReleasePreviousLife, PgParams().text(worker)));
    return {};
  }
  ORCH_TRY(conn_.exec("handing back an attempt", kRelease, key_params(*key).text(worker)));
  return {};
}

Expected<void> WorkQueue::stop_worker(const std::string& worker) {
  ORCH_TRY(conn_.exec("recording the worker's stop", kStop, PgParams().text(worker)));
  return {};
}

Expected<std::vector<WorkerRow>> WorkQueue::workers() {
  PgResult r = ORCH_TRY(conn_.exec("listing the workers", kWorkers));
  std::vector<WorkerRow> out;
  for (int i = 0; i < r.rows(); ++i) {
    WorkerRow w;
    w.name = r.text(i, 0);
    w.host = r.text(i, 1);
    w.pid = static_cast<int>(r.integer(i, 2));
    w.slots = static_cast<int>(r.integer(i, 3));
    w.labels = split_labels(r.text(i, 4));
    w.lease_ms = r.integer(i, 5);
    w.started_at = r.integer(i, 6);
    w.heartbeat_at = r.integer(i, 7);
    w.stopped_at = r.integer(i, 8);
    w.live = r.boolean(i, 9);
    out.push_back(std::move(w));
  }
  PgResult items = ORCH_TRY(conn_.exec("listing the claimed attempts", kClaimedItems));
  for (int i = 0; i < items.rows(); ++i) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const WorkerRow& w) { return w.name == items.text(i, 0); });
    if (it != out.end())
      it->running.push_back({items.text(i, 1), items.text(i, 2), static_cast<int>(items.integer(i, 3))});
  }
  return out;
}

Expected<std::vector<std::string>> WorkQueue::running_worker_runs() {
  PgResult r = ORCH_TRY(conn_.exec("listing the runs executed by workers", kWorkerRuns));
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(r.text(i, 0));
  return out;
}

Expected<void> WorkQueue::listen(const char* channel) {
  // LISTEN takes an identifier, not a parameter; the channels are orch's constants.
  ORCH_TRY(conn_.exec_script("listening for notifications", fmt::format("LISTEN {}", channel).c_str()));
  return {};
}

}  // namespace orch::distrib
