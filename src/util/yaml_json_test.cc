#include "util/yaml_json.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace orch {
namespace {

nlohmann::json convert(const std::string& yaml) {
  auto j = read_yaml_json(yaml);
  EXPECT_TRUE(j) << yaml << ": " << (j ? "" : j.error().message);
  return j ? *j : nlohmann::json();
}

detail::YamlSyntaxError refused(const std::string& yaml) {
  auto j = read_yaml_json(yaml);
  EXPECT_FALSE(j) << yaml << " gave " << (j ? j->dump() : "");
  return j ? detail::YamlSyntaxError{} : j.error();
}

TEST(YamlJson, PlainScalarsBecomeTypedValues) {
  auto j = convert(R"(
int: 42
neg: -7
plus: +3
hex: 0x1F
oct: 0o17
float: 1.5
exp: -2e3
dot: .5
t: true
f: False
n: null
tilde: ~
empty:
word: hello world
)");
  EXPECT_EQ(j["int"], 42);
  EXPECT_TRUE(j["int"].is_number_integer());
  EXPECT_EQ(j["neg"], -7);
  EXPECT_EQ(j["plus"], 3);
  EXPECT_EQ(j["hex"], 31);
  EXPECT_EQ(j["oct"], 15);
  EXPECT_DOUBLE_EQ(j["float"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["exp"].get<double>(), -2000.0);
  EXPECT_DOUBLE_EQ(j["dot"].get<double>(), 0.5);
  EXPECT_EQ(j["t"], true);
  EXPECT_EQ(j["f"], false);
  EXPECT_TRUE(j["n"].is_null());
  EXPECT_TRUE(j["tilde"].is_null());
  EXPECT_TRUE(j["empty"].is_null());
  EXPECT_EQ(j["word"], "hello world");
}

TEST(YamlJson, QuotedScalarsStayStrings) {
  auto j = convert(R"(
a: "42"
b: 'true'
c: "null"
d: ""
e: !!str 7
)");
  EXPECT_EQ(j["a"], "42");
  EXPECT_EQ(j["b"], "true");
  EXPECT_EQ(j["c"], "null");
  EXPECT_EQ(j["d"], "");
  EXPECT_EQ(j["e"], "7");
}

TEST(YamlJson, Yaml11WordsAndOddNumbersStayStrings) {
  auto j = convert(R"(
yes: yes
off: off
version: 1.2.3
inf: .inf
time: 12:30
octal_like: 0755
bigneg: -0x10
)");
  EXPECT_EQ(j["yes"], "yes");
  EXPECT_EQ(j["off"], "off");
  EXPECT_EQ(j["version"], "1.2.3");
  EXPECT_EQ(j["inf"], ".inf");
  EXPECT_EQ(j["time"], "12:30");
  EXPECT_EQ(j["octal_like"], 755);  // YAML 1.2: a leading zero is still decimal
  EXPECT_EQ(j["bigneg"], "-0x10");
}

TEST(YamlJson, BigIntegers) {
  auto j = convert("max: 9223372036854775807\nmin: -9223372036854775808\nu: 18446744073709551615\nhuge: 1e400x\n");
  EXPECT_EQ(j["max"].get<std::int64_t>(), INT64_MAX);
  EXPECT_EQ(j["min"].get<std::int64_t>(), INT64_MIN);
  EXPECT_EQ(j["u"].get<std::uint64_t>(), UINT64_MAX);
  EXPECT_EQ(j["huge"], "1e400x");
  auto bigger = convert("x: 123456789012345678901234567890\n");
  EXPECT_TRUE(bigger["x"].is_number_float());
}

TEST(YamlJson, NumberNotKeptSaysWhenJsonWouldChangeAValue) {
  // Kept: integers up to 64 bits, and decimals a double gives back digit for digit.
  for (const char* kept : {"0", "-9223372036854775808", "18446744073709551615", "0.1", "-2.5e-3", "1e22",
                           "1.0", "+3.25", ".5", "10000000000000000000000", "0.30000000000000004", "abc",
                           "1e400x", ".infinity", "0x1F", "0.0e99999999999999999999", "-0"})
    EXPECT_EQ(number_not_kept(kept), std::nullopt) << kept;
  // Rounded: more digits than a double keeps.
  auto big = number_not_kept("123456789012345678901234567890");
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(*big, "has more digits than a number keeps (it would be read as 1.2345678901234568e+29)");
  auto pi = number_not_kept("3.14159265358979323846");
  ASSERT_TRUE(pi.has_value());
  EXPECT_NE(pi->find("3.141592653589793)"), std::string::npos) << *pi;
  EXPECT_TRUE(number_not_kept("0.1000000000000000000001").has_value());
  // What counts is how a placeholder renders it: 1e23 is the double 9.999999999999999e+22.
  EXPECT_EQ(number_not_kept("1e23"),
            "has more digits than a number keeps (it would be read as 9.999999999999999e+22)");
  // 2^64 is a double, but one that reads 1.8446744073709552e+19: the digits change.
  EXPECT_TRUE(number_not_kept("18446744073709551616").has_value());
  // Out of a double's range, and YAML's special numbers: JSON has none of them.
  EXPECT_EQ(number_not_kept("1e999"), "is too large for a number");
  EXPECT_EQ(number_not_kept("-1e999"), "is too large for a number");
  EXPECT_EQ(number_not_kept("1e-400"), "is too close to zero for a number");
  for (const char* inf : {".inf", "-.Inf", "+.INF"})
    EXPECT_EQ(number_not_kept(inf), "is YAML's infinity, and JSON has no such number") << inf;
  for (const char* nan : {".nan", ".NaN", ".NAN"})
    EXPECT_EQ(number_not_kept(nan), "is YAML's not-a-number, and JSON has no such number") << nan;
  EXPECT_EQ(number_not_kept("-.nan"), std::nullopt);  // not YAML's nan: a string
}

TEST(YamlJson, SequencesMappingsAndAliases) {
  auto j = convert(R"(
base: &b {x: 1, y: [a, 2]}
copy: *b
list:
  - 1
  - "two"
  - {k: v}
)");
  EXPECT_EQ(j["base"], j["copy"]);
  EXPECT_EQ(j["base"]["y"], nlohmann::json::parse(R"(["a", 2])"));
  EXPECT_EQ(j["list"], nlohmann::json::parse(R"([1, "two", {"k": "v"}])"));
}

TEST(YamlJson, MergeKeysAddTheKeysAMappingDoesNotWrite) {
  auto j = convert(R"(
a: &a {x: 1, y: 1}
b: &b {y: 2, z: 2}
one: {<<: *a, x: 9}
two: {<<: [*a, *b]}
quoted: {'<<': *a}
)");
  EXPECT_EQ(j["one"], nlohmann::json::parse(R"({"x": 9, "y": 1})"));
  EXPECT_EQ(j["two"], nlohmann::json::parse(R"({"x": 1, "y": 1, "z": 2})"));
  EXPECT_EQ(j["quoted"], nlohmann::json::parse(R"({"<<": {"x": 1, "y": 1}})"));
  const auto bad = refused("a: 1\nb:\n  <<: 5\n");
  EXPECT_EQ(bad.line, 3);
  EXPECT_EQ(bad.message,
            "a merge key '<<' takes a mapping or a list of mappings (<<: *defaults, <<: [*a, *b])");
  // A merged key the mapping also writes is the mapping's; both lists' keys are kept in order.
  auto ordered = detail::read_yaml_doc("d: &d {k: 1, m: 2}\nx:\n  k: 0\n  <<: *d\n  z: 3\n");
  ASSERT_TRUE(ordered);
  EXPECT_EQ(yaml_to_ordered_json(ordered->entries[1].value).dump(), R"({"k":0,"m":2,"z":3})");
}

// An alias inside the node it names is refused at its line, and aliases of
// aliases ("billion laughs") stop at the reader's limit instead of running out
// of memory.
TEST(YamlJson, ACyclicAliasOrAnAliasBombIsRefused) {
  struct Cyclic {
    const char* text;
    int line;
    const char* message;
  };
  for (const Cyclic& c : {Cyclic{"a: &a\n  b: *a\n", 2, "alias '*a' is inside the node it names"},
                          Cyclic{"a: &a {x: 1, <<: *a}\n", 1, "alias '*a' is inside the node it names"},
                          Cyclic{"- &s [1, *s]\n", 1, "alias '*s' is inside the node it names"}}) {
    const auto e = refused(c.text);
    EXPECT_EQ(e.line, c.line) << c.text;
    EXPECT_EQ(e.message, c.message) << c.text;
  }
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    bomb += fmt::format("l{}: &l{} [", i, i);
    for (int j = 0; j < 10; ++j) bomb += fmt::format("{}*l{}", j ? ", " : "", i - 1);
    bomb += "]\n";
  }
  const auto e = refused(bomb);
  EXPECT_EQ(e.line, 6);
  EXPECT_EQ(e.message, fmt::format("aliases expand to more than {} nodes in all (at alias '*l4')",
                                   detail::max_alias_nodes(bomb.size())));
  // Shared, not cyclic: the same anchor twice side by side is fine.
  auto ok = convert("a: &a {x: 1}\nb: [*a, *a]\n");
  EXPECT_EQ(ok["b"][1]["x"], 1);
}

TEST(YamlJson, KeysAreAlwaysStrings) {
  auto j = convert("1: one\ntrue: yes\nnull: z\n0x10: hex\n\"q\": quoted\n");
  EXPECT_EQ(j["1"], "one");
  EXPECT_EQ(j["true"], "yes");
  EXPECT_EQ(j["null"], "z");
  EXPECT_EQ(j["0x10"], "hex");  // as written, not as the number it reads as
  EXPECT_EQ(j["q"], "quoted");
  EXPECT_EQ(convert("~: tilde\n"), nlohmann::json::parse(R"({"null": "tilde"})"));
  // A key that is not a scalar is written as its YAML text.
  auto complex = convert("? [a, \"1\", 2]\n: list\n? {k: v}\n: map\n");
  EXPECT_EQ(complex, nlohmann::json::parse(R"({"[a, \"1\", 2]": "list", "{k: v}": "map"})"))
      << complex.dump();
}

// A key written twice is refused with its line (JSON would keep one value and
// drop the other without a word); a tree converted on its own keeps the first.
TEST(YamlJson, AKeyWrittenTwiceIsRefusedWithItsLine) {
  auto e = refused("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n");
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.message, "key 'c' is written twice in one mapping (first at line 3)");
  e = refused("1: a\n\"1\": b\n");  // one JSON key
  EXPECT_EQ(e.line, 2);
  // The first in the text is the one named, an inner one included.
  e = refused("x:\n  y: 1\n  y: 2\nx: 3\n");
  EXPECT_EQ(e.line, 3);
  auto doc = detail::read_yaml_doc("k: first\nk: second\n");
  ASSERT_TRUE(doc);
  EXPECT_EQ(yaml_to_json(*doc)["k"], "first");
  ASSERT_TRUE(duplicate_key(*doc));
  EXPECT_EQ(duplicate_key(*doc)->line, 2);
}

// Every error is a value with the line to fix: syntax, tabs, control
// characters, tags orch does not read, bytes that are not UTF-8.
TEST(YamlJson, ErrorsNameTheirLine) {
  struct Bad {
    const char* text;
    int line;
    const char* message;
  };
  for (const Bad& b : {
           Bad{"a: 1\nb: [1, 2\nc: 3\n", 3,
               "did not find expected ',' or ']' (while parsing a flow sequence that "
               "starts on line 2)"},
           Bad{"a: 1\nb:\n\t- x\n", 3,
               "found character that cannot start any token (a tab: YAML indents with spaces only)"},
           Bad{"a: 1\nb: x\x07y\n", 2,
               "control character U+0007 is not allowed (write it as an escape in a double-quoted string)"},
           Bad{"a: 1\nb: \"open\nc: 3\n", 2,
               "unterminated quoted string (no closing quote before the end of the text)"},
           Bad{"a: 1\nb: !!binary aGk=\n", 2,
               "YAML tag '!!binary' is not supported: orch reads strings, numbers, booleans, null, lists and "
               "mappings (!!str, !!int, !!float, !!bool, !!null, !!seq, !!map)"},
           Bad{"a: 1\nb: \xFF\n", 2, "invalid leading UTF-8 octet 0xff (YAML text must be UTF-8)"},
           Bad{"a: *nowhere\n", 1, "alias '*nowhere' has no anchor '&nowhere' before it"},
       }) {
    const auto e = refused(b.text);
    EXPECT_EQ(e.line, b.line) << b.text;
    EXPECT_EQ(e.message, b.message) << b.text;
  }
  // A tab inside a value, and escapes in a double-quoted string, are text.
  EXPECT_EQ(convert("a: x\ty\nb: \"\\t\\x07\"\n"),
            nlohmann::json::parse(R"({"a": "x\ty", "b": "\t\u0007"})"));
}

TEST(YamlJson, OrderedKeepsTheDocumentsOrder) {
  auto doc = detail::read_yaml_doc("z: 1\na: 2\nm: [3]\n");
  ASSERT_TRUE(doc);
  EXPECT_EQ(yaml_to_ordered_json(*doc).dump(), R"({"z":1,"a":2,"m":[3]})");
  EXPECT_EQ(yaml_to_json(*doc).dump(), R"({"a":2,"m":[3],"z":1})");
}

TEST(YamlJson, JsonIsYaml) {
  auto j = convert(R"({"a": [1, 2.5, "s", null, true], "b": {}})");
  EXPECT_EQ(j, nlohmann::json::parse(R"({"a": [1, 2.5, "s", null, true], "b": {}})"));
}

TEST(YamlJson, EmptyDocumentIsNull) {
  EXPECT_TRUE(convert("").is_null());
  EXPECT_TRUE(convert("# only a comment\n").is_null());
}

// As before: the first document is the data; later ones are not read.
TEST(YamlJson, OnlyTheFirstDocumentIsRead) {
  EXPECT_EQ(convert("a: 1\n---\nb: [\n"), nlohmann::json::parse(R"({"a": 1})"));
}

}  // namespace
}  // namespace orch
