#include "flows/review_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "exec/llm_models.h"
#include "exec/worker_config.h"
#include "flows/embedded_files.h"
#include "flows/review_finding.h"
#include "orch/workspace.h"
#include "route/table_reader.h"
#include "util/json_schema.h"
#include "util/read_file.h"
#include "util/strings.h"

namespace orch::flows {

namespace fs = std::filesystem;
using json = nlohmann::json;
using route::DocNode;
using route::TableReader;

namespace review_config_detail {

const std::vector<std::string> kTopKeys = {
    "name",    "artifacts",  "lenses",     "reviewers",        "judge",        "verifier",      "fixer",
    "verify",  "max_rounds", "dry_rounds", "spend_cap_tokens", "max_parallel", "fresh_context", "rubric",
    "workers", "models",     "fields"};

// `worker: NAME` or `model: NAME`, exactly one; "off" (when `may_be_off`) is nullopt.
std::optional<RoleConfig> read_role(TableReader& r, const DocNode& map, const std::string& field,
                                    bool* present) {
  const DocNode* node = TableReader::find(map, field);
  *present = node && !node->is_null();
  if (!*present) return std::nullopt;
  if (node->is_scalar() && node->scalar == "off") return std::nullopt;
  if (!node->is_map()) {
    r.problem(node->line, field, "must be 'off' or a mapping with 'worker: NAME' or 'model: NAME'");
    return std::nullopt;
  }
  r.only_keys(*node, field, {"worker", "model"});
  auto worker = r.string(*node, field, "worker", false);
  auto model = r.string(*node, field, "model", false);
  if (worker && model) {
    r.problem(node->line, field, "give 'worker' or 'model', not both");
    return std::nullopt;
  }
  if (!worker && !model) {
    r.problem(node->line, field, "needs 'worker: NAME' or 'model: NAME'");
    return std::nullopt;
  }
  return RoleConfig{worker ? "worker:" + *worker : "llm:" + *model, node->line};
}

const Expected<JsonSchema>& config_schema() {
  static const Expected<JsonSchema> schema = []() -> Expected<JsonSchema> {
    auto doc = json::parse(review_config_schema_text(), nullptr, false);
    if (doc.is_discarded()) return fail(ErrorCode::Internal, "the review config schema is not JSON");
    return JsonSchema::parse(doc);
  }();
  return schema;
}

// A lens prompt, split into text and "{{name}}" fields. `{{{{` is a literal `{{`
// (as the plan's `$${` is a literal `${`, docs/plan-format.md); any other `{{`
// opens a field, which ends at the next `}}`; a `{{` with no `}}` after it is text.
struct PromptPiece {
  std::string text;   // literal text (escapes already undone)
  std::string field;  // the name of a field, trimmed ("" for text)
  int line = 0;       // the field's line in the prompt (1-based)
  bool is_field = false;
};

std::vector<PromptPiece> prompt_pieces(const std::string& text) {
  std::vector<PromptPiece> out;
  std::string literal;
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    literal += text.substr(pos, open - pos);
    if (text.compare(open, 4, "{{{{") == 0) {
      literal += "{{";
      pos = open + 4;
      continue;
    }
    const std::size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) {
      pos = open;
      break;
    }
    if (!literal.empty()) out.push_back({std::move(literal), "", 0, false});
    literal.clear();
    const int line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(open), '\n'));
    out.push_back(
        {"", std::string(trim(std::string_view(text).substr(open + 2, close - open - 2))), line, true});
    pos = close + 2;
  }
  literal += text.substr(pos);
  if (!literal.empty()) out.push_back({std::move(literal), "", 0, false});
  return out;
}

// The "{{name}}" fields of a prompt, in order of first appearance, with their lines.
std::vector<std::pair<std::string, int>> prompt_fields(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  for (const PromptPiece& p : prompt_pieces(text))
    if (p.is_field && std::none_of(out.begin(), out.end(), [&](const auto& f) { return f.first == p.field; }))
      out.emplace_back(p.field, p.line);
  return out;
}

std::string fill_fields(const std::string& text, const json& fields, const std::string& lens) {
  std::string out;
  for (const PromptPiece& p : prompt_pieces(text))
    out += !p.is_field ? p.text : p.field == "lens" ? lens : fields.value(p.field, std::string());
  return out;
}

