// util/json_text.h — serialising JSON that may carry bytes from the outside world.
//
// Step output, file paths and plan text are not always valid UTF-8. nlohmann's
// dump() throws on invalid UTF-8; orch never lets that reach a user as a crash:
// every dump of such data goes through json_text(), which replaces invalid
// sequences with U+FFFD.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace orch {

template <class Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace orch
