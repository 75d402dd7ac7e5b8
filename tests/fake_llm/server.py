#!/usr/bin/env python3
"""A local fake of a hosted model provider, for the tests of orch's `llm` executor.

It speaks the providers' real wire protocols over real HTTP, so orch's HTTP client,
request encoding, response decoding, error handling and retries are all exercised
for real; only the model itself is faked. Two APIs are served:

  POST /v1/chat/completions   OpenAI Chat Completions
      auth:  "Authorization: Bearer KEY"
      body:  {model, messages: [{role, content}], max_tokens?, temperature?,
              response_format?, ...}
      reply: {"id": "chatcmpl-...", "object": "chat.completion", "created": INT,
              "model": M, "choices": [{"index": 0, "message": {"role": "assistant",
              "content": TEXT}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": P, "completion_tokens": C, "total_tokens": P+C}}
      error: {"error": {"message": ..., "type": ..., "param": null, "code": ...}}

  POST /v1/messages           Anthropic Messages
      auth:  "x-api-key: KEY", plus a required "anthropic-version" header
      body:  {model, max_tokens, system?, messages: [{role, content}], ...}
      reply: {"id": "msg_...", "type": "message", "role": "assistant", "model": M,
              "content": [{"type": "text", "text": TEXT}], "stop_reason": "end_turn",
              "stop_sequence": null, "usage": {"input_tokens": P, "output_tokens": C}}
      error: {"type": "error", "error": {"type": ..., "message": ...}}

Message content may be a string or a list of content parts/blocks; the text of the
parts of type "text" is what counts.

Checks, in order: the API key (401; OpenAI code "invalid_api_key", Anthropic type
"authentication_error"), then (Anthropic) the anthropic-version header (400), then
the body: not JSON, not an object, no model, no/empty messages, (Anthropic) no
integer max_tokens, or "stream": true (not supported here) -> 400
invalid_request_error. Without --api-key any non-empty key is accepted, but one must
still be sent.

Directives
----------
What the fake answers is scripted by directives, `[[NAME]]` or `[[NAME: ARGS]]`,
found in the text of the LAST message whose role is "user" (so a test plan steers
the fake through its prompt). Directives elsewhere (system prompt, earlier
messages) are ignored. A `[[...]]` whose name is not one of these is plain text.

  [[reply: TEXT]]        The completion text is TEXT (stripped; may span lines; cannot
                         contain "]]" -- use [[json: ...]] for that). Default reply:
                         "echo: " + the last user message with the directives removed
                         (stripped).
  [[json: VALUE]]        The completion text is exactly the JSON text VALUE as written
                         (any JSON value; may contain "]]"). For response_format /
                         result_json tests.
  [[empty]]              200 with an empty completion: content "" (OpenAI) or an empty
                         content list (Anthropic). Completion tokens default to 0.
  [[usage: P C]]         Report P prompt/input and C completion/output tokens. Default:
                         P = whitespace-separated words in the text of all messages
                         (and the Anthropic system prompt) as sent, directives
                         included; C = words in the reply text. P and C are JSON
                         scalars sent as written: non-negative integers, or, to play
                         a provider that misbehaves, -50, "5", 2.5, null, ...
                         (total_tokens is their sum when both are integers, else null).
  [[cache: R W]]         The prompt cache: R tokens read from it, W written to it (two
                         non-negative integers). Anthropic: usage.cache_read_input_tokens R
                         and cache_creation_input_tokens W, apart from input_tokens, as
                         the Messages API reports them. OpenAI: usage.prompt_tokens_details
                         .cached_tokens R (counted within prompt_tokens; W is not reported).
  [[no-usage]]           Omit the usage object from the response.
  [[stop: REASON]]       The completion's finish_reason (OpenAI) / stop_reason
                         (Anthropic) is REASON (e.g. length, max_tokens,
                         content_filter) instead of stop / end_turn.
  [[refusal: TEXT]]      (OpenAI) content null and the message's refusal TEXT.
  [[status: CODE]]       Answer HTTP CODE (400-599) with the provider's error body...
  [[status: CODE retry-after=S]]
                         ...and a "Retry-After: S" header (S: seconds, as given).
  [[status: CODE retry-after-date=S]]
                         ...and a "Retry-After" header holding the HTTP-date S
                         seconds (an integer; negative: in the past) after the
                         moment of the answer, e.g. "Wed, 21 Oct 2015 07:28:00 GMT".
                         Error types: OpenAI 429 -> type "requests", code
                         "rate_limit_exceeded"; 5xx -> type "server_error"; other
                         4xx -> "invalid_request_error". Anthropic 401 ->
                         "authentication_error", 429 -> "rate_limit_error", 529 ->
                         "overloaded_error", other 5xx -> "api_error", other 4xx ->
                         "invalid_request_error".
  [[fail-times: N status: CODE]]
  [[fail-times: N status: CODE retry-after=S]]
  [[fail-times: N status: CODE retry-after-date=S]]
                         The first N requests whose last user message carries this
                         exact directive text, per model, fail as [[status: ...]]
                         would; later ones go on as if the directive were absent.
                         Counters live in memory until POST /_reset. For retry tests.
  [[malformed]]          200 (Content-Type application/json) whose body is truncated,
                         invalid JSON.
  [[truncated]]          200 whose Content-Length announces a whole, valid completion but
                         whose connection is closed halfway through the body (a dropped
                         connection, as a client sees it: a transport error).
  [[chunked]]            Send the answer with chunked transfer coding: no Content-Length,
                         so a client learns its size only as it reads it.
  [[bad-gzip]]           200 with "Content-Encoding: gzip" whose body is not gzip (a
                         client that decodes it fails: a broken stream).
  [[sleep: SECONDS]]     Wait SECONDS (a number, at most 600) before answering, whatever
                         the answer. Requests are served on their own threads, so a
                         sleeping request does not hold up others. For timeout tests.

Precedence: sleep happens first; then status; then a fail-times that still has
failures left; then malformed; then bad-gzip; then truncated and chunked (applied to the 200 built below); otherwise a 200 built from reply/json/empty and
usage/no-usage. At most one of reply/json/empty, and each directive at most once; a
directive with bad arguments (or a conflict) gets a 400 invalid_request_error whose
message starts with "fake_llm:", so a mistyped test shows up at once.

Control endpoints (not provider API; never recorded)
----------------------------------------------------
  GET  /_requests   JSON array of every API request received since start or the last
                    reset, oldest first. Each entry: seq, time, method, path, api
                    ("openai" | "anthropic" | null), authorization_present,
                    authorization_scheme, x_api_key_present, api_key_valid,
                    api_key_elsewhere (the expected key was found somewhere other than
                    its auth header: the path, another header, or the body; null
                    without --api-key), anthropic_version, content_type, user_agent,
                    header_names, model, messages, system, max_tokens, temperature,
                    response_format, stream, body (the parsed JSON body, or
                    body_text with the raw text when it is not JSON), status (the
                    HTTP status answered; null while the answer is pending, e.g.
                    during [[sleep]]), client_port (the client's TCP port: requests
                    with the same port came over one connection). The values of the Authorization and
                    x-api-key headers are never recorded.
  POST /_reset      Clears the recorded requests and the fail-times counters.

Command line
------------
  server.py [--host 127.0.0.1] [--port 0] [--api-key KEY] [--port-file PATH] [--verbose]

Binds to a loopback IPv4 address only. With --port 0 the OS picks a free port. Once
listening, writes the port number to --port-file (atomically: a temp file in the same
directory, then rename) and prints "listening on http://HOST:PORT" to stdout. Exits
with status 0 on SIGTERM or SIGINT. The API key is never written to stdout or stderr;
with --verbose one line per request goes to stderr, with the key redacted should it
appear.

Python 3 standard library only.
"""

