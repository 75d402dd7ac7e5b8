#include "engine/otlp_export.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "engine/otlp_trace.h"
#include "exec/http_client.h"
#include "orch/event_loop.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace otlp_export_detail {

// A collector's answer is for a person to read in one line: its first line, cut short.
std::string answer_excerpt(const std::string& body) {
  const std::string_view first = std::string_view(body).substr(0, body.find('\n'));
  return quote_for_message(trim(first), 200);
}

// A 2xx answer may still report spans it dropped (ExportTraceServiceResponse's
// partialSuccess); an answer that is not JSON (an empty body, or protobuf) says nothing of it.
Expected<void> check_partial_success(const std::string& body) {
  const nlohmann::json answer = nlohmann::json::parse(body, nullptr, false);
  if (!answer.is_object() || !answer.contains("partialSuccess")) return {};
  const nlohmann::json& partial = answer["partialSuccess"];
  if (!partial.is_object()) return {};
  // rejectedSpans is an int64: a string in OTLP's JSON, a number from some servers.
  std::int64_t rejected = 0;
  if (auto it = partial.find("rejectedSpans"); it != partial.end()) {
    if (it->is_number_integer()) rejected = it->get<std::int64_t>();
    if (it->is_string()) rejected = std::atoll(it->get<std::string>().c_str());
  }
  if (rejected <= 0) return {};
  std::string message;
  if (auto it = partial.find("errorMessage"); it != partial.end() && it->is_string()) message = *it;
  return fail(ErrorCode::Io,
              fmt::format("the collector rejected {} span{}{}", rejected, rejected == 1 ? "" : "s",
                          message.empty() ? "" : ": " + quote_for_message(message, 200)));
}

}  // namespace otlp_export_detail

Expected<void> export_run_trace(Store& store, const std::string& run_id, const OtlpEndpoint& endpoint,
                                const std::function<bool()>& give_up) {
  using namespace otlp_export_detail;
  const nlohmann::ordered_json trace = ORCH_TRY(build_otlp_trace(store, run_id, endpoint.resource));

  HttpRequest request;
  request.method = "POST";
  request.url = endpoint.url;
  request.headers = endpoint.headers;
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = json_text(trace);
  request.timeout = endpoint.timeout;
  request.connect_timeout = std::min(request.connect_timeout, endpoint.timeout);
  request.max_response_bytes = 1024 * 1024;

  EventLoop loop;
  HttpClient client(loop);
  std::optional<HttpResponse> answer;
  client.start(std::move(request), [&answer](HttpResponse r) { answer = std::move(r); });
  // The request's own timeout ends it; the loop needs no deadline of its own.
  while (!answer) {
    if (give_up && give_up())
      return fail(ErrorCode::Interrupted, "stopped by a signal before the answer came");
    loop.run_once(std::chrono::milliseconds(1000));
  }

  if (answer->status == 0) return fail(ErrorCode::Io, answer->error);
  if (answer->status < 200 || answer->status > 299) {
    const std::string excerpt = answer_excerpt(answer->body);
    return fail(ErrorCode::Io,
                fmt::format("HTTP {}{}", answer->status, excerpt.empty() ? "" : ": " + excerpt));
  }
  return check_partial_success(answer->body);
}

}  // namespace orch
