// flows/embedded_files.h — data files compiled into orch (src/flows/embedded_files.cmake).
//
// The shipped plan templates (templates/plans/*.yaml, in name order) and the plan
// JSON Schema (schemas/plan.schema.json), and for `orch review` the finding
// schema and the quality rubric (data/review/rubric.yaml), and for `orch cycle`
// the cycle.yaml schema and the commented cycle.yaml of `orch cycle init`, as
// they were in the source tree when orch was built. Immutable; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orch::flows {

struct EmbeddedFile {
  std::string path;  // relative to the source tree: "templates/plans/write-docs.yaml"
  std::string_view text;
};

const std::vector<EmbeddedFile>& shipped_templates();
std::string_view plan_schema_text();
std::string_view finding_schema_text();  // schemas/finding.schema.json
std::string_view review_rubric_text();   // data/review/rubric.yaml
std::string_view review_config_schema_text();  // schemas/review-config.schema.json
std::string_view review_report_schema_text();  // schemas/review-report.schema.json
std::string_view cycle_config_schema_text();   // schemas/cycle.schema.json
std::string_view cycle_init_yaml_text();       // data/cycle/cycle.yaml

}  // namespace orch::flows
