// SPDX-License-Identifier: Apache-2.0
// bench_teardown: how long `pmon run --timeout T` takes from the deadline to
// a boundary confirmed empty, for trees of sleeping processes and for a
// bounded fork storm, per backend and --grace.
//
// Each trial starts `pmon run --confine B --timeout T --grace G --report F --
// bench_tree MODE N READY` and waits for the tree to say it is complete
// (T is chosen, and doubled if need be, so that it is complete well before
// the deadline). Times come from pmon's own report, whose clock starts where
// the deadline is measured from, so "at" columns are ms after the deadline:
//   term   stop.signal_sent_ms - T   (the first signal went out)
//   kill   stop.kill_sent_ms - T     (SIGKILL / cgroup.kill went out)
//   empty  stop.empty_confirmed_ms - T  (the boundary was verified empty)
//   done   duration_ms - T           (run_call returned)
//   exit   pmon reaped by us, measured here from before its exec (so it
//          includes pmon's start-up: an upper bound)
// "converged" means exit 124, cleanup verified, and nothing of the trial
// still alive afterwards. Every trial runs inside a scratch cgroup of this
// benchmark's own, which is emptied with cgroup.kill after the trial and
// removed at the end, so a failed stop never leaves anything behind.
//
//   bench_teardown [--pmon PATH] [--tree PATH] [--reps N] [--sizes 10,100,1000]
//                  [--backends cgroup,subreaper,pgroup] [--storm-cap N] [--storm-budget N]
//                  [--no-storm] [--no-raw]
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "confine/cgroup_fs.h"

namespace {

std::string g_pmon, g_tree, g_tmp;

// A cgroup of the benchmark's own: every trial runs in it, and cgroup.kill
// on it is the safety net that removes whatever a trial left.
struct Scratch {
  std::string path;
  int events = -1;

  bool open() {
    auto loc = pmon::confine::locate_cgroup2();
    if (!loc) return false;
    path = loc->own_path + "/pmon-bench-" + std::to_string(::getpid());
    if (::mkdir(path.c_str(), 0755) != 0) {
      path.clear();
      return false;
    }
    events = ::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    return events >= 0;
  }

