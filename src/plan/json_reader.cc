// plan/json_reader.cc — read_json_doc on RapidJSON's SAX reader.
//
// RapidJSON does the lexing and parsing; this file only builds the DocNode tree
// from its events, keeps line numbers (a stream that counts '\n' as RapidJSON
// takes characters), streams the step list to the sink, limits the depth, and
// words RapidJSON's errors the way the rest of orch's messages read.
#include "plan/json_reader.h"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

namespace orch::detail {

namespace {

// A read-only RapidJSON input stream over the text that knows its current line.
// The text need not be NUL-terminated; Peek() gives '\0' at its end, as
// RapidJSON expects (a NUL inside the text is caught after the parse).
class LineCountingStream {
 public:
  using Ch = char;

  explicit LineCountingStream(std::string_view text)
      : begin_(text.data()), cur_(text.data()), end_(text.data() + text.size()) {}

  Ch Peek() const { return cur_ != end_ ? *cur_ : '\0'; }
  Ch Take() {
    if (cur_ == end_) return '\0';
    Ch c = *cur_++;
    if (c == '\n') ++line_;
    return c;
  }
  std::size_t Tell() const { return static_cast<std::size_t>(cur_ - begin_); }
  int line() const { return line_; }

  // Writing is for in-situ parsing only, which this stream does not support.
  Ch* PutBegin() {
    RAPIDJSON_ASSERT(false);
    return nullptr;
  }
  void Put(Ch) { RAPIDJSON_ASSERT(false); }
  void Flush() { RAPIDJSON_ASSERT(false); }
  std::size_t PutEnd(Ch*) {
    RAPIDJSON_ASSERT(false);
    return 0;
  }

 private:
  const Ch* begin_;
  const Ch* cur_;
  const Ch* end_;
  int line_ = 1;
};

// RFC 8259 grammar, numbers passed on as written, strings checked to be UTF-8
// (as the YAML reader does: a plan is UTF-8 text, and a bad byte would otherwise
// be rewritten as U+FFFD in reports without a word).
constexpr unsigned kParseFlags = rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseValidateEncodingFlag;

// Builds the DocNode tree from RapidJSON's SAX events.
class JsonTreeBuilder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, JsonTreeBuilder> {
 public:
  JsonTreeBuilder(std::string_view text, const LineCountingStream& stream, const ItemSink& sink)
      : text_(text), stream_(stream), sink_(sink) {}

  bool Null() {
    begin_value();
    return end_value();
  }
  bool Bool(bool b) {
    DocNode& node = begin_value();
    node.type = DocNode::Type::Scalar;
    node.scalar = b ? "true" : "false";
    return end_value();
  }
  bool RawNumber(const char* str, rapidjson::SizeType length, bool) {
    DocNode& node = begin_value();
    node.type = DocNode::Type::Scalar;
    node.scalar.assign(str, length);
    return end_value();
  }
  bool String(const char* str, rapidjson::SizeType length, bool) {
    if (!check_surrogates(str, length)) return false;
    DocNode& node = begin_value();
    node.type = DocNode::Type::Scalar;
    node.quoted = true;
    node.scalar.assign(str, length);
    return end_value();
  }
  bool Key(const char* str, rapidjson::SizeType length, bool) {
    if (!check_surrogates(str, length)) return false;
    auto& [key, val] = stack_.back().node->entries.emplace_back();
    key.type = DocNode::Type::Scalar;
    key.quoted = true;
    key.line = stream_.line();
    key.scalar.assign(str, length);
    last_key_ = &key.scalar;
    event_end_ = stream_.Tell();
    return true;
  }
  bool StartObject() { return start_container(DocNode::Type::Map); }
  bool EndObject(rapidjson::SizeType) { return end_container(); }
  bool StartArray() { return start_container(DocNode::Type::Sequence); }
  bool EndArray(rapidjson::SizeType) { return end_container(); }

  DocNode& root() { return root_; }
  const std::optional<JsonSyntaxError>& error() const { return error_; }
  const std::string* last_key() const { return last_key_; }

 private:
  struct Frame {
    DocNode* node;
    std::optional<StreamedList> stream;  // items go to the sink, one at a time
  };

