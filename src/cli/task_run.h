// cli/task_run.h — `orch task run`, registered under `orch task` by cmd_task.cc.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace orch::cli {

// Adds the flags of `orch task run` to `run`; returns what runs it.
std::function<int()> add_task_run(CLI::App& run);

}  // namespace orch::cli
