#include "plan/graph.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "orch/validate.h"

namespace orch::detail {

StepGraph::StepGraph(const Plan& plan) : plan_(plan) {
  std::size_t capacity = 16;
  while (capacity < 2 * plan.steps.size()) capacity *= 2;
  slots_.assign(capacity, -1);
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    int& slot = slots_[slot_of(plan.steps[i].id)];
    if (slot == -1) slot = static_cast<int>(i);  // a later step with the same id: the first stays
  }
  offsets_.reserve(plan.steps.size() + 1);
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const auto first = static_cast<std::ptrdiff_t>(edges_.size());
    for (const auto& dep : plan.steps[i].deps) {
      auto at = index_of(dep);
      if (!at || *at == static_cast<int>(i)) continue;
      if (std::find(edges_.begin() + first, edges_.end(), *at) == edges_.end()) edges_.push_back(*at);
    }
    offsets_.push_back(edges_.size());
  }
}

// The slot that holds the id's step, or the empty slot where it would go.
std::size_t StepGraph::slot_of(std::string_view id) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t slot = std::hash<std::string_view>{}(id)&mask;; slot = (slot + 1) & mask) {
    const int step = slots_[slot];
    if (step == -1 || plan_.steps[static_cast<std::size_t>(step)].id == id) return slot;
  }
}

std::optional<int> StepGraph::index_of(std::string_view id) const {
  const int step = slots_[slot_of(id)];
  if (step == -1) return std::nullopt;
  return step;
}

std::vector<std::vector<int>> StepGraph::cycles() const {
  // Tarjan's strongly connected components, iteratively (plans can be 100k steps
  // deep, far beyond what recursion on the call stack survives).
  const int n = size();
  std::vector<int> index(static_cast<std::size_t>(n), -1), low(static_cast<std::size_t>(n), 0);
  std::vector<int> component(static_cast<std::size_t>(n), -1);
  std::vector<char> on_stack(static_cast<std::size_t>(n), 0);
  std::vector<int> stack;
  std::vector<std::pair<int, std::size_t>> work;  // (node, next dep to look at)
  std::vector<std::vector<int>> groups;
  int next_index = 0;
  auto at = [](auto& v, int i) -> auto& {
    return v[static_cast<std::size_t>(i)];
  };
  for (int root = 0; root < n; ++root) {
    if (at(index, root) != -1) continue;
    work.emplace_back(root, 0);
    while (!work.empty()) {
      auto& [node, next] = work.back();
      if (next == 0 && at(index, node) == -1) {
        at(index, node) = at(low, node) = next_index++;
        stack.push_back(node);
        at(on_stack, node) = 1;
      }
      const auto& out = deps(node);
      if (next < out.size()) {
        int dep = out[next++];
        if (at(index, dep) == -1) {
          work.emplace_back(dep, 0);
        } else if (at(on_stack, dep)) {
          at(low, node) = std::min(at(low, node), at(index, dep));
        }
        continue;
      }
      if (at(low, node) == at(index, node) && stack.back() == node) {
        // A step alone in its component is on no cycle (deps_ holds no self-loops):
        // it gets no group (a plan of 100,000 independent steps would hold 100,000).
        stack.pop_back();
        at(on_stack, node) = 0;
      } else if (at(low, node) == at(index, node)) {
        std::vector<int> group;
        int member = -1;
        do {
          member = stack.back();
          stack.pop_back();
          at(on_stack, member) = 0;
          at(component, member) = static_cast<int>(groups.size());
          group.push_back(member);
        } while (member != node);
        groups.push_back(std::move(group));
      }
      int finished = node;
      work.pop_back();
      if (!work.empty()) at(low, work.back().first) = std::min(at(low, work.back().first), at(low, finished));
    }
  }

  std::vector<std::vector<int>> result;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() < 2) continue;
    // The shortest way round from the group's first step: breadth-first over deps
    // inside the group until we are back at the start.
    int start = *std::min_element(groups[g].begin(), groups[g].end());
    std::unordered_map<int, int> parent;
    std::queue<int> queue;
    queue.push(start);
    int last = -1;
    while (!queue.empty() && last == -1) {
      int node = queue.front();
      queue.pop();
      for (int dep : deps(node)) {
        if (at(component, dep) != static_cast<int>(g)) continue;
        if (dep == start) {
          last = node;
          break;
        }
        if (parent.emplace(dep, node).second) queue.push(dep);
      }
    }
    std::vector<int> cycle;
    for (int node = last; node != start; node = parent.at(node)) cycle.push_back(node);
    cycle.push_back(start);
    std::reverse(cycle.begin(), cycle.end());
    result.push_back(std::move(cycle));
  }
  std::sort(result.begin(), result.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return result;
}

