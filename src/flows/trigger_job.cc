#include "flows/trigger_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "flows/checklist.h"
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
      "research",
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
      "split",  "start",     "stop",    "tag",    "test",   "upgrade", "audit",     "research",
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

// Job phrases, as whole words. A phrase ending in ":" needs a colon right after
// it. An `imperative` one counts only in a sentence that starts with an action
// verb in its base form: "run the tests in parallel" asks for parallel work, "the
// tests run in parallel and hang" reports a bug.
struct JobPhrase {
  std::string_view text;
  bool imperative = false;
};
constexpr std::array<JobPhrase, 11> kJobPhrases = {{
    {"do all of the following"},
    {"all of the following"},
    {"each of the following"},
    {"do the following"},
    {"the following steps"},
    {"the following tasks"},
    {"following workflow"},
    {"for each"},
    {"workflow:"},
    {"in parallel", true},
    {"step by step", true},
}};

// Counted items: "these five libraries", "the 4 services", "all three reports".
constexpr std::size_t kCountedItemsMin = 3;
const std::map<std::string, int, std::less<>>& number_words() {
  static const std::map<std::string, int, std::less<>> words = {
      {"two", 2},   {"three", 3}, {"four", 4}, {"five", 5},    {"six", 6},     {"seven", 7},
      {"eight", 8}, {"nine", 9},  {"ten", 10}, {"eleven", 11}, {"twelve", 12}, {"several", 3},
  };
  return words;
}

// Words after a number that measure rather than count things to deliver.
const std::set<std::string, std::less<>>& unit_words() {
  static const std::set<std::string, std::less<>> words = {
      "times", "seconds", "minutes", "hours", "days", "weeks", "months", "years", "percent", "ms", "lines",
      "bytes", "kb", "mb", "gb", "steps", "more", "of",
  };
  return words;
}

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

// The base of a third-person form: "summarizes", "fixes", "copies" ("" when none).
std::string third_person_base(std::string_view word) {
  if (word.size() < 3 || !word.ends_with('s')) return "";
  if (word.ends_with("ies"))  // copies -> copy
    if (auto b = known_base(std::string(word.substr(0, word.size() - 3)) + "y"); !b.empty()) return b;
  if (word.ends_with("es"))
    if (auto b = known_base(word.substr(0, word.size() - 2)); !b.empty()) return b;
  return known_base(word.substr(0, word.size() - 1));
}

// Any form, for "that builds, tests and deploys": to see that a description starts.
bool any_verb_form(std::string_view word) {
  return !action_verb_base(word).empty() || !third_person_base(word).empty();
}

// ---- signal 2: job phrases -------------------------------------------------

// Whether the sentence holding tokens[at] starts (after lead-ins such as
// "please") with an action verb in its base form.
bool imperative_sentence(const std::vector<RequestToken>& tokens, std::size_t at) {
  std::size_t start = at;
  while (start > 0) {
    const Kind k = tokens[start - 1].kind;
    if (k == Kind::Stop || k == Kind::Newline || k == Kind::Semicolon || k == Kind::Colon) break;
    --start;
  }
  while (start < at && tokens[start].kind == Kind::Word && lead_ins().contains(tokens[start].text)) ++start;
  return start < at && tokens[start].kind == Kind::Word && !known_base(tokens[start].text).empty();
}

std::string job_phrase(const std::vector<RequestToken>& tokens) {
  for (const JobPhrase& job : kJobPhrases) {
    const std::string_view phrase = job.text;
    const bool needs_colon = phrase.ends_with(':');
    std::vector<std::string> want = request_words(phrase);
    for (std::size_t i = 0; i + want.size() <= tokens.size(); ++i) {
      bool all = true;
      for (std::size_t k = 0; k < want.size() && all; ++k)
        all = tokens[i + k].kind == Kind::Word && tokens[i + k].text == want[k];
      if (!all) continue;
      const std::size_t after = i + want.size();
      if (needs_colon && (after >= tokens.size() || tokens[after].kind != Kind::Colon)) continue;
      if (job.imperative && !imperative_sentence(tokens, i)) continue;
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
      // A third-person form ("summarizes", "reviews") is as often a plural noun
      // ("and updates", "the fixes"): it counts only with its object after it.
      const bool third_person = base.empty() && !(base = third_person_base(w)).empty();
      if (!base.empty()) {
        const std::string* next = word_at(i + 1);
        const bool object_follows = next && object_markers().contains(*next);
        const bool clause_ends = i + 1 >= tokens.size() || tokens[i + 1].kind != Kind::Word;
        const bool verb_like =
            third_person ? object_follows
                         : !noun_like_verbs().contains(base) || (after_punct && !after_conj) || clause_ends ||
                               object_follows;
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

// ---- signal 4: counted items -----------------------------------------------

// "these five http libraries": a determiner, a count of kCountedItemsMin or more
// and what is counted. Returns that phrase, or "".
std::string counted_items(const std::vector<RequestToken>& tokens) {
  static const std::set<std::string, std::less<>> determiners = {"these", "those", "the", "all"};
  for (std::size_t i = 1; i + 1 < tokens.size(); ++i) {
    if (tokens[i].kind != Kind::Word || tokens[i - 1].kind != Kind::Word || tokens[i + 1].kind != Kind::Word)
      continue;
    if (!determiners.contains(tokens[i - 1].text)) continue;
    const std::string& n = tokens[i].text;
    int count = 0;
    if (auto it = number_words().find(n); it != number_words().end()) {
      count = it->second;
    } else if (!n.empty() && n.size() <= 3 && std::all_of(n.begin(), n.end(), [](char c) {
                 return std::isdigit(static_cast<unsigned char>(c)) != 0;
               })) {
      count = std::stoi(n);
    }
    if (count < static_cast<int>(kCountedItemsMin) || unit_words().contains(tokens[i + 1].text)) continue;
    std::string phrase = tokens[i - 1].text + " " + n;
    for (std::size_t k = i + 1; k < tokens.size() && k <= i + 3 && tokens[k].kind == Kind::Word; ++k) {
      if (conjunctions().contains(tokens[k].text)) break;
      phrase += " " + tokens[k].text;
    }
    return phrase;
  }
  return "";
}

}  // namespace

const char* job_signal_name(JobSignal signal) {
  switch (signal) {
    case JobSignal::None: return "none";
    case JobSignal::Checklist: return "checklist";
    case JobSignal::JobPhrase: return "job_phrase";
    case JobSignal::CompoundVerbs: return "compound_verbs";
    case JobSignal::CountedItems: return "counted_items";
  }
  return "none";
}

std::string TriggerResult::explanation() const {
  switch (signal) {
    case JobSignal::Checklist: return fmt::format("an enumerated checklist of {} items", items.size());
    case JobSignal::JobPhrase: return fmt::format("the job phrase '{}'", phrase);
    case JobSignal::CompoundVerbs:
      return fmt::format("{} action verbs joined by conjunctions ({})", verbs.size(), join(verbs, ", "));
    case JobSignal::CountedItems:
      return fmt::format("an action on counted items ('{}') joined to another ({})", phrase, join(verbs, ", "));
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
  if (counted.verbs.size() >= 3 && counted.joined_by_conjunction) {
    r.signal = JobSignal::CompoundVerbs;
  } else if (counted.verbs.size() == 2 && counted.joined_by_conjunction) {
    // "research these five libraries and write me a comparison": a deliverable per
    // item, and one more. Two verbs alone stay one step ("read X and write Y").
    r.phrase = counted_items(tokens);
    if (!r.phrase.empty()) r.signal = JobSignal::CountedItems;
  }
  return r;
}

}  // namespace orch::flows