import argparse
import email.utils
import http.server
import ipaddress
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"

MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_SLEEP_SECONDS = 600.0

# The body answered for [[malformed]]: the start of a real response, cut off.
MALFORMED_BODY = (
    b'{"id": "chatcmpl-malformed", "object": "chat.completion", '
    b'"choices": [{"index": 0, "message": {"role": "assist'
)

KNOWN_DIRECTIVES = frozenset(
    ["reply", "json", "empty", "usage", "cache", "no-usage", "status", "fail-times", "malformed", "truncated", "sleep",
     "stop", "refusal", "chunked", "bad-gzip"]
)
# Directives that take no arguments.
BARE_DIRECTIVES = frozenset(["empty", "no-usage", "malformed", "truncated", "chunked", "bad-gzip"])

# "[[" + a directive-shaped name + optional ":" (arguments follow up to "]]").
DIRECTIVE_START_RE = re.compile(r"\[\[\s*([a-z]+(?:-[a-z]+)*)\s*(:?)")
STATUS_ARGS_RE = re.compile(r"^(\d{3})(?:\s+retry-after=([0-9]+(?:\.[0-9]+)?)|\s+retry-after-date=(-?[0-9]+))?$")
FAIL_TIMES_ARGS_RE = re.compile(r"^(\d+)\s+status:\s*(.*)$", re.S)
NUMBER_RE = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")


