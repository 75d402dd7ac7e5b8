"""What the black-box tests of MCP servers as tools share (mcp_tools_test.py,
mcp_tools_lifecycle_test.py): the published servers' paths, the SDK-built
fixture's, and McpToolsCase (a workspace, a registry, the orch binary run in it).
Needs ORCH_BINARY, node (ORCH_NODE or PATH) and tests/mcp/node_modules (`npm ci`
in tests/mcp, done by scripts/install-deps.sh). Without them it fails, never skips.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
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
