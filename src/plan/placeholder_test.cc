#include "orch/placeholder.h"

#include <gtest/gtest.h>

#include <map>

namespace orch {
namespace {

using Kind = Segment::Kind;

Template parse_template_ok(std::string_view text) {
  auto t = parse_template(text);
  EXPECT_TRUE(t) << text << ": " << (t ? "" : t.error().message);
  return t ? *t : Template{};
}

std::string parse_error(std::string_view text) {
  auto t = parse_template(text);
  EXPECT_FALSE(t) << text << " should not parse";
  return t ? "" : t.error().message;
}

TEST(Placeholder, DoubleHashEIsALiteralHashE) {
  auto t = parse_template_ok("color ##E0E0E0 and #E0");
  ASSERT_EQ(t.segments.size(), 2u);
  EXPECT_EQ(t.segments[0].kind, Segment::Kind::Literal);
  EXPECT_EQ(t.segments[0].text, "color #E0E0E0 and ");
  EXPECT_EQ(t.segments[1].source, "#E0");
}

TEST(ParseTemplate, PlainText) {
  Template t = parse_template_ok("hello world");
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].kind, Kind::Literal);
  EXPECT_EQ(t.segments[0].text, "hello world");
  EXPECT_FALSE(t.has_placeholders());
  EXPECT_TRUE(parse_template_ok("").segments.empty());
  EXPECT_FALSE(parse_template_ok("$HOME $ {x} $$ # #Error #E").has_placeholders());
}

TEST(ParseTemplate, StepResult) {
  Template t = parse_template_ok("got: ${steps.build.result}!");
  ASSERT_EQ(t.segments.size(), 3u);
  EXPECT_EQ(t.segments[0].text, "got: ");
  EXPECT_EQ(t.segments[1].kind, Kind::StepResult);
  EXPECT_EQ(t.segments[1].text, "build");
  EXPECT_EQ(t.segments[1].source, "${steps.build.result}");
  EXPECT_EQ(t.segments[1].offset, 5u);
  EXPECT_EQ(t.segments[2].text, "!");
  EXPECT_TRUE(t.has_placeholders());
}

TEST(ParseTemplate, SpacesInsideAPlaceholderGetTheSuggestionWithout) {
  auto t = parse_template("x ${ steps.a.result } y");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "unknown placeholder '${ steps.a.result }' (did you mean '${steps.a.result}'?)");
}

TEST(ParseTemplate, StepIdsMayContainDots) {
  Template t = parse_template_ok("${steps.build.v2.result}");
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].text, "build.v2");
  Template j = parse_template_ok("${steps.a-b_c.json.x}");
  EXPECT_EQ(j.segments[0].text, "a-b_c");
}

TEST(ParseTemplate, StepJsonPath) {
  Template t = parse_template_ok("${steps.a.json.items.0.name}");
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].kind, Kind::StepJson);
  EXPECT_EQ(t.segments[0].text, "a");
  EXPECT_EQ(t.segments[0].json_path, (std::vector<std::string>{"items", "0", "name"}));
  Template whole = parse_template_ok("${steps.a.json}");
  EXPECT_EQ(whole.segments[0].kind, Kind::StepJson);
  EXPECT_TRUE(whole.segments[0].json_path.empty());
}

TEST(ParseTemplate, InputsAttemptsAndIndex) {
  Template t = parse_template_ok("${inputs.name} ${attempt.number} ${attempt.previous_failure} #E12x");
  std::vector<Kind> kinds;
  for (const auto& s : t.segments) kinds.push_back(s.kind);
  EXPECT_EQ(kinds,
            (std::vector<Kind>{Kind::Input, Kind::Literal, Kind::AttemptNumber, Kind::Literal,
                               Kind::PreviousFailure, Kind::Literal, Kind::IndexResult, Kind::Literal}));
  EXPECT_EQ(t.segments[0].text, "name");
  EXPECT_EQ(t.segments[6].index, 12);
  EXPECT_EQ(t.segments[6].source, "#E12");
  EXPECT_EQ(t.segments[7].text, "x");
}

TEST(ParseTemplate, DollarDollarBraceIsLiteral) {
  Template t = parse_template_ok("echo $${HOME} and $${steps.a.result}");
  EXPECT_FALSE(t.has_placeholders());
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_EQ(t.segments[0].text, "echo ${HOME} and ${steps.a.result}");
}

