// cli/detached_driver.h — the other processes orch starts as programs of its
// own: a run's driver in the background, and orch-serve in its place.
//
// `orch run PLAN --detach` (and `orch mcp`'s run tool) record the run
// (Engine::submit) and leave its driving to `orch resume RUN` started here:
// in a session of its own (setsid), not a child of the caller (double fork: the
// caller may exit, or live long, without a zombie), its standard input
// /dev/null, its standard output and error appended to a log file. The caller
// learns whether the exec happened: a close-on-exec pipe carries exec's errno
// back, so a driver that could not start is an error here, never a run left
// "running" in silence.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "orch/error.h"
#include "orch/store.h"

namespace orch::cli {

struct DetachedDriver {
  std::filesystem::path orch;  // the orch binary to run
  std::string run_id;
  std::string store;  // --store as the caller had it
  // The executors' files, passed on as --models, --registry, --workers when set.
  std::string models, registry, workers;
  std::filesystem::path log;  // created (with its folder) when missing, appended to
};

// Starts `orch resume RUN --store STORE [...]`; returns its pid (already
// reparented: it is not the caller's child). Spawn names why it could not start.
Expected<int> start_detached_driver(const DetachedDriver& d);

// Where the driver of run `run_id` writes: detached/RUN.log in the store's folder.
std::filesystem::path detached_log_path(const Store& store, const std::string& run_id);

// Replaces this process with the program orch-serve beside the orch binary
// (`orch serve`, `orch mcp`: cpp-httplib lives there), argv[0] "orch-serve" then
// `words`. Returns only when it could not: the exit code of the error said.
int exec_orch_serve(const std::vector<std::string>& words);

// The orch binary of this process (/proc/self/exe), or, from another program of
// orch's (orch-serve), the `orch` beside it.
std::filesystem::path orch_binary_path();

}  // namespace orch::cli
