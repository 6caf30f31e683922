// SPDX-License-Identifier: Apache-2.0
// exited_leader OUT [ignore-term] [daemon] [exit|pause|leader]
//
// A process whose main thread (the thread-group leader) has called
// pthread_exit() while a second thread sleeps on: /proc/PID/stat shows it
// in state Z with more than one thread, and it is still alive and listed in
// its cgroup's cgroup.procs. A kernel may not kill such a process through
// cgroup.kill; kill(2) by its pid (or a pidfd) does.
//
//   ignore-term  SIGTERM is ignored (set before any fork: both processes)
//   daemon       first fork a child that calls setsid() (out of our session
//                and process group) and becomes such a process; then this
//                process, once the child is ready: exits 0 (exit, the
//                default), sleeps forever (pause), or becomes one too (leader)
//   without daemon this process itself becomes one.
//
// Each such process appends "pid start_time name" to OUT (name: "leader" or
// "daemon") once its main thread has exited, pid as the host sees it (see
// host_pid), written by its second thread in one write.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "exited_leader: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

std::string read_file(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Field `field` (1-based, as proc(5) numbers them) of /proc/<pid>/stat.
std::string stat_field(pid_t pid, int field) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  std::string s = read_file(path);
  size_t p = s.rfind(')');
  if (p == std::string::npos) return {};
  int f = 2;
  size_t i = p + 1;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    if (++f == field) return s.substr(i, j - i);
    i = j;
  }
  return {};
}

// Under a PID namespace getpid() is the namespace's number; the test then
// bind-mounts the host's /proc at $PMON_TEST_HOSTPROC, whose "self" names
// us by host pid.
pid_t host_pid() {
  const char* hp = std::getenv("PMON_TEST_HOSTPROC");
  if (hp == nullptr || *hp == '\0') return getpid();
  char link[64];
  ssize_t n = readlink((std::string(hp) + "/self").c_str(), link, sizeof link - 1);
  if (n <= 0) die("readlink PMON_TEST_HOSTPROC/self");
  link[n] = '\0';
  return static_cast<pid_t>(std::atoi(link));
}

struct Record {
  const char* out;
  std::string line;
  pid_t ns_pid;
};

// The second thread: waits until the leader is a zombie (its main thread
// gone), tells the test, then sleeps for good.
void* survivor(void* arg) {
  auto* r = static_cast<Record*>(arg);
  while (stat_field(r->ns_pid, 3) != "Z") usleep(1000);
  int fd = open(r->out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) die("open OUT");
  if (write(fd, r->line.data(), r->line.size()) != static_cast<ssize_t>(r->line.size())) die("write OUT");
  close(fd);
  for (;;) pause();
}

[[noreturn]] void become_exited_leader(const char* out, const char* name) {
  auto* r = new Record{out, std::to_string(host_pid()) + " " + stat_field(getpid(), 22) + " " + name + "\n",
                       getpid()};
  pthread_t t;
  if (pthread_create(&t, nullptr, survivor, r) != 0) die("pthread_create");
  pthread_exit(nullptr);
}

// Lines in OUT (how many processes are ready).
int lines_in(const char* out) {
  std::string s = read_file(out);
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: exited_leader OUT [ignore-term] [daemon] [exit|pause|leader]\n");
    return 2;
  }
  const char* out = argv[1];
  bool daemon = false;
  std::string then = "exit";
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "ignore-term") {
      if (signal(SIGTERM, SIG_IGN) == SIG_ERR) die("signal");
    } else if (a == "daemon") {
      daemon = true;
    } else if (a == "exit" || a == "pause" || a == "leader") {
      then = a;
    } else {
      std::fprintf(stderr, "exited_leader: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!daemon) become_exited_leader(out, "leader");

  const int before = lines_in(out);
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    if (setsid() < 0) die("setsid");
    become_exited_leader(out, "daemon");
  }
  while (lines_in(out) < before + 1) usleep(1000);
  if (then == "leader") become_exited_leader(out, "leader");
  if (then == "pause")
    for (;;) pause();
  return 0;
}
