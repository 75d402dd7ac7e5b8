// Reading cycle.yaml (load_cycle_config): every problem of the file at once, each
// "FILE:LINE: FIELD: message" (route/table_reader.h), then the schema as a net.
#include "flows/cycle_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "flows/embedded_files.h"
#include "orch/plan_loader.h"
#include "route/table_reader.h"
#include "util/json_schema.h"
#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"

namespace orch::flows {

namespace fs = std::filesystem;
using json = nlohmann::json;
using detail::DocEntry;
using route::DocNode;
using route::field_name;
using route::TableReader;

namespace cycle_config_detail {

const std::vector<std::string> kCycleKeys = {
    "name",         "workspace",     "status", "lifecycle", "plan",    "review", "max_iterations",
    "max_parallel", "past_attempts", "budget", "scope",     "workers", "models"};
const std::vector<std::string> kCycleRoleKeys = {"command",     "worker",   "model",  "prompt",
                                                 "prompt_file", "attempts", "timeout"};
constexpr std::int64_t kMaxRoleAttempts = 10;
constexpr std::int64_t kMaxPastAttempts = 100;

// What a role is for: it decides who may play it and its attempts by default.
enum class RoleUse {
  StageWorker,  // edits the job's file: a command or a worker, never a model
  Plan,
  Review,  // its answer is checked: a malformed one is worth a second attempt that is told why
};

const Expected<JsonSchema>& cycle_config_schema() {
  static const Expected<JsonSchema> schema = []() -> Expected<JsonSchema> {
    auto doc = json::parse(cycle_config_schema_text(), nullptr, false);
    if (doc.is_discarded()) return fail(ErrorCode::Internal, "the cycle config schema is not JSON");
    return JsonSchema::parse(doc);
  }();
  return schema;
}

// A stage's name is in messages, the runs' records and the workers' {stage}: a
// plain word, as a lens's name is.
bool is_stage_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// "/a/b/./c/" -> "/a/b/c": the paths a config holds are compared and shown.
fs::path normal_path(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (n.has_relative_path() && !n.has_filename()) n = n.parent_path();
  return n;
}

// A file's read error without the path read_file_text puts first: the message
// names the file as the user wrote it, once.
std::string cycle_read_reason(const Error& error, const fs::path& path) {
  const std::string prefix = path.string() + ": ";
  return error.message.starts_with(prefix) ? error.message.substr(prefix.size()) : error.message;
}

bool null_or_absent(const DocNode* node) {
  return !node || node->is_null();
}

// The line of `key:` in `map` (a block mapping's value starts on the next line).
int key_line(const DocNode& map, std::string_view key) {
  for (const DocEntry& e : map.entries)
    if (e.key.scalar == key) return e.key.line;
  return map.line;
}

// The reader of one cycle.yaml: the state the parts of the file share.
class CycleFileReader {
 public:
  CycleFileReader(TableReader& r, CycleConfig& c) : r_(r), c_(c), folder_(c.file.parent_path()) {}

  void read(const DocNode& root);

 private:
  void workspace(const DocNode& root);
  void status(const DocNode& root);
  void lifecycle(const DocNode& root);
  // One stage; its move goes into `stages` (the lifecycle's JSON), its line into `move_line`.
  std::optional<CycleStageConfig> stage(const DocEntry& entry, json& stages, int& move_line);
  void lifecycle_problems(const std::string& message, const DocNode& lifecycle, const DocNode* states,
                          const std::vector<std::pair<std::string, int>>& move_lines);
  std::optional<CycleRole> role(const DocNode& node, const std::string& field, int line, RoleUse use);
  void prompt(const DocNode& node, const std::string& field, CycleRole& role, bool command);
  void limits(const DocNode& root);
  void limit(const DocNode& root, const char* key, std::int64_t min, std::int64_t max, int& into);
  void workspace_file(const DocNode& root, const char* key, std::string& into);
  // A required string of `map`, reported as missing with `what` (what it is for).
  std::optional<std::string> required(const DocNode& map, const std::string& field, const char* key, int line,
                                      const char* what);

