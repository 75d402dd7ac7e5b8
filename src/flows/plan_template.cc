#include "flows/plan_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "flows/embedded_files.h"
#include "flows/request_text.h"
#include "orch/placeholder.h"
#include "util/json_text.h"
#include "util/strings.h"
#include "util/yaml_json.h"

namespace orch::flows {

namespace {

constexpr int kPhrasePoints = 2;
constexpr int kKeywordPoints = 1;
constexpr std::string_view kSlotNames[] = {"request", "items"};

struct Slot {
  std::size_t begin = 0, end = 0;  // byte range of "{{ name }}"
  std::string name;
  int line = 1;
};

int line_of(std::string_view text, std::size_t offset) {
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

std::vector<Slot> find_slots(std::string_view text, const std::string& file,
                             std::vector<std::string>& problems) {
  std::vector<Slot> slots;
  for (std::size_t at = text.find("{{"); at != std::string_view::npos; at = text.find("{{", at + 2)) {
    std::size_t close = text.find("}}", at + 2);
    std::size_t newline = text.find('\n', at);
    if (close == std::string_view::npos || close > newline) {
      problems.push_back(
          fmt::format("{}:{}: '{{{{' has no closing '}}}}' on its line", file, line_of(text, at)));
      continue;
    }
    std::string name(trim(text.substr(at + 2, close - at - 2)));
    if (std::find(std::begin(kSlotNames), std::end(kSlotNames), name) == std::end(kSlotNames)) {
      std::vector<std::string> known(std::begin(kSlotNames), std::end(kSlotNames));
      problems.push_back(
          fmt::format("{}:{}: unknown slot '{{{{{}}}}}'{} (slots: {{{{request}}}}, {{{{items}}}})", file,
                      line_of(text, at), quote_for_message(name), did_you_mean(name, known)));
      continue;
    }
    slots.push_back({at, close + 2, name, line_of(text, at)});
    at = close;
  }
  return slots;
}

// The JSON-string body of `value` (without its quotes): also a valid body of a
// double-quoted YAML scalar.
std::string quoted_body(std::string_view value) {
  std::string quoted = json_text(nlohmann::json(std::string(value)));
  return quoted.substr(1, quoted.size() - 2);
}

std::string render_slots(std::string_view text, const std::vector<Slot>& slots,
                         const std::function<std::string(std::size_t)>& value_of) {
  std::string out;
  std::size_t from = 0;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    out.append(text.substr(from, slots[k].begin - from));
    out += quoted_body(escape_placeholders(value_of(k)));
    from = slots[k].end;
  }
  out.append(text.substr(from));
  return out;
}

bool some_string_contains(const nlohmann::json& j, std::string_view needle) {
  if (j.is_string()) return j.get_ref<const std::string&>().find(needle) != std::string::npos;
  if (j.is_structured())
    for (const auto& v : j)
      if (some_string_contains(v, needle)) return true;
  return false;
}

// Each slot must come out as text inside a string: render it alone with a value
// full of YAML syntax and look for that value, intact, among the strings.
void check_slots_are_quoted(std::string_view text, const std::vector<Slot>& slots, const std::string& file,
                            std::vector<std::string>& problems) {
  static const std::string kProbe = "orch\"slot'probe\\ #: {x} - [y]\nend";
  for (std::size_t k = 0; k < slots.size(); ++k) {
    std::string rendered = render_slots(text, slots, [&](std::size_t i) { return i == k ? kProbe : "x"; });
    auto doc = read_yaml_json(rendered);
    const bool intact = doc && some_string_contains(*doc, kProbe);
    if (!intact)
      problems.push_back(fmt::format(
          "{}:{}: the slot '{{{{{}}}}}' must be inside a double-quoted string (\"...{{{{{}}}}}...\")", file,
          slots[k].line, slots[k].name, slots[k].name));
  }
}

std::vector<std::string> word_list(const nlohmann::json& j, const std::string& where, const std::string& file,
                                   int line, std::vector<std::string>& problems) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (!j.is_array()) {
    problems.push_back(
        fmt::format("{}:{}: x-template.match.{}: expected a list of strings", file, line, where));
    return out;
  }
  for (const auto& item : j) {
    std::vector<std::string> words =
        item.is_string() ? request_words(item.get<std::string>()) : std::vector<std::string>{};
    if (words.empty()) {
      problems.push_back(
          fmt::format("{}:{}: x-template.match.{}: '{}' has no words", file, line, where,
                      quote_for_message(item.is_string() ? item.get<std::string>() : item.dump())));
    } else if (where == "keywords" && words.size() > 1) {
      problems.push_back(
          fmt::format("{}:{}: x-template.match.keywords: '{}' is several words (put it in phrases)", file,
                      line, quote_for_message(item.get<std::string>())));
    } else {
      out.push_back(join(words, " "));
    }
  }
  return out;
}

void check_keys(const nlohmann::json& j, const std::vector<std::string>& allowed, const std::string& where,
                const std::string& file, int line, std::vector<std::string>& problems) {
  for (const auto& [key, _] : j.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      problems.push_back(fmt::format("{}:{}: {}: unknown key '{}'{}", file, line, where,
                                     quote_for_message(key), did_you_mean(key, allowed)));
}

void read_header(const detail::DocNode& root, PlanTemplate& t, std::vector<std::string>& problems) {
  const std::string& file = t.file;
  auto entry = std::find_if(root.entries.begin(), root.entries.end(), [](const detail::DocEntry& e) {
    return e.key.is_scalar() && e.key.scalar == "x-template";
  });
  if (entry == root.entries.end()) {
    problems.push_back(
        fmt::format("{}:1: not a template: no 'x-template:' mapping (see docs/planner.md)", file));
    return;
  }
  const detail::DocNode& header = entry->value;
  if (auto twice = duplicate_key(header)) {
    problems.push_back(fmt::format("{}:{}: x-template: {}", file, twice->line, twice->message));
    return;
  }
  const int line = header.line;
  nlohmann::json j = yaml_to_json(header);
  if (!j.is_object()) {
    problems.push_back(fmt::format("{}:{}: x-template: expected a mapping", file, line));
    return;
  }
  check_keys(j, {"description", "match"}, "x-template", file, line, problems);
  if (j.contains("description")) {
    if (j["description"].is_string()) {
      t.description = j["description"].get<std::string>();
    } else {
      problems.push_back(fmt::format("{}:{}: x-template.description: expected a string", file, line));
    }
  }
  const nlohmann::json match = j.value("match", nlohmann::json());
  if (!match.is_object()) {
    problems.push_back(fmt::format(
        "{}:{}: x-template.match: expected a mapping with phrases, keywords, threshold", file, line));
    return;
  }
  check_keys(match, {"phrases", "keywords", "threshold"}, "x-template.match", file, line, problems);
  t.match.phrases = word_list(match.value("phrases", nlohmann::json()), "phrases", file, line, problems);
  t.match.keywords = word_list(match.value("keywords", nlohmann::json()), "keywords", file, line, problems);
  if (match.contains("threshold")) {
    if (match["threshold"].is_number_integer() && match["threshold"].get<std::int64_t>() >= 1 &&
        match["threshold"].get<std::int64_t>() <= 1000) {
      t.match.threshold = match["threshold"].get<int>();
    } else {
      problems.push_back(
          fmt::format("{}:{}: x-template.match.threshold: expected an integer from 1 to 1000", file, line));
    }
  }
  const int best = kPhrasePoints * static_cast<int>(t.match.phrases.size()) +
                   kKeywordPoints * static_cast<int>(t.match.keywords.size());
  if (best < t.match.threshold)
    problems.push_back(
        fmt::format("{}:{}: x-template.match: can never match: all its phrases and keywords score {}, "
                    "below the threshold {}",
                    file, line, best, t.match.threshold));
}

std::string items_text(const SlotValues& values) {
  if (values.items.empty()) return values.request;
  std::string out;
  for (const auto& item : values.items) out += (out.empty() ? "- " : "\n- ") + item;
  return out;
}

}  // namespace

std::string escape_placeholders(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$') {
      std::size_t n = 0;
      while (i + n < text.size() && text[i + n] == '$') ++n;
      // Before `{`, doubled: read back as n literal `$` and the `{`.
      out.append(i + n < text.size() && text[i + n] == '{' ? 2 * n : n, '$');
      i += n - 1;
      continue;
    }
    if (text[i] == '#' && i + 2 < text.size() && text[i + 1] == 'E' && text[i + 2] >= '0' &&
        text[i + 2] <= '9')
      out += '#';
    out += text[i];
  }
  return out;
}

