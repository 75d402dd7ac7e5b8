// orch serve's page in a real browser: Debian's chromium (/usr/bin/chromium, or
// ORCH_CHROMIUM) driven by playwright-core from npm through its executable path
// — no browser is downloaded. Real processes: `orch run` makes the ledger, `orch
// serve --listen 127.0.0.1:0` serves it. Screenshots of each page go to
// ORCH_BROWSER_SHOTS (default: browser-shots/ in the current folder, which
// CTest runs in: the build folder).
//
//   ORCH_BINARY=build/orch node tests/browser/dashboard_test.mjs
//
// Exit 0 when every check held; 1 with each failure said on stderr.
import { chromium } from "playwright-core";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, existsSync, cpSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const ORCH = process.env.ORCH_BINARY;
if (!ORCH) throw new Error("ORCH_BINARY is not set");
const CHROMIUM = process.env.ORCH_CHROMIUM || "/usr/bin/chromium";
const SHOTS = resolve(process.env.ORCH_BROWSER_SHOTS || "browser-shots");
const SOURCE = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
mkdirSync(SHOTS, { recursive: true });

const work = mkdtempSync(join(tmpdir(), "orch-browser-"));
const failures = [];
function check(ok, what) {
  if (ok) {
    console.log("ok   " + what);
  } else {
    console.error("FAIL " + what);
    failures.push(what);
  }
}

