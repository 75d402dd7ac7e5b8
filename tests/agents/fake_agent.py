#!/usr/bin/env python3
"""A scripted agent CLI for the worker executor's tests (src/engine/worker_engine_test.cc).

    fake_agent.py MODE PROMPT [WORKSPACE]

Modes:
  text        prints "done: " + the prompt's first line
  json        one JSON document: {"result": ..., "usage": {...}, "total_cost_usd": ...}
  jsonl       an event stream, one JSON object per line; the last has the result
  badjson     exits 0 with output that is not JSON
  stall       prints one line, then sleeps (no output, no file change)
  busy        writes no output but changes a file in WORKSPACE every 0.1 s for 3 s, then answers
  crash       prints a line, then kills itself with SIGKILL
  retry       fails (exit 1, "tests failed: test_parse") unless the prompt says the previous
              attempt failed with exactly that reason; then answers "fixed"
It also writes the prompt it got to WORKSPACE/prompt-<n>.txt (n = 1, 2, ...) when WORKSPACE is given.
"""
import json
import os
import signal
import sys
import time

mode, prompt = sys.argv[1], sys.argv[2]
workspace = sys.argv[3] if len(sys.argv) > 3 else None
if workspace:
    n = 1
    while os.path.exists(os.path.join(workspace, "prompt-%d.txt" % n)):
        n += 1
    with open(os.path.join(workspace, "prompt-%d.txt" % n), "w") as f:
        f.write(prompt)

first = prompt.split("\n", 1)[0]
if mode == "text":
    print("done: " + first)
elif mode == "json":
    print(json.dumps({"type": "result", "result": "done: " + first,
                      "usage": {"input_tokens": 120, "output_tokens": 30}, "total_cost_usd": 0.0042}))
elif mode == "jsonl":
    print(json.dumps({"type": "started"}))
    print(json.dumps({"type": "usage", "tokens": {"in": 50, "out": 7}}))
    print("not json: a progress line")
    print(json.dumps({"type": "final", "message": {"text": "done: " + first}}))
elif mode == "badjson":
    print("I did it!")
elif mode == "stall":
    print("thinking...", flush=True)
    time.sleep(3600)
elif mode == "busy":
    for i in range(30):
        with open(os.path.join(workspace, "work.txt"), "w") as f:
            f.write(str(i))
        time.sleep(0.1)
    print("done after working quietly")
elif mode == "crash":
    print("about to crash", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "retry":
    if "tests failed: test_parse" in prompt:
        print("fixed")
    else:
        print("tests failed: test_parse", flush=True)
        sys.exit(1)
else:
    print("unknown mode " + mode, file=sys.stderr)
    sys.exit(2)