Expected<PlanTemplate> parse_plan_template(std::string_view text, const std::string& file) {
  PlanTemplate t;
  t.file = file;
  t.name = std::filesystem::path(file).stem().string();
  t.text = std::string(text);
  std::vector<std::string> problems;
  std::vector<Slot> slots = find_slots(text, file, problems);
  auto root = detail::read_yaml_doc(render_slots(text, slots, [](std::size_t) { return std::string("x"); }));
  if (root)
    read_header(*root, t, problems);
  else
    problems.push_back(
        fmt::format("{}:{}: not valid YAML: {}", file, root.error().line, root.error().message));
  if (problems.empty()) check_slots_are_quoted(text, slots, file, problems);
  if (!problems.empty()) return fail(ErrorCode::InvalidInput, join(problems, "\n"));
  return t;
}

TemplateLibrary TemplateLibrary::shipped() {
  TemplateLibrary lib;
  for (const auto& f : shipped_templates()) {
    auto t = parse_plan_template(f.text, f.path);
    // The shipped templates are checked by the tests; a broken one is a build bug.
    if (t) lib.add(std::move(*t));
  }
  return lib;
}

Expected<TemplateLibrary> TemplateLibrary::load(const std::filesystem::path& user_dir) {
  TemplateLibrary lib = shipped();
  if (user_dir.empty()) return lib;
  std::error_code ec;
  if (!std::filesystem::is_directory(user_dir, ec)) return lib;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(user_dir, ec))
    if (entry.path().extension() == ".yaml" || entry.path().extension() == ".yml")
      files.push_back(entry.path());
  if (ec)
    return fail(ErrorCode::Io,
                fmt::format("{}: cannot list the templates folder: {}", user_dir.string(), ec.message()));
  std::sort(files.begin(), files.end());
  std::vector<std::string> problems;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      problems.push_back(fmt::format("{}: cannot read the template", path.string()));
      continue;
    }
    auto t = parse_plan_template(text.str(), path.string());
    if (t) {
      lib.add(std::move(*t));
    } else {
      problems.push_back(t.error().message);
    }
  }
  if (!problems.empty()) return fail(ErrorCode::InvalidInput, join(problems, "\n"));
  return lib;
}

