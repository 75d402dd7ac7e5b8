// util/yaml_reader.cc — read_yaml_doc on libyaml's event parser.
//
// libyaml does the scanning and parsing; this file builds the DocNode tree from
// its events (which scalars are quoted or null, aliases as copies), streams the
// step list to the sink, limits depth and alias expansion, and words libyaml's
// errors the way orch's other messages read.
#include "util/yaml_reader.h"

#include <fmt/format.h>
#include <yaml.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "util/item_relay.h"

namespace orch::detail {

namespace {

constexpr std::string_view kStrTag = "tag:yaml.org,2002:str";

std::string_view view(const yaml_char_t* s) {
  return s ? std::string_view(reinterpret_cast<const char*>(s)) : std::string_view();
}

// The tags orch reads: they name the kinds of value JSON data holds. Any other
// (!!binary, !!timestamp, !custom) would be read as plain text without a word.
// A null is empty when its text is a null's; `!!null x` is refused below.
bool is_supported_tag(std::string_view tag, bool scalar) {
  constexpr std::string_view kCore = "tag:yaml.org,2002:";
  if (tag.empty() || tag == "!") return true;
  if (!tag.starts_with(kCore)) return false;
  std::string_view name = tag.substr(kCore.size());
  if (!scalar) return name == "seq" || name == "map";
  return name == "str" || name == "int" || name == "float" || name == "bool" || name == "null";
}

std::string shown_tag(std::string_view tag) {
  constexpr std::string_view kCore = "tag:yaml.org,2002:";
  return tag.starts_with(kCore) ? "!!" + std::string(tag.substr(kCore.size())) : std::string(tag);
}

// The core schema's null: a plain, untagged scalar with one of these texts.
bool is_null_text(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// libyaml (YAML 1.1) also counts a lone \r, NEL (U+0085) and the Unicode line and
// paragraph separators as line breaks; editors and the JSON reader count
// '\n' only. Maps libyaml's lines to '\n'-counted ones.
class LineMap {
 public:
  explicit LineMap(std::string_view text) {
    if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF"))
      return;  // UTF-16: libyaml's lines stand
    bool any = text.find('\r') != std::string_view::npos || text.find("\xC2\x85") != std::string_view::npos ||
               text.find("\xE2\x80\xA8") != std::string_view::npos ||
               text.find("\xE2\x80\xA9") != std::string_view::npos;
    if (!any) return;
    std::size_t line = 0;  // libyaml's, 0-based
    for (std::size_t i = 0; i < text.size(); ++i) {
      std::string_view rest = text.substr(i);
      std::size_t extra_width = 0;  // the bytes of a break that is not '\n' or "\r\n"
      if (rest[0] == '\n') {
        ++line;
      } else if (rest[0] == '\r') {
        if (rest.starts_with("\r\n")) {
          ++line;
          ++i;
        } else {
          extra_width = 1;
        }
      } else if (rest.starts_with("\xC2\x85")) {
        extra_width = 2;
      } else if (rest.starts_with("\xE2\x80\xA8") || rest.starts_with("\xE2\x80\xA9")) {
        extra_width = 3;
      }
      if (extra_width > 0) {
        ++line;
        extra_starts_.push_back(line);
        i += extra_width - 1;
      }
    }
  }

  // The 1-based line of a libyaml mark.
  int line(const yaml_mark_t& mark) const {
    auto extras =
        std::upper_bound(extra_starts_.begin(), extra_starts_.end(), mark.line) - extra_starts_.begin();
    return static_cast<int>(mark.line) - static_cast<int>(extras) + 1;
  }

 private:
  std::vector<std::size_t> extra_starts_;  // libyaml lines that start after an extra break, ascending
};

// A completed anchored node, copied wherever an alias names it.
struct Anchor {
  DocNode node;
  std::size_t size = 0;   // nodes in it
  std::size_t depth = 0;  // levels of nesting it has (a scalar none, [] one)
};

void measure(const DocNode& node, std::size_t level, Anchor& out) {
  ++out.size;
  if (node.is_sequence() || node.is_map()) out.depth = std::max(out.depth, level + 1);
  for (const auto& item : node.items) measure(item, level + 1, out);
  for (const auto& [key, value] : node.entries) {
    measure(key, level + 1, out);
    measure(value, level + 1, out);
  }
}

// Builds the DocNode tree from the events of one document.
class YamlTreeBuilder {
 public:
  YamlTreeBuilder(const LineMap& lines, std::size_t text_size, const ItemSink& sink,
                  std::vector<YamlSyntaxError>* problems)
      : lines_(lines), alias_limit_(max_alias_nodes(text_size)), sink_(sink), problems_(problems) {}

  // Takes one event inside the document; false when it makes the document
  // invalid (error() says why).
  bool on_event(const yaml_event_t& event) {
    switch (event.type) {
      case YAML_SCALAR_EVENT:
        return on_scalar(event);
      case YAML_SEQUENCE_START_EVENT:
        if (!is_supported_tag(view(event.data.sequence_start.tag), false))
          return fail(event.start_mark, unsupported_tag(view(event.data.sequence_start.tag)));
        return start_container(event, DocNode::Type::Sequence, view(event.data.sequence_start.anchor));
      case YAML_MAPPING_START_EVENT:
        if (!is_supported_tag(view(event.data.mapping_start.tag), false))
          return fail(event.start_mark, unsupported_tag(view(event.data.mapping_start.tag)));
        return start_container(event, DocNode::Type::Map, view(event.data.mapping_start.anchor));
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Frame frame = std::move(stack_.back());
        stack_.pop_back();
        if (frame.node->is_map() && !merge_keys(*frame.node)) return false;
        return end_value(*frame.node, frame.anchor, frame.node->line);
      }
      case YAML_ALIAS_EVENT:
        return on_alias(event);
      default:
        return true;
    }
  }

  DocNode& root() { return root_; }
  const std::optional<YamlSyntaxError>& error() const { return error_; }

 private:
  struct Frame {
    DocNode* node;
    std::optional<StreamedList> stream;  // items go to the sink, one at a time
    std::string anchor;                  // registered when the node ends
    bool at_key = true;                  // Map: the next node is a key
  };

  static std::string unsupported_tag(std::string_view tag) {
    return fmt::format(
        "YAML tag '{}' is not supported: orch reads strings, numbers, booleans, null, lists "
        "and mappings (!!str, !!int, !!float, !!bool, !!null, !!seq, !!map)",
        shown_tag(tag));
  }

  bool on_scalar(const yaml_event_t& event) {
    const auto& s = event.data.scalar;
    std::string_view tag = view(s.tag);
    if (!is_supported_tag(tag, true)) return fail(event.start_mark, unsupported_tag(tag));
    if (tag == "tag:yaml.org,2002:null" &&
        !is_null_text(std::string_view(reinterpret_cast<const char*>(s.value), s.length)))
      return fail(event.start_mark, "a !!null value must be empty, ~ or null");
    DocNode& node = begin_value(event.start_mark);
    node.type = DocNode::Type::Scalar;
    if (tag == "tag:yaml.org,2002:null") {
      node.type = DocNode::Type::Null;
    } else if (s.tag != nullptr) {
      // "!" (libyaml's tag for a bare !, the non-specific tag) and !!str are strings.
      node.quoted = tag == "!" || tag == kStrTag;
    } else if (s.style != YAML_PLAIN_SCALAR_STYLE) {
      node.quoted = true;  // '...', "...", | and >
    } else if (is_null_text(std::string_view(reinterpret_cast<const char*>(s.value), s.length))) {
      node.type = DocNode::Type::Null;
    }
    if (node.type == DocNode::Type::Scalar)
      node.scalar.assign(reinterpret_cast<const char*>(s.value), s.length);
    return end_value(node, view(s.anchor), node.line);
  }

  bool start_container(const yaml_event_t& event, DocNode::Type type, std::string_view anchor) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxYamlDepth))
      return fail(event.start_mark, fmt::format("nesting deeper than {} levels", kMaxYamlDepth));
    std::optional<StreamedList> stream;
    // An anchored list is kept whole: an alias may copy it.
    if (type == DocNode::Type::Sequence && sink_ && anchor.empty()) {
      if (stack_.empty()) {
        stream = StreamedList::TopLevel;  // the step list of a StepSpec plan
      } else if (stack_.size() == 1 && stack_.back().node->is_map() && !stack_.back().at_key &&
                 !steps_streamed_) {
        const DocNode& key = stack_.back().node->entries.back().key;
        if (key.is_scalar() && key.scalar == "steps") {
          stream = StreamedList::Steps;
          steps_streamed_ = true;
        }
      }
    }
    DocNode& node = begin_value(event.start_mark);
    node.type = type;
    node.streamed = stream.has_value();
    stack_.push_back(Frame{&node, stream, std::string(anchor)});
    return true;
  }

  bool on_alias(const yaml_event_t& event) {
    std::string name(view(event.data.alias.anchor));
    auto it = anchors_.find(name);
    if (it == anchors_.end()) {
      bool enclosing =
          std::any_of(stack_.begin(), stack_.end(), [&](const Frame& f) { return f.anchor == name; });
      return fail(event.start_mark,
                  enclosing ? fmt::format("alias '*{}' is inside the node it names", name)
                            : fmt::format("alias '*{}' has no anchor '&{}' before it", name, name));
    }
    const Anchor& anchor = it->second;
    if (stack_.size() + anchor.depth > static_cast<std::size_t>(kMaxYamlDepth))
      return fail(event.start_mark,
                  fmt::format("alias '*{}' nests deeper than {} levels", name, kMaxYamlDepth));
    if (anchor.size > alias_limit_ - alias_nodes_)
      return fail(
          event.start_mark,
          fmt::format("aliases expand to more than {} nodes in all (at alias '*{}')", alias_limit_, name));
    alias_nodes_ += anchor.size;
    DocNode& node = begin_value(event.start_mark);
    const int alias_line = node.line;
    // What is inside keeps the anchor's lines, where its text is; the copy itself is
    // where the alias put it (a step copied whole starts at the alias).
    node = anchor.node;
    node.line = alias_line;
    return end_value(node, {}, node.line);
  }

  // The node the next value goes into, with its line set.
  DocNode& begin_value(const yaml_mark_t& mark) {
    DocNode* node = &root_;
    if (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.node->is_map()) {
        node = top.at_key ? &top.node->entries.emplace_back().key : &top.node->entries.back().value;
      } else if (top.stream) {
        item_ = DocNode{};
        node = &item_;
      } else {
        node = &top.node->items.emplace_back();
      }
    }
    node->line = lines_.line(mark);
    return *node;
  }

  // A value is complete: its anchor is registered, and an item of a streamed
  // list goes to the sink.
  // An anchor keeps a copy of its node, which counts toward the same limit as
  // the aliases' copies: anchors nested a thousand deep around one long list
  // would otherwise copy it a thousand times.
  bool end_value(DocNode& node, std::string_view anchor, int line) {
    if (!anchor.empty()) {
      Anchor measured;
      measure(node, 0, measured);
      if (measured.size > alias_limit_ - alias_nodes_)
        return fail_at(line,
                       fmt::format("anchors and aliases copy more than {} nodes in all (at anchor '&{}')",
                                   alias_limit_, anchor));
      alias_nodes_ += measured.size;
      measured.node = node;
      anchors_.insert_or_assign(std::string(anchor), std::move(measured));
    }
    if (stack_.empty()) return true;
    Frame& top = stack_.back();
    if (top.node->is_map())
      top.at_key = !top.at_key;
    else if (top.stream)
      sink_(*top.stream, item_);
    return true;
  }

  // YAML's merge key: `<<: *defaults` or `<<: [*a, *b]` adds the keys of the
  // merged mapping(s) that `map` does not write itself (its own keys win, then
  // the mappings of a list in order), where the `<<` was, each with the line it
  // was written on. A key a merged mapping writes twice is kept twice, for the
  // loader to report as a duplicate. A quoted '<<' is an ordinary key.
  bool merge_keys(DocNode& map) {
    auto is_merge = [](const DocEntry& e) {
      return e.key.is_scalar() && !e.key.quoted && e.key.scalar == "<<";
    };
    auto merge_at = std::find_if(map.entries.begin(), map.entries.end(), is_merge);
    if (merge_at == map.entries.end()) return true;
    for (auto again = std::find_if(merge_at + 1, map.entries.end(), is_merge); again != map.entries.end();
         again = std::find_if(merge_at + 1, map.entries.end(), is_merge)) {
      if (!problem_at(again->key.line,
                      fmt::format("merge key '<<' written twice in one mapping (first at line "
                                  "{}): merge several with a list, <<: [*a, *b]",
                                  merge_at->key.line)))
        return false;
      map.entries.erase(again);  // reported; the first one is merged
      merge_at = std::find_if(map.entries.begin(), map.entries.end(), is_merge);
    }
    DocNode& value = merge_at->value;
    bool maps = value.is_map();
    if (value.is_sequence())
      maps = !value.items.empty() &&
             std::all_of(value.items.begin(), value.items.end(), [](const DocNode& n) { return n.is_map(); });
    if (!maps) {
      if (!problem_at(merge_at->key.line,
                      "a merge key '<<' takes a mapping or a list of mappings (<<: *defaults, <<: [*a, *b])"))
        return false;
      map.entries.erase(merge_at);  // reported; the mapping is read without it
      return true;
    }
    std::vector<DocNode> sources;
    if (value.is_map()) {
      sources.push_back(std::move(value));
    } else {
      for (DocNode& item : value.items) sources.push_back(std::move(item));
    }
    std::set<std::string> taken;  // the mapping's own keys, then each merged mapping's
    for (const DocEntry& e : map.entries)
      if (!is_merge(e) && e.key.is_scalar()) taken.insert(e.key.scalar);
    std::vector<DocEntry> merged;
    for (DocNode& source : sources) {
      std::map<std::string, int> count;  // a key this mapping writes twice is kept, both times
      for (const DocEntry& e : source.entries)
        if (e.key.is_scalar()) ++count[e.key.scalar];
      for (DocEntry& e : source.entries) {
        if (!e.key.is_scalar() || count[e.key.scalar] > 1 || !taken.contains(e.key.scalar))
          merged.push_back(std::move(e));
      }
      for (const auto& [key, n] : count) taken.insert(key);
    }
    std::vector<DocEntry> entries;
    entries.reserve(map.entries.size() - 1 + merged.size());
    for (DocEntry& e : map.entries) {
      if (!is_merge(e)) {
        entries.push_back(std::move(e));
        continue;
      }
      for (DocEntry& m : merged) entries.push_back(std::move(m));
    }
    map.entries = std::move(entries);
    return true;
  }

  // A problem the document can be read past: reported to problems_ when there
  // is one (true: go on), else it fails the document.
  bool problem_at(int line, std::string message) {
    if (!problems_) return fail_at(line, std::move(message));
    problems_->push_back(YamlSyntaxError{line, std::move(message)});
    return true;
  }

  bool fail_at(int line, std::string message) {
    error_ = YamlSyntaxError{line, std::move(message)};
    return false;
  }

  bool fail(const yaml_mark_t& mark, std::string message) {
    error_ = YamlSyntaxError{lines_.line(mark), std::move(message)};
    return false;
  }

  const LineMap& lines_;
  std::size_t alias_limit_;
  std::size_t alias_nodes_ = 0;  // nodes aliases have expanded to so far
  const ItemSink& sink_;
  DocNode root_;
  DocNode item_;  // the current item of a streamed list
  std::vector<Frame> stack_;
  std::unordered_map<std::string, Anchor> anchors_;
  bool steps_streamed_ = false;
  std::optional<YamlSyntaxError> error_;
  std::vector<YamlSyntaxError>* problems_;
};

