// SPDX-License-Identifier: Apache-2.0
// Job start through `pmon serve`, driven by a compiled client (as a harness
// written in Rust or C++ would drive it): a /bin/true job created, waited
// for, reported and released over the socket, each request sent after the
// answer to the one before and every answer parsed; the same job with its
// end learned from the terminal/exited notification and report and release
// sent together; against `pmon run -q -- /bin/true` started per call with
// posix_spawn + waitpid, and against bare /bin/true (what any start of
// the command costs here, so a bound no service could pass). Beside them,
// the floor of a service: a minimal one in this program, on the same kind
// of socket, that reads and parses each request, starts /bin/true in a
// cgroup leaf (one leaf, reused, as pmon's pool of leaves is; pmon's own
// vfork-style clone3 with CLONE_INTO_CGROUP), waits for it, reads the
// leaf's cgroup.events once to see it empty, and answers; nothing else (no
// output pipe, no records, no report, no stop, no crash guard): the best
// ratio a confined service answering these requests could reach here.
// --alt PATH adds both ways against a service run from another pmon
// binary (a prototype build), in the same run. Beside the times, each
// service's own CPU time and context switches a call (from /proc). Batches
// of each alternate in one run, the first of a round rotating, so load and
// whatever one way leaves behind hit all of them alike. Prints a table;
// asserts nothing.
//
// usage: bench_serve_start [--pmon PATH] [--alt PATH] [--calls N] [--batch N]
#include <dirent.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.h"
#include "sys/clone_spawn.h"

extern char** environ;

namespace {

using Json = nlohmann::json;

// The services we started: a bench that fails stops them on its way out,
// and removes the floor service's cgroup leaf.
std::vector<pid_t> g_services;
std::string g_floor_leaf;
std::vector<std::string> g_dirs;  // scratch directories, each with at most a socket

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_serve_start: %s\n", what.c_str());
  for (pid_t p : g_services) {
    ::kill(p, SIGTERM);
    (void)::waitpid(p, nullptr, 0);
  }
  if (!g_floor_leaf.empty()) (void)::rmdir(g_floor_leaf.c_str());
  for (const std::string& d : g_dirs) {
    (void)::unlink((d + "/s.sock").c_str());
    (void)::rmdir(d.c_str());
  }
  std::exit(1);
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int e = ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (e != 0) die("cannot start " + args[0] + ": " + std::strerror(e));
  return pid;
}

int reap(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) die(std::string("waitpid: ") + std::strerror(errno));
  return st;
}

// One JSON-RPC connection: a request per line, answers read up to the one
// with our id (terminal/exited notifications on the way are kept by
// terminal, until asked for; other notifications are dropped).
class Client {
 public:
  explicit Client(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      die("cannot connect to " + path + ": " + std::strerror(errno));
  }
  ~Client() { ::close(fd_); }

  Json call(const char* method, Json params) {
    queue(method, std::move(params));
    return answer(flush());
  }

