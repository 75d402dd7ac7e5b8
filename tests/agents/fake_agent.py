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
  noresult    exits 0 with its usage and cost but no "result" (claude when a turn ends badly)
  spentfail   prints its usage and cost, then exits 1 (an attempt that fails after spending)
  overloaded  exits 0 with claude's error answer: "is_error": true, "result": "API Error: 529
              overloaded", and its usage (claude -p --output-format json on a provider error)
  badkey      claude's error answer for refused credentials: "Invalid API key · Please run /login"
  toolong     claude's error answer for a prompt too long: "Prompt is too long"
  cached      claude's answer with cache creation and cache read tokens in its usage
  retry       fails (exit 1, "tests failed: test_parse") unless the prompt says the previous
              attempt failed with exactly that reason; then answers "fixed"
A PROMPT of "-" is read from standard input (stdin: prompt), and "@FILE" from FILE
({prompt_file}); the file must be readable by its owner only.
It also writes the prompt it got to WORKSPACE/prompt-<n>.txt (n = 1, 2, ...) when WORKSPACE is given.
"""
import json
import os
import signal
import sys
import time

mode, prompt = sys.argv[1], sys.argv[2]
workspace = sys.argv[3] if len(sys.argv) > 3 else None
if prompt == "-":
    prompt = sys.stdin.read()
elif prompt.startswith("@"):
    if os.stat(prompt[1:]).st_mode & 0o077:
        print("the prompt file is readable by others", file=sys.stderr)
        sys.exit(3)
    with open(prompt[1:]) as f:
        prompt = f.read()
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
elif mode == "noresult":
    print(json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": False,
                      "usage": {"input_tokens": 200, "output_tokens": 40}, "total_cost_usd": 0.01}))
elif mode == "spentfail":
    print(json.dumps({"type": "result", "result": "gave up",
                      "usage": {"input_tokens": 300, "output_tokens": 60}, "total_cost_usd": 0.02}))
    sys.exit(1)
elif mode == "overloaded":
    print(json.dumps({"type": "result", "subtype": "success", "is_error": True,
                      "result": "API Error: 529 overloaded",
                      "usage": {"input_tokens": 10, "output_tokens": 0}, "total_cost_usd": 0.001}))
elif mode in ("badkey", "toolong"):
    text = "Invalid API key · Please run /login" if mode == "badkey" else "Prompt is too long"
    print(json.dumps({"type": "result", "subtype": "success", "is_error": True, "result": text,
                      "usage": {"input_tokens": 0, "output_tokens": 0}, "total_cost_usd": 0}))
elif mode == "cached":
    print(json.dumps({"type": "result", "is_error": False, "result": "done: " + first,
                      "usage": {"input_tokens": 12, "output_tokens": 30,
                                "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 5000},
                      "total_cost_usd": 0.003}))
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
