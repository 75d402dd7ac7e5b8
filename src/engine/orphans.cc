#include "engine/orphans.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/budget.h"
#include "engine/snapshot.h"
#include "exec/output_sink.h"
#include "exec/shell_executor.h"
#include "util/fd.h"
#include "util/json_text.h"
#include "util/read_file.h"

namespace orch {

namespace {
// A /proc file of `pid`, or nothing when it cannot be read. Read with read(2),
// never through a stream buffer: a process that ends while its file is read
// makes the read fail (ESRCH), which libstdc++'s filebuf throws as an exception
// past an istreambuf_iterator (a resume was aborted that way).
std::optional<std::string> proc_file(pid_t pid, const char* name) {
  auto text = read_file_text(fmt::format("/proc/{}/{}", pid, name));
  if (!text) return std::nullopt;
  return std::move(*text);
}

bool environ_has(pid_t pid, const std::string& entry) {
  const auto read = proc_file(pid, "environ");
  if (!read) return false;
  const std::string& env = *read;
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

namespace {
// A process group an attempt the ledger has running was started in.
struct RecordedGroup {
  pid_t pgid = 0;
  pid_t sid = 0;
  std::int64_t not_before_ms = 0;  // the attempt's start, less some slack for clock ticks
};

// How far a process's start time read from /proc (boot time in whole seconds plus
// clock ticks) may be from the wall-clock time orch took when it started it.
constexpr std::int64_t kStartSlackMs = 2000;

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string boot_id() {
  return read_line("/proc/sys/kernel/random/boot_id");
}

// The inode of this process's pid namespace: pids recorded in another one name
// other processes here.
std::string pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? std::to_string(st.st_ino) : std::string();
}

struct ProcStat {
  pid_t pgrp = 0;
  pid_t session = 0;
  std::int64_t started_ms = 0;  // since the epoch
};

// pgrp, session and start time from /proc/PID/stat (fields 5, 6 and 22; the
// command name in field 2 may hold spaces and parentheses, so fields are counted
// after its last ')').
std::optional<ProcStat> proc_stat(pid_t pid, std::int64_t boot_ms, long ticks_per_second) {
  const std::string text = proc_file(pid, "stat").value_or("");
  auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string word; fields >> word && f.size() < 20;) f.push_back(word);
  if (f.size() < 20) return std::nullopt;
  ProcStat st;
  st.pgrp = static_cast<pid_t>(std::atol(f[2].c_str()));
  st.session = static_cast<pid_t>(std::atol(f[3].c_str()));
  st.started_ms = boot_ms + std::atoll(f[19].c_str()) * 1000 / ticks_per_second;
  return st;
}

std::int64_t boot_time_ms() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("btime ")) return std::atoll(line.c_str() + 6) * 1000;
  return 0;
}

