// engine/orphans.h — killing what a dead orch left running.
//
// Step processes run in their own process groups, so kill -9 of orch leaves them
// running. Before a run is resumed (or cancelled without a live driver), every
// process whose environment says ORCH_RUN_ID=<run> — the step processes orch
// started for that run and whatever they started in turn — is killed with its
// process group, so the re-run never races a half-dead previous attempt.
#pragma once

#include <string>

namespace orch {

// Returns how many processes were found and killed. Never kills the caller or its
// own process group.
int kill_orphans(const std::string& run_id);

}  // namespace orch