// A file's read error without the path read_file_text puts first: the caller
// names the file as the user wrote it, once.
std::string read_error(const Error& error, const fs::path& path) {
  const std::string prefix = path.string() + ": ";
  return error.message.starts_with(prefix) ? error.message.substr(prefix.size()) : error.message;
}

json role_json(const std::optional<RoleConfig>& role) {
  return role ? json(role->executor) : json(nullptr);
}

std::optional<RoleConfig> role_from(const json& v) {
  if (!v.is_string()) return std::nullopt;
  return RoleConfig{v.get<std::string>(), 0};
}

// What one call may cost, in tokens: its prompt (bytes / 4) plus what it may write.
struct CallEstimate {
  std::int64_t tokens = 0;
  std::optional<double> usd;
};

}  // namespace review_config_detail

namespace rcd = review_config_detail;

int ReviewConfig::line_of(const std::string& key) const {
  for (const auto& [k, line] : key_lines)
    if (k == key) return line;
  return 0;
}

Expected<ReviewConfig> parse_review_config(const std::string& text, const std::string& file) {
  TableReader r(file);
  const DocNode root = r.parse(text);
  ReviewConfig c;
  c.file = file;
  c.name = fs::path(file).stem().string();
  if (r.ok() && r.expect_map(root, "(file)", "review settings")) {
    r.only_keys(root, "", rcd::kTopKeys);
    for (const auto& e : root.entries) c.key_lines.emplace_back(e.key.scalar, e.key.line);
    if (auto v = r.string(root, "", "name", false)) c.name = *v;
    if (const DocNode* a = TableReader::find(root, "artifacts"); a && !a->is_null()) {
      if (a->is_scalar())
        c.artifacts.push_back(a->scalar);
      else
        c.artifacts = r.string_list(*a, "artifacts");
      if (c.artifacts.empty()) r.problem(a->line, "artifacts", "list at least one file to review");
    } else {
      r.problem(root.line, "artifacts", "missing: the file(s) under review");
    }
    if (const DocNode* ls = TableReader::find(root, "lenses");
        ls && ls->is_sequence() && !ls->items.empty()) {
      std::set<std::string> names;
      for (std::size_t i = 0; i < ls->items.size(); ++i) {
        const DocNode& item = ls->items[i];
        const std::string field = route::field_name("lenses", i);
        if (!r.expect_map(item, field, "name, prompt and worker or model")) continue;
        r.only_keys(item, field, {"name", "prompt", "worker", "model"});
        LensConfig lens;
        lens.line = item.line;
        lens.name = r.string(item, field, "name", true).value_or("");
        lens.prompt_file = r.string(item, field, "prompt", true).value_or("");
        if (!lens.name.empty() && !names.insert(lens.name).second)
          r.problem(item.line, route::field_name(field, "name"),
                    fmt::format("lens '{}' is named twice", lens.name));
        if (!lens.name.empty() && !is_identifier(lens.name))
          r.problem(item.line, route::field_name(field, "name"),
                    fmt::format("'{}' is not a name (letters, digits, '_' and '-')", lens.name));
        auto worker = r.string(item, field, "worker", false);
        auto model = r.string(item, field, "model", false);
        if (worker && model)
          r.problem(item.line, field, "give 'worker' or 'model', not both");
        else if (!worker && !model)
          r.problem(item.line, field, "needs 'worker: NAME' or 'model: NAME'");
        else
          lens.role = {worker ? "worker:" + *worker : "llm:" + *model, item.line};
        c.lenses.push_back(std::move(lens));
      }
    } else {
      r.problem(ls ? ls->line : root.line, "lenses",
                "missing: a list of lenses (name, prompt, worker or model)");
    }
    auto small = [](std::int64_t v) { return static_cast<int>(std::min<std::int64_t>(v, 1'000'000)); };
    if (auto v = r.integer(root, "", "reviewers", 1, false)) c.reviewers = small(*v);
    bool present = false;
    c.judge = rcd::read_role(r, root, "judge", &present);
    c.verifier = rcd::read_role(r, root, "verifier", &present);
    c.fixer = rcd::read_role(r, root, "fixer", &present);
    if (auto v = r.string(root, "", "verify", false)) c.verify = *v;
    if (auto v = r.integer(root, "", "max_rounds", 1, false)) c.max_rounds = small(*v);
    if (auto v = r.integer(root, "", "dry_rounds", 1, false)) c.dry_rounds = small(*v);
    if (auto v = r.integer(root, "", "spend_cap_tokens", 1, false)) c.spend_cap_tokens = *v;
    if (auto v = r.integer(root, "", "max_parallel", 1, false)) c.max_parallel = small(*v);
    if (auto v = r.boolean(root, "", "fresh_context")) c.fresh_context = *v;
    if (auto v = r.string(root, "", "rubric", false)) c.rubric_file = *v;
    if (auto v = r.string(root, "", "workers", false)) c.workers_file = *v;
    if (auto v = r.string(root, "", "models", false)) c.models_file = *v;
    if (const DocNode* f = TableReader::find(root, "fields"); f && !f->is_null()) {
      if (r.expect_map(*f, "fields", "names to values")) {
        for (const auto& e : f->entries) {
          if (!e.value.is_scalar()) {
            r.problem(e.value.line, route::field_name("fields", e.key.scalar), "must be a single value");
            continue;
          }
          c.fields[e.key.scalar] = e.value.scalar;
        }
      }
    }
    // Upper bounds: the runaway backstop is itself bounded.
    auto at_most = [&](const char* key, std::int64_t value, std::int64_t max) {
      if (value > max)
        r.problem(c.line_of(key), key, fmt::format("{} is more than the most allowed, {}", value, max));
    };
    at_most("reviewers", c.reviewers, kMaxReviewers);
    at_most("max_rounds", c.max_rounds, kMaxRounds);
    at_most("dry_rounds", c.dry_rounds, kMaxRounds);
    at_most("max_parallel", c.max_parallel, kMaxParallel);
    if (c.dry_rounds > c.max_rounds && r.ok())
      r.problem(
          c.line_of("dry_rounds"), "dry_rounds",
          fmt::format("{} dry rounds can never happen within max_rounds {}", c.dry_rounds, c.max_rounds));
    // Said plainly here, not as the schema's mismatch under /fixer.
    if (c.fixer && !c.fixer->executor.starts_with("worker:"))
      r.problem(c.fixer->line, "fixer",
                "a model cannot edit files: the fixer must be a worker ('fixer: {worker: NAME}'), or off");
    // The schema is the contract of the file: what the reader let through must
    // satisfy it too.
    if (r.ok()) {
      const auto& schema = rcd::config_schema();
      if (!schema) return fail(ErrorCode::Internal, schema.error().message);
      r.check_schema(root, *schema, "schemas/review-config.schema.json");
    }
  }
  if (!r.ok()) return fail(ErrorCode::InvalidInput, join(r.problems(), "\n"));
  return c;
}

