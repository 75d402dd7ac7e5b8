#include "exec/tool_registry.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/testing.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using orch::testing::read_file;
using orch::testing::source_dir;

// One sub-command that passes nothing and prints any JSON.
const char* kMinimalTool = R"(    command: [/bin/true]
    status: prod_ready
    safe_for_agents: true
    risk: low
    commands:
      run: {output_schema: {}}
)";

// The error message of a registry that must fail to load.
std::string load_error(const std::string& text, const std::string& file = "registry.yml") {
  auto registry = parse_tool_registry(text, file);
  if (registry) {
    ADD_FAILURE() << "loaded, but should not have:\n" << text;
    return "";
  }
  EXPECT_EQ(registry.error().code, ErrorCode::InvalidInput);
  return registry.error().message;
}

// A registry of one tool named `name` whose fields are `body` (indented 4).
std::string one_tool(const std::string& name, const std::string& body) {
  return "tools:\n  " + name + ":\n" + body;
}


TEST(ToolRegistry, TheExampleRegistryLoads) {
  auto registry = load_tool_registry(source_dir() / "examples" / "registry.yml");
  ASSERT_TRUE(registry) << registry.error().message;
  ASSERT_EQ(registry->names(), (std::vector<std::string>{"clock", "filestats", "jsonq"}));

  const RegisteredTool& stats = registry->tools.at("filestats");
  EXPECT_EQ(stats.status, ToolStatus::ProdReady);
  EXPECT_TRUE(stats.safe_for_agents);
  EXPECT_EQ(stats.risk, RiskLevel::Low);
  ASSERT_EQ(stats.command.size(), 1u);
  // A relative program path is resolved against the registry's folder.
  EXPECT_TRUE(fs::path(stats.command[0]).is_absolute()) << stats.command[0];
  EXPECT_TRUE(fs::equivalent(stats.command[0], source_dir() / "examples" / "tools" / "filestats.sh"));
  const ToolCommand* count = stats.find_command("count");
  ASSERT_NE(count, nullptr);
  ASSERT_EQ(count->args.size(), 3u);
  EXPECT_EQ(count->args[0].input, "max_bytes");
  EXPECT_EQ(count->args[0].flag, "--max-bytes");
  EXPECT_EQ(count->args[1].word, "--");
  EXPECT_EQ(count->args[2].input, "files");
  EXPECT_EQ(count->capabilities, (std::vector<std::string>{"count-lines", "count-words"}));

  // A bare program name stays as written (PATH lookup when it runs).
  EXPECT_EQ(registry->tools.at("jsonq").command, (std::vector<std::string>{"jq", "--compact-output"}));
  // A sub-command without its own contract inherits the tool's.
  const RegisteredTool& clock = registry->tools.at("clock");
  EXPECT_EQ(clock.status, ToolStatus::InProgress);
  EXPECT_EQ(clock.find_command("now")->output_schema["required"], json::array({"epoch"}));
  EXPECT_FALSE(clock.find_command("now")->output_contract.validate(json{{"epoch", 5}}).size());
  EXPECT_EQ(clock.find_command("now")->output_contract.validate(json{{"epoch", "x"}}).size(), 1u);
}

TEST(ToolRegistry, EmbeddedSchemaIsThePublishedFile) {
  json published = json::parse(read_file(source_dir() / "schemas" / "registry.schema.json"));
  json embedded = json::parse(tool_registry_schema_text());
  EXPECT_EQ(published, embedded)
      << "paste schemas/registry.schema.json into src/exec/tool_registry_schema.cc";
}

TEST(ToolRegistry, JsonFilesLoadToo) {
  auto registry =
      parse_tool_registry(R"({"version": 1, "tools": {"t": {"command": ["true"], "status": "pending",
    "risk": "HIGH", "commands": {"go": {"output_schema": {"type": "object"}}}}}})",
                          "registry.json");
  ASSERT_TRUE(registry) << registry.error().message;
  EXPECT_EQ(registry->tools.at("t").status, ToolStatus::Pending);
  EXPECT_EQ(registry->tools.at("t").risk, RiskLevel::High);
  EXPECT_FALSE(registry->tools.at("t").safe_for_agents) << "safe_for_agents defaults to false";

  std::string broken = load_error("{\"tools\": {\n\"t\": [1,]}}", "registry.json");
  EXPECT_HAS(broken, "registry.json:2: JSON syntax error");
}

