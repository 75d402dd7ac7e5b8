// util/read_file.h — reading a whole file into memory, with a size limit.
//
// Errors name the path and the system's reason: NotFound for a missing file, Io
// for anything else (a folder, no permission, a file over `max_bytes`, a named
// pipe that gave nothing: opening one never waits for a writer).
// Thread-safe.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "orch/error.h"

namespace orch {

Expected<std::string> read_file_text(const std::filesystem::path& path,
                                     std::size_t max_bytes = std::size_t{64} << 20);

}  // namespace orch
