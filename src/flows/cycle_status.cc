#include "flows/cycle_status.h"

#include <fmt/format.h>

#include <set>

#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"
#include "util/yaml_writer.h"

namespace orch::flows {

namespace {

const detail::DocNode* entry_of(const detail::DocNode& map, const std::string& key) {
  for (const auto& e : map.entries)
    if (e.key.is_scalar() && e.key.scalar == key) return &e.value;
  return nullptr;
}

}  // namespace

Expected<StatusFile> read_status_file(const std::filesystem::path& path, const StatusFields& fields,
                                      const Lifecycle& lifecycle) {
  const std::string text = ORCH_TRY(read_file_text(path));
  const std::string name = path.string();
  auto parsed = detail::read_yaml_doc(text, {}, detail::YamlDocuments::OnlyOne);
  if (!parsed)
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}:{}: {}", name, parsed.error().line, parsed.error().message));
  StatusFile status;
  status.path = path;
  status.fields = fields;
  status.json = path.extension() == ".json";
  status.doc = yaml_to_ordered_json(*parsed);
  const detail::DocNode* list = &*parsed;
  if (parsed->is_map()) {
    list = entry_of(*parsed, "items");
    status.items_at_top = false;
  }
  if (!list || !list->is_sequence())
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}:{}: a status file is a list of items, or a mapping whose `items` is one",
                            name, parsed->line));
  std::vector<std::string> problems;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    const detail::DocNode& node = list->items[i];
    if (!node.is_map()) {
      problems.push_back(fmt::format("{}:{}: item {} is not a mapping", name, node.line, i + 1));
      continue;
    }
    CycleItem item;
    bool complete = true;
    for (const auto& [field, out] : {std::pair{&fields.id, &item.id}, std::pair{&fields.file, &item.file},
                                     std::pair{&fields.state, &item.state}}) {
      const detail::DocNode* value = entry_of(node, *field);
      if (!value || !value->is_scalar() || value->scalar.empty()) {
        problems.push_back(fmt::format("{}:{}: item {} has no '{}'", name, node.line, i + 1, *field));
        complete = false;
        continue;
      }
      *out = value->scalar;
    }
    if (!complete) continue;
    if (!ids.insert(item.id).second)
      problems.push_back(fmt::format("{}:{}: item '{}' is listed twice", name, node.line, item.id));
    if (!lifecycle.known(item.state))
      problems.push_back(fmt::format("{}:{}: item '{}': '{}' is not a state of the lifecycle{}", name,
                                     node.line, item.id, item.state,
                                     did_you_mean(item.state, lifecycle.states())));
    status.items.push_back(std::move(item));
  }
  if (!problems.empty()) return fail(ErrorCode::InvalidInput, join(problems, "\n"));
  return status;
}

Expected<void> write_item_state(StatusFile& status, const std::string& id, const std::string& state) {
  return write_item_states(status, {{id, state}});
}

Expected<void> write_item_states(StatusFile& status,
                                 const std::vector<std::pair<std::string, std::string>>& changes) {
  nlohmann::ordered_json next = status.doc;
  std::vector<std::size_t> at;
  for (const auto& [id, state] : changes) {
    std::size_t i = 0;
    while (i < status.items.size() && status.items[i].id != id) ++i;
    if (i == status.items.size())
      return fail(ErrorCode::InvalidInput, fmt::format("{}: no item '{}'", status.path.string(), id));
    (status.items_at_top ? next : next["items"])[i][status.fields.state] = state;
    at.push_back(i);
  }
  const std::string text =
      status.json ? json_text(next, 2) + "\n" : ORCH_TRY(yaml_text(next, YamlLayout::Block));
  ORCH_TRY(write_file_atomically(status.path, text, Durability::Synced));
  status.doc = std::move(next);
  for (std::size_t k = 0; k < at.size(); ++k) status.items[at[k]].state = changes[k].second;
  return {};
}

}  // namespace orch::flows
