#include "util/yaml_reader.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "util/yaml_json.h"

namespace orch::detail {
namespace {

using Type = DocNode::Type;

DocNode read_ok(std::string_view text) {
  auto doc = read_yaml_doc(text);
  EXPECT_TRUE(doc) << text << ": " << (doc ? "" : doc.error().message);
  return doc ? *doc : DocNode{};
}

YamlSyntaxError read_bad(std::string_view text) {
  auto doc = read_yaml_doc(text);
  EXPECT_FALSE(doc) << text << " should not parse";
  return doc ? YamlSyntaxError{} : doc.error();
}

// The value of the first entry with this key.
const DocNode& at(const DocNode& map, std::string_view key) {
  for (const auto& [k, v] : map.entries)
    if (k.scalar == key) return v;
  ADD_FAILURE() << "no key " << key;
  static const DocNode none;
  return none;
}

TEST(YamlReader, ValuesAndLines) {
  DocNode root = read_ok(
      "# a comment\n"
      "name: x\n"
      "steps:\n"
      "  - id: a\n"
      "    run: [echo,\n"
      "      hi]\n"
      "  - {id: b,\n"
      "     deps: [a]}\n");
  ASSERT_EQ(root.type, Type::Map);
  EXPECT_EQ(root.line, 2);
  ASSERT_EQ(root.entries.size(), 2u);
  EXPECT_EQ(root.entries[0].key.line, 2);
  EXPECT_EQ(root.entries[0].value.line, 2);
  const DocNode& steps = at(root, "steps");
  ASSERT_EQ(steps.type, Type::Sequence);
  EXPECT_EQ(steps.line, 4) << "a block sequence starts at its first '-'";
  ASSERT_EQ(steps.items.size(), 2u);
  const DocNode& a = steps.items[0];
  EXPECT_EQ(a.line, 4);
  const DocNode& run = at(a, "run");
  EXPECT_EQ(run.line, 5);
  ASSERT_EQ(run.items.size(), 2u);
  EXPECT_EQ(run.items[0].line, 5);
  EXPECT_EQ(run.items[1].line, 6);
  EXPECT_EQ(run.items[1].scalar, "hi");
  const DocNode& b = steps.items[1];
  EXPECT_EQ(b.line, 7);
  EXPECT_EQ(b.entries[1].key.line, 8);
  EXPECT_EQ(at(b, "deps").items[0].scalar, "a");
  EXPECT_EQ(yaml_to_ordered_json(root).dump(),
            R"({"name":"x","steps":[{"id":"a","run":["echo","hi"]},{"id":"b","deps":["a"]}]})");
}

TEST(YamlReader, QuotedAndPlainScalars) {
  DocNode root =
      read_ok("a: 3\nb: '3'\nc: \"3\"\nd: !!str 3\ne: ! 3\nf: !!int \"3\"\nh: yes\n'k': 1\n");
  auto quoted = [&](std::string_view key) { return at(root, key).quoted; };
  EXPECT_FALSE(quoted("a"));
  EXPECT_TRUE(quoted("b"));
  EXPECT_TRUE(quoted("c"));
  EXPECT_TRUE(quoted("d")) << "!!str";
  EXPECT_TRUE(quoted("e")) << "the non-specific tag !";
  EXPECT_FALSE(quoted("f")) << "an explicit tag other than !!str decides, not the quotes";
  EXPECT_FALSE(root.entries[0].key.quoted);
  EXPECT_TRUE(root.entries.back().key.quoted);
  EXPECT_EQ(yaml_to_json(root).dump(), R"({"a":3,"b":"3","c":"3","d":"3","e":"3","f":3,"h":"yes","k":1})");
  // Other tags would be read as plain text without a word: they are refused.
  EXPECT_EQ(
      read_bad("a: 1\ng: !custom 3\n").message,
      "YAML tag '!custom' is not supported: orch reads strings, numbers, booleans, null, lists and mappings "
      "(!!str, !!int, !!float, !!bool, !!null, !!seq, !!map)");
  EXPECT_EQ(read_bad("a: 1\nb: !!binary aGk=\n").line, 2);
  EXPECT_EQ(read_bad("a: !!set {x}\n").line, 1);
  EXPECT_EQ(read_bad("a: !!null x\n").message, "a !!null value must be empty, ~ or null");
  EXPECT_TRUE(at(read_ok("a: !!null ~\nb: !!seq [1]\nc: !!map {x: 1}\n"), "a").is_null());
  DocNode esc = read_ok("a: 'it''s'\nb: \"\\t\\u00e9\\x41\\N\"\nc: plain # comment\nd: a#b\n");
  EXPECT_EQ(at(esc, "a").scalar, "it's");
  EXPECT_EQ(at(esc, "b").scalar,
            "\t\xC3\xA9"
            "A\xC2\x85");
  EXPECT_EQ(at(esc, "c").scalar, "plain");
  EXPECT_EQ(at(esc, "d").scalar, "a#b");
}

TEST(YamlReader, BlockScalarsAreStrings) {
  DocNode root = read_ok(
      "lit: |\n  one\n  two\n\nkeep: |+\n  x\n\nstrip: |-\n  y\nfold: >\n  a\n  b\n\n  c\nnum: |\n  5\nnext: "
      "1\n");
  const DocNode& lit = at(root, "lit");
  EXPECT_TRUE(lit.quoted);
  EXPECT_EQ(lit.scalar, "one\ntwo\n");
  EXPECT_EQ(lit.line, 1) << "a block scalar starts at its indicator";
  EXPECT_EQ(at(root, "keep").scalar, "x\n\n");
  EXPECT_EQ(at(root, "strip").scalar, "y");
  EXPECT_EQ(at(root, "fold").scalar, "a b\nc\n");
  EXPECT_TRUE(at(root, "fold").quoted);
  EXPECT_EQ(yaml_to_json(at(root, "num")), "5\n") << "never a number";
  EXPECT_EQ(root.entries.back().key.line, 17);
}

TEST(YamlReader, NullForms) {
  DocNode root = read_ok(
      "a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: nULL\ng: 'null'\nh: !!str\ni: &anchor\nj: \"\"\nk:\n  -\n  - "
      "x\n  -\n");
  for (const char* key : {"a", "b", "c", "d", "e", "i"}) {
    EXPECT_EQ(at(root, key).type, Type::Null) << key;
    EXPECT_EQ(at(root, key).scalar, "") << key;
  }
  EXPECT_EQ(at(root, "f").type, Type::Scalar);
  EXPECT_EQ(at(root, "g").type, Type::Scalar);
  EXPECT_TRUE(at(root, "g").quoted);
  EXPECT_EQ(at(root, "h").type, Type::Scalar) << "a tag makes an empty value an empty string";
  EXPECT_TRUE(at(root, "h").quoted);
  EXPECT_EQ(at(root, "j").type, Type::Scalar);
  EXPECT_EQ(at(root, "a").line, 1) << "an empty value is on its key's line";
  const DocNode& k = at(root, "k");
  ASSERT_EQ(k.items.size(), 3u);
  EXPECT_EQ(k.items[0].type, Type::Null);
  EXPECT_EQ(k.items[0].line, 12) << "an empty item is on its '-' line";
  EXPECT_EQ(k.items[2].line, 14);
  EXPECT_TRUE(yaml_to_json(at(root, "b")).is_null());
  DocNode key = read_ok("~: x\n");
  EXPECT_EQ(key.entries[0].key.type, Type::Null);
}

TEST(YamlReader, AnchorsAndAliases) {
  DocNode root = read_ok(
      "x-env: &env\n  A: b\nx-item: &item x\nsteps:\n  - env: *env\n    k: *item\n  - *env\n"
      "x-item: &item y\nlast: *item\n");
  const DocNode& steps = at(root, "steps");
  const DocNode& env = at(steps.items[0], "env");
  ASSERT_EQ(env.type, Type::Map);
  EXPECT_EQ(env.line, 5) << "a copy itself is where its alias is";
  EXPECT_EQ(env.entries[0].key.line, 2) << "what is inside a copy keeps the anchor's lines";
  EXPECT_EQ(at(env, "A").line, 2);
  EXPECT_EQ(at(steps.items[0], "k").line, 6);
  EXPECT_EQ(steps.items[1].line, 7);
  EXPECT_EQ(steps.items[1].entries[0].key.line, 2);
  EXPECT_EQ(at(env, "A").scalar, "b");
  EXPECT_EQ(at(steps.items[0], "k").scalar, "x");
  EXPECT_EQ(steps.items[1].entries.size(), 1u);
  EXPECT_EQ(root.entries.back().value.scalar, "y") << "a redefined anchor: the latest one counts";

  YamlSyntaxError unknown = read_bad("a: 1\nb:\n  - *nope\n");
  EXPECT_EQ(unknown.line, 3);
  EXPECT_EQ(unknown.message, "alias '*nope' has no anchor '&nope' before it");
  YamlSyntaxError recursive = read_bad("a: &loop\n  - *loop\n");
  EXPECT_EQ(recursive.line, 2);
  EXPECT_EQ(recursive.message, "alias '*loop' is inside the node it names");
}

// YAML's merge key: the merged mapping's keys that the mapping does not write
// itself are added with the lines they were written on; its own keys win, and
// in a list the earlier mapping wins.
TEST(YamlReader, MergeKeysAddTheKeysAMappingDoesNotWrite) {
  DocNode root = read_ok(
      "x-a: &a {timeout: 5s, attempts: 2}\n"
      "x-b: &b {timeout: 9s, sh: date}\n"
      "steps:\n"
      "  - id: one\n"
      "    <<: *a\n"
      "    attempts: 3\n"
      "  - id: two\n"
      "    <<: [*a, *b]\n");
  const DocNode& one = at(root, "steps").items[0];
  ASSERT_EQ(one.entries.size(), 3u);
  EXPECT_EQ(at(one, "attempts").scalar, "3") << "the mapping's own key wins";
  EXPECT_EQ(at(one, "timeout").scalar, "5s");
  EXPECT_EQ(at(one, "timeout").line, 1) << "a merged key keeps the line it was written on";
  const DocNode& two = at(root, "steps").items[1];
  ASSERT_EQ(two.entries.size(), 4u);
  EXPECT_EQ(at(two, "timeout").scalar, "5s") << "the first mapping of the list wins";
  EXPECT_EQ(at(two, "sh").scalar, "date");
  for (const DocEntry& e : two.entries) EXPECT_NE(e.key.scalar, "<<");
  // An inline mapping merges too; a quoted '<<' is an ordinary key.
  DocNode quoted = read_ok("a: &a {x: 1}\nb: {'<<': *a}\nc: {<<: {y: 2}, z: 3}\n");
  EXPECT_EQ(at(quoted, "b").entries[0].key.scalar, "<<");
  EXPECT_EQ(at(at(quoted, "c"), "y").scalar, "2");
  // A duplicate of the mapping's own key is still there for the loader to report,
  // and so is a key a merged mapping writes twice, even one the mapping writes.
  DocNode dup = read_ok("a: &a {x: 1}\nb: {<<: *a, y: 1, y: 2}\n");
  EXPECT_EQ(at(dup, "b").entries.size(), 3u);
  DocNode repeated = read_ok("a: &a {x: 1, x: 2}\nb: {<<: *a}\nc: {x: 0, <<: *a}\n");
  ASSERT_EQ(at(repeated, "b").entries.size(), 2u);
  EXPECT_EQ(at(repeated, "b").entries[1].key.line, 1);
  EXPECT_EQ(at(repeated, "c").entries.size(), 3u);
  // The merged keys take the place of the '<<' (the order a builtin:json keeps).
  DocNode order = read_ok("i: &i {a: 1, b: 2}\nj: {z: 0, <<: *i, y: 9}\n");
  std::vector<std::string> keys;
  for (const DocEntry& e : at(order, "j").entries) keys.push_back(e.key.scalar);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "b", "y"}));

  YamlSyntaxError scalar = read_bad("a: 1\nb:\n  <<: 5\n");
  EXPECT_EQ(scalar.line, 3);
  EXPECT_EQ(scalar.message,
            "a merge key '<<' takes a mapping or a list of mappings (<<: *defaults, <<: [*a, *b])");
  EXPECT_EQ(read_bad("a: &a {x: 1}\nb:\n  <<: [*a, 5]\n").line, 3);
  YamlSyntaxError twice = read_bad("a: &a {x: 1}\nb:\n  <<: *a\n  <<: *a\n");
  EXPECT_EQ(twice.line, 4);
  EXPECT_NE(twice.message.find("merge key '<<' written twice in one mapping (first at line 3)"),
            std::string::npos)
      << twice.message;

  // Given a list for them, those problems do not stop the reading: each is
  // listed, its '<<' left out, and the rest of the document read.
  std::vector<YamlSyntaxError> problems;
  auto doc = read_yaml_doc("a: &a {x: 1}\nb:\n  <<: 5\n  k: v\nc:\n  <<: *a\n  <<: *a\n  y: 2\n", {},
                           YamlDocuments::First, &problems);
  ASSERT_TRUE(doc) << doc.error().message;
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].line, 3);
  EXPECT_NE(problems[0].message.find("a merge key '<<' takes a mapping"), std::string::npos);
  EXPECT_EQ(problems[1].line, 7);
  EXPECT_NE(problems[1].message.find("written twice in one mapping (first at line 6)"), std::string::npos);
  std::vector<std::string> b_keys, c_keys;
  for (const DocEntry& e : at(*doc, "b").entries) b_keys.push_back(e.key.scalar);
  for (const DocEntry& e : at(*doc, "c").entries) c_keys.push_back(e.key.scalar);
  EXPECT_EQ(b_keys, (std::vector<std::string>{"k"}));
  EXPECT_EQ(c_keys, (std::vector<std::string>{"x", "y"}));
}

