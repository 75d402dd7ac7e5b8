// route/table_parsers.h — one reader per table file, for tables.cc (internal).
//
// Each reads its file's tree into RouteTables, reporting every problem on the
// TableReader. References to another file (an intent named in complexity.yaml,
// a request type in budgets.yaml) are checked against `Known`, but only when that
// file had no problems of its own, so one broken table does not flood the others
// with consequences of it.
#pragma once

#include <string>
#include <vector>

#include "route/table_reader.h"
#include "route/tables.h"

namespace orch::route::table_parsers {

struct Known {
  std::vector<std::string> intents;        // empty: intents.yaml had problems, skip the checks
  std::vector<std::string> request_types;  // empty: requests.yaml had problems
};

void read_intents(TableReader& reader, const DocNode& root, RouteTables& out);
void read_requests(TableReader& reader, const DocNode& root, RouteTables& out);
void read_complexity(TableReader& reader, const DocNode& root, const Known& known, RouteTables& out);
void read_strategies(TableReader& reader, const DocNode& root, RouteTables& out);
void read_budgets(TableReader& reader, const DocNode& root, const Known& known, RouteTables& out);
void read_checklists(TableReader& reader, const DocNode& root, const Known& known, RouteTables& out);

}  // namespace orch::route::table_parsers
