#include "plan/json_reader.h"

#include <gtest/gtest.h>

#include <string_view>
#include <utility>
#include <vector>

#include "util/yaml_json.h"

namespace orch::detail {
namespace {

using Type = DocNode::Type;

DocNode json_read_ok(std::string_view text) {
  auto doc = read_json_doc(text);
  EXPECT_TRUE(doc) << text << ": " << (doc ? "" : doc.error().message);
  return doc ? *doc : DocNode{};
}

JsonSyntaxError json_read_bad(std::string_view text) {
  auto doc = read_json_doc(text);
  EXPECT_FALSE(doc) << text << " should not parse";
  return doc ? JsonSyntaxError{} : doc.error();
}

TEST(JsonReader, ValuesAndLines) {
  DocNode root =
      json_read_ok("{\n  \"a\": [1, -2.5e3, true, false, null],\n  \"b\": {\"c\": \"d\"},\n  \"a\": 0\n}");
  ASSERT_EQ(root.type, Type::Map);
  EXPECT_EQ(root.line, 1);
  ASSERT_EQ(root.entries.size(), 3u) << "duplicates are kept for the loader to report";
  const auto& [a_key, a] = root.entries[0];
  EXPECT_EQ(a_key.scalar, "a");
  EXPECT_TRUE(a_key.quoted);
  EXPECT_EQ(a_key.line, 2);
  ASSERT_EQ(a.type, Type::Sequence);
  ASSERT_EQ(a.items.size(), 5u);
  EXPECT_EQ(a.items[0].scalar, "1");
  EXPECT_FALSE(a.items[0].quoted);
  EXPECT_EQ(a.items[1].scalar, "-2.5e3");
  EXPECT_EQ(a.items[2].scalar, "true");
  EXPECT_EQ(a.items[3].scalar, "false");
  EXPECT_EQ(a.items[4].type, Type::Null);
  EXPECT_EQ(root.entries[1].value.line, 3);
  EXPECT_EQ(root.entries[1].value.entries[0].value.scalar, "d");
  EXPECT_EQ(root.entries[2].key.line, 4);
  EXPECT_EQ(yaml_to_ordered_json(root).dump(), R"({"a":[1,-2500.0,true,false,null],"b":{"c":"d"}})");
}

TEST(JsonReader, StringEscapes) {
  DocNode s = json_read_ok(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \u20ac \ud83d\ude00")");
  EXPECT_TRUE(s.quoted);
  EXPECT_EQ(s.scalar, "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(json_read_ok(R"("")").scalar, "");
  EXPECT_EQ(json_read_ok(R"("123")").scalar, "123");
  EXPECT_TRUE(json_read_ok(R"("123")").quoted) << "a JSON string is never a number";
  // A plan is UTF-8 text, in JSON as in YAML: other bytes are refused, not passed on.
  EXPECT_EQ(json_read_bad("\"raw \xff bytes\"").message,
            "a string holds bytes that are not UTF-8 (a plan must be UTF-8 text)");
  EXPECT_EQ(json_read_ok("\"caf\xC3\xA9\"").scalar, "caf\xC3\xA9");
}

TEST(JsonReader, Errors) {
  EXPECT_EQ(json_read_bad("{\"a\": 1,}").message, "expected a key in double quotes, found '}'");
  EXPECT_EQ(json_read_bad("{\"a\" 1}").message, "expected ':' after the key \"a\", found '1'");
  EXPECT_EQ(json_read_bad("[1 2]").message, "expected ',' or ']' after an array item, found '2'");
  EXPECT_EQ(json_read_bad("{\"a\": 1 \"b\": 2}").message,
            "expected ',' or '}' after an object member, found '\"'");
  EXPECT_EQ(json_read_bad("").message, "expected a value, found the end of the text");
  EXPECT_EQ(json_read_bad("[tru]").message, "expected a value, found 't'");
  EXPECT_EQ(json_read_bad("{} x").message, "unexpected text after the JSON value");
  EXPECT_EQ(json_read_bad("01").message, "numbers cannot start with 0");
  EXPECT_EQ(json_read_bad("1.").message, "expected a digit after '.', found the end of the text");
  EXPECT_EQ(json_read_bad("1e").message, "expected a digit in the exponent, found the end of the text");
  EXPECT_EQ(json_read_bad("-").message, "expected a digit, found the end of the text");
  EXPECT_EQ(json_read_bad("\"abc").message, "unterminated string");
  EXPECT_NE(json_read_bad("\"a\nb\"").message.find("unterminated string"), std::string::npos);
  EXPECT_EQ(json_read_bad("\"\\x\"").message, "unknown escape '\\x' in a string");
  EXPECT_EQ(json_read_bad("\"\\u12zz\"").message, "bad hex digit in a \\u escape");
  EXPECT_EQ(json_read_bad("\"\\u12\"").message, "incomplete \\u escape");
  EXPECT_EQ(json_read_bad("\"\\ud800\"").message, "a \\u surrogate pair is missing its second half");
  EXPECT_EQ(json_read_bad("\"\\udc00\"").message, "a lone \\u surrogate in a string");
  EXPECT_EQ(json_read_bad("'single'").message, "expected a value, found '''");
}

TEST(JsonReader, ErrorLines) {
  EXPECT_EQ(json_read_bad("{\n\n  \"a\": ,\n}").line, 3);
  EXPECT_EQ(json_read_bad("[\n1,\n2,\n").line, 4);
}

TEST(JsonReader, DepthIsLimited) {
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  EXPECT_NE(json_read_bad(deep).message.find("nesting deeper than"), std::string::npos);
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  json_read_ok(ok);
}

TEST(JsonReader, NulBytesAndSurrogateEscapes) {
  using namespace std::string_view_literals;
  EXPECT_EQ(json_read_bad("{}\0"sv).message, "unexpected text after the JSON value");
  EXPECT_EQ(json_read_bad("\"a\0b\""sv).message, "a control character inside a string must be escaped");
  EXPECT_EQ(json_read_ok(R"("\\udc00")").scalar, "\\udc00") << "an escaped backslash, not an escape";
  EXPECT_EQ(json_read_bad("\"\xED\xB0\x80\"").message,
            "a string holds bytes that are not UTF-8 (a plan must be UTF-8 text)")
      << "an encoded surrogate is not UTF-8";
  EXPECT_EQ(json_read_bad(R"({"k\udc00": 1})").message, "a lone \\u surrogate in a string");
}

TEST(JsonReader, StreamsTheFirstStepList) {
  std::vector<std::pair<StreamedList, DocNode>> got;
  auto sink = [&](StreamedList list, DocNode& item) { got.emplace_back(list, std::move(item)); };
  auto doc = read_json_doc("{\"steps\": 1,\n \"steps\": [\n {\"id\": \"a\"},\n 2],\n \"steps\": [3]}", sink);
  ASSERT_TRUE(doc);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, StreamedList::Steps);
  EXPECT_EQ(got[0].second.line, 3);
  EXPECT_EQ(got[0].second.entries[0].value.scalar, "a");
  EXPECT_EQ(got[1].second.scalar, "2");
  EXPECT_TRUE(doc->entries[1].value.streamed);
  EXPECT_TRUE(doc->entries[1].value.items.empty());
  EXPECT_EQ(doc->entries[2].value.items.size(), 1u) << "only the first step list is streamed";
  got.clear();
  ASSERT_TRUE(read_json_doc("[[1], \"x\"]", sink));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, StreamedList::TopLevel);
  EXPECT_EQ(got[0].second.items.size(), 1u);
}

}  // namespace
}  // namespace orch::detail
