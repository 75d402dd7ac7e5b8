#!/usr/bin/env python3
# bench/validate_alternating.py ROUNDS LABEL=ORCH [LABEL=ORCH ...]
#
# `orch validate` of BIG_DIR/big.yaml and BIG_DIR/big.json (bench/gen_commands.py
# --big, as bench/run.sh section 3 makes them; BIG_DIR defaults to
# /tmp/orch-bench.yaml44), each binary and format in turn, the order reversed every
# other round, so a busy machine's slow minutes fall on every figure alike. Prints
# each one's median, best and worst wall time and its peak RSS (wait4), and the
# YAML/JSON ratio per binary (issue 38: YAML <= 1.5x JSON, peak RSS <= 100 MB).
# docs/benchmarks.md, session 44.
import os, sys, time, statistics, subprocess
rounds = int(sys.argv[1]); bins = [a.split("=", 1) for a in sys.argv[2:]]
d = os.environ.get("BIG_DIR", "/tmp/orch-bench.yaml44")
cmds = [(f"{lab} {fmt}", [b, "validate", f"{d}/big.{fmt}"]) for lab, b in bins for fmt in ("yaml", "json")]
res = {name: [] for name, _ in cmds}
devnull = open(os.devnull, "w")
for r in range(rounds):
    for name, argv in (cmds if r % 2 == 0 else cmds[::-1]):
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=devnull, stderr=devnull)
        _, status, ru = os.wait4(p.pid, 0)
        t = time.perf_counter() - t0
        assert status == 0, (name, status)
        res[name].append((t, ru.ru_maxrss / 1024))
print(f"{rounds} rounds, load average at the end: {os.getloadavg()[0]:.2f}")
for name, _ in cmds:
    ts = [t for t, _ in res[name]]; rss = [m for _, m in res[name]]
    print(f"{name:12s} median {statistics.median(ts):.3f} s  min {min(ts):.3f} s  max {max(ts):.3f} s  peak RSS {max(rss):.1f} MB")
for lab, _ in bins:
    y = statistics.median(t for t, _ in res[f"{lab} yaml"]); j = statistics.median(t for t, _ in res[f"{lab} json"])
    ym = min(t for t, _ in res[f"{lab} yaml"]); jm = min(t for t, _ in res[f"{lab} json"])
    print(f"{lab}: yaml/json median {y / j:.2f}x, best {ym / jm:.2f}x")
