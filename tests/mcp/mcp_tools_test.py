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
import re
import shutil
import socket
import subprocess
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ORCH = os.environ.get("ORCH_BINARY", "orch")
NODE = os.environ.get("ORCH_NODE") or shutil.which("node") or "node"
MODULES = os.path.join(HERE, "node_modules", "@modelcontextprotocol")
EVERYTHING = os.path.join(MODULES, "server-everything", "dist", "index.js")
FILESYSTEM = os.path.join(MODULES, "server-filesystem", "dist", "index.js")
FIXTURE = os.path.join(HERE, "tool_fixture.mjs")


def run_id(stderr):
    m = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", stderr)
    assert m, stderr
    return m.group(1)


class McpToolsCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for path in (EVERYTHING, FILESYSTEM):
            if not os.path.exists(path):
                raise AssertionError(f"{path} is missing: run `npm ci` in tests/mcp (scripts/install-deps.sh)")

    def setUp(self):
        self.cwd = tempfile.mkdtemp(prefix="orch-mcp-test-")
        self.addCleanup(shutil.rmtree, self.cwd, True)
        self.root = os.path.join(self.cwd, "root")
        self.state = os.path.join(self.cwd, "state")
        os.makedirs(self.root)
        os.makedirs(self.state)

    def write(self, name, text):
        path = os.path.join(self.cwd, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def orch(self, *args, timeout=120):
        # TMPDIR: the servers' stderr logs (kept when one died) go with the test's folder.
        return subprocess.run([ORCH, *args], cwd=self.cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "TMPDIR": self.cwd})

    def registry(self, extra=""):
        return self.write("registry.yml", textwrap.dedent(f"""\
            tools:
              everything:
                kind: mcp
                command: [{NODE}, {EVERYTHING}, stdio]
                status: prod_ready
                safe_for_agents: true
                risk: low
              fs:
                kind: mcp
                description: the test's folder
                command: [{NODE}, {FILESYSTEM}, {self.root}]
                status: prod_ready
                safe_for_agents: true
                risk: low
              fx:
                kind: mcp
                command: [{NODE}, {FIXTURE}]
                env: {{FIXTURE_STATE_DIR: {self.state}}}
                status: prod_ready
                safe_for_agents: true
                risk: low
                max_concurrency: 1
            """) + textwrap.indent(textwrap.dedent(extra), "  "))

    def marks(self, name):
        path = os.path.join(self.state, name)
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().split()

    def report(self, run):
        r = self.orch("status", run, "--json", "--results")
        self.assertEqual(r.returncode, 0, r.stderr)
        return {s["id"]: s for s in json.loads(r.stdout)["steps"]}

    def assert_gone(self, pids):
        for pid in pids:
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                continue
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().split(")")[-1].split()[0]
            self.assertEqual(state, "Z", f"server process {pid} is still running after orch exited")


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


