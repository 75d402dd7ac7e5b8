// flows/cycle_status.h — the status file of `orch cycle`: the items and the
// state each is in (seed 003: status.yaml, `{id, file, state, ...}`).
//
// A YAML or JSON file holding a list of items, or a mapping whose `items` is that
// list; each item a mapping with (at least) the fields that name its id, its file
// and its state (StatusFields: `id`, `file`, `state` unless cycle.yaml renames
// them). Other fields and the items' order are the user's and are kept when the
// writer changes a state; YAML comments are not (the file is written anew, by
// libyaml's emitter). Every problem names the file and line.
// The writer replaces the file whole and atomically (write, fsync, rename, fsync
// of the folder): a reader, or a resume after kill -9, never sees it half-written.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "flows/cycle_lifecycle.h"
#include "flows/cycle_objectives.h"
#include "orch/error.h"

namespace orch::flows {

struct StatusFields {
  std::string id = "id";
  std::string file = "file";
  std::string state = "state";
};

struct StatusFile {
  std::filesystem::path path;
  StatusFields fields;
  nlohmann::ordered_json doc;  // the whole document, as read
  bool items_at_top = true;    // the list is the document (else doc["items"])
  bool json = false;           // written back as JSON (a .json file), else YAML
  std::vector<CycleItem> items;
};

// Reads and checks the status file: every item has the three fields as
// non-empty text, ids are unique, each state is a state of `lifecycle`. All
// problems at once, each "FILE:LINE: ...".
Expected<StatusFile> read_status_file(const std::filesystem::path& path, const StatusFields& fields,
                                      const Lifecycle& lifecycle);

// Sets item `id`'s state in `status` (document and items) and writes the file
// atomically. An unknown id is an error and nothing is written.
Expected<void> write_item_state(StatusFile& status, const std::string& id, const std::string& state);
// Several items' states (id, state) in one write: all of them or, on an unknown
// id, none.
Expected<void> write_item_states(StatusFile& status,
                                 const std::vector<std::pair<std::string, std::string>>& changes);

}  // namespace orch::flows