TEST(YamlReader, AliasExpansionIsCapped) {
  // "Billion laughs": ten levels of ten aliases each stand for 10^10 nodes.
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += (j ? ", " : "") + prev;
    text += "]\n";
  }
  YamlSyntaxError e = read_bad(text);
  EXPECT_NE(e.message.find("aliases expand to more than"), std::string::npos) << e.message;
  EXPECT_GE(e.line, 5);
  EXPECT_LE(e.line, 7);
  // Anchors copy their node too: 300 anchors nested around a list of 10,000
  // items would copy 3 million nodes with no alias at all.
  std::string nested = "x: ";
  for (int i = 0; i < 300; ++i) nested += "&a" + std::to_string(i) + " [";
  for (int i = 0; i < 10000; ++i) nested += i ? ", 1" : "1";
  nested += std::string(300, ']') + "\n";
  YamlSyntaxError anchors = read_bad(nested);
  EXPECT_NE(anchors.message.find("anchors and aliases copy more than"), std::string::npos) << anchors.message;
  // Plenty of ordinary reuse stays well inside the cap.
  std::string reuse = "x-post: &post [exit_zero, {result_contains: ok}]\nsteps:\n";
  for (int i = 0; i < 5000; ++i) reuse += "  - {id: s" + std::to_string(i) + ", post: *post}\n";
  DocNode root = read_ok(reuse);
  EXPECT_EQ(at(root, "steps").items.size(), 5000u);
}

