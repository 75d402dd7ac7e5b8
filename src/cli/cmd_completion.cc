// orch completion bash|zsh
// Prints a completion script made from orch's own command tree (cli/completion.h).
// orch_main builds every command before this one runs, so the tree is whole.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/completion.h"

namespace orch::cli {

Command add_completion(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "completion", "Print a completion script for bash or zsh: source it, or install it (docs/cli.md).");
  sub->add_option("SHELL", *shell, "the shell: bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  return [sub, shell]() -> int {
    const CLI::App& root = *sub->get_parent();
    const std::vector<CompletionCommand> tree = completion_tree(root);
    const std::string script = *shell == "bash" ? bash_completion_script(tree, root.get_name())
                                                : zsh_completion_script(tree, root.get_name());
    std::fwrite(script.data(), 1, script.size(), stdout);
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
