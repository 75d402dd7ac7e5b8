// The postconditions of an attempt that exited. See check_runner.h.
#include "engine/check_runner.h"

#include <fmt/format.h>

#include "engine/attempt_render.h"
#include "engine/scheduler_internal.h"
#include "util/atomic_file.h"

namespace orch {

namespace fs = std::filesystem;

std::vector<Postcondition> CheckRunner::checks_of(const Step& step, const Executor& executor) {
  // Appended: a shell_zero check's index stays its index in step.post.
  std::vector<Postcondition> post = step.post.empty() ? executor.default_post() : step.post;
  for (auto& p : executor.required_post(step)) post.push_back(std::move(p));
  return post;
}

AttemptSpec CheckRunner::shell_check_spec(const Postcondition& p, std::size_t index, const CheckSite& site,
                                          const fs::path& result_file, const std::string& result) {
  AttemptSpec spec;
  spec.run_id = site.run_id;
  spec.step_id = site.step_id;
  spec.attempt = site.attempt;
  spec.executor = "shell";
  spec.argv = {"/bin/sh", "-c", p.cmd};
  spec.workspace = site.workspace;
  const std::string suffix = fmt::format(".check{}", index);
  spec.stdout_path = site.files + suffix + ".stdout";
  spec.stderr_path = site.files + suffix + ".stderr";
  spec.usage_path.clear();  // a check reports no usage
  spec.env = {{"ORCH_RUN_ID", site.run_id},
              {"ORCH_STEP_ID", site.step_id},
              {"ORCH_RESULT_FILE", result_file.string()}};
  // Always set (empty when it cannot hold the result), so that an ORCH_RESULT
  // in orch's own environment never reaches the check as if it were the result.
  const bool fits = result.size() <= kResultEnvMax && result.find('\0') == std::string::npos;
  spec.env.emplace_back("ORCH_RESULT", fits ? result : std::string());
  spec.secrets = site.secrets;
  spec.timeout = p.timeout.value_or(kShellZeroTimeout);
  spec.kill_grace = site.kill_grace;
  spec.max_output = kCheckMaxOutput;
  return spec;
}

CheckProgress CheckRunner::run(const std::vector<Postcondition>& post, Flight& f, const CheckSite& site,
                               std::function<void(AttemptOutcome)> done) {
  const auto failed = [&f](std::string reason) {
    CheckResult r{PostKind::ShellZero, false, std::move(reason)};
    f.checks.push_back(r);
    return CheckProgress{CheckProgress::Kind::Failed, std::move(r.reason), nullptr};
  };
  CheckContext ctx;
  ctx.workspace = site.workspace;
  ctx.plan_dir = site.plan_dir;
  ctx.outcome = &*f.outcome;
  while (f.next_check < post.size()) {
    const Postcondition& p = post[f.next_check];
    if (p.kind == PostKind::ShellZero) {
      const std::string& result = f.outcome->result;
      const fs::path result_file = site.files + fmt::format(".check{}.result", f.next_check);
      if (auto written = write_file_atomically(result_file, result, Durability::RenameOnly); !written)
        return failed(fmt::format("shell_zero '{}': {}", p.cmd, written.error().message));
      Executor* shell = executors_ != nullptr ? executors_->find("shell") : nullptr;
      const AttemptSpec spec = shell_check_spec(p, f.next_check, site, result_file, result);
      auto started = shell ? shell->start(spec, loop_, std::move(done))
                           : fail(ErrorCode::Internal, "no shell executor registered");
      if (!started) return failed(fmt::format("shell_zero '{}': {}", p.cmd, started.error().message));
      return CheckProgress{CheckProgress::Kind::Started, "", std::move(*started)};
    }
    CheckResult r = evaluate_post(p, ctx);
    f.checks.push_back(r);
    ++f.next_check;
    if (!r.held) return CheckProgress{CheckProgress::Kind::Failed, std::move(r.reason), nullptr};
  }
  return CheckProgress{CheckProgress::Kind::AllHeld, "", nullptr};
}

CheckResult CheckRunner::shell_check_result(const Postcondition& p, const AttemptOutcome& o) {
  CheckResult r;
  r.kind = PostKind::ShellZero;
  r.held = o.ending == AttemptEnding::Exited && o.exit_code == 0;
  if (r.held) {
    r.reason = fmt::format("shell_zero '{}': exited 0", p.cmd);
  } else {
    const std::string how =
        o.ending == AttemptEnding::Exited ? fmt::format("exited with code {}", o.exit_code) : o.message;
    const std::string out = detail::tail_of(o.output_tail, 300);
    r.reason = fmt::format("shell_zero '{}': {}{}", p.cmd, how, out.empty() ? "" : "; output: " + out);
  }
  return r;
}

}  // namespace orch
