// SPDX-License-Identifier: Apache-2.0
#include "jobs/job.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <span>

#include "core/units.h"
#include "confine/scan.h"
#include "jobs/json_text.h"
#include "sys/proc.h"
#include "sys/pty.h"
#include "sys/syscalls.h"

extern char** environ;

namespace pmon::serve {

namespace {

// A read of a job's pipe goes straight into its buffer, this much at most;
// at most kReadBudget per wake, so a job that writes flat out shares the
// thread. A pipe that fills up is made this large (fewer, larger reads).
constexpr size_t kReadMax = size_t{1} << 20;
constexpr size_t kReadBudget = size_t{4} << 20;
constexpr int kLargePipe = 1 << 20;
constexpr size_t kDirectMin = 64 << 10;

enum class Drained { empty, eof, full, budget };

// Reads what a pipe has into `buffer`, at most `room` bytes (and the
// budget). *filled: one read returned all a default-sized pipe holds.
Drained read_pipe(int fd, OutputBuffer& buffer, Spool* spool, uint64_t room, std::vector<char>& scratch,
                  bool* filled) {
  size_t got = 0;
  for (;;) {
    if (room == 0) return Drained::full;
    if (got >= kReadBudget) return Drained::budget;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(room, kReadMax));
    std::span<char> into = buffer.writable(want);
    if (into.size() < std::min(want, kDirectMin)) {
      // Little room in the storage as it is (it grows with what comes, and
      // a buffer that keeps nothing still counts what went by): by a copy.
      if (scratch.size() < kDirectMin) scratch.resize(kDirectMin);
      into = std::span<char>(scratch.data(), std::min(want, kDirectMin));
    }
    ssize_t n = ::read(fd, into.data(), into.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return Drained::empty;
    if (n <= 0) return Drained::eof;
    if (spool) spool->write(std::string_view(into.data(), static_cast<size_t>(n)));
    if (into.data() == scratch.data()) buffer.append(std::string_view(into.data(), static_cast<size_t>(n)));
    else buffer.commit(static_cast<size_t>(n));
    if (n >= 65536) *filled = true;
    got += static_cast<size_t>(n);
    room -= static_cast<uint64_t>(n);
  }
}

// An end of a pipe or a pty master the service made: no status flag is set
// on it but the access mode, which F_SETFL leaves as it is.
void set_nonblocking(int fd) {
  if (fd >= 0) (void)::fcntl(fd, F_SETFL, O_NONBLOCK);  // (none: stdin from /dev/null)
}

uint32_t epoll_events(short poll_events) {
  return ((poll_events & POLLIN) ? EPOLLIN : 0u) | ((poll_events & POLLPRI) ? EPOLLPRI : 0u);
}

}  // namespace

Error fd_error(const std::string& what, int err) {
  rlimit rl{};
  if (err == EMFILE && ::getrlimit(RLIMIT_NOFILE, &rl) == 0)
    return Error::line("cannot start the job: the service has no file descriptors left (its limit is " +
                          std::to_string(rl.rlim_cur) +
                          " open files); release some jobs, or start the service under a higher 'ulimit -Hn'");
  if (err == ENFILE)
    return Error::line(
        "cannot start the job: the system has no file descriptors left (fs.file-max); release some jobs");
  return Error::line(what + ": " + std::strerror(err));
}

std::expected<JobStdio, Error> open_stdio(const CreateParams& p) {
  JobStdio io;
  if (p.pty) {
    auto pair = sys::open_pty(p.pty->rows, p.pty->cols);
    if (!pair) return std::unexpected(fd_error("cannot open a pseudo-terminal", pair.error().value()));
    io.in_w = Fd(::fcntl(pair->master.get(), F_DUPFD_CLOEXEC, 0));
    if (!io.in_w) return std::unexpected(fd_error("cannot open a pseudo-terminal", errno));
    io.out_r = std::move(pair->master);
    io.out_w = std::move(pair->slave);
  } else {
    int out_pipe[2], in_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return std::unexpected(fd_error("cannot make a pipe", errno));
    io.out_r = Fd(out_pipe[0]);
    io.out_w = Fd(out_pipe[1]);
    if (p.stdin_null) {
      // (opened once a thread, kept open; a failed open is tried again)
      thread_local int null_in = -1;
      if (null_in < 0) null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (null_in < 0) return std::unexpected(fd_error("cannot open /dev/null", errno));
      io.null_in = null_in;
    } else {
      if (::pipe2(in_pipe, O_CLOEXEC) != 0) return std::unexpected(fd_error("cannot make a pipe", errno));
      io.in_r = Fd(in_pipe[0]);
      io.in_w = Fd(in_pipe[1]);
    }
  }
  if (p.separate_stderr && !p.pty) {
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) return std::unexpected(fd_error("cannot make a pipe", errno));
    io.err_r = Fd(err_pipe[0]);
    io.err_w = Fd(err_pipe[1]);
  }
  return io;
}