  // Requests queued, then sent in one write: the id of the last.
  int64_t queue(const char* method, Json params) {
    out_ += Json{{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", std::move(params)}}.dump();
    out_ += '\n';
    return id_;
  }
  int64_t flush() {
    for (size_t off = 0; off < out_.size();) {
      ssize_t n = ::write(fd_, out_.data() + off, out_.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) die(std::string("write to the service: ") + std::strerror(errno));
      off += static_cast<size_t>(n);
    }
    out_.clear();
    return id_;
  }

  // The answer to request `id` (answers to earlier ones are read past).
  Json answer(int64_t id) {
    for (;;) {
      Json m = Json::parse(next_line());
      if (m.contains("id") && m["id"] == id) {
        if (m.contains("error")) die("request " + std::to_string(id) + ": " + m["error"].dump());
        return std::move(m["result"]);
      }
      keep(std::move(m));
    }
  }

  // The terminal/exited notification of `tid`, come already or to come.
  Json exited(const std::string& tid) {
    for (;;) {
      if (auto it = exited_.find(tid); it != exited_.end()) {
        Json n = std::move(it->second);
        exited_.erase(it);
        return n;
      }
      keep(Json::parse(next_line()));
    }
  }

 private:
  void keep(Json m) {
    if (m.value("method", "") != "terminal/exited") return;
    std::string tid = m["params"]["terminalId"];
    exited_[tid] = std::move(m["params"]);
  }

  std::string next_line() {
    for (;;) {
      size_t nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        std::string line = buf_.substr(pos_, nl - pos_);
        pos_ = nl + 1;
        if (pos_ == buf_.size()) buf_.clear(), pos_ = 0;
        return line;
      }
      char tmp[65536];
      ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) die("the service closed the connection");
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  int fd_ = -1;
  int64_t id_ = 0;
  std::map<std::string, Json> exited_;
  std::string out_;
  std::string buf_;
  size_t pos_ = 0;
};

// A service's own cost: the CPU time and context switches of its threads
// and of the helper processes it keeps (its crash guard), read from /proc
// before and after each batch. No job of a batch outlives it, so then the
// service's children are its helpers.
struct Usage {
  double cpu_ns = 0;
  double voluntary = 0, involuntary = 0;
};

void add_task_usage(const std::string& task_dir, Usage& u) {
  std::ifstream sched(task_dir + "/schedstat");
  double run_ns = 0;
  if (sched >> run_ns) u.cpu_ns += run_ns;
  std::ifstream status(task_dir + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("voluntary_ctxt_switches:")) u.voluntary += std::stod(line.substr(24));
    if (line.starts_with("nonvoluntary_ctxt_switches:")) u.involuntary += std::stod(line.substr(27));
  }
}

void add_process_usage(pid_t pid, Usage& u) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') add_task_usage(dir + "/" + e->d_name, u);
  ::closedir(d);
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (pid_t c; f >> c;) out.push_back(c);
  return out;
}

struct UsageProbe {
  pid_t pid = -1;
  explicit UsageProbe(pid_t p) : pid(p) {}
  Usage now() const {
    Usage u;
    add_process_usage(pid, u);
    for (pid_t h : children_of(pid)) add_process_usage(h, u);
    return u;
  }
};

struct Way {
  std::string name;
  std::function<void()> once;
  const UsageProbe* service = nullptr;  // the service a call of this way goes to, if any
  std::vector<double> us;                // one per call
  double total_us = 0;
  Usage cost;  // the service's, summed over this way's batches
};

// A scratch directory for a service's socket: removed with the object
// (the service's own destructor has run by then), or by die().
struct ScratchSocket {
  std::string dir, sock;
  ScratchSocket() {
    char tmpl[] = "/tmp/pmon-bench-serve.XXXXXX";
    if (!::mkdtemp(tmpl)) die(std::string("mkdtemp: ") + std::strerror(errno));
    dir = tmpl;
    g_dirs.push_back(dir);
    sock = dir + "/s.sock";
  }
  ~ScratchSocket() {
    ::unlink(sock.c_str());
    ::rmdir(dir.c_str());
    std::erase(g_dirs, dir);
  }
  ScratchSocket(const ScratchSocket&) = delete;
  ScratchSocket& operator=(const ScratchSocket&) = delete;
};

// A `pmon serve` of ours on a socket in a scratch directory, and a client.
struct Service {
  ScratchSocket scratch;
  const std::string& sock = scratch.sock;
  pid_t pid = -1;
  std::unique_ptr<Client> client;