class DirectiveError(Exception):
    """A directive with bad arguments, or directives that conflict."""


class Directive:
    """One parsed directive: its name, raw argument text, and its full source text."""

    def __init__(self, name, args, text, start, end):
        self.name = name
        self.args = args
        self.text = text  # e.g. "[[fail-times: 2 status: 429]]"; the fail-times counter key
        self.start = start
        self.end = end


def find_directives(text):
    """Returns the directives in TEXT, in order. Unknown names are left as plain text."""
    found = []
    pos = 0
    decoder = json.JSONDecoder()
    while True:
        m = DIRECTIVE_START_RE.search(text, pos)
        if not m:
            return found
        name, colon = m.group(1), m.group(2)
        if name not in KNOWN_DIRECTIVES:
            pos = m.start() + 2
            continue
        if name == "json":
            # The argument is a JSON value, which may itself contain "]]": decode it.
            if not colon:
                raise DirectiveError("[[json: VALUE]] needs a JSON value")
            i = skip_spaces(text, m.end())
            try:
                _, value_end = decoder.raw_decode(text, i)
            except ValueError as e:
                raise DirectiveError("[[json: ...]]: not valid JSON: %s" % e)
            close = skip_spaces(text, value_end)
            if not text.startswith("]]", close):
                raise DirectiveError("[[json: ...]]: expected ']]' after the JSON value")
            end = close + 2
            found.append(Directive(name, text[i:value_end], text[m.start():end], m.start(), end))
        else:
            close = text.find("]]", m.end())
            if close < 0:
                raise DirectiveError("[[%s ...: no closing ']]'" % name)
            args = text[m.end():close].strip()
            if not colon and args:
                raise DirectiveError("[[%s ...]]: expected ':' before the arguments" % name)
            end = close + 2
            found.append(Directive(name, args, text[m.start():end], m.start(), end))
        pos = end


def skip_spaces(text, i):
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def strip_directives(text, directives):
    """TEXT with the source text of DIRECTIVES cut out, then stripped."""
    parts = []
    pos = 0
    for d in directives:
        parts.append(text[pos:d.start])
        pos = d.end
    parts.append(text[pos:])
    return "".join(parts).strip()


def parse_status_args(args, what):
    """Parses "CODE [retry-after=S | retry-after-date=S]" -> (code, retry_after), where
    retry_after is None, ("seconds", "S") or ("date", S); see retry_after_value()."""
    m = STATUS_ARGS_RE.match(args.strip())
    if not m:
        raise DirectiveError(
            "%s: expected 'CODE', 'CODE retry-after=SECONDS' or 'CODE retry-after-date=SECONDS', got %r" % (what, args)
        )
    code = int(m.group(1))
    if not 400 <= code <= 599:
        raise DirectiveError("%s: status must be 400-599, got %d" % (what, code))
    if m.group(2) is not None:
        return code, ("seconds", m.group(2))
    if m.group(3) is not None:
        return code, ("date", int(m.group(3)))
    return code, None


