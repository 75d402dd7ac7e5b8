#include <gtest/gtest.h>

#include "orch/plan_loader.h"

namespace orch {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(ParseDuration, Units) {
  EXPECT_EQ(parse_duration("250ms").value(), milliseconds(250));
  EXPECT_EQ(parse_duration("30s").value(), seconds(30));
  EXPECT_EQ(parse_duration("5m").value(), minutes(5));
  EXPECT_EQ(parse_duration("2h").value(), hours(2));
  EXPECT_EQ(parse_duration("1h30m").value(), minutes(90));
  EXPECT_EQ(parse_duration("1m30s500ms").value(), milliseconds(90'500));
  EXPECT_EQ(parse_duration("0s").value(), milliseconds(0));
}

TEST(ParseDuration, BareNumberIsSeconds) {
  EXPECT_EQ(parse_duration("30").value(), seconds(30));
  EXPECT_EQ(parse_duration("0").value(), seconds(0));
  EXPECT_EQ(parse_duration(" 7 ").value(), seconds(7));
}

// A bare number in another notation of YAML 1.2 or JSON is seconds too.
TEST(ParseDuration, BareNumbersInOtherNotations) {
  EXPECT_EQ(parse_duration("+5").value(), seconds(5));
  EXPECT_EQ(parse_duration("1e3").value(), seconds(1000));
  EXPECT_EQ(parse_duration("1E-3").value(), milliseconds(1));
  EXPECT_EQ(parse_duration("0x10").value(), seconds(16));
  EXPECT_EQ(parse_duration("0o17").value(), seconds(15));
  EXPECT_EQ(parse_duration("-0").value(), seconds(0));
  EXPECT_EQ(parse_duration("-0.0").value(), seconds(0));
  EXPECT_EQ(parse_duration("-5").error().message, "bad duration '-5': a duration cannot be negative");
  EXPECT_EQ(parse_duration("1e12").error().message,
            "bad duration '1e12': too large (at most 87600h, ten years)");
  EXPECT_FALSE(parse_duration(".inf"));
  EXPECT_FALSE(parse_duration("+5s"));
}

TEST(ParseSize, BareNumbersInOtherNotations) {
  EXPECT_EQ(parse_size("+5").value(), 5);
  EXPECT_EQ(parse_size("1e3").value(), 1000);
  EXPECT_EQ(parse_size("0x10").value(), 16);
  EXPECT_EQ(parse_size("2.5e0").value(), 2);  // rounded down, as 2.5 is
  EXPECT_EQ(parse_size("1e30").error().message, "bad size '1e30': too large");
  EXPECT_FALSE(parse_size("-1e3"));
}

TEST(ParseDuration, Fractions) {
  EXPECT_EQ(parse_duration("1.5s").value(), milliseconds(1500));
  EXPECT_EQ(parse_duration("0.25").value(), milliseconds(250));
  EXPECT_EQ(parse_duration("1.5h").value(), minutes(90));
  EXPECT_EQ(parse_duration(".5m").value(), seconds(30));
}

TEST(ParseDuration, RejectsGarbage) {
  for (const char* bad :
       {"", "  ", "5x", "s", "ms", "1.2.3s", "1h 30m", "5 s", "abc", "1h30", "+5s", "5S", "1d"}) {
    auto d = parse_duration(bad);
    EXPECT_FALSE(d) << "'" << bad << "' parsed as " << (d ? d->count() : 0);
    if (!d) {
      EXPECT_EQ(d.error().code, ErrorCode::InvalidInput);
    }
  }
}

TEST(ParseDuration, MessagesSayWhatIsWrong) {
  EXPECT_EQ(parse_duration("5x").error().message, "bad duration '5x': unknown unit 'x' (use ms, s, m or h)");
  EXPECT_EQ(parse_duration("-5s").error().message, "bad duration '-5s': a duration cannot be negative");
  EXPECT_NE(parse_duration("").error().message.find("empty duration"), std::string::npos);
  EXPECT_NE(parse_duration("99999999999999999999s").error().message.find("too large"), std::string::npos);
  EXPECT_NE(parse_duration("9999999999999999h").error().message.find("too large"), std::string::npos);
  // Longer than ten years: accepted, it would overflow a timer and fire at once.
  EXPECT_EQ(parse_duration("87600h").value(), milliseconds(87600LL * 3600 * 1000));
  EXPECT_NE(parse_duration("87600h1ms").error().message.find("too large (at most 87600h, ten years)"),
            std::string::npos);
  EXPECT_FALSE(parse_duration("9223372036854775807ms").has_value());
}

TEST(ParseDuration, LargestValues) {
  EXPECT_TRUE(parse_duration("315360000000ms"));  // 87600h
  EXPECT_FALSE(parse_duration("315360000001ms"));
  EXPECT_FALSE(parse_duration("9223372036854775807ms"));
  EXPECT_FALSE(parse_duration("9223372036854775808ms"));
  EXPECT_FALSE(parse_duration("9223372036854775s1s"));
}

TEST(ParseSize, Units) {
  EXPECT_EQ(parse_size("512").value(), 512);
  EXPECT_EQ(parse_size("512B").value(), 512);
  EXPECT_EQ(parse_size("64KiB").value(), 64 * 1024);
  EXPECT_EQ(parse_size("16MiB").value(), 16 * 1024 * 1024);
  EXPECT_EQ(parse_size("1GiB").value(), 1024LL * 1024 * 1024);
  EXPECT_EQ(parse_size("10KB").value(), 10'000);
  EXPECT_EQ(parse_size("1MB").value(), 1'000'000);
  EXPECT_EQ(parse_size("2GB").value(), 2'000'000'000);
  EXPECT_EQ(parse_size("16 MiB").value(), 16 * 1024 * 1024);
  EXPECT_EQ(parse_size("1mib").value(), 1024 * 1024);
  EXPECT_EQ(parse_size("1.5KiB").value(), 1536);
  EXPECT_EQ(parse_size("0").value(), 0);
}

TEST(ParseSize, RejectsGarbage) {
  for (const char* bad : {"", "MiB", "12XB", "-1", "1e3B", "ten", "1 2", "0x10KiB", "5M"}) {
    auto s = parse_size(bad);
    EXPECT_FALSE(s) << "'" << bad << "' parsed as " << s.value_or(0);
  }
  EXPECT_EQ(parse_size("12XB").error().message,
            "bad size '12XB': unknown unit 'XB' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)");
  EXPECT_EQ(parse_size("-1").error().message, "bad size '-1': a size cannot be negative");
}

TEST(ParseSize, Overflow) {
  EXPECT_TRUE(parse_size("9223372036854775807"));
  EXPECT_FALSE(parse_size("9223372036854775808"));
  EXPECT_FALSE(parse_size("99999999999GiB"));
  EXPECT_FALSE(parse_size("999999999999999999999999"));
}

}  // namespace
}  // namespace orch
