#include "engine/attempt_render.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

// fingerprint_of is FNV-1a 64 (offset basis 14695981039346656037, prime
// 1099511628211): the published test vectors.
TEST(FingerprintTest, IsFnv1a64) {
  EXPECT_EQ(fingerprint_of(""), "cbf29ce484222325");
  EXPECT_EQ(fingerprint_of("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(fingerprint_of("foobar"), "85944171f73967e8");
}

}  // namespace
}  // namespace orch
