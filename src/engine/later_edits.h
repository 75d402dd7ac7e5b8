// engine/later_edits.h — the files a killed driver's attempt left, changed since.
//
// The engine's resume of a run whose driver was killed (kill -9) puts every
// file of an attempt it left running back to the attempt's snapshot: right for
// what the attempt did while orch watched it, wrong for a change made after —
// by the user, editing the files by hand before resuming, or by a process of
// the attempt that outlived orch. Such a file (changed since the snapshot, and
// stamped later than orch's last sign of life plus kWatchLagMs) is a later
// edit, and is not put back without the user's word. settle_later_edits runs
// before that resume (the phase runner calls it) and does what the policy says:
//   Refuse:  nothing is restored or run; an InvalidInput error names the files
//            and the two commands that go on (the default of `orch review`);
//   Keep:    the snapshot is restored but for those files, and marked put back,
//            so the resume has nothing left to restore; the attempt runs again
//            on the files as they are now;
//   Discard: nothing is done here; the resume puts every file back.
// A run a live process drives is left alone (its resume is refused anyway).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "orch/error.h"
#include "orch/store.h"

namespace orch {

enum class LaterEdits { Refuse, Keep, Discard };

// How long after the last sign of life of the orch that watched an attempt (its
// run row's heartbeat, rewritten every second while a step runs) the attempt's
// own changes may still be stamped: a later change is not known to be its own.
constexpr std::int64_t kLaterEditLagMs = 3000;

struct LaterEditsContext {
  std::filesystem::path workspace;  // files are named relative to it
  // What was cut off, for the messages: "review rv-1: the fix of round 2".
  std::string who;
  // The command that goes on, without the flag: "orch review --resume rv-1";
  // the refusal names it with --keep-edits and with --discard-edits.
  std::string resume_command;
  std::function<void(const std::string&)> on_note;  // what Keep kept
  std::int64_t now_ms = 0;
};

// Settles the later edits of the attempts `run`'s dead driver left running. Kills
// the processes that driver started first (kill_orphans), so that nothing
// changes a file while it is compared.
Expected<void> settle_later_edits(Store& store, const RunRecord& run, LaterEdits policy,
                                  const LaterEditsContext& context);

}  // namespace orch
