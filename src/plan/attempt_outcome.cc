// The names of attempt endings (orch/attempt_outcome.h). Here, in the lowest
// layer of orch's model, because both the executors (exec) and the ledger
// (ledger) write and read them, and neither is below the other.
#include "orch/attempt_outcome.h"

#include <array>
#include <utility>

namespace orch {

namespace {
constexpr std::array<std::pair<AttemptEnding, const char*>, 9> kEndingNames{{
    {AttemptEnding::Exited, "exited"},
    {AttemptEnding::Signaled, "signaled"},
    {AttemptEnding::TimedOut, "timed_out"},
    {AttemptEnding::Stalled, "stalled"},
    {AttemptEnding::Cancelled, "cancelled"},
    {AttemptEnding::SpawnFailed, "spawn_failed"},
    {AttemptEnding::Error, "error"},
    {AttemptEnding::SetupFailed, "setup_failed"},
    {AttemptEnding::Interrupted, "interrupted"},
}};
}  // namespace

const char* attempt_ending_name(AttemptEnding ending) {
  for (const auto& [e, name] : kEndingNames)
    if (e == ending) return name;
  return "error";
}

std::optional<AttemptEnding> parse_attempt_ending(std::string_view name) {
  for (const auto& [e, n] : kEndingNames)
    if (name == n) return e;
  return std::nullopt;
}

}  // namespace orch
