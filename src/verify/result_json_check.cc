// verify/result_json_check.cc — the result_json postcondition: the result parses
// as JSON and, when the step names a schema (inline or by file), validates.
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "util/json_schema.h"
#include "util/json_text.h"
#include "verify/check_text.h"
#include "verify/postcondition_internal.h"

namespace orch::detail {

namespace {

namespace fs = std::filesystem;

// How many violations a reason lists before "and N more": enough for a repair
// attempt (told the reason) to fix a reply's usual mistakes in one go.
constexpr std::size_t kViolationsShown = 10;
constexpr std::size_t kMaxCachedSchemas = 32;

// Schemas are parsed once per thread and reused on every attempt: an inline one
// keyed by its text, a file keyed by its path and checked against its mtime and
// size so an edited schema file is picked up.
struct CachedFile {
  timespec mtime{};
  off_t size = 0;
  JsonSchema schema;
};

Expected<JsonSchema> inline_schema(const nlohmann::json& doc) {
  thread_local std::unordered_map<std::string, JsonSchema> cache;
  std::string key = json_text(doc);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto parsed = JsonSchema::parse(doc);
  if (!parsed) return parsed;
  if (cache.size() >= kMaxCachedSchemas) cache.clear();
  cache.emplace(std::move(key), *parsed);
  return parsed;
}

Expected<JsonSchema> file_schema(const fs::path& path) {
  thread_local std::unordered_map<std::string, CachedFile> cache;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return JsonSchema::load_file(path.string());  // it words the error
  auto it = cache.find(path.string());
  if (it != cache.end() && it->second.size == st.st_size && it->second.mtime.tv_sec == st.st_mtim.tv_sec &&
      it->second.mtime.tv_nsec == st.st_mtim.tv_nsec) {
    return it->second.schema;
  }
  auto loaded = JsonSchema::load_file(path.string());
  if (!loaded) return loaded;
  if (cache.size() >= kMaxCachedSchemas) cache.clear();
  cache[path.string()] = CachedFile{st.st_mtim, st.st_size, *loaded};
  return loaded;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the id helps no one.
std::string without_exception_id(std::string message) {
  if (message.starts_with("[json.exception.")) {
    auto end = message.find("] ");
    if (end != std::string::npos) message.erase(0, end + 2);
  }
  return message;
}

const char* json_type_name(const nlohmann::json& doc) {
  if (doc.is_object()) return "an object";
  if (doc.is_array()) return "an array";
  if (doc.is_string()) return "a string";
  if (doc.is_boolean()) return "a boolean";
  if (doc.is_null()) return "null";
  return "a number";
}

std::string list_violations(const std::vector<std::string>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < kViolationsShown; ++i) {
    if (i > 0) out += "; ";
    out += lines[i];
  }
  if (lines.size() > kViolationsShown) out += fmt::format("; and {} more", lines.size() - kViolationsShown);
  return out;
}

}  // namespace

CheckResult check_result_json(const Postcondition& post, const CheckContext& ctx) {
  const std::string& text = ctx.outcome->result;
  CheckResult out{PostKind::ResultJson, false, {}};
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    out.reason = fmt::format("result_json: the result is {}, not JSON{}", text.empty() ? "empty" : "only whitespace",
                             truncation_note(*ctx.outcome));
    return out;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    out.reason = fmt::format("result_json: the result is not JSON: {} ({}){}", one_line(without_exception_id(e.what()), 200),
                             byte_count(text.size()), truncation_note(*ctx.outcome));
    return out;
  }

  std::string matched;
  if (post.schema) {
    auto schema = inline_schema(*post.schema);
    if (!schema) {
      out.reason = "result_json: the inline schema is " + schema.error().message;
      return out;
    }
    auto violations = schema->validate(doc);
    if (!violations.empty()) {
      out.reason = fmt::format("result_json: the result does not match the inline schema ({} violation{}): {}",
                               violations.size(), violations.size() == 1 ? "" : "s", list_violations(violations));
      return out;
    }
    matched = ", matches the inline schema";
  }
  if (!post.schema_path.empty()) {
    fs::path path = post.schema_path;
    if (path.is_relative()) path = ctx.plan_dir / path;
    auto schema = file_schema(path);
    if (!schema) {
      out.reason = "result_json: " + schema.error().message;
      return out;
    }
    auto violations = schema->validate(doc);
    if (!violations.empty()) {
      out.reason = fmt::format("result_json: the result does not match schema {} ({} violation{}): {}",
                               in_quotes(post.schema_path), violations.size(), violations.size() == 1 ? "" : "s",
                               list_violations(violations));
      return out;
    }
    matched += fmt::format("{} matches schema {}", matched.empty() ? "," : " and", in_quotes(post.schema_path));
  }
  out.held = true;
  out.reason = fmt::format("result_json: {} ({}){}", json_type_name(doc), byte_count(text.size()), matched);
  return out;
}

}  // namespace orch::detail
