// SPDX-License-Identifier: Apache-2.0
// What the client verbs of pmon serve share (cli/jobs_cmd.cpp, cli/start_cmd.cpp):
// the connection to the service, the --socket flag, and the words and
// columns they print.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/end_words.h"
#include "core/printable.h"
#include "core/units.h"
#include "jobs/job_api.h"
#include "jobs/json_text.h"
#include "jobs/output_buffer.h"
#include "jobs/socket.h"

namespace pmon::cli::jobs {

using Json = nlohmann::json;

// JSON carries text only: what the service is sent must be valid UTF-8.
inline bool is_text(std::string_view s) { return serve::valid_utf8_prefix(s) == s.size(); }

// `s` for a line of pmon's: each byte that is not UTF-8 as \xNN.
inline std::string shown(std::string_view s) {
  std::string out;
  for (;;) {
    const size_t ok = serve::valid_utf8_prefix(s);
    out.append(s.substr(0, ok));
    if (ok == s.size()) return out;
    char b[8];
    std::snprintf(b, sizeof b, "\\x%02X", static_cast<unsigned char>(s[ok]));
    out += b;
    s.remove_prefix(ok + 1);
  }
}

// The service's error in the CLI's words: a job's error is read from its
// data and said of a "job" (the protocol says "terminal"), with what the
// CLI offers to do about it; any other is the service's line.
inline std::string cli_words(const Json& error) {
  const std::string message = error.value("message", std::string("error"));
  std::optional<Error> e = error.contains("data") ? serve::error_from_data(error["data"]) : std::nullopt;
  if (!e) return message;
  const std::string here = " on this service; 'pmon jobs' lists them";
  switch (e->code) {
    case Errc::unknown_job: return "no job '" + e->job + "'" + here;
    case Errc::too_many_jobs:
      return "too many jobs (at most " + e->text + "); remove jobs that have ended with 'pmon rm ID' ('pmon jobs' "
             "lists them), or start the service with a larger --max-jobs";
    case Errc::no_such_job: {
      std::string what = "no running job";
      if (!e->text.empty()) what += " is named '" + e->text + "'" + (e->port ? " and" : "");
      if (e->port) what += " listens on TCP port " + std::to_string(*e->port);
      return what + here;
    }
    default: return serve::words(*e, "job");
  }
}

// A job id from the command line is text, or die() names `sub`.
inline void check_job_id(const std::string& sub, const std::string& id) {
  if (!is_text(id)) die(sub + ": '" + shown(id) + "' is not a job id (it is not valid UTF-8); 'pmon jobs' lists them");
}

// One blocking connection to the service.
class Client {
 public:
  Client(const std::string& socket, bool explicit_path) : path_(socket) {
    auto fd = serve::connect_service(socket, !explicit_path);
    if (!fd && fd.error().untrusted) {
      // Nothing was sent: the request holds the whole environment.
      const char* xdg = std::getenv("XDG_RUNTIME_DIR");
      const std::string fix = explicit_path   ? "give --socket (or PMON_SOCKET) a path in a directory only you can write"
                              : xdg && *xdg ? "remove it and start the service again"
                                            : "remove it or set XDG_RUNTIME_DIR";
      die(fd.error().subject + " " + fd.error().what + ": another user may be impersonating the service; " + fix);
    }
    if (!fd)
      die("no service answers on " + socket + " (" + fd.error().what + "); start one with 'pmon serve" +
          (explicit_path ? " --listen " + socket : std::string()) + " &'");
    fd_ = std::move(*fd);
  }

  // The result of `method`, or die() with the service's error line; an fd
  // that came with the reply is put in *passed.
  Json call(const std::string& method, const Json& params, Fd* passed = nullptr) {
    auto r = try_call(method, params, passed);
    if (!r) die(r.error());
    return std::move(*r);
  }