  explicit Service(const std::string& pmon) {
    pid = spawn({pmon, "serve", "-q", "--listen", sock});
    g_services.push_back(pid);
    struct stat st;
    for (int i = 0; ::stat(sock.c_str(), &st) != 0; ++i) {
      if (i > 1000 || ::waitpid(pid, nullptr, WNOHANG) == pid) die("the service " + pmon + " did not start");
      ::usleep(10'000);
    }
    client = std::make_unique<Client>(sock);
  }
  ~Service() {
    client.reset();
    ::kill(pid, SIGTERM);
    (void)reap(pid);
    std::erase(g_services, pid);
  }
};

// The floor of a service: one client, blocking, on a socket in a scratch
// directory. terminal/create starts /bin/true into the leaf (pmon's own
// vfork-style clone3), answers with its id, waits for its end, reads the
// leaf's cgroup.events and sends terminal/exited; wait_for_exit, report and release are answered from
// what it kept. Requests are parsed as any JSON-RPC service must; answers
// are written as fixed text.
void floor_child(void*) {
  static char true_path[] = "/bin/true";
  char* argv[] = {true_path, nullptr};
  ::execve(argv[0], argv, environ);
  ::_exit(127);
}

void floor_serve(int listen_fd, int leaf_fd, int events_fd) {
  int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) ::_exit(1);
  ::close(listen_fd);
  std::string buf, out;
  std::string tid;
  int status = 0;
  uint64_t n = 0;
  auto send = [&] {
    for (size_t off = 0; off < out.size();) {
      ssize_t w = ::write(fd, out.data() + off, out.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ::_exit(0);
      off += static_cast<size_t>(w);
    }
    out.clear();
  };
  char tmp[65536];
  for (;;) {
    size_t nl;
    while ((nl = buf.find('\n')) == std::string::npos) {
      ssize_t r = ::read(fd, tmp, sizeof tmp);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) ::_exit(0);
      buf.append(tmp, static_cast<size_t>(r));
    }
    Json req = Json::parse(std::string_view(buf).substr(0, nl));
    buf.erase(0, nl + 1);
    const std::string method = req["method"];
    const std::string id = req["id"].dump();
    if (method == "terminal/create") {
      pmon::sys::CloneRequest creq;
      creq.into_cgroup = leaf_fd >= 0;
      creq.cgroup_fd = leaf_fd;
      auto child = pmon::sys::clone3_spawn(creq, floor_child, nullptr);
      if (!child) ::_exit(1);
      const pid_t pid = child->pid;
      tid = "f" + std::to_string(++n);
      out += R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"terminalId":")" + tid + "\"}}\n";
      send();
      while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) ::_exit(1);
      char ev[256];
      ssize_t got = events_fd >= 0 ? ::pread(events_fd, ev, sizeof ev - 1, 0) : 0;
      if (got > 0 && std::string_view(ev, static_cast<size_t>(got)).find("populated 0") == std::string_view::npos)
        ::_exit(1);
      out += R"({"jsonrpc":"2.0","method":"terminal/exited","params":{"terminalId":")" + tid +
            R"(","exitStatus":{"exitCode":)" + std::to_string(WEXITSTATUS(status)) +
            R"(,"signal":null},"cleanupVerified":true}})" + "\n";
      send();
    } else if (method == "terminal/wait_for_exit") {
      out += R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"exitCode":)" + std::to_string(WEXITSTATUS(status)) +
            R"(,"signal":null}})" + "\n";
    } else if (method == "terminal/report") {
      out += R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"cleanup_verified":true}})" + "\n";
    } else {
      out += R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"cleanupVerified":true}})" + "\n";
    }
    // Requests sent together are answered together, as pmon does.
    if (buf.find('\n') == std::string::npos) send();
  }
}

// The floor service, a child of this program, and a client of it.
struct FloorService {
  ScratchSocket scratch;
  const std::string& sock = scratch.sock;
  std::string leaf;
  pid_t pid = -1;
  int leaf_fd = -1, events_fd = -1;
  std::unique_ptr<Client> client;