Expected<std::vector<RecordedGroup>> recorded_groups(Store& store, const std::string& run_id) {
  // (step, attempt) -> started_at of the attempts the ledger has running, and
  // the attempts it has finished (their groups were killed as they ended).
  std::map<std::pair<std::string, int>, std::int64_t> running;
  std::set<std::pair<std::string, int>> finished;
  for (const AttemptRecord& a : ORCH_TRY(store.attempts(run_id))) {
    if (a.status == AttemptStatus::Running)
      running[{a.step_id, a.number}] = a.started_at;
    else
      finished.insert({a.step_id, a.number});
  }
  std::vector<nlohmann::json> records;
  for (const EventRecord& e : ORCH_TRY(store.events_of_kind(run_id, "attempt_spawned"))) {
    if (!running.contains({e.step_id, e.attempt})) continue;
    auto data = nlohmann::json::parse(e.data_json, nullptr, false);
    if (!data.is_object()) continue;
    data["step"] = e.step_id;
    data["attempt"] = e.attempt;
    records.push_back(std::move(data));
  }
  // The journal also has the groups of attempts whose row or attempt_spawned
  // event the dead driver never committed. A line it was cut off writing does
  // not parse and names nothing.
  std::ifstream journal(spawn_journal_path(store.folder(), run_id));
  for (std::string line; std::getline(journal, line);) {
    auto data = nlohmann::json::parse(line, nullptr, false);
    if (!data.is_object() || !data["step"].is_string() || !data["attempt"].is_number_integer()) continue;
    if (finished.contains({data["step"].get<std::string>(), data["attempt"].get<int>()})) continue;
    records.push_back(std::move(data));
  }
  std::vector<RecordedGroup> groups;
  if (records.empty()) return groups;
  const std::string boot = boot_id();
  const std::string namespace_id = pid_namespace();
  const std::int64_t boot_ms = boot_time_ms();
  const long ticks = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
  for (const nlohmann::json& data : records) {
    if (!data["pgid"].is_number_integer() || !data["sid"].is_number_integer()) continue;
    // A group recorded before a reboot, or in another pid namespace (a container
    // sharing the store), is not the group of that number here.
    if (boot.empty() || data.value("boot", "") != boot || data.value("pidns", "") != namespace_id) continue;
    const std::int64_t spawned_ms = data.value("spawned_ms", std::int64_t{0});
    RecordedGroup g;
    g.pgid = data["pgid"].get<pid_t>();
    g.sid = data["sid"].get<pid_t>();
    if (g.pgid <= 1 || spawned_ms <= 0) continue;
    // Members must have started after the attempt did: its row's start when
    // there is one, else the group's own.
    auto it = running.find({data["step"].get<std::string>(), data["attempt"].get<int>()});
    g.not_before_ms = (it != running.end() ? std::min(it->second, spawned_ms) : spawned_ms) - kStartSlackMs;
    // A process with the group's number that started at another time than the
    // attempt's process is a new one that took the number: its group, if it leads
    // one, is not the attempt's.
    if (auto leader = proc_stat(g.pgid, boot_ms, ticks);
        leader && std::llabs(leader->started_ms - spawned_ms) > kStartSlackMs)
      continue;
    groups.push_back(g);
  }
  return groups;
}
}  // namespace

nlohmann::json process_group_record(int pgid, std::int64_t spawned_ms) {
  static const int session = static_cast<int>(getsid(0));
  static const std::string boot = boot_id();
  static const std::string namespace_id = pid_namespace();
  return {
      {"pgid", pgid}, {"sid", session}, {"boot", boot}, {"pidns", namespace_id}, {"spawned_ms", spawned_ms}};
}

std::filesystem::path spawn_journal_path(const std::filesystem::path& store_folder,
                                         const std::string& run_id) {
  return store_folder / "runs" / run_id / "spawned";
}

void discard_spawn_journal(const std::filesystem::path& store_folder, const std::string& run_id) {
  std::error_code ec;  // only space: a leftover is harmless
  std::filesystem::remove(spawn_journal_path(store_folder, run_id), ec);
}

void SpawnJournal::set_path(const std::filesystem::path& path) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  size_ = 0;
  path_ = path;
  // What every line has alike, written out once: the process_group_record fields
  // but the group and its start (read now, not as the first process starts).
  nlohmann::json same = process_group_record(0, 0);
  same.erase("pgid");
  same.erase("spawned_ms");
  same_fields_ = json_text(same);
  same_fields_ = same_fields_.substr(1, same_fields_.size() - 2);  // without its braces
}

Expected<void> SpawnJournal::record(const std::string& step_id, int attempt, int pgid,
                                    std::int64_t spawned_ms) {
  if (path_.empty()) return {};
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0)
      return fail(ErrorCode::Io, fmt::format("cannot open {}: {}", path_.string(), std::strerror(errno)));
    size_ = std::max<off_t>(0, ::lseek(fd_, 0, SEEK_END));
  }
  // One write of the whole line: O_APPEND puts it at the end in one piece. (On
  // the path of every spawn: formatted directly, not built as a JSON value.)
  const std::string line =
      fmt::format("{{\"step\":{},\"attempt\":{},\"pgid\":{},\"spawned_ms\":{},{}}}\n",
                  json_text(nlohmann::json(step_id)), attempt, pgid, spawned_ms, same_fields_);
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    const int err = n < 0 ? errno : 0;
    (void)::ftruncate(fd_, size_);  // no half line for the next one to be glued to
    return fail(ErrorCode::Io, fmt::format("cannot write {}: {}", path_.string(),
                                           err != 0 ? std::strerror(err) : "short write"));
  }
  size_ += n;
  return {};
}

