// SPDX-License-Identifier: Apache-2.0
// serve::listening_ports on real sockets of a forked child: listening v4 and
// v6 sockets are found with their port and address, a bound socket that does
// not listen is not, and a child in its own network namespace is read there.
#include "jobs/ports.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstring>

namespace pmon::serve {
namespace {

TEST(TcpTable, ParsesV4AndV6Lines) {
  std::string v4 =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 0 100 0 0 10 0\n"
      "   1: 00000000:0016 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 99 1 0 100 0 0 10 0\n"
      "garbage\n";
  auto e = parse_tcp_table(v4, false);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].address, "127.0.0.1");
  EXPECT_EQ(e[0].port, 8080);
  EXPECT_EQ(e[0].inode, 1234u);
  EXPECT_TRUE(e[0].listening);
  EXPECT_EQ(e[1].address, "0.0.0.0");
  EXPECT_EQ(e[1].port, 22);
  EXPECT_FALSE(e[1].listening);

  std::string v6 =
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000000000000000000001000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0 100 0 0 10 0\n"
      "   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 78 1 0 100 0 0 10 0\n"
      "   2: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 79 1 0 100 0 0 10 0\n";
  e = parse_tcp_table(v6, true);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].address, "::1");
  EXPECT_EQ(e[0].port, 3000);
  EXPECT_EQ(e[1].address, "::");
  EXPECT_EQ(e[1].port, 80);
  EXPECT_EQ(e[2].address, "::ffff:127.0.0.1");
}

// A TCP socket bound to `addr` port 0; listening when asked. Returns its port.
int bound_socket(int family, const char* addr, bool listen, uint16_t& port) {
  int s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    ::inet_pton(AF_INET, addr, &a->sin_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, addr, &a->sin6_addr);
    len = sizeof *a;
  }
  if (::bind(s, reinterpret_cast<sockaddr*>(&ss), len) != 0) return -1;
  if (listen && ::listen(s, 4) != 0) return -1;
  len = sizeof ss;
  if (::getsockname(s, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                 : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return s;
}

// Connects to our own listener on 127.0.0.1:port and accepts: two
// established sockets, one of them on the listener's port.
bool connect_pair(int listener, uint16_t port) {
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
  return ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) >= 0;
}

struct Ports {
  int err = 0;  // errno of the child's failure, 0 when it is ready
  uint16_t v4 = 0, v6 = 0, idle = 0;
};

// A child that sets up sockets (in a new network namespace when `netns`),
// reports their ports through a pipe, then waits to be killed.
class SocketChild {
 public:
  explicit SocketChild(bool netns) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[0]);
      Ports r;
      if (netns && ::unshare(CLONE_NEWNET) != 0) {
        r.err = errno;
      } else if (netns) {
        // A new namespace's loopback is down: listen on the wildcard.
        if (bound_socket(AF_INET, "0.0.0.0", true, r.v4) < 0) r.err = errno;
      } else {
        int listener = bound_socket(AF_INET, "127.0.0.1", true, r.v4);
        if (listener < 0) r.err = errno;
        if (bound_socket(AF_INET6, "::1", true, r.v6) < 0) {
          if (errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL) r.err = errno;
          r.v6 = 0;  // no IPv6 on this host
        }
        // Not listening: bound only, and both ends of a connection.
        if (bound_socket(AF_INET, "127.0.0.1", false, r.idle) < 0) r.err = errno;
        if (r.err == 0 && !connect_pair(listener, r.v4)) r.err = errno;
      }
      (void)!::write(p[1], &r, sizeof r);
      for (;;) ::pause();
    }
    ::close(p[1]);
    if (pid_ > 0 && ::read(p[0], &ports_, sizeof ports_) != sizeof ports_) ports_.err = EIO;
    ::close(p[0]);
  }
  ~SocketChild() {
    if (pid_ <= 0) return;
    (void)::kill(pid_, SIGKILL);
    (void)::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  const Ports& ports() const { return ports_; }

 private:
  pid_t pid_ = -1;
  Ports ports_;
};

TEST(ListeningPorts, ListenersOfAChild) {
  SocketChild c(false);
  ASSERT_GT(c.pid(), 0);
  ASSERT_EQ(c.ports().err, 0) << std::strerror(c.ports().err);
  // A listener of our own, not asked about: not reported.
  uint16_t mine = 0;
  int own = bound_socket(AF_INET, "127.0.0.1", true, mine);
  ASSERT_GE(own, 0);

  auto got = listening_ports({c.pid()});
  std::vector<ListeningPort> want = {{c.ports().v4, "127.0.0.1", false, c.pid()}};
  if (c.ports().v6) {
    want.push_back({c.ports().v6, "::1", true, c.pid()});
  } else {
    std::printf("note: no IPv6 on this host, only IPv4 checked\n");
  }
  std::sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.port < b.port; });
  EXPECT_EQ(got, want);
  for (auto& p : got) EXPECT_NE(p.port, c.ports().idle);  // bound, not listening

  // Ours appears once we are asked about too; gone pids are skipped.
  got = listening_ports({c.pid(), ::getpid(), 99999999});
  EXPECT_EQ(got.size(), want.size() + 1);
  EXPECT_TRUE(std::any_of(got.begin(), got.end(), [&](auto& p) {
    return p.port == mine && p.pid == ::getpid();
  }));
  ::close(own);
  EXPECT_TRUE(listening_ports({}).empty());
}

TEST(ListeningPorts, ReadsTheChildsNetworkNamespace) {
  SocketChild c(true);
  ASSERT_GT(c.pid(), 0);
  if (c.ports().err == EPERM) GTEST_SKIP() << "no network namespaces for this user";
  ASSERT_EQ(c.ports().err, 0) << std::strerror(c.ports().err);
  auto got = listening_ports({c.pid()});
  std::vector<ListeningPort> want = {{c.ports().v4, "0.0.0.0", false, c.pid()}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace pmon::serve