def retry_after_value(retry_after):
    """The Retry-After header value, made when answering: delay-seconds as given, or the
    HTTP-date (IMF-fixdate) that many seconds from now."""
    kind, value = retry_after
    if kind == "date":
        return email.utils.formatdate(time.time() + value, usegmt=True)
    return value


def parse_usage_figure(text):
    """One [[usage]] figure: a JSON scalar, sent as written."""
    try:
        value = json.loads(text)
    except ValueError:
        value = []
    if isinstance(value, (list, dict)):
        raise DirectiveError("[[usage: P C]]: %r is not an integer (nor another JSON scalar)" % text)
    return value


class Script:
    """What to answer, as decided by the directives of one request."""

    def __init__(self):
        self.reply = None  # completion text; None: the default echo
        self.empty = False
        self.usage = None  # (prompt, completion) or None: counted
        self.cache = None  # (read, written) prompt-cache tokens, or None: no cache figures
        self.no_usage = False
        self.status = None  # (code, retry_after) from [[status: ...]]
        self.fail_times = None  # (directive text, n, code, retry_after)
        self.malformed = False
        self.truncated = False
        self.chunked = False
        self.bad_gzip = False
        self.sleep = 0.0
        self.stop = None  # finish_reason / stop_reason; None: "stop" / "end_turn"
        self.refusal = None  # OpenAI: content null and this refusal text


def build_script(directives):
    """Turns the directives of the last user message into a Script; raises DirectiveError."""
    script = Script()
    seen = set()
    for d in directives:
        if d.name in seen:
            raise DirectiveError("[[%s]] given more than once" % d.name)
        seen.add(d.name)
        if d.name in BARE_DIRECTIVES and d.args:
            raise DirectiveError("[[%s]] takes no arguments" % d.name)
        if d.name == "reply":
            script.reply = d.args
        elif d.name == "json":
            script.reply = d.args
        elif d.name == "empty":
            script.empty = True
        elif d.name == "usage":
            fields = d.args.split()
            if len(fields) != 2:
                raise DirectiveError("[[usage: P C]]: expected two integers, got %r" % d.args)
            script.usage = (parse_usage_figure(fields[0]), parse_usage_figure(fields[1]))
        elif d.name == "cache":
            fields = d.args.split()
            if len(fields) != 2 or not all(f.isdigit() for f in fields):
                raise DirectiveError("[[cache: R W]]: expected two non-negative integers, got %r" % d.args)
            script.cache = (int(fields[0]), int(fields[1]))
        elif d.name == "no-usage":
            script.no_usage = True
        elif d.name == "status":
            script.status = parse_status_args(d.args, "[[status: ...]]")
        elif d.name == "fail-times":
            m = FAIL_TIMES_ARGS_RE.match(d.args)
            if not m:
                raise DirectiveError("[[fail-times: N status: CODE [retry-after=S]]]: got %r" % d.args)
            code, retry_after = parse_status_args(m.group(2), "[[fail-times: ...]]")
            script.fail_times = (d.text, int(m.group(1)), code, retry_after)
        elif d.name == "malformed":
            script.malformed = True
        elif d.name == "truncated":
            script.truncated = True
        elif d.name == "chunked":
            script.chunked = True
        elif d.name == "bad-gzip":
            script.bad_gzip = True
        elif d.name == "stop":
            if not re.match(r"^[a-z_]+$", d.args):
                raise DirectiveError("[[stop: REASON]]: expected a reason such as length, got %r" % d.args)
            script.stop = d.args
        elif d.name == "refusal":
            script.refusal = d.args
        elif d.name == "sleep":
            if not NUMBER_RE.match(d.args) or float(d.args) > MAX_SLEEP_SECONDS:
                raise DirectiveError("[[sleep: SECONDS]]: expected 0-%g, got %r" % (MAX_SLEEP_SECONDS, d.args))
            script.sleep = float(d.args)
    if len(seen & {"reply", "json", "empty"}) > 1:
        raise DirectiveError("at most one of [[reply]], [[json]] and [[empty]]")
    if script.usage and script.no_usage:
        raise DirectiveError("[[usage]] and [[no-usage]] conflict")
    return script


