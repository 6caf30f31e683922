// SPDX-License-Identifier: Apache-2.0
// escaper OUT [-x exit:N|sleep|wait] SPEC...
//
// The main process of an escape scenario. For every SPEC it creates one
// process shaped as the SPEC says, and every process it creates (itself
// included) appends "pid start_time name" to OUT, so the test can check each
// one by pid AND start time. The main process does its final action (-x) only
// once every process is in its final shape: recorded, signals set up, stopped
// (state T) or a zombie (state Z) where the SPEC asks for it.
//
// SPEC is a comma-separated list:
//   name=X     label in OUT (default p<index>)
//   orphan     made through an intermediate child that exits at once, so the
//              process is reparented (to pmon, a subreaper)
//   setpgid    setpgid(0, 0): a new process group in the same session
//   setsid     setsid(): a new session
//   ignore     SIGTERM, SIGINT, SIGHUP ignored
//   trap       SIGTERM, SIGINT, SIGHUP caught by a handler that carries on
//   block      every blockable signal blocked
//   stop       raise(SIGSTOP) once recorded
//   zombies=N  N children that exit at once and are never waited for
//   kids=N     N plain sleeping children, each recorded as <name>.kid
//   life=MS    exit by itself after MS milliseconds, recording <name>.done
//              just before (default: sleep, up to 10 minutes, a safety net)
//   write=N    keep stdout/stderr (else /dev/null) and write N numbered lines
//              "<name> <i>" plus "<name> END" to each before sleeping
// Exit actions: exit:N (default exit:0) | sleep (until killed) | wait (for the
// direct children).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Spec {
  std::string name;
  bool orphan = false, setpgid = false, setsid = false, ignore = false, trap = false;
  bool block = false, stop = false;
  int zombies = 0, kids = 0, writes = -1;
  long life_ms = -1;
};

const char* g_out = nullptr;
int g_ready_w = -1;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "escaper: %s: %s\n", what, std::strerror(errno));
  _exit(99);
}

std::string stat_field(pid_t pid, int field) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "re");
  if (!f) return {};
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return {};
  p += 2;  // field 3 starts here
  for (int i = 3; i < field; ++i) {
    p = std::strchr(p, ' ');
    if (!p) return {};
    ++p;
  }
  return std::string(p, std::strcspn(p, " "));
}

// The pid the test can check from outside. Under pmon's pidns backend our
// getpid() is a namespace pid; the test then bind-mounts the host's /proc at
// $PMON_TEST_HOSTPROC, whose "self" names us by host pid.
pid_t host_pid() {
  const char* hp = std::getenv("PMON_TEST_HOSTPROC");
  if (hp == nullptr || *hp == '\0') return getpid();
  char link[64];
  ssize_t n = readlink((std::string(hp) + "/self").c_str(), link, sizeof link - 1);
  if (n <= 0) die("readlink PMON_TEST_HOSTPROC/self");
  link[n] = '\0';
  return static_cast<pid_t>(std::atoi(link));
}

// One write() per line with O_APPEND, so concurrent writers never interleave.
void record(const std::string& name) {
  pid_t self = getpid();
  std::string line = std::to_string(host_pid()) + " " + stat_field(self, 22) + " " + name + "\n";
  int fd = open(g_out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) die("open OUT");
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) die("write OUT");
  close(fd);
}

void ready() {
  char c = 1;
  while (write(g_ready_w, &c, 1) < 0 && errno == EINTR) {
  }
}

void wait_state(pid_t pid, char want) {
  for (int i = 0; i < 10000; ++i) {
    std::string s = stat_field(pid, 3);
    if (s.empty() || s[0] == want) return;
    usleep(1000);
  }
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void on_trap(int) {}

void null_stdio() {
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0) die("open /dev/null");
  for (int i = 0; i < 3; ++i) dup2(fd, i);
  close(fd);
}

// Count of processes a spec makes that report ready().
int ready_count(const Spec& s) { return 1 + s.kids; }

