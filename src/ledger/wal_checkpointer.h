// ledger/wal_checkpointer.h — WAL checkpoints off the writer's thread.
//
// By default SQLite checkpoints in the connection that commits: the commit that
// takes the WAL past 1000 frames copies them into the database and fsyncs the
// WAL and the database before it returns. For orch that is a stall of several
// milliseconds in the middle of a run (no step is dispatched meanwhile), and one
// more at exit, where the closing store truncates a large WAL
// (shrink_wal_if_large) and first has to sync and copy everything not yet in
// the database.
//
// A writer connection with a WalCheckpointer (install_wal_checkpointer) instead:
//   * from kBackgroundCheckpointFrames frames in the WAL on, asks a thread of its
//     own, with its own connection, for a PASSIVE checkpoint after a commit. The
//     writer goes on at once; readers and writers are never waited for. The
//     thread is started the first time it is needed, so a short command that
//     writes a few rows never has one.
//   * from kForegroundCheckpointFrames on (the thread cannot keep up with a writer
//     that never pauses), checkpoints in the committing connection itself, as
//     SQLite's automatic checkpoint would, after waiting for the thread's
//     checkpoint if one is running (it holds the checkpoint lock). A fully checkpointed WAL is reset by
//     the writer's next transaction, which is what bounds the WAL.
// A checkpoint's own safety is SQLite's: it syncs the WAL before copying and the
// database after, under the connection's synchronous setting (the writer's).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

#include "sqlite/connection_settings.h"
#include "sqlite/sqlite_db.h"

namespace orch {

inline constexpr int kBackgroundCheckpointFrames = 128;
inline constexpr int kForegroundCheckpointFrames = 1000;

class WalCheckpointer {
 public:
  WalCheckpointer(std::filesystem::path db_path, SyncMode sync) : path_(std::move(db_path)), sync_(sync) {}
  // Stops the thread, after the checkpoint it is running (if any).
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Called after each commit of the writer's connection `db` with the number of
  // frames in its WAL: asks for a background checkpoint each time the WAL has
  // grown by kBackgroundCheckpointFrames (or from that many on, after a reset),
  // and checkpoints in `db` itself from kForegroundCheckpointFrames on.
  void on_commit(sqlite3* db, const char* schema, int frames);
  // Asks for a background checkpoint; nothing if one is already asked for or
  // running. Starts the thread the first time.
  void request();
  // Stops the thread (waiting for a running checkpoint); idempotent.
  void stop();

  // How many background checkpoints completed (SQLITE_OK), and how many failed
  // or found the database busy. For tests and diagnostics.
  std::int64_t completed() const { return completed_.load(); }
  std::int64_t failed() const { return failed_.load(); }
  // Whether the thread was ever started, and whether it has nothing to do now.
  bool started() const { return thread_.joinable(); }
  bool idle() const { return !busy_.load(); }

 private:
  void run();
  // Waits until the thread has no checkpoint asked for or running.
  void wait_idle();

  std::filesystem::path path_;
  SyncMode sync_;
  std::mutex mutex_;
  std::condition_variable wake_;   // the thread: a request, or stop
  std::condition_variable done_;   // the writer: the thread's checkpoint finished
  bool requested_ = false;         // under mutex_
  bool stopping_ = false;          // under mutex_
  std::atomic<bool> busy_{false};  // requested or running: request() is free then
  std::atomic<std::int64_t> completed_{0};
  std::atomic<std::int64_t> failed_{0};
  bool no_thread_ = false;                             // the thread could not be started: foreground only
  int next_request_at_ = kBackgroundCheckpointFrames;  // writer's thread only
  int last_frames_ = 0;                                // writer's thread only
  std::thread thread_;
};

// Makes `db` (a writer's connection) checkpoint as described above, through
// `checkpointer`, which must outlive the connection's use (stop it before
// closing). Replaces SQLite's automatic checkpoint on that connection.
void install_wal_checkpointer(SqliteDb& db, WalCheckpointer& checkpointer);

}  // namespace orch