# The top-level request fields each real API takes (its reference, 2026).
OPENAI_FIELDS = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stop",
    "seed", "response_format", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls",
    "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "user",
    "service_tier", "metadata", "store", "reasoning_effort",
}
ANTHROPIC_FIELDS = {
    "model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stop_sequences",
    "stream", "metadata", "tools", "tool_choice", "thinking", "service_tier",
}


def content_text(content):
    """The text of a message's content: a string, or a list of parts/blocks whose
    "text" parts are joined with newlines. Anything else has no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return "\n".join(texts)
    return ""


def word_count(text):
    return len(text.split())


# --- Provider error bodies -------------------------------------------------------


def openai_error(status, message, code=None):
    """(status, body) in the OpenAI error shape."""
    if status == 429:
        kind, code = "requests", code or "rate_limit_exceeded"
    elif status >= 500:
        kind = "server_error"
    else:
        kind = "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_error(status, message):
    """The Anthropic error body for STATUS."""
    kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


STATUS_MESSAGES = {
    429: "Rate limit reached (fake_llm). Please try again later.",
    500: "The server had an error while processing your request (fake_llm).",
    502: "Bad gateway (fake_llm).",
    503: "The server is overloaded or not ready yet (fake_llm).",
    529: "Overloaded (fake_llm).",
}


# --- Server state ----------------------------------------------------------------


class State:
    """Everything the server remembers between requests; guarded by one lock."""

    def __init__(self, api_key):
        self.api_key = api_key
        self.lock = threading.Lock()
        self.requests = []
        self.fail_counts = {}  # (directive text, model) -> failures answered so far
        self.next_seq = 1  # numbers requests and response ids; not reset by /_reset

    def take_seq(self):
        with self.lock:
            seq = self.next_seq
            self.next_seq += 1
            return seq

    def record(self, entry):
        with self.lock:
            self.requests.append(entry)

    def set_status(self, entry, status):
        with self.lock:
            entry["status"] = status

    def snapshot(self):
        # Copies, so a status filled in later cannot change an entry mid-serialization.
        with self.lock:
            return [dict(entry) for entry in self.requests]

    def reset(self):
        with self.lock:
            self.requests.clear()
            self.fail_counts.clear()

    def should_fail(self, directive_text, model, times):
        """Counts one request carrying a fail-times directive; True while it has failures left."""
        key = (directive_text, model)
        with self.lock:
            done = self.fail_counts.get(key, 0)
            if done >= times:
                return False
            self.fail_counts[key] = done + 1
            return True

    def redact(self, text):
        if self.api_key:
            text = text.replace(self.api_key, "[redacted]")
        return text


class Response:
    """An answer to send: status, JSON body (or raw bytes), extra headers."""

    def __init__(self, status, body, headers=None):
        self.status = status
        self.body = body  # dict/list (sent as JSON) or bytes (sent as is)
        self.headers = headers or {}
        self.truncated = False  # send half the body, then close the connection
        self.chunked = False  # Transfer-Encoding: chunked instead of Content-Length


# --- Request handling ------------------------------------------------------------


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real clients expect
    server_version = "fake_llm/1"

    @property
    def state(self):
        return self.server.state

    # Logging: silent unless --verbose, and never the API key.
    def log_message(self, format, *args):
        if self.server.verbose:
            line = "%s - %s\n" % (self.address_string(), format % args)
            sys.stderr.write(self.state.redact(line))
            sys.stderr.flush()

    def do_GET(self):
        try:
            self.read_body()  # drain anything sent, to keep the connection usable
        except ValueError:
            self.close_connection = True
        if urllib.parse.urlsplit(self.path).path == "/_requests":
            self.send(Response(200, self.state.snapshot()))
        else:
            self.send(Response(404, openai_error(404, "fake_llm: no GET %s" % self.state.redact(self.path), "unknown_url")))

    def do_POST(self):
        try:
            body = self.read_body()
        except ValueError as e:
            self.close_connection = True
            self.send(Response(400, openai_error(400, "fake_llm: %s" % e)))
            return
        path = urllib.parse.urlsplit(self.path).path  # routes ignore any query string
        if path == "/_reset":
            self.state.reset()
            self.send(Response(200, {"ok": True}))
            return
        if path == OPENAI_PATH:
            api = "openai"
        elif path == ANTHROPIC_PATH:
            api = "anthropic"
        else:
            self.record_request(None, body, None, 404)
            self.send(Response(404, openai_error(404, "fake_llm: unknown path %s" % self.state.redact(self.path), "unknown_url")))
            return
        try:
            response = self.handle_api(api, body)
        except Exception:  # a bug here must still answer, and must not leak the key
            sys.stderr.write(self.state.redact(traceback.format_exc()))
            sys.stderr.flush()
            response = Response(500, self.error_body(api, 500, "fake_llm: internal error"))
        self.send(response)

    def read_body(self):
        """The request body as bytes: by Content-Length, or chunked transfer coding."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            total = 0
            while True:
                size_line = self.rfile.readline(1024)
                try:
                    size = int(size_line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise ValueError("bad chunk size line")
                if size == 0:
                    # Trailers (if any) up to the blank line.
                    while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY_BYTES:
                    raise ValueError("body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline(8)  # CRLF after the chunk
        length = self.headers.get("Content-Length")
        if not length:
            return b""
        try:
            n = int(length)
        except ValueError:
            raise ValueError("bad Content-Length")
        if n < 0 or n > MAX_BODY_BYTES:
            raise ValueError("bad Content-Length")
        return self.rfile.read(n)

    def error_body(self, api, status, message, code=None):
        if api == "anthropic":
            return anthropic_error(status, message)
        return openai_error(status, message, code)

    def check_auth(self, api):
        """(authorization_present, scheme, x_api_key_present, valid) for this request."""
        auth = self.headers.get("Authorization")
        scheme = auth.split(None, 1)[0] if auth and auth.strip() else None
        x_key = self.headers.get("x-api-key")
        if api == "anthropic":
            sent = x_key
        else:
            parts = auth.split(None, 1) if auth else []
            sent = parts[1].strip() if len(parts) == 2 and parts[0].lower() == "bearer" else None
        if self.state.api_key:
            valid = sent == self.state.api_key
        else:
            valid = bool(sent)
        return auth is not None, scheme, x_key is not None, valid

    def key_elsewhere(self, body):
        """Whether the expected API key appears anywhere but its own auth header."""
        key = self.state.api_key
        if not key:
            return None
        if key in self.path:
            return True
        for name, value in self.headers.items():
            if name.lower() in ("authorization", "x-api-key"):
                continue
            if key in value or key in name:
                return True
        return key.encode("utf-8") in body

    def record_request(self, api, body, parsed, status, auth=None):
        """Records one API request (never the values of the auth headers)."""
        auth = auth or self.check_auth(api)
        entry = {
            "seq": self.state.take_seq(),
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "api": api,
            "authorization_present": auth[0],
            "authorization_scheme": auth[1],
            "x_api_key_present": auth[2],
            "api_key_valid": auth[3],
            "api_key_elsewhere": self.key_elsewhere(body),
            "anthropic_version": self.headers.get("anthropic-version"),
            "content_type": self.headers.get("Content-Type"),
            "user_agent": self.headers.get("User-Agent"),
            "header_names": sorted(name.lower() for name in self.headers.keys()),
            "status": status,
            # The client's port: requests with the same one came over one
            # keep-alive connection.
            "client_port": self.client_address[1],
        }
        fields = parsed if isinstance(parsed, dict) else {}
        for name in ("model", "messages", "system", "max_tokens", "temperature", "response_format", "stream"):
            entry[name] = fields.get(name)
        if parsed is not None:
            entry["body"] = parsed
        else:
            entry["body_text"] = body.decode("utf-8", "replace")
        self.state.record(entry)
        return entry

    def handle_api(self, api, body):
        """Decides the response to one provider API request, and records the request."""
        auth = self.check_auth(api)
        try:
            parsed = json.loads(body.decode("utf-8"))
        except ValueError:
            parsed = None
        entry = self.record_request(api, body, parsed, None, auth)
        response = self.decide(api, auth, parsed)
        self.state.set_status(entry, response.status)
        return response

    def decide(self, api, auth, parsed):
        def fail(status, message, code=None, headers=None):
            return Response(status, self.error_body(api, status, message, code), headers)

        # 1. Authentication.
        if not auth[3]:
            if api == "anthropic":
                present = auth[2]
                message = "invalid x-api-key" if present else "x-api-key header is required"
            else:
                present = auth[0]
                message = (
                    "Incorrect API key provided."
                    if present
                    else "You didn't provide an API key. You need to provide your API key in an "
                    "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                )
            return fail(401, message, "invalid_api_key")
        if api == "anthropic" and not self.headers.get("anthropic-version"):
            return fail(400, "anthropic-version: header is required")

        # 2. The body.
        if parsed is None:
            return fail(400, "We could not parse the JSON body of your request.")
        if not isinstance(parsed, dict):
            return fail(400, "The request body must be a JSON object.")
        if not isinstance(parsed.get("model"), str) or not parsed["model"]:
            return fail(400, "model: field required (a non-empty string)")
        messages = parsed.get("messages")
        if not isinstance(messages, list) or not messages:
            return fail(400, "messages: field required (a non-empty array)")
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            return fail(400, "messages: each message must be an object with a string role")
        max_tokens = parsed.get("max_tokens")
        if api == "anthropic" and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)):
            return fail(400, "max_tokens: field required (an integer)")
        if parsed.get("stream"):
            return fail(400, "fake_llm: streaming is not supported")
        # A field the real API does not take is refused as the real one refuses it
        # (Anthropic has no "seed" and calls "stop" "stop_sequences").
        known = ANTHROPIC_FIELDS if api == "anthropic" else OPENAI_FIELDS
        for name in parsed:
            if name not in known:
                if api == "anthropic":
                    return fail(400, "%s: Extra inputs are not permitted" % name)
                return fail(400, "Unrecognized request argument supplied: %s" % name)

        # 3. The directives of the last user message.
        users = [m for m in messages if m.get("role") == "user"]
        last_user = content_text(users[-1].get("content")) if users else ""
        try:
            directives = find_directives(last_user)
            script = build_script(directives)
        except DirectiveError as e:
            return fail(400, "fake_llm: bad directive: %s" % e)

        if script.sleep:
            time.sleep(script.sleep)
        if script.status:
            return self.scripted_failure(api, *script.status)
        if script.fail_times:
            text, times, code, retry_after = script.fail_times
            if self.state.should_fail(text, parsed["model"], times):
                return self.scripted_failure(api, code, retry_after)
        if script.malformed:
            return Response(200, MALFORMED_BODY)
        if script.bad_gzip:
            # gzip's magic bytes, then nothing a decoder can read.
            return Response(200, b"\x1f\x8b\x08\x00" + b"not a deflate stream" * 4, {"Content-Encoding": "gzip"})

        # 4. A completion.
        if script.empty:
            text = ""
        elif script.reply is not None:
            text = script.reply
        else:
            text = "echo: " + strip_directives(last_user, directives)
        if script.usage:
            prompt_tokens, completion_tokens = script.usage
        else:
            prompt_texts = [content_text(m.get("content")) for m in messages]
            if api == "anthropic":
                prompt_texts.append(content_text(parsed.get("system")))
            prompt_tokens = sum(word_count(t) for t in prompt_texts)
            completion_tokens = word_count(text)
        usage = None if script.no_usage else (prompt_tokens, completion_tokens)
        if api == "anthropic":
            response = self.anthropic_reply(parsed["model"], text, script.empty, usage, script.stop)
        else:
            response = self.openai_reply(parsed["model"], text, usage, script.stop, script.refusal)
        if usage and script.cache and isinstance(response.body, dict):
            read, written = script.cache
            if api == "anthropic":
                response.body["usage"]["cache_read_input_tokens"] = read
                response.body["usage"]["cache_creation_input_tokens"] = written
            else:
                response.body["usage"]["prompt_tokens_details"] = {"cached_tokens": read}
        response.truncated = script.truncated
        response.chunked = script.chunked
        return response

    def scripted_failure(self, api, status, retry_after):
        headers = {"Retry-After": retry_after_value(retry_after)} if retry_after is not None else {}
        message = STATUS_MESSAGES.get(status, "fake_llm: scripted status %d" % status)
        return Response(status, self.error_body(api, status, message), headers)

    def openai_reply(self, model, text, usage, stop=None, refusal=None):
        body = {
            "id": "chatcmpl-fake%06d" % self.state.take_seq(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None if refusal is not None else text},
                    "finish_reason": stop or "stop",
                }
            ],
        }
        if refusal is not None:
            body["choices"][0]["message"]["refusal"] = refusal
        if usage:
            integers = all(isinstance(n, int) and not isinstance(n, bool) for n in usage)
            body["usage"] = {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1] if integers else None,
            }
        return Response(200, body)

    def anthropic_reply(self, model, text, empty, usage, stop=None):
        body = {
            "id": "msg_fake%06d" % self.state.take_seq(),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [] if empty else [{"type": "text", "text": text}],
            "stop_reason": stop or "end_turn",
            "stop_sequence": None,
        }
        if usage:
            body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
        return Response(200, body)

    def send(self, response):
        if isinstance(response.body, bytes):
            data = response.body
        else:
            data = json.dumps(response.body).encode("utf-8")
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json")
            if response.chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(data)))
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if response.chunked:
                for at in range(0, len(data), 64):
                    piece = data[at : at + 64]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            if response.truncated:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (e.g. its timeout fired during [[sleep]]): fine.
            self.close_connection = True


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a sleeping request must not delay shutdown
    # socketserver's default backlog is 5: a burst of concurrent connects (a test
    # starting many requests at once) could overflow it and stall in SYN retries.
    request_queue_size = 128

    def __init__(self, address, state, verbose):
        self.state = state
        self.verbose = verbose
        super().__init__(address, Handler)

    def handle_error(self, request, client_address):
        # socketserver's default prints a traceback; keep it, minus any key.
        if sys.exc_info()[0] in (BrokenPipeError, ConnectionResetError):
            return
        sys.stderr.write(self.state.redact(traceback.format_exc()))
        sys.stderr.flush()


