#include "flows/review_finding.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <limits>

#include "engine/attempt_render.h"
#include "flows/embedded_files.h"
#include "util/json_schema.h"
#include "util/strings.h"

namespace orch::flows {

namespace review_finding_detail {

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The built-in finding schema, parsed once.
const Expected<JsonSchema>& finding_schema() {
  static const Expected<JsonSchema> schema = []() -> Expected<JsonSchema> {
    auto doc = nlohmann::json::parse(finding_schema_text(), nullptr, false);
    if (doc.is_discarded()) return fail(ErrorCode::Internal, "finding schema is not JSON");
    return JsonSchema::parse(doc);
  }();
  return schema;
}

std::string string_field(const nlohmann::json& item, const char* key) {
  auto it = item.find(key);
  return it != item.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Removes one pair of matching quote marks around a quote ("...", '...', `...`).
std::string_view unquote(std::string_view text) {
  if (text.size() >= 2 && text.front() == text.back() &&
      (text.front() == '"' || text.front() == '\'' || text.front() == '`'))
    return text.substr(1, text.size() - 2);
  return text;
}

std::size_t code_points(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace review_finding_detail

namespace rfd = review_finding_detail;

FindingStanding standing_of(const Finding& f) {
  return f.judge_hallucinated                   ? FindingStanding::JudgeHallucinated
         : f.unverified                         ? FindingStanding::Unverified
         : f.verdict == FindingVerdict::Refuted ? FindingStanding::Refuted
                                                : FindingStanding::Counted;
}

const char* finding_standing_name(FindingStanding standing) {
  switch (standing) {
    case FindingStanding::Counted:
      return "counted";
    case FindingStanding::Unverified:
      return "unverified";
    case FindingStanding::Refuted:
      return "refuted";
    case FindingStanding::JudgeHallucinated:
      return "judge_hallucinated";
  }
  return "counted";
}

std::optional<FindingStanding> parse_finding_standing(std::string_view name) {
  for (FindingStanding s : {FindingStanding::Counted, FindingStanding::Unverified, FindingStanding::Refuted,
                            FindingStanding::JudgeHallucinated})
    if (name == finding_standing_name(s)) return s;
  return std::nullopt;
}

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::Critical:
      return "CRITICAL";
    case Severity::Major:
      return "MAJOR";
    case Severity::Minor:
      return "MINOR";
    case Severity::Nit:
      return "NIT";
  }
  return "NIT";
}

std::optional<Severity> parse_severity(std::string_view text) {
  std::string s = rfd::lower_ascii(text);
  if (s == "critical" || s == "blocker") return Severity::Critical;
  if (s == "major") return Severity::Major;
  if (s == "minor") return Severity::Minor;
  if (s == "nit") return Severity::Nit;
  return std::nullopt;
}

const char* finding_verdict_name(FindingVerdict verdict) {
  switch (verdict) {
    case FindingVerdict::Confirmed:
      return "confirmed";
    case FindingVerdict::Refuted:
      return "refuted";
    case FindingVerdict::Downgraded:
      return "downgraded";
    case FindingVerdict::Held:
      return "held";
  }
  return "held";
}

std::optional<FindingVerdict> parse_finding_verdict(std::string_view text) {
  for (FindingVerdict v :
       {FindingVerdict::Confirmed, FindingVerdict::Refuted, FindingVerdict::Downgraded, FindingVerdict::Held})
    if (text == finding_verdict_name(v)) return v;
  return std::nullopt;
}

std::string normalise_path(std::string_view path) {
  std::string text(path);
  for (char& c : text)
    if (c == '\\') c = '/';
  const bool absolute = !text.empty() && text.front() == '/';
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('/', start);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == ".." && !parts.empty() && parts.back() != "..") {
      parts.pop_back();
      continue;
    }
    if (part == ".." && absolute) continue;  // "/.." is "/"
    parts.push_back(std::move(part));
  }
  return (absolute ? "/" : "") + join(parts, "/");
}

std::string relative_to_roots(std::string_view path, const std::vector<std::string>& roots) {
  std::string file = normalise_path(path);
  if (!file.starts_with('/')) return file;
  for (const auto& root : roots) {
    const std::string folder = normalise_path(root);
    if (folder.empty() || folder == "/" || !folder.starts_with('/')) continue;
    if (file.size() > folder.size() + 1 && file.starts_with(folder) && file[folder.size()] == '/')
      return file.substr(folder.size() + 1);
  }
  return file;
}

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

std::string finding_id(std::string_view file, std::string_view locus, std::string_view rule_or_claim) {
  std::string canonical =
      fmt::format("{}\n{}\n{}", normalise_path(file), rfd::lower_ascii(collapse_whitespace(locus)),
                  rfd::lower_ascii(collapse_whitespace(rule_or_claim)));
  return fingerprint_of(canonical).substr(0, 12);
}

bool evidence_missing(std::string_view evidence, std::string_view artifact_text) {
  std::string quote = collapse_whitespace(rfd::unquote(collapse_whitespace(evidence)));
  if (rfd::code_points(quote) < kMinEvidenceChars) return false;
  return collapse_whitespace(artifact_text).find(quote) == std::string::npos;
}