  // The node the next value goes into, with its line set.
  DocNode& begin_value() {
    DocNode* node = &root_;
    if (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.node->type == DocNode::Type::Map) {
        node = &top.node->entries.back().value;
      } else if (top.stream) {
        item_ = DocNode{};
        node = &item_;
      } else {
        node = &top.node->items.emplace_back();
      }
    }
    node->line = stream_.line();
    return *node;
  }

  // A value is complete: an item of a streamed list goes to the sink.
  bool end_value() {
    event_end_ = stream_.Tell();
    if (!stack_.empty() && stack_.back().stream) sink_(*stack_.back().stream, item_);
    return true;
  }

  bool start_container(DocNode::Type type) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      return fail(fmt::format("nesting deeper than {} levels", kMaxJsonDepth));
    std::optional<StreamedList> stream;
    if (type == DocNode::Type::Sequence && sink_) {
      if (stack_.empty()) {
        stream = StreamedList::TopLevel;  // the step list of a StepSpec plan
      } else if (stack_.size() == 1 && stack_.back().node->type == DocNode::Type::Map && !steps_streamed_ &&
                 stack_.back().node->entries.back().key.scalar == "steps") {
        stream = StreamedList::Steps;
        steps_streamed_ = true;
      }
    }
    DocNode& node = begin_value();
    node.type = type;
    node.streamed = stream.has_value();
    stack_.push_back(Frame{&node, stream});
    event_end_ = stream_.Tell();
    return true;
  }

  bool end_container() {
    stack_.pop_back();
    return end_value();
  }

  // RapidJSON 1.1.0 turns a lone low surrogate escape (\udc00) into the bytes
  // ED B0..BF xx instead of rejecting it. Raw bytes are passed through, so such
  // a sequence in the string is a lone escape only when the source text of this
  // string (everything since the previous event) holds fewer of them.
  bool check_surrogates(const char* str, rapidjson::SizeType length) {
    if (std::memchr(str, '\xED', length) == nullptr) return true;
    auto count = [](std::string_view s) {
      std::size_t n = 0;
      for (std::size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] == '\xED' && static_cast<unsigned char>(s[i + 1]) >= 0xA0 &&
            static_cast<unsigned char>(s[i + 1]) <= 0xBF)
          ++n;
      return n;
    };
    std::string_view source = text_.substr(event_end_, stream_.Tell() - event_end_);
    if (count(std::string_view(str, length)) > count(source)) return fail("a lone \\u surrogate in a string");
    return true;
  }

  bool fail(std::string message) {
    error_ = JsonSyntaxError{stream_.line(), std::move(message)};
    return false;
  }

  std::string_view text_;
  const LineCountingStream& stream_;
  const ItemSink& sink_;
  DocNode root_;
  DocNode item_;  // the current item of a streamed list
  std::vector<Frame> stack_;
  bool steps_streamed_ = false;
  std::size_t event_end_ = 0;  // where the previous event's token ended
  const std::string* last_key_ = nullptr;
  std::optional<JsonSyntaxError> error_;
};

std::string found_at(std::string_view text, std::size_t offset) {
  if (offset >= text.size()) return "the end of the text";
  char c = text[offset];
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
    return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
  return fmt::format("'{}'", c);
}

