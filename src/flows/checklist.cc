#include "flows/checklist.h"

#include <cctype>
#include <optional>

#include "flows/request_text.h"
#include "util/strings.h"

namespace orch::flows {

namespace {

struct ListLine {
  int number = 0;  // 0 for a bullet
  std::string text;
};

std::string clean_item(std::string_view text) {
  std::string s(trim(text));
  for (std::string_view box : {"[ ] ", "[x] ", "[X] "})
    if (s.starts_with(box)) s = std::string(trim(std::string_view(s).substr(box.size())));
  while (!s.empty() && (s.back() == ',' || s.back() == ';')) s.pop_back();
  for (std::string_view tail : {" and", " then", " or"})
    if (s.ends_with(tail)) s = std::string(trim(std::string_view(s).substr(0, s.size() - tail.size())));
  while (!s.empty() && (s.back() == ',' || s.back() == ';')) s.pop_back();
  return s;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::optional<ListLine> list_marker(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && is_blank(line[i])) ++i;
  std::string_view rest = line.substr(i);
  auto item_after = [&](std::size_t marker_len) -> std::optional<std::string> {
    if (marker_len >= rest.size() || !is_blank(rest[marker_len])) return std::nullopt;
    std::string item = clean_item(rest.substr(marker_len));
    if (item.empty()) return std::nullopt;
    return item;
  };
  for (std::string_view bullet : {"-", "*", "+", "\xE2\x80\xA2"})
    if (rest.starts_with(bullet))
      if (auto item = item_after(bullet.size())) return ListLine{0, *item};
  const bool paren = rest.starts_with('(');
  std::size_t d = paren ? 1 : 0, digits = d;
  while (digits < rest.size() && digits - d < 3 && std::isdigit(static_cast<unsigned char>(rest[digits])) != 0)
    ++digits;
  if (digits == d || digits >= rest.size()) return std::nullopt;
  const char close = rest[digits];
  if (!(close == ')' || (!paren && close == '.'))) return std::nullopt;
  auto item = item_after(digits + 1);
  if (!item) return std::nullopt;
  return ListLine{std::stoi(std::string(rest.substr(d, digits - d))), *item};
}

// The longest run of lines numbered 1, 2, 3, ... in order.
std::vector<std::string> numbered_run(const std::vector<ListLine>& lines) {
  std::vector<std::string> best, current;
  for (const auto& l : lines) {
    if (l.number == 0) continue;
    if (l.number == 1) {
      current = {l.text};
    } else if (!current.empty() && l.number == static_cast<int>(current.size()) + 1) {
      current.push_back(l.text);
    } else {
      current.clear();
    }
    if (current.size() > best.size()) best = current;
  }
  return best;
}

// "(1) a (2) b" or "1) a 2) b" within a line: markers numbered 1, 2, ... after a
// space, ':' or the start, each followed by a space.
std::vector<std::string> inline_items(std::string_view text) {
  auto find_marker = [&](int number, std::size_t from, std::size_t& marker_end) -> std::size_t {
    const std::string bare = std::to_string(number) + ")";
    for (std::size_t pos = from; pos < text.size(); ++pos) {
      std::size_t len = 0;
      if (text.compare(pos, bare.size() + 1, "(" + bare) == 0) {
        len = bare.size() + 1;
      } else if (text.compare(pos, bare.size(), bare) == 0) {
        len = bare.size();
      } else {
        continue;
      }
      const bool starts = pos == 0 || is_blank(text[pos - 1]) || text[pos - 1] == ':' || text[pos - 1] == '\n';
      const bool spaced = pos + len < text.size() && is_blank(text[pos + len]);
      if (starts && spaced) {
        marker_end = pos + len;
        return pos;
      }
    }
    return std::string_view::npos;
  };
  std::vector<std::string> items;
  std::size_t end = 0;
  std::size_t at = find_marker(1, 0, end);
  while (at != std::string_view::npos) {
    std::size_t next_end = 0;
    std::size_t next = find_marker(static_cast<int>(items.size()) + 2, end, next_end);
    std::string_view body = text.substr(end, next == std::string_view::npos ? std::string_view::npos : next - end);
    if (next == std::string_view::npos) body = body.substr(0, body.find('\n'));
    std::string item = clean_item(body);
    if (item.empty()) return {};
    items.push_back(std::move(item));
    at = next;
    end = next_end;
  }
  return items.size() >= 2 ? items : std::vector<std::string>{};
}

}  // namespace

std::vector<std::string> checklist_items(std::string_view request) {
  std::string text = without_fenced_code(request);
  std::vector<ListLine> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (auto l = list_marker(std::string_view(text).substr(start, end == std::string::npos ? std::string::npos
                                                                                          : end - start)))
      lines.push_back(std::move(*l));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (auto run = numbered_run(lines); run.size() >= 2) return run;
  std::vector<std::string> bullets;
  for (const auto& l : lines)
    if (l.number == 0) bullets.push_back(l.text);
  if (bullets.size() >= 2) return bullets;
  return inline_items(text);
}

}  // namespace orch::flows