function orch(...args) {
  const r = spawnSync(ORCH, args, { cwd: work, encoding: "utf8", timeout: 120000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}
function runId(text) {
  const m = text.match(/\b(\d{8}-\d{6}-[0-9a-f]{4})\b/);
  if (!m) throw new Error("no run id in: " + text);
  return m[1];
}

writeFileSync(join(work, "demo.yaml"), `name: demo
steps:
  - {id: a, sh: 'echo "<script>window.pwned = 1</script><b>bold</b>"'}
  - {id: b, deps: [a], sh: 'echo hello'}
  - {id: c, deps: [a], sh: 'echo "the disk is full" >&2; exit 3'}
  - {id: d, deps: [b, c], sh: 'true'}
`);
writeFileSync(join(work, "risky.yaml"), `name: release
steps:
  - id: build
    run: [touch, built]
  - id: deploy
    risk: high
    deps: [build]
    run: [touch, deployed]
`);
writeFileSync(join(work, "slow.yaml"), "name: slow\nsteps:\n" +
  Array.from({ length: 8 }, (_, i) => `  - {id: s${i}, ${i ? `deps: [s${i - 1}], ` : ""}sh: 'sleep 0.4'}\n`).join(""));

// A task trace, a scripted review and the cycle example, for their pages.
const task = JSON.parse(orch("task", "plan", "fix the crash in the date parser", "--json").out);
mkdirSync(join(work, "review", "lenses"), { recursive: true });
writeFileSync(join(work, "review", "doc.md"), "# Parser\n\nThe buffer in copy_name holds 16 bytes but the name may be longer.\n");
writeFileSync(join(work, "review", "lenses", "safety.md"), "Review for memory safety.\n");
writeFileSync(join(work, "review", "scenario.json"), JSON.stringify({ reviewer: { safety: { default: {
  findings: [{ file: "review/doc.md", locus: "copy_name", severity: "CRITICAL", line: 3, mechanical: false,
               claim: "the name can overflow the 16-byte buffer",
               evidence: "holds 16 bytes but the name may be longer" }], scorecard: {} } } } }));
writeFileSync(join(work, "review", "workers.yaml"), `workers:
  fake:
    argv: [python3, ${join(SOURCE, "tests", "agents", "fake_reviewer.py")}, ${join(work, "review", "scenario.json")}, "{prompt}"]
    output: text
`);
writeFileSync(join(work, "review", "RUN.yaml"), `name: parser doc
artifacts: [review/doc.md]
workers: workers.yaml
lenses:
  - {name: safety, prompt: lenses/safety.md, worker: fake}
max_rounds: 1
dry_rounds: 1
`);
const reviewed = orch("review", "--config", "review/RUN.yaml", "--yes", "--json");
const review = JSON.parse(reviewed.out || "{}");
check(review.verdict === "BLOCK", "the scripted review blocks: " + reviewed.err.slice(-300));
cpSync(join(SOURCE, "examples", "cycle"), join(work, "example"), { recursive: true });
rmSync(join(work, "example", ".orch"), { recursive: true, force: true });
rmSync(join(work, "example", "build"), { recursive: true, force: true });
const cycled = JSON.parse(orch("cycle", "run", "example/cycle.yaml", "--json").out || "{}");
check(cycled.status === "converged", "the cycle example converges");

const demo = runId(orch("run", "demo.yaml").err);
const risky = orch("run", "risky.yaml", "--approve-medium");
check(risky.code === 3, "the risky plan pauses for approval (exit 3)");
const paused = runId(risky.err);

// orch serve on LISTEN; resolves to its address once it says it.
function startServer(listen) {
  const proc = spawn(ORCH, ["serve", "--listen", listen], { cwd: work });
  const address = new Promise((ok, fail) => {
    let said = "";
    proc.stderr.on("data", (d) => {
      said += d;
      const m = said.match(/(http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) ok(m[1]);
    });
    proc.on("exit", (code) => fail(new Error("orch serve exited " + code + ": " + said)));
  });
  return { proc, address };
}
let server = startServer("127.0.0.1:0");
const base = await server.address;
const token = readFileSync(join(work, ".orch", "serve.token"), "utf8").trim();

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const errors = [];
try {
  page.on("pageerror", (e) => errors.push(String(e)));

  // The runs list.
  await page.goto(base);
  await page.waitForSelector(`tr[data-run="${demo}"]`);
  const demoRow = page.locator(`tr[data-run="${demo}"]`);
  check((await demoRow.locator(".status").textContent()) === "failed", "the runs list shows the failed run");
  check((await page.locator(`tr[data-run="${paused}"] .status`).textContent()) === "awaiting_approval",
        "and the paused one");
  check(/^\d+(\.\d)? s$/.test(await demoRow.locator(".duration").textContent()), "with its duration");
  await page.screenshot({ path: join(SHOTS, "runs.png"), fullPage: true });

  // Progress moves without a reload: a plan started now shows up and advances.
  const runner = spawn(ORCH, ["run", "slow.yaml"], { cwd: work, stdio: "ignore" });
  const finished = new Promise((ok) => runner.on("exit", ok));
  const slowRow = page.locator("tr", { hasText: "slow" });
  await slowRow.first().waitFor({ timeout: 10000 });
  const progress = slowRow.first().locator(".progress");
  const seen = new Set();
  const t0 = Date.now();
  while (Date.now() - t0 < 8000) {
    seen.add((await progress.textContent()).trim());
    if ((await slowRow.first().locator(".status").textContent()) === "succeeded") break;
    await page.waitForTimeout(100);
  }
  check(seen.size >= 3, `the progress of a running plan moved without a reload (${[...seen].join(" | ")})`);
  check((await progress.textContent()).trim() === "8/8", "and reached 8/8 when it finished");
  await finished;

  // An attempt's output follows while it runs.
  writeFileSync(join(work, "talk.yaml"), "name: talk\nsteps:\n  - {id: talk, sh: 'echo first; sleep 2; echo second; sleep 1'}\n");
  const talker = spawn(ORCH, ["run", "talk.yaml"], { cwd: work, stdio: "ignore" });
  const talked = new Promise((ok) => talker.on("exit", ok));
  const talkRow = page.locator("tr", { hasText: "talk" }).first();
  await talkRow.waitFor({ timeout: 10000 });
  await talkRow.locator("a").click();
  await page.locator('tr[data-step="talk"] button', { hasText: "#1" }).click();
  await page.waitForFunction(() => document.getElementById("output").textContent.includes("first"));
  check(!(await page.locator("#output").textContent()).includes("second"), "a running attempt's output so far");
  await page.waitForFunction(() => document.getElementById("output").textContent.includes("second"), null,
                             { timeout: 10000 });
  check(true, "and what it printed next, without another click");
  await talked;

  // A run: its failed step, its reason, its output; the DAG.
  await page.goto(base + "#/runs/" + demo);
  await page.waitForSelector('tr[data-step="c"]');
  check((await page.locator('tr[data-step="c"] .status').textContent()) === "failed", "the failed step is failed");
  check((await page.locator('tr[data-step="c"] .reason').textContent()).length > 0,
        "and shows its reason: " + (await page.locator('tr[data-step="c"] .reason').textContent()));
  await page.locator('tr[data-step="c"] button', { hasText: "#1" }).click();
  await page.waitForFunction(() => document.getElementById("output").textContent.includes("the disk is full"));
  check(true, "its output (stderr) is shown");
  const details = await page.locator("#attempt").textContent();
  check(details.includes("c attempt 1: failed") && details.includes("exit_zero failed") && details.includes("tokens 0"),
        "with how the attempt ended, its postcondition and its spend: " + details);
  await page.waitForSelector("#graph svg g.node");
  check((await page.locator("#graph svg g.node").count()) === 4, "the DAG has the plan's 4 nodes");
  check((await page.locator("#graph svg g.edge").count()) === 4, "and its 4 edges");
  check((await page.locator("#graph svg g.node.status-failed").count()) === 1, "coloured by status");
  await page.screenshot({ path: join(SHOTS, "run.png"), fullPage: true });

  // A step that prints HTML shows text, never markup.
  await page.locator('tr[data-step="a"] button', { hasText: "#1" }).click();
  await page.waitForFunction(() => document.getElementById("output").textContent.includes("<script>"));
  check(await page.evaluate(() => window.pwned === undefined), "the printed <script> did not run");
  check((await page.locator("#output b").count()) === 0 && (await page.locator("#output script").count()) === 0,
        "and made no element: it is text");

  // Approve: refused without the token, done with it, and the run then finishes.
  const refused = await page.evaluate(async ([p]) => {
    const r = await fetch(`/api/runs/${p}/steps/deploy/approve`, { method: "POST" });
    return r.status;
  }, [paused]);
  check(refused === 403, "an approve without the token is refused (403)");
  // The address orch serve prints: the page keeps the token and drops it from the address.
  await page.goto(base + "#token=" + token);
  await page.waitForFunction(() => !location.hash.includes("token") && sessionStorage.getItem("orch_token"));
  check(!page.url().includes(token), "the token is taken out of the address");
  await page.goto(base + "#/runs/" + paused);
  await page.waitForSelector('tr[data-step="deploy"] button.approve');
  await page.waitForSelector("#approvals table.approvals tbody tr");
  const asked = await page.locator("#approvals table.approvals tbody tr").first().textContent();
  check(asked.includes("deploy") && asked.includes("high") && asked.includes("touch") && asked.includes("deployed"),
        "the paused step shows what it will run and its risk: " + asked);
  await page.screenshot({ path: join(SHOTS, "approval.png"), fullPage: true });
  await page.locator('tr[data-step="deploy"] button.approve').click();
  let approved = false;
  for (let i = 0; i < 50 && !approved; ++i) {
    approved = orch("events", paused, "--json").out.includes("step_approved");
    if (!approved) await page.waitForTimeout(100);
  }
  check(approved, "Approve on the page records step_approved in the ledger");
  const resumed = orch("resume", paused);
  check(resumed.code === 0 && existsSync(join(work, "deployed")), "and `orch resume` then finishes the run");
  await page.waitForFunction(() => document.getElementById("run-status").textContent === "succeeded",
                             null, { timeout: 5000 });
  check(true, "the page shows it succeeded, live");

  // The runtimes' pages: a task trace's path, a review's findings and gate, a cycle's items and milestones.
  await page.goto(base + "#/tasks/" + encodeURIComponent(task.id));
  await page.waitForSelector("#other-view table.path tbody tr");
  const states = await page.locator("#other-view table.path tbody tr td:nth-child(2)").allTextContents();
  check(states.length >= 3 && states[0] === "CLASSIFY", "the task trace shows the path taken: " + states.join(" -> "));
  await page.screenshot({ path: join(SHOTS, "task.png"), fullPage: true });

  await page.goto(base + "#/reviews");
  await page.waitForSelector("#other-view table.reviews tbody tr");
  await page.locator("#other-view table.reviews a").first().click();
  await page.waitForSelector("#other-view table.findings tbody tr");
  const finding = await page.locator("#other-view table.findings tbody tr").first().textContent();
  check(finding.includes("CRITICAL") && finding.includes("the name can overflow the 16-byte buffer") &&
        finding.includes("holds 16 bytes but the name may be longer"),
        "the review page shows the finding, its severity and its quote");
  check((await page.locator("#other-view table.rounds tbody tr td:nth-child(2)").first().textContent()) === "BLOCK",
        "and the gate's verdict of its round");
  await page.screenshot({ path: join(SHOTS, "review.png"), fullPage: true });

  await page.goto(base + "#/cycles/" + encodeURIComponent(cycled.id));
  await page.waitForSelector("#other-view table.items tbody tr");
  check((await page.locator("#other-view table.items tbody tr").count()) === 7, "the cycle page lists its 7 items");
  const stuckRow = await page.locator("#other-view table.items tbody tr", { hasText: "stuck" }).allTextContents();
  check(stuckRow.length === 1 && stuckRow[0].includes("is_prime"), "is_prime is marked stuck");
  check((await page.locator("#other-view table.milestones tbody tr").count()) === cycled.cycles.length,
        `a milestones row per cycle (${cycled.cycles.length})`);
  check((await page.locator("#other-view table.audit tbody tr").count()) > 0, "and its audit entries");
  await page.screenshot({ path: join(SHOTS, "cycle.png"), fullPage: true });

  // The server restarts: the page's stream reconnects by itself and goes on.
  await page.goto(base);
  await page.waitForSelector(`tr[data-run="${demo}"]`);
  const stopped = new Promise((ok) => server.proc.on("exit", ok));
  server.proc.kill("SIGTERM");
  await stopped;
  await page.waitForFunction(() => document.getElementById("live").textContent !== "live", null, { timeout: 10000 });
  server = startServer(base.replace("http://", "").replace(/\/$/, ""));
  await server.address;
  const later = runId(orch("run", "demo.yaml").err);
  await page.waitForSelector(`tr[data-run="${later}"]`, { timeout: 15000 });
  check((await page.locator("#live").textContent()) === "live", "after the server restarted, the page reconnected " +
        "and showed a run started then, without a reload");

  check(errors.length === 0, "no script error on the page " + errors.join("; "));
} catch (e) {
  failures.push(String(e && e.stack || e));
  console.error(e);
  await page.screenshot({ path: join(SHOTS, "failure.png"), fullPage: true }).catch(() => {});
  console.error("the page when it failed: " + join(SHOTS, "failure.png") + " at " + page.url());
  console.error("its error line: " + (await page.locator("#error").textContent().catch(() => "?")));
  console.error("its script errors: " + errors.join("; "));
} finally {
  await browser.close();
  server.proc.kill("SIGTERM");
}
if (failures.length) {
  console.error(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log("all checks held; screenshots in " + SHOTS);
