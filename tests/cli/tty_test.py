#!/usr/bin/env python3
"""Black-box tests of orch's terminal output, run in a pseudo-terminal.

- `orch run`: with a terminal on stderr, one live progress line redrawn in place
  ("\\r\\033[K[done/total] N running, N failed, N skipped  ELAPSED  tokens N"),
  failed steps printed above it, then the step table and the closing
  "run ID STATUS: ..." line (src/cli/progress.cc, src/cli/cmd_run.cc). Without a
  terminal on stderr: one line per finished step on stdout, nothing redrawn.
- The risk guard's question (src/cli/approval_prompt.cc): with a terminal on
  stdin, a MEDIUM step asks "[y/N]", a HIGH step shows its command and runs only
  when its id is typed back; without one nobody is asked and the step waits.
- `orch review --config RUN.yaml`: the Pre-Flight Report, then one question on the
  terminal ("Launch this review? [y/N]"): yes launches, anything else does not and
  records nothing (exit 3).
- `orch status RUN_ID --watch`: redraws (clear screen when stdout is a terminal,
  a blank line between reports otherwise) every --interval seconds until the run
  ends, then exits with the run's exit code (src/cli/cmd_status.cc, docs/cli.md).
- PLAN `-` with a terminal on stdin: orch says it reads the plan there and how to
  end it (Ctrl-D); piped in, nothing is said (src/cli/plan_input.cc).

The orch binary comes from $ORCH_BINARY (CTest sets it), else /work/main/build/orch.
Every command gets its own --store and --workspace in a fresh temp dir. Every
child has a deadline and is killed (with its process group) on failure.

Python 3 standard library only. Run: ORCH_BINARY=build/orch python3 tests/cli/tty_test.py -v
"""

import errno
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import tempfile
import termios
import time
import unittest

ORCH = os.environ.get("ORCH_BINARY") or "/work/main/build/orch"

# Generous: the machine may be a loaded 2-core box.
DEADLINE = 30.0

ESC = "\x1b"
ERASE = "\r\x1b[K"  # what ProgressPrinter writes before every draw, and in finish()
CLEAR = "\x1b[H\x1b[2J"  # what `status --watch` writes before each report on a terminal
LIVE_RE = re.compile(
    r"\r\x1b\[K\[(\d+)/(\d+)\] (\d+) running, (\d+) failed, (\d+) skipped  (\S+)  tokens (\d+)"
)
STARTED_RE = re.compile(r"orch: run (\S+) \(store (.+?)\)\r?\n")
TABLE_HEADER_RE = re.compile(r"STEP\s+STATUS\s+TRY\s+TIME\s+TOKENS\s+REASON")


def duration_ms(text):
    """Parses orch's human_duration ("943ms", "1.2s", "1m05s", "2h03m") to milliseconds."""
    m = re.fullmatch(r"(\d+)ms", text)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"(\d+(?:\.\d+)?)s", text)
    if m:
        return float(m.group(1)) * 1000
    m = re.fullmatch(r"(\d+)m(\d+)s", text)
    if m:
        return (int(m.group(1)) * 60 + int(m.group(2))) * 1000
    m = re.fullmatch(r"(\d+)h(\d+)m", text)
    if m:
        return (int(m.group(1)) * 3600 + int(m.group(2)) * 60) * 1000
    raise AssertionError("not an orch duration: %r" % text)


def child_env():
    env = dict(os.environ)
    env["TERM"] = "xterm"
    env.pop("ORCH_SYNC", None)
    # Statuses are coloured on a terminal unless NO_COLOR is set: the layout tests
    # read plain words; LiveProgress.test_statuses_are_coloured_on_a_terminal
    # takes it away.
    env["NO_COLOR"] = "1"
    return env


