#include "flows/trigger_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "flows/request_text.h"
#include "util/strings.h"

namespace orch::flows {

namespace {

using Kind = RequestToken::Kind;

// ---- the vocabulary --------------------------------------------------------
// Action verbs in their base form. Whole words only: "rewrite" is its own verb,
// never "write" inside another word.
const std::set<std::string, std::less<>>& action_verbs() {
  static const std::set<std::string, std::less<>> verbs = {
      "add",       "analyse",   "analyze",   "archive",   "audit",     "backup",    "benchmark", "bisect",
      "build",     "bump",      "change",    "check",     "clean",     "cleanup",   "close",     "collect",
      "combine",   "commit",    "compare",   "compile",   "configure", "convert",   "copy",      "count",
      "create",    "debug",     "delete",    "deploy",    "describe",  "design",    "diagnose",  "document",
      "download",  "draft",     "edit",      "email",     "evaluate",  "execute",   "explain",   "export",
      "extract",   "fetch",     "file",      "find",      "fix",       "format",    "generate",  "identify",
      "implement", "import",    "improve",   "inspect",   "install",   "investigate", "lint",    "list",
      "log",       "measure",   "merge",     "migrate",   "move",      "notify",    "open",      "optimise",
      "optimize",  "package",   "parse",     "patch",     "plan",      "port",      "post",      "prepare",
      "print",     "process",   "profile",   "publish",   "pull",      "push",      "read",      "rebuild",
      "record",    "refactor",  "release",   "remove",    "rename",    "report",    "reproduce", "rerun",
      "restart",   "restore",   "review",    "rewrite",   "run",       "scan",      "schedule",  "search",
      "send",      "set",       "setup",     "ship",      "show",      "simplify",  "sort",      "split",
      "start",     "stop",      "summarise", "summarize", "tag",       "test",      "translate", "update",
      "upgrade",   "upload",    "validate",  "verify",    "write",
  };
  return verbs;
}

// Verbs that are as often nouns ("the build and test results", "release notes").
// After a conjunction they count only when an object marker or the clause end follows.
const std::set<std::string, std::less<>>& noun_like_verbs() {
  static const std::set<std::string, std::less<>> words = {
      "backup", "benchmark", "build",   "bump",   "change", "check",   "cleanup", "commit",  "copy",
      "count",  "design",    "document", "draft", "edit",   "email",   "export",  "file",    "format",
      "import", "install",   "lint",    "list",   "log",    "merge",   "move",    "package", "patch",
      "plan",   "port",      "post",    "print",  "process", "profile", "record", "release", "report",
      "review", "run",       "scan",    "schedule", "search", "set",   "setup",   "show",    "sort",
      "split",  "start",     "stop",    "tag",    "test",   "upgrade", "audit",
  };
  return words;
}

// Verbs whose object a following "to ..." / "that ..." describes ("write a script
// to parse logs, extract errors and email them" asks for one script).
const std::set<std::string, std::less<>>& creation_verbs() {
  static const std::set<std::string, std::less<>> words = {
      "add", "build", "create", "design", "draft", "generate", "implement", "prepare", "rewrite", "setup", "write",
  };
  return words;
}

const std::map<std::string, std::string, std::less<>>& irregular_forms() {
  static const std::map<std::string, std::string, std::less<>> forms = {
      {"wrote", "write"},     {"written", "write"},     {"rewrote", "rewrite"}, {"rewritten", "rewrite"},
      {"ran", "run"},         {"reran", "rerun"},       {"built", "build"},     {"rebuilt", "rebuild"},
      {"found", "find"},      {"sent", "send"},         {"shown", "show"},
  };
  return forms;
}

const std::set<std::string, std::less<>>& conjunctions() {
  static const std::set<std::string, std::less<>> words = {"and", "or", "then", "plus", "afterwards",
                                                           "finally", "next", "lastly", "also"};
  return words;
}

// Words that may stand between a clause start and its verb ("please", "first").
const std::set<std::string, std::less<>>& lead_ins() {
  static const std::set<std::string, std::less<>> words = {"please", "first", "now", "just", "additionally",
                                                           "subsequently", "kindly"};
  return words;
}

// Words after a noun-like verb that show it is a verb: "test the parser", "build it".
const std::set<std::string, std::less<>>& object_markers() {
  static const std::set<std::string, std::less<>> words = {
      "the", "a",   "an",   "this",  "that", "these", "those", "it",   "them", "all", "my",   "our", "your",
      "its", "their", "each", "every", "any", "some", "everything", "both", "his", "her", "me", "us", "up", "out",
  };
  return words;
}

// Job phrases, as whole words. A phrase ending in ":" needs a colon right after it.
constexpr std::array<std::string_view, 8> kJobPhrases = {
    "do all of the following", "all of the following", "each of the following", "the following steps",
    "the following tasks",     "following workflow",   "for each",              "workflow:",
};

// ---- verbs -----------------------------------------------------------------

std::string known_base(std::string_view candidate) {
  auto it = action_verbs().find(candidate);
  return it == action_verbs().end() ? std::string() : *it;
}

bool doubled_consonant(std::string_view stem) {
  if (stem.size() < 2) return false;
  const char a = stem[stem.size() - 1], b = stem[stem.size() - 2];
  return a == b && std::string_view("aeiou").find(a) == std::string_view::npos;
}

std::string base_of_suffixed(std::string_view word, std::string_view suffix) {
  if (word.size() <= suffix.size() + 1 || !word.ends_with(suffix)) return "";
  std::string stem(word.substr(0, word.size() - suffix.size()));
  if (auto b = known_base(stem); !b.empty()) return b;
  if (auto b = known_base(stem + "e"); !b.empty()) return b;
  if (doubled_consonant(stem))
    if (auto b = known_base(std::string_view(stem).substr(0, stem.size() - 1)); !b.empty()) return b;
  if (suffix == "ed" && stem.ends_with('i'))  // copied -> copy
    if (auto b = known_base(stem.substr(0, stem.size() - 1) + "y"); !b.empty()) return b;
  return "";
}

// Also the third-person form, for "that builds, tests and deploys": only used to
// see that a description starts, never to count a verb.
bool any_verb_form(std::string_view word) {
  if (!action_verb_base(word).empty()) return true;
  if (word.ends_with("es") && !known_base(word.substr(0, word.size() - 2)).empty()) return true;
  return word.ends_with('s') && !known_base(word.substr(0, word.size() - 1)).empty();
}

// ---- signal 1: checklists --------------------------------------------------

struct ListLine {
  int number = 0;  // 0 for a bullet
  std::string text;
};

std::string clean_item(std::string_view text) {
  std::string s(trim(text));
  for (std::string_view box : {"[ ] ", "[x] ", "[X] "})
    if (s.starts_with(box)) s = std::string(trim(std::string_view(s).substr(box.size())));
  while (!s.empty() && (s.back() == ',' || s.back() == ';')) s.pop_back();
  for (std::string_view tail : {" and", " then", " or"})
    if (s.ends_with(tail)) s = std::string(trim(std::string_view(s).substr(0, s.size() - tail.size())));
  while (!s.empty() && (s.back() == ',' || s.back() == ';')) s.pop_back();
  return s;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::optional<ListLine> list_marker(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  std::string_view rest = line.substr(i);
  auto item_after = [&](std::size_t marker_len) -> std::optional<std::string> {
    if (marker_len >= rest.size() || !is_blank(rest[marker_len])) return std::nullopt;
    std::string item = clean_item(rest.substr(marker_len));
    if (item.empty()) return std::nullopt;
    return item;
  };
  for (std::string_view bullet : {"-", "*", "+", "\xE2\x80\xA2"})
    if (rest.starts_with(bullet))
      if (auto item = item_after(bullet.size())) return ListLine{0, *item};
  const bool paren = rest.starts_with('(');
  std::size_t d = paren ? 1 : 0, digits = d;
  while (digits < rest.size() && digits - d < 3 && std::isdigit(static_cast<unsigned char>(rest[digits])) != 0)
    ++digits;
  if (digits == d || digits >= rest.size()) return std::nullopt;
  const char close = rest[digits];
  if (!(close == ')' || (!paren && close == '.'))) return std::nullopt;
  auto item = item_after(digits + 1);
  if (!item) return std::nullopt;
  return ListLine{std::stoi(std::string(rest.substr(d, digits - d))), *item};
}

// The longest run of lines numbered 1, 2, 3, ... in order.
std::vector<std::string> numbered_run(const std::vector<ListLine>& lines) {
  std::vector<std::string> best, current;
  for (const auto& l : lines) {
    if (l.number == 0) continue;
    if (l.number == 1) {
      current = {l.text};
    } else if (!current.empty() && l.number == static_cast<int>(current.size()) + 1) {
      current.push_back(l.text);
    } else {
      current.clear();
    }
    if (current.size() > best.size()) best = current;
  }
  return best;
}

// "(1) a (2) b" or "1) a 2) b" within a line: markers numbered 1, 2, ... after a
// space, ':' or the start, each followed by a space.
std::vector<std::string> inline_items(std::string_view text) {
  auto find_marker = [&](int number, std::size_t from, std::size_t& marker_end) -> std::size_t {
    const std::string bare = std::to_string(number) + ")";
    for (std::size_t pos = from; pos < text.size(); ++pos) {
      std::size_t len = 0;
      if (text.compare(pos, bare.size() + 1, "(" + bare) == 0) {
        len = bare.size() + 1;
      } else if (text.compare(pos, bare.size(), bare) == 0) {
        len = bare.size();
      } else {
        continue;
      }
      const bool starts = pos == 0 || is_blank(text[pos - 1]) || text[pos - 1] == ':' || text[pos - 1] == '\n';
      const bool spaced = pos + len < text.size() && is_blank(text[pos + len]);
      if (starts && spaced) {
        marker_end = pos + len;
        return pos;
      }
    }
    return std::string_view::npos;
  };
  std::vector<std::string> items;
  std::size_t end = 0;
  std::size_t at = find_marker(1, 0, end);
  while (at != std::string_view::npos) {
    std::size_t next_end = 0;
    std::size_t next = find_marker(static_cast<int>(items.size()) + 2, end, next_end);
    std::string_view body = text.substr(end, next == std::string_view::npos ? std::string_view::npos : next - end);
    if (next == std::string_view::npos) body = body.substr(0, body.find('\n'));
    std::string item = clean_item(body);
    if (item.empty()) return {};
    items.push_back(std::move(item));
    at = next;
    end = next_end;
  }
  return items.size() >= 2 ? items : std::vector<std::string>{};
}

std::vector<std::string> checklist_items(std::string_view request) {
  std::string text = without_fenced_code(request);
  std::vector<ListLine> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (auto l = list_marker(std::string_view(text).substr(start, end == std::string::npos ? std::string::npos
                                                                                          : end - start)))
      lines.push_back(std::move(*l));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (auto run = numbered_run(lines); run.size() >= 2) return run;
  std::vector<std::string> bullets;
  for (const auto& l : lines)
    if (l.number == 0) bullets.push_back(l.text);
  if (bullets.size() >= 2) return bullets;
  return inline_items(text);
}

// ---- signal 2: job phrases -------------------------------------------------

std::string job_phrase(const std::vector<RequestToken>& tokens) {
  for (std::string_view phrase : kJobPhrases) {
    const bool needs_colon = phrase.ends_with(':');
    std::vector<std::string> want = request_words(phrase);
    for (std::size_t i = 0; i + want.size() <= tokens.size(); ++i) {
      bool all = true;
      for (std::size_t k = 0; k < want.size() && all; ++k)
        all = tokens[i + k].kind == Kind::Word && tokens[i + k].text == want[k];
      if (!all) continue;
      const std::size_t after = i + want.size();
      if (needs_colon && (after >= tokens.size() || tokens[after].kind != Kind::Colon)) continue;
      return std::string(phrase);
    }
  }
  return "";
}

// ---- signal 3: compound verbs ----------------------------------------------

struct VerbCount {
  std::vector<std::string> verbs;  // distinct, in order
  bool joined_by_conjunction = false;
};

VerbCount clause_verbs(const std::vector<RequestToken>& tokens) {
  VerbCount out;
  bool clause_start = true;   // the next word starts a clause
  bool after_punct = true;    // ... and it follows the start or punctuation
  bool after_conj = false;    // ... or a conjunction
  bool creation_seen = false;  // this sentence has a creation verb
  bool describing = false;     // the rest of the sentence describes its object
  auto word_at = [&](std::size_t i) -> const std::string* {
    return i < tokens.size() && tokens[i].kind == Kind::Word ? &tokens[i].text : nullptr;
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const RequestToken& t = tokens[i];
    switch (t.kind) {
      case Kind::Stop:
      case Kind::Newline:
      case Kind::Semicolon:
        creation_seen = describing = false;
        [[fallthrough]];
      case Kind::Comma:
      case Kind::Colon:
        clause_start = after_punct = true;
        after_conj = false;
        continue;
      case Kind::Opaque:
        clause_start = after_punct = after_conj = false;
        continue;
      case Kind::Word: break;
    }
    const std::string& w = t.text;
    if (clause_start && w == "after" && word_at(i + 1) && *word_at(i + 1) == "that") {
      ++i;
      continue;
    }
    if (conjunctions().contains(w)) {
      clause_start = after_conj = true;
      after_punct = false;
      continue;
    }
    if (clause_start && lead_ins().contains(w)) continue;
    if (clause_start && !describing) {
      std::string base = action_verb_base(w);
      if (!base.empty()) {
        const std::string* next = word_at(i + 1);
        const bool clause_ends = i + 1 >= tokens.size() || tokens[i + 1].kind != Kind::Word;
        const bool verb_like = !noun_like_verbs().contains(base) || (after_punct && !after_conj) || clause_ends ||
                               (next && object_markers().contains(*next));
        if (verb_like) {
          if (std::find(out.verbs.begin(), out.verbs.end(), base) == out.verbs.end()) out.verbs.push_back(base);
          if (after_conj && out.verbs.size() > 1) out.joined_by_conjunction = true;
          if (creation_verbs().contains(base)) creation_seen = true;
        }
      }
    } else if (creation_seen && (w == "to" || w == "that" || w == "which") && word_at(i + 1) &&
               any_verb_form(*word_at(i + 1))) {
      describing = true;
    }
    clause_start = after_punct = after_conj = false;
  }
  return out;
}

}  // namespace

const char* job_signal_name(JobSignal signal) {
  switch (signal) {
    case JobSignal::None: return "none";
    case JobSignal::Checklist: return "checklist";
    case JobSignal::JobPhrase: return "job_phrase";
    case JobSignal::CompoundVerbs: return "compound_verbs";
  }
  return "none";
}

std::string TriggerResult::explanation() const {
  switch (signal) {
    case JobSignal::Checklist: return fmt::format("an enumerated checklist of {} items", items.size());
    case JobSignal::JobPhrase: return fmt::format("the job phrase '{}'", phrase);
    case JobSignal::CompoundVerbs:
      return fmt::format("{} action verbs joined by conjunctions ({})", verbs.size(), join(verbs, ", "));
    case JobSignal::None: break;
  }
  return fmt::format("no job signal (no checklist, no job phrase, {} clause verb{}: one step)", verbs.size(),
                     verbs.size() == 1 ? "" : "s");
}

std::string action_verb_base(std::string_view word) {
  if (auto b = known_base(word); !b.empty()) return b;
  if (auto it = irregular_forms().find(word); it != irregular_forms().end()) return it->second;
  if (auto b = base_of_suffixed(word, "ing"); !b.empty()) return b;
  return base_of_suffixed(word, "ed");
}

TriggerResult trigger_job(std::string_view request) {
  TriggerResult r;
  r.items = checklist_items(request);
  if (r.items.size() >= 2) {
    r.signal = JobSignal::Checklist;
    return r;
  }
  r.items.clear();
  const std::vector<RequestToken> tokens = tokenize_request(request, true);
  r.phrase = job_phrase(tokens);
  if (!r.phrase.empty()) {
    r.signal = JobSignal::JobPhrase;
    return r;
  }
  VerbCount counted = clause_verbs(tokens);
  r.verbs = counted.verbs;
  if (counted.verbs.size() >= 3 && counted.joined_by_conjunction) r.signal = JobSignal::CompoundVerbs;
  return r;
}

}  // namespace orch::flows
