// util/jsonrpc.h — JSON-RPC 2.0 messages, as the Model Context Protocol carries
// them (docs/mcp.md): one message per line on stdio, one per HTTP body.
//
// A message is parsed into a Message whose kind says what it is; building one
// goes through the functions below, so every message orch sends has
// "jsonrpc": "2.0" and exactly the members its kind allows. Both sides use it:
// `orch mcp` (the server, src/mcp/) and the MCP client that runs an MCP
// server's tools as plan steps (src/exec/).
#pragma once

#include <expected>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace orch::jsonrpc {

using json = nlohmann::json;

// The JSON-RPC 2.0 error codes orch sends and recognises.
enum class ErrorCode : int {
  ParseError = -32700,      // not JSON
  InvalidRequest = -32600,  // JSON, but not a JSON-RPC 2.0 message (or not one allowed now)
  MethodNotFound = -32601,
  InvalidParams = -32602,
  InternalError = -32603,
};

struct RpcError {
  int code = static_cast<int>(ErrorCode::InternalError);
  std::string message;
  json data;  // null when there is none

  RpcError() = default;
  RpcError(ErrorCode c, std::string text, json extra = nullptr)
      : code(static_cast<int>(c)), message(std::move(text)), data(std::move(extra)) {}
  RpcError(int c, std::string text, json extra = nullptr)
      : code(c), message(std::move(text)), data(std::move(extra)) {}
};

enum class Kind {
  Request,       // method and id: answered with a result or an error
  Notification,  // method, no id: never answered
  Result,        // id and result: the answer to a request
  Error,         // id (null when the request could not be read) and error
};

struct Message {
  Kind kind = Kind::Notification;
  json id;  // a string or an integer; null for a notification or an error without one
  std::string method;
  json params;  // an object or an array; null when absent
  json result;
  RpcError error;
};

// Reads one message. A text that is not JSON is a ParseError; JSON that is not a
// JSON-RPC 2.0 message (no "jsonrpc": "2.0", an id that is neither a string nor
// an integer, a method that is not a string, params that are neither object nor
// array, a batch) is an InvalidRequest whose message says which member is wrong.
// The error carries the id when one could be read, for the answer.
struct ParseFailure {
  RpcError error;
  json id;  // the request's id when it could be read, else null
};
std::expected<Message, ParseFailure> parse(std::string_view text);

// The messages, as JSON documents ready to be dumped.
json request(const json& id, std::string_view method, json params = nullptr);
json notification(std::string_view method, json params = nullptr);
json result(const json& id, json value);
json error(const json& id, const RpcError& err);

// The message as one line of compact JSON (no newline inside: JSON strings
// escape theirs), with invalid UTF-8 replaced rather than refused.
std::string line(const json& message);

}  // namespace orch::jsonrpc
