// cli/approval_prompt.h — the risk guard's question, asked on the terminal.
#pragma once

#include <functional>

#include "orch/engine.h"

namespace orch::cli {

// A prompt on /dev/tty for EngineOptions::ask_approval, or an empty function
// when orch has no terminal to ask on (stdin not a terminal, or no /dev/tty):
// then an unapproved step waits for `orch approve`. MEDIUM asks "[y/N]"; HIGH
// shows the command and its inputs and approves only when the step's id is
// typed back. Anything else, end of input or an interrupt is a no.
std::function<bool(const ApprovalRequest&)> terminal_approval_prompt();

}  // namespace orch::cli
