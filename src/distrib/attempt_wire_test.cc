// An attempt's spec and outcome survive the trip through the ledger byte for
// byte (invalid UTF-8 and NUL included, the inputs' key order kept), and a
// worker's labels are read as `orch worker --labels` promises.
#include "distrib/attempt_wire.h"

#include <gtest/gtest.h>

#include "distrib/work_queue.h"

namespace orch::distrib {
namespace {

const std::string kBytes("x\xff\xfe\0y", 5);  // not UTF-8, with a NUL

TEST(AttemptWire, ASpecComesBackAsItWasSent) {
  AttemptSpec s;
  s.run_id = "r1";
  s.step_id = "build";
  s.attempt = 3;
  s.executor = "shell";
  s.goal = "build it";
  s.previous_failure = "exit 2\n" + kBytes;
  s.argv = {"/bin/sh", "-c", "echo " + kBytes};
  s.env = {{"A", kBytes}, {"ORCH_USAGE_FILE", "/driver/usage.json"}};
  s.inputs = nlohmann::ordered_json::object();
  s.inputs["zeta"] = 1;
  s.inputs["alpha"] = "two";
  s.workspace = "/w";
  s.runs_on = {"gpu", "linux"};
  s.output_file = "/w/out.txt";
  s.timeout = std::chrono::milliseconds(1500);
  s.token_cap = 512;
  s.kill_grace = std::chrono::milliseconds(300);
  s.max_output = 1234;
  auto back = decode_spec(encode_spec(s));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->run_id, "r1");
  EXPECT_EQ(back->attempt, 3);
  EXPECT_EQ(back->previous_failure, s.previous_failure);
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->env, s.env);
  EXPECT_EQ(back->inputs.dump(), R"({"zeta":1,"alpha":"two"})") << "the keys' order is kept";
  EXPECT_EQ(back->runs_on, s.runs_on);
  EXPECT_EQ(back->output_file, s.output_file);
  EXPECT_EQ(back->timeout, s.timeout);
  EXPECT_EQ(back->token_cap, 512);
  EXPECT_EQ(back->kill_grace, s.kill_grace);
  EXPECT_EQ(back->max_output, 1234);
  EXPECT_TRUE(back->stdout_path.empty()) << "paths of one machine do not travel";
}

TEST(AttemptWire, AnOutcomeComesBackAsItWasSent) {
  AttemptOutcome o;
  o.ending = AttemptEnding::TimedOut;
  o.exit_code = -1;
  o.signal = 9;
  o.result = kBytes;
  o.message = "timed out";
  o.output_tail = kBytes;
  o.tokens_in = 10;
  o.tokens_out = 20;
  o.cache_read_tokens = 4;
  o.cost_usd = 0.125;
  o.duration = std::chrono::milliseconds(77);
  o.transient = true;
  o.retry_after = std::chrono::milliseconds(2000);
  o.stdout_text = kBytes;
  o.host = "gpu-7";
  o.model = "local/llama-test";
  auto back = decode_outcome(encode_outcome(o));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->ending, AttemptEnding::TimedOut);
  EXPECT_EQ(back->signal, 9);
  EXPECT_EQ(back->result, kBytes);
  EXPECT_EQ(back->output_tail, kBytes);
  EXPECT_EQ(back->tokens_in, 10);
  EXPECT_EQ(back->cache_read_tokens, 4);
  EXPECT_DOUBLE_EQ(back->cost_usd, 0.125);
  EXPECT_EQ(back->duration.count(), 77);
  EXPECT_TRUE(back->transient);
  EXPECT_EQ(back->retry_after, std::chrono::milliseconds(2000));
  EXPECT_EQ(back->stdout_text, kBytes);
  EXPECT_FALSE(back->stderr_text);
  EXPECT_EQ(back->host, "gpu-7");
  EXPECT_EQ(back->model, "local/llama-test");
}

TEST(AttemptWire, BytesThatAreNoSpecAreRefusedClearly) {
  auto bad = decode_spec("not cbor at all");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("a queued attempt's spec"), std::string::npos) << bad.error().message;
  auto outcome_as_spec = decode_spec(encode_outcome(AttemptOutcome{}));
  EXPECT_FALSE(outcome_as_spec) << "an outcome has none of a spec's fields";
}

TEST(WorkerLabels, AreSortedWithoutRepeatsAndCheckedOneByOne) {
  auto labels = parse_labels(" linux,gpu,,gpu ");
  ASSERT_TRUE(labels);
  EXPECT_EQ(*labels, (std::vector<std::string>{"gpu", "linux"}));
  EXPECT_EQ(label_array(*labels), "{gpu,linux}");
  auto bad = parse_labels("gpu,big box");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "--labels: 'big box' is not a label: use 1 to 64 letters, digits, '_', '.' or '-'");
  EXPECT_TRUE(parse_labels("")->empty());
}

}  // namespace
}  // namespace orch::distrib
