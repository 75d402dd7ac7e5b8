#!/usr/bin/env python3
"""`orch serve` over HTTP, with no browser: every route, its errors, the token
and same-site rules, the event stream of a running plan, and /metrics read by
Prometheus's own parser (Debian's python3-prometheus-client).

Real processes throughout: `orch run` makes the ledger, `orch serve --listen
127.0.0.1:0` serves it on a free port, and the requests are plain HTTP over
loopback (urllib, and a raw socket for what urllib would tidy away).
ORCH_BINARY names the orch binary (orch-serve beside it).
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

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


class ServeTest(unittest.TestCase):
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

    def test_runs_run_events_and_output(self):
        self.write("plan.yaml", PLAN)
        failed = run_id(orch("run", "plan.yaml", cwd=self.cwd).stderr)
        self.write("ok.yaml", "name: ok\nsteps:\n  - {id: x, sh: 'true'}\n")
        ok = run_id(orch("run", "ok.yaml", cwd=self.cwd).stderr)
        s = self.serve()
        status, runs = get_json(s.url + "api/runs")
        self.assertEqual(status, 200)
        self.assertEqual(runs["total"], 2)
        self.assertEqual([r["id"] for r in runs["runs"]], [ok, failed], "newest first")
        self.assertEqual(runs["counts"], {"failed": 1, "succeeded": 1})
        by_id = {r["id"]: r for r in runs["runs"]}
        self.assertEqual(by_id[failed]["progress"], {"done": 2, "total": 3})
        self.assertEqual(by_id[failed]["status"], "failed")
        _, only = get_json(s.url + "api/runs?status=failed")
        self.assertEqual([r["id"] for r in only["runs"]], [failed])
        _, second = get_json(s.url + "api/runs?limit=1&offset=1")
        self.assertEqual([r["id"] for r in second["runs"]], [failed])
        for bad in ("limit=0", "limit=x", "offset=-1", "limit=1001"):
            status, body = get_json(s.url + "api/runs?" + bad)
            self.assertEqual(status, 400, bad)
            self.assertIn("give a whole number", body["error"])

        status, report = get_json(s.url + "api/runs/" + failed)
        self.assertEqual(status, 200)
        self.assertEqual(report["run"]["status"], "failed")
        steps = {st["id"]: st for st in report["steps"]}
        self.assertEqual(steps["c"]["status"], "failed")
        self.assertIn("exit", steps["c"]["attempts"][0]["reason"])

        status, out = get_json(s.url + f"api/runs/{failed}/steps/a/attempts/1/output")
        self.assertEqual(status, 200)
        self.assertEqual(out["text"], "<script>alert(1)</script>\n", "the bytes, as text in JSON")
        _, err = get_json(s.url + f"api/runs/{failed}/steps/c/attempts/1/output?stream=stderr")
        self.assertEqual(err["text"], "bad\n")
        _, tail = get_json(s.url + f"api/runs/{failed}/steps/b/attempts/1/output?tail=3")
        self.assertEqual((tail["text"], tail["bytes"], tail["shown_from"]), ("lo\n", 6, 3))

        status, events = get_json(s.url + f"api/runs/{failed}/events")
        self.assertEqual(status, 200)
        kinds = [e["kind"] for e in events["events"]]
        self.assertEqual(kinds[0], "run_started")
        self.assertIn("step_failed", kinds)
        _, later = get_json(s.url + f"api/runs/{failed}/events?after={events['events'][2]['seq']}&limit=2")
        self.assertEqual([e["seq"] for e in later["events"]], [e["seq"] for e in events["events"][3:5]])

    def test_the_runtimes_routes(self):
        self.write("ok.yaml", "name: ok\nsteps:\n  - {id: x, sh: 'true'}\n")
        orch("run", "ok.yaml", cwd=self.cwd)
        task = json.loads(orch("task", "plan", "fix the crash in the date parser", "--json", cwd=self.cwd).stdout)
        s = self.serve()
        status, traces = get_json(s.url + "api/traces")
        self.assertEqual(status, 200)
        self.assertEqual([t["id"] for t in traces], [task["id"]])
        self.assertEqual(traces[0]["status"], "open")
        status, one = get_json(s.url + "api/traces/" + task["id"])
        self.assertEqual(status, 200)
        self.assertEqual(one["trace"]["id"], task["id"])
        self.assertEqual([e["kind"] for e in one["events"]][0], "trace_created")
        for route in ("api/reviews", "api/cycles"):
            status, listed = get_json(s.url + route)
            self.assertEqual((status, listed), (200, []), route)
        for route, what in (("api/traces/nope", "no task trace 'nope'"), ("api/reviews/nope", "no review 'nope'"),
                            ("api/cycles/nope", "no cycle run 'nope'")):
            status, body = get_json(s.url + route)
            self.assertEqual(status, 404, route)
            self.assertIn(what, body["error"])

    def test_the_graph_is_the_plans_dag_drawn_by_graphviz(self):
        self.write("plan.yaml", PLAN)
        rid = run_id(orch("run", "plan.yaml", cwd=self.cwd).stderr)
        self.write("wide.yaml", "name: wide\nsteps:\n" + "".join(
            "  - {id: w%d, executor: 'builtin:echo', inputs: {text: x}}\n" % i for i in range(2001)))
        wide = run_id(orch("run", "wide.yaml", cwd=self.cwd).stderr)
        s = self.serve()
        status, headers, body = request(s.url + f"api/runs/{rid}/graph.svg")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "image/svg+xml")
        svg = body.decode()
        self.assertIn("<svg", svg)
        self.assertEqual(svg.count('class="node status&#45;'), 3, "one node a step")
        self.assertEqual(svg.count('class="edge"'), 2, "one edge a dependency")
        self.assertEqual(svg.count("status&#45;failed"), 1)
        self.assertIn('id="step&#45;2"', svg)
        self.assertNotIn("<script", svg)
        status, body = get_json(s.url + "api/runs/nope/graph.svg")
        self.assertEqual(status, 404)
        status, body = get_json(s.url + f"api/runs/{wide}/graph.svg")
        self.assertEqual(status, 409)
        self.assertIn("2001 steps: more than 2000 are not drawn", body["error"])

    def test_the_plan_versions_of_a_replanned_run(self):
        self.write("plan.yaml", PLAN)
        rid = run_id(orch("run", "plan.yaml", cwd=self.cwd).stderr)
        fixed = PLAN.replace("echo bad >&2; exit 3", "echo fixed")
        self.write("fixed.yaml", fixed)
        resumed = orch("resume", rid, "--replan", "fixed.yaml", cwd=self.cwd)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        s = self.serve()
        status, versions = get_json(s.url + f"api/runs/{rid}/plans")
        self.assertEqual(status, 200)
        self.assertEqual([v["version"] for v in versions], [1, 2])
        self.assertEqual(versions[0]["text"], PLAN)
        self.assertEqual(versions[1]["text"], fixed)
        self.assertTrue(versions[1]["path"].endswith("fixed.yaml"))
        self.assertEqual(get_json(s.url + "api/runs/nope/plans")[0], 404)

    def test_a_runs_steps_come_a_page_at_a_time(self):
        self.write("many.yaml", "name: many\nsteps:\n" + "".join(
            "  - {id: m%03d, executor: 'builtin:echo', inputs: {text: x}}\n" % i for i in range(120)) +
            "  - {id: bad, sh: 'exit 1'}\n")
        rid = run_id(orch("run", "many.yaml", cwd=self.cwd).stderr)
        s = self.serve()
        _, summary = get_json(s.url + f"api/runs/{rid}?steps=0")
        self.assertNotIn("steps", summary, "the report without its steps")
        self.assertEqual(summary["counts"]["total"], 121)
        _, page = get_json(s.url + f"api/runs/{rid}/steps?offset=50&limit=50")
        self.assertEqual((page["total"], page["offset"], page["limit"]), (121, 50, 50))
        self.assertEqual([st["id"] for st in page["steps"]], ["m%03d" % i for i in range(50, 100)])
        self.assertEqual(page["steps"][0]["attempts"][0]["status"], "succeeded", "with its attempts")
        _, last = get_json(s.url + f"api/runs/{rid}/steps?offset=100&limit=50")
        self.assertEqual(len(last["steps"]), 21)
        _, failed = get_json(s.url + f"api/runs/{rid}/steps?status=failed")
        self.assertEqual([st["id"] for st in failed["steps"]], ["bad"])
        self.assertEqual(failed["total"], 1)
        _, full = get_json(s.url + f"api/runs/{rid}")
        self.assertEqual(page["steps"], full["steps"][50:100], "the same entries as the whole report")
        for bad in ("status=done-ish", "limit=0", "offset=x"):
            status, body = get_json(s.url + f"api/runs/{rid}/steps?" + bad)
            self.assertEqual(status, 400, bad)
        self.assertEqual(get_json(s.url + "api/runs/nope/steps")[0], 404)
        self.assertEqual(get_json(s.url + f"api/runs/{rid}?steps=2")[0], 400)

    def test_bad_ids_routes_traversal_and_oversized_requests(self):
        self.write("plan.yaml", PLAN)
        rid = run_id(orch("run", "plan.yaml", cwd=self.cwd).stderr)
        s = self.serve()
        for path, want in [("api/runs/nope", "no run 'nope'"),
                           (f"api/runs/{rid}/steps/zz/attempts/1/output", "no attempt 1 of step 'zz'"),
                           (f"api/runs/{rid}/steps/a/attempts/9/output", "no attempt 9"),
                           ("api/runs/nope/events", "no run 'nope'"),
                           ("api/runs/nope/stream", "no run 'nope'"),
                           ("api/nothing", "no such route")]:
            status, body = get_json(s.url + path)
            self.assertEqual(status, 404, path)
            self.assertIn(want, body["error"], path)
        status, body = get_json(s.url + f"api/runs/{rid}/steps/a/attempts/1/output?stream=../../etc/passwd")
        self.assertEqual(status, 400)
        for path in ("/../../etc/passwd", "/api/runs/..%2F..%2Fetc%2Fpasswd", "/%2e%2e/%2e%2e/etc/passwd",
                     "/api/runs/../../../etc/passwd/events"):
            code = raw(s.url, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            self.assertIn(code, (400, 404), path)
        big = b"x" * (100 * 1024)
        status, _, body = request(s.url + f"api/runs/{rid}/cancel", "POST", {"X-Orch-Token": self.token()}, big)
        self.assertEqual(status, 413)
        self.assertIn("too large", json.loads(body)["error"])

    def test_acting_needs_the_token_and_the_same_site(self):
        self.write("plan.yaml", RISKY)
        paused = orch("run", "plan.yaml", "--approve-medium", cwd=self.cwd)
        self.assertEqual(paused.returncode, 3, paused.stderr)
        rid = run_id(paused.stderr)
        s = self.serve()
        said = "".join(s.lines)
        self.assertIn("a new token, printed this once", said)
        token = self.token()
        self.assertIn(token, said)
        self.assertEqual(os.stat(os.path.join(self.cwd, ".orch", "serve.token")).st_mode & 0o777, 0o600)
        status, pending = get_json(s.url + f"api/runs/{rid}/approvals")
        self.assertEqual(status, 200)
        self.assertEqual([(a["step"], a["risk"]) for a in pending], [("migrate", "high")])
        self.assertIn("touch", pending[0]["command"])
        self.assertIn("awaiting approval", pending[0]["reason"])
        approve = s.url + f"api/runs/{rid}/steps/migrate/approve"
        for headers, why in [({}, "needs the server's token"),
                             ({"X-Orch-Token": "0" * 64}, "needs the server's token"),
                             ({"X-Orch-Token": token, "Origin": "http://evil.example"}, "another site"),
                             ({"X-Orch-Token": token, "Sec-Fetch-Site": "cross-site"}, "another site")]:
            status, _, body = request(approve, "POST", headers)
            self.assertEqual(status, 403, headers)
            self.assertIn(why, json.loads(body)["error"])
        events = orch("events", rid, "--json", cwd=self.cwd).stdout
        self.assertNotIn("step_approved", events, "nothing recorded by a refused request")
        status, _, body = request(approve, "POST", {"X-Orch-Token": token, "Origin": s.url.rstrip("/")})
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["approved"], "migrate")
        self.assertIn("step_approved", orch("events", rid, "--json", cwd=self.cwd).stdout)
        status, _, body = request(approve, "POST", {"X-Orch-Token": token})
        self.assertEqual(status, 200, "approving twice records it again, as orch approve does")
        resumed = orch("resume", rid, cwd=self.cwd)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        self.assertEqual(get_json(s.url + f"api/runs/{rid}/approvals")[1], [], "none waits any more")
        self.assertTrue(os.path.exists(os.path.join(self.cwd, "migrated")))
        # A second start reads the token back and does not print it.
        s.stop()
        again = self.serve()
        self.assertNotIn(token, "".join(again.lines))
        self.assertIn("the token is in", "".join(again.lines))

    def test_deny_cancels_the_paused_run(self):
        self.write("plan.yaml", RISKY)
        rid = run_id(orch("run", "plan.yaml", "--approve-medium", cwd=self.cwd).stderr)
        s = self.serve()
        status, _, body = request(s.url + f"api/runs/{rid}/steps/build/deny", "POST", {"X-Orch-Token": self.token()})
        self.assertEqual(status, 409, "build is not paused")
        status, _, body = request(s.url + f"api/runs/{rid}/steps/migrate/deny", "POST", {"X-Orch-Token": self.token()})
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["status"], "cancelled")
        _, report = get_json(s.url + "api/runs/" + rid)
        self.assertEqual(report["run"]["status"], "cancelled")
        kinds = [e["kind"] for e in get_json(s.url + f"api/runs/{rid}/events")[1]["events"]]
        self.assertIn("step_denied", kinds)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, "migrated")))

    def test_the_event_stream_follows_a_running_plan(self):
        self.write("slow.yaml", SLOW)
        # A ledger first, so that the server has one to open.
        self.write("ok.yaml", "name: ok\nsteps:\n  - {id: x, sh: 'true'}\n")
        orch("run", "ok.yaml", cwd=self.cwd)
        s = self.serve()
        runner = subprocess.Popen([ORCH, "run", "slow.yaml"], cwd=self.cwd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            rid = None
            deadline = time.time() + 20
            while rid is None and time.time() < deadline:
                for r in get_json(s.url + "api/runs?status=running")[1]["runs"]:
                    rid = r["id"]
                time.sleep(0.05)
            self.assertIsNotNone(rid, "the running run is listed")
            seen = []  # (kind, step, how late it arrived in seconds, was the run still going)
            with urllib.request.urlopen(s.url + f"api/runs/{rid}/stream", timeout=20) as stream:
                self.assertEqual(stream.headers["Content-Type"], "text/event-stream")
                data, kind, statuses = None, None, []
                for line in stream:
                    line = line.decode().rstrip("\n")
                    if line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: "):
                        data = json.loads(line[6:])
                    elif line == "" and data is not None:
                        if kind == "run":
                            statuses.append(data["status"])
                            if data["status"] == "succeeded" and "run_finished" in [x[0] for x in seen]:
                                break
                        elif kind == "ledger":
                            seen.append((data["kind"], data["step"], time.time() - data["ts"] / 1000.0,
                                         runner.poll() is None))
                        data, kind = None, None
            self.assertEqual(statuses[0], "running")
            self.assertEqual(statuses[-1], "succeeded", "the row's final status, as `event: run`")
            done = [x for x in seen if x[0] == "step_done"]
            self.assertEqual([x[1] for x in done], [f"s{i}" for i in range(6)])
            self.assertTrue(all(x[3] for x in done[:5]), "the first steps arrived while the run went on")
            self.assertLess(max(x[2] for x in done), 1.0, "each within a second of the ledger")
        finally:
            runner.wait(timeout=60)

    def test_the_runs_stream_says_when_the_list_changed_and_cancel_stops_a_run(self):
        self.write("ok.yaml", "name: ok\nsteps:\n  - {id: x, sh: 'true'}\n")
        orch("run", "ok.yaml", cwd=self.cwd)
        self.write("slow.yaml", "name: slow\nsteps:\n  - {id: nap, sh: 'sleep 30'}\n  - {id: after, deps: [nap], sh: 'true'}\n")
        s = self.serve()
        said = []
        with urllib.request.urlopen(s.url + "api/runs/stream", timeout=20) as stream:
            self.assertEqual(stream.headers["Content-Type"], "text/event-stream")
            runner = None
            for line in stream:
                line = line.decode().rstrip("\n")
                if line.startswith("data: "):
                    said.append(json.loads(line[6:])["runs"])
                    if len(said) == 1:
                        # A run started now changes the list: a second event.
                        runner = subprocess.Popen([ORCH, "run", "slow.yaml"], cwd=self.cwd,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    elif said[-1] == 2:
                        break
        self.assertEqual(said[0], 1)
        self.assertEqual(said[-1], 2)
        rid = None
        deadline = time.time() + 20
        while rid is None and time.time() < deadline:
            for r in get_json(s.url + "api/runs?status=running")[1]["runs"]:
                if r["active"]:
                    rid = r["id"]
            time.sleep(0.05)
        self.assertIsNotNone(rid)
        status, _, body = request(s.url + f"api/runs/{rid}/cancel", "POST", {"X-Orch-Token": self.token()})
        self.assertEqual(status, 200, body)
        self.assertEqual(runner.wait(timeout=30), 130, "its driver stopped it: cancelled")
        _, report = get_json(s.url + "api/runs/" + rid)
        self.assertEqual(report["run"]["status"], "cancelled")
        self.assertIn("cancel_requested", [e["kind"] for e in get_json(s.url + f"api/runs/{rid}/events")[1]["events"]])

    def test_metrics_read_by_prometheus_parser(self):
        self.write("plan.yaml", PLAN)
        orch("run", "plan.yaml", cwd=self.cwd)
        self.write("risky.yaml", RISKY)
        orch("run", "risky.yaml", "--approve-medium", cwd=self.cwd)
        s = self.serve()
        status, headers, body = request(s.url + "metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        def value(name, **labels):
            for fam in families.values():
                for sample in fam.samples:
                    if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                        return sample.value
            raise AssertionError(f"no sample {name} {labels}")
        self.assertEqual(families["orch_runs"].type, "gauge")
        self.assertEqual(value("orch_runs", status="failed"), 1)
        self.assertEqual(value("orch_runs", status="awaiting_approval"), 1)
        self.assertEqual(value("orch_runs", status="succeeded"), 0)
        self.assertEqual(value("orch_steps", status="done"), 3)
        self.assertEqual(value("orch_steps", status="failed"), 1)
        self.assertEqual(value("orch_approvals_pending"), 1)
        self.assertEqual(families["orch_attempts"].type, "counter")
        self.assertEqual(value("orch_attempts_total", outcome="succeeded"), 3)
        self.assertEqual(value("orch_attempts_total", outcome="failed", reason_class="exited"), 1)
        self.assertEqual(families["orch_attempt_duration_seconds"].type, "histogram")
        self.assertEqual(value("orch_attempt_duration_seconds_count"), 4)
        self.assertEqual(value("orch_attempt_duration_seconds_bucket", le="+Inf"), 4)
        self.assertEqual(families["orch_step_duration_seconds"].type, "histogram")
        self.assertEqual(value("orch_step_duration_seconds_count"), 4, "a, b, c (failed) and build: not migrate (paused)")
        self.assertEqual(value("orch_stalls_total"), 0)

    def test_metrics_tell_tokens_and_cost_by_provider_and_model(self):
        # A local OpenAI/Anthropic-compatible server of the project's (tests/fake_llm).
        here = os.path.dirname(os.path.abspath(__file__))
        port_file = os.path.join(self.cwd, "llm.port")
        fake = subprocess.Popen([sys.executable, os.path.join(here, "..", "fake_llm", "server.py"),
                                 "--port-file", port_file])
        try:
            deadline = time.time() + 20
            while not (os.path.exists(port_file) and open(port_file).read().strip()) and time.time() < deadline:
                time.sleep(0.05)
            llm = "http://127.0.0.1:%s" % open(port_file).read().strip()
            self.write("models.yaml", f"""providers:
  oa: {{api: openai, base_url: "{llm}/v1", api_key_env: ORCH_TEST_LLM_KEY}}
  an: {{api: anthropic, base_url: "{llm}/v1", api_key_env: ORCH_TEST_LLM_KEY}}
