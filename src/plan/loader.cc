// Reading plans: the orch format (a mapping with `steps:`) and, via stepspec.cc,
// the seed's StepSpec list. YAML goes through yaml_reader (libyaml), JSON through
// the faster json_reader; both become a DocNode tree with line numbers
// (doc_node.h), and both stream the step list: steps are read as it is parsed.
//
// The loader checks shape only: keys, types, durations, sizes, postcondition
// kinds: what cannot be represented in a Plan. Everything a Plan can hold but
// should not (attempts 0, a dep on a missing step, a path outside the workspace)
// is validate_plan's to report, so a plan built in code gets the same checks.
//
// Step::field_lines gets one entry per key ("timeout", "budget.tokens") plus one
// per item of a list or map that is not on its key's line ("run.2", "deps.0",
// "inputs.NAME", "env.NAME", "writes.1"), so validation can point at the exact
// line. (Items on the key's line get none: 100,000-step plans add up.)
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "orch/plan_loader.h"
#include "plan/fields.h"
#include "plan/json_reader.h"
#include "plan/post_loader.h"
#include "plan/stepspec.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch {

namespace {

using detail::DocNode;
using detail::Field;
using detail::ReadContext;

const std::vector<std::string> kPlanKeys{"name", "concurrency", "on_failure", "budget", "defaults", "steps"};
const std::vector<std::string> kStepKeys{"id",          "goal",       "deps",    "executor", "run",
                                         "sh",          "inputs",     "env",     "timeout",  "attempts",
                                         "retry_delay", "max_output", "budget",  "post",     "writes",
                                         "output",      "risk",       "runs-on", "when"};
const std::vector<std::string> kBudgetKeys{"tokens", "cost_usd", "wall", "attempts"};
const std::vector<std::string> kDefaultsKeys{"attempts", "timeout", "retry_delay", "max_output",
                                             "kill_grace"};

bool expect_map(const ReadContext& ctx, const Field& f, const std::string& name) {
  if (f.value.is_map()) return true;
  ctx.error(f.line, fmt::format("'{}' must be a mapping, got {}", name, detail::describe(f.value)));
  return false;
}

// A plan's or step's budget; each key's line goes into `locs` as "budget.tokens" etc.
void read_budget(const ReadContext& ctx, const Field& f, BudgetLimits& budget, FieldLines& locs) {
  if (!expect_map(ctx, f, "budget")) return;
  detail::for_each_field(ctx, f.value, kBudgetKeys, [&](const Field& b) {
    std::string name = "budget." + b.key;
    locs.set(name, b.line);
    if (b.key == "tokens") budget.tokens = detail::read_int(ctx, b, name);
    if (b.key == "cost_usd") budget.cost_usd = detail::read_number(ctx, b, name);
    if (b.key == "wall") budget.wall = detail::read_duration(ctx, b, name);
    if (b.key == "attempts") budget.attempts = detail::read_small_int(ctx, b, name);
  });
}

void read_defaults(const ReadContext& ctx, const Field& f, Plan& plan) {
  if (!expect_map(ctx, f, "defaults")) return;
  PlanDefaults& d = plan.defaults;
  detail::for_each_field(ctx, f.value, kDefaultsKeys, [&](const Field& k) {
    std::string name = "defaults." + k.key;
    plan.field_lines.set(name, k.line);
    if (k.key == "attempts") d.attempts = detail::read_small_int(ctx, k, name).value_or(d.attempts);
    if (k.key == "timeout") d.timeout = detail::read_duration(ctx, k, name);
    if (k.key == "retry_delay") d.retry_delay = detail::read_duration(ctx, k, name).value_or(d.retry_delay);
    if (k.key == "max_output") d.max_output = detail::read_size(ctx, k, name).value_or(d.max_output);
    if (k.key == "kill_grace") d.kill_grace = detail::read_duration(ctx, k, name).value_or(d.kill_grace);
  });
}

// A list field whose items get their own locs ("run.0", "run.1", ...).
std::vector<std::string> read_list_with_locs(const ReadContext& ctx, const Field& f, const std::string& name,
                                             bool allow_single, Step& step) {
  std::vector<int> lines;
  auto items = detail::read_string_list(ctx, f, name, allow_single, &lines);
  if (!items) return {};
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i] != f.line) step.field_lines.set(fmt::format("{}.{}", name, i), lines[i]);
  return *items;
}

