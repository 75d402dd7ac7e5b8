// orch similarity "<text>" [--limit 5] [--json] [--workspace DIR]
// orch memory harvest|reindex [--json] [--workspace DIR]
// orch memory search "<text>" [--limit N] [--json] [--workspace DIR]
// The workspace's memory: lessons, the fault ledger and the full-text index (docs/memory.md).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json_docs.h"
#include "cli/number_option.h"
#include "memory/memory.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

struct MemoryArgs {
  std::string text;
  int limit = 5;
  bool json = false;
  std::string workspace = ".";
};

// One line of a title or snippet for the terminal.
std::string line_of(std::string_view text, std::size_t max = 100) {
  std::string out(trim(text));
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

ordered_json stats_json(const memory::MemoryIndex::ReindexStats& s) {
  return {{"notes", s.notes},
          {"lessons", s.lessons},
          {"traces", s.traces},
          {"rebuilt", s.rebuilt},
          {"skipped", s.skipped}};
}

void print(const ordered_json& j) {
  std::printf("%s\n", json_text(j, 2).c_str());
}

// True when the workspace has no memory at all yet: searching it finds nothing,
// and a search should not create .orch/memory just to say so.
bool memory_is_empty(const memory::MemoryPaths& paths) {
  std::error_code ec;
  for (const auto& p : {paths.db, paths.notes, paths.lessons, paths.traces})
    if (fs::exists(p, ec)) return false;
  return true;
}

// The index, brought up to date first (a directory walk when nothing changed).
// Files that could not be indexed are mentioned on stderr, once, without the list.
Expected<std::unique_ptr<memory::MemoryIndex>> fresh_index(const memory::MemoryPaths& paths, bool quiet) {
  auto index = ORCH_TRY(memory::MemoryIndex::open(paths));
  auto stats = ORCH_TRY(index->reindex());
  if (!quiet && !stats.skipped.empty())
    std::fprintf(stderr, "orch: %zu memory file(s) could not be indexed; `orch memory reindex` lists them\n",
                 stats.skipped.size());
  return index;
}

Expected<memory::MemoryPaths> workspace_paths(const MemoryArgs& args) {
  std::error_code ec;
  if (!fs::is_directory(args.workspace, ec))
    return fail(ErrorCode::NotFound, fmt::format("workspace {} is not a folder", args.workspace));
  return memory::memory_paths(args.workspace);
}

// The hits of `query` (similar or recall) on the workspace's index, brought up to
// date first; none when the workspace has no memory yet.
template <class Query>
Expected<std::vector<memory::Hit>> query_memory(const MemoryArgs& args, const Query& query) {
  if (trim(args.text).empty()) return fail(ErrorCode::InvalidInput, "nothing to search for: give some words");
  const auto paths = ORCH_TRY(workspace_paths(args));
  if (memory_is_empty(paths)) return std::vector<memory::Hit>();
  auto index = ORCH_TRY(fresh_index(paths, args.json));
  return query(*index);
}

int run_similarity(const MemoryArgs& args) {
  auto hits =
      query_memory(args, [&](memory::MemoryIndex& index) { return index.similar(args.text, args.limit); });
  if (!hits) return report_error(hits.error());
  if (args.json) {
    print(similarity_json(args.text, *hits));
    return kExitSucceeded;
  }
  if (hits->empty()) std::printf("no matches\n");
  for (const auto& h : *hits) {
    std::printf("%.2f %-8s %-6s %s  %s\n", h.score, h.score >= memory::kSimilarThreshold ? "similar" : "",
                h.kind.c_str(), h.id.c_str(), line_of(h.title, 80).c_str());
    std::printf("     %s\n", h.path.c_str());
  }
  return kExitSucceeded;
}

int run_search(const MemoryArgs& args) {
  auto hits =
      query_memory(args, [&](memory::MemoryIndex& index) { return index.recall(args.text, args.limit); });
  if (!hits) return report_error(hits.error());
  if (args.json) {
    ordered_json out = ordered_json::array();
    for (const auto& h : *hits)
      out.push_back({{"kind", h.kind},
                     {"id", h.id},
                     {"title", h.title},
                     {"path", h.path},
                     {"snippet", h.snippet},
                     {"score", h.score}});
    print({{"query", args.text}, {"hits", out}});
    return kExitSucceeded;
  }
  if (hits->empty()) std::printf("no matches\n");
  for (const auto& h : *hits) {
    std::printf("%7.3g  %-6s %s  %s\n", h.score, h.kind.c_str(), h.id.c_str(), line_of(h.title, 80).c_str());
    std::printf("         %s: %s\n", h.path.c_str(), line_of(h.snippet, 120).c_str());
  }
  return kExitSucceeded;
}

std::string counts_line(const memory::MemoryIndex::ReindexStats& s) {
  return fmt::format("{} note{}, {} lesson{}, {} trace{}", s.notes, s.notes == 1 ? "" : "s", s.lessons,
                     s.lessons == 1 ? "" : "s", s.traces, s.traces == 1 ? "" : "s");
}

void print_skipped(const std::vector<std::string>& skipped) {
  for (const auto& line : skipped) std::printf("skipped %s\n", line.c_str());
}

int run_reindex(const MemoryArgs& args) {
  auto paths = workspace_paths(args);
  if (!paths) return report_error(paths.error());
  auto stats = memory::reindex_memory(*paths, /*force=*/true);
  if (!stats) return report_error(stats.error());
  if (args.json) {
    print(stats_json(*stats));
  } else {
    std::printf("indexed %s\n", counts_line(*stats).c_str());
    print_skipped(stats->skipped);
  }
  return kExitSucceeded;
}

int run_harvest(const MemoryArgs& args) {
  auto paths = workspace_paths(args);
  if (!paths) return report_error(paths.error());
  auto stats = memory::harvest_traces(*paths);
  if (!stats) return report_error(stats.error());
  if (args.json) {
    print({{"harvested", stats->harvested},
           {"already", stats->already},
           {"open", stats->open},
           {"skipped", stats->skipped},
           {"index", stats_json(stats->reindex)}});
    return kExitSucceeded;
  }
  std::printf("harvested %d trace%s (%d already harvested, %d open)\n", stats->harvested,
              stats->harvested == 1 ? "" : "s", stats->already, stats->open);
  std::printf("indexed %s\n", counts_line(stats->reindex).c_str());
  // A broken trace is skipped by both the harvest and the index: listed once.
  std::vector<std::string> skipped = stats->skipped;
  for (const auto& line : stats->reindex.skipped)
    if (std::find(skipped.begin(), skipped.end(), line) == skipped.end()) skipped.push_back(line);
  print_skipped(skipped);
  return kExitSucceeded;
}

void add_common(CLI::App* sub, MemoryArgs& args) {
  sub->add_option("--workspace", args.workspace, "the project folder whose .orch/memory is used (default: .)")
      ->check(not_empty("the project folder"));
}

}  // namespace