void SpawnJournal::clear() {
  // Emptied only once it has grown (a truncation on every turn cost the spawn
  // benchmark more than the lines do): a resume reads at most that much.
  if (fd_ < 0 || size_ < kClearAbove) return;
  // A journal that cannot be emptied only grows: what it holds stays true.
  if (::ftruncate(fd_, 0) == 0) size_ = 0;
}

SpawnJournal::~SpawnJournal() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
// Kills every process (but orch) that `ours` picks, and their process groups
// (never orch's own); returns how many processes were killed.
int kill_processes(const std::function<bool(pid_t)>& ours) {
  const pid_t self = getpid();
  const pid_t own_group = getpgrp();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  std::set<pid_t> kill_groups;
  int killed = 0;
  while (dirent* d = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (end == d->d_name || *end != '\0' || pid <= 0 || pid == self) continue;
    const auto p = static_cast<pid_t>(pid);
    if (!ours(p)) continue;
    const pid_t group = getpgid(p);
    if (group > 0 && group != own_group) kill_groups.insert(group);
    if (kill(p, SIGKILL) == 0) ++killed;
  }
  closedir(proc);
  for (pid_t g : kill_groups) kill(-g, SIGKILL);
  return killed;
}
}  // namespace

int kill_attempt_leftovers(const std::string& run_id, const std::string& step_id, int attempt) {
  const std::string run = "ORCH_RUN_ID=" + run_id, step = "ORCH_STEP_ID=" + step_id,
                    number = "ORCH_ATTEMPT=" + std::to_string(attempt);
  return kill_processes(
      [&](pid_t p) { return environ_has(p, run) && environ_has(p, step) && environ_has(p, number); });
}

Expected<int> kill_orphans(Store* store, const std::string& run_id) {
  const std::vector<RecordedGroup> groups =
      store != nullptr ? ORCH_TRY(recorded_groups(*store, run_id)) : std::vector<RecordedGroup>{};
  const std::string entry = "ORCH_RUN_ID=" + run_id;
  const pid_t own_group = getpgrp();
  const std::int64_t boot_ms = groups.empty() ? 0 : boot_time_ms();
  const long ticks = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
  return kill_processes([&](pid_t pid) {
    if (environ_has(pid, entry)) return true;
    if (groups.empty() || boot_ms <= 0) return false;
    const auto st = proc_stat(pid, boot_ms, ticks);
    if (!st) return false;
    for (const RecordedGroup& g : groups)
      if (st->pgrp == g.pgid && g.pgid != own_group && st->session == g.sid &&
          st->started_ms >= g.not_before_ms)
        return true;
    return false;
  });
}