int item_line(const Step& step, const std::string& key, int fallback) {
  return step.field_lines.contains(key) ? step.field_lines.line(key) : fallback;
}

void read_inputs(const ReadContext& ctx, const Field& f, Step& step) {
  if (!expect_map(ctx, f, "inputs")) return;
  for (const auto& [key_node, value] : f.value.entries) {
    int line = key_node.line;
    if (!key_node.is_scalar()) {
      ctx.error(line, fmt::format("input names must be plain names, got {}", detail::describe(key_node)));
      continue;
    }
    const std::string& name = key_node.scalar;
    if (step.inputs.contains(name)) {
      ctx.error(line, fmt::format("duplicate input '{}' (first at line {})", name,
                                  item_line(step, "inputs." + name, f.line)));
      continue;
    }
    detail::check_data_value(ctx, value);
    step.inputs[name] = yaml_to_ordered_json(value);
    if (line != f.line) step.field_lines.set("inputs." + name, line);
  }
}

void read_env(const ReadContext& ctx, const Field& f, Step& step) {
  if (!expect_map(ctx, f, "env")) return;
  for (const auto& [key_node, value] : f.value.entries) {
    int line = key_node.line;
    if (!key_node.is_scalar()) {
      ctx.error(line, fmt::format("environment variable names must be plain names, got {}",
                                  detail::describe(key_node)));
      continue;
    }
    const std::string& name = key_node.scalar;
    if (step.env.contains(name)) {
      ctx.error(line, fmt::format("duplicate environment variable '{}' (first at line {})", name,
                                  item_line(step, "env." + name, f.line)));
      continue;
    }
    if (!value.is_scalar()) {
      ctx.error(line, fmt::format("environment variable '{}' must be a string, got {}", name,
                                  detail::describe(value)));
      continue;
    }
    step.env[name] = value.scalar;
    if (line != f.line) step.field_lines.set("env." + name, line);
  }
}

void read_step_field(const ReadContext& ctx, const Field& f, Step& step) {
  using namespace detail;
  step.field_lines.set(f.key, f.line);
  const std::string& k = f.key;
  if (k == "id")
    step.id = read_string(ctx, f, k).value_or("");
  else if (k == "goal")
    step.goal = read_string(ctx, f, k).value_or("");
  else if (k == "deps")
    step.deps = read_list_with_locs(ctx, f, k, /*allow_single=*/true, step);
  else if (k == "executor")
    step.executor = read_string(ctx, f, k).value_or(step.executor);
  else if (k == "run") {
    if (f.value.is_scalar()) {
      ctx.error(f.line,
                "'run' must be a list of arguments, e.g. [make, test] (use 'sh' for a shell command line)");
      step.command_unread = true;
    } else {
      std::vector<int> lines;
      if (auto items = detail::read_string_list(ctx, f, k, /*allow_single=*/false, &lines)) {
        for (std::size_t i = 0; i < lines.size(); ++i)
          if (lines[i] != f.line) step.field_lines.set(fmt::format("run.{}", i), lines[i]);
        step.run = std::move(*items);
      } else {
        step.command_unread = true;
      }
    }
  } else if (k == "sh") {
    step.sh = read_string(ctx, f, k);
    if (!step.sh) step.command_unread = true;
  } else if (k == "inputs")
    read_inputs(ctx, f, step);
  else if (k == "env")
    read_env(ctx, f, step);
  else if (k == "timeout")
    step.timeout = read_duration(ctx, f, k);
  else if (k == "attempts")
    step.attempts = read_small_int(ctx, f, k);
  else if (k == "retry_delay")
    step.retry_delay = read_duration(ctx, f, k);
  else if (k == "max_output")
    step.max_output = read_size(ctx, f, k);
  else if (k == "budget")
    read_budget(ctx, f, step.budget, step.field_lines);
  else if (k == "post")
    step.post = read_postconditions(ctx, f);
  else if (k == "writes")
    step.writes = read_list_with_locs(ctx, f, k, /*allow_single=*/true, step);
  else if (k == "runs-on")
    step.runs_on = read_list_with_locs(ctx, f, k, /*allow_single=*/true, step);
  else if (k == "output")
    step.output = read_string(ctx, f, k);
  else if (k == "when")
    step.when = read_string(ctx, f, k);
  else if (k == "risk") {
    auto v = read_string(ctx, f, k);
    if (!v) return;
    step.risk = parse_risk_level(*v);
    if (!step.risk)
      ctx.error(f.line,
                fmt::format("'risk' must be low, medium, high or critical, got '{}'{}", quote_for_message(*v),
                            did_you_mean(*v, {"low", "medium", "high", "critical"})));
  }
}