  TableReader& r_;
  CycleConfig& c_;
  fs::path folder_;            // of cycle.yaml: the workspace and prompt files are relative to it
  bool workspace_ok_ = false;  // the workspace is a folder: files in it can be checked
};

void CycleFileReader::read(const DocNode& root) {
  r_.only_keys(root, "", kCycleKeys);
  if (auto v = r_.string(root, "", "name", false)) c_.name = *v;
  workspace(root);
  status(root);
  lifecycle(root);
  if (const DocNode* plan = TableReader::find(root, "plan"); !null_or_absent(plan))
    c_.plan = role(*plan, "plan", key_line(root, "plan"), RoleUse::Plan);
  if (const DocNode* review = TableReader::find(root, "review"); !null_or_absent(review)) {
    if (!review->is_scalar())
      c_.review = role(*review, "review", key_line(root, "review"), RoleUse::Review);
    else if (review->scalar != "gate-only")
      r_.problem(
          review->line, "review",
          fmt::format("must be 'gate-only' or a role (command, worker or model), not '{}'{}",
                      quote_for_message(review->scalar, 40), did_you_mean(review->scalar, {"gate-only"})));
  }
  limits(root);
  workspace_file(root, "workers", c_.workers_file);
  workspace_file(root, "models", c_.models_file);
}

void CycleFileReader::workspace(const DocNode& root) {
  c_.workspace = folder_;
  const DocNode* node = TableReader::find(root, "workspace");
  auto v = r_.string(root, "", "workspace", false);
  if (v) c_.workspace = normal_path(folder_ / *v);
  std::error_code ec;
  workspace_ok_ = fs::is_directory(c_.workspace, ec);
  if (!workspace_ok_)
    r_.problem(node ? node->line : root.line, "workspace",
               fmt::format("'{}' is not a folder (relative to {})", v.value_or("."), folder_.string()));
}

void CycleFileReader::status(const DocNode& root) {
  const DocNode* node = TableReader::find(root, "status");
  if (null_or_absent(node)) {
    r_.problem(node ? node->line : root.line, "status",
               "missing: the status file of the items ('status: {file: status.yaml}')");
    return;
  }
  if (!r_.expect_map(*node, "status", "file and fields")) return;
  r_.only_keys(*node, "status", {"file", "fields"});
  if (auto file =
          required(*node, "status", "file", node->line, "the status file, relative to the workspace")) {
    c_.status_file = normal_path(c_.workspace / *file);
    std::error_code ec;
    const auto kind = fs::status(c_.status_file, ec).type();
    if (workspace_ok_ && kind != fs::file_type::regular)
      r_.problem(TableReader::find(*node, "file")->line, "status.file",
                 fmt::format("'{}' {} (relative to the workspace, {})", *file,
                             kind == fs::file_type::not_found ? "does not exist" : "is not a file",
                             c_.workspace.string()));
  }
  const DocNode* fields = TableReader::find(*node, "fields");
  if (null_or_absent(fields) ||
      !r_.expect_map(*fields, "status.fields", "id, file and state to the names of those fields"))
    return;
  r_.only_keys(*fields, "status.fields", {"id", "file", "state"});
  if (auto v = r_.string(*fields, "status.fields", "id", false)) c_.fields.id = *v;
  if (auto v = r_.string(*fields, "status.fields", "file", false)) c_.fields.file = *v;
  if (auto v = r_.string(*fields, "status.fields", "state", false)) c_.fields.state = *v;
  const StatusFields& f = c_.fields;
  if (f.id == f.file || f.id == f.state || f.file == f.state)
    r_.problem(fields->line, "status.fields", "id, file and state must be three different fields");
}

void CycleFileReader::lifecycle(const DocNode& root) {
  const DocNode* node = TableReader::find(root, "lifecycle");
  if (null_or_absent(node)) {
    r_.problem(node ? node->line : root.line, "lifecycle",
               "missing: the states of the items and the stages that move them");
    return;
  }
  if (!r_.expect_map(*node, "lifecycle", "states and stages")) return;
  r_.only_keys(*node, "lifecycle", {"states", "stages"});
  // The lifecycle checks itself (cycle_lifecycle.h) from the JSON it reads; the
  // reader gives it the states as written and each stage's move, and puts its
  // problems back at their lines.
  const DocNode* states = TableReader::find(*node, "states");
  json doc = {{"states", null_or_absent(states) ? json() : yaml_to_json(*states)},
              {"stages", json::object()}};
  std::vector<CycleStageConfig> read;
  std::vector<std::pair<std::string, int>> move_lines;
  const DocNode* stages = TableReader::find(*node, "stages");
  if (null_or_absent(stages)) {
    r_.problem(stages ? stages->line : node->line, "lifecycle.stages",
               "missing: the stages that move items ('NAME: {move: FROM -> TO, worker: ..., gate: ...}')");
  } else if (r_.expect_map(*stages, "lifecycle.stages", "stage names to their move, worker and gate")) {
    r_.only_keys(*stages, "lifecycle.stages", {});  // a name written twice
    if (stages->entries.empty()) r_.problem(stages->line, "lifecycle.stages", "name at least one stage");
    for (const DocEntry& entry : stages->entries) {
      int move_line = 0;
      if (auto stage = this->stage(entry, doc["stages"], move_line)) {
        if (move_line > 0) move_lines.emplace_back(stage->name, move_line);
        read.push_back(std::move(*stage));
      }
    }
  }
  // With no move read there is no lifecycle to check: what is wrong is said above.
  if (doc["stages"].empty()) return;
  auto lifecycle = Lifecycle::from_json(doc);
  if (!lifecycle) {
    lifecycle_problems(lifecycle.error().message, *node, states, move_lines);
    return;
  }
  c_.lifecycle = std::move(*lifecycle);
  for (const CycleStage& s : c_.lifecycle.stages()) {
    auto at =
        std::find_if(read.begin(), read.end(), [&](const CycleStageConfig& st) { return st.name == s.name; });
    if (at != read.end()) c_.stages.push_back(*at);
  }
}

std::optional<CycleStageConfig> CycleFileReader::stage(const DocEntry& entry, json& stages, int& move_line) {
  CycleStageConfig stage;
  stage.name = entry.key.scalar;
  stage.line = entry.key.line;
  const std::string field = field_name("lifecycle.stages", stage.name);
  if (!is_stage_name(stage.name))
    r_.problem(
        stage.line, field,
        fmt::format("'{}' is not a stage's name (letters, digits, '_' and '-', starting with a letter)",
                    quote_for_message(stage.name, 40)));
  if (!r_.expect_map(entry.value, field, "move, worker and gate")) return std::nullopt;
  const DocNode& map = entry.value;
  r_.only_keys(map, field, {"move", "worker", "gate"});
  if (auto move = required(map, field, "move", stage.line, "FROM -> TO (FROM -> TO|TO for a choice)")) {
    stages[stage.name] = *move;
    move_line = TableReader::find(map, "move")->line;
  }
  const DocNode* worker = TableReader::find(map, "worker");
  if (null_or_absent(worker))
    r_.problem(worker ? worker->line : stage.line, field_name(field, "worker"),
               "missing: who does the stage's work (a command or a worker)");
  else if (auto role = this->role(*worker, field_name(field, "worker"), key_line(map, "worker"),
                                  RoleUse::StageWorker))
    stage.worker = std::move(*role);
  stage.gate =
      required(map, field, "gate", stage.line, "the shell command that decides whether an item moved")
          .value_or("");
  return stage;
}

void CycleFileReader::lifecycle_problems(const std::string& message, const DocNode& lifecycle,
                                         const DocNode* states,
                                         const std::vector<std::pair<std::string, int>>& move_lines) {
  // Each line of the message is "FIELD: what is wrong"; the field finds the line.
  std::string_view rest = message;
  while (!rest.empty()) {
    const std::string_view one = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(std::min(rest.size(), one.size() + 1));
    const std::size_t colon = one.find(": ");
    const std::string field(one.substr(0, colon));
    const std::string text(colon == std::string_view::npos ? one : one.substr(colon + 2));
    int line = lifecycle.line;
    for (const auto& [name, move_line] : move_lines)
      if (field == field_name("lifecycle.stages", name)) line = move_line;
    if (!null_or_absent(states)) {
      if (field == "lifecycle.states") line = states->line;
      if (field.starts_with("lifecycle.states[") && states->is_sequence()) {
        const std::size_t i =
            std::strtoul(field.c_str() + std::string_view("lifecycle.states[").size(), nullptr, 10);
        if (i < states->items.size()) line = states->items[i].line;
      }
    }
    r_.problem(line, field, text);
  }
}

std::optional<CycleRole> CycleFileReader::role(const DocNode& node, const std::string& field, int line,
                                               RoleUse use) {
  if (!r_.expect_map(node, field, "one of command, worker and model, with its prompt, attempts and timeout"))
    return std::nullopt;
  r_.only_keys(node, field, kCycleRoleKeys);
  const std::size_t before = r_.problem_count();
  CycleRole role;
  role.line = line;
  std::vector<std::string> given;
  for (const char* key : {"command", "worker", "model"})
    if (TableReader::find(node, key)) given.emplace_back(key);
  if (given.empty()) {
    r_.problem(line, field,
               "needs one of 'command: ...' (a shell command), 'worker: NAME' (an agent CLI of the workers "
               "file) and 'model: NAME' (a model of the models file)");
  } else if (given.size() > 1) {
    r_.problem(line, field,
               fmt::format("give one of 'command', 'worker' and 'model', not {}", join(given, " and ")));
  } else {
    const DocNode& value = *TableReader::find(node, given[0]);
    const std::string text = r_.string_value(value, field_name(field, given[0])).value_or("");
    if (given[0] == "command") {
      role.kind = RoleKind::Command;
      role.command = text;
    } else if (given[0] == "worker") {
      role.kind = RoleKind::Worker;
      role.executor = "worker:" + text;
    } else {
      role.kind = RoleKind::Model;
      role.executor = "llm:" + text;
      if (use == RoleUse::StageWorker)
        r_.problem(value.line, field, "a model cannot edit a file: use a command or a worker");
    }
  }
  prompt(node, field, role, given.size() == 1 && given[0] == "command");
  role.attempts = use == RoleUse::Review ? 2 : 1;
  if (const DocNode* a = TableReader::find(node, "attempts"); !null_or_absent(a)) {
    if (auto n = r_.integer_value(*a, field_name(field, "attempts"), 1)) {
      if (*n > kMaxRoleAttempts)
        r_.problem(a->line, field_name(field, "attempts"),
                   fmt::format("{} is more than the most allowed, {}", *n, kMaxRoleAttempts));
      else
        role.attempts = static_cast<int>(*n);
    }
  }
  // A duration as a plan's step writes one (parse_duration: "90s", "20m", "1h30m";
  // a bare number is seconds).
  if (const DocNode* t = TableReader::find(node, "timeout"); !null_or_absent(t)) {
    const std::string f = field_name(field, "timeout");
    Expected<Millis> d =
        t->is_scalar()
            ? parse_duration(t->scalar)
            : Expected<Millis>(fail(ErrorCode::InvalidInput, "must be a duration such as 90s, 20m or 1h30m"));
    if (!d)
      r_.problem(t->line, f, d.error().message);
    else if (d->count() <= 0)
      r_.problem(t->line, f, fmt::format("'{}' must be more than 0 (such as 20m)", t->scalar));
    else
      role.timeout_ms = d->count();
  }
  if (r_.problem_count() != before) return std::nullopt;
  return role;
}

void CycleFileReader::prompt(const DocNode& node, const std::string& field, CycleRole& role, bool command) {
  const DocNode* text = TableReader::find(node, "prompt");
  const DocNode* file = TableReader::find(node, "prompt_file");
  if (!text && !file) return;
  if (text && file) {
    r_.problem(file->line, field, "give 'prompt' or 'prompt_file', not both");
    return;
  }
  const std::string f = field_name(field, text ? "prompt" : "prompt_file");
  if (command) {
    r_.problem((text ? text : file)->line, f,
               "a command takes no prompt: what it does is its command line (a prompt is for a worker or a "
               "model)");
    return;
  }
  if (text) {
    if (auto v = r_.string_value(*text, f)) role.prompt = *v;
    return;
  }
  auto rel = r_.string_value(*file, f);
  if (!rel) return;
  const fs::path path = folder_ / *rel;
  auto read = read_file_text(path);
  if (!read)
    r_.problem(file->line, f,
               fmt::format("'{}': {} (relative to {})", *rel, cycle_read_reason(read.error(), path),
                           folder_.string()));
  else if (trim(*read).empty())
    r_.problem(file->line, f, fmt::format("'{}' is empty", *rel));
  else
    role.prompt = std::move(*read);
}

void CycleFileReader::limits(const DocNode& root) {
  limit(root, "max_iterations", 1, kCycleMaxIterations, c_.max_iterations);
  limit(root, "max_parallel", 1, kCycleMaxParallel, c_.max_parallel);
  limit(root, "past_attempts", 0, kMaxPastAttempts, c_.past_attempts);
  if (const DocNode* budget = TableReader::find(root, "budget");
      !null_or_absent(budget) && r_.expect_map(*budget, "budget", "tokens")) {
    r_.only_keys(*budget, "budget", {"tokens"});
    if (auto tokens = r_.integer(*budget, "budget", "tokens", 1, true)) c_.budget_tokens = *tokens;
  }
  if (const DocNode* scope = TableReader::find(root, "scope");
      !null_or_absent(scope) && r_.expect_map(*scope, "scope", "ignore")) {
    r_.only_keys(*scope, "scope", {"ignore"});
    if (const DocNode* ignore = TableReader::find(*scope, "ignore"); !null_or_absent(ignore))
      c_.scope_ignore = r_.string_list(*ignore, "scope.ignore");
  }
}

void CycleFileReader::limit(const DocNode& root, const char* key, std::int64_t min, std::int64_t max,
                            int& into) {
  const DocNode* node = TableReader::find(root, key);
  if (null_or_absent(node)) return;
  auto n = r_.integer_value(*node, key, min);
  if (!n) return;
  if (*n > max)
    r_.problem(node->line, key, fmt::format("{} is more than the most allowed, {}", *n, max));
  else
    into = static_cast<int>(*n);
}

void CycleFileReader::workspace_file(const DocNode& root, const char* key, std::string& into) {
  const DocNode* node = TableReader::find(root, key);
  if (null_or_absent(node)) return;
  auto rel = r_.string_value(*node, key);
  if (!rel) return;
  const fs::path path = normal_path(c_.workspace / *rel);
  into = path.string();
  std::error_code ec;
  if (workspace_ok_ && !fs::is_regular_file(path, ec))
    r_.problem(
        node->line, key,
        fmt::format("'{}' is not a file (relative to the workspace, {})", *rel, c_.workspace.string()));
}

std::optional<std::string> CycleFileReader::required(const DocNode& map, const std::string& field,
                                                     const char* key, int line, const char* what) {
  const DocNode* node = TableReader::find(map, key);
  if (null_or_absent(node)) {
    r_.problem(node ? node->line : line, field_name(field, key), fmt::format("missing: {}", what));
    return std::nullopt;
  }
  return r_.string_value(*node, field_name(field, key));
}

}  // namespace cycle_config_detail

const CycleStageConfig* CycleConfig::stage(const std::string& stage_name) const {
  for (const CycleStageConfig& s : stages)
    if (s.name == stage_name) return &s;
  return nullptr;
}

Expected<CycleConfig> load_cycle_config(const fs::path& file) {
  auto text = read_file_text(file);
  // read_file_text's message names the file already ("cycle.yaml: cannot open: ...").
  if (!text)
    return fail(text.error().code == ErrorCode::NotFound ? ErrorCode::NotFound : ErrorCode::InvalidInput,
                text.error().message);
  CycleConfig c;
  c.file = cycle_config_detail::normal_path(fs::absolute(file));
  c.name = file.stem().string();
  TableReader r(file.string());
  const DocNode root = r.parse(*text);
  if (r.ok() && r.expect_map(root, "(file)", "cycle settings")) {
    cycle_config_detail::CycleFileReader(r, c).read(root);
    // The schema is the file's published contract: what the reader let through
    // must satisfy it too. The reader leaves one thing to it: a state's
    // spelling (one word), which the lifecycle itself does not ask for.
    if (r.ok()) {
      const auto& schema = cycle_config_detail::cycle_config_schema();
      if (!schema) return fail(ErrorCode::Internal, schema.error().message);
      r.check_schema(root, *schema, "schemas/cycle.schema.json");
    }
  }
  if (!r.ok()) return fail(ErrorCode::InvalidInput, join(r.problems(), "\n"));
  return c;
}

std::string cycle_init_text() {
  return std::string(cycle_init_yaml_text());
}

}  // namespace orch::flows