TEST(YamlReader, DepthIsLimited) {
  std::string deep(kMaxYamlDepth + 1, '[');
  deep += std::string(kMaxYamlDepth + 1, ']');
  EXPECT_EQ(read_bad(deep).message, "nesting deeper than 500 levels");
  std::string ok(kMaxYamlDepth, '[');
  ok += std::string(kMaxYamlDepth, ']');
  read_ok(ok);
  // Nor can an alias carry nesting past the limit.
  std::string half(300, '[');
  half += std::string(300, ']');
  std::string aliased =
      "a: &deep " + half + "\nb: " + std::string(250, '[') + "*deep" + std::string(250, ']') + "\n";
  YamlSyntaxError e = read_bad(aliased);
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.message, "alias '*deep' nests deeper than 500 levels");
  // A million levels cost no stack.
  EXPECT_EQ(read_bad(std::string(1'000'000, '[')).line, 1);
}

TEST(YamlReader, DuplicateKeysAreKept) {
  DocNode root = read_ok("b: 1\na: 2\nb: 3\n");
  ASSERT_EQ(root.entries.size(), 3u) << "the loader reports duplicates";
  EXPECT_EQ(root.entries[0].key.scalar, "b");
  EXPECT_EQ(root.entries[1].key.scalar, "a");
  EXPECT_EQ(root.entries[2].value.scalar, "3");
  EXPECT_EQ(root.entries[2].key.line, 3);
}

