// memory/similarity.h — how alike two texts are, as a number in [0, 1].
//
// The measure is a fuzzy Dice coefficient over stem sets (TermAnalyzer::stems:
// Porter stems, stop words dropped). For stem sets A and B:
//
//   m(x, S) = 1    if x is in S
//           = 0.5  else, if some y in S is one edit away from x (insertion,
//                  deletion, substitution or swap of neighbours: "crahs" ~ "crash")
//                  and both x and y have at least 5 bytes
//           = 0    otherwise
//
//   similarity(A, B) = (sum over x in A of m(x, B) + sum over y in B of m(y, A)) / (|A| + |B|)
//
// and 0 when both are empty. Without near matches this is exactly Dice,
// 2|A∩B| / (|A| + |B|). It is 1.0 exactly when A = B (the same words, in any
// order, any inflection), symmetric, and 0 for texts that share no stem. Two
// requests of 6 content words sharing 5 score 0.83; sharing 4, 0.67; sharing 3,
// 0.5. The capability gate of `orch task` calls >= 0.6 (kSimilarThreshold) similar.
//
// Pure; thread-safe.
#pragma once

#include <set>
#include <string>

namespace orch::memory {

inline constexpr double kSimilarThreshold = 0.6;

double stem_similarity(const std::set<std::string>& a, const std::set<std::string>& b);

}  // namespace orch::memory
