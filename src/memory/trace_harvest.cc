#include "memory/trace_harvest.h"

#include <fmt/format.h>

#include "memory/fault_ledger.h"
#include "memory/index_sources.h"
#include "memory/lessons.h"
#include "memory/memory_store.h"
#include "memory/trace_facts.h"

namespace orch::memory {

namespace fs = std::filesystem;

Expected<HarvestAllStats> harvest_traces(const MemoryPaths& paths) {
  HarvestAllStats stats;
  auto index = ORCH_TRY(MemoryIndex::open(paths));
  MemoryStore& store = index->store();
  std::vector<std::string> problems;
  bool faults_changed = false;
  for (const auto& file : list_sources(paths, problems)) {
    if (file.kind != SourceKind::Trace) continue;
    const std::string shown = workspace_relative(paths, file.path);
    auto facts = read_trace_file(file.path);
    if (!facts) {
      std::string why = facts.error().message;
      if (why.starts_with(file.path.string() + ": ")) why = why.substr(file.path.string().size() + 2);
      stats.skipped.push_back(fmt::format("{}: {}", shown, why));
      continue;
    }
    if (!facts->closed()) {
      ++stats.open;
      continue;
    }
    LessonInput& lesson = facts->lesson;
    if (auto valid = check_trace_id(lesson.trace_id); !valid) {
      stats.skipped.push_back(fmt::format("{}: {}", shown, valid.error().message));
      continue;
    }
    if (ORCH_TRY(store.lessons().has_lesson(lesson.trace_id))) {
      ++stats.already;
      continue;
    }
    if (lesson.closed_at_ms == 0) lesson.closed_at_ms = file.mtime_ns / 1000000;
    ORCH_TRY(harvest_lesson(store.lessons(), paths, lesson));
    if (ORCH_TRY(record_faults(store.faults(), lesson))) faults_changed = true;
    ++stats.harvested;
  }
  stats.skipped.insert(stats.skipped.begin(), problems.begin(), problems.end());
  std::error_code ec;
  if (faults_changed || !fs::exists(paths.fault_ledger, ec))
    ORCH_TRY(export_fault_ledger(store.faults(), paths));
  stats.reindex = ORCH_TRY(index->reindex());
  return stats;
}

}  // namespace orch::memory
