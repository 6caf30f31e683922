// SPDX-License-Identifier: Apache-2.0
#include "serve/spool.h"

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
#include <vector>

#include "serve/job.h"
#include "serve/socket.h"

namespace pmon::serve {

namespace {

std::string errno_words(const std::string& what) { return what + ": " + std::strerror(errno); }

// `name` in `parent` (an open directory, or AT_FDCWD with an absolute
// name) as a directory of ours that nobody else may use, made when missing.
std::expected<Fd, std::string> own_dir(int parent, const std::string& name, const std::string& shown) {
  if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) return std::unexpected(errno_words("cannot make " + shown));
  Fd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::unexpected(errno_words("cannot open " + shown + " (a symlink is refused)"));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return std::unexpected(errno_words("cannot read " + shown));
  if (st.st_uid != ::geteuid()) return std::unexpected(shown + " belongs to uid " + std::to_string(st.st_uid) + ", not to us");
  if ((st.st_mode & 077) != 0) return std::unexpected(shown + " is open to other users; make it 0700");
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
  fd_.reset();
  (void)::rmdir(path_.c_str());
  (void)::rmdir(parent_.c_str());  // (another service's spools keep it)
}

std::expected<int, std::string> SpoolDir::ensure() {
  if (fd_) return fd_.get();
  const std::string sock = default_socket_path(false);
  const std::string base = sock.substr(0, sock.rfind('/'));
  auto b = own_dir(AT_FDCWD, base, base);
  if (!b) return std::unexpected(b.error());
  auto s = own_dir(b->get(), "spool", base + "/spool");
  if (!s) return std::unexpected(s.error());
  sweep(s->get());
  char name[48];
  std::snprintf(name, sizeof name, "%d.%08x", static_cast<int>(::getpid()), random_u32());
  if (::mkdirat(s->get(), name, 0700) != 0) return std::unexpected(errno_words("cannot make " + base + "/spool/" + name));
  auto d = own_dir(s->get(), name, base + "/spool/" + name);
  if (!d) return std::unexpected(d.error());
  fd_ = std::move(*d);
  parent_ = base + "/spool";
  name_ = name;
  path_ = parent_ + "/" + name_;
  return fd_.get();
}

void SpoolDir::sweep(int spool_parent) {
  Fd again(::fcntl(spool_parent, F_DUPFD_CLOEXEC, 0));
  DIR* d = again ? ::fdopendir(again.get()) : nullptr;
  if (!d) return;
  (void)again.release();  // (closedir closes it)
  std::vector<std::string> dead;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || end == e->d_name || *end != '.') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its service may run
    dead.emplace_back(e->d_name);
  }
  ::closedir(d);
  for (const std::string& name : dead) {
    Fd dir(::openat(spool_parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) continue;
    Fd list(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0));
    DIR* files = list ? ::fdopendir(list.get()) : nullptr;
    if (!files) continue;
    (void)list.release();
    std::vector<std::string> names;
    while (dirent* f = ::readdir(files))
      if (std::strcmp(f->d_name, ".") != 0 && std::strcmp(f->d_name, "..") != 0) names.emplace_back(f->d_name);
    ::closedir(files);
    for (const std::string& f : names) (void)::unlinkat(dir.get(), f.c_str(), 0);
    (void)::unlinkat(spool_parent, name.c_str(), AT_REMOVEDIR);
  }
}

std::expected<std::unique_ptr<Spool>, std::string> Spool::open(SpoolDir& dir, const std::string& name,
                                                                  uint64_t limit) {
  auto d = dir.ensure();
  if (!d) return std::unexpected(d.error());
  std::unique_ptr<Spool> s(new Spool());
  s->dir_ = *d;
  s->name_ = name;
  s->path_ = dir.path() + "/" + name;
  s->limit_ = std::max<uint64_t>(limit, 1);
  s->cur_ = Fd(::openat(*d, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!s->cur_) return std::unexpected(errno_words("cannot make " + s->path_));
  return s;
}

Spool::~Spool() {
  (void)::unlinkat(dir_, name_.c_str(), 0);
  (void)::unlinkat(dir_, (name_ + ".1").c_str(), 0);
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
  while (!bytes.empty() && !error_ && cur_) {
    const uint64_t room = limit_ - (total_ - cur_start_);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(room, bytes.size()));
    ssize_t w = ::write(cur_.get(), bytes.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail("cannot write " + path_);
    const size_t done = static_cast<size_t>(w);
    lines_cur_ += static_cast<uint64_t>(std::count(bytes.data(), bytes.data() + done, '\n'));
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

void open_spools(Job& j, uint64_t limit, SpoolDir& dir) {
  if (limit == 0) return;
  auto out = Spool::open(dir, j.id + ".out", limit);
  if (!out) {
    j.spool_error = out.error();
    return;
  }
  j.spool = std::move(*out);
  if (!j.err_buffer) return;
  auto err = Spool::open(dir, j.id + ".err", limit);
  if (err) j.err_spool = std::move(*err);
  else j.spool_error = err.error();
}

void add_spool_paths(Json& o, const Job& j) {
  o["spoolPath"] = j.spool ? Json(j.spool->path()) : Json(nullptr);
  if (j.err_spool) o["stderrSpoolPath"] = j.err_spool->path();
  std::string error = j.spool_error;
  if (error.empty() && j.spool && j.spool->error()) error = *j.spool->error();
  if (error.empty() && j.err_spool && j.err_spool->error()) error = *j.err_spool->error();
  if (!error.empty()) o["spoolError"] = error;
}

}  // namespace pmon::serve
