// plan/graph.h — a plan's steps as a graph of indices, for validation and ordering.
//
// Built once per plan in O(steps + deps). Dep names that do not resolve, and a
// step's dependency on itself, are left out of the edges (validation reports
// them separately), so every algorithm here works on any plan. The graph keeps
// string_views into the plan's ids: the Plan must outlive it and not change.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "orch/plan.h"

namespace orch::detail {

class StepGraph {
 public:
  explicit StepGraph(const Plan& plan);

  int size() const { return static_cast<int>(offsets_.size()) - 1; }
  // The first step with this id.
  std::optional<int> index_of(std::string_view id) const;
  // Resolved deps of a step, each once, in the order written, never the step itself.
  std::span<const int> deps(int step) const {
    const auto i = static_cast<std::size_t>(step);
    return {edges_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
  }

  // One cycle per group of steps that depend on each other in a circle, as step
  // indices a, b, c meaning a depends on b, b on c, c on a. Each starts at the
  // group's first step in plan order; groups are ordered by that step.
  std::vector<std::vector<int>> cycles() const;

  // Every step after its deps, plan order kept among independent steps. Steps on a
  // cycle (and those depending on them) are left out.
  std::vector<int> topological_order() const;

 private:
  // The first step of each id, by hash: an open-addressing table of step indices
  // (-1: empty), at most half full, its ids read from the plan. A node-based map
  // of string_views was 4.8 MB for 100,000 steps, this is 1 MB.
  std::size_t slot_of(std::string_view id) const;
  const Plan& plan_;
  std::vector<int> slots_;
  // The deps of step i are edges_[offsets_[i], offsets_[i + 1]): two flat arrays,
  // not a vector per step (a 100,000-step plan's validation held 2.4 MB of empty ones).
  std::vector<std::size_t> offsets_{0};
  std::vector<int> edges_;
};

// Answers "is A an ancestor of S" repeatedly without reallocating: each query is a
// depth-first walk over deps, pruned by topological rank when the plan is acyclic.
class AncestorQuery {
 public:
  explicit AncestorQuery(const StepGraph& graph);
  bool is_ancestor(int ancestor, int step);

 private:
  const StepGraph& graph_;
  std::vector<int> rank_;  // position in topological order; empty when there is a cycle
  std::vector<unsigned> visited_;
  unsigned generation_ = 0;
  std::vector<int> stack_;
  // A step asked about as an ancestor more than once gets its descendants
  // computed once (a downward walk), so that many steps referring to one distant
  // ancestor (every step of a chain naming the first) cost one walk, not one
  // upward search each: quadratic on a 100,000-step chain.
  std::unordered_map<int, int> asked_;
  std::unordered_map<int, std::vector<bool>> descendants_;
  std::vector<std::vector<int>> dependents_;  // built on first need
  const std::vector<bool>& descendants_of(int step);
};

}  // namespace orch::detail
