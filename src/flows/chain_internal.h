// flows/chain_internal.h — what the parts of `orch chain` share (chain_input.cc,
// chain_build.cc, chain_report.cc); not for other files.
#pragma once

#include <string>
#include <vector>

#include "flows/chain.h"

namespace orch::flows::chain_detail {

// A refusal of the chain as written (code invalid_chain), with its problems.
ChainRefusal invalid(std::string message, std::vector<std::string> problems = {});

// A step's risk as the risk guard will see it: its executor's judgement, else the step's own.
RiskLevel risk_of(const Step& step, const ExecutorRegistry& executors);

}  // namespace orch::flows::chain_detail
