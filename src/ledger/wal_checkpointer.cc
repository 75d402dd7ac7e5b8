#include "ledger/wal_checkpointer.h"

#include <pthread.h>

#include <csignal>
#include <optional>
#include <system_error>
#include <utility>

#include "ledger/schema.h"

namespace orch {

namespace {

// The checkpointer's own connection: the writer's synchronous setting (it decides
// the checkpoint's syncs), and like every orch connection it neither deletes the
// WAL nor checkpoints when it closes.
Expected<SqliteDb> open_checkpoint_connection(const std::filesystem::path& path, SyncMode sync) {
  auto db = ORCH_TRY(SqliteDb::open(path, kLedgerFileKind));
  ORCH_TRY(db.exec(sync == SyncMode::Full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                   "setting synchronous for the checkpointer"));
  int persist = 1;
  int rc = sqlite3_file_control(db.handle(), "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  if (rc != SQLITE_OK) return std::unexpected(db.error("keeping the WAL file", rc));
  rc = sqlite3_db_config(db.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(db.error("leaving checkpoints to the writers", rc));
  return db;
}

int wal_hook(void* checkpointer, sqlite3* db, const char* schema, int frames) {
  static_cast<WalCheckpointer*>(checkpointer)->on_commit(db, schema, frames);
  return SQLITE_OK;
}

}  // namespace

WalCheckpointer::~WalCheckpointer() {
  stop();
}

void WalCheckpointer::on_commit(sqlite3* db, const char* schema, int frames) {
  if (frames < last_frames_) next_request_at_ = kBackgroundCheckpointFrames;  // the WAL was reset
  last_frames_ = frames;
  if (frames >= kForegroundCheckpointFrames) {
    // What SQLite's automatic checkpoint does, once the thread lets go of the
    // checkpoint lock. Any other failure leaves it to the next commit.
    wait_idle();
    (void)sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    return;
  }
  if (frames >= next_request_at_) {
    next_request_at_ = frames + kBackgroundCheckpointFrames;
    request();
  }
}

void WalCheckpointer::request() {
  if (no_thread_ || stopping_ || busy_.exchange(true)) return;  // stopping_: only this thread writes it
  if (!thread_.joinable()) {
    // The thread blocks every signal (it inherits the mask it is started with):
    // signals are the main thread's business, and a child's SIGCHLD queued while
    // the main thread has its signals blocked (as it has while it starts a child)
    // would otherwise wake this thread, once per step.
    sigset_t all;
    sigset_t previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    try {
      thread_ = std::thread([this] { run(); });
      pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    } catch (const std::system_error&) {
      pthread_sigmask(SIG_SETMASK, &previous, nullptr);
      no_thread_ = true;  // the foreground checkpoints still bound the WAL
      busy_.store(false);
      return;
    }
  }
  {
    std::lock_guard lock(mutex_);
    requested_ = true;
  }
  wake_.notify_one();
}

void WalCheckpointer::wait_idle() {
  if (!thread_.joinable()) return;  // never started, or stopped and joined
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return !busy_.load(); });
}

void WalCheckpointer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void WalCheckpointer::run() {
  std::optional<SqliteDb> db;  // opened for the first checkpoint, closed when the thread ends
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return requested_ || stopping_; });
      if (stopping_) {
        busy_.store(false);  // a request not served: nothing is running
        done_.notify_all();
        return;
      }
      requested_ = false;
    }
    if (!db) {
      auto opened = open_checkpoint_connection(path_, sync_);
      if (opened) db.emplace(std::move(*opened));
    }
    // PASSIVE: copies what no reader still needs, waits for no one; the writer
    // keeps committing meanwhile.
    const int rc =
        db ? sqlite3_wal_checkpoint_v2(db->handle(), "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr)
           : SQLITE_CANTOPEN;
    (rc == SQLITE_OK ? completed_ : failed_).fetch_add(1);
    {
      std::lock_guard lock(mutex_);
      busy_.store(false);
    }
    done_.notify_all();
  }
}

void install_wal_checkpointer(SqliteDb& db, WalCheckpointer& checkpointer) {
  sqlite3_wal_hook(db.handle(), wal_hook, &checkpointer);
}

}  // namespace orch
