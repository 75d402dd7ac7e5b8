#!/usr/bin/env python3
"""`orch serve` over HTTP, with no browser: its event streams following running
plans, a cancel from the API, the graph drawn by Graphviz, and /metrics read by
Prometheus's own parser (Debian's python3-prometheus-client), tokens and cost by
provider and model from llm steps against tests/fake_llm/server.py.
"""
import json
import os
import subprocess
import sys
import time
import unittest
import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from serve_support import ORCH, PLAN, RISKY, SLOW, ServeCase, get_json, orch, request, run_id


class ServeLiveTest(ServeCase):
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

if __name__ == "__main__":
    unittest.main(verbosity=2)
