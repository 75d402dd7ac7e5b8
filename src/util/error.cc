#include "orch/error.h"

namespace orch {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidInput: return "invalid_input";
    case ErrorCode::NotFound: return "not_found";
    case ErrorCode::Busy: return "busy";
    case ErrorCode::Io: return "io";
    case ErrorCode::Store: return "store";
    case ErrorCode::Spawn: return "spawn";
    case ErrorCode::Internal: return "internal";
    case ErrorCode::Interrupted: return "interrupted";
    case ErrorCode::Disconnected:
      return "disconnected";
  }
  return "internal";
}

}  // namespace orch