  // The same, but the service's error line (in the CLI's words) is returned.
  std::expected<Json, std::string> try_call(const std::string& method, const Json& params, Fd* passed = nullptr) {
    fds_.clear();
    const int id = next_id_++;
    std::string line = Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() + "\n";
    for (size_t off = 0; off < line.size();) {
      ssize_t n = ::write(fd_.get(), line.data() + off, line.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) die("the service on " + path_ + " closed the connection");
      off += static_cast<size_t>(n);
    }
    for (;;) {
      Json msg = read_message();
      if (!msg.contains("id") || msg["id"] != id) continue;  // a notification
      if (msg.contains("error")) return std::unexpected(cli_words(msg["error"]));
      if (passed && !fds_.empty()) *passed = std::move(fds_.front());
      fds_.clear();
      return std::move(msg["result"]);
    }
  }

 private:
  // The next message; a reply can be megabytes (a job's output), so the
  // newline is looked for in what came since, and the text is read with
  // the fast reader.
  Json read_message() {
    for (;;) {
      char* nl = len_ > scanned_ ? static_cast<char*>(std::memchr(buf_.data() + scanned_, '\n', len_ - scanned_))
                                 : nullptr;
      if (nl) {
        const size_t end = static_cast<size_t>(nl - buf_.data());
        Json j = serve::parse_json(std::string_view(buf_.data() + start_, end - start_));
        start_ = scanned_ = end + 1;
        if (start_ == len_) len_ = start_ = scanned_ = 0;
        if (!j.is_discarded()) return j;
        continue;
      }
      scanned_ = len_;
      if (start_ > 0) {  // what was parsed goes before reading more
        std::memmove(buf_.data(), buf_.data() + start_, len_ - start_);
        len_ -= start_;
        scanned_ = len_;
        start_ = 0;
      }
      if (buf_.size() < len_ + kReadSize) buf_.resize(std::max(2 * buf_.size(), len_ + kReadSize));
      ssize_t n = receive(buf_.data() + len_, kReadSize);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) die("the service on " + path_ + " closed the connection");
      len_ += static_cast<size_t>(n);
    }
  }

  // read(2), keeping the fds that come along (the service passes one with
  // a stream's reply, and never more than one a message).
  ssize_t receive(char* into, size_t len) {
    iovec iov{into, len};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) return n;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
        fds_.emplace_back(fd);
      }
    }
    return n;
  }

  static constexpr size_t kReadSize = size_t{1} << 20;
  std::deque<Fd> fds_;  // came with the messages read for the current call
  std::string path_;
  Fd fd_;
  std::vector<char> buf_;  // what came: its first len_ bytes
  size_t len_ = 0;
  size_t start_ = 0;    // where the next message begins in buf_
  size_t scanned_ = 0;  // no newline in buf_ before this
  int next_id_ = 1;
};

// --socket PATH, else $PMON_SOCKET, else the default.
struct SocketFlag {
  std::string path;
  CLI::Option* opt = nullptr;
  void add_to(CLI::App& app) {
    opt = app.add_option("--socket", path, "the service's socket (default $PMON_SOCKET, else the default path)")->type_name("PATH");
  }
  Client connect() const {
    bool given = opt->count() > 0 || std::getenv("PMON_SOCKET") != nullptr;
    return Client(opt->count() > 0 ? path : serve::default_socket_path(true), given);
  }
};

// How many columns `s` takes on a terminal: one a character (names and
// commands are UTF-8; wide characters are rare enough to ignore).
inline size_t columns_of(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
}

