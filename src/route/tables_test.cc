// Loading the route tables: the shipped ones, a project's override in
// .orch/route/, and every kind of broken table reported as FILE:LINE.
#include "route/tables.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "route/embedded_data.h"
#include "testing/testing.h"

namespace orch::route {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;


std::string shipped_text(const std::string& name) {
  for (const auto& t : shipped_tables())
    if (t.name == name) return std::string(t.text);
  ADD_FAILURE() << "no shipped table " << name;
  return "";
}

// The 1-based line of the first line holding `needle`.
int line_of(const std::string& text, const std::string& needle) {
  auto at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// The shipped table `name` with `from` replaced by `to`, written as the project's override.
fs::path override_with(const TempDir& d, const std::string& name, const std::string& from,
                       const std::string& to) {
  std::string text = shipped_text(name);
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  fs::path file = d / ".orch" / "route" / name;
  fs::create_directories(file.parent_path());
  write_file(file, text);
  return file;
}

// The error of loading d's tables (fails the test when they load).
std::string load_error(const TempDir& d) {
  auto t = RouteTables::load(d.path());
  EXPECT_FALSE(t) << "loaded";
  return t ? "" : t.error().message;
}

TEST(RouteTables, TheShippedTablesLoad) {
  TempDir d;
  auto t = RouteTables::load(d.path());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->intent_names(),
            (std::vector<std::string>{"quick_fix", "bug_fix", "feature", "architecture", "research",
                                      "documentation", "performance", "security", "deployment"}));
  EXPECT_EQ(t->request_type_names().size(), 5u);
  EXPECT_EQ(t->budgets.allocation.base, 200);
  EXPECT_EQ(t->requests.confidence.threshold, 0.6);
  ASSERT_EQ(t->sources.size(), route_table_names().size());
  for (const auto& s : t->sources) {
    EXPECT_FALSE(s.overridden) << s.name;
    EXPECT_EQ(s.file, "data/route/" + s.name);
  }
  for (const auto& intent : t->intent_names()) EXPECT_FALSE(t->checklists.at(intent).empty()) << intent;
}

TEST(RouteTables, TheEmbeddedCopiesAreTheFilesOfTheSourceTree) {
  ASSERT_EQ(shipped_tables().size(), route_table_names().size());
  for (const auto& t : shipped_tables())
    EXPECT_EQ(std::string(t.text), read_file(source_dir() / t.path)) << t.path;
}

TEST(RouteTables, AProjectFileReplacesTheShippedOne) {
  TempDir d;
  fs::path file = override_with(d, "budgets.yaml", "    trivial: 600", "    trivial: 900");
  auto t = RouteTables::load(d.path());
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->budgets.by_complexity.at(Complexity::Trivial), 900);
  for (const auto& s : t->sources) {
    EXPECT_EQ(s.overridden, s.name == "budgets.yaml") << s.name;
    if (s.overridden) {
      EXPECT_EQ(s.file, file.string());
    }
  }
  // The whole file is replaced: what the override leaves out is not taken from the shipped one.
  write_file(file, "version: 1\ntokens:\n  by_complexity: {trivial: 1, standard: 2, complex: 3}\n");
  std::string e = load_error(d);
  EXPECT_HAS(e, file.string() + ":1: allocation: missing");
}

TEST(RouteTables, AStrayFileInTheOverrideFolderIsAnError) {
  TempDir d;
  write_file(d / ".orch" / "route" / "intent.yaml", "version: 1\n");
  write_file(d / ".orch" / "route" / "notes.txt", "not a table, not YAML: ignored\n");
  std::string e = load_error(d);
  EXPECT_HAS(e, "intent.yaml: not a route table");
  EXPECT_HAS(e, "did you mean 'intents.yaml'?");
  EXPECT_EQ(e.find("notes.txt"), std::string::npos) << e;
}

TEST(RouteTables, ABrokenTableNamesFileAndLine) {
  TempDir d;
  const std::string item = R"(    - {check: "root cause named, not symptom", attest: true})";
  fs::path file = override_with(d, "verify.yaml", item, R"(    - {check: "root cause named, not symptom"})");
  const int line = line_of(read_file(file), "root cause named");
  std::string e = load_error(d);
  EXPECT_HAS(e, fmt::format("{}:{}: checklists.bug_fix[0]: needs `command`", file.string(), line));

  write_file(file, "checklists:\n  bug_fix: [\n");
  e = load_error(d);
  EXPECT_HAS(e, file.string() + ":");
  EXPECT_HAS(e, ": (file): YAML syntax error");
}