TEST(ToolRegistry, ABadStatusIsNamedWithItsLineAndAGuess) {
  std::string e = load_error(one_tool("t", R"(    command: [/bin/true]
    status: prod-ready
    risk: low
    commands: {run: {output_schema: {}}}
)"));
  EXPECT_HAS(e, "registry.yml:4: tools.t.status: 'prod-ready' is not a status (did you mean 'prod_ready'?)");
  EXPECT_HAS(e, "planned, in_progress, dry_run_validated, prod_ready, pending");
}

TEST(ToolRegistry, UnknownKeysAreRejectedWithDidYouMean) {
  std::string e = load_error(R"(tools:
  t:
    comand: [true]
    status: prod_ready
    risk: low
    commands:
      run:
        output_schema: {}
        args:
          - {input: x, flag: -x, joind: true}
        input_schma: {}
tols: {}
x-note: keys starting with x- are ignored
)");
  EXPECT_HAS(e, "registry.yml:3: tools.t.comand: unknown key (did you mean 'command'?)");
  EXPECT_HAS(e, "registry.yml:2: tools.t: missing `command`");
  EXPECT_HAS(e, "registry.yml:10: tools.t.commands.run.args[0].joind: unknown key (did you mean 'joined'?)");
  EXPECT_HAS(e,
             "registry.yml:11: tools.t.commands.run.input_schma: unknown key (did you mean 'input_schema'?)");
  EXPECT_HAS(e, "registry.yml:12: tols: unknown key (did you mean 'tools'?)");
  EXPECT_EQ(e.find("x-note"), std::string::npos) << e;
  // Every problem at once, in the order they were written.
  EXPECT_LT(e.find("comand"), e.find("joind"));
  EXPECT_LT(e.find("joind"), e.find("tols"));
}

TEST(ToolRegistry, ABadRiskLevelIsRejected) {
  std::string e = load_error(one_tool("t", R"(    command: [/bin/true]
    status: prod_ready
    risk: hihg
    commands: {run: {output_schema: {}, risk: Medium}}
)"));
  EXPECT_HAS(e,
             "registry.yml:5: tools.t.risk: 'hihg' is not a risk level: low, medium, high or critical (did "
             "you mean 'high'?)");
  EXPECT_HAS(e, "tools.t.commands.run.risk: 'Medium' is not a risk level");  // lower or UPPER case only
}

TEST(ToolRegistry, SchemasThatDoNotCompileAreRejected) {
  std::string e = load_error(one_tool("t", R"(    command: [/bin/true]
    status: prod_ready
    risk: low
    commands:
      run:
        input_schema: {type: 5}
        output_schema: {properties: {a: {pattern: "(unclosed"}}}
      other:
        output_schema: [not, a, schema]
)"));
  EXPECT_HAS(e, "registry.yml:8: tools.t.commands.run.input_schema: not a usable JSON Schema");
  EXPECT_HAS(e, "registry.yml:9: tools.t.commands.run.output_schema: not a usable JSON Schema");
  EXPECT_HAS(e, "tools.t.commands.other.output_schema: must be a JSON Schema");
}

TEST(ToolRegistry, ACommandMustBeAListNeverAShellLine) {
  std::string e = load_error(one_tool("t", R"(    command: "jq -c ."
    status: prod_ready
    risk: low
    commands: {run: {output_schema: {}}}
)"));
  EXPECT_HAS(e, "registry.yml:3: tools.t.command: must be a list of words");
  EXPECT_HAS(e, "never splits a command on spaces");
  EXPECT_HAS(load_error(one_tool("t",
                                 "    command: []\n    status: prod_ready\n    risk: low\n"
                                 "    commands: {run: {output_schema: {}}}\n")),
             "tools.t.command: must name at least the program to run");
  // Unquoted, `true` is a YAML boolean, not the program: the message says what was read.
  EXPECT_HAS(load_error(one_tool("t",
                                 "    command: [true]\n    status: prod_ready\n    risk: low\n"
                                 "    commands: {run: {output_schema: {}}}\n")),
             "registry.yml:3: tools.t.command[0]: must be a non-empty string, not true");
}

TEST(ToolRegistry, EveryCommandNeedsAnOutputContract) {
  std::string e = load_error(one_tool("t", R"(    command: [/bin/true]
    status: prod_ready
    risk: low
    commands:
      run: {}
)"));
  EXPECT_HAS(e, "registry.yml:7: tools.t.commands.run: no output_schema (the JSON output contract)");
}

// An output_schema that is there but refused is one problem, not also a missing contract.
TEST(ToolRegistry, ARefusedOutputSchemaIsNotAlsoMissing) {
  std::string e = load_error(one_tool("t", R"(    command: [/bin/true]
    status: prod_ready
    risk: low
    commands:
      run: {output_schema: {type: objekt}}
)"));
  EXPECT_HAS(e, "tools.t.commands.run.output_schema: not a usable JSON Schema");
  EXPECT_EQ(e.find("no output_schema"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(ToolRegistry, AFolderIsNamedAsOne) {
  testing::TempDir d;
  auto registry = load_tool_registry(d.path());
  ASSERT_FALSE(registry);
  EXPECT_HAS(registry.error().message,
             d.path().string() + ": cannot read the tool registry: is a folder, not a file");
}

TEST(ToolRegistry, ArgumentsTheSchemaDeclaresMustBePassed) {
  std::string e = load_error(one_tool("t", R"(    command: [/bin/true]
    status: prod_ready
    risk: low
    commands:
      run:
        output_schema: {}
        input_schema: {properties: {a: {}, b: {}}, required: [c]}
        args:
          - {input: a}
          - {input: a, flag: --again}
          - {input: command}
          - {flag: --no-input}
          - {word: "--", flag: -x}
          - {input: "not a name"}
          - {input: z, joined: true}
      closed:
        output_schema: {}
        input_schema: {additionalProperties: false, properties: {a: {}}}
        args: [{input: a}, {input: b}]
)"));
  EXPECT_HAS(e,
             "registry.yml:20: tools.t.commands.closed.input_schema: forbids input 'b' "
             "(additionalProperties: false)");
  EXPECT_HAS(e, "tools.t.commands.run.input_schema: declares input 'b' but no `args` entry passes it");
  EXPECT_HAS(e, "declares input 'c' but no `args` entry passes it");
  EXPECT_HAS(e, "registry.yml:12: tools.t.commands.run.args[1].input: input 'a' is passed twice");
  EXPECT_HAS(e, "registry.yml:13: tools.t.commands.run.args[2].input: `command` names the sub-command");
  EXPECT_HAS(e, "registry.yml:14: tools.t.commands.run.args[3]: missing `input`");
  EXPECT_HAS(e, "registry.yml:15: tools.t.commands.run.args[4]: a fixed `word` stands alone");
  EXPECT_HAS(e, "args[5].input: 'not a name' is not an input name");
  EXPECT_HAS(e, "args[6].joined: needs a `flag`");
}

TEST(ToolRegistry, DuplicateKeysAndSyntaxErrorsHaveLines) {
  std::string dup = load_error("tools:\n  t:\n" + std::string(kMinimalTool) + "    status: pending\n");
  EXPECT_HAS(dup, "registry.yml:9: tools.t.status: duplicate key (first at line 4)");
  std::string syntax = load_error("tools:\n  t: [\n");
  EXPECT_HAS(syntax, "registry.yml:3: YAML syntax error");
  EXPECT_HAS(load_error("- a list\n"), "registry.yml:1: (top): must be a mapping with `tools`");
  EXPECT_HAS(load_error("tools: {}\n"), "registry.yml:1: tools: `tools` must map tool names to tools");
  EXPECT_HAS(load_error("version: 2\n" + one_tool("t", kMinimalTool)), "registry.yml:1: version: must be 1");
  EXPECT_HAS(load_error(one_tool("bad/name", kMinimalTool)),
             "registry.yml:2: tools.bad/name: a tool name is");
}

TEST(ToolRegistry, AMissingFileIsNotFound) {
  auto registry = load_tool_registry("/no/such/registry.yml");
  ASSERT_FALSE(registry);
  EXPECT_EQ(registry.error().code, ErrorCode::NotFound);
  EXPECT_HAS(registry.error().message,
             "/no/such/registry.yml: cannot read the tool registry: No such file or directory");
}

// The published schema says no to what the loader says no to (for problems of
// shape), and yes to what it accepts.
TEST(ToolRegistry, PublishedSchemaAgreesWithTheLoader) {
  auto schema = JsonSchema::parse(json::parse(read_file(source_dir() / "schemas" / "registry.schema.json")));
  ASSERT_TRUE(schema) << schema.error().message;
  auto as_json = [](const std::string& text) {
    auto doc = detail::read_yaml_doc(text);
    EXPECT_TRUE(doc.has_value());
    return doc ? yaml_to_json(*doc) : json();
  };
  EXPECT_TRUE(schema->validate(as_json(read_file(source_dir() / "examples" / "registry.yml"))).empty());
  const std::vector<std::string> bad = {
      one_tool("t",
               "    command: [/bin/true]\n    status: done\n    risk: low\n    commands: {run: "
               "{output_schema: {}}}\n"),
      one_tool("t",
               "    command: [/bin/true]\n    status: pending\n    risk: huge\n    commands: {run: "
               "{output_schema: {}}}\n"),
      one_tool("t", "    command: [/bin/true]\n    status: pending\n    risk: low\n    comands: {}\n"),
      one_tool(
          "t",
          "    command: jq\n    status: pending\n    risk: low\n    commands: {run: {output_schema: {}}}\n"),
      one_tool("t",
               "    command: [/bin/true]\n    status: pending\n    risk: low\n    safe_for_agents: yes\n"
               "    commands: {run: {output_schema: {}}}\n"),
      one_tool("t",
               "    command: [/bin/true]\n    status: pending\n    risk: low\n"
               "    commands: {run: {output_schema: {}, args: [{flag: -x}]}}\n"),
      one_tool("t",
               "    command: [/bin/true]\n    status: pending\n    risk: low\n"
               "    commands: {run: {output_schema: {}, args: [{word: --, input: x}]}}\n"),
      "tools: {}\n",
      "version: 2\n" + one_tool("t", kMinimalTool),
  };
  for (const auto& text : bad) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(parse_tool_registry(text, "r.yml").has_value());
    EXPECT_FALSE(schema->validate(as_json(text)).empty()) << "the schema accepts what the loader rejects";
  }
}

// ---- CLI-first selection ---------------------------------------------------

ToolNeed capability(const std::string& name) {
  ToolNeed need;
  need.capability = name;
  return need;
}
ToolNeed named(const std::string& tool, const std::string& command = "") {
  ToolNeed need;
  need.tool = tool;
  need.command = command;
  return need;
}

ToolRegistry selection_registry() {
  auto tool = [](const std::string& name, const std::string& status, bool safe, const std::string& risk,
                 const std::string& capability) {
    return "  " + name + ":\n    command: [/bin/true]\n    status: " + status +
           "\n    safe_for_agents: " + (safe ? "true" : "false") + "\n    risk: " + risk +
           "\n    commands:\n      go:\n        output_schema: {}\n" + "        capabilities: [" +
           capability + "]\n";
  };
  std::string text = "tools:\n" + tool("wip", "in_progress", true, "low", "summarise") +
                     tool("later", "pending", true, "low", "summarise") +
                     tool("idea", "planned", true, "low", "summarise") +
                     tool("unsafe", "prod_ready", false, "low", "summarise") +
                     tool("tried", "dry_run_validated", true, "low", "count-lines") +
                     tool("proven", "prod_ready", true, "medium", "count-lines") +
                     tool("proven-risky", "prod_ready", true, "high", "count-lines") +
                     tool("dry", "dry_run_validated", true, "low", "lint");
  auto registry = parse_tool_registry(text, "r.yml");
  EXPECT_TRUE(registry) << registry.error().message;
  return registry ? std::move(*registry) : ToolRegistry{};
}

TEST(ToolSelection, OnlyValidatedSafeToolsAreEverChosen) {
  ToolRegistry registry = selection_registry();
  auto none = select_tool(registry, capability("summarise"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::NotFound);
  const std::string& why = none.error().message;
  EXPECT_HAS(why, "no tool chosen for capability 'summarise'");
  EXPECT_HAS(why, "tool 'wip' is in_progress");
  EXPECT_HAS(why, "tool 'later' is pending");
  EXPECT_HAS(why, "tool 'idea' is planned");
  EXPECT_HAS(why, "tool 'unsafe' is not safe_for_agents");

  // Named directly, they are still not chosen.
  for (const char* name : {"wip", "later", "idea", "unsafe"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(select_tool(registry, named(name)));
  }
  auto dry = select_tool(registry, named("dry"));
  ASSERT_TRUE(dry) << dry.error().message;
  EXPECT_EQ(dry->tool->name, "dry");
  EXPECT_EQ(dry->command->name, "go");  // its only sub-command
}

TEST(ToolSelection, ProdReadyBeforeDryRunThenTheLowerRisk) {
  ToolRegistry registry = selection_registry();
  auto choice = select_tool(registry, capability("count-lines"));
  ASSERT_TRUE(choice) << choice.error().message;
  EXPECT_EQ(choice->tool->name,
            "proven");  // prod_ready (medium) before dry_run_validated (low); medium before high
  EXPECT_EQ(choice->command->name, "go");
  auto by_command = select_tool(registry, named("tried", "go"));
  ASSERT_TRUE(by_command);
  EXPECT_EQ(by_command->tool->name, "tried");
}

TEST(ToolSelection, CapabilitiesMatchWholeNeverAsSubstrings) {
  ToolRegistry registry = selection_registry();
  auto part = select_tool(registry, capability("count"));
  ASSERT_FALSE(part) << "'count' must not match 'count-lines'";
  EXPECT_HAS(part.error().message, "no sub-command offers capability 'count'");
  auto typo = select_tool(registry, capability("count-line"));
  ASSERT_FALSE(typo);
  EXPECT_HAS(typo.error().message, "(did you mean 'count-lines'?)");
  auto unknown = select_tool(registry, named("provn"));
  ASSERT_FALSE(unknown);
  EXPECT_HAS(unknown.error().message, "no tool 'provn' in the registry (did you mean 'proven'?)");
  auto no_command = select_tool(registry, named("proven", "og"));
  ASSERT_FALSE(no_command);
  EXPECT_HAS(no_command.error().message, "tool 'proven' has no sub-command 'og'");
  EXPECT_FALSE(select_tool(ToolRegistry{}, capability("lint")));
}

// ---- from inputs to argv -----------------------------------------------------

ToolRegistry argv_registry() {
  auto registry = parse_tool_registry(R"(tools:
  t:
    command: [/bin/prog, --quiet]
    status: prod_ready
    safe_for_agents: true
    risk: low
    output_schema: {}
    commands:
      run:
        argv: [run]
        args:
          - {input: limit, flag: --limit}
          - {input: mode, flag: --mode=, joined: true}
          - {input: verbose, flag: -v}
          - {input: tag, flag: --tag}
          - {input: config, flag: --config}
          - {word: "--"}
          - {input: files}
          - {input: ratio}
        input_schema:
          type: object
          additionalProperties: false
          properties:
            limit: {type: integer, maximum: 100}
            mode: {enum: [fast, slow]}
            verbose: {type: boolean}
            ratio: {type: number}
            files: {type: array}
            tag: {}
            config: {type: object}
      empty: {}
)",
                                      "r.yml");
  EXPECT_TRUE(registry) << registry.error().message;
  return registry ? std::move(*registry) : ToolRegistry{};
}

TEST(ToolInvocation, InputsBecomeArgvInTheDeclaredOrder) {
  ToolRegistry registry = argv_registry();
  json inputs = {{"command", "run"},     {"files", {"a b.txt", "; rm -rf /", "$(x)"}},
                 {"limit", 5},           {"mode", "fast"},
                 {"verbose", true},      {"tag", {"x", "y"}},
                 {"config", {{"k", 1}}}, {"ratio", 0.5}};
  auto call = tool_invocation(registry, "t", inputs);
  ASSERT_TRUE(call) << call.error().message;
  EXPECT_EQ(call->argv,
            (std::vector<std::string>{"/bin/prog", "--quiet", "run", "--limit", "5", "--mode=fast", "-v",
                                      "--tag", "x", "--tag", "y", "--config", R"({"k":1})", "--", "a b.txt",
                                      "; rm -rf /", "$(x)", "0.5"}));
  EXPECT_EQ(call->command->name, "run");

  // Absent, null and false inputs add nothing; a lone word stays.
  auto few = tool_invocation(registry, "t", {{"command", "run"}, {"verbose", false}, {"tag", nullptr}});
  ASSERT_TRUE(few) << few.error().message;
  EXPECT_EQ(few->argv, (std::vector<std::string>{"/bin/prog", "--quiet", "run", "--"}));
}

TEST(ToolInvocation, RenderedTextIsReadAsTheSchemaTypeItNeeds) {
  ToolRegistry registry = argv_registry();
  // A placeholder renders text: "7" where an integer is wanted is 7; "true" a boolean.
  auto call = tool_invocation(registry, "t",
                              {{"command", "run"}, {"limit", " 7\n"}, {"verbose", "true"}, {"ratio", "2.5"}});
  ASSERT_TRUE(call) << call.error().message;
  EXPECT_EQ(call->argv,
            (std::vector<std::string>{"/bin/prog", "--quiet", "run", "--limit", "7", "-v", "--", "2.5"}));
  auto not_a_number = tool_invocation(registry, "t", {{"command", "run"}, {"limit", "seven"}});
  ASSERT_FALSE(not_a_number);
  EXPECT_HAS(not_a_number.error().message,
             "inputs do not match the argument schema of tool 't' run: /limit:");
  auto fraction = tool_invocation(registry, "t", {{"command", "run"}, {"limit", "7.5"}});
  EXPECT_FALSE(fraction) << "7.5 is no integer";
}

TEST(ToolInvocation, ProblemsAreNamed) {
  ToolRegistry registry = argv_registry();
  auto message = [&](const std::string& tool, const json& inputs) {
    auto call = tool_invocation(registry, tool, inputs);
    EXPECT_FALSE(call) << json(call->argv).dump();
    return call ? std::string() : call.error().message;
  };
  EXPECT_HAS(message("tt", {{"command", "run"}}), "no tool 'tt' in the registry r.yml (did you mean 't'?)");
  EXPECT_HAS(message("t", json::object()),
             "a tool step names its sub-command in inputs.command (tool 't' has: empty, run)");
  EXPECT_HAS(message("t", {{"command", 3}}), "inputs.command must be a string");
  EXPECT_HAS(message("t", {{"command", "rnu"}}), "tool 't' has no sub-command 'rnu' (did you mean 'run'?)");
  EXPECT_HAS(message("t", {{"command", "run"}, {"limt", 3}}),
             "input 'limt' is not an argument of tool 't' run (did you mean 'limit'?)");
  EXPECT_HAS(message("t", {{"command", "empty"}, {"x", 1}}), "(arguments: none)");
  EXPECT_HAS(message("t", {{"command", "run"}, {"limit", 500}}), "/limit:");
  EXPECT_HAS(message("t", {{"command", "run"}, {"mode", "medium"}}), "/mode:");
  EXPECT_HAS(message("t", {{"command", "run"}, {"files", {{1, 2}}}}), "input 'files': a list inside a list");
  EXPECT_HAS(message("t", {{"command", "run"}, {"tag", std::string("a\0b", 3)}}), "NUL byte");
  auto none = tool_invocation(ToolRegistry{}, "t", {{"command", "run"}});
  ASSERT_FALSE(none);
  EXPECT_HAS(none.error().message, "no tool registry is loaded (pass --registry FILE");
}

}  // namespace
}  // namespace orch
