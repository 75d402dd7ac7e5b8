#include "util/yaml_json.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace orch {
namespace {

nlohmann::json convert(const std::string& yaml) { return yaml_to_json(YAML::Load(yaml)); }

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
  try {
    convert("a: 1\nb:\n  <<: 5\n");
    ADD_FAILURE() << "a scalar merged";
  } catch (const YAML::ParserException& e) {
    EXPECT_EQ(e.mark.line + 1, 3);
    EXPECT_NE(e.msg.find("a merge key '<<' takes a mapping or a list of mappings"), std::string::npos)
        << e.msg;
  }
}

// yaml-cpp shares an anchor's node with its aliases: a cycle is refused at its
// mark (it recursed until the stack ran out), and aliases of aliases stop at the
// node limit (they ran for minutes, then out of memory).
TEST(YamlJson, ACyclicAliasOrAnAliasBombIsRefused) {
  for (const char* cyclic : {"a: &a\n  b: *a\n", "a: &a {x: 1, <<: *a}\n", "- &s [1, *s]\n"}) {
    try {
      convert(cyclic);
      ADD_FAILURE() << "converted " << cyclic;
    } catch (const YAML::ParserException& e) {
      EXPECT_EQ(e.msg, "an alias is inside the node it names") << cyclic;
    }
  }
  std::string bomb = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    bomb += fmt::format("l{}: &l{} [", i, i);
    for (int j = 0; j < 10; ++j) bomb += fmt::format("{}*l{}", j ? ", " : "", i - 1);
    bomb += "]\n";
  }
  try {
    yaml_to_json(YAML::Load(bomb));
    ADD_FAILURE() << "a billion nodes converted";
  } catch (const YAML::ParserException& e) {
    EXPECT_EQ(e.msg, "aliases expand to more than 1000000 nodes in all");
  }
  // Shared, not cyclic: the same anchor twice side by side is fine.
  auto ok = convert("a: &a {x: 1}\nb: [*a, *a]\n");
  EXPECT_EQ(ok["b"][1]["x"], 1);
}

TEST(YamlJson, KeysAreAlwaysStrings) {
  auto j = convert("1: one\ntrue: yes\nnull: z\n");
  EXPECT_EQ(j["1"], "one");
  EXPECT_EQ(j["true"], "yes");
  EXPECT_EQ(j["null"], "z");
}

TEST(YamlJson, JsonIsYaml) {
  auto j = convert(R"({"a": [1, 2.5, "s", null, true], "b": {}})");
  EXPECT_EQ(j, nlohmann::json::parse(R"({"a": [1, 2.5, "s", null, true], "b": {}})"));
}

TEST(YamlJson, EmptyDocumentIsNull) { EXPECT_TRUE(convert("").is_null()); }

}  // namespace
}  // namespace orch
