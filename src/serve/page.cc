// The dashboard's page. See page.h.
#include "serve/page.h"

namespace orch::serve {

const char kPageHtml[] = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>orch</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { background: #20232a; color: #fff; padding: 8px 16px; display: flex; gap: 16px; align-items: center; }
header a { color: #fff; text-decoration: none; font-weight: 600; }
header a + a { font-weight: 400; }
main { padding: 16px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e5e5e5; vertical-align: top; }
th { background: #f0f0f0; }
.status { font-weight: 600; }
.s-succeeded, .s-done { color: #1a7f37; } .s-failed { color: #cf222e; } .s-running { color: #0969da; }
.s-awaiting_approval { color: #9a6700; } .s-cancelled, .s-skipped, .s-interrupted { color: #6e7781; }
.bar { background: #e5e5e5; height: 8px; width: 120px; display: inline-block; vertical-align: middle; }
.bar > span { background: #2da44e; height: 8px; display: block; }
pre { background: #111; color: #eee; padding: 8px; overflow: auto; max-height: 24em; white-space: pre-wrap; }
button { margin-right: 4px; }
.muted { color: #6e7781; }
#error { color: #cf222e; }
</style>
</head>
<body>
<header><a href="#/">orch</a><a href="#/">runs</a><a href="#/tasks">tasks</a><a href="#/reviews">reviews</a>
<a href="#/cycles">cycles</a><span id="where" class="muted"></span><span id="live" class="muted"></span></header>
<main>
<div id="error"></div>
<section id="runs-view">
  <label>status <select id="filter">
    <option value="">all</option><option>running</option><option>succeeded</option><option>failed</option>
    <option>cancelled</option><option>awaiting_approval</option><option>budget_exhausted</option>
    <option>interrupted</option><option>escalated</option></select></label>
  <span id="runs-total" class="muted"></span>
  <button id="prev">&lt; newer</button><button id="next">older &gt;</button>
  <table id="runs"><thead><tr><th>run</th><th>name</th><th>status</th><th>progress</th><th>spent</th>
    <th>budget</th><th>started</th><th>duration</th></tr></thead><tbody></tbody></table>
</section>
<section id="run-view" hidden>
  <h2 id="run-title"></h2>
  <p><span id="run-status" class="status"></span> <span id="run-reason"></span></p>
  <p id="run-progress"></p>
  <p id="run-budget" class="muted"></p>
  <p><button id="cancel">Cancel run</button></p>
  <div id="approvals"></div>
  <h3>Graph</h3>
  <div id="graph"></div>
  <h3>Steps</h3>
  <p><button id="steps-prev">&lt; earlier steps</button><button id="steps-next">later steps &gt;</button>
    <span id="steps-shown" class="muted"></span></p>
  <table id="steps"><thead><tr><th>step</th><th>status</th><th>attempts</th><th>reason</th>
    <th>tokens</th><th>cost</th><th></th></tr></thead><tbody></tbody></table>
  <h3>Plan versions</h3>
  <div id="plans"></div>
  <p id="attempt" class="muted"></p>
  <h3 id="output-title" hidden>Output</h3>
  <pre id="output" hidden></pre>
  <h3>Events</h3>
  <table id="events"><thead><tr><th>seq</th><th>time</th><th>kind</th><th>step</th><th>data</th></tr></thead>
    <tbody></tbody></table>
</section>
<section id="other-view" hidden></section>
</main>
<script>
"use strict";
// The token, for the buttons that act: from the address's #token=... (orch serve
// prints that address), kept for this tab; also a cookie for the event streams
// of a server that listens beyond this machine.
// True when the address carried one (taken, and the address changed: the
// hashchange that follows shows the view).
function keepToken() {
  const m = location.hash.match(/[#&]token=([0-9a-f]+)/);
  if (!m) return false;
  sessionStorage.setItem("orch_token", m[1]);
  document.cookie = "orch_token=" + m[1] + "; SameSite=Strict; path=/";
  location.hash = location.hash.replace(/[#&]?token=[0-9a-f]+/, "") || "#/";
  return true;
}
const $ = (id) => document.getElementById(id);
const text = (el, s) => { el.textContent = s == null ? "" : String(s); return el; };
function cell(row, value, cls) { const td = row.insertCell(); text(td, value); if (cls) td.className = cls; return td; }
function showError(e) { text($("error"), e ? String(e) : ""); }
async function api(path, options) {
  const r = await fetch(path, options);
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || (r.status + " " + r.statusText));
  return body;
}
async function act(path) {
  let token = sessionStorage.getItem("orch_token");
  if (!token) {
    token = prompt("The token of orch serve (printed at its first start; in its token file):");
    if (!token) return;
    sessionStorage.setItem("orch_token", token);
  }
  try {
    await api(path, { method: "POST", headers: { "X-Orch-Token": token } });
    showError("");
  } catch (e) { showError(e.message); }
}
const money = (x) => "$" + Number(x || 0).toFixed(4);
// A duration in ms as seconds ("12.3 s"), or minutes past ten minutes.
function seconds(ms) {
  const s = (ms || 0) / 1000;
  return s < 600 ? (Math.round(s * 10) / 10) + " s" : Math.round(s / 60) + " min";
}
// What a run spent against each limit its plan set.
function budgetText(b, spentTokens, spentCost, attempts, wallMs) {
  const parts = [];
  if (b.tokens != null) parts.push("tokens " + spentTokens + "/" + b.tokens);
  if (b.cost_usd != null) parts.push("cost " + money(spentCost) + "/" + money(b.cost_usd));
  if (b.attempts != null) parts.push("attempts " + attempts + "/" + b.attempts);
  if (b.wall_ms != null) parts.push("wall " + seconds(wallMs) + "/" + seconds(b.wall_ms));
  return parts.join(", ");
}

let page = 0, source = null;
const PAGE = 50;
function closeSource() { if (source) { source.close(); source = null; } }
function live(es) {
  es.onopen = () => text($("live"), "live");
  es.onerror = () => text($("live"), "reconnecting...");
}

// Each route() is one view; an answer that comes after the view changed is dropped.
let view = 0;
async function showRuns() {
  const mine = view;
  const status = $("filter").value;
  const data = await api("/api/runs?limit=" + PAGE + "&offset=" + page * PAGE +
                         (status ? "&status=" + encodeURIComponent(status) : ""));
  if (mine !== view) return;
  $("runs-view").hidden = false; $("run-view").hidden = true; text($("where"), "runs");
  text($("runs-total"), data.total + " runs");
  const body = $("runs").tBodies[0];
  body.replaceChildren();
  for (const r of data.runs) {
    const row = body.insertRow();
    row.dataset.run = r.id;
    const a = document.createElement("a"); a.href = "#/runs/" + encodeURIComponent(r.id); text(a, r.id);
    row.insertCell().append(a);
    cell(row, r.name);
    cell(row, r.status, "status s-" + r.status);
    const p = row.insertCell();
    const bar = document.createElement("span"); bar.className = "bar";
    const fill = document.createElement("span");
    fill.style.width = (r.progress.total ? 100 * r.progress.done / r.progress.total : 0) + "%";
    bar.append(fill); p.append(bar, " " + r.progress.done + "/" + r.progress.total);
    p.className = "progress";
    cell(row, r.spent_tokens + " tokens, " + money(r.spent_cost_usd) + ", " + r.spent_attempts + " attempts");
    cell(row, budgetText(r.budget, r.spent_tokens, r.spent_cost_usd, r.spent_attempts, r.spent_wall_ms));
    cell(row, r.created_at);
    cell(row, seconds(r.spent_wall_ms), "duration");
  }
  $("prev").disabled = page === 0;
  $("next").disabled = (page + 1) * PAGE >= data.total;
}

// A run's steps come a page at a time (a run may have 100,000): the report
// without its steps, then the page shown.
const STEPS = 100;
let stepsPage = 0;
async function showRun(id) {
  const mine = view;
  const [report, page] = await Promise.all([
    api("/api/runs/" + encodeURIComponent(id) + "?steps=0"),
    api("/api/runs/" + encodeURIComponent(id) + "/steps?limit=" + STEPS + "&offset=" + stepsPage * STEPS)]);
  if (mine !== view) return;
  report.steps = page.steps;
  text($("steps-shown"), page.total ? `steps ${page.offset + 1}-${page.offset + page.steps.length} of ${page.total}` : "");
  $("steps-prev").disabled = stepsPage === 0;
  $("steps-next").disabled = (stepsPage + 1) * STEPS >= page.total;
  $("steps-prev").onclick = () => { stepsPage = Math.max(0, stepsPage - 1); showRun(id).catch(showError); };
  $("steps-next").onclick = () => { stepsPage += 1; showRun(id).catch(showError); };
  $("runs-view").hidden = true; $("run-view").hidden = false; text($("where"), "run " + id);
  const run = report.run;
  text($("run-title"), run.id + (run.name ? "  " + run.name : ""));
  text($("run-status"), run.status).className = "status s-" + run.status;
  text($("run-reason"), run.reason);
  const c = report.counts || {};
  text($("run-progress"), Object.keys(c).map((k) => k + " " + c[k]).join(", "));
  const b = report.budget || {}, limits = b.limits || {}, spent = b.spent || {};
  text($("run-budget"), "budget: " + (budgetText(limits, spent.tokens, spent.cost_usd, spent.attempts, spent.wall_ms) ||
                                       "no limits") +
       "; spent " + (spent.tokens || 0) + " tokens, " + money(spent.cost_usd) + ", " + (spent.attempts || 0) +
       " attempts, " + Math.round((spent.wall_ms || 0) / 100) / 10 + " s");
  $("cancel").hidden = run.status !== "running" && run.status !== "awaiting_approval";
  $("cancel").onclick = () => act("/api/runs/" + encodeURIComponent(id) + "/cancel");
  // What a paused step will do, and its risk: decided on from the page.
  const box = $("approvals");
  if (c.awaiting_approval) {
    const pending = await api("/api/runs/" + encodeURIComponent(id) + "/approvals");
    if (mine !== view) return;
    box.replaceChildren(heading(3, "Waiting for approval"), table(pending, [["step", (a) => a.step],
      ["risk", (a) => a.risk], ["will run", (a) => a.command], ["asked", (a) => a.requested_at]], "approvals"));
  } else {
    box.replaceChildren();
  }
  // The table is rebuilt only when a step changed: a button being clicked is
  // not replaced under the pointer by an identical one.
  const body = $("steps").tBodies[0];
  const signature = JSON.stringify(report.steps || []);
  if (body.dataset.run === id && body.dataset.signature === signature) return;
  body.dataset.run = id;
  body.dataset.signature = signature;
  body.replaceChildren();
  for (const s of report.steps || []) {
    const row = body.insertRow();
    row.dataset.step = s.id;
    cell(row, s.id);
    cell(row, s.status, "status s-" + s.status);
    const attempts = row.insertCell();
    for (const a of s.attempts || []) {
      const b = document.createElement("button");
      text(b, "#" + a.number + " " + a.status);
      b.title = a.reason || "";
      b.onclick = () => { attemptDetails(s.id, a); showOutput(id, s.id, a.number).catch(showError); };
      attempts.append(b);
    }
    cell(row, s.reason, "reason");
    cell(row, s.tokens_in + s.tokens_out);
    cell(row, money(s.cost_usd));
    const actions = row.insertCell();
    if (s.status === "awaiting_approval") {
      const base = "/api/runs/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(s.id);
      const yes = document.createElement("button"); text(yes, "Approve"); yes.className = "approve";
      yes.onclick = () => act(base + "/approve");
      const no = document.createElement("button"); text(no, "Deny"); no.className = "deny";
      no.onclick = () => act(base + "/deny");
      actions.append(yes, no);
    }
  }
}

// The DAG, drawn by the server (Graphviz): SVG parsed as SVG, anything active
// in it dropped, then shown.
async function showGraph(id) {
  const mine = view;
  const r = await fetch("/api/runs/" + encodeURIComponent(id) + "/graph.svg");
  if (mine !== view) return;
  const box = $("graph");
  if (!r.ok) { const e = await r.json().catch(() => ({})); text(box, e.error || r.statusText); return; }
  const doc = new DOMParser().parseFromString(await r.text(), "image/svg+xml");
  const svg = doc.documentElement;
  if (svg.nodeName !== "svg") { text(box, "the graph could not be read"); return; }
  for (const el of svg.querySelectorAll("script, foreignObject, a")) el.remove();
  for (const el of svg.querySelectorAll("*"))
    for (const attr of [...el.attributes]) if (/^on/i.test(attr.name) || /href/i.test(attr.name)) el.removeAttribute(attr.name);
  box.replaceChildren(document.importNode(svg, true));
}

// An attempt: how it ended, its postconditions, what it spent.
function attemptDetails(step, a) {
  const checks = (a.checks || []).map((c) => `${c.kind} ${c.held ? "held" : "failed"}` + (c.reason ? ` (${c.reason})` : ""));
  text($("attempt"), `${step} attempt ${a.number}: ${a.status}` + (a.reason ? ` - ${a.reason}` : "") +
       `; checks: ${checks.join(", ") || "none"}; tokens ${a.tokens_in + a.tokens_out}, ${money(a.cost_usd)}, ` +
       `${a.duration_ms} ms`);
}

// An attempt's output; while the attempt runs, read again every half second
// (its log file grows) for as long as it is the one shown.
let shownOutput = 0;
async function showOutput(run, step, n, again) {
  const mine = again || ++shownOutput, v = view;
  const base = "/api/runs/" + encodeURIComponent(run) + "/steps/" + encodeURIComponent(step) + "/attempts/" + n;
  const out = await api(base + "/output?stream=stdout");
  const err = await api(base + "/output?stream=stderr");
  if (mine !== shownOutput || v !== view) return;
  text($("output-title"), "Output of " + step + " attempt " + n + (out.running ? " (running)" : "")).hidden = false;
  const both = out.text && err.text ? "\n--- stderr ---\n" : "";
  text($("output"), out.text + both + err.text).hidden = false;
  if (out.running) setTimeout(() => showOutput(run, step, n, mine).catch(showError), 500);
}

// Every version of the run's plan (one per --replan), each one's text on a click.
async function showPlans(id) {
  const mine = view, versions = await api("/api/runs/" + encodeURIComponent(id) + "/plans");
  if (mine !== view) return;
  const shown = text(document.createElement("pre"), "");
  shown.hidden = true;
  const t = table(versions, [["version", (p) => {
    const b = text(document.createElement("button"), "v" + p.version);
    b.onclick = () => { text(shown, p.text).hidden = false; };
    return b;
  }], ["file", (p) => p.path], ["recorded", (p) => p.created_at]], "plans");
  $("plans").replaceChildren(t, shown);
}

// The newest 500 events are kept in the table.
function addEvent(e) {
  const body = $("events").tBodies[0];
  if (body.rows.length >= 500) body.deleteRow(0);
  const row = body.insertRow();
  cell(row, e.seq); cell(row, new Date(e.ts).toISOString()); cell(row, e.kind); cell(row, e.step);
  cell(row, JSON.stringify(e.data));
}

// A redraw asked by the streams, at most one every 100 ms, and only in the view
// that asked for it.
let refresh = null;
function later(f) {
  if (refresh) return;
  const mine = view;
  refresh = setTimeout(() => { refresh = null; if (mine === view) f().catch(showError); }, 100);
}

// ---- task traces, reviews, cycles: read from /api, shown as tables ----
// table(rows, [[heading, row => value], ...]): every value as text.
function table(rows, columns, cls) {
  const t = document.createElement("table");
  if (cls) t.className = cls;
  const head = t.createTHead().insertRow();
  for (const [name] of columns) text(head.appendChild(document.createElement("th")), name);
  const body = t.createTBody();
  for (const r of rows) {
    const row = body.insertRow();
    for (const [, get] of columns) {
      const v = get(r);
      if (v instanceof Node) row.insertCell().append(v); else cell(row, v);
    }
  }
  return t;
}
function heading(level, s) { return text(document.createElement("h" + level), s); }
function para(s, cls) { const p = text(document.createElement("p"), s); if (cls) p.className = cls; return p; }
function link(href, s) { const a = document.createElement("a"); a.href = href; return text(a, s); }
function raw(value) { return text(document.createElement("pre"), JSON.stringify(value, null, 2)); }
function showOther(title, ...parts) {
  $("runs-view").hidden = true; $("run-view").hidden = true;
  const box = $("other-view"); box.hidden = false;
  box.replaceChildren(heading(2, title), ...parts);
  text($("where"), title);
}
const statusSpan = (s) => { const e = text(document.createElement("span"), s); e.className = "status s-" + s; return e; };

async function showTasks() {
  const mine = view, all = await api("/api/traces");
  if (mine !== view) return;
  showOther("task traces", table(all, [["trace", (t) => link("#/tasks/" + encodeURIComponent(t.id), t.id)],
    ["request", (t) => t.request], ["state", (t) => t.state], ["status", (t) => statusSpan(t.status)],
    ["run", (t) => t.run_id ? link("#/runs/" + encodeURIComponent(t.run_id), t.run_id) : ""],
    ["updated", (t) => t.updated_at]], "traces"));
}
async function showTask(id) {
  const mine = view, d = await api("/api/traces/" + encodeURIComponent(id));
  if (mine !== view) return;
  const t = d.trace;
  const parts = [para(t.request), para(`intent ${t.intent}, complexity ${t.complexity}, strategy ${t.strategy}; ` +
                                       `state ${t.state}` + (t.result ? `, result ${t.result}` : ""), "muted"),
    heading(3, "The path taken"),
    table(t.transitions || [], [["time", (x) => x.t], ["state", (x) => x.state], ["note", (x) => x.note]], "path")];
  for (const v of t.verifications || []) {
    parts.push(heading(3, `VERIFY: ${v.verdict} (confidence ${v.confidence}, retry ${v.retry})`));
    parts.push(table(v.items || [], [["check", (x) => x.check], ["kind", (x) => x.kind],
      ["status", (x) => statusSpan(x.status)], ["detail", (x) => x.detail]], "checklist"));
  }
  parts.push(heading(3, "Engines (lessons recalled)"), raw(t.engine_results || {}));
  parts.push(heading(3, "Learning"), raw(t.learning_results || {}));
  showOther("task " + id, ...parts);
}
async function showReviews() {
  const mine = view, all = await api("/api/reviews");
  if (mine !== view) return;
  showOther("reviews", table(all, [["review", (r) => link("#/reviews/" + encodeURIComponent(r.id), r.id)],
    ["name", (r) => r.name], ["status", (r) => statusSpan(r.status)], ["verdict", (r) => r.verdict],
    ["rounds", (r) => r.rounds], ["updated", (r) => r.updated_at]], "reviews"));
}
async function showReview(id) {
  const mine = view, r = await api("/api/reviews/" + encodeURIComponent(id));
  if (mine !== view) return;
  const counts = (c) => ["critical", "major", "minor", "nit"].map((k) => `${k} ${(c || {})[k] || 0}`).join(", ");
  const parts = [para(`${r.status}, verdict ${r.verdict || "-"}` + (r.stop_reason ? `: ${r.stop_reason}` : "")),
    r.score ? para(`score ${r.score.score} (${r.score.band})`) : para("no score", "muted"),
    heading(3, "Rounds"),
    table(r.rounds || [], [["round", (x) => x.round], ["gate verdict", (x) => x.verdict],
      ["findings by severity", (x) => counts(x.counts)], ["dry", (x) => x.dry], ["escalated", (x) => x.escalated]],
      "rounds"),
    heading(3, "Findings"),
    table(r.findings || [], [["id", (f) => f.id], ["severity", (f) => f.severity],
      ["where", (f) => f.file + (f.line ? ":" + f.line : "")], ["claim", (f) => f.claim],
      ["quote", (f) => f.evidence], ["verdict", (f) => f.verdict || ""]], "findings"),
    heading(3, "Escalations"),
    table(r.escalations || [], [["finding", (e) => e.id], ["round", (e) => e.round]], "escalations")];
  showOther("review " + id, ...parts);
}
async function showCycles() {
  const mine = view, all = await api("/api/cycles");
  if (mine !== view) return;
  showOther("cycles", table(all, [["cycle run", (c) => link("#/cycles/" + encodeURIComponent(c.id), c.id)],
    ["name", (c) => c.name], ["status", (c) => statusSpan(c.status)], ["cycles", (c) => c.cycles],
    ["updated", (c) => c.updated_at]], "cycles"));
}
async function showCycle(id) {
  const mine = view, d = await api("/api/cycles/" + encodeURIComponent(id));
  if (mine !== view) return;
  const st = d.status;
  const byState = Object.entries(st.by_state || {}).map(([k, v]) => `${k} ${v}`).join(", ");
  const parts = [para(`${st.status}, ${st.cycles} cycle(s)` + (st.stop_reason ? `: ${st.stop_reason}` : "")),
    para("items by state: " + byState, "by-state"),
    heading(3, "Items"),
    table(st.items || [], [["item", (i) => i.id], ["file", (i) => i.file], ["state", (i) => i.state],
      ["stuck", (i) => i.stuck ? "stuck" : ""], ["last", (i) => i.last ? `cycle ${i.last.cycle}: ${i.last.outcome} ${i.last.why}` : ""]],
      "items"),
    heading(3, "Stuck"), para((st.stuck || []).map((x) => typeof x === "string" ? x : x.id).join(", ") || "none"),
    heading(3, "Milestones per cycle"),
    table(st.per_cycle || [], [["cycle", (c) => c.cycle], ["progress", (c) => c.progress], ["jobs", (c) => c.jobs],
      ["outcomes", (c) => Object.entries(c.outcomes || {}).map(([k, v]) => `${k} ${v}`).join(", ")],
      ["advanced", (c) => (c.advanced || []).map((x) => typeof x === "string" ? x : x.id).join(", ")]], "milestones"),
    heading(3, "Audit"),
    table(d.audit.transitions || [], [["cycle", (a) => a.cycle], ["item", (a) => a.id], ["from", (a) => a.from],
      ["to", (a) => a.to], ["gate", (a) => a.gate], ["job", (a) => a.job]], "audit")];
  showOther("cycle run " + id, ...parts);
}

// One view at a time: its event stream is opened before anything is awaited,
// and whatever an older view's stream or answer brings after it is dropped.
async function route() {
  const mine = ++view;
  clearTimeout(refresh);
  refresh = null;
  if (keepToken()) return;
  closeSource(); showError("");
  $("output-title").hidden = true; $("output").hidden = true; text($("attempt"), "");
  $("other-view").hidden = true;
  const other = location.hash.match(/^#\/(tasks|reviews|cycles)(?:\/(.+))?$/);
  if (other) {
    const id = other[2] ? decodeURIComponent(other[2]) : null;
    const show = { tasks: [showTasks, showTask], reviews: [showReviews, showReview], cycles: [showCycles, showCycle] };
    await (id ? show[other[1]][1](id) : show[other[1]][0]());
    return;
  }
  const m = location.hash.match(/^#\/runs\/(.+)$/);
  if (m) {
    const id = decodeURIComponent(m[1]);
    stepsPage = 0;
    $("events").tBodies[0].replaceChildren();
    const redraw = () => later(() => showRun(id).then(() => showGraph(id)));
    source = new EventSource("/api/runs/" + encodeURIComponent(id) + "/stream");
    live(source);
    source.addEventListener("ledger", (msg) => {
      if (mine !== view) return;
      addEvent(JSON.parse(msg.data));
      redraw();
    });
    source.addEventListener("run", () => { if (mine === view) redraw(); });
    await showRun(id);
    await showGraph(id);
    await showPlans(id);
  } else {
    source = new EventSource("/api/runs/stream");
    live(source);
    source.addEventListener("runs", () => { if (mine === view) later(showRuns); });
    await showRuns();
  }
}
$("filter").onchange = () => { page = 0; showRuns().catch(showError); };
$("prev").onclick = () => { page = Math.max(0, page - 1); showRuns().catch(showError); };
$("next").onclick = () => { page += 1; showRuns().catch(showError); };
window.addEventListener("hashchange", () => route().catch(showError));
route().catch(showError);
</script>
</body>
</html>
)HTML";

}  // namespace orch::serve
