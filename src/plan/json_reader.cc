#include "plan/json_reader.h"

#include <fmt/format.h>

#include <optional>

namespace orch::detail {

namespace {

class JsonReader {
 public:
  JsonReader(std::string_view text, const ItemSink& sink) : text_(text), sink_(sink) {}

  std::expected<DocNode, JsonSyntaxError> document() {
    DocNode root;
    skip_space();
    if (!value(root, 0)) return std::unexpected(error_);
    skip_space();
    if (pos_ < text_.size()) {
      fail("unexpected text after the JSON value");
      return std::unexpected(error_);
    }
    return root;
  }

 private:
  bool fail(std::string message) {
    if (error_.message.empty()) error_ = JsonSyntaxError{line_, std::move(message)};
    return false;
  }

  std::string found() const {
    if (pos_ >= text_.size()) return "the end of the text";
    char c = text_[pos_];
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
    return fmt::format("'{}'", c);
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') {
        ++line_;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  bool value(DocNode& out, int depth) {
    out.line = line_;
    if (pos_ >= text_.size()) return fail("expected a value, found the end of the text");
    char c = text_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxJsonDepth) return fail(fmt::format("nesting deeper than {} levels", kMaxJsonDepth));
      if (c == '{') return object(out, depth);
      // The top-level array is the step list of a StepSpec plan.
      return array(out, depth, depth == 0 && sink_ ? std::optional(StreamedList::TopLevel) : std::nullopt);
    }
    if (c == '"') {
      out.type = DocNode::Type::Scalar;
      out.quoted = true;
      return string(out.scalar);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    for (std::string_view word : {"true", "false", "null"}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        if (word != "null") {
          out.type = DocNode::Type::Scalar;
          out.scalar = std::string(word);
        }
        return true;
      }
    }
    return fail(fmt::format("expected a value, found {}", found()));
  }

  bool object(DocNode& out, int depth) {
    out.type = DocNode::Type::Map;
    ++pos_;  // '{'
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return fail(fmt::format("expected a key in double quotes, found {}", found()));
      auto& [key, val] = out.entries.emplace_back();
      key.type = DocNode::Type::Scalar;
      key.quoted = true;
      key.line = line_;
      if (!string(key.scalar)) return false;
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':')
        return fail(fmt::format("expected ':' after the key \"{}\", found {}", key.scalar, found()));
      ++pos_;
      skip_space();
      if (depth == 0 && sink_ && !steps_streamed_ && key.scalar == "steps" && pos_ < text_.size() &&
          text_[pos_] == '[') {
        steps_streamed_ = true;
        val.line = line_;
        if (!array(val, depth + 1, StreamedList::Steps)) return false;
      } else if (!value(val, depth + 1)) {
        return false;
      }
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail(fmt::format("expected ',' or '}}' after an object member, found {}", found()));
    }
  }

  // With `stream`, items go to the sink one at a time instead of into `out`.
  bool array(DocNode& out, int depth, std::optional<StreamedList> stream = std::nullopt) {
    out.type = DocNode::Type::Sequence;
    out.streamed = stream.has_value();
    DocNode item;
    ++pos_;  // '['
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_space();
      if (stream) {
        item = DocNode{};
        if (!value(item, depth + 1)) return false;
        sink_(*stream, item);
      } else if (!value(out.items.emplace_back(), depth + 1)) {
        return false;
      }
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail(fmt::format("expected ',' or ']' after an array item, found {}", found()));
    }
  }

  bool number(DocNode& out) {
    std::size_t start = pos_;
    auto digits = [&] {
      std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (text_[pos_] == '-') ++pos_;
    std::size_t int_start = pos_;
    std::size_t n = digits();
    if (n == 0) return fail(fmt::format("expected a digit, found {}", found()));
    if (n > 1 && text_[int_start] == '0') return fail("numbers cannot start with 0");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return fail(fmt::format("expected a digit after '.', found {}", found()));
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) return fail(fmt::format("expected a digit in the exponent, found {}", found()));
    }
    out.type = DocNode::Type::Scalar;
    out.scalar = std::string(text_.substr(start, pos_ - start));
    return true;
  }

  bool hex4(unsigned& out) {
    if (pos_ + 4 > text_.size()) return fail("incomplete \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= static_cast<unsigned>(c - 'A' + 10);
      else
        return fail("bad hex digit in a \\u escape");
    }
    return true;
  }

  static void append_utf8(std::string& s, unsigned cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool escape(std::string& out) {
    if (pos_ >= text_.size()) return fail("unterminated string");
    char c = text_[pos_++];
    switch (c) {
      case '"':
        out += '"';
        return true;
      case '\\':
        out += '\\';
        return true;
      case '/':
        out += '/';
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case 'n':
        out += '\n';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'u':
        break;
      default:
        return fail(fmt::format("unknown escape '\\{}' in a string", c));
    }
    unsigned cp = 0;
    if (!hex4(cp)) return false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate needs its low half
      unsigned low = 0;
      if (text_.substr(pos_, 2) != "\\u") return fail("a \\u surrogate pair is missing its second half");
      pos_ += 2;
      if (!hex4(low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) return fail("bad \\u surrogate pair");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return fail("a lone \\u surrogate in a string");
    }
    append_utf8(out, cp);
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // opening quote
    for (;;) {
      // Copy the run up to the next quote, backslash or control character at once.
      std::size_t run = pos_;
      while (run < text_.size()) {
        unsigned char c = static_cast<unsigned char>(text_[run]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        ++run;
      }
      out.append(text_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= text_.size()) return fail("unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\') {
        ++pos_;
        if (!escape(out)) return false;
        continue;
      }
      return fail(c == '\n' ? "unterminated string (a newline inside a string must be written \\n)"
                            : "a control character inside a string must be escaped");
    }
  }

  std::string_view text_;
  const ItemSink& sink_;
  bool steps_streamed_ = false;
  std::size_t pos_ = 0;
  int line_ = 1;
  JsonSyntaxError error_;
};

}  // namespace

std::expected<DocNode, JsonSyntaxError> read_json_doc(std::string_view text, const ItemSink& sink) {
  return JsonReader(text, sink).document();
}

}  // namespace orch::detail
