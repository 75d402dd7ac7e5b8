// util/jsonrpc.cc — JSON-RPC 2.0 messages (util/jsonrpc.h).
#include "util/jsonrpc.h"

#include <fmt/format.h>

namespace orch::jsonrpc {

namespace {

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_number_unsigned(); }

std::unexpected<ParseFailure> invalid(std::string message, json id = nullptr) {
  return std::unexpected(ParseFailure{RpcError(ErrorCode::InvalidRequest, std::move(message)), std::move(id)});
}

}  // namespace

std::expected<Message, ParseFailure> parse(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded())
    return std::unexpected(ParseFailure{RpcError(ErrorCode::ParseError, "not JSON: a message is one JSON-RPC 2.0 object"),
                                        nullptr});
  if (doc.is_array()) return invalid("a batch (a JSON array) is not accepted: send one message at a time");
  if (!doc.is_object()) return invalid("a message is a JSON object");
  json id = nullptr;
  const bool has_id = doc.contains("id");
  if (has_id && valid_id(doc["id"])) id = doc["id"];
  auto version = doc.find("jsonrpc");
  if (version == doc.end() || *version != "2.0") return invalid("\"jsonrpc\" must be \"2.0\"", id);
  if (has_id && !valid_id(doc["id"]) && !(doc["id"].is_null() && doc.contains("error")))
    return invalid("\"id\" must be a string or an integer", nullptr);
  Message m;
  m.id = id;
  if (auto method = doc.find("method"); method != doc.end()) {
    if (!method->is_string()) return invalid("\"method\" must be a string", id);
    m.method = method->get<std::string>();
    if (auto params = doc.find("params"); params != doc.end()) {
      if (!params->is_object() && !params->is_array())
        return invalid(fmt::format("\"params\" of {} must be an object or an array", m.method), id);
      m.params = *params;
    }
    m.kind = has_id ? Kind::Request : Kind::Notification;
    return m;
  }
  const bool has_result = doc.contains("result");
  const bool has_error = doc.contains("error");
  if (has_result == has_error) return invalid("a message has a \"method\", or exactly one of \"result\" and \"error\"", id);
  if (!has_id) return invalid("a response needs the \"id\" of its request");
  if (has_result) {
    if (id.is_null()) return invalid("\"id\" must be a string or an integer");
    m.kind = Kind::Result;
    m.result = doc["result"];
    return m;
  }
  const json& e = doc["error"];
  if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer() || !e.contains("message") ||
      !e["message"].is_string())
    return invalid("\"error\" must be an object with an integer \"code\" and a string \"message\"", id);
  m.kind = Kind::Error;
  m.error = RpcError(e["code"].get<int>(), e["message"].get<std::string>(), e.value("data", json()));
  return m;
}

json request(const json& id, std::string_view method, json params) {
  json m = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

json notification(std::string_view method, json params) {
  json m = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

json result(const json& id, json value) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(value)}}; }

json error(const json& id, const RpcError& err) {
  json e = {{"code", err.code}, {"message", err.message}};
  if (!err.data.is_null()) e["data"] = err.data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(e)}};
}

std::string line(const json& message) { return message.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace orch::jsonrpc
