// serve/token.h — the token that every route that acts (approve, deny, cancel)
// requires, and every route when `orch serve` listens beyond this machine.
//
// Made at the first start, 32 random bytes from getrandom(2) as 64 hex
// characters, written to its file with mode 0600 (created exclusively: a file
// someone else made in its place is refused, as is one that others may read);
// later starts read it back. Compared in constant time.
#pragma once

#include <filesystem>
#include <string>

#include "orch/error.h"

namespace orch::serve {

struct Token {
  std::string value;
  bool made = false;  // made by this start (to print it once)
};

Expected<Token> load_or_make_token(const std::filesystem::path& file);

// `bytes` random bytes from getrandom(2), as hex (a token, an MCP session's id).
Expected<std::string> random_hex(std::size_t bytes);

// Whether `given` is `token`, in time that does not depend on where they differ.
bool same_token(const std::string& token, std::string_view given);

}  // namespace orch::serve
