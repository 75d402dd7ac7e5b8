// The status file of `orch cycle`: read with lines, written whole and atomically.
#include "flows/cycle_status.h"

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace orch::flows {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;

Lifecycle status_lifecycle() {
  auto l = Lifecycle::from_json(nlohmann::json::parse(R"({
    "states": ["stub", "implemented", "tested"],
    "stages": {"implement": "stub -> implemented", "test": "implemented -> tested"}})"));
  EXPECT_TRUE(l);
  return l ? *l : Lifecycle{};
}

TEST(CycleStatus, AYamlStatusIsReadAndAStateWrittenBackKeepingEverythingElse) {
  TempDir d;
  const fs::path path = d / "status.yaml";
  write_file(path,
             "# the items\n"
             "- id: add\n  file: src/add.c\n  state: stub\n  owner: ana\n"
             "- id: mul\n  file: src/mul.c\n  state: implemented\n");
  auto status = read_status_file(path, StatusFields{}, status_lifecycle());
  ASSERT_TRUE(status) << status.error().message;
  ASSERT_EQ(status->items.size(), 2u);
  EXPECT_EQ(status->items[0].id, "add");
  EXPECT_EQ(status->items[0].file, "src/add.c");
  EXPECT_EQ(status->items[1].state, "implemented");
  ASSERT_TRUE(write_item_state(*status, "add", "implemented"));
  auto again = read_status_file(path, StatusFields{}, status_lifecycle());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->items[0].state, "implemented");
  EXPECT_EQ(again->doc[0]["owner"], "ana") << "the user's other fields are kept";
  EXPECT_EQ(again->items[1].state, "implemented");
  EXPECT_FALSE(write_item_state(*again, "div", "tested"));
  EXPECT_EQ(read_status_file(path, StatusFields{}, status_lifecycle())->items.size(), 2u);
}

TEST(CycleStatus, AJsonStatusUnderItemsWithItsOwnFieldNamesStaysJson) {
  TempDir d;
  const fs::path path = d / "status.json";
  write_file(path, R"({"project": "p", "items": [{"node": "a", "path": "a.c", "stage_state": "stub"}]})");
  const StatusFields fields{"node", "path", "stage_state"};
  auto status = read_status_file(path, fields, status_lifecycle());
  ASSERT_TRUE(status) << status.error().message;
  ASSERT_TRUE(write_item_state(*status, "a", "implemented"));
  const auto doc = nlohmann::json::parse(read_file(path));
  EXPECT_EQ(doc["project"], "p");
  EXPECT_EQ(doc["items"][0]["stage_state"], "implemented");
}

TEST(CycleStatus, EveryProblemOfAStatusFileNamesItsLine) {
  TempDir d;
  const fs::path path = d / "status.yaml";
  write_file(path,
             "- id: add\n  file: src/add.c\n  state: stub\n"
             "- id: add\n  file: src/add2.c\n  state: stub\n"
             "- id: mul\n  state: implemneted\n"
             "- id: sub\n  file: src/sub.c\n  state: implemneted\n"
             "- just text\n");
  auto bad = read_status_file(path, StatusFields{}, status_lifecycle());
  ASSERT_FALSE(bad);
  const std::string& m = bad.error().message;
  EXPECT_NE(m.find(path.string() + ":4: item 'add' is listed twice"), std::string::npos) << m;
  EXPECT_NE(m.find(path.string() + ":7: item 3 has no 'file'"), std::string::npos) << m;
  EXPECT_NE(
      m.find(path.string() + ":9: item 'sub': 'implemneted' is not a state of the lifecycle (did you mean "
                             "'implemented'?)"),
      std::string::npos)
      << m;
  EXPECT_NE(m.find(path.string() + ":12: item 5 is not a mapping"), std::string::npos) << m;
  write_file(path, "- id: [unclosed\n");
  auto syntax = read_status_file(path, StatusFields{}, status_lifecycle());
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().message.rfind(path.string() + ":", 0), 0u) << syntax.error().message;
  write_file(path, "items: 3\n");
  EXPECT_FALSE(read_status_file(path, StatusFields{}, status_lifecycle()));
}

}  // namespace
}  // namespace orch::flows