int line_at_offset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// The character at a ('\n'-counted) line and column, for hints; '\0' if unknown.
char char_at(std::string_view text, int line, std::size_t column) {
  std::size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return '\0';
    ++pos;
  }
  for (; pos < text.size(); ++pos) {
    if ((static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
    if (column-- == 0) return text[pos];
  }
  return '\0';
}

// libyaml's error, with its context ("while parsing a block mapping") and the
// line that context started on, plus a hint for the common mistakes.
YamlSyntaxError describe_error(const yaml_parser_t& parser, std::string_view text, const LineMap& lines) {
  std::string problem = parser.problem ? parser.problem : "unknown error";
  switch (parser.error) {
    case YAML_MEMORY_ERROR:
      return YamlSyntaxError{0, "out of memory"};
    case YAML_READER_ERROR: {
      // libyaml's offset counts bytes of the text.
      int line = line_at_offset(text, parser.problem_offset);
      if (problem == "control characters are not allowed")
        return YamlSyntaxError{line,
                               fmt::format("control character U+{:04X} is not allowed (write it as an escape "
                                           "in a double-quoted string)",
                                           parser.problem_value)};
      if (parser.problem_value >= 0) problem += fmt::format(" 0x{:02x}", parser.problem_value);
      return YamlSyntaxError{line, problem + " (YAML text must be UTF-8)"};
    }
    case YAML_SCANNER_ERROR:
    case YAML_PARSER_ERROR: {
      int line = lines.line(parser.problem_mark);
      std::string_view context = parser.context ? parser.context : "";
      // Two problems libyaml notices only lines later: the line to fix is where
      // the key or the quoted string started.
      if (problem == "could not find expected ':'" && context == "while scanning a simple key")
        return YamlSyntaxError{lines.line(parser.context_mark),
                               "could not find expected ':' (a line in a mapping must be 'key: value')"};
      if (problem == "found unexpected end of stream" && context == "while scanning a quoted scalar")
        return YamlSyntaxError{lines.line(parser.context_mark),
                               "unterminated quoted string (no closing quote before the end of the text)"};
      std::string message = problem;
      if (problem == "found character that cannot start any token") {
        char c = char_at(text, line, parser.problem_mark.column);
        if (c == '\t')
          message += " (a tab: YAML indents with spaces only)";
        else if (c == '@' || c == '`')
          message += fmt::format(" ('{}' is reserved: quote a value that starts with it)", c);
      } else if (parser.context != nullptr) {
        int context_line = lines.line(parser.context_mark);
        if (context_line != line)
          message += fmt::format(" ({} that starts on line {})", parser.context, context_line);
        else
          message += fmt::format(" ({})", parser.context);
      }
      return YamlSyntaxError{line, std::move(message)};
    }
    default:
      return YamlSyntaxError{0, problem};
  }
}

// Owners of libyaml's C structs.
struct Parser {
  yaml_parser_t parser;
  Parser() { yaml_parser_initialize(&parser); }
  ~Parser() { yaml_parser_delete(&parser); }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
};

struct Event {
  yaml_event_t event{};
  Event() = default;
  ~Event() { yaml_event_delete(&event); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

std::expected<DocNode, YamlSyntaxError> read_document(std::string_view text, const ItemSink& sink,
                                                      YamlDocuments documents,
                                                      std::vector<YamlSyntaxError>* problems) {
  Parser p;
  if (p.parser.error == YAML_MEMORY_ERROR) return std::unexpected(YamlSyntaxError{0, "out of memory"});
  yaml_parser_set_input_string(&p.parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  LineMap lines(text);
  YamlTreeBuilder builder(lines, text.size(), sink, problems);
  bool document_read = false;
  int end_marker_line = 0;  // OnlyOne: the line of the "..." that ended the document
  while (true) {
    Event e;
    if (!yaml_parser_parse(&p.parser, &e.event)) {
      // yaml_parser_parse leaves the event zeroed on failure; deleting it is safe.
      YamlSyntaxError error = describe_error(p.parser, text, lines);
      // After "...", libyaml (YAML 1.1) wants "---" or the end: whatever it
      // found instead is text outside the file's one document.
      if (end_marker_line > 0 && error.line > 0)
        error.message = fmt::format(
            "text after the document's end ('...' on line {}): the file holds exactly one "
            "YAML document",
            end_marker_line);
      return std::unexpected(std::move(error));
    }
    switch (e.event.type) {
      case YAML_STREAM_END_EVENT:
        return std::move(builder.root());
      case YAML_DOCUMENT_START_EVENT:
        // The first document is the data; later ones are not read, or
        // (OnlyOne) are an error rather than silently ignored.
        if (document_read && documents == YamlDocuments::First) return std::move(builder.root());
        if (document_read)
          return std::unexpected(
              YamlSyntaxError{lines.line(e.event.start_mark),
                              "a second YAML document starts here: the file holds exactly one"});
        break;
      case YAML_DOCUMENT_END_EVENT:
        // After an implicit end, one more event: text that is neither the end
        // nor a new document ("a: 1\n]") is an error. After "...", YAML 1.2
        // allows a bare document, which libyaml (YAML 1.1) would reject.
        if (e.event.data.document_end.implicit == 0) {
          if (documents == YamlDocuments::First) return std::move(builder.root());
          end_marker_line = lines.line(e.event.start_mark);
        }
        document_read = true;
        break;
      default:
        if (!builder.on_event(e.event)) return std::unexpected(*builder.error());
        break;
    }
  }
}

}  // namespace

std::expected<DocNode, YamlSyntaxError> read_yaml_doc(std::string_view text, const ItemSink& sink,
                                                      YamlDocuments documents,
                                                      std::vector<YamlSyntaxError>* problems) {
  if (!sink || text.size() < kYamlRelayMinBytes) return read_document(text, sink, documents, problems);
  // `problems` is only written on the parsing thread, and read after it has ended.
  std::expected<DocNode, YamlSyntaxError> result;
  relay_items(sink, [&](const ItemSink& relay) { result = read_document(text, relay, documents, problems); });
  return result;
}

}  // namespace orch::detail
