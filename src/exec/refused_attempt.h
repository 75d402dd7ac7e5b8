// An attempt that ends before anything is spawned — Error when its inputs do not
// fit its executor, SetupFailed when the executor's program is not there to run
// (a registry tool's, a worker's CLI) — reported from the loop like every other
// ending, so the engine settles it in a turn as it settles a process's end.
#pragma once

#include <memory>
#include <string>

#include "orch/event_loop.h"
#include "orch/executor.h"

namespace orch {

std::unique_ptr<RunningAttempt> refused_attempt(std::string message, EventLoop& loop,
                                                Executor::DoneCallback done,
                                                AttemptEnding ending = AttemptEnding::Error);

}  // namespace orch
