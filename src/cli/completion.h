// cli/completion.h — shell completion for orch, made from orch's own command tree.
//
// CLI11 2.1 (Debian 12's libcli11-dev) has no completion generator, so
// `orch completion bash|zsh` walks the CLI11 App tree that orch parses with —
// commands, subcommands, their options and what each option's value is — and
// prints a script that holds that tree as data: a new command or flag is in the
// next script without anyone editing it. The build runs it to make the scripts
// that `cmake --install` puts in share/bash-completion/completions/orch and
// share/zsh/vendor-completions/_orch (docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orch::cli {

// What the word after an option (or a positional argument) completes to.
struct CompletionValue {
  enum class Kind { File, Directory, Choice, Nothing };
  Kind kind = Kind::File;
  std::vector<std::string> choices;  // Kind::Choice
};

struct CompletionOption {
  std::vector<std::string> names;  // "-j", "--jobs"
  std::string description;
  bool takes_value = false;  // false: a flag
  CompletionValue value;     // when takes_value
};

// One command of the tree: "orch", "orch run", "orch task log".
struct CompletionCommand {
  std::string path;  // the command's words joined by one space
  std::string description;
  std::vector<std::pair<std::string, std::string>> subcommands;  // name, description
  std::vector<CompletionOption> options;
  bool has_positionals = false;
  CompletionValue positional;  // what a positional argument completes to
};

// Every command of `root`'s tree, parents before their subcommands; hidden
// commands and options (no group) are left out.
std::vector<CompletionCommand> completion_tree(const CLI::App& root);

// The scripts, for the tree of a program called `program`.
std::string bash_completion_script(const std::vector<CompletionCommand>& tree, std::string_view program);
std::string zsh_completion_script(const std::vector<CompletionCommand>& tree, std::string_view program);

// What the scripts' driver is told a value completes to: "@file", "@dir",
// "@none", or the choices as words.
std::string completion_value_word(const CompletionValue& value);

// The cases of the scripts' `_PROGRAM_option_value PATH OPTION` function: for
// each value word, the "PATH OPTION" patterns (shell-quoted, joined with '|')
// of the options whose value completes to it.
std::vector<std::pair<std::string, std::string>> option_value_cases(
    const std::vector<CompletionCommand>& tree);

// `script` with every "@@" replaced by `program` (the scripts' fixed parts name
// their functions _@@, _@@_options, ...).
std::string with_program(std::string_view script, std::string_view program);

}  // namespace orch::cli