int line_at(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// RapidJSON's error, in the words of orch's other messages where it is a common
// one (and with what was found there); otherwise RapidJSON's own English text.
JsonSyntaxError translate(std::string_view text, rapidjson::ParseErrorCode code, std::size_t offset,
                          const std::string* last_key) {
  using namespace rapidjson;
  auto at = [&](std::size_t where) { return where < text.size() ? text[where] : '\0'; };
  std::string message;
  switch (code) {
    case kParseErrorDocumentEmpty:
      message = "expected a value, found the end of the text";
      break;
    case kParseErrorValueInvalid:
      if (offset > 0 && text[offset - 1] == '-') {
        message = fmt::format("expected a digit, found {}", found_at(text, offset));
        break;
      }
      // A misspelt true, false or null: RapidJSON stops inside the word.
      while (offset > 0 && offset <= text.size() && text[offset - 1] >= 'a' && text[offset - 1] <= 'z') --offset;
      message = fmt::format("expected a value, found {}", found_at(text, offset));
      break;
    case kParseErrorDocumentRootNotSingular:
    case kParseErrorObjectMissCommaOrCurlyBracket:
    case kParseErrorArrayMissCommaOrSquareBracket:
      if (offset > 0 && offset < text.size() && text[offset - 1] == '0' && at(offset) >= '0' && at(offset) <= '9')
        message = "numbers cannot start with 0";  // a digit right after a number's last '0': "01"
      else if (code == kParseErrorDocumentRootNotSingular)
        message = "unexpected text after the JSON value";
      else if (code == kParseErrorObjectMissCommaOrCurlyBracket)
        message = fmt::format("expected ',' or '}}' after an object member, found {}", found_at(text, offset));
      else
        message = fmt::format("expected ',' or ']' after an array item, found {}", found_at(text, offset));
      break;
    case kParseErrorObjectMissName:
      message = fmt::format("expected a key in double quotes, found {}", found_at(text, offset));
      break;
    case kParseErrorStringInvalidEncoding:
      message = "a string holds bytes that are not UTF-8 (a plan must be UTF-8 text)";
      break;
    case kParseErrorObjectMissColon:
      message = fmt::format("expected ':' after the key \"{}\", found {}", last_key ? *last_key : std::string(),
                            found_at(text, offset));
      break;
    case kParseErrorNumberMissFraction:
      message = fmt::format("expected a digit after '.', found {}", found_at(text, offset));
      break;
    case kParseErrorNumberMissExponent:
      message = fmt::format("expected a digit in the exponent, found {}", found_at(text, offset));
      break;
    case kParseErrorStringMissQuotationMark:  // the end of the text, or a NUL byte
      message = offset < text.size() ? "a control character inside a string must be escaped" : "unterminated string";
      break;
    case kParseErrorStringEscapeInvalid:  // a bad escape, or a control character
      if (at(offset) == '\\')
        message = fmt::format("unknown escape '\\{}' in a string", offset + 1 < text.size() ? text[offset + 1] : ' ');
      else if (at(offset) == '\n')
        message = "unterminated string (a newline inside a string must be written \\n)";
      else
        message = "a control character inside a string must be escaped";
      break;
    case kParseErrorStringUnicodeEscapeInvalidHex:  // offset: the escape's backslash
      message = offset + 6 > text.size() ? "incomplete \\u escape" : "bad hex digit in a \\u escape";
      break;
    case kParseErrorStringUnicodeSurrogateInvalid:  // offset: the first half's backslash
      message = text.substr(offset + 6, 2) == "\\u" ? "bad \\u surrogate pair"
                                                      : "a \\u surrogate pair is missing its second half";
      break;
    default: {
      std::string en = GetParseError_En(code);
      if (!en.empty() && en.back() == '.') en.pop_back();
      if (!en.empty() && en[0] >= 'A' && en[0] <= 'Z') en[0] = static_cast<char>(en[0] - 'A' + 'a');
      message = std::move(en);
      break;
    }
  }
  return JsonSyntaxError{line_at(text, offset), std::move(message)};
}

}  // namespace

std::expected<DocNode, JsonSyntaxError> read_json_doc(std::string_view text, const ItemSink& sink) {
  LineCountingStream stream(text);
  JsonTreeBuilder builder(text, stream, sink);
  rapidjson::Reader reader;
  rapidjson::ParseResult result = reader.Parse<kParseFlags>(stream, builder);
  if (result.IsError()) {
    if (result.Code() == rapidjson::kParseErrorTermination && builder.error()) return std::unexpected(*builder.error());
    return std::unexpected(translate(text, result.Code(), result.Offset(), builder.last_key()));
  }
  // RapidJSON takes a NUL byte for the end of the text.
  if (stream.Tell() < text.size())
    return std::unexpected(JsonSyntaxError{line_at(text, stream.Tell()), "unexpected text after the JSON value"});
  return std::move(builder.root());
}

}  // namespace orch::detail
