#include "engine/orphans.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <filesystem>
#include <string>

#include "engine/snapshot.h"
#include "util/json_text.h"

namespace orch {

namespace {
bool environ_has(pid_t pid, const std::string& entry) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t pos = 0;
  while (pos < env.size()) {
    std::size_t end = env.find('\0', pos);
    if (end == std::string::npos) end = env.size();
    if (env.compare(pos, end - pos, entry) == 0) return true;
    pos = end + 1;
  }
  return false;
}
}  // namespace

int kill_orphans(const std::string& run_id) {
  const std::string entry = "ORCH_RUN_ID=" + run_id;
  const pid_t self = getpid();
  const pid_t own_group = getpgrp();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  std::set<pid_t> groups;
  int killed = 0;
  while (dirent* d = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(d->d_name, &end, 10);
    if (end == d->d_name || *end != '\0' || pid <= 0 || pid == self) continue;
    if (!environ_has(static_cast<pid_t>(pid), entry)) continue;
    pid_t group = getpgid(static_cast<pid_t>(pid));
    if (group > 0 && group != own_group) groups.insert(group);
    if (kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++killed;
  }
  closedir(proc);
  for (pid_t g : groups) kill(-g, SIGKILL);
  return killed;
}

Expected<int> close_interrupted_attempts(Store& store, const std::string& run_id, std::int64_t now_ms) {
  int closed = 0;
  for (AttemptRecord a : ORCH_TRY(store.attempts(run_id))) {
    if (a.status != AttemptStatus::Running) continue;
    a.status = AttemptStatus::Interrupted;
    a.counted = false;
    a.ending = "interrupted";
    a.reason = "interrupted: the orch process driving it stopped";
    a.finished_at = now_ms;
    ORCH_TRY(store.finish_attempt(a));
    std::string restored;
    if (!a.snapshot_dir.empty() && std::filesystem::exists(std::filesystem::path(a.snapshot_dir) / "manifest.json")) {
      auto r = restore_snapshot(a.snapshot_dir);
      restored = r ? "restored" : r.error().message;
    }
    EventRecord e{0, run_id, now_ms, "attempt_interrupted", a.step_id, a.number,
                  json_text(nlohmann::json{{"writes", restored}})};
    ORCH_TRY(store.append_event(e));
    ++closed;
  }
  return closed;
}

}  // namespace orch