# --- Main --------------------------------------------------------------------


def loopback_host(value):
    """argparse type: an IPv4 loopback address (the fake must not be reachable from outside)."""
    if value == "localhost":
        value = "127.0.0.1"
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        raise argparse.ArgumentTypeError("not an IP address: %r" % value)
    if address.version != 4 or not address.is_loopback:
        raise argparse.ArgumentTypeError("must be an IPv4 loopback address, got %s" % value)
    return value


def write_port_file(path, port):
    """Writes PORT to PATH atomically: a reader sees no file or the whole number."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".port-", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fake OpenAI/Anthropic API server for orch's tests.")
    parser.add_argument("--host", type=loopback_host, default="127.0.0.1", help="IPv4 loopback address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 (default): one the OS picks")
    parser.add_argument("--api-key", default=None, help="the key requests must carry (default: any non-empty key)")
    parser.add_argument("--port-file", default=None, help="write the port number here once listening")
    parser.add_argument("--verbose", action="store_true", help="one line per request on stderr")
    args = parser.parse_args(argv)

    server = Server((args.host, args.port), State(args.api_key), args.verbose)
    port = server.server_address[1]

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    if args.port_file:
        write_port_file(args.port_file, port)
    print("listening on http://%s:%d" % (args.host, port), flush=True)

    # The main thread only waits, so signal handlers run promptly; serve_forever
    # must be stopped from a thread other than its own.
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