  // A leaf below our own cgroup, as bench_cgroup_floor makes it; without a
  // cgroup2 we may write in, the floor runs without one and says so.
  void make_leaf() {
    std::string own;
    if (FILE* f = std::fopen("/proc/self/cgroup", "re")) {
      char line[4096];
      while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "0::", 3) == 0) own = std::string(line + 3, std::strcspn(line + 3, "\n"));
      std::fclose(f);
    }
    struct statfs sf;
    std::string mount = "/sys/fs/cgroup/unified";
    if (::statfs(mount.c_str(), &sf) != 0 || sf.f_type != 0x63677270) mount = "/sys/fs/cgroup";
    leaf = mount + (own == "/" ? "" : own) + "/bench-floor-" + std::to_string(::getpid());
    if (own.empty() || ::mkdir(leaf.c_str(), 0755) != 0) {
      std::printf("floor service: no cgroup leaf (%s): its jobs run unconfined\n", std::strerror(errno));
      return;
    }
    g_floor_leaf = leaf;
    leaf_fd = ::open(leaf.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    events_fd = ::open((leaf + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    if (leaf_fd < 0 || events_fd < 0) die("cannot open " + leaf + ": " + std::strerror(errno));
  }

  FloorService() {
    int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", sock.c_str());
    if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0)
      die("the floor service: cannot listen on " + sock + ": " + std::strerror(errno));
    make_leaf();
    std::fflush(nullptr);
    pid = ::fork();
    if (pid < 0) die(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      floor_serve(l, leaf_fd, events_fd);
      ::_exit(0);
    }
    ::close(l);
    g_services.push_back(pid);
    client = std::make_unique<Client>(sock);
  }
  ~FloorService() {
    client.reset();  // the floor service ends when its client closes
    (void)reap(pid);
    std::erase(g_services, pid);
    if (leaf_fd >= 0) ::close(leaf_fd), ::close(events_fd), (void)::rmdir(leaf.c_str()), g_floor_leaf.clear();
  }
};

// One job, each request after the answer to the one before.
void one_after_another(Client& c) {
  std::string tid = c.call("terminal/create", {{"command", "/bin/true"}})["terminalId"];
  Json exit = c.call("terminal/wait_for_exit", {{"terminalId", tid}});
  if (exit["exitCode"] != 0) die("the job did not exit 0: " + exit.dump());
  if (c.exited(tid)["cleanupVerified"] != true) die("the job's exit is not verified");  // (came before the answer)
  Json report = c.call("terminal/report", {{"terminalId", tid}});
  if (report["cleanup_verified"] != true) die("the job's report is not verified: " + report.dump());
  c.call("terminal/release", {{"terminalId", tid}});
}

// One job, its end from the notification, report and release in one write.
void on_notification(Client& c) {
  std::string tid = c.call("terminal/create", {{"command", "/bin/true"}})["terminalId"];
  Json note = c.exited(tid);
  if (note["exitStatus"]["exitCode"] != 0 || note["cleanupVerified"] != true)
    die("the job did not exit 0, verified: " + note.dump());
  int64_t rep = c.queue("terminal/report", {{"terminalId", tid}});
  int64_t rel = c.queue("terminal/release", {{"terminalId", tid}});
  c.flush();
  Json report = c.answer(rep);
  if (report["cleanup_verified"] != true) die("the job's report is not verified: " + report.dump());
  c.answer(rel);
}

}  // namespace

