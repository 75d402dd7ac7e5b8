// util/yaml_writer.cc — yaml_text on libyaml's emitter (yaml_emitter_*).
//
// libyaml decides the layout and escapes what a double-quoted scalar must; this
// file decides each scalar's style, since libyaml knows nothing of the core
// schema: asked for a plain "true" or "1e3", it writes them plain.
#include "util/yaml_writer.h"

#include <fmt/format.h>
#include <yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string_view>

namespace orch {

namespace {

// A string written plain reads back as the same string, in orch and in YAML 1.1
// readers alike (yaml_writer.h).
bool plain_word(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) != 0 || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' || c == '/'))
      return false;
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  constexpr std::array<std::string_view, 9> kReadAsOther = {"true", "false", "null", "yes", "no",
                                                            "on",   "off",   "y",    "n"};
  return std::find(kReadAsOther.begin(), kReadAsOther.end(), lower) == kReadAsOther.end();
}

// One libyaml emitter writing into a string; the first failure is kept.
class YamlEventWriter {
 public:
  explicit YamlEventWriter(YamlLayout layout) : layout_(layout) {
    ok_ = yaml_emitter_initialize(&emitter_) != 0;
    if (!ok_) return;
    yaml_emitter_set_output(&emitter_, &YamlEventWriter::append, &out_);
    yaml_emitter_set_unicode(&emitter_, 1);  // UTF-8 as it is, not \u escapes
    yaml_emitter_set_indent(&emitter_, 2);
    yaml_emitter_set_width(&emitter_, -1);  // never fold a long line
  }
  ~YamlEventWriter() { yaml_emitter_delete(&emitter_); }
  YamlEventWriter(const YamlEventWriter&) = delete;
  YamlEventWriter& operator=(const YamlEventWriter&) = delete;

  template <class Json>
  Expected<std::string> write(const Json& value) {
    yaml_event_t event;
    emit(yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING), event);
    emit(yaml_document_start_event_initialize(&event, nullptr, nullptr, nullptr, 1), event);
    node(value);
    emit(yaml_document_end_event_initialize(&event, 1), event);
    emit(yaml_stream_end_event_initialize(&event), event);
    if (!ok_) {
      std::string why = problem_.empty() && emitter_.problem ? emitter_.problem : problem_;
      return fail(ErrorCode::InvalidInput,
                  fmt::format("cannot write YAML: {}", why.empty() ? "out of memory" : why));
    }
    // libyaml may close a document that ends in a plain scalar with "...".
    if (out_.ends_with("\n...\n")) out_.resize(out_.size() - 4);
    if (layout_ == YamlLayout::Flow)
      while (!out_.empty() && out_.back() == '\n') out_.pop_back();
    return std::move(out_);
  }

 private:
  static int append(void* data, unsigned char* buffer, std::size_t size) {
    static_cast<std::string*>(data)->append(reinterpret_cast<const char*>(buffer), size);
    return 1;
  }

  // Hands an initialized event to the emitter, which owns it from then on.
  void emit(int initialized, yaml_event_t& event) {
    if (!ok_) {
      if (initialized) yaml_event_delete(&event);
      return;
    }
    if (!initialized) {
      ok_ = false;
      return;
    }
    ok_ = yaml_emitter_emit(&emitter_, &event) != 0;
  }

  void scalar(std::string_view text, bool plain) {
    if (!ok_) return;
    yaml_event_t event;
    const int initialized = yaml_scalar_event_initialize(
        &event, nullptr, nullptr, reinterpret_cast<const yaml_char_t*>(text.data()),
        static_cast<int>(text.size()), plain ? 1 : 0, plain ? 0 : 1,
        plain ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    if (!initialized) problem_ = "a string is not UTF-8 text";
    emit(initialized, event);
  }

  void string(std::string_view s) { scalar(s, plain_word(s)); }

  template <class Json>
  void node(const Json& value) {
    yaml_event_t event;
    if (value.is_object()) {
      const auto style =
          layout_ == YamlLayout::Flow || value.empty() ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE;
      emit(yaml_mapping_start_event_initialize(&event, nullptr, nullptr, 1, style), event);
      for (auto it = value.begin(); it != value.end(); ++it) {
        string(it.key());
        node(it.value());
      }
      emit(yaml_mapping_end_event_initialize(&event), event);
    } else if (value.is_array()) {
      const auto style =
          layout_ == YamlLayout::Flow || value.empty() ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE;
      emit(yaml_sequence_start_event_initialize(&event, nullptr, nullptr, 1, style), event);
      for (const auto& item : value) node(item);
      emit(yaml_sequence_end_event_initialize(&event), event);
    } else if (value.is_string()) {
      string(value.template get_ref<const std::string&>());
    } else if (value.is_number_float() && !std::isfinite(value.template get<double>())) {
      scalar("null", true);  // as JSON writes it
    } else {
      scalar(value.dump(), true);  // null, true, false, and numbers as JSON writes them
    }
  }

  YamlLayout layout_;
  yaml_emitter_t emitter_{};
  bool ok_ = false;
  std::string out_;
  std::string problem_;
};

}  // namespace

Expected<std::string> yaml_text(const nlohmann::ordered_json& value, YamlLayout layout) {
  return YamlEventWriter(layout).write(value);
}

Expected<std::string> yaml_text(const nlohmann::json& value, YamlLayout layout) {
  return YamlEventWriter(layout).write(value);
}

}  // namespace orch