// Fills `step` (a fresh Step already in place in Plan::steps: a Step is large, moving it costs).
void read_step(ReadContext& ctx, const DocNode& node, int fallback_line, Step& step) {
  int line = node.line;
  step.loc = ctx.loc(line ? line : fallback_line);
  ctx.step_id.clear();
  if (!node.is_map()) {
    ctx.error(step.loc.line,
              fmt::format("each step must be a mapping with an 'id', got {}", detail::describe(node)));
    return;
  }
  // The id first, so every diagnostic of this step can name it.
  for (const auto& [key_node, value] : node.entries)
    if (key_node.is_scalar() && key_node.scalar == "id" && value.is_scalar()) {
      ctx.step_id = value.scalar;
      break;
    }
  detail::for_each_field(ctx, node, kStepKeys, [&](const Field& f) { read_step_field(ctx, f, step); });
  ctx.step_id.clear();
}

Step& add_step(Plan& plan) {
  Step& step = plan.steps.emplace_back();
  step.index = static_cast<int>(plan.steps.size()) - 1;
  return step;
}

// Steps are read one by one and their document nodes freed as they go, so a
// 100,000-step plan does not hold its whole document and its Plan at once.
void read_steps(ReadContext& ctx, DocNode& steps, int key_line, Plan& plan) {
  plan.steps.reserve(steps.items.size());
  for (DocNode& item : steps.items) {
    add_step(plan);
    read_step(ctx, item, key_line, plan.steps.back());
    item = DocNode{};
  }
}

void read_orch_plan(ReadContext& ctx, DocNode& root, Plan& plan) {
  const DocNode* steps = nullptr;
  int steps_line = 0;
  detail::for_each_field(ctx, root, kPlanKeys, [&](const Field& f) {
    plan.field_lines.set(f.key, f.line);
    if (f.key == "name") {
      plan.name = detail::read_string(ctx, f, "name").value_or("");
    } else if (f.key == "concurrency") {
      plan.concurrency = detail::read_small_int(ctx, f, "concurrency");
    } else if (f.key == "on_failure") {
      auto v = detail::read_string(ctx, f, "on_failure");
      if (v == "abort")
        plan.on_failure = OnFailure::Abort;
      else if (v == "continue")
        plan.on_failure = OnFailure::Continue;
      else if (v)
        ctx.error(f.line, fmt::format("'on_failure' must be 'abort' or 'continue', got '{}'{}",
                                      quote_for_message(*v), did_you_mean(*v, {"abort", "continue"})));
    } else if (f.key == "budget") {
      read_budget(ctx, f, plan.budget, plan.field_lines);
    } else if (f.key == "defaults") {
      read_defaults(ctx, f, plan);
    } else if (f.key == "steps") {
      if (f.value.is_null()) return;  // an empty plan: validate_plan says so
      if (!f.value.is_sequence()) {
        ctx.error(f.line, fmt::format("'steps' must be a list of steps, got {}", detail::describe(f.value)));
        ctx.no_step_list = true;
        return;
      }
      steps = &f.value;
      steps_line = f.line;
    }
  });
  // for_each_field hands out const nodes; find the (non-const) one it chose.
  // A streamed list's steps were read while the JSON was parsed.
  for (auto& [key, value] : root.entries)
    if (&value == steps && !value.streamed) read_steps(ctx, value, steps_line, plan);
}

