// exec/child_signals.h — putting a vfork child's signal dispositions back to
// their defaults before it execs, with as few system calls as the kernel allows.
//
// Until it execs, a vfork child shares orch's memory, so a handler of orch's must
// never run in it: every signal with a handler goes back to SIG_DFL while all
// signals are still blocked. Asking the kernel about each signal in turn is 64
// sigaction calls, which on a slow virtual machine cost 60–80 µs per child while
// orch waits for it (glibc's posix_spawn pays them too). The SigCgt and SigIgn
// lines of /proc/self/status say the same in one read, about 9 µs; the call per
// signal remains the fallback when that file cannot be read.
//
// Everything here is async-signal-safe: no allocation, no lock, only system calls.
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace orch {

// Bit (sig - 1) of each mask is signal `sig`, as the kernel prints them.
struct SignalDispositions {
  std::uint64_t caught = 0;   // a handler is installed (SigCgt)
  std::uint64_t ignored = 0;  // SIG_IGN (SigIgn)
};

// Reads the SigCgt and SigIgn lines out of the text of a /proc/PID/status file;
// false when either is missing or malformed.
bool parse_status_dispositions(std::string_view status, SignalDispositions* out) noexcept;

// Sets to SIG_DFL every signal that has a handler, and every signal of `defaults`
// that is ignored (an ignored disposition survives exec; a caught one does not,
// but could run in the child before it). Signals already at their default are
// left alone. `status_path` is where the process's own status is read
// ("/proc/self/status"); when it cannot be read, or does not say, each signal is
// asked about with sigaction instead.
void reset_signal_dispositions(const sigset_t& defaults,
                               const char* status_path = "/proc/self/status") noexcept;

}  // namespace orch