// A command as one line a shell would read back: words with anything but
// letters, digits and @%+=:,./-_ in single quotes; a control character
// (a newline in a script given with -c) shown as \n, \t or \xNN
// (core/printable.h), so that a row of the table stays one line and
// nothing in it acts on the terminal.
inline std::string shell_line(const Json& argv) {
  std::string line;
  for (const Json& a : argv) {
    const std::string& w = a.get_ref<const std::string&>();
    const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char ch) {
      const auto u = static_cast<unsigned char>(ch);
      return (u < 0x80 && std::isalnum(u) != 0) || (u != 0 && std::strchr("@%+=:,./-_", ch) != nullptr);
    });
    std::string word;
    for (char ch : w) {
      if (ch == '\'') word += "'\\''";
      else word += ch;
    }
    word = plain ? printable(word) : "'" + printable(word) + "'";
    line += (line.empty() ? "" : " ") + word;
  }
  return line;
}

// "running", "waiting for input", "stopping", "exited 3", "killed SIGTERM".
inline std::string status_line(const Json& t) {
  const Json& st = t["exitStatus"];
  if (st.is_object()) {
    if (st["exitCode"].is_number()) return "exited " + std::to_string(st["exitCode"].get<int>());
    if (st["signal"].is_string()) return "killed " + st["signal"].get<std::string>();
  }
  if (t.value("waitingForInput", false)) return "waiting for input";
  return t.value("status", std::string("?"));
}

// "5173,8080", or "-" when the job listens on no TCP port.
inline std::string ports_line(const Json& t) {
  std::string s;
  if (t.contains("ports") && t["ports"].is_array())
    for (const Json& p : t["ports"]) {
      const std::string port = std::to_string(p.value("port", 0));
      if (("," + s + ",").find("," + port + ",") != std::string::npos) continue;  // IPv4 and IPv6 alike
      s += (s.empty() ? "" : ",") + port;
    }
  return s.empty() ? "-" : s;
}

// How a job that has ended ended, for "pmon stop" and "pmon rm": "ended
// (exited 3)", "was stopped by its timeout", ...
inline std::string ended_words(Client& c, const std::string& id, const Json& exit_status) {
  std::string how = status_line(Json{{"exitStatus", exit_status}, {"status", "ended"}});
  auto rep = c.try_call("terminal/report", {{"terminalId", id}});
  const Json by = rep && rep->contains("job") ? (*rep)["job"].value("stoppedBy", Json(nullptr)) : Json(nullptr);
  if (!by.is_string()) return "had already ended (" + how + ")";
  return already_ended_words(by.get<std::string>());
}

// Whether job `id` still runs; its exit status in *ended when not.
inline bool job_running(Client& c, const std::string& id, Json* ended) {
  Json r = c.call("terminal/wait_for_exit", {{"terminalId", id}, {"timeoutMs", 0}});
  if (r.value("running", false)) return true;
  *ended = r;
  return false;
}

// Copies what comes on `fd` to stdout until its end; how many bytes. A
// pipe to a pipe or a file moves by splice(2), anything else by read and
// write.
inline uint64_t copy_to_stdout(int fd) {
  std::fflush(stdout);
  uint64_t total = 0;
  // A pipe on stdout is made as large as the service's (1 MiB where the
  // system allows): its reader takes more per wake-up.
  if (int size = ::fcntl(STDOUT_FILENO, F_GETPIPE_SZ); size > 0 && size < (1 << 20))
    (void)::fcntl(STDOUT_FILENO, F_SETPIPE_SZ, 1 << 20);
  for (;;) {
    ssize_t n = ::splice(fd, nullptr, STDOUT_FILENO, nullptr, size_t{1} << 20, SPLICE_F_MOVE | SPLICE_F_MORE);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL) break;  // stdout takes no splice (a terminal, a socket on old kernels)
    if (n < 0) die(std::string("logs: cannot write the output: ") + std::strerror(errno));
    if (n == 0) return total;
    total += static_cast<uint64_t>(n);
  }
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die(std::string("logs: cannot read the output: ") + std::strerror(errno));
    if (n == 0) return total;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(STDOUT_FILENO, buf.data() + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) die(std::string("logs: cannot write the output: ") + std::strerror(errno));
      off += w;
    }
    total += static_cast<uint64_t>(n);
  }
}

}  // namespace pmon::cli::jobs