void TemplateLibrary::add(PlanTemplate t) {
  for (auto& existing : templates_)
    if (existing.name == t.name) {
      existing = std::move(t);
      return;
    }
  templates_.push_back(std::move(t));
}

const PlanTemplate* TemplateLibrary::find(std::string_view name) const {
  for (const auto& t : templates_)
    if (t.name == name) return &t;
  return nullptr;
}

TemplateMatch score_template(const PlanTemplate& t, std::string_view request) {
  TemplateMatch m;
  m.plan_template = &t;
  const std::vector<std::string> words = request_words(request, true);
  for (const auto& phrase : t.match.phrases)
    if (contains_phrase(words, phrase)) {
      m.score += kPhrasePoints;
      m.matched.push_back(phrase);
    }
  for (const auto& keyword : t.match.keywords)
    if (std::find(words.begin(), words.end(), keyword) != words.end()) {
      m.score += kKeywordPoints;
      m.matched.push_back(keyword);
    }
  return m;
}

std::optional<TemplateMatch> TemplateLibrary::best_match(std::string_view request) const {
  std::optional<TemplateMatch> best;
  auto phrases_found = [](const TemplateMatch& m) {
    return std::count_if(m.matched.begin(), m.matched.end(), [&](const std::string& s) {
      return std::find(m.plan_template->match.phrases.begin(), m.plan_template->match.phrases.end(), s) !=
             m.plan_template->match.phrases.end();
    });
  };
  for (const auto& t : templates_) {
    TemplateMatch m = score_template(t, request);
    if (m.score < t.match.threshold) continue;
    if (!best || m.score > best->score ||
        (m.score == best->score && phrases_found(m) > phrases_found(*best)) ||
        (m.score == best->score && phrases_found(m) == phrases_found(*best) &&
         t.name < best->plan_template->name))
      best = std::move(m);
  }
  return best;
}

std::string render_template(const PlanTemplate& t, const SlotValues& values) {
  std::vector<std::string> ignored;
  std::vector<Slot> slots = find_slots(t.text, t.file, ignored);
  return render_slots(t.text, slots, [&](std::size_t k) {
    return slots[k].name == "request" ? values.request : items_text(values);
  });
}

}  // namespace orch::flows
