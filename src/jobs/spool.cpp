// SPDX-License-Identifier: Apache-2.0
#include "jobs/spool.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "confine/cgroup_fs.h"
#include "core/inventory.h"
#include "core/printable.h"
#include "core/units.h"
#include "jobs/socket.h"
#include "sys/proc.h"

namespace pmon::serve {

size_t count_newlines(std::string_view bytes) noexcept {
  // Each lane of `acc` counts the matches in its column, a block of at
  // most 255 vectors at a time (a lane holds up to 255), then is summed.
  using V = unsigned char __attribute__((vector_size(16)));
  constexpr size_t kW = sizeof(V);
  const char* p = bytes.data();
  size_t n = bytes.size(), total = 0;
  V nl;
  for (size_t i = 0; i < kW; ++i) nl[i] = '\n';
  while (n >= kW) {
    const size_t block = std::min<size_t>(n / kW, 255);
    V acc{};
    for (size_t b = 0; b < block; ++b, p += kW) {
      V v;
      std::memcpy(&v, p, kW);
      acc -= reinterpret_cast<V>(v == nl);  // a match is all ones: -1
    }
    for (size_t i = 0; i < kW; ++i) total += acc[i];
    n -= block * kW;
  }
  for (; n > 0; --n, ++p) total += *p == '\n';
  return total;
}

namespace {

using Json = nlohmann::json;

constexpr const char* kRecordLog = "jobs.log";  // JobRecords

std::string errno_words(const std::string& what) { return what + ": " + std::strerror(errno); }

// All of `text` to `fd`: how much was written (less than all on an error).
size_t write_all(int fd, std::string_view text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  return done;
}

// `name` in `parent` (an open directory, or AT_FDCWD with an absolute
// name) as a directory of ours that nobody else may use, made when missing.
std::expected<Fd, Error> own_dir(int parent, const std::string& name, const std::string& shown) {
  if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST)
    return std::unexpected(Error::system(errno, "cannot make " + shown));
  Fd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::unexpected(Error::system(errno, "cannot open " + shown + " (a symlink is refused)"));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::unexpected(Error::system(errno, "cannot read " + shown));
  if (st.st_uid != ::geteuid())
    return std::unexpected(Error::line(shown + " belongs to uid " + std::to_string(st.st_uid) + ", not to us"));
  if ((st.st_mode & 077) != 0) return std::unexpected(Error::line(shown + " is open to other users; make it 0700"));
  return fd;
}

uint32_t random_u32() {
  uint32_t v = 0;
  while (::getrandom(&v, sizeof v, 0) < 0 && errno == EINTR) {
  }
  return v;
}

}  // namespace

SpoolDir::~SpoolDir() {
  if (!fd_) return;
  (void)tidy(doomed_.size());
  fd_.reset();
  (void)::rmdir(path_.c_str());
  (void)::rmdir(parent_.c_str());  // (another service's spools keep it)
}

bool SpoolDir::tidy(size_t max) {
  for (; max > 0 && !doomed_.empty(); --max) {
    (void)::unlinkat(fd_.get(), doomed_.back().c_str(), 0);
    doomed_.pop_back();
  }
  return !doomed_.empty();
}

std::expected<int, Error> SpoolDir::ensure() {
  if (fd_) return fd_.get();
  const std::string sock = default_socket_path(false);
  const std::string base = sock.substr(0, sock.rfind('/'));
  auto b = own_dir(AT_FDCWD, base, base);
  if (!b) return std::unexpected(b.error());
  auto s = own_dir(b->get(), "spool", base + "/spool");
  if (!s) return std::unexpected(s.error());
  sweep(s->get(), nullptr);
  // Named after this process (its pid, start time and PID namespace, as
  // its leaves are), so that the next service can tell that it is gone,
  // and one in another PID namespace that it cannot tell.
  auto self = sys::self_start_time();
  auto ns = sys::self_pid_namespace();
  char name[96];
  std::snprintf(name, sizeof name, "%d.%llu.%08x.%llu", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(self ? *self : 0), random_u32(),
                static_cast<unsigned long long>(ns ? *ns : 0));
  if (::mkdirat(s->get(), name, 0700) != 0)
    return std::unexpected(Error::system(errno, "cannot make " + base + "/spool/" + name));
  auto d = own_dir(s->get(), name, base + "/spool/" + name);
  if (!d) return std::unexpected(d.error());
  fd_ = std::move(*d);
  parent_ = base + "/spool";
  name_ = name;
  path_ = parent_ + "/" + name_;
  return fd_.get();
}