// Runs in the created process; never returns.
[[noreturn]] void become(const Spec& s) {
  if (s.writes < 0) null_stdio();
  if (s.setsid && setsid() < 0) die("setsid");
  if (s.setpgid && setpgid(0, 0) != 0) die("setpgid");
  if (s.ignore)
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, SIG_IGN);
  if (s.trap) {
    struct sigaction sa {};
    sa.sa_handler = on_trap;
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  }
  if (s.block) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, nullptr);
  }
  for (int i = 0; i < s.kids; ++i) {
    pid_t k = fork();
    if (k < 0) die("fork");
    if (k == 0) {
      record(s.name + ".kid");
      ready();
      sleep_ms(600000);
      _exit(0);
    }
  }
  std::vector<pid_t> zs;
  for (int i = 0; i < s.zombies; ++i) {
    pid_t z = fork();
    if (z < 0) die("fork");
    if (z == 0) {
      record(s.name + ".zombie");
      _exit(0);
    }
    zs.push_back(z);
  }
  for (pid_t z : zs) wait_state(z, 'Z');
  record(s.name);
  if (s.writes >= 0) {
    for (int fd : {1, 2}) {
      FILE* f = fdopen(dup(fd), "w");
      if (!f) die("fdopen");
      for (int i = 1; i <= s.writes; ++i) std::fprintf(f, "%s %d\n", s.name.c_str(), i);
      std::fprintf(f, "%s END\n", s.name.c_str());
      if (std::fclose(f) != 0) die("write stdout/stderr");
    }
  }
  ready();
  close(g_ready_w);
  if (s.stop) raise(SIGSTOP);
  if (s.life_ms < 0) {
    sleep_ms(600000);
    _exit(0);
  }
  sleep_ms(s.life_ms);
  record(s.name + ".done");
  _exit(0);
}

Spec parse(const std::string& text, int index) {
  Spec s;
  s.name = "p" + std::to_string(index);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string tok = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::string key = tok.substr(0, tok.find('='));
    std::string val = tok.find('=') == std::string::npos ? "" : tok.substr(tok.find('=') + 1);
    if (key == "name") s.name = val;
    else if (key == "orphan") s.orphan = true;
    else if (key == "setpgid") s.setpgid = true;
    else if (key == "setsid") s.setsid = true;
    else if (key == "ignore") s.ignore = true;
    else if (key == "trap") s.trap = true;
    else if (key == "block") s.block = true;
    else if (key == "stop") s.stop = true;
    else if (key == "zombies") s.zombies = std::atoi(val.c_str());
    else if (key == "kids") s.kids = std::atoi(val.c_str());
    else if (key == "life") s.life_ms = std::atol(val.c_str());
    else if (key == "write") s.writes = std::atoi(val.c_str());
    else if (!key.empty()) {
      std::fprintf(stderr, "escaper: unknown attribute '%s'\n", key.c_str());
      std::exit(2);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: escaper OUT [-x exit:N|sleep|wait] SPEC...\n");
    return 2;
  }
  g_out = argv[1];
  std::string action = "exit:0";
  std::vector<Spec> specs;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "-x") == 0 && i + 1 < argc) {
      action = argv[++i];
      continue;
    }
    specs.push_back(parse(argv[i], static_cast<int>(specs.size())));
  }
  record("main");

  int ready_pipe[2];
  if (pipe2(ready_pipe, O_CLOEXEC) != 0) die("pipe");
  g_ready_w = ready_pipe[1];
  int expected = 0;
  std::vector<pid_t> stopped;
  std::vector<pid_t> direct;
  int stop_pipe[2];
  if (pipe2(stop_pipe, O_CLOEXEC) != 0) die("pipe");
  for (const Spec& s : specs) {
    expected += ready_count(s);
    pid_t p = fork();
    if (p < 0) die("fork");
    if (p == 0) {
      close(ready_pipe[0]);
      close(stop_pipe[0]);
      if (!s.orphan) {
        close(stop_pipe[1]);
        become(s);
      }
      pid_t q = fork();
      if (q < 0) die("fork");
      if (q == 0) {
        close(stop_pipe[1]);
        become(s);
      }
      // Tell the main process the grandchild's pid (to watch for state T).
      (void)!write(stop_pipe[1], &q, sizeof q);
      _exit(0);
    }
    direct.push_back(p);
    if (s.orphan) {
      pid_t q = 0;
      if (read(stop_pipe[0], &q, sizeof q) != sizeof q) die("read pid");
      waitpid(p, nullptr, 0);
      if (s.stop) stopped.push_back(q);
    } else if (s.stop) {
      stopped.push_back(p);
    }
  }
  close(ready_pipe[1]);
  for (int got = 0; got < expected;) {
    char buf[64];
    ssize_t n = read(ready_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::fprintf(stderr, "escaper: only %d of %d processes got ready\n", got, expected);
      return 98;
    }
    got += static_cast<int>(n);
  }
  for (pid_t p : stopped) wait_state(p, 'T');

  if (action == "sleep") {
    sleep_ms(600000);
    return 0;
  }
  if (action == "wait") {
    for (pid_t p : direct) (void)waitpid(p, nullptr, 0);
    return 0;
  }
  if (action.rfind("exit:", 0) == 0) return std::atoi(action.c_str() + 5);
  std::fprintf(stderr, "escaper: unknown action '%s'\n", action.c_str());
  return 2;
}