TEST(YamlReader, StreamsTheFirstStepList) {
  std::vector<std::pair<StreamedList, DocNode>> got;
  auto sink = [&](StreamedList list, DocNode& item) { got.emplace_back(list, std::move(item)); };
  auto doc =
      read_yaml_doc("steps: 1\nsteps:\n  - id: &name a\n  - 2\n  - *name\nsteps: [3]\nx: *name\n", sink);
  ASSERT_TRUE(doc) << doc.error().message;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].first, StreamedList::Steps);
  EXPECT_EQ(got[0].second.line, 3);
  EXPECT_EQ(got[0].second.entries[0].value.scalar, "a");
  EXPECT_EQ(got[1].second.scalar, "2");
  EXPECT_EQ(got[2].second.scalar, "a") << "anchors inside streamed items still count";
  EXPECT_TRUE(doc->entries[1].value.streamed);
  EXPECT_TRUE(doc->entries[1].value.items.empty());
  EXPECT_EQ(doc->entries[1].value.line, 3);
  EXPECT_EQ(doc->entries[2].value.items.size(), 1u) << "only the first step list is streamed";
  EXPECT_EQ(doc->entries[3].value.scalar, "a");

  got.clear();
  ASSERT_TRUE(read_yaml_doc("- [1]\n- x\n", sink));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, StreamedList::TopLevel);
  EXPECT_EQ(got[0].second.items.size(), 1u);
  EXPECT_EQ(got[1].second.line, 2);

  // An anchored step list is kept whole, so that its aliases can copy it.
  got.clear();
  doc = read_yaml_doc("steps: &all\n  - id: a\ncopy: *all\n", sink);
  ASSERT_TRUE(doc);
  EXPECT_TRUE(got.empty());
  EXPECT_FALSE(doc->entries[0].value.streamed);
  EXPECT_EQ(doc->entries[1].value.items.size(), 1u);

  // Nested lists and a list as a key are not step lists.
  got.clear();
  ASSERT_TRUE(read_yaml_doc("a:\n  steps: [1]\n[steps]: [2]\n", sink));
  EXPECT_TRUE(got.empty());
}

