#include <nlohmann/json.hpp>

#include "orch/postcondition.h"
#include "util/json_text.h"

namespace orch {

std::string checks_to_json(const std::vector<CheckResult>& checks) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& c : checks) {
    arr.push_back({{"kind", post_kind_name(c.kind)}, {"held", c.held}, {"reason", c.reason}});
  }
  return json_text(arr);
}

}  // namespace orch
