#include <set>
#include <utility>

#include "orch/executor.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace orch {

void Executor::check_step(const Step&, Diagnostics&) const {}

std::vector<Postcondition> Executor::default_post() const {
  return {};
}

std::vector<Postcondition> Executor::required_post(const Step&) const {
  return {};
}

RiskLevel Executor::risk(const Step& step) const {
  return step.risk.value_or(RiskLevel::Low);
}

std::string Executor::describe(const AttemptSpec& spec) const {
  std::string out;
  for (const auto& a : spec.argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  // The values the process gets in its environment (the step's `env:`, and the
  // placeholders of an `sh` script, ORCH_P<n>): the command alone would show
  // "$TARGET" and "${ORCH_P0}", not what they hold.
  std::string env;
  for (const auto& [name, value] : spec.env) {
    if (name.starts_with("ORCH_IN_")) continue;  // the inputs, shown below
    if (!env.empty()) env += ' ';
    env += name + "=" + shell_quote(value);
  }
  if (!env.empty()) {
    if (!out.empty()) out += '\n';
    out += "env: " + env;
  }
  if (!spec.inputs.empty()) {
    if (!out.empty()) out += '\n';
    out += "inputs: " + spec.inputs.dump();
  }
  // A value under a secret-looking name is never shown, whoever prints this (a
  // chain's dry run has no masker of its own).
  SecretMasker secrets;
  for (const auto& [name, value] : spec.env) secrets.add_if_secret(name, value);
  if (spec.inputs.is_object())
    for (const auto& [name, value] : spec.inputs.items())
      if (value.is_string()) secrets.add_if_secret(name, value.get_ref<const std::string&>());
  return secrets.empty() ? out : secrets.mask(out);
}

SpendEstimate Executor::estimate(const Step&) const {
  return {};
}

Expected<void> Executor::record(const AttemptSpec&, Store&) {
  return {};
}

void ExecutorRegistry::add(std::string name, std::shared_ptr<Executor> executor) {
  executors_[std::move(name)] = std::move(executor);
}

Executor* ExecutorRegistry::find(const std::string& name) const {
  if (auto it = executors_.find(name); it != executors_.end()) return it->second.get();
  auto colon = name.find(':');
  if (colon != std::string::npos && colon + 1 < name.size()) {
    if (auto it = executors_.find(name.substr(0, colon + 1)); it != executors_.end()) return it->second.get();
  }
  return nullptr;
}

void ExecutorRegistry::warm_up(const Plan& plan) const {
  std::set<Executor*> seen;
  for (const auto& step : plan.steps)
    if (Executor* e = find(step.executor); e != nullptr && seen.insert(e).second) e->warm_up();
}

std::vector<std::string> ExecutorRegistry::secret_env() const {
  std::set<std::string> names;
  for (const auto& [_, executor] : executors_)
    for (auto& name : executor->secret_env()) names.insert(std::move(name));
  return {names.begin(), names.end()};
}

std::shared_ptr<Executor> ExecutorRegistry::registered(const std::string& name) const {
  auto it = executors_.find(name);
  return it == executors_.end() ? nullptr : it->second;
}

std::vector<std::string> ExecutorRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : executors_) out.push_back(name);
  return out;
}

}  // namespace orch
