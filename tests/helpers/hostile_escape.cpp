// SPDX-License-Identifier: Apache-2.0
// hostile_escape MODE OUT — a deliberately hostile tool call (E12). Writes
// one line per attempt to OUT ("<what> ok|<errno text>"), then sleeps until
// killed (so the test can check from outside where it ended up).
//   cgroup   write its own pid into every cgroup.procs it can reach: the
//            mounted view's root, the host's behind it (after detaching the
//            view), and a freshly mounted cgroup2
//   parents  SIGKILL its parent chain (getppid loop), every pid in /proc,
//            and kill(-1) — only inside a pid namespace of the call's own
//            (HOSTILE_HOST_PIDNS names the test's): run without one by
//            mistake, as root, this would kill the machine
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

FILE* g_out = nullptr;

// Whether this process's namespace of KIND (/proc/self/ns/KIND) differs
// from the one the test names in environment variable ENV.
bool own_namespace(const char* kind, const char* env) {
  char mine[64] = {};
  const char* host = std::getenv(env);
  std::string link = std::string("/proc/self/ns/") + kind;
  return host != nullptr && ::readlink(link.c_str(), mine, sizeof mine - 1) > 0 &&
         std::strcmp(mine, host) != 0;
}

void note(const std::string& what, int rc) {
  std::fprintf(g_out, "%s %s\n", what.c_str(), rc == 0 ? "ok" : std::strerror(errno));
  std::fflush(g_out);
}

void write_procs(const std::string& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return note("open " + file, -1);
  std::string pid = std::to_string(::getpid());
  int rc = ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size()) ? 0 : -1;
  note("write " + file, rc);
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  g_out = std::fopen(argv[2], "a");
  if (g_out == nullptr) return 2;
  std::string mode = argv[1];
  const char* cg = std::getenv("HOSTILE_CGROUP2");  // where the host mounts cgroup2
  std::string cgroup2 = cg != nullptr ? cg : "/sys/fs/cgroup/unified";
  if (mode == "cgroup") {
    write_procs(cgroup2 + "/cgroup.procs");
    // Detach whatever is mounted there and try what shows up below, but
    // only inside a mount namespace of the call's own: run without one (by
    // mistake, as root) this would unmount the host's cgroup2. The test
    // passes its own namespace in HOSTILE_HOST_MNTNS.
    bool own_ns = own_namespace("mnt", "HOSTILE_HOST_MNTNS");
    if (!own_ns) note("umount skipped: not in a mount namespace of the call's own", -1);
    for (int i = 0; own_ns && i < 3; ++i) {
      note("umount " + cgroup2, ::umount2(cgroup2.c_str(), MNT_DETACH));
      write_procs(cgroup2 + "/cgroup.procs");
    }
    std::string dir = "/tmp/hostile-cg-" + std::to_string(::getpid());
    ::mkdir(dir.c_str(), 0700);
    if (::mount("cgroup2", dir.c_str(), "cgroup2", 0, nullptr) == 0) {
      note("mount cgroup2 " + dir, 0);
      write_procs(dir + "/cgroup.procs");
      ::umount2(dir.c_str(), MNT_DETACH);
    } else {
      note("mount cgroup2 " + dir, -1);
    }
    ::rmdir(dir.c_str());
  } else if (mode == "parents") {
    if (!own_namespace("pid", "HOSTILE_HOST_PIDNS")) {
      note("kills skipped: not in a pid namespace of the call's own", -1);
      std::fprintf(g_out, "done\n");
      std::fclose(g_out);
      for (;;) ::pause();
    }
    for (pid_t p = ::getppid(); p > 0;) {
      note("kill parent " + std::to_string(p), ::kill(p, SIGKILL));
      char path[64];
      std::snprintf(path, sizeof path, "/proc/%d/stat", p);
      FILE* f = std::fopen(path, "re");
      if (f == nullptr) break;
      char buf[512];
      size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      buf[n] = '\0';
      const char* r = std::strrchr(buf, ')');
      pid_t pp = 0;
      if (r == nullptr || std::sscanf(r + 2, "%*c %d", &pp) != 1 || pp == p) break;
      p = pp;
    }
    if (DIR* d = ::opendir("/proc")) {
      while (dirent* e = ::readdir(d)) {
        pid_t p = std::atoi(e->d_name);
        if (p > 0 && p != ::getpid()) note("kill /proc " + std::to_string(p), ::kill(p, SIGKILL));
      }
      ::closedir(d);
    }
    // Every process it may signal but itself and its namespace's init.
    note("kill -1", ::kill(-1, SIGKILL));
  } else {
    return 2;
  }
  std::fprintf(g_out, "done\n");
  std::fclose(g_out);
  for (;;) ::pause();
}
