#!/usr/bin/env python3
"""A stand-in for an OpenTelemetry collector's OTLP/HTTP receiver, for orch's tests.

It takes what a collector takes on its OTLP/HTTP port -- POST /v1/traces (or any
path) with a body -- and records each request, as it came, as one JSON line
appended to --record:

    {"method": "POST", "path": "/v1/traces", "headers": {NAME (lower case): VALUE},
     "body": TEXT}

The line is written and flushed before the answer is sent, so once the client has
its answer the record holds the request. The answer is --status (default 200)
with --answer as its JSON body (default "{}", an ExportTraceServiceResponse with
nothing to report). It parses nothing: the test reads the record and checks the
body itself.

Usage:
  collector.py --record FILE [--port-file PATH] [--status CODE] [--answer JSON]

Binds 127.0.0.1 on a free port; once listening writes the port number to
--port-file (atomically). Stops on SIGTERM or SIGINT. Python's standard library only.
"""

import argparse
import http.server
import json
import os
import signal
import sys
import tempfile
import threading


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        entry = {
            "method": "POST",
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("utf-8", errors="replace"),
        }
        with self.server.lock:
            with open(self.server.record, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
                f.flush()
                os.fsync(f.fileno())
        answer = self.server.answer.encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format, *args):
        pass


def write_port_file(path, port):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".port-", dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write("%d\n" % port)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description="OTLP/HTTP collector stand-in for orch's tests.")
    parser.add_argument("--record", required=True, help="append each request here, one JSON line each")
    parser.add_argument("--port-file", default=None, help="write the port number here once listening")
    parser.add_argument("--status", type=int, default=200, help="the HTTP status of every answer")
    parser.add_argument("--answer", default="{}", help="the JSON body of every answer")
    args = parser.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.record = args.record
    server.status = args.status
    server.answer = args.answer
    server.lock = threading.Lock()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    if args.port_file:
        write_port_file(args.port_file, server.server_address[1])
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
