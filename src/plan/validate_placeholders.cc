// Placeholder checks of one step: every template in run, sh, inputs and env must
// parse, and each placeholder must name something that will exist when the step
// runs: an ancestor step (so its result is there), or an input of this step.
#include <fmt/format.h>

#include <cctype>
#include <set>

#include "orch/placeholder.h"
#include "plan/validate_context.h"
#include "util/strings.h"

namespace orch::detail {

namespace {

struct TemplateSite {
  std::string where;  // as shown in messages: "run", "sh", "inputs.prompt", "env.TOKEN"
  std::string field;  // the field_lines name of its line
  bool in_inputs = false;
};

class PlaceholderChecker {
 public:
  PlaceholderChecker(const ValidateContext& ctx, const Step& step)
      : ctx_(ctx), step_(step), position_(ctx.position(step)) {}

  void check(const std::string& text, const TemplateSite& site) {
    // Most strings hold no placeholder at all; skip the parser for them.
    if (text.find("${") == std::string::npos && text.find("#E") == std::string::npos) return;
    auto tmpl = parse_template(text);
    if (!tmpl) {
      error(site, fmt::format("in '{}': {}", site.where, tmpl.error().message));
      return;
    }
    for (const Segment& seg : tmpl->segments) check_segment(seg, site);
  }

  void check_json(const nlohmann::ordered_json& value, const TemplateSite& site) {
    if (value.is_string()) {
      check(value.get<std::string>(), site);
    } else if (value.is_structured()) {
      for (const auto& item : value) check_json(item, site);
    }
  }

 private:
  void error(const TemplateSite& site, std::string message) {
    std::string whole_field = site.field.substr(0, site.field.find('.'));  // "run.2" -> "run"
    ctx_.step_error(step_, site.field, std::move(message), {whole_field});
  }

  void check_segment(const Segment& seg, const TemplateSite& site) {
    std::string intro = fmt::format("placeholder '{}' in '{}'", seg.source, site.where);
    switch (seg.kind) {
      case Segment::Kind::StepResult:
      case Segment::Kind::StepJson: {
        auto target = ctx_.graph.index_of(seg.text);
        if (!target) {
          error(site, fmt::format("{} refers to unknown step '{}'{}", intro, seg.text,
                                  did_you_mean(seg.text, ids())));
        } else if (*target == position_ || seg.text == step_.id) {
          error(site,
                fmt::format("{} refers to this step itself; a step can only use results of its deps", intro));
        } else if (!ctx_.ancestors.is_ancestor(*target, position_)) {
          error(site, fmt::format("{} refers to step '{}', which is not an ancestor of '{}' (add it to deps)",
                                  intro, seg.text, step_.id));
        }
        break;
      }
      case Segment::Kind::IndexResult: {
        int n = static_cast<int>(ctx_.plan.steps.size());
        if (seg.index >= n) {
          error(site, fmt::format("{} refers to step #{}, but the plan has only {} steps (#0 to #{})", intro,
                                  seg.index, n, n - 1));
        } else if (seg.index >= position_) {
          error(site, fmt::format("{} refers to step #{}, which is not an earlier step (this is step #{})",
                                  intro, seg.index, position_));
        } else if (!ctx_.ancestors.is_ancestor(seg.index, position_)) {
          const std::string& id = ctx_.plan.steps[static_cast<std::size_t>(seg.index)].id;
          error(site,
                fmt::format("{} refers to step #{} ('{}'), which is not an ancestor of '{}' (add it to deps)",
                            intro, seg.index, id, step_.id));
        }
        break;
      }
      case Segment::Kind::Input:
        if (site.in_inputs) {
          error(site,
                fmt::format("{}: inputs cannot refer to other inputs (they are rendered first)", intro));
        } else if (!step_.inputs.contains(seg.text)) {
          std::vector<std::string> names;
          for (auto it = step_.inputs.begin(); it != step_.inputs.end(); ++it) names.push_back(it.key());
          error(site, fmt::format("{} refers to undeclared input '{}'{}", intro, seg.text,
                                  did_you_mean(seg.text, names)));
        }
        break;
      case Segment::Kind::Literal:
      case Segment::Kind::AttemptNumber:
      case Segment::Kind::PreviousFailure:
        break;
    }
  }

  // All step ids, built only when a did-you-mean needs them.
  const std::vector<std::string>& ids() {
    if (ids_.empty())
      for (const Step& s : ctx_.plan.steps) ids_.push_back(s.id);
    return ids_;
  }

  const ValidateContext& ctx_;
  const Step& step_;
  int position_;
  std::vector<std::string> ids_;
};

// An `sh` script that reads $ORCH_IN_<NAME> for a NAME the step does not declare
// reads an empty variable: orch exports exactly the step's inputs, named as written
// (`test_command` is $ORCH_IN_test_command, not $ORCH_IN_TEST_COMMAND).
void check_input_variables(const ValidateContext& ctx, const Step& step) {
  if (!step.sh) return;
  const std::string& script = *step.sh;
  constexpr std::string_view kPrefix = "ORCH_IN_";
  std::set<std::string> reported;
  for (std::size_t at = script.find(kPrefix); at != std::string::npos; at = script.find(kPrefix, at + 1)) {
    // Only a reference: $ORCH_IN_X, or ${ORCH_IN_X} written $${ORCH_IN_X} in a
    // template (a bare ${ORCH_IN_X} is an unknown placeholder, said as such).
    const bool referenced =
        (at >= 1 && script[at - 1] == '$') || (at >= 3 && script.compare(at - 3, 3, "$${") == 0);
    if (!referenced) continue;
    std::size_t end = at + kPrefix.size();
    while (end < script.size() &&
           (std::isalnum(static_cast<unsigned char>(script[end])) || script[end] == '_'))
      ++end;
    std::string name = script.substr(at + kPrefix.size(), end - at - kPrefix.size());
    if (name.empty() || step.inputs.contains(name) || !reported.insert(name).second) continue;
    std::vector<std::string> names;
    std::string same_but_case;
    for (auto it = step.inputs.begin(); it != step.inputs.end(); ++it) {
      names.push_back(it.key());
      if (ascii_lower(it.key()) == ascii_lower(name)) same_but_case = it.key();
    }
    std::string hint;
    if (!same_but_case.empty())
      hint = fmt::format(" (input names keep their case: input '{}' is $ORCH_IN_{})", same_but_case,
                         same_but_case);
    else if (std::string dym = did_you_mean(name, names); !dym.empty())
      hint = dym;
    else
      hint = fmt::format("; declare it under 'inputs' or write ${{inputs.{}}}", name);
    ctx.step_error(
        step, "sh",
        fmt::format("'sh' reads $ORCH_IN_{}, but the step has no input '{}', so it would be empty{}", name,
                    name, hint));
  }
}

}  // namespace

void check_placeholders(const ValidateContext& ctx, const Step& step) {
  check_input_variables(ctx, step);
  PlaceholderChecker checker(ctx, step);
  for (std::size_t i = 0; i < step.run.size(); ++i)
    checker.check(step.run[i], TemplateSite{"run", fmt::format("run.{}", i)});
  if (step.sh) checker.check(*step.sh, TemplateSite{"sh", "sh"});
  for (auto it = step.inputs.begin(); it != step.inputs.end(); ++it) {
    std::string name = "inputs." + it.key();
    checker.check_json(it.value(), TemplateSite{name, name, /*in_inputs=*/true});
  }
  for (const auto& [name, value] : step.env) checker.check(value, TemplateSite{"env." + name, "env." + name});
}

}  // namespace orch::detail