// A step list of kYamlRelayMinBytes or more is parsed on a second thread
// (util/item_relay.h): the sink still gets every item, in order, on this thread,
// with its lines; what follows the list, errors and problems are as without it.
std::string big_step_list(int steps, std::string_view after = "") {
  std::string text = "name: big\nsteps:\n";
  for (int i = 0; i < steps; ++i) text += "  - id: s" + std::to_string(i) + "\n    run: [\"true\"]\n";
  text += after;
  return text;
}

TEST(YamlReader, ALargeStepListIsParsedBesideItsReader) {
  const int steps = 20000;
  std::string text = big_step_list(steps, "defaults: {<<: 5, attempts: 2}\n");
  ASSERT_GE(text.size(), kYamlRelayMinBytes);
  const auto caller = std::this_thread::get_id();
  std::vector<int> lines;
  std::vector<std::string> ids;
  bool on_caller = true;
  auto sink = [&](StreamedList list, DocNode& item) {
    on_caller = on_caller && std::this_thread::get_id() == caller && list == StreamedList::Steps;
    lines.push_back(item.line);
    ids.push_back(item.entries.at(0).value.scalar);
  };
  std::vector<YamlSyntaxError> problems;
  auto doc = read_yaml_doc(text, sink, YamlDocuments::OnlyOne, &problems);
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_TRUE(on_caller);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i) {
    ASSERT_EQ(ids[static_cast<std::size_t>(i)], "s" + std::to_string(i));
    ASSERT_EQ(lines[static_cast<std::size_t>(i)], 3 + 2 * i);
  }
  EXPECT_TRUE(doc->entries[1].value.streamed);
  ASSERT_EQ(doc->entries.size(), 3u);
  EXPECT_EQ(doc->entries[2].value.entries.size(), 1u) << "the misused merge key is left out";
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 3 + 2 * steps);

  // A syntax error after the list: the items before it were given, the error has its line.
  ids.clear();
  lines.clear();
  auto bad = read_yaml_doc(big_step_list(steps, "x: [\n"), sink, YamlDocuments::OnlyOne);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().line, 3 + 2 * steps + 1);
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(steps));

  // A limit still holds: nesting too deep inside one of the steps.
  std::string deep = big_step_list(steps / 2) + "  - " + std::string(kMaxYamlDepth + 1, '[') + "\n" +
                     big_step_list(steps / 2).substr(std::string_view("name: big\nsteps:\n").size());
  auto too_deep = read_yaml_doc(deep, sink);
  ASSERT_FALSE(too_deep);
  EXPECT_NE(too_deep.error().message.find("nesting deeper than"), std::string::npos)
      << too_deep.error().message;
  EXPECT_EQ(too_deep.error().line, 3 + 2 * (steps / 2));

  // A sink that throws stops the parse; its exception reaches the caller.
  int taken = 0;
  auto throwing = [&](StreamedList, DocNode&) {
    if (++taken == 1000) throw std::runtime_error("enough");
  };
  EXPECT_THROW((void)read_yaml_doc(text, throwing), std::runtime_error);
  EXPECT_EQ(taken, 1000);
}

