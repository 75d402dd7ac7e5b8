#!/usr/bin/env python3
"""A scripted reviewer, judge, claim verifier and fixer for `orch review`'s tests
(tests/cli/review_test.cc). It plays whichever role orch gives the step, from a
scenario file, with answers that change from round to round.

    fake_reviewer.py SCENARIO.json PROMPT

orch tells a review step who it is in its environment (docs/review.md):
ORCH_REVIEW_ROLE (reviewer, judge, verifier, fixer), ORCH_REVIEW_LENS,
ORCH_REVIEW_ROUND, ORCH_REVIEW_ATTEMPT. The scenario:

  {"reviewer": {"LENS": {"1": ANSWER, "2": ANSWER, "default": ANSWER}},
   "judge":    {"1": ANSWER, "default": ANSWER},
   "verifier": [{"match": "text in the prompt", "answer": ANSWER}, ...],
   "fixer":    {"1": ANSWER, "default": ANSWER}}

An ANSWER is a JSON value printed as the reply, or an object with one of:
  {"attempts": [ANSWER, ANSWER]}   by attempt number (the last one repeats)
  {"raw": "text"}                  this text, as is
  {"exit": N, "raw": "..."}        exit with status N
  {"edits": [{"file": F, "replace": OLD, "with": NEW}], "raw": "..."}   (fixer) edit files
  {"sleep": SECONDS, ...}          then sleep (after any edits: for kill -9 tests)
  {"tokens": N, ...}               report N tokens spent (default 1000)
Any answer may carry "tokens". Every call is appended to calls.log beside the
scenario ("ROLE LENS ROUND ATTEMPT"), and its prompt saved as
prompts/ROLE-LENS-rROUND-aATTEMPT.txt there.
"""
import json
import os
import sys
import time

scenario_path, prompt = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(scenario_path))
with open(scenario_path) as f:
    scenario = json.load(f)

role = os.environ.get("ORCH_REVIEW_ROLE", "?")
lens = os.environ.get("ORCH_REVIEW_LENS", "-")
rnd = os.environ.get("ORCH_REVIEW_ROUND", "0")
attempt = int(os.environ.get("ORCH_REVIEW_ATTEMPT", "1") or "1")

with open(os.path.join(here, "calls.log"), "a") as f:
    f.write("%s %s %s %d\n" % (role, lens, rnd, attempt))
os.makedirs(os.path.join(here, "prompts"), exist_ok=True)
with open(os.path.join(here, "prompts", "%s-%s-r%s-a%d.txt" % (role, lens, rnd, attempt)), "w") as f:
    f.write(prompt)


def by_round(table):
    if table is None:
        return None
    return table.get(rnd, table.get("default"))


if role == "reviewer":
    answer = by_round(scenario.get("reviewer", {}).get(lens))
elif role == "judge":
    answer = by_round(scenario.get("judge"))
elif role == "verifier":
    answer = None
    for rule in scenario.get("verifier", []):
        if rule.get("match", "") in prompt:
            answer = rule["answer"]
            break
elif role == "fixer":
    answer = by_round(scenario.get("fixer"))
else:
    answer = None

if answer is None:
    answer = {"findings": [], "scorecard": {}} if role in ("reviewer", "judge") else {"raw": "nothing to do"}

if isinstance(answer, dict) and "attempts" in answer:
    seq = answer["attempts"]
    answer = seq[min(attempt, len(seq)) - 1]

tokens = 1000
if isinstance(answer, dict):
    tokens = answer.get("tokens", tokens)
usage = os.environ.get("ORCH_USAGE_FILE")
if usage:
    with open(usage, "w") as f:
        json.dump({"tokens_in": tokens * 3 // 4, "tokens_out": tokens - tokens * 3 // 4}, f)

if isinstance(answer, dict) and "edits" in answer:
    for e in answer["edits"]:
        with open(e["file"]) as f:
            text = f.read()
        with open(e["file"], "w") as f:
            f.write(text.replace(e["replace"], e["with"]))
if isinstance(answer, dict) and "sleep" in answer:
    time.sleep(answer["sleep"])
if isinstance(answer, dict) and ("raw" in answer or "exit" in answer or "edits" in answer or "sleep" in answer):
    if "raw" in answer:
        print(answer["raw"])
    sys.exit(answer.get("exit", 0))
answer = {k: v for k, v in answer.items() if k != "tokens"} if isinstance(answer, dict) else answer
print(json.dumps(answer))