class OrchTestCase(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.access(ORCH, os.X_OK), "no orch binary at %s (set ORCH_BINARY)" % ORCH)
        self._tmp = tempfile.TemporaryDirectory(prefix="orch-tty-")
        self.dir = os.path.realpath(self._tmp.name)
        self.workspace = os.path.join(self.dir, "ws")
        os.mkdir(self.workspace)
        self.store = os.path.join(self.dir, "store", "orch.db")
        self.procs = []
        self.fds = []

    def tearDown(self):
        for p in self.procs:
            self._stop(p)
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._tmp.cleanup()

    @staticmethod
    def _stop(p):
        if p.poll() is not None:
            return
        # orch handles SIGTERM (stops its steps, records the run interrupted); then SIGKILL.
        for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            try:
                os.killpg(p.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue

    def write_plan(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def spawn(self, args, stdout="pty", stderr="pty", stdin=None, term="xterm", columns=None, color=False):
        """Starts orch ARGS. stdout/stderr/stdin: "pty" (a shared pseudo-terminal), "pipe", or a
        file object (stdin default: /dev/null). term: $TERM (None: unset). columns: the
        pseudo-terminal's width. Returns (popen, master_fd or None)."""
        master = slave = None
        if "pty" in (stdout, stderr, stdin):
            master, slave = pty.openpty()
            self.fds.append(master)
            if columns is not None:
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = child_env()
        if color:
            env.pop("NO_COLOR", None)
        if term is None:
            env.pop("TERM", None)
        else:
            env["TERM"] = term

        def target(kind):
            if kind == "pty":
                return slave
            if kind == "pipe":
                return subprocess.PIPE
            return kind

        p = subprocess.Popen(
            [ORCH] + list(args),
            stdin=subprocess.DEVNULL if stdin is None else target(stdin),
            stdout=target(stdout),
            stderr=target(stderr),
            cwd=self.dir,
            env=env,
            start_new_session=True,  # own process group: tearDown can kill it all
            close_fds=True,
            # A terminal on stdin becomes the controlling terminal (so /dev/tty opens).
            preexec_fn=(lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0)) if stdin == "pty" else None,
        )
        self.procs.append(p)
        if slave is not None:
            os.close(slave)
        return p, master

    def collect(self, p, master=None, deadline=DEADLINE):
        """Reads the pty master (if any) and p's pipes until p exits and they are drained.
        Returns (exit_code, pty_text, stdout_pipe_text, stderr_pipe_text). Fails (and kills
        p) past the deadline."""
        bufs = {}
        fds = {}
        if master is not None:
            fds[master] = "pty"
        if p.stdout is not None:
            fds[p.stdout.fileno()] = "stdout"
        if p.stderr is not None:
            fds[p.stderr.fileno()] = "stderr"
        for name in fds.values():
            bufs[name] = b""
        end = time.monotonic() + deadline
        exited_at = None
        while fds:
            now = time.monotonic()
            if now > end:
                self._stop(p)
                self.fail("orch %s did not finish within %.0fs; output so far: %r"
                          % (p.args[1:], deadline, {k: v.decode(errors="replace") for k, v in bufs.items()}))
            if p.poll() is not None:
                if exited_at is None:
                    exited_at = now
                elif now - exited_at > 2.0:
                    break  # something else (a leaked step?) holds the terminal open
            ready, _, _ = select.select(list(fds), [], [], 0.1)
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError as e:
                    if e.errno != errno.EIO:  # EIO: the pty's last writer is gone
                        raise
                    chunk = b""
                if chunk:
                    bufs[fds[fd]] += chunk
                else:
                    del fds[fd]
        for f in (p.stdout, p.stderr):
            if f is not None:
                f.close()
        rc = p.wait(timeout=max(1.0, end - time.monotonic()))
        text = {k: v.decode("utf-8", errors="replace") for k, v in bufs.items()}
        return rc, text.get("pty"), text.get("stdout"), text.get("stderr")

    def started_line(self, text):
        m = STARTED_RE.search(text)
        self.assertIsNotNone(m, "no 'orch: run ID (store DIR)' line in %r" % text)
        run_id, store_dir = m.group(1), m.group(2)
        self.assertRegex(run_id, r"^[0-9A-Za-z][0-9A-Za-z_.-]*$")
        self.assertEqual(os.path.realpath(store_dir), os.path.realpath(os.path.dirname(self.store)))
        return run_id, m

    def wait_for_run_id(self, path, p, deadline=DEADLINE):
        """Polls a background run's stderr file for its 'orch: run ID' line."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            with open(path) as f:
                text = f.read()
            m = STARTED_RE.search(text)
            if m:
                return m.group(1)
            if p.poll() is not None:
                self.fail("orch run exited %s before printing its run id: %r" % (p.returncode, text))
            time.sleep(0.02)
        self.fail("orch run printed no run id within %.0fs" % deadline)

    def assert_table(self, text, rows):
        """The step table: header, then one row per (step, status, tries), in order."""
        lines = text.replace("\r\n", "\n").split("\n")
        header = [i for i, l in enumerate(lines) if TABLE_HEADER_RE.fullmatch(l.strip())]
        self.assertEqual(len(header), 1, "want exactly one step table in %r" % text)
        body = lines[header[0] + 1: header[0] + 1 + len(rows)]
        self.assertEqual(len(body), len(rows), text)
        for line, (step, status, tries) in zip(body, rows):
            self.assertRegex(line, r"^%s\s+%s\s+%d\s+\S+\s+0\s*" % (re.escape(step), status, tries), text)


PARALLEL_PLAN = """\
name: tty-live
steps:
""" + "".join('  - {id: s%d, run: [sleep, "0.3"]}\n' % i for i in range(1, 7))

FAILING_PLAN = """\
name: tty-failing
steps:
  - {id: good, run: [sleep, "0.4"]}
  - {id: bad, sh: 'sleep 0.1; echo boom >&2; exit 3'}
  - {id: after, deps: [good], run: [sleep, "0.1"]}
"""


class LiveProgress(OrchTestCase):
    def run_parallel(self, stdout, stderr):
        plan = self.write_plan("plan.yaml", PARALLEL_PLAN)
        p, master = self.spawn(["run", plan, "-j", "2", "--store", self.store, "--workspace", self.workspace],
                               stdout=stdout, stderr=stderr)
        return self.collect(p, master)

    def test_live_line_is_redrawn_in_place_then_the_table(self):
        rc, out, _, _ = self.run_parallel("pty", "pty")
        self.assertEqual(rc, 0, out)
        run_id, started = self.started_line(out)
        self.assertEqual(started.start(), 0, "the run id line comes first: %r" % out)

        # The live part: every draw is "\r\033[K[done/total] ...", with no newline between
        # draws (nothing scrolls), and finish() erases the line before the table.
        table_at = TABLE_HEADER_RE.search(out)
        self.assertIsNotNone(table_at, out)
        live = out[started.end():table_at.start()]
        self.assertTrue(live.endswith(ERASE), "the live line is erased before the table: %r" % live)
        self.assertNotIn("\n", live, "the live line is redrawn in place, never scrolled: %r" % live)
        draws = LIVE_RE.findall(live)
        self.assertEqual(len(draws), live.count(ERASE) - 1,
                         "every erase but the final one starts a draw: %r" % live)
        self.assertGreaterEqual(len(draws), 2, "want at least 2 redraws: %r" % live)

        done = [int(d[0]) for d in draws]
        for d_done, total, running, failed, skipped, elapsed, tokens in draws:
            self.assertEqual(int(total), 6, live)
            self.assertLessEqual(int(running), 2, "-j 2: at most 2 running: %r" % live)
            self.assertEqual((int(failed), int(skipped), int(tokens)), (0, 0, 0), live)
        self.assertEqual(done, sorted(done), "done never goes down: %r" % live)
        self.assertLess(done[0], 6, "the first draw is before the end: %r" % live)
        self.assertEqual(draws[-1][:5], ("6", "6", "0", "0", "0"), "the last draw shows the end: %r" % live)
        elapsed = [duration_ms(d[5]) for d in draws]
        self.assertEqual(elapsed, sorted(elapsed), live)
        # Three waves of 2 x `sleep 0.3` cannot end in less than 0.9 s.
        self.assertGreaterEqual(elapsed[-1], 850, live)

        # Then the table (Full report), and the closing line.
        rest = out[table_at.start():]
        self.assertTrue(rest.endswith("\r\n"), rest)
        self.assert_table(rest, [("s%d" % i, "done", 1) for i in range(1, 7)])
        last = rest.rstrip("\r\n").split("\r\n")[-1]
        self.assertRegex(last, r"^run %s succeeded: 6 done, 0 failed, 0 skipped, 0 cancelled of 6 in \S+; "
                               r"tokens 0, cost \$0\.0000$" % re.escape(run_id))
        # No Lines-mode output on a terminal.
        self.assertNotRegex(out, r"done\s+s\d  \(attempt", out)

    def test_statuses_are_coloured_on_a_terminal(self):
        plan = self.write_plan("plan.yaml", FAILING_PLAN)
        p, master = self.spawn(["run", plan, "-j", "2", "--store", self.store, "--workspace", self.workspace],
                               color=True)
        rc, out, _, _ = self.collect(p, master)
        self.assertEqual(rc, 1, out)
        self.assertIn(ERASE + "\x1b[31mfailed\x1b[0m    bad: exit_zero: exited with code 3", out)
        self.assertRegex(out, r"\n\S+ +\x1b\[32mdone\x1b\[0m +", "the table's done in green")
        self.assertIn(" \x1b[31mfailed\x1b[0m: 1 done, 1 failed", out)
        # NO_COLOR (no-color.org) turns it off, as does --color=never.
        for extra, color in (([], False), (["--color=never"], True)):
            p, master = self.spawn(["run", plan, "--store", self.store, "--workspace", self.workspace] + extra,
                                   color=color)
            rc, out, _, _ = self.collect(p, master)
            self.assertEqual(rc, 1, out)
            self.assertNotIn("\x1b[3", out)

    def test_failed_step_is_printed_above_the_live_line(self):
        plan = self.write_plan("plan.yaml", FAILING_PLAN)
        p, master = self.spawn(["run", plan, "-j", "2", "--store", self.store, "--workspace", self.workspace])
        rc, out, _, _ = self.collect(p, master)
        self.assertEqual(rc, 1, out)
        run_id, started = self.started_line(out)
        table_at = TABLE_HEADER_RE.search(out)
        self.assertIsNotNone(table_at, out)
        live = out[started.end():table_at.start()]
        # The failure gets its own line, and the end of what the step printed its
        # own lines under it (they scroll up; the live line goes on below them).
        self.assertEqual(live.count("\n"), 2, live)
        self.assertIn(ERASE + "failed    bad: exit_zero: exited with code 3; output: boom\r\n  | boom\r\n", live)
        after_failure = live.split("failed    bad:", 1)[1]
        self.assertRegex(after_failure, LIVE_RE, "the live line is drawn again after the failure: %r" % live)
        draws = LIVE_RE.findall(live)
        self.assertGreaterEqual(len(draws), 2, live)
        self.assertEqual(draws[-1][:5], ("1", "3", "0", "1", "1"), "last draw: 1 done, 1 failed, 1 skipped: %r" % live)
        rest = out[table_at.start():]
        self.assert_table(rest, [("good", "done", 1), ("bad", "failed", 1), ("after", "skipped", 0)])
        self.assertRegex(rest, r"\r\nrun %s failed: 1 done, 1 failed, 1 skipped, 0 cancelled of 3 in \S+; "
                               r"tokens 0, cost \$0\.0000\r\n  step 'bad' failed\r\n$" % re.escape(run_id))

    def test_without_a_terminal_one_line_per_step_and_no_redraws(self):
        rc, _, out, err = self.run_parallel("pipe", "pipe")
        self.assertEqual(rc, 0, out + err)
        run_id, started = self.started_line(err)
        self.assertEqual(err, started.group(0), "stderr holds only the run id line: %r" % err)
        for text in (out, err):
            self.assertNotIn("\r", text, "no carriage returns without a terminal")
            self.assertNotIn(ESC, text, "no escape sequences without a terminal")
        lines = out.rstrip("\n").split("\n")
        self.assertEqual(len(lines), 7, out)
        names = []
        for line in lines[:6]:
            m = re.fullmatch(r"done      (s\d)  \(attempt 1, \S+\)", line)
            self.assertIsNotNone(m, "a per-step line: %r" % out)
            names.append(m.group(1))
        self.assertEqual(sorted(names), ["s%d" % i for i in range(1, 7)], out)
        self.assertRegex(lines[6], r"^run %s succeeded: 6 done, 0 failed, 0 skipped, 0 cancelled of 6 in \S+; "
                                   r"tokens 0, cost \$0\.0000$" % re.escape(run_id))
        self.assertIsNone(TABLE_HEADER_RE.search(out), "no table in Lines mode (only the summary): %r" % out)

    def test_a_dumb_terminal_gets_plain_lines(self):
        # TERM=dumb (an editor's shell buffer) or no TERM at all: a terminal that cannot
        # redraw in place gets the plain per-step lines, never an escape sequence.
        plan = self.write_plan("plan.yaml", PARALLEL_PLAN)
        for term in ("dumb", None):
            p, master = self.spawn(["run", plan, "-j", "2", "--store", self.store, "--workspace", self.workspace],
                                   term=term)
            rc, out, _, _ = self.collect(p, master)
            self.assertEqual(rc, 0, out)
            self.assertNotIn(ESC, out, "TERM=%s: %r" % (term, out))
            self.assertNotIn("\r\x1b", out)
            self.assertEqual(len(re.findall(r"done      s\d  \(attempt 1, \S+\)\r\n", out)), 6, out)

    def test_the_live_line_fits_a_narrow_terminal(self):
        # A line as wide as the terminal would wrap, and each redraw would leave a line
        # behind: every draw is cut one column short of the width.
        plan = self.write_plan("plan.yaml", PARALLEL_PLAN)
        p, master = self.spawn(["run", plan, "-j", "2", "--store", self.store, "--workspace", self.workspace],
                               columns=30)
        rc, out, _, _ = self.collect(p, master)
        self.assertEqual(rc, 0, out)
        _, started = self.started_line(out)
        table_at = TABLE_HEADER_RE.search(out)
        self.assertIsNotNone(table_at, out)
        live = out[started.end():table_at.start()]
        draws = [d for d in live.split(ERASE) if d]
        self.assertGreaterEqual(len(draws), 2, live)
        for d in draws:
            self.assertLessEqual(len(d), 29, "a draw wider than the terminal: %r" % live)
            self.assertTrue(d.startswith("[") and "running" in d, d)

    def test_steps_ended_by_an_abort_get_their_line_too(self):
        # 'r' waits to retry when 'bad' aborts the run: it ends failed ("not retried")
        # without another attempt, and 'after' is skipped without one. Each still
        # gets its line; a never-attempted step has no "(attempt N, ...)".
        plan = self.write_plan("abort.yaml", """steps:
  - {id: r, sh: 'exit 1', attempts: 2, retry_delay: 30s}
  - {id: bad, sh: 'sleep 0.3; exit 3'}
  - {id: after, deps: [bad], run: ["true"]}
""")
        p, _ = self.spawn(["run", plan, "--store", self.store, "--workspace", self.workspace],
                          stdout="pipe", stderr="pipe")
        rc, _, out, err = self.collect(p)
        self.assertEqual(rc, 1, out + err)
        lines = out.rstrip("\n").split("\n")
        self.assertIn("failed    bad  (attempt 1, ", out)
        self.assertTrue(any(re.fullmatch(r"failed    r  \(attempt 1, \S+\)  not retried \(step 'bad' failed\); "
                                         r"last failure: exit_zero: exited with code 1", l) for l in lines), out)
        self.assertIn("skipped   after  not started: run aborted (step 'bad' failed)", lines, out)
        self.assertRegex(out, r"run \S+ failed: 0 done, 2 failed, 1 skipped, 0 cancelled of 3 in ")

    def test_live_mode_follows_stderr_not_stdout(self):
        # stdout on a terminal but stderr a pipe: still Lines mode.
        rc, tty_out, _, err = self.run_parallel("pty", "pipe")
        self.assertEqual(rc, 0, repr(tty_out) + err)
        run_id, _ = self.started_line(err)
        self.assertNotIn(ESC, tty_out + err, "nothing is redrawn when stderr is not a terminal")
        self.assertIsNone(re.search(r"\r(?!\n)", tty_out), "only \\r\\n line ends: %r" % tty_out)
        self.assertEqual(len(re.findall(r"^done      s\d  \(attempt 1, \S+\)\r$", tty_out, re.M)), 6, tty_out)
        self.assertIn("run %s succeeded: 6 done" % run_id, tty_out)


WATCH_PLAN = """\
name: tty-watch
steps:
  - {id: a, run: [sleep, "1"]}
  - {id: b, deps: [a], run: [sleep, "1"]}
  - {id: c, deps: [b], run: [sleep, "1"]}
"""

WATCH_FAILING_PLAN = """\
name: tty-watch-fail
steps:
  - {id: a, run: [sleep, "1.5"]}
  - {id: b, deps: [a], sh: 'exit 3'}
"""

FRAME_RE = re.compile(r"^run (\S+)  (\S*)  plan (.*)\nstatus (\S+)(.*)\n", re.M)
SUMMARY_RE = re.compile(r"^run (\S+) (\S+): (\d+) done, (\d+) failed, (\d+) skipped, (\d+) cancelled of (\d+) in ", re.M)


class StatusWatch(OrchTestCase):
    def start_background_run(self, plan_text):
        plan = self.write_plan("plan.yaml", plan_text)
        out = open(os.path.join(self.dir, "run.out"), "w")
        err_path = os.path.join(self.dir, "run.err")
        err = open(err_path, "w")
        try:
            p, _ = self.spawn(["run", plan, "--store", self.store, "--workspace", self.workspace],
                              stdout=out, stderr=err)
        finally:
            out.close()
            err.close()
        return p, self.wait_for_run_id(err_path, p)

    def frames(self, text):
        """Splits a --watch terminal transcript into reports (one per clear-screen)."""
        self.assertTrue(text.startswith(CLEAR), "each report starts with a clear-screen: %r" % text[:200])
        frames = [f.replace("\r\n", "\n") for f in text.split(CLEAR)[1:]]
        for f in frames:
            self.assertRegex(f, FRAME_RE, "a report: %r" % f)
            self.assertRegex(f, SUMMARY_RE, "a report: %r" % f)
        return frames

    def test_watch_redraws_until_the_run_ends_then_exits_0(self):
        run, run_id = self.start_background_run(WATCH_PLAN)
        # Two watchers of the same run: one on a terminal, one on a pipe.
        watch_args = ["status", run_id, "--watch", "--interval", "0.2", "--store", self.store]
        tty_watch, master = self.spawn(watch_args)
        pipe_watch, _ = self.spawn(watch_args, stdout="pipe", stderr="pipe")
        t0 = time.monotonic()
        rc, text, _, _ = self.collect(tty_watch, master)
        took = time.monotonic() - t0
        prc, _, pout, perr = self.collect(pipe_watch)
        run_rc, _, _, _ = self.collect(run)
        self.assertEqual(run_rc, 0)
        self.assertEqual(rc, 0, "--watch exits with the run's exit code (0: succeeded): %r" % text)
        self.assertLess(took, DEADLINE)

        frames = self.frames(text)
        self.assertGreaterEqual(len(frames), 3, "want several redraws while the run goes: %r" % text)
        statuses = [FRAME_RE.search(f).group(4) for f in frames]
        self.assertEqual(statuses[-1], "succeeded", "the last report shows the end: %r" % frames[-1])
        self.assertTrue(all(s == "running" for s in statuses[:-1]),
                        "one report after the end, then exit: %r" % statuses)
        self.assertGreaterEqual(statuses.count("running"), 2, statuses)
        for f in frames[:-1]:
            self.assertEqual(FRAME_RE.search(f).group(5), " (active)", f)
            self.assertEqual(FRAME_RE.search(f).group(1), run_id, f)
            self.assertEqual(FRAME_RE.search(f).group(2), "tty-watch", f)
        done = [int(SUMMARY_RE.search(f).group(3)) for f in frames]
        self.assertEqual(done, sorted(done), "done never goes down: %r" % done)
        self.assertLess(done[0], 3, done)
        self.assertEqual(done[-1], 3, done)
        self.assert_table(frames[-1], [("a", "done", 1), ("b", "done", 1), ("c", "done", 1)])
        self.assertRegex(frames[-1], r"(?m)^run %s succeeded: 3 done, 0 failed, 0 skipped, 0 cancelled of 3 in "
                         % re.escape(run_id))
        self.assertEqual(frames[-1].count("\n"), 7, "header (2) + table (4) + summary (1): %r" % frames[-1])

        # Not on a terminal: the same reports, separated by blank lines, no escapes.
        self.assertEqual(prc, 0, pout + perr)
        self.assertEqual(perr, "")
        self.assertNotIn(ESC, pout)
        self.assertNotIn("\r", pout)
        plain = pout.split("\n\n")
        self.assertGreaterEqual(len(plain), 3, pout)
        self.assertEqual([FRAME_RE.search(f).group(4) for f in plain][-1], "succeeded", pout)
        self.assertTrue(all(FRAME_RE.search(f).group(4) == "running" for f in plain[:-1]), pout)

    def test_watch_exits_with_the_exit_code_of_a_failed_run(self):
        run, run_id = self.start_background_run(WATCH_FAILING_PLAN)
        watch, master = self.spawn(["status", run_id, "--watch", "--interval", "0.2", "--store", self.store])
        rc, text, _, _ = self.collect(watch, master)
        run_rc, _, _, _ = self.collect(run)
        self.assertEqual(run_rc, 1)
        self.assertEqual(rc, 1, "--watch exits with the run's exit code (1: failed): %r" % text)
        frames = self.frames(text)
        self.assertGreaterEqual(len(frames), 2, text)
        self.assertEqual(FRAME_RE.search(frames[0]).group(4), "running", frames[0])
        self.assertEqual(FRAME_RE.search(frames[-1]).group(4), "failed", frames[-1])
        self.assert_table(frames[-1], [("a", "done", 1), ("b", "failed", 1)])

        # Watching a run that has already ended: one report, at once, same exit code.
        again, master = self.spawn(["status", run_id, "--watch", "--interval", "0.2", "--store", self.store])
        rc, text, _, _ = self.collect(again, master, deadline=10)
        self.assertEqual(rc, 1, text)
        frames = self.frames(text)
        self.assertEqual(len(frames), 1, text)
        self.assertEqual(FRAME_RE.search(frames[0]).group(4), "failed", text)

        # The ledger agrees (orch runs --json).
        p, _ = self.spawn(["runs", "--json", "--store", self.store], stdout="pipe", stderr="pipe")
        rc, _, out, err = self.collect(p)
        self.assertEqual(rc, 0, err)
        runs = json.loads(out)
        self.assertEqual([(r["id"], r["status"], r["active"]) for r in runs], [(run_id, "failed", False)])


RISKY_PLAN = """\
name: tty-risky
steps:
  - {id: deploy, risk: high, goal: ship it, run: [touch, deployed.txt]}
  - {id: tidy, risk: medium, run: [touch, tidied.txt]}
  - {id: later, deps: [deploy, tidy], run: [touch, later.txt]}
"""


class ApprovalPrompt(OrchTestCase):
    """The risk guard asks on the terminal; the answers decide what runs."""

    def answer(self, p, master, dialogue):
        """Plays `dialogue` [(prompt_regex, reply), ...] on the pty, then collects the rest.
        Returns (exit_code, all_text)."""
        seen = b""
        end = time.monotonic() + DEADLINE
        for pattern, reply in dialogue:
            while not re.search(pattern, seen.decode("utf-8", errors="replace")):
                if time.monotonic() > end or p.poll() is not None:
                    self.fail("no prompt %r; output: %r" % (pattern, seen.decode(errors="replace")))
                ready, _, _ = select.select([master], [], [], 0.1)
                if ready:
                    try:
                        seen += os.read(master, 65536)
                    except OSError:
                        break
            os.write(master, reply.encode() + b"\n")
            # What comes next is matched against what follows this prompt only.
            seen = b""
        rc, rest, _, _ = self.collect(p, master)
        return rc, rest

    def test_high_runs_only_when_its_id_is_typed_and_medium_on_yes(self):
        plan = self.write_plan("risky.yaml", RISKY_PLAN)
        p, master = self.spawn(["run", plan, "--store", self.store, "--workspace", self.workspace, "-j", "1"],
                               stdin="pty")
        rc, rest = self.answer(p, master, [
            (r"step 'deploy' of run \S+ needs approval: high risk\r?\n  goal:    ship it\r?\n"
             r"  command: touch deployed.txt\r?\nType the step id 'deploy'", "deploy"),
            (r"step 'tidy' of run \S+ needs approval: medium risk[\s\S]*Run it\? \[y/N\]", "y"),
        ])
        self.assertEqual(rc, 0, rest)
        for name in ("deployed.txt", "tidied.txt", "later.txt"):
            self.assertTrue(os.path.exists(os.path.join(self.workspace, name)), name)

    def test_a_wrong_id_or_no_leaves_steps_waiting_and_exits_3(self):
        plan = self.write_plan("risky.yaml", RISKY_PLAN)
        p, master = self.spawn(["run", plan, "--store", self.store, "--workspace", self.workspace, "-j", "1"],
                               stdin="pty")
        rc, rest = self.answer(p, master, [
            (r"Type the step id 'deploy'", "y"),  # not the id: no
            (r"Run it\? \[y/N\]", ""),           # the default: no
        ])
        self.assertEqual(rc, 3, rest)
        self.assertIn("awaiting_approval", rest)
        self.assertIn("awaiting approval", rest)
        self.assertEqual(os.listdir(self.workspace), [])

    def test_ctrl_c_at_the_prompt_interrupts_the_run(self):
        plan = self.write_plan("risky.yaml", RISKY_PLAN)
        p, master = self.spawn(["run", plan, "--store", self.store, "--workspace", self.workspace, "-j", "1"],
                               stdin="pty")
        began = time.monotonic()
        # ^C through the terminal's line discipline: SIGINT to orch's process group.
        rc, rest = self.answer(p, master, [(r"Type the step id 'deploy'", "\x03")])
        self.assertEqual(rc, 130, rest)
        self.assertLess(time.monotonic() - began, 15)
        self.assertIn("interrupted", rest)
        self.assertEqual(os.listdir(self.workspace), [])

    def test_without_a_terminal_on_stdin_nobody_is_asked(self):
        plan = self.write_plan("risky.yaml", RISKY_PLAN)
        p, master = self.spawn(["run", plan, "--store", self.store, "--workspace", self.workspace])
        rc, text, _, _ = self.collect(p, master)
        self.assertEqual(rc, 3, text)
        self.assertNotIn("needs approval", text)
        self.assertRegex(text, r"2 steps awaiting approval: deploy, tidy; approve with `orch approve \S+ STEP`")
        self.assertEqual(os.listdir(self.workspace), [])



FAKE_REVIEWER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agents", "fake_reviewer.py")


class ReviewPreFlight(OrchTestCase):
    """`orch review` asks once, on the terminal, after the Pre-Flight Report."""

    answer = ApprovalPrompt.answer  # the same dialogue player

    def setup_review(self):
        with open(os.path.join(self.workspace, "doc.md"), "w") as f:
            f.write("# Title\n\nSome text.\n")
        with open(os.path.join(self.dir, "lens.md"), "w") as f:
            f.write("Review it.\n")
        with open(os.path.join(self.dir, "scenario.json"), "w") as f:
            json.dump({}, f)
        with open(os.path.join(self.dir, "workers.yaml"), "w") as f:
            f.write("workers:\n  fake:\n    argv: [python3, %s, %s, \"{prompt}\"]\n"
                    % (json.dumps(FAKE_REVIEWER), json.dumps(os.path.join(self.dir, "scenario.json"))))
        return self.write_plan("RUN.yaml", "name: tty review\nartifacts: [doc.md]\nworkers: workers.yaml\n"
                               "max_rounds: 1\ndry_rounds: 1\n"
                               "lenses:\n  - {name: style, prompt: lens.md, worker: fake}\n")

    def review_args(self, config):
        return ["review", "--config", config, "--workspace", self.workspace, "--store", self.store]

    def test_no_at_the_question_launches_nothing(self):
        config = self.setup_review()
        p, master = self.spawn(self.review_args(config), stdin="pty")
        rc, rest = self.answer(p, master, [(r"Pre-Flight Report: review 'tty review'[\s\S]*"
                                            r"Launch this review\? \[y/N\]", "n")])
        self.assertEqual(rc, 3, rest)
        self.assertIn("not launched (nothing was recorded)", rest)
        self.assertFalse(os.path.exists(self.store), "no ledger was created")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "calls.log")), "no reviewer ran")

    def test_yes_at_the_question_runs_the_review(self):
        config = self.setup_review()
        p, master = self.spawn(self.review_args(config), stdin="pty")
        rc, rest = self.answer(p, master, [(r"Launch this review\? \[y/N\]", "y")])
        self.assertEqual(rc, 0, rest)
        self.assertIn("Verdict:** PASS", rest)
        with open(os.path.join(self.dir, "calls.log")) as f:
            self.assertEqual(f.read(), "reviewer style 1 1\n")

class PlanFromATerminal(OrchTestCase):
    """PLAN `-` typed at a terminal: orch says it waits for it there and how to end it."""

    def test_a_plan_typed_at_the_terminal_ends_with_ctrl_d(self):
        p, master = self.spawn(["run", "-", "--store", self.store, "--workspace", self.workspace],
                               stdin="pty")
        seen = b""
        end = time.monotonic() + DEADLINE
        while b"reading the plan from standard input (end it with Ctrl-D" not in seen:
            if time.monotonic() > end or p.poll() is not None:
                self.fail("no hint; output: %r" % seen.decode(errors="replace"))
            if select.select([master], [], [], 0.1)[0]:
                seen += os.read(master, 65536)
        # A line at a time, as typed; Ctrl-D on a line of its own ends the input.
        for line in ("steps:", "  - {id: typed, sh: 'echo typed > typed.txt'}"):
            os.write(master, line.encode() + b"\n")
        os.write(master, b"\x04")
        rc, rest, _, _ = self.collect(p, master)
        self.assertEqual(rc, 0, rest)
        self.assertTrue(os.path.exists(os.path.join(self.workspace, "typed.txt")), rest)

    def test_a_plan_piped_in_is_read_without_a_word(self):
        plan = self.write_plan("p.yaml", "steps:\n  - {id: a, run: [echo, hi]}\n")
        with open(plan) as stdin:
            p, master = self.spawn(["validate", "-", "--workspace", self.workspace], stdin=stdin)
            rc, text, _, _ = self.collect(p, master)
        self.assertEqual(rc, 0, text)
        self.assertIn("<stdin>: ok (1 step)", text)
        self.assertNotIn("reading the plan", text)


if __name__ == "__main__":
    unittest.main()
