#include "util/secrets.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace orch {
namespace {

TEST(SecretMasker, NamesThatLookSecret) {
  for (const char* name : {"OPENAI_API_KEY", "api_key", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                           "MYSQL_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "AUTH", "HTTP_AUTH_HEADER",
                           "Slack_Token"}) {
    EXPECT_TRUE(SecretMasker::looks_secret(name)) << name;
  }
  for (const char* name : {"PATH", "HOME", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "LANG", "ORCH_STEP_ID", ""}) {
    EXPECT_FALSE(SecretMasker::looks_secret(name)) << name;
  }
}

TEST(SecretMasker, EmptyMaskerReturnsTextUnchanged) {
  SecretMasker masker;
  EXPECT_TRUE(masker.empty());
  EXPECT_EQ(masker.mask("nothing to hide"), "nothing to hide");
  EXPECT_EQ(masker.mask(""), "");
}

TEST(SecretMasker, MasksEveryOccurrence) {
  auto masker = SecretMasker::from_assignments({"API_KEY=sk-abc123", "PATH=/usr/bin", "NOEQUALS"});
  EXPECT_EQ(masker.size(), 1u);
  EXPECT_EQ(masker.mask("key sk-abc123 and again sk-abc123sk-abc123."), "key *** and again ******.");
  EXPECT_EQ(masker.mask("/usr/bin is not secret"), "/usr/bin is not secret");
  EXPECT_EQ(masker.mask("sk-abc12"), "sk-abc12");
}

TEST(SecretMasker, ShortValuesAreIgnored) {
  auto masker = SecretMasker::from_assignments({"TOKEN=abcde", "EMPTY_SECRET=", "KEY=abcdef"});
  EXPECT_EQ(masker.size(), 1u);
  EXPECT_EQ(masker.mask("abcde abcdef"), "abcde ***");
}

// MAX_TOKENS=100000 is a setting: masking it would turn a result's 1000000 into
// ***0. A long digit string under a secret name still counts.
TEST(SecretMasker, ShortNumbersUnderSecretNamesAreSettings) {
  SecretMasker m;
  EXPECT_FALSE(m.add_if_secret("MAX_TOKENS_PER_CALL", "100000"));
  EXPECT_FALSE(m.add_if_secret("TOKEN_BUDGET", "2500.50"));
  EXPECT_TRUE(m.add_if_secret("PIN_SECRET", "1234567890123456"));
  EXPECT_TRUE(m.add_if_secret("API_TOKEN", "100000a"));
  // Under KEY, SECRET, PASSWORD and the rest a number is still a secret.
  EXPECT_TRUE(m.add_if_secret("DB_PASSWORD", "739205814"));
  EXPECT_TRUE(m.add_if_secret("TOKEN_SECRET", "5551234"));
  EXPECT_EQ(m.mask("count 1000000, pin 1234567890123456, t 100000a, pw 739205814"),
            "count 1000000, pin ***, t ***, pw ***");
}

TEST(SecretMasker, LongestValueFirst) {
  // The short secret is part of the long one: the long one must vanish whole.
  auto masker = SecretMasker::from_assignments({"A_TOKEN=secret", "B_TOKEN=my-secret-value", "C_KEY=secret"});
  EXPECT_EQ(masker.size(), 2u);  // duplicates collapse
  EXPECT_EQ(masker.mask("x my-secret-value y secret z"), "x *** y *** z");
}

TEST(SecretMasker, BinaryAndBigText) {
  auto masker = SecretMasker::from_assignments({"AUTH_HEADER=Bearer xyz789"});
  std::string big(5 * 1024 * 1024, '\xff');
  big.replace(1000, 13, "Bearer xyz789");
  big += "Bearer xyz789";
  std::string masked = masker.mask(big);
  EXPECT_EQ(masked.size(), big.size() - 2 * 10);
  EXPECT_EQ(masked.find("xyz789"), std::string::npos);
  EXPECT_EQ(masked.substr(1000, 3), "***");
}

TEST(SecretMasker, FromEnvironment) {
  setenv("ORCH_TEST_SECRET_TOKEN", "tok-from-env-42", 1);
  setenv("ORCH_TEST_PLAIN", "plain-value-42", 1);
  auto masker = SecretMasker::from_environment();
  unsetenv("ORCH_TEST_SECRET_TOKEN");
  unsetenv("ORCH_TEST_PLAIN");
  EXPECT_EQ(masker.mask("a tok-from-env-42 b plain-value-42"), "a *** b plain-value-42");
}

TEST(SecretMasker, AddValueAndAddIfSecret) {
  SecretMasker masker;
  EXPECT_FALSE(masker.add_if_secret("USER", "someone-long"));
  EXPECT_TRUE(masker.add_if_secret("STEP_TOKEN", "step-token-1"));
  EXPECT_FALSE(masker.add_if_secret("OTHER_TOKEN", "step-token-1"));
  EXPECT_TRUE(masker.add_value("from-a-file"));
  EXPECT_FALSE(masker.add_value("short"));
  EXPECT_EQ(masker.mask("step-token-1 from-a-file someone-long"), "*** *** someone-long");
}

}  // namespace
}  // namespace orch

namespace orch {
namespace {

// A secret split across reads at any point is still masked, and nothing else changes.
TEST(MaskingStream, ASecretSplitAcrossReadsIsMasked) {
  auto masker = SecretMasker::from_assignments({"API_KEY=sk-abc123", "B_TOKEN=sk-abc123-long-one"});
  const std::string text = "a sk-abc123 b sk-abc123-long-one c sk-ab d sk-abc123";
  const std::string want = masker.mask(text);
  EXPECT_EQ(want, "a *** b *** c sk-ab d ***");
  for (std::size_t cut1 = 0; cut1 <= text.size(); ++cut1) {
    for (std::size_t cut2 = cut1; cut2 <= text.size(); cut2 += 3) {
      MaskingStream stream(masker);
      std::string got = stream.push(std::string_view(text).substr(0, cut1));
      got += stream.push(std::string_view(text).substr(cut1, cut2 - cut1));
      got += stream.push(std::string_view(text).substr(cut2));
      got += stream.finish(false);
      ASSERT_EQ(got, want) << "cuts at " << cut1 << ", " << cut2;
    }
  }
}

TEST(MaskingStream, HoldsBackOnlyWhatMightStartASecret) {
  auto masker = SecretMasker::from_assignments({"API_KEY=sk-abc123"});
  MaskingStream stream(masker);
  EXPECT_EQ(stream.push("hello sk-a"), "hello ");
  EXPECT_EQ(stream.push("bX"), "sk-abX");
  EXPECT_EQ(stream.finish(false), "");
}

TEST(MaskingStream, AStreamCutInsideASecretDoesNotLeakItsStart) {
  auto masker = SecretMasker::from_assignments({"API_KEY=sk-abc123"});
  MaskingStream cut(masker);
  std::string got = cut.push("value: sk-abc1");
  got += cut.finish(true);
  EXPECT_EQ(got, "value: ***");
  MaskingStream ended(masker);
  got = ended.push("value: sk-abc1");
  got += ended.finish(false);
  EXPECT_EQ(got, "value: sk-abc1") << "a stream that really ended there printed a mere prefix";
}

TEST(MaskingStream, WithoutSecretsBytesPassStraightThrough) {
  SecretMasker none;
  MaskingStream stream(none);
  EXPECT_EQ(stream.push(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_EQ(stream.finish(true), "");
}

}  // namespace
}  // namespace orch
