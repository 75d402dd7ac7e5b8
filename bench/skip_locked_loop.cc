// bench/skip_locked_loop.cc — the floor for the workers benchmark (bench/workers.sh).
//
//   skip_locked_loop URL N K            N queued rows, K connections claiming them
//   skip_locked_loop URL N --chain      N steps one after another, through the queue
//
// What a queue in PostgreSQL costs at the least, with no orch code: a table of
// work items like orch's work_items (a key, a state, the claiming worker, a lease
// and a finish time; no outcome, no spec, no events), in the database at URL.
//
// Independent (N K): N rows are inserted queued (not timed); then K threads, each
// with its own connection, loop until none is left: claim one row — one
// autocommitted statement, UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP
// LOCKED LIMIT 1) RETURNING id, recording the worker and a lease on the server's
// clock — then complete it — a second autocommitted UPDATE, fenced on the row
// still being claimed by that worker. Two transactions per step, each a commit
// the server flushes (synchronous_commit as configured: on by default).
//
// --chain: step i+1 may be queued only once step i is done, as in a chain plan
// run by workers. Two connections: a "driver" inserts the row (queued), a
// "worker" claims and completes it as above, and the driver takes the finished
// row (UPDATE ... SET state = 'settled' ... RETURNING), then queues the next.
// Four transactions per step, strictly one after another.
//
// Prints one line: "N K SECONDS US_PER_STEP STEPS_PER_S" (K is 1 for --chain),
// the wall time of the loop only. The table (bench_skip_locked_PID) is dropped at
// the end. Exit status 1 on any error, naming the statement.
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

int usage() {
  std::fprintf(stderr, "usage: skip_locked_loop URL N K | skip_locked_loop URL N --chain\n");
  return 2;
}

bool parse_count(const char* text, long& out) {
  char* end = nullptr;
  out = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && out > 0;
}

// One connection; every failure is fatal (this is a benchmark, not a client).
class Conn {
 public:
  explicit Conn(const std::string& url) : pg_(PQconnectdb(url.c_str())) {
    if (PQstatus(pg_) != CONNECTION_OK) die("connecting", PQerrorMessage(pg_));
    PQsetNoticeProcessor(pg_, [](void*, const char*) {}, nullptr);
  }
  ~Conn() { PQfinish(pg_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Runs `sql` with text parameters; returns the first column of its first row ("" if none).
  std::string exec(const char* what, const std::string& sql, const std::vector<std::string>& params = {}) {
    std::vector<const char*> values;
    for (const std::string& p : params) values.push_back(p.c_str());
    PGresult* r = PQexecParams(pg_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    const ExecStatusType status = PQresultStatus(r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) die(what, PQresultErrorMessage(r));
    std::string value = PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return value;
  }

 private:
  [[noreturn]] static void die(const char* what, const char* message) {
    std::fprintf(stderr, "skip_locked_loop: %s: %s", what, message);
    std::exit(1);
  }
  PGconn* pg_;
};

#define NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

struct Statements {
  std::string table;
  std::string claim, complete, enqueue, take;
  explicit Statements(std::string name) : table(std::move(name)) {
    claim = "UPDATE " + table + " SET state = 'claimed', worker = $1, lease_until = " NOW_MS
            " + 30000 WHERE id = (SELECT id FROM " + table +
            " WHERE state = 'queued' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id";
    complete = "UPDATE " + table + " SET state = 'finished', finished_at = " NOW_MS
               " WHERE id = $1 AND state = 'claimed' AND worker = $2";
    enqueue = "INSERT INTO " + table + " (id, state) VALUES ($1, 'queued')";
    take = "UPDATE " + table + " SET state = 'settled' WHERE state = 'finished' RETURNING id";
  }
};

// Claims and completes one row as `worker`: false when none was queued.
bool claim_and_complete(Conn& c, const Statements& s, const std::string& worker) {
  const std::string id = c.exec("claiming", s.claim, {worker});
  if (id.empty()) return false;
  c.exec("completing", s.complete, {id, worker});
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return usage();
  const std::string url = argv[1];
  long n = 0;
  long k = 0;
  const bool chain = std::strcmp(argv[3], "--chain") == 0;
  if (!parse_count(argv[2], n)) return usage();
  if (chain) {
    k = 1;
  } else if (!parse_count(argv[3], k)) {
    return usage();
  }
  const Statements s("bench_skip_locked_" + std::to_string(getpid()));
  Conn setup(url);
  setup.exec("creating the table", "CREATE TABLE " + s.table +
                                       " (id bigint PRIMARY KEY, state text NOT NULL, worker text NOT NULL DEFAULT "
                                       "'', lease_until bigint NOT NULL DEFAULT 0, finished_at bigint NOT NULL "
                                       "DEFAULT 0)");
  if (!chain)
    setup.exec("queueing the rows",
               "INSERT INTO " + s.table + " (id, state) SELECT g, 'queued' FROM generate_series(1, $1) g",
               {std::to_string(n)});

  std::vector<std::unique_ptr<Conn>> conns;
  for (long i = 0; i < (chain ? 2 : k); ++i) conns.push_back(std::make_unique<Conn>(url));
  std::atomic<long> done{0};
  const auto start = std::chrono::steady_clock::now();
  if (chain) {
    Conn& driver = *conns[0];
    Conn& worker = *conns[1];
    for (long i = 1; i <= n; ++i) {
      driver.exec("queueing", s.enqueue, {std::to_string(i)});
      if (!claim_and_complete(worker, s, "w1")) {
        std::fprintf(stderr, "skip_locked_loop: step %ld was queued but could not be claimed\n", i);
        return 1;
      }
      if (driver.exec("taking the finished row", s.take) != std::to_string(i)) {
        std::fprintf(stderr, "skip_locked_loop: step %ld finished but was not taken\n", i);
        return 1;
      }
      ++done;
    }
  } else {
    std::vector<std::thread> threads;
    for (long i = 0; i < k; ++i)
      threads.emplace_back([&, i] {
        const std::string worker = "w" + std::to_string(i + 1);
        while (claim_and_complete(*conns[i], s, worker)) ++done;
      });
    for (std::thread& t : threads) t.join();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  setup.exec("dropping the table", "DROP TABLE " + s.table);
  if (done != n) {
    std::fprintf(stderr, "skip_locked_loop: %ld of %ld rows done\n", done.load(), n);
    return 1;
  }
  std::printf("%ld %ld %.3f %.1f %.1f\n", n, k, secs, secs / static_cast<double>(n) * 1e6,
              static_cast<double>(n) / secs);
  return 0;
}
