// route/embedded_data.h — the shipped route tables, compiled into orch
// (src/route/embedded_data.cmake: data/route/*.yaml as they were in the source
// tree when orch was built). Immutable; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orch::route {

struct ShippedTable {
  std::string name;  // "intents.yaml"
  std::string path;  // relative to the source tree: "data/route/intents.yaml"
  std::string_view text;
};

// In name order.
const std::vector<ShippedTable>& shipped_tables();

}  // namespace orch::route
