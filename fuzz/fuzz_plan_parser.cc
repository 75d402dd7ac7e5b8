// fuzz/fuzz_plan_parser.cc — libFuzzer target for the plan loader and validator.
//
// Feeds arbitrary bytes to orch::parse_plan as a plan file; when they load
// without diagnostics, the plan also goes through orch::validate_plan. Any crash,
// sanitizer report, uncaught exception or hang is a bug: both functions promise
// to turn every bad input into Diagnostics. Built only with -DORCH_FUZZ=ON and
// clang (see fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "orch/plan_loader.h"
#include "orch/validate.h"

namespace {

// An empty folder of our own as the workspace, so relative paths in a fuzzed
// plan resolve somewhere harmless (validation only reads, never writes).
const std::filesystem::path& fuzz_workspace() {
  static const std::filesystem::path path = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "orch-fuzz-ws.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::abort();
    }
    return std::filesystem::path(pattern);
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const orch::LoadResult loaded = orch::parse_plan(text, "fuzz.yaml");
  if (!loaded.diagnostics.empty()) {
    return 0;
  }
  orch::ValidateOptions options;
  options.workspace = fuzz_workspace();
  options.plan_dir = fuzz_workspace();
  const orch::Diagnostics diagnostics = orch::validate_plan(loaded.plan, options);
  for (const orch::Diagnostic& diagnostic : diagnostics) {
    (void)diagnostic.to_string();
  }
  return 0;
}
