#include "util/yaml_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "util/yaml_json.h"

namespace orch {
namespace {

using ordered = nlohmann::ordered_json;

std::string written(const ordered& value, YamlLayout layout = YamlLayout::Block) {
  auto text = yaml_text(value, layout);
  EXPECT_TRUE(text) << value.dump() << ": " << (text ? "" : text.error().message);
  return text ? *text : std::string();
}

// The text read back by orch's own reader, in the document's key order.
ordered read_back(const std::string& text) {
  auto doc = detail::read_yaml_doc(text);
  EXPECT_TRUE(doc) << text << ": " << (doc ? "" : doc.error().message);
  return doc ? yaml_to_ordered_json(*doc) : ordered();
}

TEST(YamlWriter, APlanReadsAsBlocksWithQuotesOnlyWhereNeeded) {
  ordered plan = {{"name", "fix the login"},
                  {"steps",
                   {{{"id", "request"},
                     {"executor", "llm:fast"},
                     {"inputs", {{"prompt", "fix: the login form"}, {"count", 3}, {"n", "no"}}},
                     {"deps", ordered::array()}}}}};
  EXPECT_EQ(written(plan),
            "name: \"fix the login\"\n"
            "steps:\n"
            "- id: request\n"
            "  executor: \"llm:fast\"\n"
            "  inputs:\n"
            "    prompt: \"fix: the login form\"\n"
            "    count: 3\n"
            "    \"n\": \"no\"\n"
            "  deps: []\n");
  EXPECT_EQ(read_back(written(plan)), plan);
}

// Strings that would read as something else, or not at all, are quoted; each
// comes back as exactly itself, as a value and as a key.
TEST(YamlWriter, TrickyStringsReadBackAsThemselves) {
  const std::vector<std::string> tricky = {"true",
                                           "False",
                                           "yes",
                                           "No",
                                           "on",
                                           "OFF",
                                           "y",
                                           "n",
                                           "null",
                                           "Null",
                                           "~",
                                           "",
                                           "1e3",
                                           "0x1F",
                                           "0o17",
                                           "-5",
                                           "+3",
                                           ".5",
                                           "1.2.3",
                                           ".inf",
                                           "-.Inf",
                                           ".nan",
                                           "- x",
                                           "-",
                                           "? x",
                                           ": ",
                                           "a: b",
                                           "a:b",
                                           "# not a comment",
                                           "a #b",
                                           "[1, 2]",
                                           "{k: v}",
                                           "*alias",
                                           "&anchor",
                                           "!tag",
                                           "%directive",
                                           "@at",
                                           "`tick",
                                           "|",
                                           ">",
                                           "'single'",
                                           "\"double\"",
                                           "back\\slash",
                                           "multi\nline\n",
                                           "trailing newline\n",
                                           "\n",
                                           "  leading spaces",
                                           "trailing spaces  ",
                                           "tab\there",
                                           "\ttab first",
                                           "bell\x07",
                                           std::string("nul\0byte", 8),
                                           "unicode: caf\xC3\xA9 \xE2\x9C\x93",
                                           "line\xE2\x80\xA8separator",
                                           "next\xC2\x85line",
                                           "bom\xEF\xBB\xBF",
                                           "---",
                                           "...",
                                           "--- x",
                                           "cr\rlf\r\n",
                                           "${steps.a.result}",
                                           "x: y # z",
                                           "'\"\\",
                                           "plain_word",
                                           "path/to/file.txt",
                                           std::string(300, 'x') + " long"};
  ordered value = ordered::object();
  ordered list = ordered::array();
  for (const std::string& s : tricky) {
    list.push_back(s);
    value[s] = s;
  }
  ordered doc = {{"list", list}, {"map", value}};
  const std::string text = written(doc);
  EXPECT_EQ(read_back(text), doc) << text;
  EXPECT_EQ(read_back(written(doc, YamlLayout::Flow)), doc);
  // Each on its own, as the whole document.
  for (const std::string& s : tricky) EXPECT_EQ(read_back(written(ordered(s))), ordered(s)) << written(s);
  // Long strings are not folded over lines.
  EXPECT_NE(text.find(std::string(300, 'x') + " long"), std::string::npos);
}

TEST(YamlWriter, PlainWordsStayPlainAndUtf8StaysReadable) {
  EXPECT_EQ(written(ordered{{"id", "build-step_2"}, {"path", "src/a.cc"}}),
            "id: build-step_2\npath: src/a.cc\n");
  EXPECT_EQ(written(ordered{{"b", "true"}, {"num", "12"}, {"e", ""}, {"y", "Off"}}),
            "b: \"true\"\nnum: \"12\"\ne: \"\"\n\"y\": \"Off\"\n");
  EXPECT_EQ(written(ordered{{"t", "multi\nline"}}), "t: \"multi\\nline\"\n");
  EXPECT_EQ(written(ordered{{"u", "caf\xC3\xA9"}}), "u: \"caf\xC3\xA9\"\n");
}

TEST(YamlWriter, NumbersBooleansAndNullKeepTheirValues) {
  ordered doc = {{"int", 42},
                 {"neg", -7},
                 {"min", std::numeric_limits<std::int64_t>::min()},
                 {"umax", std::numeric_limits<std::uint64_t>::max()},
                 {"half", 0.5},
                 {"tenth", 0.1},
                 {"big", 1e22},
                 {"tiny", 5e-324},
                 {"whole", 3.0},
                 {"negzero", -0.0},
                 {"t", true},
                 {"f", false},
                 {"nothing", nullptr},
                 {"empty_map", ordered::object()},
                 {"nested", {{"a", ordered::array({1, "1", ordered::array()})}}}};
  const std::string text = written(doc);
  const ordered back = read_back(text);
  EXPECT_EQ(back, doc) << text;
  EXPECT_TRUE(back["whole"].is_number_float()) << text;
  EXPECT_TRUE(back["umax"].is_number_unsigned()) << text;
  EXPECT_EQ(written(ordered(std::numeric_limits<double>::infinity())), "null\n");
}

TEST(YamlWriter, FlowLayoutIsOneLine) {
  EXPECT_EQ(written(ordered{{"a", 1}, {"b", {"x", "2", "a b"}}}, YamlLayout::Flow),
            "{a: 1, b: [x, \"2\", \"a b\"]}");
  EXPECT_EQ(written(ordered::array(), YamlLayout::Flow), "[]");
  EXPECT_EQ(written(ordered("word"), YamlLayout::Flow), "word");
}

TEST(YamlWriter, TextThatIsNotUtf8IsRefused) {
  auto text = yaml_text(ordered{{"k", "caf\xC3"}});
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, "cannot write YAML: a string is not UTF-8 text");
  EXPECT_FALSE(yaml_text(ordered{{"\xFF", 1}}));
}

}  // namespace
}  // namespace orch