std::vector<int> StepGraph::topological_order() const {
  const int n = size();
  std::vector<int> waiting(static_cast<std::size_t>(n), 0);
  // The steps that depend on step d, in plan order, are dependents[at[d], at[d + 1]):
  // flat, like the deps (a vector per step was 2.4 MB at the peak of validating
  // 100,000 independent steps).
  std::vector<std::size_t> at(static_cast<std::size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) {
    waiting[static_cast<std::size_t>(i)] = static_cast<int>(deps(i).size());
    for (int dep : deps(i)) ++at[static_cast<std::size_t>(dep)];
  }
  for (std::size_t d = 1; d < at.size(); ++d) at[d] += at[d - 1];  // at[d]: where d's dependents end
  std::vector<int> dependents(at.back());
  for (int i = n - 1; i >= 0; --i)  // from the back: at[d] ends where d's dependents start
    for (int dep : deps(i)) dependents[--at[static_cast<std::size_t>(dep)]] = i;
  auto dependents_of = [&](int step) {
    const auto d = static_cast<std::size_t>(step);
    return std::span<const int>(dependents.data() + at[d], at[d + 1] - at[d]);
  };
  // Always take the ready step that comes first in the plan.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i)
    if (waiting[static_cast<std::size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  while (!ready.empty()) {
    int step = ready.top();
    ready.pop();
    order.push_back(step);
    for (int next : dependents_of(step))
      if (--waiting[static_cast<std::size_t>(next)] == 0) ready.push(next);
  }
  return order;
}

AncestorQuery::AncestorQuery(const StepGraph& graph)
    : graph_(graph), visited_(static_cast<std::size_t>(graph.size()), 0) {
  std::vector<int> order = graph.topological_order();
  if (static_cast<int>(order.size()) == graph.size()) {
    rank_.assign(order.size(), 0);
    for (std::size_t r = 0; r < order.size(); ++r)
      rank_[static_cast<std::size_t>(order[r])] = static_cast<int>(r);
  }
}

bool AncestorQuery::is_ancestor(int ancestor, int step) {
  if (ancestor < 0 || step < 0 || ancestor >= graph_.size() || step >= graph_.size() || ancestor == step)
    return false;
  auto rank = [&](int i) { return rank_[static_cast<std::size_t>(i)]; };
  if (!rank_.empty() && rank(ancestor) >= rank(step)) return false;
  const auto& direct = graph_.deps(step);
  if (std::find(direct.begin(), direct.end(), ancestor) != direct.end()) return true;
  // At most this many steps' descendants are kept (n bits each).
  constexpr std::size_t kMaxCachedAncestors = 256;
  if (auto known = descendants_.find(ancestor); known != descendants_.end())
    return known->second[static_cast<std::size_t>(step)];
  if (++asked_[ancestor] >= 2 && descendants_.size() < kMaxCachedAncestors)
    return descendants_of(ancestor)[static_cast<std::size_t>(step)];
  if (++generation_ == 0) {  // wrapped: old marks could collide with the new generation
    std::fill(visited_.begin(), visited_.end(), 0);
    generation_ = 1;
  }
  stack_.assign(1, step);
  visited_[static_cast<std::size_t>(step)] = generation_;
  while (!stack_.empty()) {
    int node = stack_.back();
    stack_.pop_back();
    for (int dep : graph_.deps(node)) {
      if (dep == ancestor) return true;
      auto& mark = visited_[static_cast<std::size_t>(dep)];
      if (mark == generation_) continue;
      // A step placed before the ancestor in topological order cannot lead to it.
      if (!rank_.empty() && rank(dep) < rank(ancestor)) continue;
      mark = generation_;
      stack_.push_back(dep);
    }
  }
  return false;
}

const std::vector<bool>& AncestorQuery::descendants_of(int step) {
  const auto n = static_cast<std::size_t>(graph_.size());
  if (dependents_.empty()) {
    dependents_.resize(n);
    for (int i = 0; i < graph_.size(); ++i)
      for (int dep : graph_.deps(i)) dependents_[static_cast<std::size_t>(dep)].push_back(i);
  }
  std::vector<bool>& below = descendants_[step];
  below.assign(n, false);
  std::vector<int> todo{step};
  while (!todo.empty()) {
    int node = todo.back();
    todo.pop_back();
    for (int next : dependents_[static_cast<std::size_t>(node)]) {
      if (below[static_cast<std::size_t>(next)]) continue;
      below[static_cast<std::size_t>(next)] = true;
      todo.push_back(next);
    }
  }
  return below;
}

}  // namespace orch::detail

namespace orch {

std::vector<int> topological_order(const Plan& plan) {
  return detail::StepGraph(plan).topological_order();
}

bool is_ancestor(const Plan& plan, int ancestor, int step) {
  detail::StepGraph graph(plan);
  return detail::AncestorQuery(graph).is_ancestor(ancestor, step);
}

}  // namespace orch
