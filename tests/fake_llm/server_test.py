#!/usr/bin/env python3
"""Tests of tests/fake_llm/server.py, the fake model provider used by the tests of
orch's `llm` executor.

The server runs as a subprocess (--port 0, --port-file), as a test harness would
run it, and is driven over real HTTP with urllib.request / http.client: both APIs
(OpenAI Chat Completions, Anthropic Messages), authentication, every directive,
concurrency during [[sleep]], the control endpoints /_requests and /_reset, and the
process's own life (port file, stdout line, SIGTERM/SIGINT, the key never logged).

Every network call has a timeout; every server is killed (with its process group)
in tearDown/tearDownClass. Python 3 standard library only.

Run: python3 tests/fake_llm/server_test.py -v
"""

import email.utils
import gzip
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.py")
API_KEY = "sk-fake-test-KEY-0123456789"
TIMEOUT = 5.0  # for each HTTP call and for the server to start or stop


class FakeServer:
    """One server.py subprocess: started with a port file, stopped with a signal."""

    def __init__(self, *extra_args):
        self.tmp = tempfile.TemporaryDirectory(prefix="fake-llm-test-")
        self.port_file = os.path.join(self.tmp.name, "port")
        self.stdout_path = os.path.join(self.tmp.name, "stdout")
        self.stderr_path = os.path.join(self.tmp.name, "stderr")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, SERVER, "--port", "0", "--port-file", self.port_file] + list(extra_args),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # own process group: stop() can kill it all
            )
        self.port = self._wait_for_port()
        self.base = "http://127.0.0.1:%d" % self.port

    def _wait_for_port(self):
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    return int(f.read())
            if self.proc.poll() is not None:
                raise AssertionError("server exited with %s: %s" % (self.proc.returncode, self.stderr()))
            time.sleep(0.02)
        self.stop()
        raise AssertionError("server wrote no port file within %gs" % TIMEOUT)

    def stdout(self):
        with open(self.stdout_path, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def signal(self, sig):
        """Sends SIG and returns the exit status (None if it did not exit in time)."""
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        self.tmp.cleanup()


def http_call(method, url, body=None, headers=None, timeout=TIMEOUT):
    """One request. BODY: dict (sent as JSON), str/bytes (sent as is), or None.
    Returns (status, headers, raw body bytes); HTTP errors are returned, not raised."""
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
    elif isinstance(body, str):
        data = body.encode()
    else:
        data = body
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.headers, e.read()


class FakeLlmTestCase(unittest.TestCase):
    """Shares one server (with --api-key) among tests; resets it before each."""

    @classmethod
    def setUpClass(cls):
        cls.server = FakeServer("--api-key", API_KEY)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        status, _, _ = http_call("POST", self.server.base + "/_reset")
        self.assertEqual(status, 200)

    # -- helpers --

    def openai(self, prompt=None, messages=None, model="gpt-test", key=API_KEY, extra=None, timeout=TIMEOUT, headers=None):
        """POST /v1/chat/completions; returns (status, headers, parsed JSON body)."""
        body = {"model": model, "messages": messages or [{"role": "user", "content": prompt}]}
        body.update(extra or {})
        hdrs = {"Authorization": "Bearer " + key} if key is not None else {}
        hdrs.update(headers or {})
        status, rh, raw = http_call("POST", self.server.base + "/v1/chat/completions", body, hdrs, timeout)
        return status, rh, json.loads(raw)

    def anthropic(self, prompt=None, messages=None, model="claude-test", key=API_KEY, version="2023-06-01", extra=None, timeout=TIMEOUT):
        """POST /v1/messages; returns (status, headers, parsed JSON body)."""
        body = {"model": model, "max_tokens": 100, "messages": messages or [{"role": "user", "content": prompt}]}
        body.update(extra or {})
        hdrs = {}
        if key is not None:
            hdrs["x-api-key"] = key
        if version is not None:
            hdrs["anthropic-version"] = version
        status, rh, raw = http_call("POST", self.server.base + "/v1/messages", body, hdrs, timeout)
        return status, rh, json.loads(raw)

    def requests_seen(self):
        status, _, raw = http_call("GET", self.server.base + "/_requests")
        self.assertEqual(status, 200)
        return json.loads(raw)

    def wait_for_pending(self, n=1):
        """Waits until N recorded requests are still pending (e.g. in [[sleep]])."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            pending = [r for r in self.requests_seen() if r["status"] is None]
            if len(pending) >= n:
                return pending
            time.sleep(0.02)
        self.fail("no %d pending request(s) within %gs" % (n, TIMEOUT))

    def openai_text(self, body):
        return body["choices"][0]["message"]["content"]

    def assert_openai_error(self, status, body, expected_status, kind, code=None):
        self.assertEqual(status, expected_status, body)
        self.assertEqual(set(body), {"error"})
        self.assertEqual(body["error"]["type"], kind)
        self.assertIsInstance(body["error"]["message"], str)
        self.assertTrue(body["error"]["message"])
        if code is not None:
            self.assertEqual(body["error"]["code"], code)

    def assert_anthropic_error(self, status, body, expected_status, kind):
        self.assertEqual(status, expected_status, body)
        self.assertEqual(body["type"], "error")
        self.assertEqual(body["error"]["type"], kind)
        self.assertIsInstance(body["error"]["message"], str)
        self.assertTrue(body["error"]["message"])


class OpenAiTest(FakeLlmTestCase):
    def test_default_echo_and_response_shape(self):
        status, headers, body = self.openai(
            messages=[
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hello there world"},
            ]
        )
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertTrue(body["id"].startswith("chatcmpl-"))
        self.assertEqual(body["object"], "chat.completion")
        self.assertIsInstance(body["created"], int)
        self.assertLessEqual(abs(body["created"] - time.time()), 60)
        self.assertEqual(body["model"], "gpt-test")
        self.assertEqual(
            body["choices"],
            [{"index": 0, "message": {"role": "assistant", "content": "echo: hello there world"}, "finish_reason": "stop"}],
        )
        # 2 + 3 words sent; "echo: hello there world" is 4 words.
        self.assertEqual(body["usage"], {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9})

    def test_reply_directive_and_default_echo_without_directives(self):
        status, _, body = self.openai("Say it. [[reply: The answer is 42.]]")
        self.assertEqual(status, 200)
        self.assertEqual(self.openai_text(body), "The answer is 42.")
        self.assertEqual(body["usage"]["completion_tokens"], 4)
        status, _, body = self.openai("[[no-usage]] plain  question ")
        self.assertEqual(self.openai_text(body), "echo: plain  question")

    def test_reply_may_span_lines(self):
        _, _, body = self.openai("[[reply: line one\nline two]]")
        self.assertEqual(self.openai_text(body), "line one\nline two")

    def test_usage_directive(self):
        _, _, body = self.openai("count me [[usage: 1234 56]]")
        self.assertEqual(body["usage"], {"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290})
        # Figures a misbehaving provider might send go out as written.
        _, _, body = self.openai("count me [[usage: -50 -3]]")
        self.assertEqual(body["usage"], {"prompt_tokens": -50, "completion_tokens": -3, "total_tokens": -53})
        _, _, body = self.openai('count me [[usage: "5" 2.5]]')
        self.assertEqual(body["usage"], {"prompt_tokens": "5", "completion_tokens": 2.5, "total_tokens": None})

    def test_json_directive_is_exact_text(self):
        value = '{"a": [[1, 2]], "b": "x]]y", "c": {"d": null}}'
        status, _, body = self.openai("[[json: %s]] give json" % value, extra={"response_format": {"type": "json_object"}})
        self.assertEqual(status, 200)
        self.assertEqual(self.openai_text(body), value)
        self.assertEqual(json.loads(self.openai_text(body))["a"], [[1, 2]])

    def test_empty(self):
        status, _, body = self.openai("[[empty]]")
        self.assertEqual(status, 200)
        self.assertEqual(self.openai_text(body), "")
        self.assertEqual(body["choices"][0]["finish_reason"], "stop")
        self.assertEqual(body["usage"]["completion_tokens"], 0)

    def test_no_usage(self):
        status, _, body = self.openai("[[no-usage]] hi")
        self.assertEqual(status, 200)
        self.assertNotIn("usage", body)
        self.assertEqual(self.openai_text(body), "echo: hi")

    def test_malformed(self):
        status, headers, raw = http_call(
            "POST",
            self.server.base + "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "[[malformed]]"}]},
            {"Authorization": "Bearer " + API_KEY},
        )
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertTrue(raw)
        with self.assertRaises(ValueError):
            json.loads(raw)

    def test_truncated_body_closes_the_connection_mid_body(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=TIMEOUT)
        try:
            conn.request("POST", "/v1/chat/completions",
                         json.dumps({"model": "m", "messages": [{"role": "user", "content": "[[truncated]] hi"}]}),
                         {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"})
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            announced = int(response.getheader("Content-Length"))
            with self.assertRaises(http.client.IncompleteRead) as cm:
                response.read()
            self.assertGreater(len(cm.exception.partial), 0)
            self.assertLess(len(cm.exception.partial), announced)
        finally:
            conn.close()

    def test_chunked_sends_no_content_length(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=TIMEOUT)
        try:
            conn.request("POST", "/v1/chat/completions",
                         json.dumps({"model": "m", "messages": [{"role": "user", "content": "[[chunked]] hi"}]}),
                         {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"})
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            self.assertIsNone(response.getheader("Content-Length"))
            self.assertEqual(response.getheader("Transfer-Encoding"), "chunked")
            body = json.loads(response.read())
            self.assertEqual(body["choices"][0]["message"]["content"], "echo: hi")
        finally:
            conn.close()

    def test_bad_gzip_is_not_a_gzip_stream(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=TIMEOUT)
        try:
            conn.request("POST", "/v1/chat/completions",
                         json.dumps({"model": "m", "messages": [{"role": "user", "content": "[[bad-gzip]]"}]}),
                         {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"})
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            self.assertEqual(response.getheader("Content-Encoding"), "gzip")
            raw = response.read()
            self.assertEqual(raw[:2], b"\x1f\x8b")
            with self.assertRaises(Exception):
                gzip.decompress(raw)
        finally:
            conn.close()

    def test_status_429_with_retry_after(self):
        status, headers, body = self.openai("[[status: 429 retry-after=2]]")
        self.assert_openai_error(status, body, 429, "requests", "rate_limit_exceeded")
        self.assertEqual(headers["Retry-After"], "2")

    def test_status_429_with_retry_after_date(self):
        before = time.time()
        status, headers, body = self.openai("[[status: 429 retry-after-date=30]]")
        self.assert_openai_error(status, body, 429, "requests", "rate_limit_exceeded")
        at = email.utils.parsedate_to_datetime(headers["Retry-After"]).timestamp()
        self.assertTrue(headers["Retry-After"].endswith(" GMT"), headers["Retry-After"])
        self.assertGreaterEqual(at, int(before) + 29)
        self.assertLessEqual(at, time.time() + 30)
        status, headers, _ = self.openai("[[fail-times: 1 status: 503 retry-after-date=-60]]")
        self.assertEqual(status, 503)
        self.assertLess(email.utils.parsedate_to_datetime(headers["Retry-After"]).timestamp(), time.time() - 58)

    def test_status_500_and_503(self):
        for code in (500, 503):
            status, headers, body = self.openai("[[status: %d]]" % code)
            self.assert_openai_error(status, body, code, "server_error")
            self.assertIsNone(headers.get("Retry-After"))
        status, headers, body = self.openai("[[status: 503 retry-after=7]]")
        self.assertEqual((status, headers["Retry-After"]), (503, "7"))

    def test_fail_times_counts_per_directive_and_model(self):
        prompt = "try [[fail-times: 2 status: 429 retry-after=1]]"
        for _ in range(2):
            status, headers, body = self.openai(prompt)
            self.assert_openai_error(status, body, 429, "requests")
            self.assertEqual(headers["Retry-After"], "1")
        # The third succeeds, echoing without the directive; so do later ones.
        for _ in range(2):
            status, _, body = self.openai(prompt)
            self.assertEqual(status, 200)
            self.assertEqual(self.openai_text(body), "echo: try")
        # Another model, and other directive text, have counters of their own.
        status, _, _ = self.openai(prompt, model="other-model")
        self.assertEqual(status, 429)
        status, _, _ = self.openai("[[fail-times: 1 status: 500]]")
        self.assertEqual(status, 500)
        status, _, _ = self.openai("[[fail-times: 1 status: 500]]")
        self.assertEqual(status, 200)
        # The rest of the message does not matter, only the directive text.
        status, _, _ = self.openai("different words [[fail-times: 1 status: 500]]")
        self.assertEqual(status, 200)
        # /_reset clears the counters.
        http_call("POST", self.server.base + "/_reset")
        status, _, _ = self.openai(prompt)
        self.assertEqual(status, 429)

    def test_directives_only_from_last_user_message(self):
        _, _, body = self.openai(
            messages=[
                {"role": "system", "content": "[[status: 500]]"},
                {"role": "user", "content": "[[reply: old]]"},
                {"role": "assistant", "content": "[[empty]]"},
                {"role": "user", "content": "new one"},
            ]
        )
        self.assertEqual(self.openai_text(body), "echo: new one")

    def test_content_parts(self):
        _, _, body = self.openai(
            messages=[{"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "[[reply: from parts]]"}]}]
        )
        self.assertEqual(self.openai_text(body), "from parts")

    def test_unknown_brackets_are_text(self):
        _, _, body = self.openai("see [[Some Page]] and [[other]]")
        self.assertEqual(self.openai_text(body), "echo: see [[Some Page]] and [[other]]")

    def test_bad_directives_are_400(self):
        for prompt in (
            "[[usage: many]]",
            "[[usage: 5 many]]",
            "[[usage: 5 [1]]]",
            "[[status: 429 retry-after-date=soon]]",
            "[[status: 200]]",
            "[[status: 429 retry-after=soon]]",
            "[[sleep: forever]]",
            "[[fail-times: 2]]",
            "[[json: {not json}]]",
            "[[reply: a]] [[json: 1]]",
            "[[reply: a]] [[reply: b]]",
            "[[empty: please]]",
            "[[reply: unclosed",
        ):
            status, _, body = self.openai(prompt)
            self.assert_openai_error(status, body, 400, "invalid_request_error")
            self.assertTrue(body["error"]["message"].startswith("fake_llm: bad directive"), (prompt, body))

    def test_auth_missing_wrong_or_not_bearer(self):
        status, _, body = self.openai("hi", key=None)
        self.assert_openai_error(status, body, 401, "invalid_request_error", "invalid_api_key")
        status, _, body = self.openai("hi", key="sk-wrong")
        self.assert_openai_error(status, body, 401, "invalid_request_error", "invalid_api_key")
        self.assertNotIn(API_KEY, json.dumps(body))
        status, _, body = self.openai("hi", key=None, headers={"Authorization": "Basic " + API_KEY})
        self.assertEqual(status, 401)
        # The Anthropic header does not authenticate an OpenAI request.
        status, _, body = self.openai("hi", key=None, headers={"x-api-key": API_KEY})
        self.assertEqual(status, 401)
        # Auth is checked before the directives: no scripted answer without a key.
        status, _, body = self.openai("[[reply: x]]", key="sk-wrong")
        self.assertEqual(status, 401)

    def test_malformed_requests_are_400(self):
        headers = {"Authorization": "Bearer " + API_KEY}
        url = self.server.base + "/v1/chat/completions"
        for body in ("{not json", "[1, 2]", {"model": "m"}, {"model": "m", "messages": []}, {"messages": [{"role": "user", "content": "x"}]}, {"model": "m", "messages": ["x"]}, b""):
            status, _, raw = http_call("POST", url, body, headers)
            self.assert_openai_error(status, json.loads(raw), 400, "invalid_request_error")

    def test_stream_is_rejected(self):
        status, _, body = self.openai("hi", extra={"stream": True})
        self.assertEqual(status, 400)
        self.assertIn("stream", body["error"]["message"])

    def test_query_string_is_ignored_by_routing(self):
        status, _, raw = http_call(
            "POST",
            self.server.base + "/v1/chat/completions?api-version=1",
            {"model": "m", "messages": [{"role": "user", "content": "q"}]},
            {"Authorization": "Bearer " + API_KEY},
        )
        self.assertEqual(status, 200)

    def test_unknown_path_is_404(self):
        status, _, raw = http_call("POST", self.server.base + "/v1/completions", {"model": "m"}, {"Authorization": "Bearer " + API_KEY})
        self.assertEqual(status, 404)
        self.assertIn("error", json.loads(raw))
        status, _, _ = http_call("GET", self.server.base + "/v1/models")
        self.assertEqual(status, 404)


class AnthropicTest(FakeLlmTestCase):
    def test_default_echo_and_response_shape(self):
        status, headers, body = self.anthropic(
            messages=[{"role": "user", "content": "one two three"}], extra={"system": "you are terse"}
        )
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertTrue(body["id"].startswith("msg_"))
        self.assertEqual(body["type"], "message")
        self.assertEqual(body["role"], "assistant")
        self.assertEqual(body["model"], "claude-test")
        self.assertEqual(body["content"], [{"type": "text", "text": "echo: one two three"}])
        self.assertEqual(body["stop_reason"], "end_turn")
        self.assertIsNone(body["stop_sequence"])
        # 3 words of messages + 3 of the system prompt; the reply is 4 words.
        self.assertEqual(body["usage"], {"input_tokens": 6, "output_tokens": 4})

    def test_reply_usage_json_and_block_content(self):
        _, _, body = self.anthropic(messages=[{"role": "user", "content": [{"type": "text", "text": "[[reply: hi there]] [[usage: 10 20]]"}]}])
        self.assertEqual(body["content"], [{"type": "text", "text": "hi there"}])
        self.assertEqual(body["usage"], {"input_tokens": 10, "output_tokens": 20})
        _, _, body = self.anthropic('[[json: {"ok": true}]]')
        self.assertEqual(body["content"][0]["text"], '{"ok": true}')
        # A system prompt's directives are not read.
        _, _, body = self.anthropic("plain", extra={"system": [{"type": "text", "text": "[[empty]]"}]})
        self.assertEqual(body["content"][0]["text"], "echo: plain")

    def test_empty_no_usage_malformed(self):
        status, _, body = self.anthropic("[[empty]]")
        self.assertEqual(status, 200)
        self.assertEqual(body["content"], [])
        self.assertEqual(body["usage"]["output_tokens"], 0)
        status, _, body = self.anthropic("[[no-usage]] x")
        self.assertEqual(status, 200)
        self.assertNotIn("usage", body)
        status, _, raw = http_call(
            "POST",
            self.server.base + "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "[[malformed]]"}]},
            {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"},
        )
        self.assertEqual(status, 200)
        with self.assertRaises(ValueError):
            json.loads(raw)

    def test_statuses_and_error_types(self):
        status, headers, body = self.anthropic("[[status: 429 retry-after=3]]")
        self.assert_anthropic_error(status, body, 429, "rate_limit_error")
        self.assertEqual(headers["Retry-After"], "3")
        for code, kind in ((500, "api_error"), (503, "api_error"), (529, "overloaded_error"), (400, "invalid_request_error")):
            status, headers, body = self.anthropic("[[status: %d]]" % code)
            self.assert_anthropic_error(status, body, code, kind)
            self.assertIsNone(headers.get("Retry-After"))

    def test_fail_times(self):
        prompt = "[[fail-times: 1 status: 529 retry-after=1]] go"
        status, headers, body = self.anthropic(prompt)
        self.assert_anthropic_error(status, body, 529, "overloaded_error")
        self.assertEqual(headers["Retry-After"], "1")
        status, _, body = self.anthropic(prompt)
        self.assertEqual(status, 200)
        self.assertEqual(body["content"][0]["text"], "echo: go")

    def test_auth_and_version(self):
        status, _, body = self.anthropic("hi", key=None)
        self.assert_anthropic_error(status, body, 401, "authentication_error")
        status, _, body = self.anthropic("hi", key="sk-wrong")
        self.assert_anthropic_error(status, body, 401, "authentication_error")
        self.assertNotIn(API_KEY, json.dumps(body))
        # A Bearer header does not authenticate an Anthropic request.
        status, _, raw = http_call(
            "POST",
            self.server.base + "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            {"Authorization": "Bearer " + API_KEY, "anthropic-version": "2023-06-01"},
        )
        self.assertEqual(status, 401)
        status, _, body = self.anthropic("hi", version=None)
        self.assert_anthropic_error(status, body, 400, "invalid_request_error")
        self.assertIn("anthropic-version", body["error"]["message"])

    def test_malformed_requests_are_400(self):
        headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}
        url = self.server.base + "/v1/messages"
        for body in ("{oops", {"model": "m", "messages": [{"role": "user", "content": "x"}]}, {"model": "m", "max_tokens": 5}):
            status, _, raw = http_call("POST", url, body, headers)
            self.assert_anthropic_error(status, json.loads(raw), 400, "invalid_request_error")


class SleepTest(FakeLlmTestCase):
    def test_sleep_does_not_block_other_requests(self):
        slow = {}

        def slow_call():
            t0 = time.monotonic()
            slow["result"] = self.openai("[[sleep: 1.0]] [[reply: slow]]")
            slow["done"] = time.monotonic()
            slow["took"] = slow["done"] - t0

        thread = threading.Thread(target=slow_call, daemon=True)
        thread.start()
        # The slow request is recorded on arrival, its status pending while it sleeps.
        (pending,) = self.wait_for_pending()
        self.assertEqual(pending["api"], "openai")
        status, _, body = self.anthropic("[[reply: fast]]")
        fast_done = time.monotonic()
        self.assertEqual((status, body["content"][0]["text"]), (200, "fast"))
        thread.join(TIMEOUT)
        self.assertFalse(thread.is_alive())
        self.assertEqual(self.openai_text(slow["result"][2]), "slow")
        self.assertLess(fast_done, slow["done"])
        self.assertGreaterEqual(slow["took"], 1.0)

    def test_sleep_then_status(self):
        t0 = time.monotonic()
        status, _, _ = self.openai("[[sleep: 0.3]] [[status: 503]]")
        self.assertEqual(status, 503)
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)

    def test_client_timeout_during_sleep(self):
        with self.assertRaises((socket.timeout, urllib.error.URLError, TimeoutError)):
            self.openai("[[sleep: 1.0]]", timeout=0.3)
        # The server is still fine.
        status, _, _ = self.openai("after")
        self.assertEqual(status, 200)


class ControlTest(FakeLlmTestCase):
    def test_requests_are_recorded_without_the_key(self):
        self.openai(
            messages=[{"role": "user", "content": "q1"}],
            extra={"max_tokens": 77, "temperature": 0.5, "response_format": {"type": "json_object"}},
        )
        self.anthropic("q2", extra={"system": "sys"})
        self.openai("q3", key="sk-wrong")
        seen = self.requests_seen()
        self.assertEqual(len(seen), 3)
        first, second, third = seen
        self.assertLess(first["seq"], second["seq"])
        self.assertEqual(first["method"], "POST")
        self.assertEqual(first["path"], "/v1/chat/completions")
        self.assertEqual(first["api"], "openai")
        self.assertTrue(first["authorization_present"])
        self.assertEqual(first["authorization_scheme"], "Bearer")
        self.assertFalse(first["x_api_key_present"])
        self.assertTrue(first["api_key_valid"])
        self.assertFalse(first["api_key_elsewhere"])
        self.assertEqual(first["model"], "gpt-test")
        self.assertEqual(first["messages"], [{"role": "user", "content": "q1"}])
        self.assertEqual(first["max_tokens"], 77)
        self.assertEqual(first["temperature"], 0.5)
        self.assertEqual(first["response_format"], {"type": "json_object"})
        self.assertEqual(first["status"], 200)
        self.assertIn("authorization", first["header_names"])
        self.assertEqual(first["content_type"], "application/json")

        self.assertEqual(second["api"], "anthropic")
        self.assertTrue(second["x_api_key_present"])
        self.assertFalse(second["authorization_present"])
        self.assertEqual(second["anthropic_version"], "2023-06-01")
        self.assertEqual(second["system"], "sys")
        self.assertEqual(second["max_tokens"], 100)

        self.assertFalse(third["api_key_valid"])
        self.assertEqual(third["status"], 401)

        dump = json.dumps(seen)
        self.assertNotIn(API_KEY, dump)
        self.assertNotIn("sk-wrong", dump)

    def test_key_elsewhere_is_detected(self):
        self.openai("my key is " + API_KEY)
        self.openai("clean", headers={"X-Debug": "k=" + API_KEY})
        http_call("POST", self.server.base + "/v1/chat/completions?key=" + API_KEY,
                  {"model": "m", "messages": [{"role": "user", "content": "x"}]}, {"Authorization": "Bearer " + API_KEY})
        self.openai("clean")
        self.assertEqual([r["api_key_elsewhere"] for r in self.requests_seen()], [True, True, True, False])

    def test_malformed_body_is_recorded_as_text(self):
        http_call("POST", self.server.base + "/v1/chat/completions", "{broken", {"Authorization": "Bearer " + API_KEY})
        (entry,) = self.requests_seen()
        self.assertEqual(entry["body_text"], "{broken")
        self.assertNotIn("body", entry)
        self.assertEqual(entry["status"], 400)

    def test_reset(self):
        self.openai("a")
        self.anthropic("b")
        self.assertEqual(len(self.requests_seen()), 2)
        status, _, raw = http_call("POST", self.server.base + "/_reset")
        self.assertEqual((status, json.loads(raw)), (200, {"ok": True}))
        self.assertEqual(self.requests_seen(), [])

    def test_keep_alive_and_chunked_body(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=TIMEOUT)
        try:
            headers = {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"}
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "chunked [[reply: ok]]"}]}).encode()
            conn.request("POST", "/v1/chat/completions", body=iter([body[:10], body[10:]]), headers=headers, encode_chunked=True)
            response = conn.getresponse()
            self.assertEqual(response.status, 200)
            self.assertEqual(json.loads(response.read())["choices"][0]["message"]["content"], "ok")
            # The same connection serves a second request.
            conn.request("POST", "/v1/chat/completions", body=body.replace(b"ok", b"again"), headers=headers)
            response = conn.getresponse()
            self.assertEqual(json.loads(response.read())["choices"][0]["message"]["content"], "again")
        finally:
            conn.close()


class LifecycleTest(unittest.TestCase):
    """The process itself: port file, stdout line, signals, and no key in its output."""

    def setUp(self):
        self.servers = []

    def tearDown(self):
        for server in self.servers:
            server.stop()

    def start(self, *args):
        server = FakeServer(*args)
        self.servers.append(server)
        return server

    def test_port_file_stdout_and_sigterm(self):
        server = self.start("--api-key", API_KEY, "--verbose")
        self.assertGreater(server.port, 0)
        self.assertEqual(server.stdout(), "listening on http://127.0.0.1:%d\n" % server.port)
        self.assertEqual([n for n in os.listdir(server.tmp.name) if n.startswith(".port-")], [])
        url = server.base + "/v1/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        self.assertEqual(http_call("POST", url, body, {"Authorization": "Bearer " + API_KEY})[0], 200)
        self.assertEqual(http_call("POST", url, body, {"Authorization": "Bearer wrong"})[0], 401)
        self.assertEqual(http_call("POST", url + "?key=" + API_KEY, body, {"Authorization": "Bearer " + API_KEY})[0], 200)
        self.assertEqual(server.signal(signal.SIGTERM), 0)
        out, err = server.stdout(), server.stderr()
        self.assertNotIn(API_KEY, out + err)
        self.assertIn("[redacted]", err)  # the verbose log line of the request with ?key=
        self.assertIn("POST /v1/chat/completions", err)

    def test_sigint_exits_cleanly_even_during_a_sleep(self):
        server = self.start()

        def sleeper():
            try:
                http_call(
                    "POST",
                    server.base + "/v1/chat/completions",
                    {"model": "m", "messages": [{"role": "user", "content": "[[sleep: 30]]"}]},
                    {"Authorization": "Bearer any-key"},
                )
            except Exception:  # the connection dies with the server: expected
                pass

        thread = threading.Thread(target=sleeper, daemon=True)
        thread.start()
        # Signal only once the request is in the server, sleeping.
        deadline = time.monotonic() + TIMEOUT
        while not json.loads(http_call("GET", server.base + "/_requests")[2]):
            self.assertLess(time.monotonic(), deadline, "the sleeping request never arrived")
            time.sleep(0.02)
        t0 = time.monotonic()
        self.assertEqual(server.signal(signal.SIGINT), 0)
        self.assertLess(time.monotonic() - t0, 3.0)
        self.assertEqual(server.stderr(), "")
        thread.join(TIMEOUT)

    def test_without_api_key_any_key_is_accepted_but_one_is_required(self):
        server = self.start()
        url = server.base + "/v1/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        self.assertEqual(http_call("POST", url, body, {"Authorization": "Bearer whatever"})[0], 200)
        self.assertEqual(http_call("POST", url, body, {})[0], 401)
        (status, _, raw) = http_call("GET", server.base + "/_requests")
        self.assertIsNone(json.loads(raw)[0]["api_key_elsewhere"])

    def test_non_loopback_host_is_refused(self):
        result = subprocess.run(
            [sys.executable, SERVER, "--host", "0.0.0.0", "--port", "0"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
        )
        self.assertEqual(result.returncode, 2)
        self.assertIn(b"loopback", result.stderr)


if __name__ == "__main__":
    unittest.main()
