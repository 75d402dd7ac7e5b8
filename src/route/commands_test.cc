// Seed 004's /tk:* commands on the shipped tables: absolute priority as system,
// whatever domain words follow; words alone never make a command.
#include "route/commands.h"

#include <gtest/gtest.h>

#include "route/route_request.h"
#include "route/route_test_support.h"
#include "route/tables.h"

namespace orch::route {
namespace {

using test::shipped;

RouteDecision routed(const std::string& request) {
  auto d = route_request(shipped(), nullptr, request);
  EXPECT_TRUE(d) << d.error().message;
  return d ? *d : RouteDecision{};
}

TEST(RouteCommands, EveryTkCommandOfTheSeedIsSystemWithAbsolutePriority) {
  const std::vector<std::pair<std::string, std::string>> seed = {{"/tk:route", "query"},
                                                                 {"/tk:chain", "workflow"},
                                                                 {"/tk:budget-check", "audit"},
                                                                 {"/tk:orchestrate", "workflow"},
                                                                 {"/tk:boot", "action"}};
  for (const auto& [command, type] : seed) {
    SCOPED_TRACE(command);
    RouteDecision d = routed(command);
    EXPECT_EQ(d.domain.name, "system") << d.domain.reason;
    EXPECT_EQ(d.domain.confidence, 1.0);
    EXPECT_EQ(d.request_type.name, type) << d.request_type.reason;
    EXPECT_TRUE(d.decided());
  }
}

TEST(RouteCommands, DomainWordsAfterACommandDoNotOutrankIt) {
  // "repos" alone would be github; the command comes first.
  RouteDecision d = routed("/tk:route liste les repos Claude");
  EXPECT_EQ(d.domain.name, "system");
  EXPECT_HAS(d.domain.reason, "'/tk:route' is a /tk: command");
  EXPECT_EQ(d.request_type.name, "query");
  EXPECT_EQ(routed("  /TK:Chain sync the vault notes with the github repo").domain.name, "system");
}

TEST(RouteCommands, AnUnlistedCommandIsStillSystemAndItsTypeComesFromTheWords) {
  RouteDecision d = routed("/tk:export list the repos");
  EXPECT_EQ(d.domain.name, "system");
  EXPECT_HAS(d.domain.reason, "the table does not list");
  EXPECT_EQ(d.request_type.name, "query") << "scored from 'list'";
}

TEST(RouteCommands, WordsNeverMakeACommand) {
  const CommandTable& table = shipped().requests.commands;
  EXPECT_FALSE(find_command(table, "tk route the repos"));
  EXPECT_FALSE(find_command(table, "please /tk:route the repos")) << "a command starts the request";
  EXPECT_FALSE(find_command(table, "/tk:"));
  EXPECT_FALSE(find_command(table, "/tk:route/x"));
  EXPECT_FALSE(find_command(table, "/tkroute"));
  auto m = find_command(table, "/tk:budget-check now");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->text, "/tk:budget-check");
  ASSERT_NE(m->spec, nullptr);
  EXPECT_EQ(m->spec->request_type, "audit");
  EXPECT_EQ(routed("tk route the repos").domain.name, "github");
}

}  // namespace
}  // namespace orch::route
