// Black-box tests of `orch completion bash|zsh`: the scripts are made from the
// command tree, so every command, subcommand and option is in them; the
// install test (tests/install/install_test.sh) runs them in bash and zsh.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::run_orch;
using orch::testing::TempDir;

// The command names `orch --help` lists.
std::vector<std::string> commands_in_help(const std::string& help) {
  std::vector<std::string> names;
  const std::size_t start = help.find("Subcommands:\n");
  const std::size_t end = help.find("\n\n", start);
  const std::string list = help.substr(start, end - start);
  static const std::regex kName("\n  ([a-z][a-z-]*) ");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), kName); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1].str());
  return names;
}

TEST(CliCompletion, TheBashScriptHoldsEveryCommandAndItsOptions) {
  TempDir d;
  auto help = run_orch({"--help"}, d.path());
  ASSERT_EQ(help.exit_code, 0);
  const std::vector<std::string> commands = commands_in_help(help.out);
  ASSERT_GE(commands.size(), 17u) << help.out;
  auto bash = run_orch({"completion", "bash"}, d.path());
  ASSERT_EQ(bash.exit_code, 0) << bash.err;
  EXPECT_NE(bash.out.find("complete -F _orch orch\n"), std::string::npos);
  for (const std::string& c : commands) {
    EXPECT_NE(bash.out.find(" " + c + " "), std::string::npos) << c;
    EXPECT_NE(bash.out.find("'orch " + c + "')"), std::string::npos) << c;
  }
  // A subcommand's subcommands, an option's choices, a folder option, a number.
  EXPECT_NE(bash.out.find("'orch task') echo 'plan log close show list gc run'"), std::string::npos);
  EXPECT_NE(bash.out.find("'orch task close --result') echo 'pass fail'"), std::string::npos);
  EXPECT_NE(bash.out.find("'orch run --workspace') echo @dir"), std::string::npos);
  EXPECT_NE(bash.out.find("'orch run -j'|'orch run --jobs') echo @none"), std::string::npos);
  EXPECT_NE(bash.out.find("'orch completion') echo 'bash zsh'"), std::string::npos);
}

TEST(CliCompletion, TheZshScriptHoldsEveryCommandWithItsDescription) {
  TempDir d;
  auto zsh = run_orch({"completion", "zsh"}, d.path());
  ASSERT_EQ(zsh.exit_code, 0) << zsh.err;
  EXPECT_TRUE(zsh.out.starts_with("#compdef orch\n"));
  EXPECT_NE(zsh.out.find("'run:Validate a plan, then run it to the end through the ledger.'"),
            std::string::npos);
  EXPECT_NE(zsh.out.find("'orch memory') reply=('harvest:"), std::string::npos);
  EXPECT_NE(zsh.out.find("'orch task close --result') REPLY='pass fail'"), std::string::npos);
  // The first sentence of a long description only.
  EXPECT_EQ(zsh.out.find("Runs nothing; exits 3"), std::string::npos);
}

TEST(CliCompletion, AnUnknownShellIsAUsageError) {
  TempDir d;
  auto fish = run_orch({"completion", "fish"}, d.path());
  EXPECT_EQ(fish.exit_code, 2);
  EXPECT_EQ(fish.out, "");
  EXPECT_NE(fish.err.find("orch completion --help"), std::string::npos) << fish.err;
  auto none = run_orch({"completion"}, d.path());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("SHELL is required"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace orch