int run(int argc, char** argv) {
  std::string pmon = bench::self_dir() + "/../pmon", alt;
  int calls = 400, batch = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--pmon" && i + 1 < argc) pmon = argv[++i];
    else if (a == "--alt" && i + 1 < argc) alt = argv[++i];
    else if (a == "--calls" && i + 1 < argc) calls = std::atoi(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) batch = std::atoi(argv[++i]);
    else die("usage: bench_serve_start [--pmon PATH] [--alt PATH] [--calls N] [--batch N]");
  }
  if (calls < 1 || batch < 1) die("--calls and --batch must be at least 1");
  ::signal(SIGPIPE, SIG_IGN);

  Service main_service(pmon);
  FloorService floor_service;
  std::unique_ptr<Service> alt_service;
  if (!alt.empty()) alt_service = std::make_unique<Service>(alt);
  Client& c = *main_service.client;
  const UsageProbe main_probe(main_service.pid), floor_probe(floor_service.pid);
  std::unique_ptr<UsageProbe> alt_probe;
  if (alt_service) alt_probe = std::make_unique<UsageProbe>(alt_service->pid);

  std::vector<Way> ways;
  ways.push_back({"serve: create, wait_for_exit, report, release", [&] { one_after_another(c); }, &main_probe, {}, 0, {}});
  ways.push_back({"serve: create; on exited, report+release at once", [&] { on_notification(c); }, &main_probe, {}, 0, {}});
  ways.push_back({"pmon run -q -- /bin/true", [&] {
                    int s = reap(spawn({pmon, "run", "-q", "--", "/bin/true"}));
                    if (!WIFEXITED(s) || WEXITSTATUS(s) != 0) die("pmon run did not exit 0");
                  }, nullptr, {}, 0, {}});
  ways.push_back({"/bin/true alone (no service)", [&] { (void)reap(spawn({"/bin/true"})); }, nullptr, {}, 0, {}});
  ways.push_back({"floor service: one after another", [&] { one_after_another(*floor_service.client); }, &floor_probe, {}, 0, {}});
  ways.push_back({"floor service: on exited", [&] { on_notification(*floor_service.client); }, &floor_probe, {}, 0, {}});
  if (alt_service) {
    ways.push_back({"--alt serve: one after another", [&] { one_after_another(*alt_service->client); }, alt_probe.get(), {}, 0, {}});
    ways.push_back({"--alt serve: on exited", [&] { on_notification(*alt_service->client); }, alt_probe.get(), {}, 0, {}});
  }

  const int rounds = (calls + batch - 1) / batch;
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < ways.size(); ++k) {
      Way& w = ways[(k + static_cast<size_t>(r)) % ways.size()];
      const Usage before = w.service ? w.service->now() : Usage{};
      for (int i = 0; i < batch; ++i) {
        int64_t t0 = bench::now_ns();
        w.once();
        double us = static_cast<double>(bench::now_ns() - t0) / 1e3;
        w.us.push_back(us);
        w.total_us += us;
      }
      if (w.service) {
        const Usage after = w.service->now();
        w.cost.cpu_ns += after.cpu_ns - before.cpu_ns;
        w.cost.voluntary += after.voluntary - before.voluntary;
        w.cost.involuntary += after.involuntary - before.involuntary;
      }
    }

  alt_service.reset();
  const Way& run = ways[2];
  std::printf("job start, %d calls each in batches of %d, load average %s\n", rounds * batch, batch,
              bench::loadavg().c_str());
  std::printf("%-48s %9s %9s %9s %12s\n", "way", "calls/s", "median", "p90", "vs pmon run");
  for (const Way& w : ways) {
    bench::Stats s = bench::stats_of(w.us);
    std::printf("%-48s %9.0f %7.0fus %7.0fus %11.2fx\n", w.name.c_str(), 1e6 * static_cast<double>(s.n) / w.total_us, s.median,
                s.p90, run.total_us / w.total_us);
  }
  // (pmon's service: its thread and its crash guard; the floor has neither
  // guard nor threads)
  std::printf("\nthe service's own cost a call: CPU time and context switches\n");
  std::printf("%-48s %9s %12s %12s\n", "way", "CPU", "voluntary", "involuntary");
  for (const Way& w : ways) {
    if (!w.service) continue;
    const double n = static_cast<double>(std::max<size_t>(w.us.size(), 1));
    std::printf("%-48s %7.0fus %12.2f %12.2f\n", w.name.c_str(), w.cost.cpu_ns / 1e3 / n, w.cost.voluntary / n,
                w.cost.involuntary / n);
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a malformed answer: the services are stopped on the way here
    die(e.what());
  }
}
