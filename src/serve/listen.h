// serve/listen.h — what orch-serve's two HTTP servers (the dashboard,
// serve/http_server.h; MCP's streamable HTTP, serve/mcp_http.h) do alike:
// their sockets, binding, and stopping on a signal.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>

#include "orch/error.h"

namespace orch::serve {

// SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a
// second server (anyone's) would bind the same port and share its requests.
void reuse_address_only(httplib::Server& svr);

// Binds `svr` to host:port (port 0: any free one); the port it got, or Io
// saying to give another --listen.
Expected<int> bind_server(httplib::Server& svr, const std::string& host, int port);

// "http://HOST:PORT", with an IPv6 host in brackets.
std::string origin_of(const std::string& host, int port);

// Runs `serve` (which returns when `stop` is called) with SIGINT, SIGTERM and
// SIGHUP blocked and waited for by a thread of their own, which calls `stop`;
// SIGPIPE ignored. Returns the exit code: 0 when a signal stopped it (after
// "NAME: stopped" on stderr), else serve's error reported.
int serve_until_signal(const char* name, const std::function<Expected<void>()>& serve,
                       const std::function<void()>& stop);

}  // namespace orch::serve
