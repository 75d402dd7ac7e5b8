// `orch chain`: reading the chain a user gives (a file, JSON or YAML text, or
// standard input) into its steps, with the line of each problem.
#include <fmt/format.h>

#include "exec/config_check.h"
#include "flows/chain.h"
#include "flows/chain_internal.h"
#include "plan/json_reader.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch::flows {

using ojson = nlohmann::ordered_json;

ChainExpected<ChainInput> read_chain_input(const std::string& arg) {
  std::string_view t = trim(arg);
  if (t.empty())
    return std::unexpected(
        chain_detail::invalid("--steps is empty: give a JSON array of steps, or a file holding one"));
  ChainInput in;
  std::string text;
  bool yaml = false;
  if (t.front() == '[' || t.front() == '{') {
    text = std::string(t);
  } else {
    // A folder or a file that cannot be opened says so with the system's reason, never as a
    // parse error of nothing.
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec))
      return std::unexpected(chain_detail::invalid(fmt::format(
          "--steps '{}': is a folder, not a file (give a JSON array inline, or a JSON/YAML file)", arg)));
    auto read = read_file_text(arg);
    if (!read) {
      const std::string& why = read.error().message;
      const std::string reason = why.starts_with(arg + ": cannot open: ") ? why.substr(arg.size() + 15) : why;
      return std::unexpected(chain_detail::invalid(fmt::format(
          "--steps '{}': cannot read the file: {} (give a JSON array inline, or a JSON/YAML file)", arg,
          reason)));
    }
    text = std::move(*read);
    in.source = arg;
    yaml = arg.ends_with(".yaml") || arg.ends_with(".yml");
  }
  const std::string what = in.source.empty() ? "--steps" : in.source;
  // A key written twice in one mapping is refused, as in a plan: parsed, the
  // later value would silently win.
  std::vector<std::string> duplicates;
  if (yaml) {
    auto doc = detail::read_yaml_doc(text);
    if (!doc)
      return std::unexpected(chain_detail::invalid(
          fmt::format("{}:{}: not valid YAML: {}", what, doc.error().line, doc.error().message)));
    collect_duplicate_keys(*doc, "", what, duplicates);
    in.steps = yaml_to_ordered_json(*doc);
  } else {
    try {
      in.steps = ojson::parse(text);
    } catch (const ojson::exception& e) {
      std::string msg = e.what();
      if (auto end = msg.find("] "); msg.starts_with("[json.exception.") && end != std::string::npos)
        msg = msg.substr(end + 2);
      return std::unexpected(chain_detail::invalid(fmt::format("{}: not valid JSON: {}", what, msg)));
    }
    // nlohmann keeps the last of a repeated key and says nothing: the plan
    // reader's JSON parser keeps each with its line.
    if (auto doc = detail::read_json_doc(text)) collect_duplicate_keys(*doc, "", what, duplicates);
  }
  if (!duplicates.empty())
    return std::unexpected(
        chain_detail::invalid(fmt::format("{}: a key is written twice", what), std::move(duplicates)));
  return in;
}

}  // namespace orch::flows