models:
  fast: {{provider: oa, model: gpt-test, max_tokens: 64, price_in: 1.0, price_out: 2.0}}
  claude: {{provider: an, model: claude-test, max_tokens: 64, price_in: 3.0, price_out: 15.0}}
default_model: fast
""")
            self.write("ask.yaml", """name: ask
steps:
  - {id: ask, executor: llm, inputs: {prompt: "[[reply: yes]] [[usage: 1000 500]]"}}
  - {id: claude, executor: 'llm:claude', deps: [ask], inputs: {prompt: "[[reply: ok]] [[usage: 2000 100]]"}}
  - {id: shell, deps: [claude], sh: 'true'}
""")
            env = dict(os.environ, ORCH_TEST_LLM_KEY="k")
            ran = subprocess.run([ORCH, "run", "ask.yaml", "--models", "models.yaml"], cwd=self.cwd, env=env,
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(ran.returncode, 0, ran.stderr)
        finally:
            fake.terminate()
            fake.wait(timeout=20)
        rid = run_id(ran.stderr)
        s = self.serve()
        _, _, body = request(s.url + "metrics")
        samples = [x for f in text_string_to_metric_families(body.decode()) for x in f.samples]
        def spent(name, **labels):
            return sum(x.value for x in samples
                       if x.name == name and all(x.labels.get(k) == v for k, v in labels.items()))
        self.assertEqual(spent("orch_tokens_total", run=rid, provider="oa", model="gpt-test"), 1500)
        self.assertEqual(spent("orch_tokens_total", run=rid, provider="an", model="claude-test"), 2100)
        self.assertEqual(spent("orch_tokens_total", run=rid, executor="shell", provider="", model=""), 0)
        self.assertAlmostEqual(spent("orch_cost_usd_total", provider="an", model="claude-test"),
                               (2000 * 3.0 + 100 * 15.0) / 1e6)
        _, report = get_json(s.url + f"api/runs/{rid}")
        models = {st["id"]: st["attempts"][0]["model"] for st in report["steps"]}
        self.assertEqual(models, {"ask": "oa/gpt-test", "claude": "an/claude-test", "shell": ""})

    def test_refusals_at_start(self):
        self.write("ok.yaml", "name: ok\nsteps:\n  - {id: x, sh: 'true'}\n")
        orch("run", "ok.yaml", cwd=self.cwd)
        wide = subprocess.run([ORCH, "serve", "--listen", "0.0.0.0:0"], cwd=self.cwd, capture_output=True,
                              text=True, timeout=20)
        self.assertEqual(wide.returncode, 2)
        self.assertIn("not a loopback address", wide.stderr)
        self.assertIn("--token-file", wide.stderr)
        loose = os.path.join(self.cwd, "loose.token")
        with open(loose, "w") as f:
            f.write("a" * 64 + "\n")
        os.chmod(loose, 0o644)
        refused = subprocess.run([ORCH, "serve", "--listen", "127.0.0.1:0", "--token-file", loose], cwd=self.cwd,
                                 capture_output=True, text=True, timeout=20)
        self.assertEqual(refused.returncode, 2)
        self.assertIn("only you may read", refused.stderr)
        nothing = subprocess.run([ORCH, "serve", "--store", "missing.db", "--listen", "127.0.0.1:0"],
                                 cwd=self.cwd, capture_output=True, text=True, timeout=20)
        self.assertEqual(nothing.returncode, 2, nothing.stderr)
        busy = self.serve()
        port = busy.url.rsplit(":", 1)[1].strip("/")
        taken = subprocess.run([ORCH, "serve", "--listen", "127.0.0.1:" + port], cwd=self.cwd,
                               capture_output=True, text=True, timeout=20)
        self.assertEqual(taken.returncode, 1)
        self.assertIn("cannot listen on 127.0.0.1:" + port, taken.stderr)

    def test_beyond_loopback_every_api_route_needs_the_token(self):
        self.write("ok.yaml", "name: ok\nsteps:\n  - {id: x, sh: 'true'}\n")
        orch("run", "ok.yaml", cwd=self.cwd)
        token_file = os.path.join(self.cwd, "wide.token")
        proc = subprocess.Popen([ORCH, "serve", "--listen", "0.0.0.0:0", "--token-file", token_file], cwd=self.cwd,
                                stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            while "http://" not in line:
                line = proc.stderr.readline()
                self.assertTrue(line, "it said where it listens")
            port = re.search(r":(\d+)/", line).group(1)
            url = f"http://127.0.0.1:{port}/"
            with open(token_file) as f:
                token = f.read().strip()
            self.assertEqual(request(url + "api/runs")[0], 403)
            self.assertEqual(request(url + "metrics")[0], 403)
            self.assertEqual(request(url + "api/runs", headers={"X-Orch-Token": token})[0], 200)
            self.assertEqual(request(url + "api/runs", headers={"Cookie": "orch_token=" + token})[0], 200)
            self.assertEqual(request(url)[0], 200, "the page itself holds no ledger data")
        finally:
            proc.terminate()
            proc.wait(timeout=20)

    def test_the_page_is_built_in_and_stops_on_sigterm(self):
        self.write("ok.yaml", "name: ok\nsteps:\n  - {id: x, sh: 'true'}\n")
        orch("run", "ok.yaml", cwd=self.cwd)
        s = self.serve()
        status, headers, body = request(s.url)
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/html"))
        page = body.decode()
        self.assertIn("<title>orch</title>", page)
        self.assertNotRegex(page, r"(src|href)=\"https?://", "nothing fetched from elsewhere")
        self.assertNotIn("innerHTML", page, "ledger text goes in as text only")
        self.assertEqual(request(s.url + "healthz")[2], b"ok\n")
        self.assertEqual(s.stop(), 0)
        self.assertIn("orch serve: stopped", "".join(s.lines))


if __name__ == "__main__":
    unittest.main(verbosity=2)
