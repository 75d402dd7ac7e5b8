// What may start now. See ready_set.h.
#include "engine/ready_set.h"

#include <sys/resource.h>

#include <algorithm>
#include <utility>

#include "engine/scheduler_internal.h"

namespace orch {

namespace fs = std::filesystem;
using detail::within;

void ReadySet::rebuild(std::vector<StepState>& steps, const std::unordered_map<std::string, int>& index_of) {
  ready_.clear();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    StepState& s = steps[i];
    s.deps_left = 0;
    for (const auto& d : s.step->deps)
      if (steps[static_cast<std::size_t>(index_of.at(d))].rec.status != StepStatus::Done) ++s.deps_left;
    if (s.rec.status == StepStatus::Pending && s.deps_left == 0) ready_.insert(static_cast<int>(i));
  }
}

void ReadySet::dependency_done(std::vector<StepState>& steps, int i) {
  for (int c : steps[static_cast<std::size_t>(i)].children) {
    StepState& child = steps[static_cast<std::size_t>(c)];
    if (--child.deps_left == 0 && child.rec.status == StepStatus::Pending) ready_.insert(c);
  }
}

void InFlight::measure_open_files() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) {
    limit_ = free_ = LLONG_MAX;
    return;
  }
  limit_ = static_cast<long long>(files.rlim_cur);
  free_ = limit_ - kFdsReserved;
}

InFlight::Room InFlight::open_files_room(int need) {
  if (need <= free_ || count_ == 0) return Room::Fits;
  return std::exchange(capped_, true) ? Room::Full : Room::FullFirstTime;
}

bool InFlight::writes_overlap(const std::vector<StepState>& steps, int i, const fs::path& workspace) const {
  const Step& step = *steps[static_cast<std::size_t>(i)].step;
  if (step.writes.empty() || writers_.empty()) return false;
  const auto resolved = [](const fs::path& p) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(p, ec);
    return ec ? p : r;
  };
  // Each path is resolved once per call, not once per pair.
  const auto both = [&](const std::vector<std::string>& writes) {
    std::vector<std::pair<fs::path, fs::path>> out;  // as written, resolved
    out.reserve(writes.size());
    for (const auto& w : writes) {
      fs::path p = workspace / w;
      fs::path r = resolved(p);
      out.emplace_back(std::move(p), std::move(r));
    }
    return out;
  };
  const auto mine = both(step.writes);
  for (int other : writers_)
    for (const auto& [b, rb] : both(steps[static_cast<std::size_t>(other)].step->writes))
      for (const auto& [a, ra] : mine)
        if (within(a, b) || within(b, a) || within(ra, rb) || within(rb, ra)) return true;
  return false;
}

void InFlight::add(int i, bool writes, int open_files) {
  ++count_;
  if (writes) writers_.push_back(i);
  free_ -= open_files;
}

void InFlight::remove(int i, int open_files) {
  --count_;
  free_ += open_files;
  std::erase(writers_, i);
}

}  // namespace orch
