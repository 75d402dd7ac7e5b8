// The bad-plan corpus (tests/bad-plans/): every file has one problem, and
// EXPECTATIONS says which line the diagnostic must carry and what it must say.
// Plans are checked the way `orch validate` does (plan_problems), with default
// options in a fresh workspace.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

fs::path corpus_dir(const char* name) {
  if (const char* s = std::getenv("ORCH_SOURCE_DIR")) return fs::path(s) / "tests" / name;
  // Run by hand: this file lives in <source>/src/plan/.
  return fs::path(__FILE__).parent_path().parent_path().parent_path() / "tests" / name;
}

struct Expectation {
  std::string file;
  int line = 0;
  std::string fragment;
};

std::vector<Expectation> read_expectations(const fs::path& path) {
  std::vector<Expectation> out;
  std::ifstream in(path);
  std::string row;
  int row_number = 0;
  while (std::getline(in, row)) {
    ++row_number;
    if (row.empty() || row[0] == '#') continue;
    std::istringstream fields(row);
    Expectation e;
    std::string line;
    if (!std::getline(fields, e.file, '\t') || !std::getline(fields, line, '\t') ||
        !std::getline(fields, e.fragment)) {
      ADD_FAILURE() << path << ":" << row_number << ": expected FILE<TAB>LINE<TAB>FRAGMENT";
      continue;
    }
    e.line = std::stoi(line);
    out.push_back(std::move(e));
  }
  return out;
}

Diagnostics check_file(const fs::path& plan, const fs::path& workspace) {
  auto loaded = load_plan_file(plan.string());
  if (!loaded) return {Diagnostic{plan.string(), 0, "", loaded.error().message}};
  ValidateOptions options;
  options.workspace = workspace;
  return plan_problems(*loaded, options);
}

TEST(BadPlans, EveryExpectationHolds) {
  fs::path dir = corpus_dir("bad-plans");
  auto expectations = read_expectations(dir / "EXPECTATIONS");
  ASSERT_GE(expectations.size(), 48u) << "the corpus at " << dir << " is too small";
  for (const auto& e : expectations) {
    SCOPED_TRACE(e.file);
    testing::TempDir workspace;
    Diagnostics found = check_file(dir / e.file, workspace.path());
    ASSERT_FALSE(found.empty()) << e.file << " was accepted";
    std::string at_line = ":" + std::to_string(e.line) + ":";
    bool matched = false;
    std::string all;
    for (const auto& d : found) {
      std::string text = d.to_string();
      all += "\n  " + text;
      if (text.find(at_line) != std::string::npos && text.find(e.fragment) != std::string::npos)
        matched = true;
      EXPECT_EQ(d.file, (dir / e.file).string()) << "every diagnostic names the plan file";
    }
    EXPECT_TRUE(matched) << e.file << ": no diagnostic at line " << e.line << " containing \"" << e.fragment
                         << "\"; got:" << all;
  }
}

TEST(BadPlans, EveryFileIsListed) {
  fs::path dir = corpus_dir("bad-plans");
  std::set<std::string> listed;
  for (const auto& e : read_expectations(dir / "EXPECTATIONS")) {
    EXPECT_TRUE(listed.insert(e.file).second) << e.file << " is listed twice";
    EXPECT_TRUE(fs::is_regular_file(dir / e.file)) << e.file << " is listed but missing";
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name == "EXPECTATIONS" || !entry.is_regular_file()) continue;
    EXPECT_TRUE(listed.contains(name)) << name << " is not in EXPECTATIONS";
  }
}

TEST(GoodPlans, ValidateCleanly) {
  fs::path dir = corpus_dir("good-plans");
  int plans = 0;
  bool saw_json = false, saw_yaml = false, saw_stepspec = false;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::string ext = entry.path().extension().string();
    if (ext != ".yaml" && ext != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    ++plans;
    testing::TempDir workspace;
    for (const auto& d : check_file(entry.path(), workspace.path())) ADD_FAILURE() << d.to_string();
    auto loaded = load_plan_file(entry.path().string());
    ASSERT_TRUE(loaded);
    EXPECT_FALSE(loaded->plan.steps.empty());
    saw_json |= ext == ".json";
    saw_yaml |= ext == ".yaml";
    saw_stepspec |= loaded->plan.from_stepspec;
  }
  EXPECT_GE(plans, 5);
  EXPECT_TRUE(saw_json && saw_yaml && saw_stepspec);
}

}  // namespace
}  // namespace orch