RunOptions run_options(const CreateParams& p, const JobStdio& io, const SpawnBase& base, const StopPlan& stop) {
  // The job service's one reading of a job's JSON (CreateParams) as a call.
  RunOptions ro;
  ro.realtime_stop = false;  // (one thread stops every job)
  CallSpec& c = ro.call;
  if (!base.wrapper.empty()) {
    // The job's own pmon gets the job's first signal, and on a terminal
    // gives the command one of its own (copying, and passing on a resize).
    c.spawn.argv = base.wrapper;
    if (p.kill_signal) {
      c.spawn.argv.push_back("--signal");
      c.spawn.argv.push_back(std::to_string(*p.kill_signal));
    }
    if (p.pty) c.spawn.argv.push_back("--pty");
    c.spawn.argv.push_back("--");
  }
  c.spawn.argv.push_back(p.command);
  c.spawn.argv.insert(c.spawn.argv.end(), p.args.begin(), p.args.end());
  if (p.cwd) c.spawn.cwd = *p.cwd;
  if (!p.env.empty() || p.clear_env) {
    std::vector<std::string> env;
    for (char** e = p.clear_env ? nullptr : environ; e && *e; ++e) {
      std::string_view kv(*e);
      std::string_view name = kv.substr(0, kv.find('='));
      if (std::none_of(p.env.begin(), p.env.end(), [&](const EnvVar& v) { return v.name == name; }))
        env.emplace_back(kv);
    }
    for (const EnvVar& v : p.env) env.push_back(v.name + "=" + v.value);
    c.spawn.env = std::move(env);
  }
  if (p.pty) {
    c.spawn.pty_slave = io.out_w.get();
  } else {
    const int in = io.in_r ? io.in_r.get() : io.null_in;
    c.spawn.stdio = {in, io.out_w.get(), io.err_w ? io.err_w.get() : io.out_w.get()};
  }
  c.spawn.close_other_fds = true;
  c.spawn.changed_signals = &base.changed_signals;
  if (base.nofile_raised) c.spawn.nofile = &base.nofile;
  c.stop = stop;
  if (p.kill_signal && base.wrapper.empty() && !c.stop.steps.empty() &&
      c.stop.steps[0].action == StopStep::Action::signal)
    c.stop.steps[0].signal = *p.kill_signal;
  c.wait_tree = p.wait_tree;
  if (p.timeout_ms) c.timeout = std::chrono::milliseconds(*p.timeout_ms);
  if (p.idle_timeout_ms) c.idle_timeout = std::chrono::milliseconds(*p.idle_timeout_ms);
  c.limits = p.limits;
  return ro;
}

std::optional<Error> check_runnable(const CreateParams& p) {
  const std::string& cmd = p.command;
  Error e;
  e.code = Errc::not_found;
  e.err = ENOENT;
  if (cmd.empty()) {
    e.text = "cannot run '': the command name is empty";
    return e;
  }
  auto runnable = [](const std::string& path) -> int {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
  };
  auto failed = [&](int err, const std::string& why) {
    e.err = err;
    e.code = (err == ENOENT || err == ENOTDIR) ? Errc::not_found : Errc::not_executable;
    e.text = "cannot run '" + cmd + "': " + why;
    return e;
  };
  if (cmd.find('/') != std::string::npos) {
    const std::string path = cmd[0] == '/' || !p.cwd ? cmd : *p.cwd + "/" + cmd;
    const int err = runnable(path);
    if (err == 0) return std::nullopt;
    return failed(err, err == EISDIR ? "is a directory" : std::strerror(err));
  }
  std::string path_var;
  bool from_job = false;
  for (const EnvVar& v : p.env)
    if (v.name == "PATH") path_var = v.value, from_job = true;
  if (!from_job) {
    const char* env_path = p.clear_env ? nullptr : ::getenv("PATH");
    path_var = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  }
  bool denied = false;
  for (size_t at = 0; at <= path_var.size();) {
    size_t end = path_var.find(':', at);
    if (end == std::string::npos) end = path_var.size();
    std::string dir = path_var.substr(at, end - at);
    if (dir.empty()) dir = ".";
    const int err = runnable(dir + "/" + cmd);
    if (err == 0) return std::nullopt;
    if (err == EACCES) denied = true;
    at = end + 1;
  }
  if (denied) return failed(EACCES, std::strerror(EACCES));
  return failed(ENOENT, "command not found in PATH");
}