bool evidence_found(std::string_view evidence, std::string_view artifact_text) {
  std::string quote = collapse_whitespace(rfd::unquote(collapse_whitespace(evidence)));
  if (rfd::code_points(quote) < kMinEvidenceChars) return false;
  return collapse_whitespace(artifact_text).find(quote) != std::string::npos;
}

void check_evidence(Finding& finding, std::string_view artifact_text) {
  finding.unverified = evidence_missing(finding.evidence, artifact_text);
}

Expected<ReviewOutput> parse_review_output(const nlohmann::json& doc, std::string_view lens,
                                           const std::vector<std::string>& workspace_roots) {
  const auto& schema = rfd::finding_schema();
  if (!schema)
    return fail(ErrorCode::Internal, "the built-in finding schema is broken: " + schema.error().message);
  std::vector<std::string> problems = schema->validate(doc);
  if (!problems.empty())
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("reviewer output does not match schemas/finding.schema.json:\n{}", join(problems, "\n")));

  ReviewOutput out;
  out.scorecard = doc.at("scorecard");
  for (const auto& item : doc.at("findings")) {
    Finding f;
    f.file = relative_to_roots(item.at("file").get<std::string>(), workspace_roots);
    // A line beyond int64 is no line at all (the schema only says integer >= 0).
    if (auto it = item.find("line"); it != item.end() && it->is_number_integer() && !it->is_number_unsigned())
      f.line = it->get<std::int64_t>();
    else if (it != item.end() && it->is_number_unsigned() &&
             it->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      f.line = static_cast<std::int64_t>(it->get<std::uint64_t>());
    f.locus = item.at("locus").get<std::string>();
    f.lenses = {std::string(lens)};
    f.severity = parse_severity(item.at("severity").get<std::string>()).value_or(Severity::Nit);
    f.rule = rfd::string_field(item, "rule");
    f.claim = item.at("claim").get<std::string>();
    f.evidence = rfd::string_field(item, "evidence");
    f.failing_case = rfd::string_field(item, "failing_case");
    f.suggested_fix = rfd::string_field(item, "suggested_fix");
    if (auto it = item.find("mechanical"); it != item.end()) f.mechanical = it->get<bool>();
    if (auto it = item.find("confidence"); it != item.end()) f.confidence = it->get<double>();
    // "verdict" is the claim verifier's to set (docs/review.md): a reviewer's or a
    // judge's is ignored, like "id" and "lens".
    f.id = finding_id(f.file, f.locus, trim(f.rule).empty() ? f.claim : f.rule);
    out.findings.push_back(std::move(f));
  }
  return out;
}

Expected<ReviewOutput> parse_review_output_text(std::string_view text, std::string_view lens,
                                                const std::vector<std::string>& workspace_roots) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return fail(ErrorCode::InvalidInput, fmt::format("reviewer output is not JSON: {}", e.what()));
  }
  return parse_review_output(doc, lens, workspace_roots);
}

nlohmann::json finding_json(const Finding& f) {
  nlohmann::json j = {{"id", f.id},
                      {"file", f.file},
                      {"locus", f.locus},
                      {"lenses", f.lenses},
                      {"severity", severity_name(f.severity)},
                      {"rule", f.rule},
                      {"claim", f.claim},
                      {"evidence", f.evidence},
                      {"failing_case", f.failing_case},
                      {"suggested_fix", f.suggested_fix},
                      {"mechanical", f.mechanical},
                      {"unverified", f.unverified},
                      {"judge_hallucinated", f.judge_hallucinated}};
  if (f.line) j["line"] = *f.line;
  if (f.confidence) j["confidence"] = *f.confidence;
  if (f.verdict) j["verdict"] = finding_verdict_name(*f.verdict);
  return j;
}

Expected<Finding> finding_from_json(const nlohmann::json& j) {
  try {
    Finding f;
    f.id = j.at("id").get<std::string>();
    f.file = j.at("file").get<std::string>();
    f.locus = j.at("locus").get<std::string>();
    f.lenses = j.at("lenses").get<std::vector<std::string>>();
    auto severity = parse_severity(j.at("severity").get<std::string>());
    if (!severity) return fail(ErrorCode::InvalidInput, "finding: unknown severity");
    f.severity = *severity;
    f.rule = j.at("rule").get<std::string>();
    f.claim = j.at("claim").get<std::string>();
    f.evidence = j.at("evidence").get<std::string>();
    f.failing_case = j.at("failing_case").get<std::string>();
    f.suggested_fix = j.at("suggested_fix").get<std::string>();
    f.mechanical = j.at("mechanical").get<bool>();
    f.unverified = j.at("unverified").get<bool>();
    f.judge_hallucinated = j.at("judge_hallucinated").get<bool>();
    if (auto it = j.find("line"); it != j.end()) f.line = it->get<std::int64_t>();
    if (auto it = j.find("confidence"); it != j.end()) f.confidence = it->get<double>();
    if (auto it = j.find("verdict"); it != j.end()) f.verdict = parse_finding_verdict(it->get<std::string>());
    return f;
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::InvalidInput, fmt::format("finding: {}", e.what()));
  }
}

}  // namespace orch::flows
