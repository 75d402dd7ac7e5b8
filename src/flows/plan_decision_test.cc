// The planner's decision without a model: the same for plan_request and --explain.
#include "flows/plan_decision.h"

#include <gtest/gtest.h>

namespace orch::flows {
namespace {

TEST(PlanDecisionTest, OneStepTemplateOrModel) {
  const TemplateLibrary shipped = TemplateLibrary::shipped();
  PlanDecision one = decide_plan("fix the CI workflow file", &shipped);
  EXPECT_EQ(one.way, PlanWay::SingleStep);
  EXPECT_TRUE(one.scores.empty()) << "a single step scores no template";

  PlanDecision research = decide_plan("research these five HTTP libraries and write me a comparison", &shipped);
  ASSERT_EQ(research.way, PlanWay::Template) << research.why;
  ASSERT_TRUE(research.chosen);
  EXPECT_EQ(research.chosen->plan_template->name, "research-and-compare");
  ASSERT_EQ(research.scores.size(), shipped.templates().size());
  EXPECT_EQ(research.scores.front().plan_template->name, "research-and-compare") << "best first";
  EXPECT_NE(research.why.find("no model call"), std::string::npos) << research.why;

  PlanDecision model = decide_plan("explain this step by step", &shipped);
  EXPECT_EQ(model.way, PlanWay::Model);
  EXPECT_FALSE(model.chosen);
  EXPECT_NE(model.why.find("no template matched"), std::string::npos) << model.why;
  EXPECT_EQ(decide_plan("run the tests in parallel", nullptr).way, PlanWay::Model);
  EXPECT_STREQ(plan_way_name(PlanWay::Template), "template");
}

}  // namespace
}  // namespace orch::flows
