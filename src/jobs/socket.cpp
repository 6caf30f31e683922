// SPDX-License-Identifier: Apache-2.0
#include "jobs/socket.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pmon::serve {

namespace {

std::expected<sockaddr_un, Error> address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path)
    return std::unexpected(Error::line("socket path '" + path + "' is empty or too long"));
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string mode_of(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(m & 07777));
  return b;
}

// Locks PATH.lock (made 0600 when missing), or says why not. A service
// that stops removes the file before it lets go: a lock taken on a file
// that is no longer at the path (its holder just went) is taken again on
// the one there now.
std::expected<Fd, Error> lock_path(const std::string& path) {
  const std::string lp = path + ".lock";
  for (int attempt = 0; attempt < 8; ++attempt) {
    Fd fd(::open(lp.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return std::unexpected(Error::system(errno, "cannot open the lock file " + lp));
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return std::unexpected(Error::system(errno, "cannot read " + lp));
    if (!S_ISREG(st.st_mode)) return std::unexpected(Error::line(lp + " is not a regular file"));
    if (st.st_uid != ::geteuid())
      return std::unexpected(
          Error::line(lp + " belongs to uid " + std::to_string(st.st_uid) + ", not to us; refusing to listen there"));
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return std::unexpected(Error::line("a service already runs on " + path));
      return std::unexpected(Error::system(errno, "cannot lock " + lp));
    }
    struct stat now;
    if (::stat(lp.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) return fd;
  }
  return std::unexpected(Error::line("cannot lock " + lp + ": it keeps being replaced"));
}

}  // namespace

std::string default_socket_path(bool honour_env) {
  if (honour_env)
    if (const char* s = std::getenv("PMON_SOCKET"); s && *s) return s;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/pmon/serve.sock";
  if (::geteuid() == 0) return "/run/pmon/serve.sock";
  return "/tmp/pmon-" + std::to_string(::geteuid()) + "/serve.sock";
}

std::expected<Fd, RuntimeDirError> open_runtime_dir() {
  const std::string dir = dir_of(default_socket_path(false));
  auto refuse = [&](int e, const std::string& what) { return std::unexpected(RuntimeDirError{e, dir + " " + what}); };
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    const int e = errno;
    struct stat lst;
    // (O_DIRECTORY's ENOTDIR comes before O_NOFOLLOW's ELOOP.)
    if ((e == ELOOP || e == ENOTDIR) && ::lstat(dir.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
      return refuse(e, "is a symlink (of uid " + std::to_string(lst.st_uid) + "), not a directory of yours");
    if (e == ENOTDIR) return refuse(e, "is not a directory");
    return refuse(e, std::string("cannot be opened: ") + std::strerror(e));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return refuse(errno, std::string("cannot be read: ") + std::strerror(errno));
  if (st.st_uid != ::geteuid()) return refuse(EPERM, "belongs to uid " + std::to_string(st.st_uid) + ", not to you");
  if ((st.st_mode & 022) != 0) return refuse(EPERM, "can be written by other users (mode " + mode_of(st.st_mode) + ")");
  return fd;
}

void Listener::remove() {
  if (path.empty()) return;
  (void)::unlink(path.c_str());
  if (lock) (void)::unlink((path + ".lock").c_str());
  sock.reset();
  lock.reset();
}

std::expected<Listener, Error> listen_unix(const std::string& path, bool default_dir) {
  auto addr = address(path);
  if (!addr) return std::unexpected(addr.error());
  const std::string dir = dir_of(path);
  const uid_t me = ::geteuid();
  // Only the default directory is made here (0700, ours): a directory the
  // caller named is theirs to make, and nothing made here is left behind.
  if (default_dir && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return std::unexpected(Error::system(errno, "cannot make " + dir));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return std::unexpected(
          Error::line("the directory " + dir + " does not exist; make it first (mkdir -m 700 " + dir + ")"));
    return std::unexpected(Error::system(errno, "cannot read " + dir));
  }
  if (S_ISLNK(st.st_mode)) return std::unexpected(Error::line(dir + " is a symlink; refusing to listen there"));
  if (!S_ISDIR(st.st_mode)) return std::unexpected(Error::line(dir + " is not a directory"));
  // The default directory is ours alone; an explicit one may be a shared
  // root-owned directory (the socket's own mode protects it then).
  if (st.st_uid != me && (default_dir || st.st_uid != 0))
    return std::unexpected(
        Error::line(dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to us; refusing to listen there"));
  if (default_dir && (st.st_mode & 077) != 0)
    return std::unexpected(
        Error::line(dir + " is open to other users (mode " + mode_of(st.st_mode) + "); make it 0700"));

  // Held until the service ends: the check for a stale socket, its removal
  // and the bind below are one service's at a time (two started at once
  // would otherwise both find it stale, and each bind its own socket).
  auto lock = lock_path(path);
  if (!lock) return std::unexpected(lock.error());

  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return std::unexpected(Error::line(path + " is a symlink; refusing to listen there"));
    if (!S_ISSOCK(st.st_mode)) return std::unexpected(Error::line(path + " exists and is not a socket"));
    if (st.st_uid != me)
      return std::unexpected(Error::line(path + " belongs to uid " + std::to_string(st.st_uid) + ", not to us"));
    if (connect_unix(path)) return std::unexpected(Error::line("a service already listens on " + path));
    if (::unlink(path.c_str()) != 0)
      return std::unexpected(Error::system(errno, "cannot remove the stale socket " + path));
  }
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return std::unexpected(Error::system(errno, "socket"));
  // Made 0600 from the start: no moment in which another user can connect.
  mode_t old = ::umask(0177);
  int r = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  int saved = errno;
  ::umask(old);
  errno = saved;
  if (r != 0) return std::unexpected(Error::system(errno, "cannot listen on " + path));
  if (::listen(fd.get(), 4096) != 0) return std::unexpected(Error::system(errno, "cannot listen on " + path));
  return Listener{std::move(fd), std::move(*lock), path};
}

std::expected<Fd, Error> connect_unix(const std::string& path) {
  auto addr = address(path);
  if (!addr) return std::unexpected(addr.error());
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::unexpected(Error::system(errno, "socket"));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0)
    return std::unexpected(Error::system(errno, path));
  return fd;
}

std::expected<Fd, ConnectError> connect_service(const std::string& path, bool default_dir) {
  const uid_t me = ::geteuid();
  auto untrusted = [](const std::string& subject, const std::string& what) {
    return std::unexpected(ConnectError{true, subject, what});
  };
  auto owner_words = [&](uid_t uid) {
    return "belongs to uid " + std::to_string(uid) + (default_dir ? ", not to you" : ", not to you or root");
  };
  // Checked before the connect, as far as they are there: a directory or
  // socket that is missing is a service that does not run.
  const std::string dir = dir_of(path);
  struct stat st;
  if (::lstat(dir.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return untrusted(dir, "is a symlink");
    if (S_ISDIR(st.st_mode)) {
      if (st.st_uid != me && (default_dir || st.st_uid != 0)) return untrusted(dir, owner_words(st.st_uid));
      if (default_dir && (st.st_mode & 077) != 0)
        return untrusted(dir, "is open to other users (mode " + mode_of(st.st_mode) + ")");
      if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0)
        return untrusted(dir, "can be written by other users (mode " + mode_of(st.st_mode) + ")");
    }
  }
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return untrusted(path, "is a symlink");
    if (S_ISSOCK(st.st_mode) && st.st_uid != me && st.st_uid != 0) return untrusted(path, owner_words(st.st_uid));
  }
  auto fd = connect_unix(path);
  if (!fd) {
    const Error& e = fd.error();  // nobody answers: the errno's words alone
    return std::unexpected(ConnectError{false, path, e.err != 0 ? std::string(std::strerror(e.err)) : e.text});
  }
  // Whoever listens: what the file system said could have changed since,
  // and a socket can be bound by one user and listened on by another.
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd->get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return untrusted(path, std::string("is served by a process pmon cannot identify (") + std::strerror(errno) + ")");
  if (cred.uid != me && cred.uid != 0)
    return untrusted(path, "is served by uid " + std::to_string(cred.uid) + ", not by you or root");
  return std::move(*fd);
}

}  // namespace pmon::serve
