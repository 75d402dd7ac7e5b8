// A small MCP server for orch's tests of MCP tools, on the official SDK's
// low-level Server over stdio: what the published servers cannot be made to do
// on purpose — fail (isError), die during a call, be slow (and notice being
// cancelled), break its own outputSchema, list its tools over several pages.
//
//   node tool_fixture.mjs            (env: FIXTURE_STATE_DIR — where it leaves marks)
//
// Tools: fail, crash, crash_once, slow, whoami, bad_output, nuke (no annotations).
import fs from "node:fs";
import path from "node:path";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const stateDir = process.env.FIXTURE_STATE_DIR || ".";
const mark = (name, text) => fs.appendFileSync(path.join(stateDir, name), text + "\n");
mark("starts", String(process.pid));

const readOnly = { readOnlyHint: true };
const tools = [
  { name: "fail", description: "Always fails (isError).", inputSchema: { type: "object", properties: {} }, annotations: readOnly },
  { name: "crash", description: "Exits with status 3 during the call.", inputSchema: { type: "object", properties: {} }, annotations: readOnly },
  { name: "crash_once", description: "Exits with status 4 the first time it is called, then answers.", inputSchema: { type: "object", properties: {} }, annotations: readOnly },
  { name: "slow", description: "Answers after `seconds`.", inputSchema: { type: "object", properties: { seconds: { type: "number" } }, required: ["seconds"] }, annotations: readOnly },
  { name: "whoami", description: "Its process id.", inputSchema: { type: "object", properties: {} },
    outputSchema: { type: "object", properties: { pid: { type: "integer" } }, required: ["pid"] }, annotations: readOnly },
  { name: "bad_output", description: "Breaks its own outputSchema.", inputSchema: { type: "object", properties: {} },
    outputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }, annotations: readOnly },
  { name: "nuke", description: "Says it destroyed something; declares no annotations.", inputSchema: { type: "object", properties: { what: { type: "string" } } } },
];
const kPage = 3;

const server = new Server({ name: "orch-test-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async (request) => {
  const start = Number(request.params?.cursor ?? 0);
  const page = tools.slice(start, start + kPage);
  const next = start + kPage < tools.length ? String(start + kPage) : undefined;
  return next ? { tools: page, nextCursor: next } : { tools: page };
});

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const args = request.params.arguments ?? {};
  mark("calls", request.params.name);
  switch (request.params.name) {
    case "fail":
      return { content: [{ type: "text", text: "the widget is broken" }], isError: true };
    case "crash":
      process.stderr.write("fixture: crashing on purpose\n");
      process.exit(3);
    case "crash_once":
      if (!fs.existsSync(path.join(stateDir, "crashed_once"))) {
        mark("crashed_once", "yes");
        process.exit(4);
      }
      return { content: [{ type: "text", text: "survived" }] };
    case "slow":
      return await new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "slept" }] }), args.seconds * 1000);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          mark("cancelled", String(extra.signal.reason ?? "cancelled"));
        });
      });
    case "whoami":
      return { content: [{ type: "text", text: String(process.pid) }], structuredContent: { pid: process.pid } };
    case "bad_output":
      return { content: [{ type: "text", text: "n is x" }], structuredContent: { n: "x" } };
    case "nuke":
      return { content: [{ type: "text", text: `destroyed ${args.what ?? "nothing"}` }] };
    default:
      return { content: [{ type: "text", text: `no tool ${request.params.name}` }], isError: true };
  }
});

await server.connect(new StdioServerTransport());
