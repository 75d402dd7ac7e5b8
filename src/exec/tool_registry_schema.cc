// exec/tool_registry_schema.cc — schemas/registry.schema.json, compiled into orch.
//
// The published file is the source; this copy is what load_tool_registry checks
// files against, so orch needs no data files at run time. ToolRegistrySchema.
// EmbeddedCopyMatchesThePublishedFile fails when the two differ: after editing the
// schema, paste the file between the delimiters.
#include "exec/tool_registry.h"

namespace orch {

const char* tool_registry_schema_text() {
  return R"schema(
{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://orch.dev/schemas/registry.schema.json",
  "title": "orch tool registry",
  "description": "The tools `tool:NAME` steps may run (registry.yml, YAML or JSON). See docs/tools.md. Keys starting with 'x-' are ignored (room for YAML anchors and notes).",
  "type": "object",
  "required": ["tools"],
  "properties": {
    "version": {"const": 1, "description": "The format's version; 1 (the default)."},
    "tools": {
      "type": "object",
      "minProperties": 1,
      "propertyNames": {"$ref": "#/definitions/name"},
      "additionalProperties": {"$ref": "#/definitions/tool"}
    }
  },
  "patternProperties": {"^x-": {}},
  "additionalProperties": false,
  "definitions": {
    "name": {
      "type": "string",
      "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
      "maxLength": 64,
      "description": "A tool or sub-command name: letters, digits, '_', '.', '-'; starts with a letter or digit."
    },
    "risk": {
      "enum": ["low", "medium", "high", "critical", "LOW", "MEDIUM", "HIGH", "CRITICAL"]
    },
    "jsonSchema": {
      "type": "object",
      "description": "A JSON Schema (draft 4/6/7 keywords as valijson supports them)."
    },
    "tool": {
      "description": "A command-line tool (kind cli, the default) or an MCP server (kind mcp).",
      "if": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "mcp"}}},
      "then": {"$ref": "#/definitions/mcpServer"},
      "else": {"$ref": "#/definitions/cliTool"}
    },
    "mcpServer": {
      "type": "object",
      "description": "An MCP server whose tools steps call as `tool:SERVER.TOOL` (docs/tools.md, \"MCP servers\"). Exactly one of command and url.",
      "required": ["kind", "status", "risk"],
      "oneOf": [{"required": ["command"], "not": {"required": ["url"]}}, {"required": ["url"], "not": {"required": ["command"]}}],
      "properties": {
        "kind": {"const": "mcp"},
        "description": {"type": "string"},
        "command": {
          "type": "array",
          "minItems": 1,
          "items": {"type": "string", "minLength": 1},
          "description": "The server's argv (stdio transport: one JSON-RPC message per line on its stdin and stdout; its stderr goes to a log). The program as for a CLI tool's command."
        },
        "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Variables added to orch's environment for the server."},
        "cwd": {"type": "string", "minLength": 1, "description": "The server's working folder, relative to the registry file's folder; default orch's own."},
        "url": {"type": "string", "pattern": "^https?://", "description": "The server's MCP endpoint (streamable HTTP transport)."},
        "status": {"$ref": "#/definitions/status"},
        "safe_for_agents": {"type": "boolean", "default": false},
        "risk": {"$ref": "#/definitions/risk", "description": "The least risk of any step calling one of the server's tools."},
        "max_concurrency": {"type": "integer", "minimum": 1, "maximum": 64, "default": 4, "description": "tools/call requests in flight at once on the server; more wait."},
        "tools": {
          "type": "object",
          "description": "Rules for the server's tools, by name.",
          "additionalProperties": {
            "type": "object",
            "properties": {"risk": {"$ref": "#/definitions/risk", "description": "The tool's level, replacing the one its annotations give (a destructive tool is at least medium)."}},
            "patternProperties": {"^x-": {}},
            "additionalProperties": false
          }
        }
      },
      "patternProperties": {"^x-": {}},
      "additionalProperties": false
    },
    "status": {
      "enum": ["planned", "in_progress", "dry_run_validated", "prod_ready", "pending"],
      "description": "Only dry_run_validated and prod_ready tools that are safe_for_agents are chosen automatically. pending and planned tools are CRITICAL for the risk guard (refused); in_progress ones at least MEDIUM."
    },
    "cliTool": {
      "type": "object",
      "required": ["command", "status", "risk", "commands"],
      "properties": {
        "kind": {"const": "cli"},
        "description": {"type": "string"},
        "command": {
          "type": "array",
          "minItems": 1,
          "items": {"type": "string", "minLength": 1},
          "description": "The argv prefix: the program (looked up in PATH when it has no '/'; relative to the registry file's folder when it has one) and fixed arguments. Never split on spaces or run by a shell."
        },
        "status": {"$ref": "#/definitions/status"},
        "safe_for_agents": {"type": "boolean", "default": false, "description": "May be chosen automatically; when false, a step naming the tool is at least HIGH risk."},
        "risk": {"$ref": "#/definitions/risk", "description": "The tool's own risk level: a step using it is at least this risky."},
        "output_schema": {"$ref": "#/definitions/jsonSchema", "description": "The JSON output contract of every sub-command that does not give its own."},
        "commands": {
          "type": "object",
          "minProperties": 1,
          "propertyNames": {"$ref": "#/definitions/name"},
          "additionalProperties": {"$ref": "#/definitions/command"}
        }
      },
      "patternProperties": {"^x-": {}},
      "additionalProperties": false
    },
    "command": {
      "type": "object",
      "properties": {
        "description": {"type": "string"},
        "argv": {"type": "array", "items": {"type": "string"}, "description": "Fixed words after the tool's command (the sub-command's own word, fixed options)."},
        "args": {"type": "array", "items": {"$ref": "#/definitions/arg"}, "description": "How the step's inputs become argv, in this order."},
        "input_schema": {"$ref": "#/definitions/jsonSchema", "description": "The argument schema: a JSON Schema for the step's inputs without `command`."},
        "output_schema": {"$ref": "#/definitions/jsonSchema", "description": "The JSON output contract: a JSON Schema stdout must satisfy."},
        "risk": {"$ref": "#/definitions/risk", "description": "Raises the tool's risk for this sub-command."},
        "capabilities": {
          "type": "array",
          "items": {"type": "string", "minLength": 1},
          "uniqueItems": true,
          "description": "What the sub-command can do, for automatic selection (matched whole, never as a substring)."
        }
      },
      "patternProperties": {"^x-": {}},
      "additionalProperties": false
    },
    "arg": {
      "type": "object",
      "oneOf": [
        {"required": ["input"], "not": {"required": ["word"]}},
        {"required": ["word"], "maxProperties": 1}
      ],
      "properties": {
        "word": {"type": "string", "description": "A fixed argv element at this place (\"--\" before positional values, say)."},
        "input": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "not": {"const": "command"}, "description": "The input whose value this entry passes."},
        "flag": {"type": "string", "minLength": 1, "description": "Pass the value after this flag (`--limit 5`); absent: as a positional argument."},
        "joined": {"type": "boolean", "default": false, "description": "Flag and value in one argv element, with nothing between: `--limit=` gives `--limit=5`."}
      },
      "additionalProperties": false
    }
  }
}
)schema";
}

}  // namespace orch