void read_root(ReadContext& ctx, DocNode& root, Plan& plan) {
  if (root.is_map()) {
    read_orch_plan(ctx, root, plan);
  } else if (root.is_sequence()) {
    detail::read_stepspec_plan(ctx, root, plan);
  } else if (!root.is_null()) {
    ctx.no_step_list = true;
    ctx.error(root.line ? root.line : 1,
              fmt::format("a plan must be a mapping with 'steps:' (or a StepSpec JSON list), "
                          "got {}",
                          detail::describe(root)));
  }
}

// How many times `c` occurs in the text: memchr from one to the next, a fraction
// of std::count's time on a 3 MB plan (docs/benchmarks.md, session 44).
std::size_t count_of(std::string_view text, char c) {
  std::size_t n = 0;
  const char* end = text.data() + text.size();
  for (const char* p = text.data(); p < end; ++n, ++p) {
    p = static_cast<const char*>(std::memchr(p, c, static_cast<std::size_t>(end - p)));
    if (p == nullptr) break;
  }
  return n;
}

// The sink that reads each step of a streamed step list as the reader parses it.
detail::ItemSink step_reader(ReadContext& ctx, Plan& plan) {
  return [&ctx, &plan](detail::StreamedList list, DocNode& item) {
    Step& step = add_step(plan);
    if (list == detail::StreamedList::TopLevel)
      detail::read_stepspec_step(ctx, item, step);
    else
      read_step(ctx, item, 0, step);
  };
}

// Forgets what was read of a document that turned out to be broken (streamed
// steps and what they reported); keeps the file name.
void start_over(LoadResult& result) {
  std::string file = std::move(result.plan.source_path);
  result = LoadResult{};
  result.plan.source_path = std::move(file);
}

// The JSON fast path. False when the text is not JSON (the plan and diagnostics
// are then left empty).
bool read_json_plan(ReadContext& ctx, std::string_view body, LoadResult& result) {
  Plan& plan = result.plan;
  // Reserve for the most steps there can be (no more than objects in the text):
  // growing a vector of 100,000 Steps moves each one twice. Untouched capacity
  // costs address space, not memory.
  plan.steps.reserve(count_of(body, '{'));
  auto doc = detail::read_json_doc(body, step_reader(ctx, plan));
  if (!doc) {
    start_over(result);
    if (!plan.source_path.ends_with(".json")) return false;
    result.diagnostics.push_back(Diagnostic{plan.source_path, doc.error().line, "",
                                            fmt::format("JSON syntax error: {}", doc.error().message)});
    return true;
  }
  result.checkable = true;
  read_root(ctx, *doc, plan);
  return true;
}

void read_yaml_plan(ReadContext& ctx, std::string_view body, LoadResult& result) {
  Plan& plan = result.plan;
  // As for JSON: no more steps than block items ('-') and flow items (',' + 1),
  // nor (to keep a text full of dashes from reserving gigabytes) than one per 8 bytes.
  std::size_t most = count_of(body, '-') + count_of(body, ',') + 1;
  plan.steps.reserve(std::min(most, body.size() / 8 + 1));
  std::vector<detail::YamlSyntaxError> problems;
  auto doc = detail::read_yaml_doc(body, step_reader(ctx, plan), detail::YamlDocuments::OnlyOne, &problems);
  if (!doc) {
    start_over(result);
    result.diagnostics.push_back(Diagnostic{plan.source_path, doc.error().line, "",
                                            fmt::format("YAML syntax error: {}", doc.error().message)});
    return;
  }
  // Misused merge keys: reported with the rest of the plan's mistakes.
  for (auto& p : problems)
    result.diagnostics.push_back(Diagnostic{plan.source_path, p.line, "", std::move(p.message)});
  result.checkable = true;
  read_root(ctx, *doc, plan);
}

}  // namespace

