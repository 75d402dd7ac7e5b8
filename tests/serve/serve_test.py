#!/usr/bin/env python3
"""`orch serve` over HTTP, with no browser: every route of the ledger's runs and
of the runtimes, their errors (bad ids and numbers, path traversal sent raw, an
oversized request), the token and same-site rules, approve/deny, and the
refusals at start. The streams, the graph and /metrics: serve_live_test.py.

Real processes throughout: `orch run` makes the ledger, `orch serve --listen
127.0.0.1:0` serves it, and the requests are plain HTTP over loopback.
"""
import json
import os
import re
import subprocess
import unittest

from serve_support import ORCH, PLAN, RISKY, ServeCase, get_json, orch, raw, request, run_id


class ServeTest(ServeCase):
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