Command add_similarity(CLI::App& app) {
  auto args = std::make_shared<MemoryArgs>();
  CLI::App* sub = app.add_subcommand(
      "similarity",
      "Find past requests (lessons, traces) and notes like this text: fuzzy similarity in [0, 1].");
  sub->add_option("TEXT", args->text, "the request to compare")->required();
  sub->add_option("--limit", args->limit, "the most matches to show (default 5)")->transform(whole_number(1));
  sub->add_flag("--json", args->json,
                "print {query, threshold, matches: [{kind, id, title, path, score, similar}]}");
  add_common(sub, *args);
  return [args]() -> int { return run_similarity(*args); };
}

Command add_memory(CLI::App& app) {
  auto args = std::make_shared<MemoryArgs>();
  CLI::App* sub = app.add_subcommand(
      "memory", "The workspace's memory: harvest lessons from closed traces, rebuild the index, search it.");
  sub->require_subcommand(1);
  CLI::App* harvest = sub->add_subcommand(
      "harvest", "Learn from every closed trace not harvested yet (lesson, fault ledger), then reindex.");
  CLI::App* reindex =
      sub->add_subcommand("reindex", "Rebuild the full-text index from notes, lessons and traces.");
  CLI::App* search = sub->add_subcommand("search", "Full-text search (BM25) over notes, lessons and traces.");
  search->add_option("TEXT", args->text, "what to look for")->required();
  search->add_option("--limit", args->limit, "the most hits to show (default 10)")
      ->transform(whole_number(1));
  args->limit = 10;
  for (CLI::App* s : {harvest, reindex, search}) {
    s->add_flag("--json", args->json, "print the result as JSON");
    add_common(s, *args);
  }
  return [args, harvest, reindex]() -> int {
    if (harvest->parsed()) return run_harvest(*args);
    if (reindex->parsed()) return run_reindex(*args);
    return run_search(*args);
  };
}

}  // namespace orch::cli