void Job::watch_started() {
  set_nonblocking(out.get());
  set_nonblocking(in.get());
  poller.watch(call->pidfd(), EPOLLIN, tag(Tag::job_main, num));
  main_watched = true;
  poller.watch(out.get(), EPOLLIN, tag(Tag::job_out, num));
  if (err) {
    set_nonblocking(err.get());
    poller.watch(err.get(), EPOLLIN, tag(Tag::job_err, num));
  }
}

// A full buffer leaves the pipe unwatched until a read makes room. At EOF
// the pipe is closed, and once the job is over also when nothing is left
// in it (an escapee of a weak boundary may hold it open).
void Job::pull(bool from_err, bool to_end, std::vector<char>& scratch) {
  Fd& fd = from_err ? err : out;
  OutputBuffer& buf = from_err ? *err_buffer : buffer;
  Flow& flow = from_err ? err_flow : out_flow;
  if (!fd) return;
  Drained d;
  const uint64_t before = buf.total();
  do {
    uint64_t room = std::numeric_limits<uint64_t>::max();
    if (backpressure) {
      uint64_t unread = buf.total() - std::min(flow.delivered, buf.total());
      room = unread >= limit ? 0 : limit - unread;
    }
    bool filled = false;
    d = read_pipe(fd.get(), buf, (from_err ? err_spool : spool).get(), room, scratch, &filled);
    if (filled && !flow.grown) {
      flow.grown = true;
      (void)::fcntl(fd.get(), F_SETPIPE_SZ, kLargePipe);  // as large as allowed; a pty is no pipe
    }
  } while (to_end && d == Drained::budget);
  // Output seen: an idle timeout starts again. A pause for a reader (the
  // buffer full of unread bytes) is not the command's idleness.
  if (buf.total() != before && call) call->note_output();
  if (d == Drained::eof || (d == Drained::empty && done)) {
    // (closing a pipe's only end takes it out of the poller; a pty master
    // has a second fd, the job's stdin, which would keep it in)
    if (!flow.paused && pty) poller.unwatch(fd.get());
    fd.reset();
    flow.paused = false;
    if (done) buf.close();
    return;
  }
  if (d == Drained::full && !flow.paused) {
    poller.unwatch(fd.get());
    flow.paused = true;
    if (call) call->hold_idle(true);
  } else if (d != Drained::full && flow.paused) {
    poller.watch(fd.get(), EPOLLIN, tag(from_err ? Tag::job_err : Tag::job_out, num));
    flow.paused = false;
    if (call) call->hold_idle(out_flow.paused || err_flow.paused);
  }
}

// (To EOF, or, for an escapee of a weak boundary that holds a pipe, to
// what is there; with backpressure what fits, the rest as readers make room.)
void Job::drain(std::vector<char>& scratch) {
  pull(false, true, scratch);
  if (!out) buffer.close();
  if (err_buffer) {
    pull(true, true, scratch);
    if (!err) err_buffer->close();
  }
}

void Job::write_stdin() {
  while (!in_pending.empty() && in) {
    ssize_t n = ::write(in.get(), in_pending.data(), in_pending.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!in_watched) poller.watch(in.get(), EPOLLOUT, tag(Tag::job_in, num));
      in_watched = true;
      return;
    }
    if (n < 0) {  // the reader is gone (EPIPE): what was not taken is dropped
      in_eof = true;
      break;
    }
    in_pending.erase(0, static_cast<size_t>(n));
  }
  if (in_pending.empty() || in_eof) drop_stdin();
  if (in_watched) poller.unwatch(in.get());
  in_watched = false;
  if (in_eof) in.reset();
}

