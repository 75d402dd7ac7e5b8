#include "memory/index_sources.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>

#include "memory/lessons.h"
#include "memory/markdown_note.h"
#include "memory/trace_facts.h"
#include "util/strings.h"

namespace orch::memory {

namespace fs = std::filesystem;

namespace {

// Bump when what a document holds changes, so that every index is rebuilt once.
constexpr std::string_view kIndexFormat = "orch-memory-index-2";  // 2: lessons without their template

bool hidden(const fs::path& p) {
  return p.filename().string().starts_with(".");
}

void add_file(const fs::path& path, SourceKind kind, std::vector<SourceFile>& out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  out.push_back(SourceFile{path, kind, static_cast<std::uintmax_t>(st.st_size),
                           static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                           static_cast<std::uint64_t>(st.st_ino)});
}

void list_folder(const MemoryPaths& paths, const fs::path& folder, SourceKind kind,
                 std::string_view extension, bool recursive, std::vector<SourceFile>& out,
                 std::vector<std::string>& problems) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return;
  auto report = [&](const fs::path& where) {
    problems.push_back(
        fmt::format("{}: cannot read the folder: {}", workspace_relative(paths, where), ec.message()));
  };
  if (!recursive) {
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
      if (!hidden(it->path()) && it->path().extension() == extension) add_file(it->path(), kind, out);
    if (ec) report(folder);
    return;
  }
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  for (fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    if (hidden(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() == extension) add_file(it->path(), kind, out);
  }
  if (ec) report(folder);
}

// "<relative path>: <why>", with the absolute path the error may start with taken out.
Error located(const MemoryPaths& paths, const fs::path& file, const Error& e) {
  std::string why = e.message;
  const std::string prefix = file.string() + ": ";
  if (why.starts_with(prefix)) why = why.substr(prefix.size());
  return Error{e.code, fmt::format("{}: {}", workspace_relative(paths, file), why)};
}

std::string trace_body(const TraceFacts& f) {
  std::string body = f.lesson.request + "\n";
  if (!f.lesson.intent.empty()) body += "Intent: " + f.lesson.intent + "\n";
  if (!f.lesson.verify_failures.empty())
    body += "VERIFY failed on: " + join(f.lesson.verify_failures, "; ") + "\n";
  for (const auto& note : f.notes) body += note + "\n";
  if (!f.lesson.summary.empty() &&
      std::find(f.notes.begin(), f.notes.end(), f.lesson.summary) == f.notes.end())
    body += f.lesson.summary + "\n";
  return body;
}

std::string words_of(const std::vector<std::string>& parts) {
  std::vector<std::string> present;
  for (const auto& p : parts)
    if (!p.empty()) present.push_back(p);
  return join(present, " ");
}

}  // namespace

std::vector<SourceFile> list_sources(const MemoryPaths& paths, std::vector<std::string>& problems) {
  std::vector<SourceFile> out;
  list_folder(paths, paths.notes, SourceKind::Note, ".md", true, out, problems);
  list_folder(paths, paths.lessons, SourceKind::LessonFile, ".md", false, out, problems);
  list_folder(paths, paths.traces, SourceKind::Trace, ".json", false, out, problems);
  std::sort(out.begin(), out.end(), [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  return out;
}

std::string sources_signature(const std::vector<SourceFile>& sources, std::string_view lessons_generation) {
  // FNV-1a, 64 bits: a change detector, not a defence against anyone.
  std::uint64_t hash = 14695981039346656037ULL;
  auto mix = [&](std::string_view bytes) {
    for (char c : bytes) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
    hash ^= 0xff;  // a separator, so that ("ab", "c") and ("a", "bc") differ
    hash *= 1099511628211ULL;
  };
  mix(kIndexFormat);
  mix(lessons_generation);
  for (const auto& s : sources) {
    mix(s.path.string());
    mix(fmt::format("{} {} {} {}", static_cast<int>(s.kind), s.size, s.mtime_ns, s.inode));
  }
  return fmt::format("{:016x}", hash);
}

Expected<IndexDocument> note_document(const MemoryPaths& paths, const SourceFile& file) {
  auto note = read_markdown_note(file.path);
  if (!note) return std::unexpected(located(paths, file.path, note.error()));
  IndexDocument d;
  d.kind = "note";
  d.id = file.path.lexically_relative(paths.notes).replace_extension().generic_string();
  d.title = note->title;
  d.body = note->summary.empty() ? note->body : note->summary + "\n\n" + note->body;
  d.tags = join(note->tags, " ");
  d.path = workspace_relative(paths, file.path);
  d.subject = note->title;
  return d;
}

Expected<IndexDocument> lesson_file_document(const MemoryPaths& paths, const SourceFile& file) {
  auto note = read_markdown_note(file.path);
  if (!note) return std::unexpected(located(paths, file.path, note.error()));
  IndexDocument d;
  d.kind = "lesson";
  d.id = file.path.stem().string();
  d.title = note->title.starts_with("Lesson: ") ? note->title.substr(8) : note->title;
  d.body = lesson_index_body(note->body);
  d.tags = join(note->tags, " ");
  d.path = workspace_relative(paths, file.path);
  d.subject = d.title;
  return d;
}

Expected<std::optional<IndexDocument>> trace_document(const MemoryPaths& paths, const SourceFile& file) {
  auto facts = read_trace_file(file.path);
  if (!facts) return std::unexpected(located(paths, file.path, facts.error()));
  if (!facts->closed()) return std::nullopt;
  const LessonInput& l = facts->lesson;
  IndexDocument d;
  d.kind = "trace";
  d.id = l.trace_id;
  d.title = l.request;
  d.body = trace_body(*facts);
  d.tags = words_of({l.intent, facts->complexity, facts->strategy, l.result, facts->project});
  d.path = workspace_relative(paths, file.path);
  d.subject = l.request;
  return d;
}

IndexDocument lesson_document(const StoredLesson& stored) {
  const LessonInput& l = stored.lesson;
  IndexDocument d;
  d.kind = "lesson";
  d.id = l.trace_id;
  d.title = l.request;
  d.body = lesson_index_body(lesson_body(l));
  d.tags = words_of({"lesson", l.intent, l.result});
  d.path = stored.note_path;
  d.subject = l.request;
  return d;
}

}  // namespace orch::memory
