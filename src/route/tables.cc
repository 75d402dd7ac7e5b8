#include "route/tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "route/embedded_data.h"
#include "route/table_parsers.h"
#include "util/read_file.h"
#include "util/strings.h"

namespace orch::route {

namespace fs = std::filesystem;

const char* complexity_name(Complexity level) {
  switch (level) {
    case Complexity::Trivial:
      return "trivial";
    case Complexity::Standard:
      return "standard";
    case Complexity::Complex:
      return "complex";
  }
  return "standard";
}

std::optional<Complexity> parse_complexity(std::string_view name) {
  for (Complexity level : kComplexities)
    if (name == complexity_name(level)) return level;
  return std::nullopt;
}

const std::vector<std::string>& pipeline_stages() {
  static const std::vector<std::string> stages = {"ROUTE",   "RECALL", "SIMILARITY", "PLAN",
                                                  "EXECUTE", "VERIFY", "REVIEW",     "SUMMARIZE"};
  return stages;
}

const std::vector<std::string>& route_table_names() {
  static const std::vector<std::string> names = {"intents.yaml",    "requests.yaml", "complexity.yaml",
                                                 "strategies.yaml", "budgets.yaml",  "verify.yaml"};
  return names;
}

const IntentSpec* RouteTables::find_intent(std::string_view name) const {
  for (const auto& intent : intents)
    if (intent.name == name) return &intent;
  return nullptr;
}

std::vector<std::string> RouteTables::intent_names() const {
  std::vector<std::string> out;
  for (const auto& intent : intents) out.push_back(intent.name);
  return out;
}

std::vector<std::string> RouteTables::request_type_names() const {
  std::vector<std::string> out;
  for (const auto& t : requests.request_types) out.push_back(t.name);
  return out;
}

std::vector<std::string> RouteTables::domain_names() const {
  std::vector<std::string> out;
  for (const auto& d : requests.domains) out.push_back(d.name);
  return out;
}

Expected<RouteTables> RouteTables::parse(const std::vector<TableText>& files) {
  std::map<std::string, const TableText*> by_name;
  for (const auto& f : files) by_name[f.name] = &f;
  for (const auto& name : route_table_names())
    if (!by_name.contains(name)) return fail(ErrorCode::InvalidInput, fmt::format("no route table {}", name));

  RouteTables tables;
  std::vector<std::string> problems;
  table_parsers::Known known;
  // Reads one table: its tree, then `read` unless the YAML itself is broken.
  auto read = [&](const std::string& name, auto&& fill) {
    const TableText& t = *by_name[name];
    tables.sources.push_back({t.name, t.file, t.overridden});
    TableReader reader(t.file);
    DocNode root = reader.parse(t.text);
    if (reader.ok()) fill(reader, root);
    auto found = reader.problems();
    problems.insert(problems.end(), found.begin(), found.end());
    return found.empty();
  };
  using namespace table_parsers;
  if (read("intents.yaml", [&](TableReader& r, const DocNode& root) { read_intents(r, root, tables); }))
    known.intents = tables.intent_names();
  if (read("requests.yaml", [&](TableReader& r, const DocNode& root) { read_requests(r, root, tables); }))
    known.request_types = tables.request_type_names();
  read("complexity.yaml",
       [&](TableReader& r, const DocNode& root) { read_complexity(r, root, known, tables); });
  read("strategies.yaml", [&](TableReader& r, const DocNode& root) { read_strategies(r, root, tables); });
  read("budgets.yaml", [&](TableReader& r, const DocNode& root) { read_budgets(r, root, known, tables); });
  read("verify.yaml", [&](TableReader& r, const DocNode& root) { read_checklists(r, root, known, tables); });
  if (!problems.empty()) return fail(ErrorCode::InvalidInput, join(problems, "\n"));
  return tables;
}

Expected<RouteTables> RouteTables::load(const fs::path& workspace) {
  const fs::path dir = (workspace / ".orch" / "route").lexically_normal();
  std::error_code ec;
  std::vector<std::string> stray;
  // A project's overrides that cannot be read are errors, never the shipped
  // tables in silence: the project's checklist would go unrun.
  const auto dir_status = fs::symlink_status(dir, ec);
  if (fs::exists(dir_status) && !fs::is_directory(dir, ec))
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}: not a folder: the project's route tables go in a folder of that name",
                            dir.string()));
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const bool yaml = lower.ends_with(".yaml") || lower.ends_with(".yml");
      const auto& names = route_table_names();
      if (yaml && std::find(names.begin(), names.end(), name) == names.end())
        stray.push_back(fmt::format("{}: not a route table, so it would be ignored{} (tables: {})",
                                    entry.path().string(), did_you_mean(name, names), join(names, ", ")));
    }
    if (ec)
      return fail(ErrorCode::Io, fmt::format("{}: cannot list the folder: {}", dir.string(), ec.message()));
  }
  if (!stray.empty()) {
    std::sort(stray.begin(), stray.end());
    return fail(ErrorCode::InvalidInput, join(stray, "\n"));
  }
  std::vector<TableText> files;
  for (const ShippedTable& shipped : shipped_tables()) {
    const fs::path override_file = dir / shipped.name;
    // symlink_status: a link to nothing is an override that cannot be read.
    if (!fs::exists(fs::symlink_status(override_file, ec))) {
      files.push_back({shipped.name, shipped.path, std::string(shipped.text), false});
      continue;
    }
    auto text = read_file_text(override_file);
    if (!text)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("cannot read the route table: {}", text.error().message));
    files.push_back({shipped.name, override_file.string(), std::move(*text), true});
  }
  return parse(files);
}

}  // namespace orch::route
