#include "plan/condition.h"

#include <gtest/gtest.h>

#include <map>

namespace orch {
namespace {

struct Steps {
  std::map<std::string, std::pair<std::string, std::string>> by_id;  // status, result
  Condition::Inputs inputs() const {
    Condition::Inputs in;
    in.status = [this](const std::string& id) -> std::optional<std::string> {
      auto it = by_id.find(id);
      if (it == by_id.end()) return std::nullopt;
      return it->second.first;
    };
    in.result = [this](const std::string& id) -> std::optional<std::string> {
      auto it = by_id.find(id);
      if (it == by_id.end() || it->second.first != "done") return std::nullopt;
      return it->second.second;
    };
    return in;
  }
};

Expected<bool> eval(const std::string& text, const Steps& steps) {
  auto c = Condition::parse(text);
  if (!c) return std::unexpected(c.error());
  return c->evaluate(steps.inputs());
}

const Steps kSteps{
    {{"review", {"done", R"({"verdict": "PASS", "score": 8, "files": ["a.c", "b.c"], "ok": true})"}},
     {"build", {"done", "built\n"}},
     {"count", {"done", "42\n"}},
     {"optional", {"skipped", ""}}}};

TEST(Condition, EvaluatesEveryOperator) {
  const std::pair<const char*, bool> cases[] = {
      {R"(${steps.review.result.verdict} == "PASS")", true},
      {R"(steps.review.result.verdict != 'PASS')", false},
      {"steps.review.result.score >= 8", true},
      {"steps.review.result.score > 8", false},
      {"steps.review.result.score < 8.5", true},
      {"steps.review.result.score <= 7", false},
      {R"(steps.review.result.files.1 == "b.c")", true},
      {"steps.review.result.ok", true},
      {"!steps.review.result.ok", false},
      {"not steps.review.result.ok or steps.build.status == done", true},
      {"steps.build.status == done && steps.optional.status == skipped", true},
      {"steps.build.status == done and (steps.optional.status != skipped or false)", false},
      {R"(steps.build.result == "built")", true},  // text, trailing newline dropped
      {"steps.count.result == 42", true},          // JSON when it is JSON
      {"steps.count.result == 42.0", true},
      {R"("b" > "a")", true},
      {"steps.review.result.missing_ok == null || true",
       true},  // short-circuit: || true is not reached first
  };
  for (const auto& [text, expected] : cases) {
    auto got = eval(text, kSteps);
    if (std::string(text).find("missing_ok") != std::string::npos) {
      // `a || b` evaluates a first: a key the result lacks is an error, never false.
      EXPECT_FALSE(got) << text;
      continue;
    }
    ASSERT_TRUE(got) << text << ": " << got.error().message;
    EXPECT_EQ(*got, expected) << text;
  }
}

TEST(Condition, WhatCannotBeReadIsAnErrorNeverFalse) {
  auto missing = eval(R"(steps.review.result.verdikt == "PASS")", kSteps);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("steps.review.result has no 'verdikt'"), std::string::npos)
      << missing.error().message;
  auto not_json = eval(R"(steps.build.result.x == 1)", kSteps);
  ASSERT_FALSE(not_json);
  EXPECT_NE(not_json.error().message.find("not JSON"), std::string::npos);
  auto ordered = eval(R"(steps.review.result.verdict < 3)", kSteps);
  ASSERT_FALSE(ordered);
  EXPECT_NE(ordered.error().message.find("only two numbers or two strings"), std::string::npos);
  auto not_bool = eval("steps.review.result.score", kSteps);
  ASSERT_FALSE(not_bool);
  EXPECT_NE(not_bool.error().message.find("not true or false"), std::string::npos);
  auto skipped_result = eval(R"(steps.optional.result == "x")", kSteps);
  ASSERT_FALSE(skipped_result);
  EXPECT_NE(skipped_result.error().message.find("has no result (skipped)"), std::string::npos);
}

TEST(Condition, SyntaxErrorsSayWhereAndWhat) {
  const std::pair<const char*, const char*> cases[] = {
      {"steps.a.result = 3", "column 16: '=' is not an operator"},
      {"(steps.a.status == done", "')' expected"},
      {R"(steps.a.result == "open)", "is not closed"},
      {"steps.a.colour == 1", "a step has .status and .result"},
      {"steps.a.status.x == done", "a status has no keys"},
      {"steps.a.status == done done", "unexpected 'done'"},
      {"== 3", "'=' cannot start a value"},
      {"${steps.a.status == done", "'}' expected"},
      {"steps.a.result ==", "ends where a value is expected"},
      {"1.2.3 == 1", "'1.2.3' is not a number"},
  };
  for (const auto& [text, message] : cases) {
    auto c = Condition::parse(text);
    ASSERT_FALSE(c) << text;
    EXPECT_NE(c.error().message.find(message), std::string::npos) << text << ": " << c.error().message;
  }
  EXPECT_FALSE(Condition::parse("  "));
  // Word operators are whole words.
  auto words = Condition::parse("steps.order.status == done");
  ASSERT_TRUE(words) << words.error().message;
  EXPECT_EQ(words->refs().at(0).step, "order");
}

TEST(Condition, TypeProblemsKnownBeforeTheRun) {
  const std::pair<const char*, const char*> cases[] = {
      {"steps.a.status == PASS", "'PASS' is not a status"},
      {"steps.a.status == \"PASS\"", "is not a status a condition can see"},
      {"steps.a.status == failed", "'failed' is not a status"},
      {"steps.a.status == 3", "is not a status a condition can see"},
      {"steps.a.status < done", "'<' orders a status"},
      {"steps.a.status", "is used as true or false"},
      {"\"yes\"", "is used as true or false"},
      {"steps.a.result > true", "only numbers and strings are ordered"},
      {"steps.a.result == 1 && 3", "3 is used as true or false"},
  };
  for (const auto& [text, message] : cases) {
    auto c = Condition::parse(text);
    ASSERT_TRUE(c) << text << ": " << c.error().message;
    const auto problems = c->type_problems();
    std::string all;
    for (const auto& p : problems) all += p + "\n";
    EXPECT_NE(all.find(message), std::string::npos) << text << ":\n" << all;
  }
  for (const char* fine : {"steps.a.status == done", "steps.a.status != skipped", "steps.a.result",
                           "steps.a.status == steps.b.status", R"(steps.a.status == "done")", "true"}) {
    auto c = Condition::parse(fine);
    ASSERT_TRUE(c) << fine;
    EXPECT_TRUE(c->type_problems().empty()) << fine << ": " << c->type_problems().front();
  }
}

TEST(Condition, ListsItsReferencesWithColumns) {
  auto c = Condition::parse(R"(steps.a.status == done && ${steps.b.result.x.0} == "y")");
  ASSERT_TRUE(c);
  const auto refs = c->refs();
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].step, "a");
  EXPECT_TRUE(refs[0].status);
  EXPECT_EQ(refs[0].column, 1u);
  EXPECT_EQ(refs[1].step, "b");
  EXPECT_FALSE(refs[1].status);
  EXPECT_EQ(refs[1].path, (std::vector<std::string>{"x", "0"}));
  EXPECT_EQ(refs[1].column, 27u);
}

}  // namespace
}  // namespace orch