TEST(YamlReader, SyntaxErrorLines) {
  // tests/bad-plans/01-yaml-syntax.yaml: the list is found unclosed at the next item.
  YamlSyntaxError flow = read_bad("name: broken\nsteps:\n  - id: a\n    run: [echo, \"hi\"\n  - id: b\n");
  EXPECT_EQ(flow.line, 5);
  EXPECT_EQ(flow.message,
            "did not find expected ',' or ']' (while parsing a flow sequence that starts on line 4)");
  YamlSyntaxError colon = read_bad("steps:\n  - id: a\n    sh echo\n    run: x\n");
  EXPECT_EQ(colon.line, 3) << "the line missing its ':'";
  EXPECT_EQ(colon.message, "could not find expected ':' (a line in a mapping must be 'key: value')");
  YamlSyntaxError quote = read_bad("a: 1\nb: \"open\nc: 2\n");
  EXPECT_EQ(quote.line, 2) << "where the string starts";
  EXPECT_EQ(quote.message, "unterminated quoted string (no closing quote before the end of the text)");
  YamlSyntaxError indent = read_bad("a:\n  b: 1\n c: 2\n");
  EXPECT_EQ(indent.line, 3);
  YamlSyntaxError tab = read_bad("steps:\n\t- id: a\n");
  EXPECT_EQ(tab.line, 2);
  EXPECT_EQ(tab.message,
            "found character that cannot start any token (a tab: YAML indents with spaces only)");
  YamlSyntaxError at_sign = read_bad("a: @x\n");
  EXPECT_EQ(at_sign.message,
            "found character that cannot start any token ('@' is reserved: quote a value that "
            "starts with it)");
}

TEST(YamlReader, InvalidTextIsAnErrorWithALine) {
  using namespace std::string_view_literals;
  YamlSyntaxError utf8 = read_bad("a: 1\nb: 2\nc: caf\xE9 au lait\n");  // Latin-1
  EXPECT_EQ(utf8.line, 3);
  EXPECT_EQ(utf8.message, "invalid trailing UTF-8 octet 0x20 (YAML text must be UTF-8)");
  EXPECT_EQ(read_bad("a: caf\xC3").message, "incomplete UTF-8 octet sequence (YAML text must be UTF-8)");
  EXPECT_EQ(read_bad("a: \xFF\n").message, "invalid leading UTF-8 octet 0xff (YAML text must be UTF-8)");
  YamlSyntaxError control = read_bad("a: 1\nb: x\x01y\n");
  EXPECT_EQ(control.line, 2);
  EXPECT_EQ(control.message,
            "control character U+0001 is not allowed (write it as an escape in a double-quoted string)");
  EXPECT_EQ(read_bad("a: 1\0b"sv).message,
            "control character U+0000 is not allowed (write it as an escape in a double-quoted string)");
}

