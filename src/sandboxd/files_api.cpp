// SPDX-License-Identifier: Apache-2.0
// Paths beneath the sandbox root and the file operations of pmon sandboxd
// (files_api.h).
#include "sandboxd/files_api.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>

namespace pmon::sandboxd {

namespace {

// As the kernel allows: past this many symlinks a walk is a loop.
constexpr int kMaxLinks = 40;

std::error_code err(int e) { return {e, std::generic_category()}; }
std::error_code last_err() { return err(errno); }

Fd dup_fd(int fd) { return Fd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

Fd open_dir_at(int dir, const std::string& name) {
  return Fd(::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

bool is_symlink_at(int dir, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

// `path` without the root's own path in front, when it has it (a client
// that sends /workspace/main.py means main.py); nothing when `path` is
// absolute and elsewhere.
std::optional<std::string_view> inside_root(const std::string& root, std::string_view path) {
  if (root == "/") return path;
  if (path == root) return std::string_view();
  if (path.size() > root.size() && path.starts_with(root) && path[root.size()] == '/')
    return path.substr(root.size());
  return std::nullopt;
}

// Puts the components of `path` in front of `todo`, in order; empty ones
// and "." are dropped.
void prepend(std::deque<std::string>& todo, std::string_view path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view c = path.substr(i, slash - i);
    if (!c.empty() && c != ".") parts.emplace_back(c);
    i = slash + 1;
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_front(std::move(*it));
}

struct DirCloser {
  void operator()(DIR* d) const noexcept { (void)::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// A directory stream over `name` in `dir`, never through a symlink.
std::expected<DirPtr, std::error_code> open_dir_stream(int dir, const char* name) {
  Fd fd(::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::unexpected(last_err());
  DIR* d = ::fdopendir(fd.get());
  if (d == nullptr) return std::unexpected(last_err());
  (void)fd.release();
  return DirPtr(d);
}

bool dot_or_dotdot(const char* n) { return n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0)); }

std::error_code remove_tree(int parent, const std::string& name, size_t depth);

// Removes what is in the directory `d` (whose fd is dirfd(d)).
std::error_code empty_dir(DIR* d, size_t depth) {
  const int fd = ::dirfd(d);
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (e == nullptr) return errno == 0 ? std::error_code() : last_err();
    if (dot_or_dotdot(e->d_name)) continue;
    struct stat st {};
    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile by someone else
      return last_err();
    }
    if (S_ISDIR(st.st_mode)) {
      if (std::error_code ec = remove_tree(fd, e->d_name, depth + 1)) return ec;
    } else if (::unlinkat(fd, e->d_name, 0) != 0 && errno != ENOENT) {
      return last_err();
    }
  }
}

// rm -rf of the directory `name` in `parent`; symlinks inside are removed,
// never followed.
std::error_code remove_tree(int parent, const std::string& name, size_t depth) {
  if (depth > kMaxDepth) return err(ENAMETOOLONG);
  auto d = open_dir_stream(parent, name.c_str());
  if (!d) return d.error() == std::errc::no_such_file_or_directory ? std::error_code() : d.error();
  if (std::error_code ec = empty_dir(d->get(), depth)) return ec;
  d->reset();
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return last_err();
  return {};
}

}  // namespace

std::expected<Root, std::error_code> Root::open(const std::string& dir) {
  if (dir.empty()) return std::unexpected(err(ENOENT));
  // mkdir -p: each missing component, 0755; one that exists already is fine.
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    const std::string prefix = dir.substr(0, i);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return std::unexpected(last_err());
  }
  char* canon = ::realpath(dir.c_str(), nullptr);
  if (canon == nullptr) return std::unexpected(last_err());
  Root r;
  r.path_ = canon;
  std::free(canon);
  r.fd_ = Fd(::open(r.path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!r.fd_) return std::unexpected(last_err());
  return r;
}

std::expected<Location, std::error_code> resolve(const Root& root, std::string_view path, Follow follow,
                                                 bool make_parents) {
  if (path.find('\0') != std::string_view::npos) return std::unexpected(err(EXDEV));
  if (path.size() > kMaxPath) return std::unexpected(err(ENAMETOOLONG));
  if (auto rel = inside_root(root.path(), path)) path = *rel;
  std::deque<std::string> todo;
  prepend(todo, path);
  // A ".." above the root is refused as written, whether or not the
  // directories before it exist (as the reference, which cleans the path first).
  int depth = 0;
  for (const std::string& c : todo)
    if ((depth += c == ".." ? -1 : 1) < 0) return std::unexpected(err(EXDEV));
  // The directories walked into below the root, each held open: ".." goes
  // back to the one it came from, even if someone renames it meanwhile.
  std::vector<Fd> stack;
  std::vector<std::string> names;
  auto top = [&] { return stack.empty() ? root.fd() : stack.back().get(); };
  int links = 0;
  // The symlink `name` in the top directory: its target is walked in its place.
  auto follow_link = [&](const std::string& name) -> std::error_code {
    if (++links > kMaxLinks) return err(ELOOP);
    char buf[kMaxPath + 1];
    const ssize_t n = ::readlinkat(top(), name.c_str(), buf, sizeof buf);
    if (n < 0) return last_err();
    if (static_cast<size_t>(n) >= sizeof buf) return err(ENAMETOOLONG);
    std::string_view target(buf, static_cast<size_t>(n));
    if (target.empty()) return err(ENOENT);
    if (target[0] == '/') {
      auto rel = inside_root(root.path(), target);
      if (!rel) return err(EXDEV);
      stack.clear();
      names.clear();
      target = *rel;
    }
    prepend(todo, target);
    return {};
  };
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == "..") {
      if (stack.empty()) return std::unexpected(err(EXDEV));
      stack.pop_back();
      names.pop_back();
      continue;
    }
    if (c.size() > NAME_MAX) return std::unexpected(err(ENAMETOOLONG));
    if (todo.empty()) {
      if (follow == Follow::last && is_symlink_at(top(), c)) {
        if (std::error_code ec = follow_link(c)) return std::unexpected(ec);
        continue;
      }
      Fd dir = dup_fd(top());
      if (!dir) return std::unexpected(last_err());
      return Location{std::move(dir), std::move(c), false};
    }
    Fd next = open_dir_at(top(), c);
    if (!next && errno == ENOENT && make_parents) {
      if (::mkdirat(top(), c.c_str(), 0755) != 0 && errno != EEXIST) return std::unexpected(last_err());
      next = open_dir_at(top(), c);
    }
    if (!next) {
      const int e = errno;
      // O_NOFOLLOW on a symlink: ELOOP, or ENOTDIR with O_PATH|O_DIRECTORY.
      if (e != ELOOP && e != ENOTDIR) return std::unexpected(err(e));
      if (!is_symlink_at(top(), c)) return std::unexpected(err(ENOTDIR));
      if (std::error_code ec = follow_link(c)) return std::unexpected(ec);
      continue;
    }
    if (stack.size() >= kMaxDepth) return std::unexpected(err(ENAMETOOLONG));
    stack.push_back(std::move(next));
    names.push_back(std::move(c));
  }
  // The path ended in a directory (after ".."): its parent and its name.
  if (stack.empty()) {
    Fd dir = dup_fd(root.fd());
    if (!dir) return std::unexpected(last_err());
    return Location{std::move(dir), ".", true};
  }
  Fd dir = stack.size() >= 2 ? std::move(stack[stack.size() - 2]) : dup_fd(root.fd());
  if (!dir) return std::unexpected(last_err());
  return Location{std::move(dir), names.back(), false};
}

Entry entry_from_stat(std::string name, const struct stat& st) {
  Entry e;
  e.name = std::move(name);
  e.directory = S_ISDIR(st.st_mode);
  e.size = static_cast<uint64_t>(st.st_size);
  e.mtime = st.st_mtim.tv_sec;
  e.mode = st.st_mode & 07777;
  return e;
}

std::expected<Opened, std::error_code> open_path(const Root& root, std::string_view path) {
  // A symlink swapped in for the last component after it was looked at
  // fails O_NOFOLLOW with ELOOP: walk again, a few times.
  for (int attempt = 0;; ++attempt) {
    auto loc = resolve(root, path, Follow::last);
    if (!loc) return std::unexpected(loc.error());
    // O_NONBLOCK: a FIFO in the sandbox does not hold the request forever.
    Opened o;
    o.fd = Fd(::openat(loc->dir.get(), loc->name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!o.fd) {
      if (errno == ELOOP && attempt < 3) continue;
      return std::unexpected(last_err());
    }
    if (::fstat(o.fd.get(), &o.st) != 0) return std::unexpected(last_err());
    if (!S_ISREG(o.st.st_mode) && !S_ISDIR(o.st.st_mode)) return std::unexpected(err(EINVAL));
    return o;
  }
}

std::expected<std::vector<Entry>, std::error_code> list_directory(const Root& root, std::string_view path,
                                                                  const Opened& dir) {
  auto d = open_dir_stream(dir.fd.get(), ".");
  if (!d) return std::unexpected(d.error());
  const int fd = ::dirfd(d->get());
  std::vector<Entry> out;
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d->get());
    if (e == nullptr) {
      if (errno != 0) return std::unexpected(last_err());
      break;
    }
    if (dot_or_dotdot(e->d_name)) continue;
    struct stat st {};
    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    if (S_ISLNK(st.st_mode)) {
      std::string link_path(path);
      link_path += '/';
      link_path += e->d_name;
      auto target = resolve(root, link_path, Follow::last);
      if (!target) continue;
      if (target->is_root) {
        if (::fstat(root.fd(), &st) != 0) continue;
      } else if (::fstatat(target->dir.get(), target->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        continue;
      }
    }
    out.push_back(entry_from_stat(e->d_name, st));
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

std::expected<AtomicWriter, std::error_code> AtomicWriter::begin(const Root& root, std::string_view path,
                                                                 mode_t mode) {
  auto loc = resolve(root, path, Follow::last, /*make_parents=*/true);
  if (!loc) return std::unexpected(loc.error());
  if (loc->is_root) return std::unexpected(err(EISDIR));
  struct stat st {};
  if (::fstatat(loc->dir.get(), loc->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    return std::unexpected(err(EISDIR));
  AtomicWriter w;
  for (int attempt = 0; !w.file_; ++attempt) {
    uint64_t r = 0;
    if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) return std::unexpected(last_err());
    char name[64];
    std::snprintf(name, sizeof name, ".pmon-sandboxd-%016llx", static_cast<unsigned long long>(r));
    w.file_ = Fd(::openat(loc->dir.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!w.file_ && (errno != EEXIST || attempt > 8)) return std::unexpected(last_err());
    if (w.file_) w.temp_ = name;
  }
  w.dir_ = std::move(loc->dir);
  w.name_ = std::move(loc->name);
  // fchmod, not the open's mode: the umask does not apply to what was asked.
  if (::fchmod(w.file_.get(), mode) != 0) return std::unexpected(last_err());
  return w;
}

AtomicWriter::~AtomicWriter() {
  if (!committed_ && dir_ && !temp_.empty()) (void)::unlinkat(dir_.get(), temp_.c_str(), 0);
}

std::error_code AtomicWriter::write(const char* data, size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(file_.get(), data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return last_err();
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

std::error_code AtomicWriter::commit() noexcept {
  if (::fsync(file_.get()) != 0) return last_err();
  file_.reset();
  if (::renameat(dir_.get(), temp_.c_str(), dir_.get(), name_.c_str()) != 0) return last_err();
  committed_ = true;
  // The rename itself made durable: fsync of the directory (best effort).
  Fd d(::openat(dir_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d) (void)::fsync(d.get());
  return {};
}

std::error_code remove_path(const Root& root, std::string_view path, bool recursive) {
  auto loc = resolve(root, path, Follow::not_last);
  if (!loc) return loc.error();
  if (loc->is_root) {
    if (!recursive) return err(ENOTEMPTY);
    auto d = open_dir_stream(root.fd(), ".");
    if (!d) return d.error();
    return empty_dir(d->get(), 0);
  }
  const int dir = loc->dir.get();
  const char* name = loc->name.c_str();
  struct stat st {};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return last_err();
  if (S_ISLNK(st.st_mode)) {
    auto target = resolve(root, path, Follow::last);
    if (!target && target.error() == std::errc::cross_device_link) return target.error();
  }
  if (S_ISDIR(st.st_mode)) {
    if (recursive) return remove_tree(dir, loc->name, 0);
    if (::unlinkat(dir, name, AT_REMOVEDIR) != 0) return errno == EEXIST ? err(ENOTEMPTY) : last_err();
    return {};
  }
  if (::unlinkat(dir, name, 0) != 0) return last_err();
  return {};
}

std::string mode_text(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 0777));
  return buf;
}

}  // namespace pmon::sandboxd