TEST(ParseTemplate, UnknownFormsHaveDidYouMean) {
  EXPECT_EQ(parse_error("${step.a.result}"),
            "unknown placeholder '${step.a.result}' (did you mean '${steps.a.result}'?)");
  EXPECT_EQ(parse_error("x ${steps.a.reslt}"),
            "unknown placeholder '${steps.a.reslt}' (did you mean '${steps.a.result}'?)");
  EXPECT_EQ(parse_error("${steps.a.jsn}"),
            "unknown placeholder '${steps.a.jsn}' (did you mean '${steps.a.json}'?)");
  EXPECT_EQ(parse_error("${steps.a}"),
            "unknown placeholder '${steps.a}' (did you mean '${steps.a.result}'?)");
  EXPECT_EQ(parse_error("${input.name}"),
            "unknown placeholder '${input.name}' (did you mean '${inputs.name}'?)");
  EXPECT_EQ(parse_error("${attempt.numbr}"),
            "unknown placeholder '${attempt.numbr}' (did you mean '${attempt.number}'?)");
  EXPECT_EQ(parse_error("${steps.a.result.x}"),
            "unknown placeholder '${steps.a.result.x}' (did you mean '${steps.a.json.x}'?)");
}

TEST(ParseTemplate, ShellVariablesGetAHint) {
  std::string msg = parse_error("echo ${HOME}");
  EXPECT_NE(msg.find("unknown placeholder '${HOME}'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("write '$${HOME}'"), std::string::npos) << msg;
}

TEST(ParseTemplate, MalformedForms) {
  EXPECT_NE(parse_error("${steps..result}").find("unknown placeholder"), std::string::npos);
  EXPECT_NE(parse_error("${steps.a.json.x..y}").find("empty JSON path segment"), std::string::npos);
  EXPECT_NE(parse_error("${inputs.a-b}").find("unknown placeholder '${inputs.a-b}'"), std::string::npos);
  EXPECT_NE(parse_error("${inputs}").find("unknown placeholder '${inputs}'"), std::string::npos);
  EXPECT_NE(parse_error("${}").find("unknown placeholder '${}'"), std::string::npos);
  EXPECT_NE(parse_error("#E99999999999999999999").find("too large"), std::string::npos);
}

TEST(ParseTemplate, Unterminated) {
  std::string msg = parse_error("echo ${steps.a.result");
  EXPECT_NE(msg.find("unterminated '${'"), std::string::npos) << msg;
}

struct FakeResults {
  std::map<std::string, std::string> by_id;
  std::map<int, std::string> by_index;
  std::map<std::string, std::string> inputs;

  RenderContext context() const {
    RenderContext ctx;
    ctx.step_result = [this](const std::string& id) -> std::optional<std::string> {
      auto it = by_id.find(id);
      if (it == by_id.end()) return std::nullopt;
      return it->second;
    };
    ctx.index_result = [this](int i) -> std::optional<std::string> {
      auto it = by_index.find(i);
      if (it == by_index.end()) return std::nullopt;
      return it->second;
    };
    ctx.input = [this](const std::string& name) -> std::optional<std::string> {
      auto it = inputs.find(name);
      if (it == inputs.end()) return std::nullopt;
      return it->second;
    };
    ctx.attempt_number = 3;
    ctx.previous_failure = "exit 1";
    return ctx;
  }
};

Expected<std::string> render_text(std::string_view text, const FakeResults& r) {
  auto t = parse_template(text);
  if (!t) return std::unexpected(t.error());
  return render(*t, r.context());
}

TEST(Render, FillsEveryKind) {
  FakeResults r;
  r.by_id = {{"a", "alpha"}, {"j", R"({"x": {"y": [10, "twenty", {"z": true}]}, "s": "str"})"}};
  r.by_index = {{0, "zero"}};
  r.inputs = {{"who", "world"}};
  EXPECT_EQ(
      render_text("${steps.a.result}/${inputs.who}/${attempt.number}/${attempt.previous_failure}/#E0", r)
          .value(),
      "alpha/world/3/exit 1/zero");
  EXPECT_EQ(render_text("${steps.j.json.s}", r).value(), "str");
  EXPECT_EQ(render_text("${steps.j.json.x.y.0}", r).value(), "10");
  EXPECT_EQ(render_text("${steps.j.json.x.y.1}", r).value(), "twenty");
  EXPECT_EQ(render_text("${steps.j.json.x.y.2}", r).value(), R"({"z":true})");
  EXPECT_EQ(render_text("${steps.j.json.x.y}", r).value(), R"([10,"twenty",{"z":true}])");
  EXPECT_EQ(render_text("${steps.j.json}", r).value(), R"({"x":{"y":[10,"twenty",{"z":true}]},"s":"str"})");
  EXPECT_EQ(render_text("$${steps.a.result}", r).value(), "${steps.a.result}");
  // Before `{`, `$$` is one `$` and an odd `$` left starts a placeholder: a
  // literal `$` can come right before one.
  EXPECT_EQ(render_text("$$${steps.j.json.s}", r).value(), "$str");
  EXPECT_EQ(render_text("price: $$$$${steps.j.json.s}", r).value(), "price: $$str");
  EXPECT_EQ(render_text("$$$${steps.j.json.s}", r).value(), "$${steps.j.json.s}");
  // Elsewhere `$` is text, doubled or not.
  EXPECT_EQ(render_text("$$ $ a$$b $$$", r).value(), "$$ $ a$$b $$$");
  // A long run of `$` is read once (each `$` used to rescan the rest of the run).
  const std::string dollars(200000, '$');
  const std::string long_run = render_text(dollars + "x" + dollars + "${attempt.number}", r).value();
  EXPECT_TRUE(long_run ==
              dollars + "x" + std::string(100000, '$') + render_text("${attempt.number}", r).value())
      << long_run.size();
}

TEST(Render, ValuesAreNotReinterpreted) {
  FakeResults r;
  r.by_id = {{"a", "${steps.b.result} $(rm -rf /) #E0"}};
  // A result that looks like a placeholder (or shell syntax) is inserted as is, never parsed again.
  EXPECT_EQ(render_text("${steps.a.result}", r).value(), "${steps.b.result} $(rm -rf /) #E0");
}

TEST(Render, MissingValuesNameThePlaceholder) {
  FakeResults r;
  r.by_id = {{"text", "not json"}, {"j", R"({"a": 1})"}};
  auto missing = render_text("${steps.nope.result}", r);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("'${steps.nope.result}'"), std::string::npos)
      << missing.error().message;
  auto not_json = render_text("${steps.text.json.a}", r);
  ASSERT_FALSE(not_json);
  EXPECT_NE(not_json.error().message.find("'${steps.text.json.a}'"), std::string::npos);
  EXPECT_NE(not_json.error().message.find("not JSON"), std::string::npos) << not_json.error().message;
  auto no_key = render_text("${steps.j.json.b}", r);
  ASSERT_FALSE(no_key);
  EXPECT_NE(no_key.error().message.find("'${steps.j.json.b}'"), std::string::npos);
  EXPECT_NE(no_key.error().message.find("no key 'b'"), std::string::npos) << no_key.error().message;
  EXPECT_FALSE(render_text("${inputs.x}", r));
  EXPECT_FALSE(render_text("#E4", r));
}

TEST(Render, EmptyContextFailsCleanly) {
  auto t = parse_template("${steps.a.result}${inputs.x}#E0");
  ASSERT_TRUE(t);
  EXPECT_FALSE(render(*t, RenderContext{}));
  auto plain = parse_template("${attempt.number}");
  EXPECT_EQ(render(*plain, RenderContext{}).value(), "1");
}

TEST(JsonPathValue, Lookups) {
  const char* doc = R"({"b": 2, "a": {"list": [1, null, "x"], "f": 1.5}, "t": "tab\there"})";
  EXPECT_EQ(json_path_value(doc, {"b"}).value(), "2");
  EXPECT_EQ(json_path_value(doc, {"a", "list", "1"}).value(), "null");
  EXPECT_EQ(json_path_value(doc, {"a", "list", "2"}).value(), "x");
  EXPECT_EQ(json_path_value(doc, {"a", "f"}).value(), "1.5");
  EXPECT_EQ(json_path_value(doc, {"t"}).value(), "tab\there");
  // Key order of the result is kept.
  EXPECT_EQ(json_path_value(doc, {}).value(), R"({"b":2,"a":{"list":[1,null,"x"],"f":1.5},"t":"tab\there"})");
  EXPECT_EQ(json_path_value("\"just a string\"\n", {}).value(), "just a string");
}

TEST(JsonPathValue, AResultNestedDeeperThanAPlanMayBeIsRefusedNotRecursedInto) {
  const std::string ok = std::string(kMaxResultDepth, '[') + std::string(kMaxResultDepth, ']');
  EXPECT_TRUE(json_path_value(ok, {}));
  // Deep enough to overflow the stack when written back out.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto value = json_path_value(deep, {});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(value.error().message.find("nests deeper than 500 levels"), std::string::npos)
      << value.error().message;
}

// Brackets inside strings (escaped quotes too) are text, not nesting.
TEST(JsonPathValue, BracketsInStringsDoNotCountAsNesting) {
  const std::string brackets(2000, '[');
  const std::string doc = R"({"s": "\")" + brackets + R"(\\", "t": ")" + brackets + R"("})";
  auto value = json_path_value(doc, {"t"});
  ASSERT_TRUE(value) << value.error().message;
  EXPECT_EQ(*value, brackets);
}