TEST(RouteTables, CommandsNameADomainAndRequestTypesThatExist) {
  TempDir d;
  fs::path file = override_with(d, "requests.yaml", "  domain: system\n  names:\n    route: query\n",
                                "  domain: sytem\n  names:\n    route: qurey\n    Bad!: null\n");
  std::string e = load_error(d);
  EXPECT_HAS(e, "commands.domain: unknown domain 'sytem' (did you mean 'system'?)");
  EXPECT_HAS(e, "commands.names.route: unknown request type 'qurey' (did you mean 'query'?)");
  EXPECT_HAS(e, "commands.names.Bad!: a command name is lower-case letters");
  TempDir spaced;
  override_with(spaced, "requests.yaml", "  prefix: \"/tk:\"", "  prefix: \" /tk:\"");
  EXPECT_HAS(load_error(spaced), "commands.prefix: must be the text a command starts with");
}

TEST(RouteTables, KeywordsThatCouldNeverMatchAreRefused) {
  TempDir d;
  const std::string fix = "      - {word: fix, forms: [fixes, fixed, fixing]}";
  fs::path file = override_with(
      d, "intents.yaml", fix,
      fix +
          "\n      - C++\n      - ci/cd\n      - {stem: optimi, forms: [optimise, optimising, tuned]}"
          "\n      - {word: fix, forms: [fixing]}\n      - {wrod: bug}");
  const int line = line_of(read_file(file), "- C++");
  std::string e = load_error(d);
  EXPECT_HAS(e, fmt::format("{}:{}: intents[1].keywords[1]: 'C++' is not whole lower-case words",
                            file.string(), line));
  EXPECT_HAS(e, "read as 'c'");
  EXPECT_HAS(e, fmt::format("{}:{}: intents[1].keywords[2]: 'ci/cd' is not whole", file.string(), line + 1));
  EXPECT_HAS(e, "'tuned' does not start with the stem 'optimi'");
  EXPECT_EQ(e.find("'optimising' does not"), std::string::npos) << e;
  EXPECT_HAS(e, fmt::format(":{}: intents[1].keywords[4]: 'fix' is repeated", line + 3));
  EXPECT_HAS(e,
             fmt::format(":{}: intents[1].keywords[5].wrod: unknown key (did you mean 'word'?)", line + 4));
}

TEST(RouteTables, ReferencesBetweenTablesAreChecked) {
  TempDir d;
  // A checklist for an intent that does not exist; a missing one.
  fs::path verify = override_with(d, "verify.yaml", "\n  bug_fix:\n", "\n  bugfix:\n");
  std::string e = load_error(d);
  EXPECT_HAS(e, fmt::format("{}:{}: checklists.bugfix: unknown intent 'bugfix' (did you mean 'bug_fix'?)",
                            verify.string(), line_of(read_file(verify), "bugfix:")));
  EXPECT_HAS(e, "checklists: no entry for intent 'bug_fix'");
  fs::remove(verify);

  // A request type without a budget; a strategy without a pipeline; an unknown stage.
  fs::path budgets = override_with(d, "budgets.yaml", "    audit: 800\n", "");
  fs::path strategies = override_with(d, "strategies.yaml", "  complex: deep", "  complex: deeep");
  e = load_error(d);
  EXPECT_HAS(e, budgets.string() + ":");
  EXPECT_HAS(e, "allocation.by_request_type: no entry for request type 'audit'");
  EXPECT_HAS(e, fmt::format("{}:{}: pipelines: strategy 'deeep' has no pipeline (did you mean 'deep'?)",
                            strategies.string(), line_of(read_file(strategies), "complex: deeep")));
}

TEST(RouteTables, PipelinesAndDomainRanksAreChecked) {
  TempDir d;
  fs::path strategies = override_with(d, "strategies.yaml", "  direct: [RECALL, EXECUTE, VERIFY, SUMMARIZE]",
                                      "  direct: [RECAL, VERIFY, EXECUTE]");
  fs::path requests =
      override_with(d, "requests.yaml", "  - [papers, watch, projects]", "  - [papers, wach]");
  std::string e = load_error(d);
  const int line = line_of(read_file(strategies), "direct: [RECAL");
  EXPECT_HAS(e, fmt::format("{}:{}: pipelines.direct: unknown stage 'RECAL' (did you mean 'RECALL'?)",
                            strategies.string(), line));
  EXPECT_HAS(e, fmt::format("{}:{}: pipelines.direct: must hold EXECUTE and, after it, VERIFY",
                            strategies.string(), line));
  EXPECT_HAS(e, "pipelines.direct: must end with SUMMARIZE");
  EXPECT_HAS(e, "unknown domain 'wach' (did you mean 'watch'?)");
  EXPECT_HAS(e, requests.string() + ":");
  EXPECT_HAS(e, "domain_priority: domain 'projects' has no rank");
}

}  // namespace
}  // namespace orch::route
