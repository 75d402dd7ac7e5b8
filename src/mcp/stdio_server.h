// mcp/stdio_server.h — `orch mcp` on standard input and output (MCP's stdio
// transport): one JSON-RPC message per line each way, nothing else on stdout;
// notes for a person go to stderr.
//
// Two threads: this one reads and a worker answers. Requests are answered one
// at a time, in the order they came; while one runs, the reader still answers
// `ping` at once, and takes `notifications/cancelled`: a request still waiting
// is dropped unanswered, and the one running is let finish (what it records —
// a VERIFY's verdict, a run it started — stays recorded, as the CLI's would) but
// its answer is not sent, as the specification has it. A line that is not a
// message is answered with the JSON-RPC error that says why. At the end of
// input the requests already read are answered, then the server returns 0.
#pragma once

#include <cstddef>

#include "mcp/session.h"

namespace orch::mcp {

// A line longer than this is refused (ParseError) and skipped to its end.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{16} << 20;

// Serves `session` over `in_fd`/`out_fd` until end of input or a write that
// fails (the client gone). Returns the process exit code: 0, or 1 when
// standard output could not be written.
int serve_stdio(Session& session, int in_fd, int out_fd);

}  // namespace orch::mcp
