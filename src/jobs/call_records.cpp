// SPDX-License-Identifier: Apache-2.0
#include "jobs/call_records.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "jobs/socket.h"
#include "sys/fd.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

using Json = nlohmann::json;

// The runtime directory a process with this environment and uid uses, as
// the parent it lives in (opened by the caller) and its own name in it.
struct RuntimeDir {
  std::string parent;  // "" when `name` is absolute: then it must exist
  std::string name;
};

RuntimeDir runtime_dir(const char* xdg, uid_t uid) {
  if (xdg != nullptr && xdg[0] == '/') return {xdg, "pmon"};
  if (uid == 0) return {"/run", "pmon"};
  return {"/tmp", "pmon-" + std::to_string(uid)};
}

// `name` in `parent` as a directory of uid's that nobody else may write:
// made (0700, given to uid) when missing and `create`. No symlink is
// followed.
Fd own_dir(int parent, const std::string& name, uid_t uid, gid_t gid, bool create) {
  if (create && ::mkdirat(parent, name.c_str(), 0700) == 0 && ::geteuid() != uid) {
    Fd made(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!made || ::fchown(made.get(), uid, gid) != 0) return Fd();
  }
  Fd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || st.st_uid != uid || (st.st_mode & 077) != 0) return Fd();
  return fd;
}

// The directory `<runtime>/calls/<pid>`, opened (and made, `create`).
Fd calls_dir(const RuntimeDir& rt, pid_t pid, uid_t uid, gid_t gid, bool create) {
  Fd parent(::open(rt.parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return Fd();
  // $XDG_RUNTIME_DIR itself: uid's, written by nobody else.
  struct stat st;
  if (rt.parent != "/run" && rt.parent != "/tmp" &&
      (::fstat(parent.get(), &st) != 0 || st.st_uid != uid || (st.st_mode & 022) != 0))
    return Fd();
  Fd base = own_dir(parent.get(), rt.name, uid, gid, create);
  if (!base) return Fd();
  Fd calls = own_dir(base.get(), "calls", uid, gid, create);
  if (!calls) return Fd();
  return own_dir(calls.get(), std::to_string(pid), uid, gid, create);
}

std::string env_value(const std::string& environ_text, std::string_view name) {
  size_t pos = 0;
  while (pos < environ_text.size()) {
    size_t end = environ_text.find('\0', pos);
    if (end == std::string::npos) end = environ_text.size();
    std::string_view kv(environ_text.data() + pos, end - pos);
    if (kv.size() > name.size() && kv.starts_with(name) && kv[name.size()] == '=')
      return std::string(kv.substr(name.size() + 1));
    pos = end + 1;
  }
  return "";
}

}  // namespace

Result<std::string> write_call_record(pid_t owner, const CallRecord& rec) {
  const std::string proc = "/proc/" + std::to_string(owner);
  struct stat pst;
  if (::stat(proc.c_str(), &pst) != 0) return fail_errno();
  auto env = sys::read_file(proc + "/environ");
  if (!env) return std::unexpected(env.error());
  const std::string xdg = env_value(*env, "XDG_RUNTIME_DIR");
  const RuntimeDir rt = runtime_dir(xdg.empty() ? nullptr : xdg.c_str(), pst.st_uid);
  // The owner is still the one whose start time the record names: what was
  // read of it above was its own.
  auto st = sys::read_stat(owner);
  if (!st || st->start_time != rec.start_time) return fail(ESRCH);
  Fd dir = calls_dir(rt, owner, pst.st_uid, pst.st_gid, true);
  if (!dir) return fail(EACCES);

  Json j = {{"startTime", rec.start_time}, {"socket", rec.socket},   {"terminalId", rec.terminal_id},
            {"jobPid", rec.job_pid},       {"jobStartTime", rec.job_start_time}, {"command", rec.command}};
  const std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  const std::string tmp = "." + rec.terminal_id;
  (void)::unlinkat(dir.get(), tmp.c_str(), 0);
  Fd f(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!f) return fail_errno();
  if (::geteuid() != pst.st_uid && ::fchown(f.get(), pst.st_uid, pst.st_gid) != 0) return fail_errno();
  if (retry_eintr([&] { return ::write(f.get(), text.data(), text.size()); }) != static_cast<ssize_t>(text.size()))
    return fail_errno();
  if (::renameat(dir.get(), tmp.c_str(), dir.get(), rec.terminal_id.c_str()) != 0) return fail_errno();
  std::string where = rt.parent + "/" + rt.name + "/calls/" + std::to_string(owner) + "/" + rec.terminal_id;
  return where;
}

void remove_call_record(const std::string& path) noexcept {
  if (path.empty()) return;
  (void)::unlink(path.c_str());
  // The directory goes with its last record (its pmon removes it too).
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) (void)::rmdir(path.substr(0, slash).c_str());
}

std::vector<CallRecord> take_call_records() {
  // None asked for from inside this call, the common case: no directory
  // of ours by that name at all (one lookup). Whatever is there is opened
  // below, each level checked.
  const std::string sock = default_socket_path(false);
  const std::string pid = std::to_string(::getpid());
  if (const std::string mine = sock.substr(0, sock.rfind('/') + 1) + "calls/" + pid;
      ::access(mine.c_str(), F_OK) != 0 && errno == ENOENT)
    return {};
  const uid_t me = ::geteuid();
  // Each level checked, the runtime directory too: through a symlink
  // planted at /tmp/pmon-UID we would remove another directory's files.
  auto rt = open_runtime_dir();
  if (!rt) return {};  // (ENOENT: nothing was asked for from inside this call)
  Fd calls = own_dir(rt->get(), "calls", me, 0, false);
  Fd dir = calls ? own_dir(calls.get(), pid, me, 0, false) : Fd();
  if (!dir) return {};
  auto self = sys::self_start_time();
  std::vector<CallRecord> out;
  Fd listing(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0));
  DIR* d = listing ? ::fdopendir(listing.release()) : nullptr;
  std::vector<std::string> names;
  while (d != nullptr)
    if (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    } else {
      break;
    }
  if (d != nullptr) ::closedir(d);
  for (const std::string& name : names) {
    Fd f(::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat fs;
    std::string text;
    if (f && ::fstat(f.get(), &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_uid == me && fs.st_size < 65536) {
      // (On the heap: a call that asked for no job never touches it.)
      text.resize(static_cast<size_t>(fs.st_size) + 1);
      ssize_t n = retry_eintr([&] { return ::read(f.get(), text.data(), text.size()); });
      text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
    (void)::unlinkat(dir.get(), name.c_str(), 0);
    Json j = Json::parse(text, nullptr, false);
    if (!j.is_object() || !self || j.value("startTime", uint64_t{0}) != *self) continue;
    CallRecord r;
    r.start_time = *self;
    r.socket = j.value("socket", std::string());
    r.terminal_id = j.value("terminalId", std::string());
    r.job_pid = j.value("jobPid", pid_t{0});
    r.job_start_time = j.value("jobStartTime", uint64_t{0});
    r.command = j.value("command", std::string());
    if (!r.socket.empty() && !r.terminal_id.empty()) out.push_back(std::move(r));
  }
  (void)::unlinkat(calls.get(), pid.c_str(), AT_REMOVEDIR);
  return out;
}

}  // namespace pmon::serve
