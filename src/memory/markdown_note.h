// memory/markdown_note.h — a markdown file with optional YAML front matter.
//
// Knowledge notes, lesson notes and skills are all markdown files that may start
// with front matter:
//
//   ---
//   title: Building with CMake        # default: the first "# " heading, else the file name
//   tags: [build, cmake]              # a list, or one string split at commas and spaces
//   summary: How the build is set up.
//   description: Use when ...         # skills: what the skill is for (matched to requests)
//   name: cmake-build                 # skills: default the file (or folder) name
//   ---
//   # Building with CMake
//   ...
//
// Other keys are ignored. A file is refused (and so skipped by reindex, with the
// reason) when its front matter is not valid YAML ("front matter is not valid
// YAML: line N: ...", the file's line; a key written twice included), is not a
// mapping, is never closed, gives a key above a value that is not text, or when
// the file holds a NUL byte (not text) or is over 1 MiB.
//
// Pure functions (read_markdown_note reads the file); thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch::memory {

inline constexpr std::size_t kMaxNoteBytes = std::size_t{1} << 20;

struct MarkdownNote {
  std::string title;
  std::string summary;
  std::string description;
  std::string name;
  std::vector<std::string> tags;
  std::string body;  // the markdown after the front matter
};

// `text` parsed; `fallback_title` is the title when neither front matter nor a
// heading gives one. Errors are InvalidInput with a message naming the problem
// (without the file name).
Expected<MarkdownNote> parse_markdown_note(std::string_view text, std::string_view fallback_title);

// The file read and parsed, its stem as the fallback title; errors read
// "<file>: <problem>".
Expected<MarkdownNote> read_markdown_note(const std::filesystem::path& file);

}  // namespace orch::memory
