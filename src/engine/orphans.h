// engine/orphans.h — killing what a dead orch left running.
//
// Step processes run in their own process groups, so kill -9 of orch leaves them
// running. Before a run is resumed (or cancelled without a live driver), every
// process whose environment says ORCH_RUN_ID=<run> — the step processes orch
// started for that run and whatever they started in turn — is killed with its
// process group, so the re-run never races a half-dead previous attempt.
#pragma once

#include <cstdint>
#include <string>

#include "orch/error.h"
#include "orch/store.h"

namespace orch {

// Returns how many processes were found and killed. Never kills the caller or its
// own process group.
int kill_orphans(const std::string& run_id);

// Closes the attempts of `run_id` that a dead driver left `running` (call after
// kill_orphans, inside the caller's transaction): each becomes interrupted and
// uncounted, its `writes:` snapshot is restored, and an attempt_interrupted event
// says whether that worked. Returns how many attempts it closed.
Expected<int> close_interrupted_attempts(Store& store, const std::string& run_id, std::int64_t now_ms);

}  // namespace orch