// JSON-looking text (first character '{' or '[') is read by the fast JSON reader;
// if that fails and the file is not named *.json it may still be YAML flow style
// ("[{goal: x}]"), so the YAML reader gets a turn and reports its own error.
LoadResult parse_plan(std::string_view text, const std::string& file) {
  LoadResult result;
  result.plan.source_path = file;
  ReadContext ctx{file, &result.diagnostics, ""};
  try {
    std::string_view body = text;
    if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 byte order mark
    std::size_t first = body.find_first_not_of(" \t\r\n");
    bool json_like = first != std::string_view::npos && (body[first] == '{' || body[first] == '[');
    if (!json_like || !read_json_plan(ctx, body, result)) read_yaml_plan(ctx, body, result);
  } catch (const std::exception& e) {
    // Nothing below throws by design; this keeps a library surprise (bad_alloc,
    // say) from escaping as an exception.
    result.diagnostics.push_back(Diagnostic{file, 0, "", fmt::format("cannot read the plan: {}", e.what())});
    result.checkable = false;
  }
  // A list of orch steps that forgot `steps:` was said to be one; checked further
  // as StepSpecs, every step would add "a shell step needs its command" to it.
  if (ctx.said_orch_steps_in_a_list) result.plan.steps.clear();
  if (ctx.said_orch_steps_in_a_list || ctx.no_step_list) result.checkable = false;
  // Streamed steps report before the plan-level keys around them: put them in file order.
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  return result;
}

std::string plan_display_name(const std::string& path) {
  return path == kStdinPlan ? "<stdin>" : path;
}

Expected<std::string> read_plan_file(const std::string& file) {
  const bool from_stdin = file == kStdinPlan;
  if (file.empty())
    return fail(ErrorCode::InvalidInput,
                "the plan's path is empty: give the plan file (- for standard input)");
  const std::string path = plan_display_name(file);  // as messages name it
  // O_NONBLOCK: opening a FIFO with no writer must not block (reading one then
  // finds the end at once). Reads block again below: `orch validate <(gen)` waits
  // for its writer. Standard input is read as it is (a copy of its descriptor,
  // closed after).
  int fd = from_stdin ? ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
                      : ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    // A socket cannot be opened at all (ENXIO): say what it is.
    if (struct stat st{}; err == ENXIO && ::stat(file.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
      return fail(ErrorCode::InvalidInput, fmt::format("{}: is a socket, not a plan file", path));
    return fail(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                fmt::format("{}: cannot read the plan file: {}", path, std::strerror(err)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0)
    return fail(ErrorCode::Io, fmt::format("{}: cannot read the plan file: {}", path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return fail(ErrorCode::InvalidInput, fmt::format("{}: is a folder, not a plan file", path));
  if (S_ISSOCK(st.st_mode))
    return fail(ErrorCode::InvalidInput, fmt::format("{}: is a socket, not a plan file", path));
  if (S_ISREG(st.st_mode) && st.st_size > kMaxPlanFileBytes)
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}: is over {} MiB; a plan file may be at most that", path, kMaxPlanFileBytes / (1024 * 1024)));
  if (int flags = ::fcntl(fd, F_GETFL); !from_stdin && flags >= 0)
    (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ErrorCode::Io, fmt::format("{}: cannot read the plan file: {}", path, std::strerror(errno)));
    }
    text.append(buf, static_cast<std::size_t>(n));
    // A stream that does not end (/dev/zero), or a file that grows while it is
    // read, is held to the same limit.
    if (static_cast<std::int64_t>(text.size()) > kMaxPlanFileBytes)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{}: is over {} MiB; a plan file may be at most that", path, kMaxPlanFileBytes / (1024 * 1024)));
  }
  // Nothing from a named pipe: it had no writer when it was opened (the open does
  // not wait for one), or its writer wrote nothing. Either way there is no plan,
  // and "plan has no steps" would not say why.
  if (text.empty() && !from_stdin && S_ISFIFO(st.st_mode))
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("{}: is a named pipe that gave nothing (no writer had it open, or its writer wrote "
                    "nothing); start the writer first",
                    path));
  return text;
}

LoadResult parse_plan_from(std::string_view text, const std::string& path) {
  LoadResult loaded = parse_plan(text, plan_display_name(path));
  if (path == kStdinPlan) loaded.plan.source_path.clear();
  return loaded;
}

Expected<LoadResult> load_plan_file(const std::string& path) {
  std::string text = ORCH_TRY(read_plan_file(path));
  return parse_plan_from(text, path);
}

}  // namespace orch