Expected<ReviewConfig> load_review_config(const fs::path& file) {
  auto text = read_file_text(file);
  // read_file_text's message names the file already ("RUN.yaml: cannot open: ...").
  if (!text) return fail(ErrorCode::InvalidInput, text.error().message);
  return parse_review_config(*text, file.string());
}

Expected<ReviewConfig> resolve_review_config(ReviewConfig c, const fs::path& workspace,
                                             const std::string& workers_flag,
                                             const std::string& models_flag) {
  std::vector<std::pair<int, std::string>> problems;
  auto problem = [&](int line, const std::string& field, const std::string& message) {
    problems.emplace_back(line, line > 0 ? fmt::format("{}:{}: {}: {}", c.file, line, field, message)
                                         : fmt::format("{}: {}: {}", c.file, field, message));
  };
  const fs::path base = fs::absolute(c.file).parent_path();
  auto beside_config = [&](const std::string& path) {
    return fs::path(path).is_absolute() ? fs::path(path) : base / path;
  };

  // Artifacts: inside the workspace, readable.
  std::vector<std::string> artifacts;
  for (const auto& a : c.artifacts) {
    auto resolved = resolve_in_workspace(workspace, a);
    if (!resolved) {
      problem(c.line_of("artifacts"), "artifacts", resolved.error().message);
      continue;
    }
    if (!fs::is_regular_file(*resolved)) {
      problem(c.line_of("artifacts"), "artifacts",
              fmt::format("'{}': no such file in the workspace {}", a, workspace.string()));
      continue;
    }
    std::string rel = normalise_path(fs::relative(*resolved, workspace).generic_string());
    if (std::find(artifacts.begin(), artifacts.end(), rel) == artifacts.end())
      artifacts.push_back(std::move(rel));
  }
  c.artifacts = std::move(artifacts);

  // Lens prompts: readable, every {{field}} filled.
  for (std::size_t i = 0; i < c.lenses.size(); ++i) {
    LensConfig& lens = c.lenses[i];
    const std::string field = fmt::format("lenses[{}].prompt", i);
    const fs::path path = beside_config(lens.prompt_file);
    auto text = read_file_text(path);
    if (!text) {
      problem(lens.line, field,
              fmt::format("prompt file '{}': {}", lens.prompt_file, rcd::read_error(text.error(), path)));
      continue;
    }
    lens.prompt_file = path.string();
    for (const auto& [name, line] : rcd::prompt_fields(*text)) {
      if (name == "lens") continue;
      if (!c.fields.contains(name) || c.fields[name].get<std::string>().empty())
        problem(c.line_of("fields") ? c.line_of("fields") : lens.line, "fields." + name,
                fmt::format("unresolved: {}:{} needs {{{{{}}}}}; set it under 'fields'", path.string(), line,
                            name));
    }
    lens.prompt = rcd::fill_fields(*text, c.fields, lens.name);
  }
  if (c.judge && !c.verifier)
    problem(c.line_of("judge"), "verifier",
            "unresolved: a judge needs a claim verifier ('verifier: {worker: NAME}') to check the CRITICALs "
            "it adds");
  if (c.fixer && !c.fixer->executor.starts_with("worker:"))
    problem(c.fixer->line, "fixer",
            "a model cannot edit files: the fixer must be a worker ('fixer: {worker: NAME}'), or off");
  if (c.fixer && c.verify.empty())
    problem(c.line_of("fixer"), "verify",
            "unresolved: a fixer needs a verify command, run after every fix (or 'fixer: off')");

  // Workers and models: the files, then every name.
  auto pick = [&](const std::string& flag, const std::string& key, const char* fallback) -> std::string {
    if (!flag.empty()) return fs::absolute(flag).string();
    if (!key.empty()) return beside_config(key).string();
    const fs::path f = workspace / fallback;
    return fs::exists(f) ? f.string() : std::string();
  };
  c.workers_file = pick(workers_flag, c.workers_file, ".orch/workers.yaml");
  c.models_file = pick(models_flag, c.models_file, ".orch/models.yaml");
  std::optional<WorkerCatalog> workers;
  std::optional<LlmCatalog> models;
  if (!c.workers_file.empty()) {
    auto loaded = load_worker_catalog(c.workers_file);
    if (loaded)
      workers = std::move(*loaded);
    else
      problem(c.line_of("workers"), "workers", loaded.error().message);
  }
  if (!c.models_file.empty()) {
    auto loaded = load_llm_catalog(c.models_file);
    if (loaded)
      models = std::move(*loaded);
    else
      problem(c.line_of("models"), "models", loaded.error().message);
  }
  auto check_role = [&](const RoleConfig& role, const std::string& field) {
    const bool worker = role.executor.starts_with("worker:");
    const std::string kind = worker ? "worker" : "model";
    const std::string name = role.executor.substr(role.executor.find(':') + 1);
    const std::string& file = worker ? c.workers_file : c.models_file;
    const bool loaded = worker ? workers.has_value() : models.has_value();
    if (!loaded) {
      if (file.empty())
        problem(role.line, field,
                fmt::format("{} '{}': no {}s file (set '{}s:', pass --{}s, or create .orch/{}s.yaml)", kind,
                            name, kind, kind, kind, kind));
      return;  // a file that did not load is reported above
    }
    const bool found =
        worker ? workers->find(role.executor) != nullptr : models->model_for(role.executor) != nullptr;
    if (found) return;
    std::vector<std::string> names;
    if (worker)
      for (const auto& entry : workers->workers) names.push_back(entry.first);
    else
      for (const auto& entry : models->models) names.push_back(entry.first);
    problem(role.line, field, fmt::format("no {} '{}' in {}{}", kind, name, file, did_you_mean(name, names)));
  };
  for (std::size_t i = 0; i < c.lenses.size(); ++i)
    if (!c.lenses[i].role.executor.empty())
      check_role(c.lenses[i].role,
                 fmt::format("lenses[{}].{}", i,
                             c.lenses[i].role.executor.starts_with("worker:") ? "worker" : "model"));
  if (c.judge) check_role(*c.judge, "judge");
  if (c.verifier) check_role(*c.verifier, "verifier");
  if (c.fixer) check_role(*c.fixer, "fixer");

  // The rubric.
  if (c.rubric_file.empty()) {
    auto shipped = shipped_rubric();
    if (!shipped) return std::unexpected(shipped.error());
    c.rubric = *shipped;
  } else {
    const fs::path path = beside_config(c.rubric_file);
    auto text = read_file_text(path);
    if (!text) {
      problem(c.line_of("rubric"), "rubric",
              fmt::format("'{}': {}", c.rubric_file, rcd::read_error(text.error(), path)));
    } else if (auto rubric = parse_rubric(*text, path.string()); !rubric) {
      problem(c.line_of("rubric"), "rubric", rubric.error().message);
    } else {
      c.rubric = *rubric;
      c.rubric_file = path.string();
    }
  }

  if (!problems.empty()) {
    std::stable_sort(problems.begin(), problems.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> lines;
    for (auto& [_, m] : problems) lines.push_back(std::move(m));
    return fail(ErrorCode::InvalidInput, join(lines, "\n"));
  }
  return c;
}

json review_config_json(const ReviewConfig& c) {
  json lenses = json::array();
  for (const auto& l : c.lenses)
    lenses.push_back({{"name", l.name},
                      {"prompt_file", l.prompt_file},
                      {"prompt", l.prompt},
                      {"executor", l.role.executor}});
  json rubric = {{"file", c.rubric_file}, {"deductions", json::object()}, {"thresholds", json::array()}};
  for (Severity s : {Severity::Critical, Severity::Major, Severity::Minor, Severity::Nit})
    rubric["deductions"][severity_name(s)] = c.rubric.deductions[static_cast<std::size_t>(s)];
  for (const auto& [name, min] : c.rubric.thresholds)
    rubric["thresholds"].push_back({{"name", name}, {"min", min}});
  return {{"file", c.file},
          {"name", c.name},
          {"artifacts", c.artifacts},
          {"lenses", lenses},
          {"reviewers", c.reviewers},
          {"judge", rcd::role_json(c.judge)},
          {"verifier", rcd::role_json(c.verifier)},
          {"fixer", rcd::role_json(c.fixer)},
          {"verify", c.verify},
          {"max_rounds", c.max_rounds},
          {"dry_rounds", c.dry_rounds},
          {"spend_cap_tokens", c.spend_cap_tokens},
          {"max_parallel", c.max_parallel},
          {"fresh_context", c.fresh_context},
          {"rubric", rubric},
          {"workers_file", c.workers_file},
          {"models_file", c.models_file},
          {"fields", c.fields}};
}

Expected<ReviewConfig> review_config_from_json(const json& d) {
  try {
    ReviewConfig c;
    c.file = d.at("file").get<std::string>();
    c.name = d.at("name").get<std::string>();
    c.artifacts = d.at("artifacts").get<std::vector<std::string>>();
    for (const auto& l : d.at("lenses")) {
      LensConfig lens;
      lens.name = l.at("name").get<std::string>();
      lens.prompt_file = l.at("prompt_file").get<std::string>();
      lens.prompt = l.at("prompt").get<std::string>();
      lens.role.executor = l.at("executor").get<std::string>();
      c.lenses.push_back(std::move(lens));
    }
    c.reviewers = d.at("reviewers").get<int>();
    c.judge = rcd::role_from(d.at("judge"));
    c.verifier = rcd::role_from(d.at("verifier"));
    c.fixer = rcd::role_from(d.at("fixer"));
    c.verify = d.at("verify").get<std::string>();
    c.max_rounds = d.at("max_rounds").get<int>();
    c.dry_rounds = d.at("dry_rounds").get<int>();
    c.spend_cap_tokens = d.at("spend_cap_tokens").get<std::int64_t>();
    c.max_parallel = d.at("max_parallel").get<int>();
    c.fresh_context = d.at("fresh_context").get<bool>();
    const json& rubric = d.at("rubric");
    c.rubric_file = rubric.at("file").get<std::string>();
    for (Severity s : {Severity::Critical, Severity::Major, Severity::Minor, Severity::Nit})
      c.rubric.deductions[static_cast<std::size_t>(s)] =
          rubric.at("deductions").at(severity_name(s)).get<int>();
    for (const auto& t : rubric.at("thresholds"))
      c.rubric.thresholds.emplace_back(t.at("name").get<std::string>(), t.at("min").get<int>());
    c.workers_file = d.at("workers_file").get<std::string>();
    c.models_file = d.at("models_file").get<std::string>();
    c.fields = d.at("fields");
    return c;
  } catch (const json::exception& e) {
    return fail(ErrorCode::Store, fmt::format("the review's stored config is damaged: {}", e.what()));
  }
}

CostEstimate estimate_review_cost(const ReviewConfig& c, const fs::path& workspace) {
  CostEstimate est;
  std::int64_t artifact_bytes = 0;
  for (const auto& a : c.artifacts) {
    std::error_code ec;
    const auto size = fs::file_size(workspace / a, ec);
    if (!ec) artifact_bytes += static_cast<std::int64_t>(size);
  }
  std::optional<LlmCatalog> models;
  std::optional<WorkerCatalog> workers;
  if (!c.models_file.empty())
    if (auto m = load_llm_catalog(c.models_file)) models = std::move(*m);
  if (!c.workers_file.empty())
    if (auto w = load_worker_catalog(c.workers_file)) workers = std::move(*w);
  bool all_priced = true;
  double usd = 0;
  std::set<std::string> unpriced;
  // One call: the prompt and the artifacts in (bytes / 4), and what it may write:
  // a model's max_tokens, else 4000; at least a worker's reserve_tokens.
  auto call = [&](const std::string& executor, std::int64_t prompt_bytes) {
    std::int64_t in = (prompt_bytes + artifact_bytes + 3) / 4;
    std::int64_t out = 4000;
    if (executor.starts_with("llm:") && models) {
      if (const LlmModel* m = models->model_for(executor)) {
        out = m->max_tokens;
        if (m->price_in > 0 || m->price_out > 0) {
          usd += (static_cast<double>(in) * m->price_in + static_cast<double>(out) * m->price_out) / 1e6;
          est.tokens_per_round += in + out;
          return;
        }
      }
    } else if (workers) {
      if (const WorkerConfig* w = workers->find(executor); w && w->reserve_tokens) {
        est.tokens_per_round += std::max(in, *w->reserve_tokens);
        all_priced = false;
        unpriced.insert(executor);
        return;
      }
    }
    est.tokens_per_round += in + out;
    all_priced = false;
    unpriced.insert(executor);
  };
  for (const auto& lens : c.lenses)
    for (int k = 0; k < c.reviewers; ++k)
      call(lens.role.executor, static_cast<std::int64_t>(lens.prompt.size()) + 2000);
  if (c.judge) call(c.judge->executor, 4000);
  if (c.fixer) call(c.fixer->executor, 4000);
  est.tokens_total = est.tokens_per_round * c.max_rounds;
  if (all_priced) {
    est.usd_per_round = usd;
    est.usd_total = usd * c.max_rounds;
  }
  est.notes.push_back(
      "tokens: per call, (prompt + artifacts bytes) / 4 in, plus what it may write (a model's max_tokens, "
      "else 4000; at least a worker's reserve_tokens); the claim verifier only runs for CRITICALs a judge "
      "adds");
  if (!unpriced.empty()) {
    std::vector<std::string> names(unpriced.begin(), unpriced.end());
    est.notes.push_back(fmt::format(
        "not priced (workers report their own cost, or the model has no price): {}", join(names, ", ")));
  }
  // The spend cap counts what calls report: a worker that reports nothing counts 0.
  std::set<std::string> silent;
  if (workers) {
    auto check = [&](const std::string& executor) {
      if (const WorkerConfig* w = workers->find(executor);
          w && w->tokens_in_path.empty() && w->tokens_out_path.empty())
        silent.insert(executor);
    };
    for (const auto& lens : c.lenses) check(lens.role.executor);
    if (c.judge) check(c.judge->executor);
    if (c.fixer) check(c.fixer->executor);
  }
  if (!silent.empty()) {
    std::vector<std::string> names(silent.begin(), silent.end());
    est.notes.push_back(fmt::format(
        "WARNING: the spend cap cannot see what {} spend{}: no `usage` paths in the workers file, so "
        "their calls count 0 tokens unless they write $ORCH_USAGE_FILE (docs/workers.md)",
        join(names, ", "), names.size() == 1 ? "s" : ""));
  }
  if (est.tokens_total > c.spend_cap_tokens)
    est.notes.push_back(fmt::format(
        "the estimate for {} rounds (~{} tokens) is above the spend cap ({}): the review may stop at the "
        "cap and ask (exit 3; go on with --resume ID --spend-cap N)",
        c.max_rounds, est.tokens_total, c.spend_cap_tokens));
  return est;
}

std::string preflight_report(const ReviewConfig& c, const CostEstimate& cost, const fs::path& workspace) {
  std::string out = fmt::format("Pre-Flight Report: review '{}' ({})\n", c.name, c.file);
  out += fmt::format("  workspace      {}\n", workspace.string());
  std::vector<std::string> files;
  for (const auto& a : c.artifacts) {
    std::error_code ec;
    const auto size = fs::file_size(workspace / a, ec);
    files.push_back(fmt::format("{} ({} bytes)", a, ec ? 0 : size));
  }
  out += fmt::format("  artifacts      {}\n", join(files, ", "));
  out += fmt::format("  lenses         {} x {} reviewer{}:\n", c.lenses.size(), c.reviewers,
                     c.reviewers == 1 ? "" : "s");
  for (const auto& l : c.lenses)
    out += fmt::format("    {:<14} {}  (prompt {})\n", l.name, l.role.executor, l.prompt_file);
  out += fmt::format("  judge          {}\n", c.judge ? c.judge->executor : "off");
  out += fmt::format("  claim verifier {}\n", c.verifier ? c.verifier->executor : "none");
  out += fmt::format("  fixer          {}{}\n", c.fixer ? c.fixer->executor : "off",
                     c.verify.empty() ? "" : fmt::format("   verify after each fix: {}", c.verify));
  if (!c.fields.empty()) {
    std::vector<std::string> f;
    for (const auto& [k, v] : c.fields.items()) f.push_back(fmt::format("{}={}", k, v.get<std::string>()));
    out += fmt::format("  fields         {}\n", join(f, ", "));
  }
  out += "  each round, in a fresh context:\n";
  out += fmt::format(
      "    1. {} reviewer step{} in parallel (at most {} at once); invalid output gets one repair attempt\n",
      c.lenses.size() * static_cast<std::size_t>(c.reviewers),
      c.lenses.size() * static_cast<std::size_t>(c.reviewers) == 1 ? "" : "s", c.max_parallel);
  out +=
      "    2. reduce: de-duplicate by id, check quoted evidence, gate (CRITICAL: BLOCK, MAJOR: REVISE, else "
      "PASS)\n";
  if (c.judge)
    out +=
        "    3. judge; each CRITICAL it adds goes to the claim verifier, and is dropped when not grounded\n";
  if (c.fixer)
    out += fmt::format(
        "    {}. fix the mechanical findings (CRITICAL, MAJOR, MINOR), then `{}`; rolled back if it fails\n",
        c.judge ? 4 : 3, c.verify);
  out += fmt::format(
      "  stops          after {} dry rounds (no new CRITICAL or MAJOR), at most {} rounds; a finding "
      "the fixer was given that is still there two rounds later goes to you\n",
      c.dry_rounds, c.max_rounds);
  out += fmt::format("  estimated      ~{} tokens a round, at most ~{} for {} rounds (spend cap {})\n",
                     cost.tokens_per_round, cost.tokens_total, c.max_rounds, c.spend_cap_tokens);
  if (cost.usd_total)
    out += fmt::format("  estimated cost ~{} a round, at most ~{}\n", dollars(*cost.usd_per_round),
                       dollars(*cost.usd_total));
  else
    out += "  estimated cost not known (see below)\n";
  for (const auto& n : cost.notes) out += "    " + n + "\n";
  return out;
}

}  // namespace orch::flows
