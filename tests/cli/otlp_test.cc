// Black-box tests of the OpenTelemetry export: the real binary runs a plan with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at a collector stand-in on loopback
// (tests/otlp/collector.py, a real HTTP server that records every request), and
// the tests read what it received. An export that fails — nothing listening, a
// collector answering 500 — is a line on stderr and leaves the exit code alone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/testing.h"

extern char** environ;

namespace orch {
// Named after the file: a unity build compiles the tests of a binary together.
namespace otlp_cli_test {

using nlohmann::json;
using orch::testing::read_file;
using orch::testing::run_id_in;
using orch::testing::run_orch;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;

// tests/otlp/collector.py on a free port of 127.0.0.1, for one test.
class Collector {
 public:
  explicit Collector(std::vector<std::string> extra = {}) {
    const std::string script = (testing::source_dir() / "tests" / "otlp" / "collector.py").string();
    const std::string port_file = (dir_ / "port").string();
    std::vector<std::string> args = {"python3",         script,        "--record",
                                     record().string(), "--port-file", port_file};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir_ / "collector.log").string();
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawnp(&pid_, "python3", &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    if (pid_ < 0) {
      ADD_FAILURE() << "cannot start " << script;
      return;
    }
    const bool up =
        testing::wait_for([&] { return fs::exists(port_file) || !testing::process_alive(pid_); }, 15'000);
    if (up && fs::exists(port_file)) {
      port_ = std::stoi(read_file(port_file));
      return;
    }
    ADD_FAILURE() << "the collector did not start: " << read_file(log);
  }
  ~Collector() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    if (!testing::wait_for([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, 3'000)) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  bool started() const { return port_ > 0; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  fs::path record() const { return dir_ / "received.jsonl"; }
  // Every request received so far, in order.
  std::vector<json> received() const {
    std::vector<json> out;
    if (!fs::exists(record())) return out;
    std::istringstream lines(read_file(record()));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) out.push_back(json::parse(line));
    return out;
  }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// A loopback port nothing listens on: bound by the OS's choice, then closed.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

const json& spans_of(const json& body) {
  return body.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans");
}

json span_named(const json& body, const std::string& name) {
  for (const json& s : spans_of(body))
    if (s.at("name") == name) return s;
  ADD_FAILURE() << "no span named " << name << " in " << body.dump(2);
  return json::object();
}

// The value (an OTLP AnyValue) of a span's or resource's attribute; null when absent.
json attribute(const json& holder, const std::string& key) {
  for (const json& a : holder.at("attributes"))
    if (a.at("key") == key) return a.at("value");
  return nullptr;
}

// b reports its usage the way any shell step can, in $ORCH_USAGE_FILE.
constexpr const char* kPlan = R"(name: traced
steps:
  - {id: a, sh: "echo hello"}
  - id: b
    deps: [a]
    sh: 'printf "{\"tokens_in\": 120, \"tokens_out\": 30, \"cost_usd\": 0.25}" > "$ORCH_USAGE_FILE"'
)";

TEST(CliOtlp, ARunSendsASpanPerRunStepAndAttemptToTheCollector) {
  Collector collector;
  ASSERT_TRUE(collector.started());
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto r = run_orch({"run", "plan.yaml"}, d.path(),
                    {{"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint() + "/"},
                     {"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=secret%20one,x-tenant=t1"},
                     {"OTEL_SERVICE_NAME", "agents"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("OpenTelemetry"), std::string::npos) << r.err;
  const std::string run_id = run_id_in(r.err);

  const auto got = collector.received();
  ASSERT_EQ(got.size(), 1u) << "one request per run";
  EXPECT_EQ(got[0].at("path"), "/v1/traces");
  EXPECT_EQ(got[0].at("headers").at("content-type"), "application/json");
  EXPECT_EQ(got[0].at("headers").at("x-api-key"), "secret one") << "OTEL_EXPORTER_OTLP_HEADERS, decoded";
  EXPECT_EQ(got[0].at("headers").at("x-tenant"), "t1");
  const json body = json::parse(got[0].at("body").get<std::string>());

  const json& resource = body.at("resourceSpans").at(0).at("resource");
  EXPECT_EQ(attribute(resource, "service.name"), (json{{"stringValue", "agents"}}));
  const json& spans = spans_of(body);
  ASSERT_EQ(spans.size(), 5u) << "the run, a, b and one attempt each:\n" << body.dump(2);

  const json run = span_named(body, "run traced");
  const json b = span_named(body, "b");
  const json b1 = span_named(body, "b attempt 1");
  EXPECT_EQ(attribute(run, "orch.run.id"), (json{{"stringValue", run_id}}));
  EXPECT_EQ(run.at("status"), (json{{"code", 1}}));
  EXPECT_FALSE(run.contains("parentSpanId"));
  for (const json& s : spans) EXPECT_EQ(s.at("traceId"), run.at("traceId"));
  EXPECT_EQ(b.at("parentSpanId"), run.at("spanId"));
  EXPECT_EQ(b1.at("parentSpanId"), b.at("spanId"));
  EXPECT_EQ(attribute(b1, "gen_ai.usage.input_tokens"), (json{{"intValue", "120"}}));
  EXPECT_EQ(attribute(b1, "gen_ai.usage.output_tokens"), (json{{"intValue", "30"}}));
  EXPECT_EQ(attribute(b1, "orch.cost_usd"), (json{{"doubleValue", 0.25}}));
  EXPECT_EQ(attribute(run, "gen_ai.usage.input_tokens"), (json{{"intValue", "120"}}));
  EXPECT_EQ(attribute(b1, "orch.attempt.exit_code"), (json{{"intValue", "0"}}));
  EXPECT_LE(std::stoll(b1.at("startTimeUnixNano").get<std::string>()),
            std::stoll(b1.at("endTimeUnixNano").get<std::string>()));
}

TEST(CliOtlp, AFailedRunKeepsItsExitCodeAndItsSpansSayWhy) {
  Collector collector;
  TempDir d;
  write_file(d / "plan.yaml", R"(name: failing
steps:
  - {id: a, sh: "echo hello"}
  - {id: b, deps: [a], sh: "exit 3", attempts: 2}
  - {id: c, deps: [b], sh: "echo never"}
)");
  auto r = run_orch({"run", "plan.yaml"}, d.path(),
                    {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.endpoint() + "/custom/path"}});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto got = collector.received();
  ASSERT_EQ(got.size(), 1u) << r.err;
  EXPECT_EQ(got[0].at("path"), "/custom/path") << "the traces endpoint is used as it is";
  const json body = json::parse(got[0].at("body").get<std::string>());
  EXPECT_EQ(spans_of(body).size(), 1u + 2u + 3u) << "c never started: no span\n" << body.dump(2);
  const json run = span_named(body, "run failing");
  EXPECT_EQ(run.at("status").at("code"), 2);
  EXPECT_NE(run.at("status").at("message").get<std::string>().find("'b'"), std::string::npos) << run.dump();
  EXPECT_EQ(span_named(body, "b").at("status").at("code"), 2);
  EXPECT_EQ(span_named(body, "b attempt 2").at("status").at("code"), 2);
  EXPECT_EQ(attribute(span_named(body, "b attempt 2"), "orch.attempt.exit_code"), (json{{"intValue", "3"}}));
  EXPECT_EQ(span_named(body, "a").at("status").at("code"), 1);
}

TEST(CliOtlp, NothingListeningIsALineOnStderrAndTheRunStillSucceeds) {
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port());
  for (const std::vector<std::string>& args : {std::vector<std::string>{"run", "plan.yaml"},
                                               std::vector<std::string>{"run", "plan.yaml", "--json"}}) {
    auto r = run_orch(args, d.path(),
                      {{"OTEL_EXPORTER_OTLP_ENDPOINT", url}, {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_HAS(r.err, "orch: OpenTelemetry export to " + url + "/v1/traces failed: ");
    EXPECT_HAS(r.out, "succeeded");  // the report, whole, before the export
  }
}

TEST(CliOtlp, ACollectorErrorIsALineOnStderrAndTheExitCodeIsTheRuns) {
  Collector collector(
      {"--status", "503", "--answer", R"({"code": 14, "message": "collector is overloaded"})"});
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto r = run_orch({"run", "plan.yaml"}, d.path(), {{"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err,
             "orch: OpenTelemetry export to " + collector.endpoint() +
                 "/v1/traces failed: HTTP 503: {\"code\": 14, \"message\": \"collector is overloaded\"}");
  EXPECT_EQ(collector.received().size(), 1u);
}

// A 200 whose ExportTraceServiceResponse reports rejected spans is a failure too.
TEST(CliOtlp, RejectedSpansAreALineOnStderr) {
  Collector collector(
      {"--answer", R"({"partialSuccess": {"rejectedSpans": "2", "errorMessage": "spans too old"}})"});
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto r = run_orch({"run", "plan.yaml"}, d.path(), {{"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "/v1/traces failed: the collector rejected 2 spans: spans too old");
}

TEST(CliOtlp, ABadSettingIsALineOnStderrAndNothingIsSent) {
  Collector collector;
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto r = run_orch({"run", "plan.yaml"}, d.path(),
                    {{"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()},
                     {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization: Bearer s3cret"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err,
             "orch: OpenTelemetry export failed: OTEL_EXPORTER_OTLP_HEADERS: member 1 is not KEY=VALUE");
  EXPECT_EQ(r.err.find("s3cret"), std::string::npos) << "a header's value is not shown: " << r.err;
  EXPECT_TRUE(collector.received().empty());
}

// With no endpoint set nothing is exported, and libcurl is not even loaded: the
// dynamic loader's own log (LD_DEBUG) says which libraries a process opened.
TEST(CliOtlp, WithNoEndpointNothingIsLoaded) {
  Collector collector;
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto off = run_orch({"run", "plan.yaml"}, d.path(), {{"LD_DEBUG", "files"}});
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.err.find("libcurl"), std::string::npos) << off.err;
  auto on = run_orch({"run", "plan.yaml"}, d.path(),
                     {{"LD_DEBUG", "files"}, {"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()}});
  EXPECT_EQ(on.exit_code, 0) << on.err;
  EXPECT_HAS(on.err, "libcurl");  // the same check sees it when an export is made
  EXPECT_EQ(collector.received().size(), 1u);
}

// orch resume exports the run again at its end, with the same trace and span ids
// (a backend merges them), and `orch export-otlp` sends exactly what the ledger holds.
TEST(CliOtlp, ResumeAndExportOtlpSendTheSameIds) {
  Collector collector;
  TempDir d;
  write_file(d / "plan.yaml", R"(name: flaky
steps:
  - {id: a, sh: "echo hello"}
  - {id: b, deps: [a], sh: "test -f ready", attempts: 1}
)");
  const std::map<std::string, std::string> env = {{"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()}};
  auto first = run_orch({"run", "plan.yaml"}, d.path(), env);
  ASSERT_EQ(first.exit_code, 1) << first.err;
  const std::string run_id = run_id_in(first.err);
  write_file(d / "ready", "");
  auto resumed = run_orch({"resume", run_id}, d.path(), env);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto again = run_orch({"export-otlp", run_id}, d.path(), env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_HAS(again.out, "run " + run_id + ": trace sent");

  const auto got = collector.received();
  ASSERT_EQ(got.size(), 3u);
  const json failed = json::parse(got[0].at("body").get<std::string>());
  const json done = json::parse(got[1].at("body").get<std::string>());
  EXPECT_EQ(got[2].at("body"), got[1].at("body")) << "export-otlp sends what the ledger holds";
  EXPECT_EQ(span_named(failed, "run flaky").at("status").at("code"), 2);
  EXPECT_EQ(span_named(done, "run flaky").at("status").at("code"), 1);
  EXPECT_EQ(spans_of(failed).size(), 1u + 2u + 2u);
  EXPECT_EQ(spans_of(done).size(), 1u + 2u + 3u) << "b's second attempt, by the resume";
  std::set<std::string> failed_ids;
  for (const json& s : spans_of(failed)) failed_ids.insert(s.at("spanId").get<std::string>());
  for (const json& s : spans_of(done)) EXPECT_EQ(s.at("traceId"), spans_of(failed).at(0).at("traceId"));
  for (const char* name : {"run flaky", "a", "b", "b attempt 1"})
    EXPECT_TRUE(failed_ids.contains(span_named(done, name).at("spanId").get<std::string>())) << name;
}

// A collector that takes the connection and never answers: a stop signal ends
// the wait at once (not the 60 s timeout), and the exit code is still the run's.
TEST(CliOtlp, AStopSignalAbandonsAnExportThatWaits) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  // spawn_orch passes this process's environment on.
  ::setenv("OTEL_EXPORTER_OTLP_ENDPOINT",
           ("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port))).c_str(), 1);
  ::setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60000", 1);
  const pid_t pid = testing::spawn_orch({"run", "plan.yaml"}, d.path(), d / "out.txt");
  ::unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  ::unsetenv("OTEL_EXPORTER_OTLP_TIMEOUT");
  // A connection waiting to be accepted: the run has ended and the export is under way.
  pollfd ready{listener, POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 60'000), 1) << read_file(d / "out.txt");
  const auto signalled = std::chrono::steady_clock::now();
  ::kill(pid, SIGTERM);
  const int code = testing::wait_exit(pid);
  const auto waited = std::chrono::steady_clock::now() - signalled;
  ::close(listener);
  const std::string out = read_file(d / "out.txt");
  EXPECT_EQ(code, 0) << out;
  EXPECT_LT(waited, std::chrono::seconds(10)) << out;
  EXPECT_HAS(out, "/v1/traces failed: stopped by a signal before the answer came");
  EXPECT_HAS(out, "succeeded");
}

TEST(CliOtlp, ExportOtlpSaysWhatIsMissing) {
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto run = run_orch({"run", "plan.yaml"}, d.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto none = run_orch({"export-otlp", run_id_in(run.err)}, d.path());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_HAS(none.err, "no OpenTelemetry endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT");
  auto unknown = run_orch({"export-otlp", "no-such-run"}, d.path(),
                          {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"}});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_HAS(unknown.err, "no run 'no-such-run'");
  auto down =
      run_orch({"export-otlp", run_id_in(run.err)}, d.path(),
               {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + std::to_string(closed_port())}});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_HAS(down.err, "OpenTelemetry export to http://127.0.0.1:");
}

}  // namespace otlp_cli_test
}  // namespace orch
