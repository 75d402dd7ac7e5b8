#include "memory/markdown_note.h"

#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch::memory {

namespace {

// The next line of `text` from `pos` (without its "\n" or "\r\n"); moves `pos` past it.
std::string_view next_line(std::string_view text, std::size_t& pos) {
  const std::size_t end = text.find('\n', pos);
  std::string_view line =
      text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
  pos = end == std::string_view::npos ? text.size() : end + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool is_fence(std::string_view line) {
  return trim(line) == "---";
}

// The first "# " heading outside ``` fences, without its markers.
std::string first_heading(std::string_view body) {
  bool in_code = false;
  for (std::size_t pos = 0; pos < body.size();) {
    const std::string_view line = next_line(body, pos);
    if (line.starts_with("```") || line.starts_with("~~~")) in_code = !in_code;
    if (in_code || !line.starts_with("# ")) continue;
    std::string_view heading = trim(line.substr(2));
    while (!heading.empty() && heading.back() == '#') heading.remove_suffix(1);
    return std::string(trim(heading));
  }
  return {};
}

// The value of `key` in the front matter, or nullptr (the first, if written twice:
// read_front_matter refuses that before).
const detail::DocNode* field(const detail::DocNode& front, std::string_view key) {
  for (const auto& [k, value] : front.entries)
    if (k.is_scalar() && k.scalar == key) return &value;
  return nullptr;
}

Expected<std::string> text_field(const detail::DocNode& front, const char* key) {
  const detail::DocNode* value = field(front, key);
  if (value == nullptr || value->is_null()) return std::string();
  if (!value->is_scalar())
    return fail(ErrorCode::InvalidInput, fmt::format("front matter: {}: expected text", key));
  return value->scalar;
}

Expected<std::vector<std::string>> tags_field(const detail::DocNode& front) {
  const detail::DocNode* value = field(front, "tags");
  std::vector<std::string> tags;
  if (value == nullptr || value->is_null()) return tags;
  if (value->is_sequence()) {
    for (const auto& item : value->items) {
      if (!item.is_scalar())
        return fail(ErrorCode::InvalidInput, "front matter: tags: expected a list of words");
      tags.push_back(item.scalar);
    }
    return tags;
  }
  if (!value->is_scalar())
    return fail(ErrorCode::InvalidInput, "front matter: tags: expected a list of words");
  std::string word;
  for (char c : value->scalar + " ") {
    if (c == ',' || c == ' ' || c == '\t') {
      if (!word.empty()) tags.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  return tags;
}

// `yaml` is the front matter's text, which starts on the file's line 2 (after
// the '---'). It is read after a line break standing for that line, so every
// line a problem names (those inside the message included) is the file's.
Expected<void> read_front_matter(std::string_view yaml, MarkdownNote& note) {
  const std::string text = "\n" + std::string(yaml);
  auto front = detail::read_yaml_doc(text);
  std::optional<detail::YamlSyntaxError> problem;
  if (!front)
    problem = front.error();
  else
    problem = duplicate_key(*front);
  if (problem)
    return fail(ErrorCode::InvalidInput,
                fmt::format("front matter is not valid YAML: line {}: {}", problem->line, problem->message));
  if (front->is_null()) return {};
  if (!front->is_map())
    return fail(ErrorCode::InvalidInput, "front matter is not a mapping of keys to values");
  note.title = ORCH_TRY(text_field(*front, "title"));
  note.summary = ORCH_TRY(text_field(*front, "summary"));
  note.description = ORCH_TRY(text_field(*front, "description"));
  note.name = ORCH_TRY(text_field(*front, "name"));
  note.tags = ORCH_TRY(tags_field(*front));
  return {};
}

}  // namespace

Expected<MarkdownNote> parse_markdown_note(std::string_view text, std::string_view fallback_title) {
  if (text.find('\0') != std::string_view::npos)
    return fail(ErrorCode::InvalidInput, "holds a NUL byte: not a text file");
  MarkdownNote note;
  std::size_t pos = 0;
  if (text.starts_with("\xEF\xBB\xBF")) pos = 3;  // a UTF-8 byte order mark
  std::size_t body_start = pos;
  if (is_fence(next_line(text, pos))) {
    const std::size_t yaml_start = pos;
    bool closed = false;
    while (pos < text.size()) {
      const std::size_t line_start = pos;
      const std::string_view line = next_line(text, pos);
      if (is_fence(line) || trim(line) == "...") {
        ORCH_TRY(read_front_matter(text.substr(yaml_start, line_start - yaml_start), note));
        closed = true;
        break;
      }
    }
    if (!closed)
      return fail(ErrorCode::InvalidInput, "front matter opened with '---' on line 1 is never closed");
    body_start = pos;
  }
  note.body = std::string(text.substr(body_start));
  if (note.title.empty()) note.title = first_heading(note.body);
  if (note.title.empty()) note.title = std::string(fallback_title);
  return note;
}

Expected<MarkdownNote> read_markdown_note(const std::filesystem::path& file) {
  auto text = read_file_text(file, kMaxNoteBytes);
  if (!text) return std::unexpected(std::move(text).error());
  auto note = parse_markdown_note(*text, file.stem().string());
  if (!note) return fail(note.error().code, fmt::format("{}: {}", file.string(), note.error().message));
  return note;
}

}  // namespace orch::memory
