// orch/error.h — the error type every recoverable failure in orch travels as.
//
// Recoverable errors are values: functions return Expected<T>, which holds either
// the result or an Error. An Error carries a code (what kind of failure, which
// the CLI maps to an exit code) and a message written for the person who has to
// act on it ("plan.yaml:14: step 'fix' depends on unknown step 'fnd' (did you mean
// 'find'?)"). Exceptions are used only for fatal conditions at the top level.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace orch {

enum class ErrorCode {
  InvalidInput,  // a plan, flag or argument the user must fix (exit 2)
  NotFound,      // a run, step, attempt or file that does not exist (exit 2)
  Busy,          // the run is held by another live process (exit 2)
  Io,            // a file or pipe operation failed
  Store,         // the ledger could not be read or written
  Spawn,         // a process could not be started
  Internal,      // a broken invariant inside orch: a bug
  Interrupted,   // stopped by SIGINT/SIGTERM/SIGHUP, what was recorded kept (exit 130)
  // The ledger's server connection was lost inside a transaction: nothing of it
  // landed (the server rolled it back), and the store connects again at the next
  // begin(), so the transaction may be written again from the start (exit 1).
  Disconnected,
};

struct Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
};

template <class T>
using Expected = std::expected<T, Error>;

inline std::unexpected<Error> fail(ErrorCode code, std::string message) {
  return std::unexpected<Error>(Error{code, std::move(message)});
}

// Returns the name of an error code ("invalid_input", "not_found", ...).
const char* error_code_name(ErrorCode code);

}  // namespace orch

// ORCH_TRY(expr): evaluates an Expected; on error returns the error from the
// enclosing function, otherwise yields the value (or nothing, for Expected<void>).
#define ORCH_TRY(...)                                              \
  __extension__({                                                  \
    auto orch_try_result_ = (__VA_ARGS__);                         \
    if (!orch_try_result_) {                                       \
      return std::unexpected(std::move(orch_try_result_).error()); \
    }                                                              \
    std::move(orch_try_result_).value();                           \
  })
