#include "memory/skills.h"

#include <algorithm>

#include "memory/markdown_note.h"
#include "memory/term_analyzer.h"
#include "sqlite/sqlite_statement.h"
#include "util/strings.h"

namespace orch::memory {

namespace fs = std::filesystem;

namespace {

// The skill files, sorted: NAME.md and NAME/SKILL.md directly under the folder.
std::vector<fs::path> skill_files(const fs::path& folder) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.filename().string().starts_with(".")) continue;
    if (p.extension() == ".md" && it->is_regular_file(ec)) files.push_back(p);
    if (it->is_directory(ec) && fs::is_regular_file(p / "SKILL.md", ec)) files.push_back(p / "SKILL.md");
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

Expected<std::vector<Skill>> discover_skills(const MemoryPaths& paths, std::string_view request, int limit) {
  struct Candidate {
    Skill skill;
    std::string tags;
  };
  std::vector<Candidate> candidates;
  for (const auto& file : skill_files(paths.skills)) {
    auto note = read_markdown_note(file);
    if (!note || trim(note->description).empty()) continue;
    Candidate c;
    c.skill.name = !note->name.empty()             ? note->name
                   : file.filename() == "SKILL.md" ? file.parent_path().filename().string()
                                                   : file.stem().string();
    c.skill.description = std::string(trim(note->description));
    c.skill.path = workspace_relative(paths, file);
    c.tags = join(note->tags, " ");
    candidates.push_back(std::move(c));
  }
  std::vector<Skill> found;
  if (candidates.empty() || limit < 1) return found;

  auto db = ORCH_TRY(SqliteDb::open(":memory:", "a skills index"));
  ORCH_TRY(db.exec(
      "CREATE VIRTUAL TABLE skills USING fts5(name, description, tags, tokenize = 'porter unicode61')",
      "creating the skills table"));
  auto terms = ORCH_TRY(TermAnalyzer::create(db));
  const std::string expression = terms->match_expression(request);
  if (expression.empty()) return found;
  auto insert = ORCH_TRY(
      Statement::prepare(db, "INSERT INTO skills (rowid, name, description, tags) VALUES (?1, ?2, ?3, ?4)"));
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    insert.bind_int(1, static_cast<std::int64_t>(i));
    insert.bind_text(2, candidates[i].skill.name);  // "cmake-build" is searched as its words
    insert.bind_text(3, candidates[i].skill.description);
    insert.bind_text(4, candidates[i].tags);
    ORCH_TRY(insert.run([] { return "listing the skills"; }));
  }
  auto query = ORCH_TRY(Statement::prepare(db,
                                           "SELECT rowid, bm25(skills, 3.0, 2.0, 1.0) AS rank FROM skills "
                                           "WHERE skills MATCH ?1 ORDER BY rank LIMIT ?2"));
  ResetOnExit reset(query);
  query.bind_text(1, expression);
  query.bind_int(2, limit);
  while (ORCH_TRY(query.step([] { return "matching the skills"; }))) {
    Skill s = candidates[static_cast<std::size_t>(query.column_int(0))].skill;
    s.score = -query.column_real(1);
    found.push_back(std::move(s));
  }
  return found;
}

}  // namespace orch::memory