size_t JobStdin::write_now(std::string_view data) {
  size_t done = 0;
  while (done < data.size() && in) {
    ssize_t n = ::write(in.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

bool JobStdin::hold_stdin(size_t need, size_t most, MemoryBudget& budget) {
  if (need <= in_charged) return true;
  // The storage grows by doubling, each size counted before it is made.
  const size_t cap = std::max(need, std::min(2 * in_charged, most));
  const size_t got = budget.take(cap - in_charged);
  if (got < cap - in_charged) {
    budget.give(got);
    return false;
  }
  std::string grown;
  grown.reserve(cap);
  grown += in_pending;
  in_pending.swap(grown);
  in_budget = &budget;
  in_charged = cap;
  return true;
}

void JobStdin::drop_stdin() {
  std::string().swap(in_pending);
  if (in_budget) in_budget->give(in_charged);
  in_charged = 0;
}

void Job::note_delivered(uint64_t out_next, std::optional<uint64_t> err_next) {
  out_flow.delivered = std::max(out_flow.delivered, out_next);
  if (err_next) err_flow.delivered = std::max(err_flow.delivered, *err_next);
  if (!backpressure) return;
  auto resume = [&](Fd& fd, const OutputBuffer& b, Flow& f, Tag t) {
    if (!fd || !f.paused || b.total() - f.delivered >= limit) return;
    poller.watch(fd.get(), EPOLLIN, tag(t, num));  // read in the next round of events
    f.paused = false;
  };
  resume(out, buffer, out_flow, Tag::job_out);
  if (err_buffer) resume(err, *err_buffer, err_flow, Tag::job_err);
  if (call) call->hold_idle(out_flow.paused || err_flow.paused);
}

bool JobOutput::has_new_output(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since) const {
  if (buffer.total() > since.value_or(0)) return true;
  return err_buffer && err_buffer->total() > stderr_since.value_or(0);
}

uint64_t JobOutput::new_bytes(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since) const {
  uint64_t n = buffer.total() - std::min(buffer.total(), since.value_or(0));
  if (err_buffer) n += err_buffer->total() - std::min(err_buffer->total(), stderr_since.value_or(0));
  return n;
}

OutputRead Job::read(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since, size_t max,
                     std::string storage, size_t json_cap) {
  OutputRead r;
  // Read again, fewer bytes, while the reply would be over json_cap: the
  // reply being built is bounded, not only the bytes read.
  for (int tries = 0;; ++tries) {
    r.out = buffer.read(since, std::move(storage), max);
    if (err_buffer) r.err = err_buffer->read(stderr_since, max);
    const size_t size = json_string_size(r.out.text) + (r.err ? json_string_size(r.err->text) : 0);
    if (size <= json_cap || max <= 16 || tries == 8) break;
    const size_t got = std::max(r.out.text.size(), r.err ? r.err->text.size() : 0);
    max = std::max<size_t>(16, static_cast<size_t>(static_cast<double>(std::min(max, got)) * json_cap / size * 0.95));
    storage = std::move(r.out.text);
  }
  if (done) r.exit = exit_status();
  note_delivered(r.out.next, r.err ? std::optional(r.err->next) : std::nullopt);
  return r;
}

namespace {

OutputBuffer::Read bytes_of(const OutputBuffer& b, std::optional<uint64_t> since, size_t max) {
  OutputBuffer::Read r;
  const uint64_t end = b.total();
  r.truncated = since ? *since < b.first_kept() : b.first_kept() > 0;
  const uint64_t start = std::min(std::max(since.value_or(b.first_kept()), b.first_kept()), end);
  const size_t len = static_cast<size_t>(std::min<uint64_t>(end - start, max));
  r.more = start + len < end;
  for (std::span<const char> piece : b.bytes_from(start, len)) r.text.append(piece.data(), piece.size());
  r.next = start + r.text.size();
  return r;
}

}  // namespace

OutputRead Job::read_bytes(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since, size_t max) {
  OutputRead r;
  r.out = bytes_of(buffer, since, max);
  if (err_buffer) r.err = bytes_of(*err_buffer, stderr_since, max);
  if (done) r.exit = exit_status();
  note_delivered(r.out.next, r.err ? std::optional(r.err->next) : std::nullopt);
  return r;
}

// The command first while it runs: a boundary may leave it out of its
// members (pidns, whose main process is the status relay).
std::vector<pid_t> Job::running_pids() {
  std::vector<pid_t> pids;
  if (done) return pids;
  if (own_pmon) {
    // Every process of the command is below its own pmon, the subreaper of them all.
    for (const sys::ProcStat& p : confine::live_only(sys::descendants_by_children(call->pid()))) pids.push_back(p.pid);
    return pids;
  }
  if (main_watched) pids.push_back(call->command_pid());
  // A cgroup's listing, where there is one: one read, not one a process
  // (a job of 2000 processes takes tens of ms to read each /proc stat).
  if (auto listed = call->listed_pids()) {
    for (pid_t pid : *listed)
      if (pids.empty() || pid != pids.front()) pids.push_back(pid);
    return pids;
  }
  for (const sys::ProcStat& p : call->members())
    if (pids.empty() || p.pid != pids.front()) pids.push_back(p.pid);
  return pids;
}

std::vector<ListeningPort> Job::listening(PortTables& tables) {
  if (done) return {};
  return tables.listening_ports(running_pids());
}

bool Job::waiting_for_input() {
  if (done || !in) return false;
  return waiting_for_input(running_pids());
}

bool Job::waiting_for_input(const std::vector<pid_t>& pids) {
  if (done || !in) return false;
  // What the job's readers have open: the pipe (either end's inode), or
  // the pty's terminal side (its device number).
  struct stat st {};
  if (pty) {
    int n = -1;
    char path[32];
    if (::ioctl(in.get(), TIOCGPTN, &n) != 0) return false;
    std::snprintf(path, sizeof path, "/dev/pts/%d", n);
    if (::stat(path, &st) != 0) return false;
  } else if (::fstat(in.get(), &st) != 0) {
    return false;
  }
  constexpr size_t kLooked = 64;  // a reader is among the first few
  for (size_t i = 0; i < pids.size() && i < kLooked; ++i) {
    auto fd = sys::blocked_read_fd(pids[i]);
    if (!fd) continue;
    auto f = sys::open_file_of(pids[i], *fd);
    if (f && (pty ? f->rdev == st.st_rdev : f->dev == st.st_dev && f->ino == st.st_ino)) return true;
  }
  return false;
}

EndFacts Job::end_facts() const {
  EndFacts f;
  f.stopped_by = ended_by;
  if (done) {
    const RunResult& r = call->result();
    f.timed_out = r.timed_out;
    f.oom_killed = r.oom_killed;
    f.pids_max_hit = r.pids_max_hit;
  }
  return f;
}

JobInfo Job::info(const std::vector<pid_t>& pids, std::vector<ListeningPort> ports) {
  JobInfo o;
  o.id = id;
  o.name = name;
  o.command = command;
  o.pid = call->command_pid();
  o.status = status();
  o.started = started;
  o.keep = keep;
  o.pty = pty;
  o.session = session;
  o.ports = std::move(ports);
  o.waiting_for_input = waiting_for_input(pids);
  o.end = end_facts();
  if (ready && ready->decided()) o.ready = ready->outcome()->ready;
  o.spool_path = spool_path(*this);
  o.stderr_spool_path = spool_path(*this, true);
  if (done) {
    const RunResult& r = call->result();
    o.exit = exit_status();
    o.cpu_usec = r.cpu_usec;
    o.memory_peak_bytes = r.memory_peak_bytes;
    o.cleanup_verified = r.cleanup_verified;
    if (r.session) o.in_session = JobInfo::InSession{r.session->cgroup, r.session->envelope, r.session->session, r.session->call};
  } else {
    Figures usage = call->usage();
    o.cpu_usec = usage.cpu_usec;
    o.memory_peak_bytes = usage.memory_peak_bytes;
  }
  return o;
}

void Job::watch_stop() {
  Watch w = call->finish_watch();
  if (w.rescan_ms >= 0) rescan_at = sys::monotonic_ns() + int64_t{w.rescan_ms} * 1'000'000;
  if (w.fds.size() == 1 && poller.add(w.fds[0].fd, epoll_events(w.fds[0].events), tag(Tag::job_stop, num))) {
    stop_fd = w.fds[0].fd;
    return;
  }
  stop_ep = Fd(::epoll_create1(EPOLL_CLOEXEC));
  for (const pollfd& p : w.fds) {
    epoll_event ev{};
    ev.events = epoll_events(p.events);
    (void)::epoll_ctl(stop_ep.get(), EPOLL_CTL_ADD, p.fd, &ev);
  }
  poller.watch(stop_ep.get(), EPOLLIN, tag(Tag::job_stop, num));
}

void Job::drop_stop_watch() {
  if (stop_fd >= 0) poller.unwatch(stop_fd);
  stop_fd = -1;
  if (stop_ep) poller.unwatch(stop_ep.get());
  stop_ep.reset();
}

std::string ended_words(const Job& j) { return job_ended_sentence(j.ended_by, j.call->result()); }

}  // namespace pmon::serve
