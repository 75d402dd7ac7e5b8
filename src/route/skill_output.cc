#include "route/skill_output.h"

#include <string>

namespace orch::route {

using ojson = nlohmann::ordered_json;

ojson skill_output_tokens(std::int64_t input, std::int64_t output) {
  return {{"input", input}, {"output", output}, {"total", input + output}};
}

ojson skill_output_skeleton(std::string_view skill_name, std::string_view status,
                            std::string_view timestamp) {
  ojson r = ojson::object();
  r["schema"] = kSkillOutputSchemaId;
  r["status"] = std::string(status);
  r["skill_name"] = std::string(skill_name);
  r["skill_version"] = ORCH_VERSION;
  r["run_id"] = nullptr;
  r["timestamp"] = std::string(timestamp);
  r["duration_ms"] = 0;
  r["tokens_used"] = skill_output_tokens(0, 0);
  r["cost_usd"] = 0.0;
  r["output"] = {{"summary", ""}, {"data", nullptr}};
  r["error"] = nullptr;
  return r;
}

ojson skill_output_error(std::string_view code, std::string_view message, bool recoverable,
                         std::optional<int> step) {
  ojson e = {{"code", std::string(code)}, {"message", std::string(message)}, {"recoverable", recoverable}};
  e["step"] = step ? ojson(*step) : ojson(nullptr);
  return e;
}

}  // namespace orch::route
