#include "serve/socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace pmon::serve {

namespace {

std::string err(const std::string& what) { return what + ": " + std::strerror(errno); }

std::expected<sockaddr_un, std::string> address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path)
    return std::unexpected("socket path '" + path + "' is empty or too long");
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string default_socket_path(bool honour_env) {
  if (honour_env)
    if (const char* s = std::getenv("PMON_SOCKET"); s && *s) return s;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/pmon/serve.sock";
  if (::geteuid() == 0) return "/run/pmon/serve.sock";
  return "/tmp/pmon-" + std::to_string(::geteuid()) + "/serve.sock";
}

std::expected<Fd, std::string> listen_unix(const std::string& path, bool default_dir) {
  auto addr = address(path);
  if (!addr) return std::unexpected(addr.error());
  const std::string dir = dir_of(path);
  const uid_t me = ::geteuid();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return std::unexpected(err("cannot make " + dir));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return std::unexpected(err("cannot read " + dir));
  if (S_ISLNK(st.st_mode)) return std::unexpected(dir + " is a symlink; refusing to listen there");
  if (!S_ISDIR(st.st_mode)) return std::unexpected(dir + " is not a directory");
  // The default directory is ours alone; an explicit one may be a shared
  // root-owned directory (the socket's own mode protects it then).
  if (st.st_uid != me && (default_dir || st.st_uid != 0))
    return std::unexpected(dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to us; refusing to listen there");
  if (default_dir && (st.st_mode & 077) != 0)
    return std::unexpected(dir + " is open to other users (mode " + [&] {
      char b[8];
      std::snprintf(b, sizeof b, "%04o", st.st_mode & 07777);
      return std::string(b);
    }() + "); make it 0700");

  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) return std::unexpected(path + " is a symlink; refusing to listen there");
    if (!S_ISSOCK(st.st_mode)) return std::unexpected(path + " exists and is not a socket");
    if (st.st_uid != me) return std::unexpected(path + " belongs to uid " + std::to_string(st.st_uid) + ", not to us");
    if (connect_unix(path)) return std::unexpected("a service already listens on " + path);
    if (::unlink(path.c_str()) != 0) return std::unexpected(err("cannot remove the stale socket " + path));
  }
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return std::unexpected(err("socket"));
  // Made 0600 from the start: no moment in which another user can connect.
  mode_t old = ::umask(0177);
  int r = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr);
  int saved = errno;
  ::umask(old);
  errno = saved;
  if (r != 0) return std::unexpected(err("cannot listen on " + path));
  if (::listen(fd.get(), 4096) != 0) return std::unexpected(err("cannot listen on " + path));
  return fd;
}

std::expected<Fd, std::string> connect_unix(const std::string& path) {
  auto addr = address(path);
  if (!addr) return std::unexpected(addr.error());
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::unexpected(err("socket"));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0)
    return std::unexpected(err(path));
  return fd;
}

}  // namespace pmon::serve