// A large array of objects (which nlohmann's depth-limited parse made quadratic:
// 15 s for 200,000) is looked up in one pass, and each step's result is parsed
// once for all the placeholders of a render context.
TEST(JsonPathValue, ALargeArrayOfObjectsIsLookedUpInOnePass) {
  std::string doc = R"({"k": "v", "o": [)";
  for (int i = 0; i < 200000; ++i) doc += (i ? ",{\"i\":" : "{\"i\":") + std::to_string(i) + "}";
  doc += "]}";
  int lookups = 0;
  RenderContext ctx;
  ctx.step_result = [&](const std::string&) -> std::optional<std::string> {
    ++lookups;
    return lookups == 1 ? doc : std::string("not json any more");
  };
  ctx.parsed = new_parsed_results();
  for (const char* text : {"${steps.a.json.k}", "${steps.a.json.o.199999.i}", "${steps.a.json.o.7.i}"}) {
    auto tmpl = parse_template(text);
    ASSERT_TRUE(tmpl) << tmpl.error().message;
    auto out = render(*tmpl, ctx);
    ASSERT_TRUE(out) << text << ": " << out.error().message << " (parsed again instead of once)";
  }
  EXPECT_EQ(lookups, 3);
  EXPECT_EQ(json_path_value(doc, {"o", "123456", "i"}).value(), "123456");
}