class LifecycleTest(McpToolsCase):
    def test_a_server_that_dies_is_started_once_more_then_marked_dead(self):
        self.registry()
        self.write("plan.yaml", """\
            on_failure: continue
            steps:
              - {id: who1, executor: tool:fx.whoami}
              - {id: crash1, deps: [who1], executor: tool:fx.crash}
              - {id: who2, deps: [who1], executor: tool:fx.whoami}
            """)
        r = self.orch("run", "-j", "1", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        steps = self.report(run_id(r.stderr))
        reason = steps["crash1"]["attempts"][0]["reason"]
        self.assertTrue(reason.startswith("MCP server 'fx' exited (status 3) during tools/call crash"), reason)
        self.assertIn("fixture: crashing on purpose", reason, "the server's stderr, from its log")
        self.assertEqual(steps["who2"]["status"], "done", "the server was started again")
        logs = [f for f in os.listdir(self.cwd) if f.startswith("orch-mcp-")]
        self.assertEqual(len(logs), 1, "a server died: its stderr log is kept")
        with open(os.path.join(self.cwd, logs[0], "fx.stderr.log")) as f:
            self.assertIn("fixture: crashing on purpose", f.read())
        starts = self.marks("starts")
        self.assertEqual(len(starts), 2, starts)
        self.assertEqual(json.loads(steps["who2"]["result"])["pid"], int(starts[1]))
        self.assert_gone(starts)

        # Twice: dead for the rest of the run.
        os.remove(os.path.join(self.state, "starts"))
        self.write("plan.yaml", """\
            on_failure: continue
            steps:
              - {id: crash1, executor: tool:fx.crash}
              - {id: crash2, executor: tool:fx.crash}
              - {id: who, executor: tool:fx.whoami}
            """)
        r = self.orch("run", "-j", "1", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        steps = self.report(run_id(r.stderr))
        for step in ("crash1", "crash2"):
            self.assertTrue(steps[step]["attempts"][0]["reason"].startswith(
                "MCP server 'fx' exited (status 3) during tools/call crash"), steps[step])
        self.assertTrue(steps["who"]["attempts"][0]["reason"].startswith(
            "MCP server 'fx' is dead: it exited twice during the run (the last time: status 3)"), steps["who"])
        self.assertEqual(len(self.marks("starts")), 2, "no third start")

    def test_a_timeout_cancels_the_call_at_the_server(self):
        self.registry()
        self.write("plan.yaml", "steps:\n  - {id: slow, executor: tool:fx.slow, timeout: 1s, inputs: {seconds: 60}}\n")
        started = time.monotonic()
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertLess(time.monotonic() - started, 30)
        self.assertEqual(r.returncode, 1, r.stderr)
        steps = self.report(run_id(r.stderr))
        self.assertEqual(steps["slow"]["attempts"][0]["ending"], "timed_out")
        with open(os.path.join(self.state, "cancelled")) as f:
            self.assertIn("timed out after 1000 ms", f.read(), "notifications/cancelled with the reason")
        self.assert_gone(self.marks("starts"))

    def test_orch_cancel_cancels_the_call_at_the_server(self):
        self.registry()
        self.write("plan.yaml", "steps:\n  - {id: slow, executor: tool:fx.slow, inputs: {seconds: 60}}\n")
        run = subprocess.Popen([ORCH, "run", "plan.yaml", "--registry", "registry.yml"], cwd=self.cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "TMPDIR": self.cwd})
        self.addCleanup(lambda: run.poll() is None and run.kill())
        deadline = time.monotonic() + 30
        while "slow" not in self.marks("calls"):
            self.assertLess(time.monotonic(), deadline, "the call never reached the server")
            time.sleep(0.1)
        runs = json.loads(self.orch("runs", "--json").stdout)
        c = self.orch("cancel", runs[0]["id"], "--wait", "30")
        self.assertEqual(c.returncode, 0, c.stdout + c.stderr)
        out, err = run.communicate(timeout=60)
        steps = self.report(runs[0]["id"])
        self.assertEqual(steps["slow"]["attempts"][0]["ending"], "cancelled", steps)
        self.assertTrue(self.marks("cancelled"), "notifications/cancelled reached the server")
        self.assert_gone(self.marks("starts"))

    def test_calls_wait_for_the_servers_concurrency(self):
        self.registry()
        self.write("plan.yaml", """\
            steps:
              - {id: a, executor: tool:fx.slow, inputs: {seconds: 1}}
              - {id: b, executor: tool:fx.slow, inputs: {seconds: 1}}
            """)
        r = self.orch("run", "-j", "2", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 0, r.stderr)
        steps = self.report(run_id(r.stderr))
        # max_concurrency 1: the second waits for the first.
        longest = max(steps["a"]["duration_ms"], steps["b"]["duration_ms"])
        self.assertGreaterEqual(longest, 1900, steps)
        self.assertEqual(len(self.marks("starts")), 1, "one server shared by both steps")


class HttpTest(McpToolsCase):
    def test_server_everything_over_streamable_http_on_loopback(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = open(os.path.join(self.cwd, "http.log"), "w")
        server = subprocess.Popen([NODE, EVERYTHING, "streamableHttp"], env={**os.environ, "PORT": str(port)},
                                  stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(log.close)
        self.addCleanup(server.wait)
        self.addCleanup(server.kill)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                self.assertLess(time.monotonic(), deadline, "server-everything did not listen")
                time.sleep(0.1)
        self.write("registry.yml", f"""\
            tools:
              web:
                kind: mcp
                url: http://127.0.0.1:{port}/mcp
                status: prod_ready
                safe_for_agents: true
                risk: low
            """)
        r = self.orch("tools", "list", "--registry", "registry.yml", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        names = [t["name"] for t in json.loads(r.stdout)["tools"][0]["tools"]]
        self.assertIn("echo", names)
        self.write("plan.yaml", """\
            steps:
              - {id: echo, executor: tool:web.echo, inputs: {message: over http}}
              - {id: weather, executor: tool:web.get-structured-content, inputs: {location: Chicago}}
              - {id: bad, executor: tool:web.get-sum, inputs: {a: 1}}
            """)
        v = self.orch("validate", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(v.returncode, 2)
        self.assertIn("plan.yaml:4: step 'bad': tool:web.get-sum: the inputs do not match the tool's inputSchema: "
                      "(root): Missing required property 'b'", v.stderr)
        self.write("plan.yaml", """\
            steps:
              - {id: echo, executor: tool:web.echo, inputs: {message: over http}}
              - {id: weather, executor: tool:web.get-structured-content, inputs: {location: Chicago}}
            """)
        r = self.orch("run", "plan.yaml", "--registry", "registry.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        steps = self.report(run_id(r.stderr))
        self.assertEqual(steps["echo"]["result"], "Echo: over http")
        self.assertIn("temperature", json.loads(steps["weather"]["result"]))
        log.flush()
        with open(os.path.join(self.cwd, "http.log")) as f:
            self.assertIn("session termination", f.read(), "the session was ended (DELETE) at the end of the run")


if __name__ == "__main__":
    unittest.main(verbosity=2)
