// flows/review_markdown.cc — the Markdown report of a review document
// (.orch/reviews/ID.md, and `orch review --show` without --json): status,
// verdict, why it stopped, score (or why there is none), tokens, the rounds table
// (nine cells a row), the lenses that failed, escalations and findings.
#include <fmt/format.h>

#include <string>

#include "flows/review_finding.h"
#include "flows/review_rounds.h"
#include "flows/review_run.h"
#include "util/json_text.h"

namespace orch::flows {

using json = nlohmann::json;

namespace {
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 160 ? line.substr(0, 157) + "..." : line;
}
}  // namespace

namespace {
// Text for one cell of a Markdown table: a '|' would end the cell, a line break the row.
std::string markdown_cell(std::string text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n' || ch == '\r')
      out += ' ';
    else
      out += ch;
  }
  return out;
}
}  // namespace

std::string review_markdown(const json& doc) {
  std::string out =
      fmt::format("# Review {} — {}\n\n", doc.value("name", std::string()), doc.value("id", std::string()));
  out += fmt::format("- **Status:** {}\n", doc.value("status", std::string()));
  out += fmt::format("- **Verdict:** {}\n", doc.value("verdict", std::string()).empty()
                                                ? "(no round yet)"
                                                : doc.value("verdict", std::string()));
  if (!doc.value("stop_reason", std::string()).empty())
    out += fmt::format("- **Stopped:** {}\n", doc.value("stop_reason", std::string()));
  if (doc.contains("score") && doc["score"].is_object()) {
    const json& score = doc["score"];
    const int round = score.value("round", 0);
    const int last = static_cast<int>(doc.value("rounds", json::array()).size());
    out += fmt::format("- **Quality score:** {} ({}; thresholds {}{})\n", score.value("score", 0),
                       score.value("band", std::string()), json_text(score["thresholds"]),
                       round > 0 && round < last
                           ? fmt::format("; from round {}, the last in which every lens ran", round)
                           : std::string());
  } else if (!doc.value("rounds", json::array()).empty()) {
    out += "- **Quality score:** none (INCOMPLETE: no round in which every lens ran, so nothing to score)\n";
  }
  if (doc.contains("tokens"))
    out += fmt::format("- **Tokens:** {} spent of a {} cap\n", doc["tokens"].value("spent", 0LL),
                       doc["tokens"].value("cap", 0LL));
  out +=
      "\n## Rounds\n\n| round | verdict | CRITICAL | MAJOR | MINOR | NIT | excluded | new CRITICAL/MAJOR | "
      "fix |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  std::string failed_lenses;
  for (const auto& r : doc.value("rounds", json::array())) {
    const json& c = r["counts"];
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.value("round", 0),
                       r.value("verdict", std::string()), c.value("critical", 0), c.value("major", 0),
                       c.value("minor", 0), c.value("nit", 0), c.value("excluded", 0),
                       r.value("new_blocking", 0), markdown_cell(r["fix"].value("status", std::string())));
    for (const auto& rv : r.value("reviewers", json::array()))
      if (rv.value("status", std::string()) == role_status_name(RoleStatus::Failed))
        failed_lenses +=
            fmt::format("- round {}, lens `{}`: {}\n", r.value("round", 0), rv.value("lens", std::string()),
                        first_line(rv.value("reason", std::string())));
  }
  if (!failed_lenses.empty())
    out += "\n## Lenses that failed (their rounds are INCOMPLETE)\n\n" + failed_lenses;
  const json escalations = doc.value("escalations", json::array());
  if (!escalations.empty()) {
    out += "\n## Escalated to you (two-strikes: not patched a third time)\n\n";
    for (const auto& e : escalations)
      out += fmt::format("- `{}` (round {})\n", e.value("id", std::string()), e.value("round", 0));
  }
  out += "\n## Findings\n\n";
  const json findings = doc.value("findings", json::array());
  if (findings.empty()) out += "None.\n";
  for (const auto& f : findings) {
    std::string tags;
    const json& h = f["history"];
    const auto standing =
        h.empty() ? std::nullopt : parse_finding_standing(h.back().value("status", std::string()));
    if (standing == FindingStanding::JudgeHallucinated) tags += " [JUDGE-HALLUCINATED]";
    if (standing == FindingStanding::Unverified) tags += " [UNVERIFIED: quote not in the file]";
    if (standing == FindingStanding::Refuted) tags += " [REFUTED]";
    std::string rounds;
    for (const auto& e : h)
      rounds += fmt::format("{}{}:{}", rounds.empty() ? "" : ", ", e.value("round", 0),
                            e.value("severity", std::string()));
    out += fmt::format("- **{}** `{}` {} — {}: {}{} ({}; rounds {}; {})\n",
                       f.value("severity", std::string()), f.value("id", std::string()),
                       f.value("file", std::string()), f.value("locus", std::string()),
                       f.value("claim", std::string()), tags, f.value("state", std::string()), rounds,
                       f.value("mechanical", false) ? "mechanical" : "needs judgement");
  }
  return out;
}

}  // namespace orch::flows
