// SPDX-License-Identifier: Apache-2.0
#include "jobs/ports.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <set>
#include <tuple>

#include "jobs/poller.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

constexpr std::string_view kListenState = "0A";  // TCP_LISTEN in the tables

template <class T>
bool parse_hex(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

template <class T>
bool parse_dec(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// The kernel prints an address as 32-bit words, each the in-memory (network
// order) bytes read as a host integer: storing each parsed word back in host
// order gives the address bytes.
bool parse_address(std::string_view hex, bool v6, std::string& out) {
  size_t words = v6 ? 4 : 1;
  if (hex.size() != words * 8) return false;
  unsigned char bytes[16];
  for (size_t w = 0; w < words; ++w) {
    uint32_t v = 0;
    if (!parse_hex(hex.substr(w * 8, 8), v)) return false;
    std::memcpy(bytes + w * 4, &v, 4);
  }
  char text[INET6_ADDRSTRLEN];
  if (!::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes, text, sizeof text)) return false;
  out = text;
  return true;
}

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) f.push_back(line.substr(i, j - i));
    i = j;
  }
  return f;
}

// The socket inodes a process holds: its fds that link to "socket:[N]".
std::vector<uint64_t> socket_inodes(pid_t pid) {
  std::vector<uint64_t> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  int raw = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return out;
  DIR* d = ::fdopendir(raw);  // owns raw from here on
  if (!d) {
    ::close(raw);
    return out;
  }
  constexpr std::string_view kPrefix = "socket:[";
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char link[64];
    ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof link);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof link) continue;
    std::string_view s(link, static_cast<size_t>(n));
    if (!s.starts_with(kPrefix) || !s.ends_with(']')) continue;
    uint64_t ino = 0;
    if (parse_dec(s.substr(kPrefix.size(), s.size() - kPrefix.size() - 1), ino)) out.push_back(ino);
  }
  ::closedir(d);
  return out;
}

// The network namespace of a process, as the inode of /proc/PID/ns/net.
bool netns_of(pid_t pid, ino_t& out) {
  struct stat st;
  std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  if (::stat(path.c_str(), &st) != 0) return false;
  out = st.st_ino;
  return true;
}

}  // namespace

std::vector<TcpEntry> parse_tcp_table(std::string_view text, bool v6) {
  std::vector<TcpEntry> out;
  bool header = true;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (header) {  // the first line names the columns
      header = false;
      continue;
    }
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    auto f = fields_of(line);
    if (f.size() < 10) continue;
    size_t colon = f[1].find(':');
    if (colon == std::string_view::npos) continue;
    TcpEntry e;
    if (!parse_address(f[1].substr(0, colon), v6, e.address)) continue;
    if (!parse_hex(f[1].substr(colon + 1), e.port)) continue;
    if (!parse_dec(f[9], e.inode)) continue;
    e.listening = f[3] == kListenState;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<ListeningPort> listening_ports(const std::vector<pid_t>& pids) {
  PortTables tables;
  return tables.listening_ports(pids);
}

std::vector<ListeningPort> PortTables::listening_ports(const std::vector<pid_t>& pids) {
  Scan s;
  s.pids = pids;
  (void)scan(s, kForever);
  return std::move(s.found);
}

bool PortTables::scan(Scan& s, int64_t until) {
  // Socket inode -> the first pid holding it, looked up in the tables of
  // that process's namespace (/proc/PID/net is the process's namespace,
  // /proc/net the reader's), read through the first pid that needs them.
  constexpr size_t kBetweenClockReads = 16;
  while (s.next < s.pids.size()) {
    if (s.next % kBetweenClockReads == 0 && until != kForever && sys::monotonic_ns() >= until) return false;
    const pid_t pid = s.pids[s.next++];
    auto inodes = socket_inodes(pid);
    if (inodes.empty()) continue;
    ino_t ns = 0;
    if (!netns_of(pid, ns)) continue;
    auto [it, fresh] = netns_.try_emplace(ns);
    if (fresh) {
      bool read = false;
      for (bool v6 : {false, true}) {
        std::string path = "/proc/" + std::to_string(pid) + (v6 ? "/net/tcp6" : "/net/tcp");
        auto text = sys::read_file(path);
        if (!text) continue;  // no IPv6 on this host, or the process is gone
        read = true;
        for (auto& e : parse_tcp_table(*text, v6))
          if (e.listening) it->second.try_emplace(e.inode, Listening{e.port, std::move(e.address), v6});
      }
      if (!read) {  // gone meanwhile: the next process of that namespace reads it
        netns_.erase(it);
        continue;
      }
    }
    for (uint64_t ino : inodes) {
      auto l = it->second.find(ino);
      if (l == it->second.end() || !s.seen.insert(ino).second) continue;
      s.found.push_back({l->second.port, l->second.address, l->second.v6, pid});
    }
  }
  std::sort(s.found.begin(), s.found.end(), [](const ListeningPort& a, const ListeningPort& b) {
    return std::tie(a.port, a.v6, a.address, a.pid) < std::tie(b.port, b.v6, b.address, b.pid);
  });
  return true;
}

}  // namespace pmon::serve