  bool populated() const {
    char buf[256];
    ssize_t n = ::pread(events, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = '\0';
    const char* p = std::strstr(buf, "populated ");
    return p && p[10] == '1';
  }

  // Live processes anywhere below the scratch cgroup.
  int live_count() const { return count_in(path); }
  static int count_in(const std::string& dir) {
    int n = 0;
    std::ifstream in(dir + "/cgroup.procs");
    for (int pid; in >> pid;) {
      std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
      std::string line;
      std::getline(st, line);
      size_t close = line.rfind(')');
      if (close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z') ++n;
    }
    for (const std::string& sub : subdirs(dir)) n += count_in(dir + "/" + sub);
    return n;
  }
  static std::vector<std::string> subdirs(const std::string& dir) {
    std::vector<std::string> out;
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return out;
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      return out;
    }
    while (dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.') out.push_back(e->d_name);
    ::closedir(d);
    return out;
  }

  // Kills everything left in the scratch cgroup and waits until it is empty.
  void sweep() const {
    if (path.empty() || !populated()) return;
    int fd = ::open((path + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)!::write(fd, "1", 1);
      ::close(fd);
    }
    for (int i = 0; i < 100 && populated(); ++i) {
      pollfd p{events, POLLPRI, 0};
      (void)::poll(&p, 1, 100);
    }
  }

  void remove_dir(const std::string& dir) const {
    for (const std::string& sub : subdirs(dir)) remove_dir(dir + "/" + sub);
    for (int i = 0; i < 100; ++i) {
      if (::rmdir(dir.c_str()) == 0 || errno != EBUSY) return;
      ::usleep(10'000);
    }
  }

  void close() {
    if (path.empty()) return;
    sweep();
    ::close(events);
    remove_dir(path);
    path.clear();
  }
};

Scratch g_scratch;

struct Workload {
  std::string label;  // "sleep 1000"
  std::string mode;   // bench_tree mode
  int n = 0;
  std::string grace;
  int timeout_ms = 0;
  std::string extra;  // a further bench_tree argument (the storm's budget)
  int first_timeout_ms = 0;
};

struct Trial {
  bool valid = false;       // the tree was complete before the deadline
  bool converged = false;
  int exit_code = -1;
  int left = 0;             // live processes of the trial after pmon exited
  double ready_ms = 0;      // since spawn
  std::optional<double> term, kill, empty, done;
  double exit = 0;
  std::string ready_line;
  std::string err;
};

std::optional<double> num(const nlohmann::json& j, const char* a, const char* b = nullptr) {
  const nlohmann::json* p = &j;
  if (!p->contains(a)) return std::nullopt;
  p = &(*p)[a];
  if (b) {
    if (!p->is_object() || !p->contains(b)) return std::nullopt;
    p = &(*p)[b];
  }
  if (!p->is_number()) return std::nullopt;
  return p->get<double>();
}

std::string read_text(const std::string& path, size_t max = 4096) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > max) s.resize(max);
  return s;
}

Trial run_trial(const std::string& backend, const Workload& w, int ready_fd) {
  Trial t;
  std::string report = g_tmp + "/report.json", errlog = g_tmp + "/stderr";
  std::string fifo = g_tmp + "/ready";
  (void)::unlink(report.c_str());
  char junk[512];
  while (::read(ready_fd, junk, sizeof junk) > 0) {
  }
  std::vector<std::string> av{g_pmon, "run", "--confine", backend,
                              "--timeout", std::to_string(w.timeout_ms) + "ms",
                              "--grace", w.grace, "--report", report, "-q", "--",
                              g_tree, w.mode, std::to_string(w.n), fifo};
  if (!w.extra.empty()) av.push_back(w.extra);
  std::vector<char*> argv;
  for (std::string& s : av) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string procs = g_scratch.path.empty() ? "" : g_scratch.path + "/cgroup.procs";

  int64_t t0 = bench::now_ns();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!procs.empty()) {
      int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(120);
      ::close(fd);
    }
    int null = ::open("/dev/null", O_RDWR);
    int err = ::open(errlog.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    t.err = "fork failed";
    return t;
  }
  // The tree says it is complete; pmon exiting first is a failed trial.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  for (;;) {
    pollfd p[2] = {{ready_fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int n = ::poll(p, 2, 60'000);
    if (n <= 0 || (p[1].revents & POLLIN)) break;
    if (p[0].revents & POLLIN) {
      t.ready_ms = static_cast<double>(bench::now_ns() - t0) / 1e6;
      ssize_t r = ::read(ready_fd, junk, sizeof junk - 1);
      if (r > 0) t.ready_line.assign(junk, static_cast<size_t>(r));
      while (!t.ready_line.empty() && t.ready_line.back() == '\n') t.ready_line.pop_back();
      break;
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  t.exit = static_cast<double>(bench::now_ns() - t0) / 1e6 - w.timeout_ms;
  ::close(pidfd);
  t.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  // Anything of the trial still alive once pmon is gone is a leak.
  if (!g_scratch.path.empty()) {
    t.left = g_scratch.live_count();
    g_scratch.sweep();
  }

  // The deadline fired before the tree was complete: not a measurement.
  t.valid = !t.ready_line.empty() && t.ready_line.rfind("ready", 0) == 0 &&
            t.ready_ms + 30 < w.timeout_ms;
  std::string text = read_text(report, 1 << 20);
  if (text.empty()) {
    t.err = "no report; pmon said: " + read_text(errlog, 300);
    return t;
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    t.err = "unparsable report";
    return t;
  }
  auto rel = [&](std::optional<double> v) -> std::optional<double> {
    if (!v) return v;
    return *v - w.timeout_ms;
  };
  t.term = rel(num(j, "stop", "signal_sent_ms"));
  t.kill = rel(num(j, "stop", "kill_sent_ms"));
  t.empty = rel(num(j, "stop", "empty_confirmed_ms"));
  t.done = rel(num(j, "duration_ms"));
  bool verified = j.value("cleanup_verified", false);
  t.converged = t.exit_code == 124 && verified && t.left == 0;
  if (!t.converged)
    t.err = "exit " + std::to_string(t.exit_code) + (verified ? "" : ", not verified") +
            ", " + std::to_string(t.left) + " left; pmon said: " + read_text(errlog, 300);
  return t;
}

// The floor, measured beside pmon: this benchmark itself starts the tree in
// a cgroup of its own and, at the deadline, writes cgroup.kill and polls
// cgroup.events until it reads "populated 0". No pmon, no /proc reads.
Trial run_raw(const Workload& w, int ready_fd) {
  Trial t;
  std::string dir = g_scratch.path + "/raw";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    t.err = "cannot create " + dir;
    return t;
  }
  int events = ::open((dir + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
  std::string fifo = g_tmp + "/ready";
  char junk[512];
  while (::read(ready_fd, junk, sizeof junk) > 0) {
  }
  std::vector<std::string> av{g_tree, w.mode, std::to_string(w.n), fifo};
  if (!w.extra.empty()) av.push_back(w.extra);
  std::vector<char*> argv;
  for (std::string& s : av) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string procs = dir + "/cgroup.procs";
  int64_t t0 = bench::now_ns();
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(120);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int64_t deadline = t0 + int64_t{w.timeout_ms} * 1'000'000;
  pollfd p{ready_fd, POLLIN, 0};
  if (pid > 0 && ::poll(&p, 1, 60'000) == 1) {
    t.ready_ms = static_cast<double>(bench::now_ns() - t0) / 1e6;
    ssize_t r = ::read(ready_fd, junk, sizeof junk - 1);
    if (r > 0) t.ready_line.assign(junk, static_cast<size_t>(r));
  }
  int64_t now = bench::now_ns();
  if (now < deadline) {
    timespec ts{static_cast<time_t>((deadline - now) / 1'000'000'000),
                static_cast<long>((deadline - now) % 1'000'000'000)};
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  int64_t td = bench::now_ns();
  int kfd = ::open((dir + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
  bool killed = kfd >= 0 && ::write(kfd, "1", 1) == 1;
  if (kfd >= 0) ::close(kfd);
  int64_t tk = bench::now_ns();
  auto populated = [&] {
    char buf[256];
    ssize_t n = ::pread(events, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = '\0';
    const char* q = std::strstr(buf, "populated ");
    return q && q[10] == '1';
  };
  bool empty = false;
  for (int i = 0; i < 1000; ++i) {
    if (!populated()) {
      empty = true;
      break;
    }
    pollfd e{events, POLLPRI, 0};
    (void)::poll(&e, 1, 10);
  }
  int64_t te = bench::now_ns();
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(events);
  t.kill = static_cast<double>(tk - td) / 1e6;
  t.empty = static_cast<double>(te - td) / 1e6;
  t.exit = static_cast<double>(bench::now_ns() - td) / 1e6;
  t.left = Scratch::count_in(dir);
  g_scratch.sweep();
  t.valid = t.ready_line.rfind("ready", 0) == 0 && t.ready_ms + 30 < w.timeout_ms;
  while (!t.ready_line.empty() && t.ready_line.back() == '\n') t.ready_line.pop_back();
  t.converged = killed && empty && t.left == 0;
  if (!t.converged) t.err = "raw cgroup.kill did not empty the cgroup";
  return t;
}

std::string cell(const std::vector<double>& v, bool with_max = false) {
  if (v.empty()) return "-";
  bench::Stats s = bench::stats_of(v);
  char buf[64];
  if (with_max) std::snprintf(buf, sizeof buf, "%.1f/%.1f", s.median, s.max);
  else std::snprintf(buf, sizeof buf, "%.1f", s.median);
  return buf;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

void usage() {
  std::fputs("usage: bench_teardown [--pmon PATH] [--tree PATH] [--reps N] [--sizes 10,100,1000]\n"
             "                      [--backends cgroup,subreaper,pgroup] [--storm-cap N]\n"
             "                      [--storm-budget N] [--no-storm] [--no-raw]\n",
             stderr);
  std::exit(2);
}

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

}  // namespace

int main(int argc, char** argv) {
  g_pmon = bench::self_dir() + "/../pmon";
  g_tree = bench::self_dir() + "/bench_tree";
  int reps = 5, storm_cap = 32;
  long storm_budget = 10000;
  bool with_storm = true, with_raw = true;
  std::vector<std::string> sizes{"10", "100", "1000"};
  std::vector<std::string> backends{"cgroup", "subreaper", "pgroup"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-storm" || a == "--no-raw") {
      (a == "--no-storm" ? with_storm : with_raw) = false;
      continue;
    }
    if (i + 1 >= argc) usage();
    if (a == "--pmon") g_pmon = argv[++i];
    else if (a == "--tree") g_tree = argv[++i];
    else if (a == "--reps") reps = std::atoi(argv[++i]);
    else if (a == "--sizes") sizes = split(argv[++i]);
    else if (a == "--backends") backends = split(argv[++i]);
    else if (a == "--storm-cap") storm_cap = std::atoi(argv[++i]);
    else if (a == "--storm-budget") storm_budget = std::atol(argv[++i]);
    else usage();
  }
  if (reps < 1) usage();

  // Ctrl-C finishes the current trial and cleans up instead of leaving it.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  char tmpl[] = "/tmp/pmon-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  g_tmp = tmpl;
  std::string fifo = g_tmp + "/ready";
  if (::mkfifo(fifo.c_str(), 0600) != 0) {
    std::perror("mkfifo");
    return 1;
  }
  // Read-write, so the FIFO always has a reader and the tree's open never blocks.
  int ready_fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (!g_scratch.open())
    std::printf("warning: no scratch cgroup (%s); leftovers cannot be counted or swept\n",
                std::strerror(errno));

  std::vector<Workload> loads;
  for (const std::string& s : sizes) {
    int n = std::atoi(s.c_str());
    // A first guess at the deadline; doubled if the tree is not complete
    // 30 ms before it.
    int t = 100 + n / 2;
    loads.push_back({"sleep " + s, "sleep", n, "2s", t, "", 0});
    loads.push_back({"sleep " + s, "sleep", n, "0", t, "", 0});
    loads.push_back({"ignore-TERM " + s, "ignore-term", n, "0", t, "", 0});
  }
  if (with_storm) {
    // Bounded: at most storm_cap live and storm_budget forks in all (about
    // a second of storm here); the deadline falls while it rages.
    std::string label = "storm " + std::to_string(storm_cap);
    std::string budget = std::to_string(storm_budget);
    loads.push_back({label, "storm", storm_cap, "0", 120, budget, 0});
    loads.push_back({label, "storm", storm_cap, "2s", 120, budget, 0});
  }

  for (Workload& w : loads) w.first_timeout_ms = w.timeout_ms;

  std::string load0 = bench::loadavg();
  struct Row {
    std::string workload, backend, grace;
    int timeout_ms;
    std::vector<Trial> trials;
  };
  std::vector<Row> rows;
  int total_failed = 0;
  for (Workload& w : loads) {
    std::vector<std::string> bs = backends;
    // The baseline once per workload; --grace means nothing to it.
    if (with_raw && !g_scratch.path.empty() && w.grace == "0") bs.insert(bs.begin(), "raw-kill");
    for (const std::string& b : bs) {
      Row row{w.label, b, b == "raw-kill" ? "-" : w.grace, 0, {}};
      for (int r = 0; r < reps && !g_interrupted; ++r) {
        Trial t;
        for (int attempt = 0; attempt < 3 && !g_interrupted; ++attempt) {
          t = b == "raw-kill" ? run_raw(w, ready_fd) : run_trial(b, w, ready_fd);
          if (t.valid) break;
          // The tree was not complete in time (a loaded machine): a later
          // deadline, within reason (the storm's budget runs out).
          if (w.timeout_ms < w.first_timeout_ms * 8) w.timeout_ms *= 2;
        }
        if (!t.converged) {
          ++total_failed;
          std::fprintf(stderr, "  %s %s grace %s: %s\n", w.label.c_str(), b.c_str(),
                       w.grace.c_str(), t.err.c_str());
        }
        row.trials.push_back(t);
      }
      row.timeout_ms = w.timeout_ms;
      rows.push_back(std::move(row));
    }
  }
  std::string load1 = bench::loadavg();

  std::printf("\nteardown after --timeout: ms after the deadline, median (empty: median/max) "
              "over %d runs; loadavg %s -> %s\n\n", reps, load0.c_str(), load1.c_str());
  std::printf("%-16s %-9s %5s %7s %7s %7s %13s %7s %7s %9s\n", "workload", "backend", "grace",
              "T ms", "term", "kill", "empty", "done", "exit", "converged");
  for (const Row& row : rows) {
    std::vector<double> term, kill, empty, done, exit;
    int conv = 0, valid = 0;
    for (const Trial& t : row.trials) {
      if (!t.valid) continue;
      ++valid;
      if (t.converged) ++conv;
      if (t.term) term.push_back(*t.term);
      if (t.kill) kill.push_back(*t.kill);
      if (t.empty) empty.push_back(*t.empty);
      if (t.done) done.push_back(*t.done);
      exit.push_back(t.exit);
    }
    char c[32];
    std::snprintf(c, sizeof c, "%d/%d", conv, static_cast<int>(row.trials.size()));
    if (valid < static_cast<int>(row.trials.size()))
      std::snprintf(c + std::strlen(c), sizeof c - std::strlen(c), " (%d late)",
                    static_cast<int>(row.trials.size()) - valid);
    std::printf("%-16s %-9s %5s %7d %7s %7s %13s %7s %7s %9s\n", row.workload.c_str(),
                row.backend.c_str(), row.grace.c_str(), row.timeout_ms, cell(term).c_str(),
                cell(kill).c_str(), cell(empty, true).c_str(), cell(done).c_str(),
                cell(exit).c_str(), c);
  }
  std::printf("\ntargets: 1000 sleeping processes confirmed empty <= 20 ms after the deadline; "
              "the storm always converges\n");
  if (total_failed > 0) std::printf("%d trial(s) did not converge (details on stderr)\n", total_failed);

  ::close(ready_fd);
  g_scratch.close();
  (void)::unlink(fifo.c_str());
  (void)::unlink((g_tmp + "/report.json").c_str());
  (void)::unlink((g_tmp + "/stderr").c_str());
  (void)::rmdir(g_tmp.c_str());
  return total_failed == 0 ? 0 : 1;
}