TEST(YamlReader, EmptyAndMultipleDocuments) {
  for (std::string_view text : {"", "# only a comment\n", "\n\n"}) {
    DocNode root = read_ok(text);
    EXPECT_EQ(root.type, Type::Null);
    EXPECT_EQ(root.line, 0);
  }
  EXPECT_EQ(read_ok("---\n").type, Type::Null);
  DocNode first = read_ok("a: 1\n---\nb: [unclosed\n");
  ASSERT_EQ(first.entries.size(), 1u) << "only the first document is read";
  EXPECT_EQ(first.entries[0].key.scalar, "a");
  EXPECT_EQ(read_ok("a: 1\n...\nb: 2\n").entries.size(), 1u);
  EXPECT_EQ(read_bad("a: 1\n]\n").line, 2) << "text after the document that starts no new one";
}

// A plan file holds one document: the reader says where a second one starts,
// or where text follows "...", instead of ignoring it.
TEST(YamlReader, OnlyOneDocumentRefusesWhatFollowsTheFirst) {
  auto only_one = [](std::string_view text) { return read_yaml_doc(text, {}, YamlDocuments::OnlyOne); };
  for (std::string_view text :
       {"a: 1\n", "---\na: 1\n", "a: 1\n...\n", "a: 1\n...\n# done\n", "---\na: 1\n...\n"})
    EXPECT_TRUE(only_one(text)) << text;
  auto second = only_one("a: 1\n---\nb: 2\n");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().line, 2);
  EXPECT_EQ(second.error().message, "a second YAML document starts here: the file holds exactly one");
  auto empty_second = only_one("---\na: 1\n---\n");
  ASSERT_FALSE(empty_second);
  EXPECT_EQ(empty_second.error().line, 3);
  auto broken_second = only_one("a: 1\n---\nb: [unclosed\n");
  ASSERT_FALSE(broken_second);
  EXPECT_EQ(broken_second.error().line, 2) << "the second document is refused before it is parsed";
  for (std::string_view text : {"a: 1\n...\nb: 2\n", "a: 1\n...\ngarbage: [\n"}) {
    auto after_end = only_one(text);
    ASSERT_FALSE(after_end) << text;
    EXPECT_EQ(after_end.error().line, 3) << text;
    EXPECT_EQ(after_end.error().message,
              "text after the document's end ('...' on line 2): the file holds exactly one YAML document");
  }
  auto after_second_end = only_one("a: 1\n...\n---\nb: 2\n");
  ASSERT_FALSE(after_second_end);
  EXPECT_EQ(after_second_end.error().line, 3);
  auto no_new_document = only_one("a: 1\n]\n");
  ASSERT_FALSE(no_new_document);
  EXPECT_EQ(no_new_document.error().line, 2);
}

TEST(YamlReader, LinesCountNewlinesOnly) {
  // CRLF is one line break; libyaml's other breaks (NEL, U+2028, a lone CR) are
  // not line breaks in editors or the JSON reader.
  DocNode crlf = read_ok("a: 1\r\nb:\r\n  - x\r\n");
  EXPECT_EQ(at(crlf, "b").items[0].line, 3);
  DocNode other = read_ok("a: \"x\xC2\x85y\"\nb: \"p\xE2\x80\xA8q\"\nc: \"r\rs\"\nd: 1\n");
  EXPECT_EQ(other.entries[1].key.line, 2);
  EXPECT_EQ(other.entries[2].key.line, 3);
  EXPECT_EQ(other.entries[3].key.line, 4);
  EXPECT_EQ(read_bad("a: \"x\xE2\x80\xA8y\"\nb: [\n").line, 3);
}

}  // namespace
}  // namespace orch::detail
