#!/usr/bin/env python3
"""MCP servers as tools, black-box: a server's life in a run — a crash during a
call (started once more, then dead), a timeout and `orch cancel` reaching the
server as notifications/cancelled, the per-server concurrency — and
server-everything over streamable HTTP on loopback. Shared set-up:
mcp_tools_support.py; the rest of the behaviour: mcp_tools_test.py.
"""
import json
import os
import socket
import subprocess
import time
import unittest

from mcp_tools_support import EVERYTHING, NODE, ORCH, McpToolsCase, run_id  # noqa: E402


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