namespace {
// The last `n` bytes of the file at `path` and its size, or nothing when it
// cannot be read (an attempt that printed nothing has no file).
struct FileTail {
  std::int64_t size = 0;
  std::string tail;
};
std::optional<FileTail> read_file_tail(const std::string& path, std::size_t n) {
  if (path.empty()) return std::nullopt;
  // read(2), not a stream: a read error is a missing tail, never an exception.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Fd closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  FileTail t;
  t.size = static_cast<std::int64_t>(st.st_size);
  const std::int64_t from = std::max<std::int64_t>(0, t.size - static_cast<std::int64_t>(n));
  t.tail.resize(static_cast<std::size_t>(t.size - from));
  std::size_t got = 0;
  while (got < t.tail.size()) {
    const ssize_t r = ::pread(fd, t.tail.data() + got, t.tail.size() - got, static_cast<off_t>(from) + got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  t.tail.resize(got);
  return t;
}

// What an attempt cut off by its process's death had written: its streams'
// files hold it (masked as written), the row does not. The sizes are what the
// files hold, which is what the process said unless it outgrew the cap; the tail
// is stdout's then stderr's, their interleaving being lost with the process.
void record_output_so_far(AttemptRecord& a) {
  OutputTail tail;
  if (auto out = read_file_tail(a.stdout_path, OutputTail::kDefaultSize)) {
    a.stdout_bytes = out->size;
    tail.append(out->tail);
  }
  if (auto err = read_file_tail(a.stderr_path, OutputTail::kDefaultSize)) {
    a.stderr_bytes = err->size;
    tail.append(err->tail);
  }
  a.output_tail = tail.text();
}

// Charges `a` what its usage file reports; a report that cannot be read or
// cannot be real is not charged, and the attempt's reason says why.
void charge_usage_file(const Store& store, AttemptRecord& a) {
  auto usage = read_usage_file(usage_file(store.folder(), a.run_id, a.step_id, a.number));
  std::string not_charged;
  if (!usage) {
    not_charged = usage.error().message;
  } else if (*usage) {
    const UsageReport& u = **usage;
    if (auto why = impossible_spend(u.tokens_in, u.tokens_out, u.cost_usd)) {
      not_charged = *why;
    } else {
      a.tokens_in = u.tokens_in;
      a.tokens_out = u.tokens_out;
      a.cost_usd = u.cost_usd;
    }
  }
  if (!not_charged.empty()) a.reason += "; usage not charged: " + not_charged;
}
}  // namespace

Expected<ClosedAttempts> close_interrupted_attempts(Store& store, const std::string& run_id,
                                                    std::int64_t now_ms, std::int64_t last_alive_ms) {
  ClosedAttempts closed;
  for (AttemptRecord a : ORCH_TRY(store.attempts(run_id))) {
    if (a.status != AttemptStatus::Running) continue;
    a.status = AttemptStatus::Interrupted;
    a.counted = false;
    a.ending = AttemptEnding::Interrupted;
    a.reason = "interrupted: the orch process driving it stopped";
    a.finished_at = now_ms;
    a.duration_ms = std::max<std::int64_t>(0, std::min(last_alive_ms, now_ms) - a.started_at);
    record_output_so_far(a);
    charge_usage_file(store, a);
    ORCH_TRY(store.finish_attempt(a));
    nlohmann::json data = nlohmann::json::object();
    if (!a.snapshot_dir.empty()) {
      // The snapshot was complete before the attempt started (the row names it
      // only then), and one put back is removed only after the transaction that
      // closes its attempt commits: one gone or damaged now was lost, and what
      // the attempt changed cannot be put back.
      auto r = snapshot_put_back(a.snapshot_dir) ? Expected<void>{} : restore_snapshot(a.snapshot_dir);
      if (r) {
        data["writes"] = "restored";
        closed.spent_snapshots.emplace_back(a.snapshot_dir);
      } else {
        data["writes"] = "not restored";
        const std::string& why = r.error().message;
        EventRecord failed{0,
                           run_id,
                           now_ms,
                           "restore_failed",
                           a.step_id,
                           a.number,
                           json_text(nlohmann::json{{"error", why}})};
        ORCH_TRY(store.append_event(failed));
        closed.unrestored[a.step_id] =
            r.error().code == ErrorCode::NotFound
                ? fmt::format("its writes could not be put back: their snapshot, {}, is gone", a.snapshot_dir)
                : fmt::format("its writes could not be put back: {}; the snapshot is kept in {}", why,
                              a.snapshot_dir);
      }
    }
    if (a.tokens_in + a.tokens_out > 0 || a.cost_usd > 0) {
      data["tokens"] = a.tokens_in + a.tokens_out;
      data["cost_usd"] = a.cost_usd;
    }
    EventRecord e{0, run_id, now_ms, "attempt_interrupted", a.step_id, a.number, json_text(data)};
    ORCH_TRY(store.append_event(e));
    closed.attempts.push_back(std::move(a));
  }
  return closed;
}

void remove_spent_snapshots(const ClosedAttempts& closed) {
  for (const auto& dir : closed.spent_snapshots) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

void charge_step(StepRecord& step, const std::vector<AttemptRecord>& closed) {
  for (const AttemptRecord& a : closed) {
    if (a.step_id != step.step_id) continue;
    step.tokens_in += a.tokens_in;
    step.tokens_out += a.tokens_out;
    step.cost_usd += a.cost_usd;
    step.wall_ms += a.duration_ms;
  }
}

}  // namespace orch