// Numbers come out as the step wrote them: nlohmann's double would lose the
// digits of a long whole number and write 1e2 back as 100.0.
TEST(JsonPathValue, NumbersKeepTheTextTheStepWrote) {
  const char* doc = R"({"id": 12345678901234567890123, "neg": -98765432109876543210, "e": 1e2, "f": 1.50,)"
                    R"( "i": 42, "big": 18446744073709551615, "o": {"x": 2.50E-3, "l": [1e2, 7, "s"]}})";
  EXPECT_EQ(json_path_value(doc, {"id"}).value(), "12345678901234567890123");
  EXPECT_EQ(json_path_value(doc, {"neg"}).value(), "-98765432109876543210");
  EXPECT_EQ(json_path_value(doc, {"e"}).value(), "1e2");
  EXPECT_EQ(json_path_value(doc, {"f"}).value(), "1.50");
  EXPECT_EQ(json_path_value(doc, {"i"}).value(), "42");
  EXPECT_EQ(json_path_value(doc, {"big"}).value(), "18446744073709551615");
  EXPECT_EQ(json_path_value(doc, {"o"}).value(), R"({"x":2.50E-3,"l":[1e2,7,"s"]})");
  EXPECT_EQ(json_path_value(doc, {"o", "l"}).value(), R"([1e2,7,"s"])");
  EXPECT_EQ(json_path_value("1e2", {}).value(), "1e2");
  auto into = json_path_value(doc, {"e", "k"});
  ASSERT_FALSE(into);
  EXPECT_NE(into.error().message.find("(a number, not an object or array)"), std::string::npos)
      << into.error().message;
}

// A failed JSON lookup carries what the context knows about the result.
TEST(Render, AFailedJsonLookupCarriesTheResultNote) {
  RenderContext ctx;
  ctx.step_result = [](const std::string&) -> std::optional<std::string> { return R"({"a": [1, 2)"; };
  ctx.result_note = [](const std::string& id) { return id == "s" ? "it was cut" : ""; };
  auto out = render(*parse_template("${steps.s.json.a}"), ctx);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("not JSON"), std::string::npos) << out.error().message;
  EXPECT_TRUE(out.error().message.ends_with("; it was cut")) << out.error().message;
  auto other = render(*parse_template("${steps.t.json.a}"), ctx);
  ASSERT_FALSE(other);
  EXPECT_FALSE(other.error().message.ends_with("; ")) << other.error().message;
  EXPECT_EQ(other.error().message.find("cut"), std::string::npos) << other.error().message;
}

TEST(JsonPathValue, Errors) {
  const char* doc = R"({"a": [1, 2], "s": "x"})";
  EXPECT_NE(json_path_value(doc, {"a", "5"}).error().message.find("out of range"), std::string::npos);
  EXPECT_NE(json_path_value(doc, {"a", "k"}).error().message.find("not an array index"), std::string::npos);
  EXPECT_NE(json_path_value(doc, {"a", "-1"}).error().message.find("not an array index"), std::string::npos);
  EXPECT_NE(json_path_value(doc, {"s", "k"}).error().message.find("cannot look up 'k'"), std::string::npos);
  EXPECT_NE(json_path_value(doc, {"zz"}).error().message.find("no key 'zz'"), std::string::npos);
  EXPECT_NE(json_path_value("{bad", {}).error().message.find("not JSON"), std::string::npos);
  EXPECT_FALSE(json_path_value("", {}));
}

}  // namespace
}  // namespace orch
