// flows/tool_direct.h — the EXECUTE stage of a tool-direct trace: the registry
// tool the ROUTE engine chose, given its inputs from the request, no model asked.
//
// The capability gate sends a trivial request that a registry tool covers down
// the tool-direct pipeline (ROUTE → EXECUTE → VERIFY → SUMMARIZE; the trace's
// llm is "none"). No model may then be asked to fill in the tool's inputs, so
// they are read from the request itself, by one rule (docs/task.md):
//   - a sub-command that requires no input gets `command` alone;
//   - a sub-command that requires exactly one input, and that input takes text
//     (a string, or a list of strings), gets the workspace files the request
//     names: a word that is the relative path of a file ("docs/a.md"), or the
//     name of a file in the workspace's top folder with or without its
//     extension, in any case ("readme" → README.md);
//   - anything else — two required inputs, a number, a request that names no
//     file, a word that could name two files — cannot be read without a model:
//     the answer is an InvalidInput error saying what is missing, and `task run`
//     escalates the trace with it.
// The inputs are checked against the sub-command's input_schema here, so a plan
// that could never start is never built.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "exec/tool_registry.h"
#include "flows/task_trace.h"

namespace orch::flows {

struct ToolDirectCall {
  std::string tool;               // the registry tool (the step's executor is tool:TOOL)
  std::string command;            // its sub-command
  std::string capability;         // the capability the request named
  nlohmann::ordered_json inputs;  // {command, ...arguments}, literal values (no placeholders)
  std::string describe() const;   // "filestats count with {"files":["README.md"]}"
};

// Whether the capability gate said no model is needed (llm "none").
bool is_tool_direct(const Trace& trace);

// The tool call of a tool-direct trace, from its ROUTE engine result and the
// registry (which may be null: then, as when the ROUTE engine chose nothing or
// the registry changed since, an error says so).
Expected<ToolDirectCall> tool_direct_call(const Trace& trace, const ToolRegistry* registry,
                                          const std::filesystem::path& workspace);

}  // namespace orch::flows
