#!/usr/bin/env python3
"""What tests/serve/serve_test.py and serve_live_test.py share: the plans they
run, `orch serve` started on a free loopback port (Served), plain HTTP requests
(urllib, and a raw socket for what urllib would tidy away), and a test case
whose every test has a folder, a ledger and servers of its own (ServeCase).
ORCH_BINARY names the orch binary (orch-serve beside it).
"""
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request


ORCH = os.environ["ORCH_BINARY"]

PLAN = """name: demo
steps:
  - {id: a, sh: 'echo "<script>alert(1)</script>"'}
  - {id: b, deps: [a], sh: 'echo hello'}
  - {id: c, deps: [a], sh: 'echo bad >&2; exit 3'}
"""

RISKY = """name: release
steps:
  - id: build
    run: [touch, built]
  - id: migrate
    risk: high
    deps: [build]
    run: [touch, migrated]
"""

SLOW = "name: slow\nsteps:\n" + "".join(
    "  - {id: s%d, %ssh: 'sleep 0.3'}\n" % (i, "deps: [s%d], " % (i - 1) if i else "") for i in range(6))


def orch(*args, cwd, check=True):
    done = subprocess.run([ORCH, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    if check and done.returncode not in (0, 1, 3):
        raise AssertionError(f"orch {' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def run_id(stderr):
    m = re.search(r"\b(\d{8}-\d{6}-[0-9a-f]{4})\b", stderr)
    assert m, stderr
    return m.group(1)


class Served:
    """`orch serve` on a free loopback port, stopped with SIGTERM."""

    def __init__(self, cwd, *extra):
        self.proc = subprocess.Popen([ORCH, "serve", "--listen", "127.0.0.1:0", *extra], cwd=cwd,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = []
        deadline = time.time() + 20
        self.url = None
        while time.time() < deadline and self.url is None:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
            if m:
                self.url = m.group(1)
        assert self.url, "".join(self.lines)
        # The rest of its stderr (the token lines) is read as it comes.
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()
        time.sleep(0.1)

    def _drain(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(timeout=20)
        self.drain.join(timeout=20)  # its last lines read
        return code


def request(url, method="GET", headers=None, body=None):
    req = urllib.request.Request(url, method=method, headers=headers or {},
                                 data=body if body is not None else (b"" if method == "POST" else None))
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def get_json(url, **kw):
    status, _, body = request(url, **kw)
    return status, json.loads(body)


def raw(url, text):
    """Sends `text` as it is (no client tidying the path) and returns the status."""
    host, port = re.match(r"http://([^:]+):(\d+)/", url).groups()
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(text.encode())
        answer = s.recv(4096).decode(errors="replace")
    return int(answer.split()[1])


class ServeCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.cwd = self.dir.name
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc.poll() is None:
                s.stop()
        self.dir.cleanup()

    def serve(self, *extra):
        s = Served(self.cwd, *extra)
        self.servers.append(s)
        return s

    def write(self, name, text):
        with open(os.path.join(self.cwd, name), "w") as f:
            f.write(text)

    def token(self):
        with open(os.path.join(self.cwd, ".orch", "serve.token")) as f:
            return f.read().strip()

