// SPDX-License-Identifier: Apache-2.0
// Which TCP ports a job's processes listen on: the socket inodes each
// process holds (/proc/PID/fd) matched against the kernel's socket tables of
// that process's own network namespace (/proc/PID/net/tcp and tcp6).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pmon::serve {

struct ListeningPort {
  uint16_t port = 0;
  std::string address;  // as printed normally: 127.0.0.1, 0.0.0.0, ::1, ::
  bool v6 = false;
  pid_t pid = 0;        // one process holding the socket (the first of `pids` that does)

  bool operator==(const ListeningPort&) const = default;
};

// Every TCP socket in LISTEN state (IPv4 and IPv6) held by any of `pids`
// (host pids), each socket once, sorted by port then address. Processes that
// are gone or cannot be read are skipped.
std::vector<ListeningPort> listening_ports(const std::vector<pid_t>& pids);

// The listening sockets of the kernel's tables, each network namespace's
// tables read once, at the first lookup that needs them, however many
// lookups follow (one scan of every job that waits for a port). A socket
// that starts listening after its namespace was read is seen by the next
// PortTables.
class PortTables {
 public:
  // listening_ports(pids), from these tables.
  std::vector<ListeningPort> listening_ports(const std::vector<pid_t>& pids);

  // The same lookup a slice at a time (a job of thousands of processes
  // takes a while): each scan() goes on from where the last stopped, until
  // every pid is looked at (true; `found` is then sorted) or the clock
  // (sys::monotonic_ns) passes `until`. Any tables may go on with it.
  struct Scan {
    std::vector<pid_t> pids;
    size_t next = 0;
    std::vector<ListeningPort> found;
    std::set<uint64_t> seen;
  };
  bool scan(Scan& s, int64_t until);

 private:
  struct Listening {
    uint16_t port = 0;
    std::string address;
    bool v6 = false;
  };
  // Network namespace (inode of /proc/PID/ns/net) -> socket inode -> socket.
  std::map<ino_t, std::unordered_map<uint64_t, Listening>> netns_;
};

// One socket of a /proc/net/tcp or tcp6 table.
struct TcpEntry {
  uint64_t inode = 0;
  uint16_t port = 0;
  std::string address;
  bool listening = false;
};

// Parses the text of /proc/net/tcp (v6 false) or /proc/net/tcp6 (v6 true);
// lines that do not parse are skipped.
std::vector<TcpEntry> parse_tcp_table(std::string_view text, bool v6);

}  // namespace pmon::serve