namespace {

// A service's directory name: <pid>.<start time>.<random>.<PID namespace>,
// or (an older pmon's) <pid>.<start time>.<random> or <pid>.<random>.
struct DirOwner {
  pid_t pid = 0;
  std::optional<uint64_t> start;
  std::optional<uint64_t> pid_namespace;
};

std::optional<DirOwner> dir_owner(const char* name) {
  char* end = nullptr;
  const long pid = std::strtol(name, &end, 10);
  if (pid <= 0 || end == name || *end != '.') return std::nullopt;
  DirOwner o{static_cast<pid_t>(pid), std::nullopt, std::nullopt};
  const char* rest = end + 1;
  const char* dot = std::strchr(rest, '.');
  if (dot == nullptr) return o;
  const unsigned long long start = std::strtoull(rest, &end, 10);
  if (end != dot || end == rest) return std::nullopt;
  o.start = start;
  if (const char* ns = std::strchr(dot + 1, '.'); ns != nullptr) {
    const unsigned long long v = std::strtoull(ns + 1, &end, 10);
    if (*end != '\0' || end == ns + 1) return std::nullopt;
    o.pid_namespace = v;
  }
  return o;
}

// Gone, judged in the PID namespace that numbered it only: a service of
// another (a container's sharing this directory with the host), or an
// older pmon's that does not say, may run where we cannot see it.
bool owner_gone(const DirOwner& o, uint64_t self_ns) {
  if (!o.start || self_ns == 0 || o.pid_namespace.value_or(0) != self_ns) return false;
  return !process_alive(o.pid, *o.start);
}

std::vector<std::string> entries(int dir_fd) {
  std::vector<std::string> names;
  Fd again(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  DIR* d = again ? ::fdopendir(again.get()) : nullptr;
  if (!d) return names;
  (void)again.release();  // (closedir closes it)
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

std::optional<std::string> read_small(int dir_fd, const std::string& name, size_t most) {
  Fd f(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!f) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t r = ::read(f.get(), buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    text.append(buf, static_cast<size_t>(r));
    if (text.size() > most) return std::nullopt;  // none of ours is that long
  }
  return text;
}

// A job of the dead service `o`, from its record: its leaf stopped and
// removed when it is still there, in one line to `say`.
void stop_left_job(const DirOwner& o, const Json& rec, const std::function<void(const std::string&)>& say) {
  if (!rec.is_object() || !rec.contains("cgroup") || !rec["cgroup"].is_string()) return;
  const std::string leaf = rec["cgroup"].get<std::string>();
  const size_t slash = leaf.rfind('/');
  if (leaf.empty() || leaf[0] != '/' || slash == std::string::npos) return;
  // Only a leaf named after the dead service itself.
  auto n = parse_leaf_name(std::string_view(leaf).substr(slash + 1));
  if (!n || n->owner_pid != o.pid || n->owner_start != o.start || n->pid_namespace != o.pid_namespace) return;
  struct stat st {};
  if (::stat(leaf.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;  // it had ended
  const size_t procs = leaf_processes(leaf).size();
  auto field = [&](const char* key) {
    auto it = rec.find(key);
    return it != rec.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string what = "job '" + field("id") + "'";
  if (auto name = field("name"); !name.empty()) what += " (name '" + name + "')";
  if (rec.contains("command") && rec["command"].is_array()) {
    std::string cmd;
    for (const Json& a : rec["command"])
      if (a.is_string()) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    cmd = cmd.size() > 200 ? cmd.substr(0, 200) + "..." : cmd;
    what += ", " + cmd;
  }
  what += ", of a pmon service that is gone (pid " + std::to_string(o.pid) + ")";
  auto r = clean_leaf(leaf, 5000);
  if (!say) return;
  // Gone, though the removal failed: removed meanwhile by another sweep, or
  // on a systemd host with its scope, which systemd removes once empty.
  if (r || ::access(leaf.c_str(), F_OK) != 0)
    say(what + " was still running: stopped its " + count_of(procs, "process", "processes") + ", removed " + leaf);
  else
    say(what + " is still running in " + leaf + ": could not stop it: " + r.error().message());
}

// The rest of the dead services' leaves, which no record named: those of
// jobs that had ended (empty, kept for their report or pooled for the next
// job) are removed; one that still has processes (a job without a spool)
// is stopped too, and said.
void sweep_leaves(const std::vector<DirOwner>& dead, const std::function<void(const std::string&)>& say) {
  auto loc = confine::locate_cgroup2();
  if (!loc) return;
  for (const LeafInfo& l : find_leaves(loc->mount)) {
    if (!l.owner_gone()) continue;
    const bool theirs = std::any_of(dead.begin(), dead.end(), [&](const DirOwner& o) {
      return l.name.owner_pid == o.pid && l.name.owner_start == o.start && l.name.pid_namespace == o.pid_namespace;
    });
    if (!theirs) continue;
    const size_t procs = leaf_processes(l.path).size();
    auto r = clean_leaf(l.path, 5000);
    if (!say || procs == 0) continue;
    const std::string what = "a job of a pmon service that is gone (pid " + std::to_string(l.name.owner_pid) + ")";
    if (r || ::access(l.path.c_str(), F_OK) != 0) say(what + " was still running: stopped " + count_of(procs, "process", "processes") + ", removed " + l.path);
    else say(what + " is still running in " + l.path + ": could not stop it: " + r.error().message());
  }
}

}  // namespace

void SpoolDir::sweep(int spool_parent, const std::function<void(const std::string&)>& say) {
  std::vector<DirOwner> dead;
  auto ns = sys::self_pid_namespace();
  const uint64_t self_ns = ns ? *ns : 0;  // (0: /proc is not of our namespace; nothing is judged)
  for (const std::string& name : entries(spool_parent)) {
    auto o = dir_owner(name.c_str());
    if (!o || !owner_gone(*o, self_ns)) continue;  // its service may run
    Fd dir(::openat(spool_parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) continue;
    dead.push_back(*o);
    const std::vector<std::string> files = entries(dir.get());
    if (auto log = read_small(dir.get(), kRecordLog, size_t{64} << 20))
      for (const Json& rec : JobRecords::running_in(*log)) stop_left_job(*o, rec, say);
    // (a record a file of its own: an older pmon's)
    for (const std::string& f : files)
      if (f.size() > 4 && f.ends_with(".job"))
        if (auto text = read_small(dir.get(), f, size_t{64} << 10))
          stop_left_job(*o, Json::parse(*text, nullptr, false), say);
    for (const std::string& f : files) (void)::unlinkat(dir.get(), f.c_str(), 0);
    (void)::unlinkat(spool_parent, name.c_str(), AT_REMOVEDIR);
  }
  if (!dead.empty()) sweep_leaves(dead, say);
}

void SpoolDir::sweep_dead(const std::function<void(const std::string&)>& say) {
  // A job's name, command and leaf are the client's words: escaped, so
  // that they cannot act on the terminal these lines are shown on.
  auto said = [&](const std::string& line) {
    if (say) say(printable(line));
  };
  // The runtime directory itself first: a symlink planted at /tmp/pmon-UID
  // would have us stop and remove what another directory holds.
  auto rt = open_runtime_dir();
  if (!rt) {
    if (rt.error().code != ENOENT) said(rt.error().what + ": what it holds was not looked at");
    return;
  }
  Fd p(::openat(rt->get(), "spool", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!p) return;
  struct stat st {};
  // Only a directory of ours that nobody else may write.
  if (::fstat(p.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) return;
  sweep(p.get(), said);
}

std::expected<std::unique_ptr<Spool>, Error> Spool::open(SpoolDir& dir, const std::string& name,
                                                                  uint64_t limit) {
  auto d = dir.ensure();
  if (!d) return std::unexpected(d.error());
  std::unique_ptr<Spool> s(new Spool());
  s->owner_ = &dir;
  s->dir_ = *d;
  s->name_ = name;
  s->path_ = dir.path() + "/" + name;
  s->limit_ = std::max<uint64_t>(limit, 1);
  return s;
}

Spool::~Spool() {
  if (!made()) return;
  // (NAME.1 is ours once a rotation has made it)
  if (later_) {
    owner_->remove_later(name_);
    if (old_) owner_->remove_later(name_ + ".1");
    return;
  }
  (void)::unlinkat(dir_, name_.c_str(), 0);
  if (old_) (void)::unlinkat(dir_, (name_ + ".1").c_str(), 0);
}

void Spool::fail(const std::string& what) {
  if (!error_) error_ = errno_words(what);
}

// The current file becomes NAME.1 (the older one goes) and a new one begins.
void Spool::rotate() {
  const std::string older = name_ + ".1";
  (void)::unlinkat(dir_, older.c_str(), 0);
  if (::renameat(dir_, name_.c_str(), dir_, older.c_str()) != 0) return fail("cannot rotate " + path_);
  lines_dropped_ += old_ ? lines_old_ : 0;
  old_ = std::move(cur_);
  old_start_ = cur_start_;
  lines_old_ = lines_cur_;
  cur_start_ = total_;
  lines_cur_ = 0;
  cur_ = Fd(::openat(dir_, name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!cur_) fail("cannot make " + path_);
}

void Spool::write(std::string_view bytes) {
  if (!begun_ && !bytes.empty() && !error_) {
    begun_ = true;
    cur_ = Fd(::openat(dir_, name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!cur_) return fail("cannot make " + path_);
  }
  while (!bytes.empty() && !error_ && cur_) {
    const uint64_t room = limit_ - (total_ - cur_start_);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(room, bytes.size()));
    ssize_t w = ::write(cur_.get(), bytes.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail("cannot write " + path_);
    const size_t done = static_cast<size_t>(w);
    lines_cur_ += static_cast<uint64_t>(count_newlines(bytes.substr(0, done)));
    total_ += done;
    bytes.remove_prefix(done);
    if (total_ - cur_start_ >= limit_) rotate();
  }
}

size_t Spool::read_at(uint64_t off, char* buf, size_t n) const {
  if (off < first_held() || off >= total_ || n == 0) return 0;
  const bool in_old = old_ && off < cur_start_;
  const int fd = in_old ? old_.get() : cur_.get();
  const uint64_t start = in_old ? old_start_ : cur_start_;
  const uint64_t end = in_old ? cur_start_ : total_;
  n = static_cast<size_t>(std::min<uint64_t>(n, end - off));
  for (;;) {
    ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(off - start));
    if (r < 0 && errno == EINTR) continue;
    return r < 0 ? 0 : static_cast<size_t>(r);
  }
}

ssize_t Spool::splice_to(int pipe, uint64_t off, size_t n) const {
  if (off < first_held() || off >= total_ || n == 0) return 0;
  const bool in_old = old_ && off < cur_start_;
  const uint64_t start = in_old ? old_start_ : cur_start_;
  const uint64_t end = in_old ? cur_start_ : total_;
  loff_t at = static_cast<loff_t>(off - start);
  return ::splice(in_old ? old_.get() : cur_.get(), &at, pipe, nullptr,
                  static_cast<size_t>(std::min<uint64_t>(n, end - off)), SPLICE_F_NONBLOCK);
}

JobRecords::~JobRecords() {
  if (!fd_) return;
  fd_.reset();
  if (auto d = dir_.ensure()) (void)::unlinkat(*d, kRecordLog, 0);
}

bool JobRecords::add(const std::string& id, std::string line) {
  line += '\n';
  if (!append(line)) return false;
  live_bytes_ += line.size();
  live_[id] = std::move(line);
  return true;
}

void JobRecords::remove(const std::string& id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  live_bytes_ -= it->second.size();
  live_.erase(it);
  ended_ += Json{{"ended", id}}.dump() + "\n";
}

void JobRecords::flush() {
  if (ended_.empty()) return;
  if (written_ + ended_.size() > std::max<uint64_t>(uint64_t{64} << 10, 4 * live_bytes_) && rewrite()) return;
  // (Not kept for another try: a write that fails drops them, as it
  // did each line before. A record left saying "running" costs a later
  // service or pmon gc one look at a leaf that is gone.)
  (void)append(ended_);
  ended_.clear();
}

bool JobRecords::append(std::string_view text) {
  if (!fd_) {
    auto d = dir_.ensure();
    if (!d) return false;
    fd_ = Fd(::openat(*d, kRecordLog, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_) return false;
  }
  const size_t done = write_all(fd_.get(), text);
  written_ += done;
  return done == text.size();
}

// The running jobs' lines alone, into a new file put in the log's place
// (a reader sees the old log or the new one, whole); where that cannot be
// done, the log grows on (false).
bool JobRecords::rewrite() {
  auto d = dir_.ensure();
  if (!d) return false;
  const std::string next = std::string(kRecordLog) + ".new";
  Fd f(::openat(*d, next.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  std::string text;
  text.reserve(live_bytes_);
  for (const auto& [id, line] : live_) text += line;
  if (!f || write_all(f.get(), text) != text.size() || ::renameat(*d, next.c_str(), *d, kRecordLog) != 0) {
    (void)::unlinkat(*d, next.c_str(), 0);
    return false;
  }
  fd_ = std::move(f);
  written_ = text.size();
  ended_.clear();
  return true;
}

std::vector<Json> JobRecords::running_in(std::string_view log) {
  std::vector<Json> records;
  std::map<std::string, size_t> at;  // id -> its place in records
  while (!log.empty()) {
    const size_t nl = log.find('\n');
    const std::string_view line = log.substr(0, nl);
    log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) continue;  // (cut short: the last line of a service that died writing it)
    if (auto e = j.find("ended"); e != j.end() && e->is_string()) {
      if (auto it = at.find(e->get<std::string>()); it != at.end()) records[it->second] = nullptr;
    } else if (auto i = j.find("id"); i != j.end() && i->is_string()) {
      at[i->get<std::string>()] = records.size();
      records.push_back(std::move(j));
    }
  }
  std::erase_if(records, [](const Json& r) { return r.is_null(); });
  return records;
}

}  // namespace pmon::serve
