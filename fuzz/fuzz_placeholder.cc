// fuzz/fuzz_placeholder.cc — libFuzzer target for the placeholder engine.
//
// Parses arbitrary bytes with orch::parse_template and renders what parses with
// a RenderContext whose lookups return fixed text and JSON (and "not available"
// for a few names, to exercise the error path). When the input holds a newline,
// the first line is also used as a dotted path into the rest with
// orch::json_path_value. Checked contract beyond "no crash": a template without
// placeholders always renders (no lookup can fail). Built only with
// -DORCH_FUZZ=ON and clang (see fuzz/run.sh).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/placeholder.h"

namespace {

constexpr const char* kJsonResult = R"({"a":{"b":[1,"two",{"c":null,"d":true}]},"s":"text","n":-1.5e3})";

std::optional<std::string> step_result(const std::string& step_id) {
  if (step_id == "missing" || step_id.empty()) {
    return std::nullopt;
  }
  if (step_id == "text") {
    return "not json {";
  }
  return kJsonResult;
}

std::optional<std::string> index_result(int index) {
  if (index < 0 || index > 64) {
    return std::nullopt;
  }
  return index % 2 == 0 ? std::string(kJsonResult) : "result " + std::to_string(index);
}

std::optional<std::string> input(const std::string& name) {
  if (name == "missing" || name.empty()) {
    return std::nullopt;
  }
  return "value of " + name;
}

std::vector<std::string> split_path(std::string_view line) {
  std::vector<std::string> path;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = line.find('.', start);
    path.emplace_back(
        line.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) {
      return path;
    }
    start = dot + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (const auto parsed = orch::parse_template(text)) {
    orch::RenderContext context;
    context.step_result = step_result;
    context.index_result = index_result;
    context.input = input;
    context.attempt_number = 3;
    context.previous_failure = "post result_contains: 'ok' not found\nlast output...";
    const auto rendered = orch::render(*parsed, context);
    if (!parsed->has_placeholders() && !rendered) {
      std::abort();  // nothing to look up, so nothing may fail
    }
  }

  if (const std::size_t newline = text.find('\n'); newline != std::string_view::npos) {
    (void)orch::json_path_value(text.substr(newline + 1), split_path(text.substr(0, newline)));
  }
  return 0;
}
