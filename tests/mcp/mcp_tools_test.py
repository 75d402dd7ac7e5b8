#!/usr/bin/env python3
"""MCP servers as tools (docs/tools.md, "MCP servers"), black-box: the real orch
binary against published MCP servers nobody here wrote — @modelcontextprotocol/
server-everything (stdio, and streamable HTTP on loopback) and server-filesystem
— and tests/mcp/tool_fixture.mjs (the official SDK's Server) for what the
published ones cannot be made to do: fail, crash, be slow.

Needs ORCH_BINARY, node (ORCH_NODE or PATH) and tests/mcp/node_modules (`npm ci`
in tests/mcp, done by scripts/install-deps.sh). Without them it fails, never skips.
"""
import json
import os
import unittest

from mcp_tools_support import EVERYTHING, FILESYSTEM, FIXTURE, NODE, McpToolsCase, run_id  # noqa: E402


class ToolsListTest(McpToolsCase):
    def test_lists_the_published_servers_tools_with_their_annotations_and_risk(self):
        self.registry()
        r = self.orch("tools", "list", "--registry", "registry.yml", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        entries = {t["name"]: t for t in doc["tools"]}
        self.assertEqual(entries["fs"]["kind"], "mcp")
        fs_tools = {t["name"]: t for t in entries["fs"]["tools"]}
        self.assertIn("read_text_file", fs_tools)
        self.assertEqual(fs_tools["write_file"]["annotations"]["destructiveHint"], True)
        self.assertEqual(fs_tools["write_file"]["risk"], "medium", "a destructive tool is at least medium")
        self.assertEqual(fs_tools["read_text_file"]["risk"], "low")
        self.assertEqual(fs_tools["write_file"]["executor"], "tool:fs.write_file")
        self.assertIn("path", fs_tools["write_file"]["input_schema"]["properties"])
        ev_tools = {t["name"]: t for t in entries["everything"]["tools"]}
        self.assertIn("echo", ev_tools)
        self.assertIn("get-sum", ev_tools)
        # The fixture lists its 7 tools over 3 pages (nextCursor).
        fx_tools = {t["name"]: t for t in entries["fx"]["tools"]}
        self.assertEqual(set(fx_tools), {"fail", "crash", "crash_once", "slow", "whoami", "bad_output", "nuke"})
        self.assertEqual(fx_tools["nuke"]["annotations"], {}, "no annotations")
        self.assertEqual(fx_tools["nuke"]["risk"], "medium", "MCP's default: a tool with no annotations may destroy")
        self.assertNotIn("unmatched_rules", entries["fx"])
        self.assert_gone(self.marks("starts"))

        text = self.orch("tools", "list", "--registry", "registry.yml")
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertRegex(text.stdout, r"tool:fs\.write_file\s+medium\s+destructive")
        self.assertRegex(text.stdout, r"tool:everything\.echo\s+low\s+read-only")

    def test_a_rule_for_a_tool_the_server_does_not_have_is_pointed_out(self):
        self.registry("""\
            fs4:
              kind: mcp
              command: [%s, %s, %s]
              status: prod_ready
              safe_for_agents: true
              risk: low
              tools: {write_fiel: {risk: low}, read_text_file: {risk: high}}
            """ % (NODE, FILESYSTEM, self.root))
        r = self.orch("tools", "list", "--registry", "registry.yml", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        entry = {t["name"]: t for t in json.loads(r.stdout)["tools"]}["fs4"]
        self.assertEqual(entry["unmatched_rules"], ["write_fiel"])
        risks = {t["name"]: t["risk"] for t in entry["tools"]}
        self.assertEqual(risks["read_text_file"], "high", "the registry's rule, raising it")
        self.assertEqual(risks["write_file"], "medium", "the misspelt rule does not lower it")
        self.assertEqual(risks["read_file"], "low")
        text = self.orch("tools", "list", "--registry", "registry.yml")
        self.assertIn("note: the registry's rule tools.fs4.tools.write_fiel names no tool of the server", text.stdout)

    def test_a_server_that_cannot_start_is_named_and_the_others_listed(self):
        self.write("registry.yml", f"""\
            tools:
              broken:
                kind: mcp
                command: [/nonexistent/server]
                status: prod_ready
                risk: low
              fs:
                kind: mcp
                command: [{NODE}, {FILESYSTEM}, {self.root}]
                status: prod_ready
                risk: low
            """)
        r = self.orch("tools", "list", "--registry", "registry.yml", "--json")
        self.assertEqual(r.returncode, 1, r.stderr)
        entries = {t["name"]: t for t in json.loads(r.stdout)["tools"]}
        self.assertIn("cannot run '/nonexistent/server'", entries["broken"]["error"])
        self.assertTrue(entries["fs"]["tools"])

    def test_a_bad_mcp_entry_is_refused_with_its_line(self):
        self.write("registry.yml", """\
            tools:
              fs:
                kind: mcp
                status: prod_ready
                risk: low
                max_concurrency: 500
            """)
        r = self.orch("tools", "list", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 2)
        self.assertIn("registry.yml:2: tools.fs: missing `command` (a server on stdio) or `url`", r.stderr)
        self.assertIn("registry.yml:6: tools.fs.max_concurrency: must be a whole number from 1 to 64", r.stderr)


class PlanTest(McpToolsCase):
    def test_a_plan_writes_and_reads_a_file_through_server_filesystem(self):
        self.registry("""\
            fs2:
              kind: mcp
              command: [%s, %s, %s]
              status: prod_ready
              safe_for_agents: true
              risk: low
              tools:
                write_file: {risk: low}
            """ % (NODE, FILESYSTEM, self.root))
        target = os.path.join(self.root, "notes.txt")
        self.write("plan.yaml", f"""\
            steps:
              - id: write
                executor: tool:fs2.write_file
                inputs: {{path: {target}, content: "41"}}
              - id: read
                deps: [write]
                executor: tool:fs.read_text_file
                inputs: {{path: {target}}}
              - id: sum
                deps: [read]
                executor: tool:everything.get-sum
                inputs: {{a: 1, b: "${{steps.read.json.content}}"}}
              - id: echo
                executor: tool:everything.echo
                inputs: {{message: hello}}
            """)
        v = self.orch("validate", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(v.returncode, 0, v.stderr)
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "41")
        steps = self.report(run_id(r.stderr))
        self.assertEqual(json.loads(steps["read"]["result"]), {"content": "41"}, "structuredContent, as JSON")
        self.assertEqual(steps["sum"]["result"], "The sum of 1 and 41 is 42.", "the placeholder's text read as a number")
        self.assertEqual(steps["echo"]["result"], "Echo: hello", "no structuredContent: the text")
        self.assertEqual(steps["echo"]["attempts"][0]["ending"], "exited")

    def test_a_secret_the_registry_gives_the_server_is_masked_in_what_it_answers(self):
        self.registry("""\
            withenv:
              kind: mcp
              command: [%s, %s, stdio]
              env: {MCP_TEST_TOKEN: sekrit-value-123456, MCP_TEST_PLAIN: plain-value-123456}
              status: prod_ready
              safe_for_agents: true
              risk: low
            """ % (NODE, EVERYTHING))
        self.write("plan.yaml", "steps:\n  - {id: env, executor: tool:withenv.get-env}\n")
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = run_id(r.stderr)
        result = self.report(run)["env"]["result"]
        self.assertIn("plain-value-123456", result, "the server got its env")
        self.assertNotIn("sekrit-value-123456", result)
        self.assertIn('"MCP_TEST_TOKEN": "***"', result)
        self.assertNotIn("sekrit-value-123456", self.orch("logs", run, "env").stdout)

    def test_a_schema_invalid_argument_is_a_validation_error_with_its_line(self):
        self.registry()
        self.write("plan.yaml", """\
            steps:
              - id: ok
                executor: tool:everything.echo
                inputs: {message: hi}
              - id: sum
                executor: tool:everything.get-sum
                inputs: {a: 2, b: forty}
              - id: typo
                executor: tool:everything.ecko
                inputs: {message: hi}
            """)
        for command in ("validate", "run"):
            r = self.orch(command, "plan.yaml", "--registry", "registry.yml")
            self.assertEqual(r.returncode, 2, command + r.stderr)
            self.assertIn("plan.yaml:7: step 'sum': tool:everything.get-sum: the inputs do not match the tool's "
                          "inputSchema: /b:", r.stderr)
            self.assertIn("plan.yaml:9: step 'typo': tool:everything.ecko: MCP server 'everything' has no tool "
                          "'ecko' (did you mean 'echo'?)", r.stderr)
        self.assertEqual(self.marks("calls"), [])

    def test_an_argument_with_a_placeholder_is_checked_when_the_attempt_starts(self):
        self.registry()
        self.write("plan.yaml", """\
            steps:
              - id: word
                executor: builtin:echo
                inputs: {text: forty}
              - id: sum
                deps: [word]
                executor: tool:everything.get-sum
                inputs: {a: 2, b: "${steps.word.result}"}
            """)
        self.assertEqual(self.orch("validate", "plan.yaml", "--registry", "registry.yml").returncode, 0)
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("tool:everything.get-sum: the inputs do not match the tool's inputSchema: /b:", r.stdout + r.stderr)

    def test_an_is_error_result_fails_the_attempt_with_its_text(self):
        self.registry()
        self.write("plan.yaml", "steps:\n  - {id: f, executor: tool:fx.fail}\n  - {id: b, executor: tool:fx.bad_output}\n"
                   "on_failure: continue\n")
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 1, r.stderr)
        steps = self.report(run_id(r.stderr))
        self.assertEqual(steps["f"]["status"], "failed")
        self.assertEqual(steps["f"]["attempts"][0]["reason"],
                         "tool:fx.fail returned an error (isError): the widget is broken")
        self.assertIn("tool:fx.bad_output: its structuredContent violates the outputSchema: /n:",
                      steps["b"]["attempts"][0]["reason"])

    def test_a_destructive_tool_waits_for_approval_unless_the_registry_says_otherwise(self):
        self.registry()
        self.write("plan.yaml", f"""\
            steps:
              - id: write
                executor: tool:fs.write_file
                inputs: {{path: {self.root}/x.txt, content: x}}
              - id: nuke
                executor: tool:fx.nuke
                inputs: {{what: everything}}
            """)
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("awaiting approval (medium risk)", r.stdout + r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "x.txt")), "nothing written before approval")
        self.assertEqual(self.marks("calls"), [], "nuke not called")
        # The registry lowers them: they run without asking.
        self.registry("""\
            fs3:
              kind: mcp
              command: [%s, %s, %s]
              status: prod_ready
              safe_for_agents: true
              risk: low
              tools: {write_file: {risk: low}}
            fx3:
              kind: mcp
              command: [%s, %s]
              env: {FIXTURE_STATE_DIR: %s}
              status: prod_ready
              safe_for_agents: true
              risk: low
              tools: {nuke: {risk: low}}
            """ % (NODE, FILESYSTEM, self.root, NODE, FIXTURE, self.state))
        self.write("plan.yaml", f"""\
            steps:
              - id: write
                executor: tool:fs3.write_file
                inputs: {{path: {self.root}/x.txt, content: x}}
              - id: nuke
                executor: tool:fx3.nuke
                inputs: {{what: everything}}
            """)
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.root, "x.txt")))
        # Not safe for agents: at least high, as for CLI tools.
        self.registry("""\
            unsafe:
              kind: mcp
              command: [%s, %s, stdio]
              status: prod_ready
              safe_for_agents: false
              risk: low
            """ % (NODE, EVERYTHING))
        self.write("plan.yaml", "steps:\n  - {id: e, executor: tool:unsafe.echo, inputs: {message: x}}\n")
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("awaiting approval (high risk)", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
