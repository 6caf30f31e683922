#include "serve/service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "confine/cgroup_fs.h"
#include "core/report.h"
#include "core/run.h"
#include "serve/call_records.h"
#include "serve/mcp.h"
#include "serve/output_buffer.h"
#include "serve/owner_call.h"
#include "serve/ports.h"
#include "serve/protocol.h"
#include "serve/request_budget.h"
#include "sys/pty.h"
#include "sys/syscalls.h"

extern char** environ;

namespace pmon::serve {

namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
constexpr size_t kTidyBatch = 8;
// Stop work (the start of a job's stop, each later step of it) is taken
// from a queue at most this many items, or this long, a round of the loop
// (always one at least): a session/close of 400 jobs is done in many short
// rounds, and other clients' requests are read and answered between them.
// After a slice that took its whole time the loop waits up to kStopPauseMs
// for events before the next: the jobs just signalled exit meanwhile (on a
// small machine their exits, the kernel's teardown of their namespaces,
// would otherwise take the CPU from the service in the middle of a slice),
// and a request that comes wakes it at once.
constexpr size_t kStopBatch = 64;
constexpr int64_t kStopSliceNs = 2'000'000;
constexpr int kStopPauseMs = 1;
// An output read waiting for new bytes (waitMs) is answered once this much
// is new, or this long after the first new bytes came.
constexpr uint64_t kCoalesceBytes = 1 << 20;
constexpr int64_t kCoalesceNs = 1'000'000;
// Storage kept for the next output reply, at most this large (what the
// service holds on to after a large read, twice: the text and the line).
constexpr size_t kSpareMax = size_t{32} << 20;
// A connection whose replies not yet sent are more than this is not read
// until they drain (nor are its waiting output reads answered): a client
// that sends faster than it reads waits, and holds at most this plus one
// reply. The same once all connections together hold their share of the
// memory budget, for each that has anything unsent.
constexpr size_t kConnQueueBound = size_t{1} << 20;
// The budget's share for the jobs' output buffers and for the connections
// (replies not yet sent, requests half read, requests waiting for their
// answer). Of the connections' quarter, requests half read may take half
// and requests waiting a quarter, so replies always have a quarter of it.
size_t output_share(size_t budget) { return budget / 4 * 3; }
size_t queue_share(size_t budget) { return budget / 4; }
size_t line_share(size_t budget) { return budget / 8; }
size_t waiting_share(size_t budget) { return budget / 16; }
// Requests one connection may have waiting for their answer at once.
constexpr size_t kMaxWaiting = 1024;

// What an epoll event is about: the kind in the top byte, an id below.
enum class Tag : uint64_t {
  listener = 1, signals, timer, parent, conn_in, conn_out, job_main, job_out, job_in, job_stop, job_err, stream
};
uint64_t tag(Tag t, uint64_t id = 0) { return (static_cast<uint64_t>(t) << 56) | id; }
Tag tag_kind(uint64_t v) { return static_cast<Tag>(v >> 56); }
uint64_t tag_id(uint64_t v) { return v & ((uint64_t{1} << 56) - 1); }
// A job_main tag with this bit is the watch of the job's owner call (the
// process whose end is that call's end), not of its main process.
constexpr uint64_t kOwnerWatch = uint64_t{1} << 55;

// "t" and 16 hex digits from getrandom: ids a client of another session
// cannot guess (a counter's next value would name somebody's job).
std::string random_terminal_id() {
  uint64_t v = 0;
  size_t got = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  while (got < sizeof v) {
    ssize_t n = ::getrandom(p + got, sizeof v - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "t%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string iso_time(std::chrono::system_clock::time_point t) {
  std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  (void)::gmtime_r(&s, &tm);
  char buf[64];
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

void set_nonblocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

// A reply that is owed later (wait_for_exit, a kill or release that waits
// for the tree to be verified gone, an output read that waits for bytes).
struct Pending {
  enum class Kind { exit, stopped, output, port, run };
  Kind kind = Kind::exit;
  uint64_t conn = 0;
  Json id;
  std::optional<mcp::Tool> tool;  // answered as this MCP tool's result
  int64_t deadline = kForever;
  std::optional<uint64_t> since;  // Kind::output
  std::optional<uint64_t> stderr_since;
  size_t max_bytes = 0;           // Kind::output
  int64_t hold_until = 0;         // Kind::output: a few new bytes wait for more until then
  std::optional<uint16_t> port;   // Kind::port: this one, or any
  int64_t next_scan = 0;          // Kind::port
  uint64_t timeout_ms = 0;        // Kind::port, for the error
  RequestBudget::Ticket ticket;   // its share of the budget, given back with it
};

// A listening socket can only be seen in the kernel's tables, with no event
// when one appears: while (and only while) somebody waits for a port, the
// job's processes are looked at this often, once for all its waiters, and
// every job at the same moments (the times that are whole multiples of it),
// so one read of the tables serves all of them.
constexpr int64_t kPortScanNs = 50'000'000;

// How far a job's stream has been read, by the job and by its readers.
struct Flow {
  uint64_t delivered = 0;  // bytes of the buffer some output read has returned
  bool paused = false;     // the pipe is full for now: not watched
  bool grown = false;      // its pipe was made larger (a job that writes a lot)
};

// terminal/output with `stream`: a job's bytes from `at` on, written as the
// job wrote them into a pipe whose read end went to the client. It ends
// (the pipe closed) when the job's output has ended and all of it is
// written, at `until` (without follow), when bytes it had still to write
// were dropped from the buffer (the reader then asks terminal/output,
// which says so), when its reader closes its end, and with the job or the
// connection that asked for it.
struct Stream {
  uint64_t id = 0;
  uint64_t conn = 0;
  uint64_t job = 0;  // Job::num
  Fd pipe;           // our end, nonblocking
  uint64_t at = 0;
  uint64_t until = std::numeric_limits<uint64_t>::max();
  bool watched = false;  // for room in the pipe
};

// At most this many streams per connection; each pipe is made this large.
constexpr size_t kMaxStreams = 64;
constexpr int kStreamPipe = 1 << 20;

struct Job {
  uint64_t num = 0;  // epoll tags
  std::string id;    // random_terminal_id()
  std::string name;
  std::vector<std::string> command;
  uint64_t owner = 0;   // the connection whose end stops it; 0: the service's (keep)
  uint64_t creator = 0; // gets terminal/exited
  // The pmon call it was asked for from inside (keep or not), which it ends
  // with: a job of ours (its num), the process whose end is that call's end
  // (watched), and the call's leaf when this job's leaf was made in it.
  uint64_t owner_job = 0;
  Fd owner_pidfd;
  std::string owner_leaf;
  // The record of it left for that call's pmon, which stops it and lists
  // it in its report (serve/call_records.h); removed once it is over.
  std::string record;
  pid_t record_for = 0;  // that pmon (its start time below): its kill is its call's end
  uint64_t record_for_start = 0;
  std::optional<std::string> session;
  bool keep = false;
  bool pty = false;  // out and in are the pty's master (two fds of it)
  std::unique_ptr<Call> call;
  Fd out;  // stdout and stderr of the job, one pipe (stdout alone with separateStderr)
  Fd in;   // its stdin
  OutputBuffer buffer;
  Fd err;  // separateStderr: stderr, kept in err_buffer
  std::unique_ptr<OutputBuffer> err_buffer;
  // outputBackpressure: a pipe is not read while its buffer holds `limit`
  // bytes no read has returned yet (the job's writes then block).
  bool backpressure = false;
  size_t limit = 0;
  Flow out_flow, err_flow;
  std::string in_pending;
  bool in_eof = false;  // close stdin once in_pending is written
  bool main_watched = false;
  bool in_watched = false;
  // The stop's watch: its one fd (a leaf's cgroup.events, a pidfd) in our
  // epoll as it is, or several in an epoll of their own inside ours.
  int stop_fd = -1;
  Fd stop_ep;
  int64_t deadline = kForever;  // the job's own timeout
  int64_t rescan_at = kForever;
  std::chrono::system_clock::time_point started;
  std::string ended_by;  // why pmon stopped it: "kill", "release", ...
  // Stop work waiting in Service::stop_queue_ for its turn: the stop is to
  // begin (why, and who asked), or its next step is due (its watch fired,
  // or its deadline passed). A stop asked for while the end of a main
  // process that exited on its own waits is asked again after that.
  bool stop_queued = false;
  Call::End queued_why = Call::End::cancel;
  std::string queued_by;
  std::optional<std::pair<Call::End, std::string>> stop_after;
  bool step_queued = false;
  bool forget = false;   // dropped once over (release, its owner's end)
  std::string report;    // its terminal/report result, dumped, once made
  bool done = false;
  std::vector<Pending> pending;
  std::vector<uint64_t> streams;  // ids in Service::streams_
  // The ports its waiters were last answered from, and the scan interval
  // (now / kPortScanNs) they were looked up in.
  Json ports_seen;
  int64_t ports_slot = -1;

  Job(size_t limit, MemoryBudget* budget) : buffer(limit, budget) {}

  // Its stop has begun, or waits for its turn.
  bool stopping() const { return stop_queued || call->finishing(); }

  const char* status() const {
    if (done) return "exited";
    return stopping() ? "stopping" : "running";
  }
};

struct Conn {
  uint64_t id = 0;
  Fd sock;          // a socket connection; for --stdio the two fds below
  int in_fd = -1;
  int out_fd = -1;
  std::string inbuf;
  size_t inbuf_charged = 0;  // what inbuf counts against the budget (its capacity)
  bool discarding = false;   // inside a line that was too long
  // Its requests waiting for their answer (see RequestBudget).
  std::shared_ptr<RequestBudget::Tally> waiting = std::make_shared<RequestBudget::Tally>();
  // A message, and the fd that goes with its first byte (terminal/output's
  // stream: SCM_RIGHTS).
  struct Out {
    std::string text;
    Fd fd;
  };
  std::deque<Out> outq;  // whole messages, the first sent from out_off on
  size_t out_off = 0;
  bool passes_fds = false;  // a Unix socket: fds can go with a reply
  size_t streams = 0;
  size_t queued_behind = 0;  // bytes of the messages after the first
  size_t queued = 0;         // bytes of all the messages in outq
  // Input backpressure: its requests are not read while its replies have
  // not drained (Service::backed_up); --stdio keeps what it read meanwhile.
  bool reading_paused = false;
  std::string held;
  bool out_watched = false;
  bool flush_due = false;  // queued to be written after this round of events
  // A socket's bytes are peeked, handled, and read out only once the
  // replies are written (consume_peeked): reading them first would free
  // room in the client's send buffer and wake it, waiting for its reply,
  // for nothing (AF_UNIX wakes a writer on every byte read).
  size_t peeked = 0;
  bool doomed = false;  // dropped after this batch of events
};

class Service {
 public:
  Service(Backend& backend, const ServeOptions& opts)
      : backend_(backend),
        opts_(opts),
        output_budget_(output_share(opts.memory_budget)),
        waiting_(waiting_share(opts.memory_budget), kMaxWaiting) {}
  int run();

 private:
  // A reply written already, as its line (terminal/output's fast path).
  struct Line {
    std::string text;
  };
  // A result that hands the client an fd along with it.
  struct WithFd {
    Json result;
    Fd fd;
  };
  using Answer = std::variant<Json, RpcError, std::monostate, Line, WithFd>;  // monostate: deferred

  // The event loop.
  bool setup();
  void watch_fd(int fd, uint32_t events, uint64_t t);
  void unwatch_fd(int fd);
  void on_event(uint64_t t, uint32_t events);
  void on_signals();
  void on_accept();
  void on_conn_readable(Conn& c);
  size_t take_lines(Conn& c, const char* buf, size_t n);
  bool hold_line(Conn& c, size_t want);
  void note_inbuf(Conn& c);
  void tell_and_close(Conn& c, const RpcError& e);
  void handle_line(Conn& c, std::string_view line);
  bool backed_up(const Conn& c, size_t adding = 0) const;
  void pause_reading(Conn& c);
  void unpause_drained();
  void resume_reading();
  void watch_conn(Conn& c);
  void on_conn_writable(Conn& c);
  void on_line(Conn& c, std::string_view line);
  void on_mcp_line(Conn& c, std::string_view line);
  void send(uint64_t conn, std::string line, Fd fd = Fd());
  void flush_sends();
  void make_reports();
  void consume_peeked(Conn& c);
  void drop_conn(uint64_t conn);
  void schedule_drop(Conn& c);
  void drop_doomed();
  void arm_timer();
  void on_time();
  void begin_shutdown();

  // Jobs.
  Job* find_job(const std::string& id);
  void on_job_output(Job& j);
  void on_job_stderr(Job& j);
  void pull(Job& j, bool err, bool to_end);
  void drain_output(Job& j);
  std::string output_line(const Json& id, Job& j, std::optional<uint64_t> since,
                          std::optional<uint64_t> stderr_since, size_t max);
  size_t reply_bytes(uint64_t asked) const;
  std::optional<RpcError> admit(Conn& c, Pending& w);
  std::optional<RpcError> output_fits(const CreateParams& p) const;
  void note_delivered(Job& j, uint64_t out_next, std::optional<uint64_t> err_next);
  void on_job_stdin(Job& j);
  Answer open_stream(Conn& c, Job& j, const OutputParams& p);
  void pump_streams(Job& j);
  bool pump(Stream& s, Job& j);
  void end_stream(uint64_t sid);
  void on_main_exit(Job& j);
  void begin_stop(Job& j, Call::End why, const std::string& by);
  void start_stop(Job& j);
  void queue_step(Job& j);
  void run_stop_queue();
  Result<const PeerCall*> peer_call_of(Conn& c);
  void note_owner_end(Job& j);
  bool asked_by_call_pmon(Conn& c, const Job& j) const;
  void stop_owned(uint64_t owner_num);
  void after_finish_step(Job& j, bool over);
  void drop_stop_watch(Job& j);
  void job_over(Job& j);
  void settle_pending(Job& j);
  void erase_job(const std::string& id);
  Json output_json(Job& j, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since,
                   size_t max = OutputParams::kDefaultMaxBytes);
  Json ports_of(Job& j);
  PortTables& port_tables();
  Json job_json(Job& j);
  Json report_of(const Job& j) const;

  // The methods: typed params in, an answer out. None touches a socket.
  Answer handle(Conn& c, const Request& r);
  Answer create(Conn& c, const CreateParams& p);
  Answer output(Conn& c, const Json& id, const OutputParams& p);
  Answer wait_for_exit(Conn& c, const Json& id, const WaitForExitParams& p);
  Answer write(const WriteParams& p);
  Answer kill(Conn& c, const Json& id, const TerminalParams& p, bool release);
  Answer list(const ListParams& p);
  Answer resize(const ResizeParams& p);
  Answer wait_for_port(Conn& c, const Json& id, const WaitForPortParams& p);
  Answer report(const Json& id, const TerminalParams& p);
  Answer session_close(Conn& c, const Json& id, const SessionCloseParams& p);

  // MCP: a tool call on the same methods, its answer shaped as the tool's.
  Answer tool_call(Conn& c, const Json& id, const mcp::ToolCall& call);
  Answer run_tool(Conn& c, const Json& id, const mcp::RunArgs& a);
  Json run_summary(Job& j);
  void cancel_request(uint64_t conn, const Json& id);
  std::string reply_line(const Pending& p, const Json& result) const;
  std::string reply_error(const Pending& p, const RpcError& e) const;

  Backend& backend_;
  ServeOptions opts_;
  MemoryBudget output_budget_;  // the jobs' output buffers; declared before jobs_, which give it back
  size_t queued_total_ = 0;     // bytes of replies not yet sent, all connections
  size_t lines_held_ = 0;       // bytes of requests half read (inbuf), all connections
  RequestBudget waiting_;       // requests waiting for their answer; declared before jobs_, which hold them
  std::vector<uint64_t> paused_;     // connections not read (input backpressure)
  std::vector<uint64_t> to_resume_;  // --stdio: read again, from what it held
  Fd ep_, sig_, timer_, parent_;
  std::map<uint64_t, Conn> conns_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  std::map<uint64_t, std::string> job_keys_;  // numeric id -> terminal id
  uint64_t next_conn_ = 1;
  uint64_t next_job_ = 1;
  // What create() found out about each socket connection's peer, once.
  std::map<uint64_t, PeerCall> peer_calls_;
  std::optional<std::string> cgroup_mount_;
  size_t owned_jobs_ = 0;  // jobs with an owner_job
  std::vector<uint64_t> doomed_;
  std::vector<uint64_t> to_flush_;
  std::map<uint64_t, Stream> streams_;
  uint64_t next_stream_ = 1;
  std::vector<uint64_t> to_consume_;
  std::vector<std::string> to_report_;  // jobs just over whose report is made after the replies go
  // Stop work in the order it was asked for (Job::stop_queued, step_queued):
  // a job's num, and whether its stop is to begin (else: its next step).
  struct StopWork {
    uint64_t job = 0;
    bool begin = false;
  };
  std::deque<StopWork> stop_queue_;
  bool stop_slice_full_ = false;  // the last slice of it took its whole time
  std::vector<char> scratch_;  // for a pipe whose buffer keeps nothing
  // Storage kept from one output reply to the next (large ones would
  // otherwise be fresh pages each time): the text read, a sent line.
  std::string text_spare_, line_spare_;
  bool shutting_down_ = false;
  int64_t armed_ = kForever;  // what the timer was last set to
  bool all_verified_ = true;
  // What our jobs' children reset before exec: the service sets its
  // dispositions here, once, and never again.
  sigset_t changed_signals_{};
  // The open-files limit the service was started with, which its jobs get
  // back before exec (setup() raises the service's own soft limit).
  rlimit job_nofile_{};
  bool nofile_raised_ = false;
  // Out of fds, the listener is not watched (a connection waiting in its
  // backlog would wake us at once, for ever); this timer, tagged as the
  // listener, brings it back.
  Fd accept_retry_;
  bool accept_paused_ = false;
  // --stdio on a regular file or /dev/null, which epoll refuses (a read of
  // it never waits): an eventfd that is always ready stands for it, so it
  // is read to its end in turns with everything else.
  Fd stdin_ready_;
  std::optional<mcp::Tool> current_tool_;  // while a tools/call runs the engine
  // The kernel's socket tables as read in one scan interval (the number
  // now / kPortScanNs), for every port lookup in it.
  std::optional<PortTables> port_tables_;
  int64_t port_tables_slot_ = -1;
};

uint64_t new_bytes(const Job& j, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since) {
  uint64_t n = j.buffer.total() - std::min(j.buffer.total(), since.value_or(0));
  if (j.err_buffer) n += j.err_buffer->total() - std::min(j.err_buffer->total(), stderr_since.value_or(0));
  return n;
}

bool has_new_output(const Job& j, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since) {
  if (j.buffer.total() > since.value_or(0)) return true;
  return j.err_buffer && j.err_buffer->total() > stderr_since.value_or(0);
}

std::string port_words(std::optional<uint16_t> port) {
  return port ? "TCP port " + std::to_string(*port) : std::string("any TCP port");
}

RpcError unknown_terminal(const std::string& id) {
  return {rpc::kServerError, "unknown terminal '" + id + "'"};
}

bool Service::setup() {
  ep_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  (void)::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  changed_signals_ = sys::non_default_dispositions();
  sig_ = Fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  timer_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!ep_ || !sig_ || !timer_) return false;
  watch_fd(sig_.get(), EPOLLIN, tag(Tag::signals));
  watch_fd(timer_.get(), EPOLLIN, tag(Tag::timer));
  // A job holds about six fds (its pipes, pidfd, leaf): under the usual
  // soft limit of 1024 fewer than 170 would fit, whatever --max-jobs says.
  if (::getrlimit(RLIMIT_NOFILE, &job_nofile_) == 0 && job_nofile_.rlim_cur < job_nofile_.rlim_max) {
    rlimit raised = job_nofile_;
    raised.rlim_cur = raised.rlim_max;
    nofile_raised_ = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
  }
  if (opts_.listen_fd >= 0) {
    accept_retry_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!accept_retry_) return false;
    watch_fd(accept_retry_.get(), EPOLLIN, tag(Tag::listener, 1));
    watch_fd(opts_.listen_fd, EPOLLIN, tag(Tag::listener));
  }
  if (opts_.die_with_parent) {
    pid_t ppid = ::getppid();
    auto pfd = sys::pidfd_open(ppid);
    // The parent may have died before its pidfd was opened: then we were
    // reparented already and getppid() says so.
    if (!pfd || ::getppid() != ppid) return begin_shutdown(), true;
    parent_ = std::move(*pfd);
    watch_fd(parent_.get(), EPOLLIN, tag(Tag::parent));
  }
  if (opts_.stdio) {
    Conn c;
    c.id = next_conn_++;
    c.in_fd = STDIN_FILENO;
    c.out_fd = STDOUT_FILENO;
    int domain = 0;
    socklen_t dlen = sizeof domain;
    c.passes_fds = ::getsockopt(c.out_fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain == AF_UNIX;
    set_nonblocking(c.in_fd);
    set_nonblocking(c.out_fd);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag(Tag::conn_in, c.id);
    if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, c.in_fd, &ev) != 0 && errno == EPERM) {
      stdin_ready_ = Fd(::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK));
      if (!stdin_ready_ || ::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, stdin_ready_.get(), &ev) != 0) return false;
    }
    conns_.emplace(c.id, std::move(c));
  }
  return true;
}

void Service::watch_fd(int fd, uint32_t events, uint64_t t) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = t;
  if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
    (void)::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, fd, &ev);
}

void Service::unwatch_fd(int fd) {
  if (fd >= 0) (void)::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

int Service::run() {
  if (!setup()) return 125;
  std::vector<epoll_event> evs(256);
  backend_.defer_cleanup();
  backend_.keep_helpers_apart();
  for (;;) {
    if (shutting_down_ && jobs_.empty()) break;
    arm_timer();
    // What jobs that are over left behind (their cgroup leaves) is removed
    // when nothing else is ready, a few at a time: a client waiting to hear
    // that its 1000 jobs are gone does not wait for 1000 rmdirs. While stop
    // work is queued, events are only looked at, not waited for.
    const bool tidy = backend_.cleanup_due();
    const bool busy = !to_resume_.empty() || !stop_queue_.empty();
    const int wait_ms = !to_resume_.empty() ? 0 : !stop_queue_.empty() ? (stop_slice_full_ ? kStopPauseMs : 0) : tidy ? 0 : -1;
    int n = ::epoll_wait(ep_.get(), evs.data(), static_cast<int>(evs.size()), wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return 125;
    }
    if (n == 0 && tidy && !busy) {
      // (An rmdir of a leaf can take a while: a few, or 2 ms of them.)
      const int64_t until = sys::monotonic_ns() + kStopSliceNs;
      for (size_t i = 0; i < kTidyBatch && backend_.cleanup_due(); ++i) {
        backend_.tidy(1);
        if (sys::monotonic_ns() >= until) break;
      }
      continue;
    }
    // Out of memory is an error reply where a request could be named
    // (handle_line), else the event is dropped: the service, and with it
    // its promise to stop every job, stays up.
    try {
      for (int i = 0; i < n; ++i) on_event(evs[i].data.u64, evs[i].events);
      resume_reading();
      on_time();
      run_stop_queue();
      flush_sends();
      make_reports();
    } catch (const std::bad_alloc&) {
    }
    drop_doomed();
  }
  // Last words to the clients still here, without waiting for slow ones.
  for (auto& [id, c] : conns_)
    if (!c.doomed) on_conn_writable(c);
  return all_verified_ ? 0 : 125;
}

// Connections are dropped between events, never inside a handler: a reply
// that overflows a queue must not end jobs under the code that sent it.
void Service::schedule_drop(Conn& c) {
  if (c.doomed) return;
  c.doomed = true;
  doomed_.push_back(c.id);
}

void Service::drop_doomed() {
  while (!doomed_.empty()) {
    std::vector<uint64_t> v = std::move(doomed_);
    doomed_.clear();
    for (uint64_t id : v) drop_conn(id);
  }
}

void Service::on_event(uint64_t t, uint32_t events) {
  const uint64_t id = tag_id(t);
  switch (tag_kind(t)) {
    case Tag::listener: on_accept(); return;
    case Tag::signals: on_signals(); return;
    case Tag::timer: {
      uint64_t v;
      (void)!::read(timer_.get(), &v, sizeof v);
      return;  // on_time() runs after every batch
    }
    case Tag::parent: unwatch_fd(parent_.get()); begin_shutdown(); return;
    case Tag::conn_in:
    case Tag::conn_out: {
      auto it = conns_.find(id);
      if (it == conns_.end()) return;
      Conn& c = it->second;
      if (c.doomed) return;
      // A socket is one fd for both directions (tagged conn_in).
      if (tag_kind(t) == Tag::conn_out || (events & EPOLLOUT)) on_conn_writable(c);
      if (tag_kind(t) != Tag::conn_in || c.doomed || (events & ~uint32_t{EPOLLOUT}) == 0) return;
      // Not read meanwhile (its replies drain first); a hang-up is its end.
      if (c.reading_paused) {
        if (events & (EPOLLHUP | EPOLLERR)) schedule_drop(c);
        return;
      }
      on_conn_readable(c);
      return;
    }
    case Tag::stream: {
      auto it = streams_.find(id);
      if (it == streams_.end()) return;
      auto key = job_keys_.find(it->second.job);
      Job* j = key == job_keys_.end() ? nullptr : find_job(key->second);
      if (!j || (events & (EPOLLERR | EPOLLHUP)) || !pump(it->second, *j)) end_stream(id);
      return;
    }
    default: break;
  }
  auto key = job_keys_.find(id & ~kOwnerWatch);
  if (key == job_keys_.end()) return;
  Job* j = find_job(key->second);
  if (!j) return;
  switch (tag_kind(t)) {
    case Tag::job_main:
      if (id & kOwnerWatch) {
        // The call this job was asked for from has ended.
        unwatch_fd(j->owner_pidfd.get());
        j->owner_pidfd.reset();
        begin_stop(*j, Call::End::cancel, "owner call ended");
        return;
      }
      on_main_exit(*j);
      return;
    case Tag::job_out:
      on_job_output(*j);
      // A job's pipe ends a moment before its main process is reaped (a
      // process closes its files on the way out): when its pidfd says so
      // already, the exit is handled in this wake, not in one more.
      if (!j->out && j->main_watched && readable_now(j->call->pidfd())) on_main_exit(*j);
      return;
    case Tag::job_err: on_job_stderr(*j); return;
    case Tag::job_in: on_job_stdin(*j); return;
    case Tag::job_stop: {
      if (!j->call->finishing()) return;  // (an event of a watch dropped in this batch)
      // The step is taken in its turn (the stop re-reads the boundary then).
      queue_step(*j);
      return;
    }
    default: return;
  }
}

void Service::on_signals() {
  signalfd_siginfo info;
  while (::read(sig_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) begin_shutdown();
}

void Service::begin_shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  if (opts_.listen_fd >= 0) unwatch_fd(opts_.listen_fd);
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_) ids.push_back(id);
  for (const std::string& id : ids)
    if (Job* j = find_job(id)) {
      j->forget = true;
      if (j->done) erase_job(id);
      else begin_stop(*j, Call::End::cancel, "service stopped");
    }
}

void Service::on_accept() {
  if (accept_paused_) {  // the retry timer fired
    uint64_t v;
    (void)!::read(accept_retry_.get(), &v, sizeof v);
    accept_paused_ = false;
    if (shutting_down_) return;
    watch_fd(opts_.listen_fd, EPOLLIN, tag(Tag::listener));
  }
  for (;;) {
    int fd = ::accept4(opts_.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
    if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
      // Out of fds: the connection stays in the backlog, and would wake us
      // again at once. Tried again in a while instead (the clients wait).
      unwatch_fd(opts_.listen_fd);
      itimerspec in{};
      in.it_value.tv_nsec = 100'000'000;
      (void)::timerfd_settime(accept_retry_.get(), 0, &in, nullptr);
      accept_paused_ = true;
      return;
    }
    if (fd < 0) return;  // EAGAIN: all taken
    Fd sock(fd);
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        (cred.uid != ::geteuid() && cred.uid != 0)) {
      std::string line = error_line(nullptr, {rpc::kServerError,
                                              "permission denied: this service serves uid " +
                                                  std::to_string(::geteuid()) + " and root only"});
      (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      continue;  // closed by Fd
    }
    // Room for large replies (a job's output) in fewer wakes of either
    // side; the kernel caps it (net.core.wmem_max).
    int sndbuf = 4 << 20;
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    Conn c;
    c.id = next_conn_++;
    c.in_fd = c.out_fd = fd;
    c.passes_fds = true;
    c.sock = std::move(sock);
    watch_fd(fd, EPOLLIN | EPOLLRDHUP, tag(Tag::conn_in, c.id));
    conns_.emplace(c.id, std::move(c));
  }
}

void Service::on_conn_readable(Conn& c) {
  const uint64_t cid = c.id;
  const bool peek = c.sock.get() >= 0;
  if (peek) consume_peeked(c);  // (read out already, unless a round was cut short)
  char buf[65536];
  // A bounded number of reads per wake, so one busy client cannot starve
  // the others; a socket is peeked once, and woken again for the rest.
  for (int round = 0; round < (peek ? 1 : 16) && !c.reading_paused; ++round) {
    ssize_t n = peek ? ::recv(c.in_fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT) : ::read(c.in_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      // EOF: a socket client went; on --stdio the service stops.
      if (opts_.stdio && c.sock.get() < 0) {
        unwatch_fd(c.in_fd);
        stdin_ready_.reset();
        begin_shutdown();
        return;
      }
      schedule_drop(c);
      return;
    }
    // Only the bytes handled are taken: a socket's rest stays in it until
    // the connection is read again, what --stdio read is held.
    const size_t used = take_lines(c, buf, static_cast<size_t>(n));
    if (c.doomed) return;
    if (peek && used > 0) {
      c.peeked = used;
      to_consume_.push_back(cid);
    }
    if (!peek && used < static_cast<size_t>(n)) c.held.assign(buf + used, static_cast<size_t>(n) - used);
  }
}

// Handles the whole lines in buf and keeps the start of the next; stops
// after a line whose reply backs the connection up (pause_reading).
// Returns how many bytes of buf were taken. A line is at most max_line
// bytes, its newline not counted.
size_t Service::take_lines(Conn& c, const char* buf, size_t n) {
  const uint64_t cid = c.id;
  auto refuse = [&] {
    send(cid, error_line(nullptr, {rpc::kInvalidRequest, "invalid request: line longer than " +
                                                             std::to_string(opts_.max_line) + " bytes"}));
  };
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] != '\n') continue;
    if (c.discarding) {
      c.discarding = false;
    } else if (c.inbuf.size() + (i - start) > opts_.max_line) {
      std::string().swap(c.inbuf);
      note_inbuf(c);
      refuse();
    } else {
      c.inbuf.append(buf + start, i - start);
      std::string line = std::move(c.inbuf);
      c.inbuf.clear();
      note_inbuf(c);
      handle_line(c, line);
    }
    start = i + 1;
    if (c.doomed) return start;
    if (backed_up(c)) {
      pause_reading(c);
      return start;
    }
  }
  if (!c.discarding && c.inbuf.size() + (n - start) > opts_.max_line) {
    std::string().swap(c.inbuf);
    note_inbuf(c);
    c.discarding = true;
    refuse();
  } else if (!c.discarding && n > start) {
    if (!hold_line(c, c.inbuf.size() + (n - start))) {
      tell_and_close(c, {rpc::kServerError,
                         "the service's memory budget for requests being read is used up (" +
                             std::to_string(line_share(opts_.memory_budget)) +
                             " bytes, an eighth of --memory-budget " + std::to_string(opts_.memory_budget >> 20) +
                             "M, held by requests not yet ended by a newline): this connection is closed; "
                             "send shorter requests, try again later, or start the service with a larger "
                             "--memory-budget"});
      return n;
    }
    c.inbuf.append(buf + start, n - start);
  }
  return n;
}

// Room in the connection's inbuf for `want` bytes of a request not yet
// whole, counted against the budget's share for them: its storage grows
// by doubling, never past the line limit. --stdio, one connection, always
// fits (the share is at least twice the line limit).
bool Service::hold_line(Conn& c, size_t want) {
  if (want <= c.inbuf.capacity()) return true;
  const size_t cap = std::max(want, std::min(c.inbuf.capacity() * 2, opts_.max_line));
  if (c.sock && lines_held_ - c.inbuf_charged + cap > line_share(opts_.memory_budget)) return false;
  c.inbuf.reserve(cap);
  note_inbuf(c);
  return true;
}

void Service::note_inbuf(Conn& c) {
  lines_held_ = lines_held_ - c.inbuf_charged + c.inbuf.capacity();
  c.inbuf_charged = c.inbuf.capacity();
}

// One error line, written now if the connection takes it, and the
// connection's end (its jobs as for any connection that closes).
void Service::tell_and_close(Conn& c, const RpcError& e) {
  send(c.id, error_line(nullptr, e));
  if (!c.doomed) on_conn_writable(c);
  schedule_drop(c);
}

// One request; out of memory while it is handled is its error reply.
void Service::handle_line(Conn& c, std::string_view line) {
  const uint64_t cid = c.id;
  try {
    on_line(c, line);
  } catch (const std::bad_alloc&) {
    Json id = nullptr;
    try {
      Json m = Json::parse(line, nullptr, false);
      if (m.is_object() && m.contains("id")) id = m["id"];
    } catch (const std::bad_alloc&) {
    }
    send(cid, error_line(id, {rpc::kServerError, "out of memory while handling this request; "
                                                 "read output in smaller pieces (maxBytes) or try again later"}));
  }
}

// Whether the connection's replies not yet sent (and `adding` more) are
// as many as it may hold before it is read again (kConnQueueBound).
bool Service::backed_up(const Conn& c, size_t adding) const {
  const size_t unsent = c.queued - std::min(c.queued, c.out_off) + adding;
  if (unsent == 0) return false;
  return unsent > kConnQueueBound ||
         queued_total_ + adding + lines_held_ + waiting_.used() > queue_share(opts_.memory_budget);
}

void Service::pause_reading(Conn& c) {
  if (c.reading_paused) return;
  c.reading_paused = true;
  paused_.push_back(c.id);
  watch_conn(c);
}

// The connections whose replies drained are watched again; one that held
// lines (--stdio) handles them in the next round, in order.
void Service::unpause_drained() {
  for (size_t i = 0; i < paused_.size();) {
    auto it = conns_.find(paused_[i]);
    if (it == conns_.end() || it->second.doomed) {
      paused_.erase(paused_.begin() + static_cast<ptrdiff_t>(i));
      continue;
    }
    Conn& c = it->second;
    if (backed_up(c)) {
      ++i;
      continue;
    }
    c.reading_paused = false;
    paused_.erase(paused_.begin() + static_cast<ptrdiff_t>(i));
    // (what it held goes first: its fd is watched once that is handled)
    if (c.held.empty()) watch_conn(c);
    else to_resume_.push_back(c.id);
  }
}

void Service::resume_reading() {
  unpause_drained();
  std::vector<uint64_t> ids = std::move(to_resume_);
  to_resume_.clear();
  for (uint64_t id : ids) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.doomed || it->second.reading_paused) continue;
    Conn& c = it->second;
    std::string held = std::move(c.held);
    c.held.clear();
    const size_t used = take_lines(c, held.data(), held.size());
    if (c.doomed) continue;
    if (used < held.size()) c.held = held.substr(used);  // paused again
    else watch_conn(c);
  }
}

// What the connection's fds are watched for: its requests unless paused,
// room for its replies while some wait.
void Service::watch_conn(Conn& c) {
  const uint32_t in = c.reading_paused ? 0u : uint32_t{EPOLLIN | EPOLLRDHUP};
  if (c.sock) {
    watch_fd(c.out_fd, in | (c.out_watched ? uint32_t{EPOLLOUT} : 0u), tag(Tag::conn_in, c.id));
    return;
  }
  // A regular file or /dev/null on stdin cannot be in an epoll: its
  // always-ready stand-in is what is watched, or not, for it.
  const int fd = stdin_ready_ ? stdin_ready_.get() : c.in_fd;
  if (c.reading_paused) unwatch_fd(fd);
  else watch_fd(fd, EPOLLIN, tag(Tag::conn_in, c.id));
}

void Service::on_line(Conn& c, std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  if (opts_.mcp) return on_mcp_line(c, line);
  const uint64_t cid = c.id;
  auto parsed = parse_request(line);
  if (auto* bad = std::get_if<BadRequest>(&parsed)) {
    if (bad->answer) send(cid, error_line(bad->id, bad->error));
    return;
  }
  Request& r = std::get<Request>(parsed);
  // A notification is never answered, not even later (a wait_for_exit or
  // kill it asked for): the answers owed to this id come out empty.
  if (r.notification) r.id = Json(Json::value_t::discarded);
  Answer a = handle(c, r);
  if (r.notification) return;
  if (auto* res = std::get_if<Json>(&a)) send(cid, result_line(r.id, *res));
  else if (auto* err = std::get_if<RpcError>(&a)) send(cid, error_line(r.id, *err));
  else if (auto* line = std::get_if<Line>(&a)) send(cid, std::move(line->text));
  else if (auto* with = std::get_if<WithFd>(&a)) send(cid, result_line(r.id, with->result), std::move(with->fd));
}

void Service::send(uint64_t conn, std::string line, Fd fd) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || it->second.doomed) return;
  Conn& c = it->second;
  // A client that does not read its replies is dropped once they pile up
  // behind the one being sent (which may be a large output it asked for);
  // it never blocks the service.
  if (line.empty()) return;
  if (c.queued_behind > opts_.max_queue) {
    schedule_drop(c);
    return;
  }
  if (!c.outq.empty()) c.queued_behind += line.size();
  c.queued += line.size();
  queued_total_ += line.size();
  c.outq.push_back({std::move(line), std::move(fd)});
  // Written once this round of events is handled: what it sends (a
  // terminal/exited for each of 1000 jobs a session/close stopped) goes
  // out in a few writes, not one each.
  if (!c.out_watched && !c.flush_due) {
    c.flush_due = true;
    to_flush_.push_back(c.id);
  }
}

void Service::flush_sends() {
  std::vector<uint64_t> ids = std::move(to_flush_);
  to_flush_.clear();
  for (uint64_t id : ids) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    it->second.flush_due = false;
    if (!it->second.doomed) on_conn_writable(it->second);
  }
  ids = std::move(to_consume_);
  to_consume_.clear();
  for (uint64_t id : ids) {
    auto it = conns_.find(id);
    if (it != conns_.end() && !it->second.doomed) consume_peeked(it->second);
  }
}

void Service::consume_peeked(Conn& c) {
  char buf[65536];
  while (c.peeked > 0) {
    ssize_t n = ::read(c.in_fd, buf, std::min(sizeof buf, c.peeked));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The bytes were there a moment ago and nobody else reads them: the
      // connection is broken, and a peek must never see them twice.
      schedule_drop(c);
      return;
    }
    c.peeked -= static_cast<size_t>(n);
  }
}

void Service::on_conn_writable(Conn& c) {
  bool wrote = false;
  while (!c.outq.empty()) {
    // The first message from out_off, and as many after it as one call
    // takes, up to one that carries an fd: that goes with its first byte.
    iovec iov[64];
    int cnt = 0;
    for (auto m = c.outq.begin(); m != c.outq.end() && cnt < 64; ++m, ++cnt) {
      if (cnt > 0 && m->fd) break;
      size_t off = cnt == 0 ? c.out_off : 0;
      iov[cnt] = {const_cast<char*>(m->text.data()) + off, m->text.size() - off};
    }
    // (SIGPIPE is ignored: a gone reader is EPIPE.)
    ssize_t n;
    Fd& passing = c.outq.front().fd;
    if (passing) {
      msghdr msg{};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(cnt);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      const int pass = passing.get();
      std::memcpy(CMSG_DATA(cm), &pass, sizeof pass);
      n = ::sendmsg(c.out_fd, &msg, MSG_NOSIGNAL);
      if (n > 0) passing.reset();  // the client has it now
    } else {
      n = ::writev(c.out_fd, iov, cnt);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!c.out_watched) {
        // --stdio has its two fds; a socket is one fd watched for both.
        c.out_watched = true;
        if (c.sock) watch_conn(c);
        else watch_fd(c.out_fd, EPOLLOUT, tag(Tag::conn_out, c.id));
      }
      if (wrote && !paused_.empty()) unpause_drained();
      return;
    }
    if (n < 0) {
      if (!opts_.stdio || c.sock) {
        schedule_drop(c);
        return;
      }
      // stdout gone: keep serving until stdin ends
      queued_total_ -= c.queued;
      c.outq.clear(), c.out_off = 0, c.queued_behind = 0, c.queued = 0;
      break;
    }
    wrote = true;
    size_t done = static_cast<size_t>(n);
    while (done > 0) {
      size_t left = c.outq.front().text.size() - c.out_off;
      if (done < left) {
        c.out_off += done;
        break;
      }
      done -= left;
      std::string& sent = c.outq.front().text;
      c.queued -= sent.size();
      queued_total_ -= sent.size();
      if (sent.capacity() > line_spare_.capacity() && sent.capacity() <= kSpareMax) line_spare_ = std::move(sent);
      c.outq.pop_front();
      c.out_off = 0;
      if (!c.outq.empty()) c.queued_behind -= c.outq.front().text.size();
    }
  }
  c.queued_behind = 0;
  if (c.out_watched) {
    c.out_watched = false;
    if (c.sock) watch_conn(c);
    else unwatch_fd(c.out_fd);
  }
  if (wrote && !paused_.empty()) unpause_drained();
}

// A connection's end ends what it owns (unless kept): each job is stopped,
// verified gone and forgotten.
void Service::drop_conn(uint64_t conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  unwatch_fd(it->second.in_fd);
  queued_total_ -= std::min(queued_total_, it->second.queued);
  lines_held_ -= std::min(lines_held_, it->second.inbuf_charged);
  conns_.erase(it);
  std::erase(paused_, conn);
  peer_calls_.erase(conn);
  std::vector<uint64_t> sids;
  for (auto& [sid, st] : streams_)
    if (st.conn == conn) sids.push_back(sid);
  for (uint64_t sid : sids) end_stream(sid);
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_)
    if (j->owner == conn) ids.push_back(id);
  for (const std::string& id : ids)
    if (Job* j = find_job(id)) {
      j->forget = true;
      if (j->done) erase_job(id);
      else begin_stop(*j, Call::End::cancel, "connection closed");
    }
  for (auto& [id, j] : jobs_)
    std::erase_if(j->pending, [&](const Pending& p) { return p.conn == conn; });
}

// --- jobs -----------------------------------------------------------------

Job* Service::find_job(const std::string& id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

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
Drained read_pipe(int fd, OutputBuffer& buffer, uint64_t room, std::vector<char>& scratch, bool* filled) {
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
    if (into.data() == scratch.data()) buffer.append(std::string_view(into.data(), static_cast<size_t>(n)));
    else buffer.commit(static_cast<size_t>(n));
    if (n >= 65536) *filled = true;
    got += static_cast<size_t>(n);
    room -= static_cast<uint64_t>(n);
  }
}

// Reads a job's stdout (or stderr) pipe into its buffer: what it has, or
// with backpressure what fits. A full buffer leaves the pipe unwatched
// until a read makes room. At EOF the pipe is closed, and once the job is
// over also when nothing is left in it (an escapee of a weak boundary may
// hold it open). `to_end`: read on until one of those (the job is over).
void Service::pull(Job& j, bool err, bool to_end) {
  Fd& fd = err ? j.err : j.out;
  OutputBuffer& buffer = err ? *j.err_buffer : j.buffer;
  Flow& flow = err ? j.err_flow : j.out_flow;
  if (!fd) return;
  Drained d;
  do {
    uint64_t room = std::numeric_limits<uint64_t>::max();
    if (j.backpressure) {
      uint64_t unread = buffer.total() - std::min(flow.delivered, buffer.total());
      room = unread >= j.limit ? 0 : j.limit - unread;
    }
    bool filled = false;
    d = read_pipe(fd.get(), buffer, room, scratch_, &filled);
    if (filled && !flow.grown) {
      flow.grown = true;
      (void)::fcntl(fd.get(), F_SETPIPE_SZ, kLargePipe);  // as large as allowed; a pty is no pipe
    }
  } while (to_end && d == Drained::budget);
  if (d == Drained::eof || (d == Drained::empty && j.done)) {
    if (!flow.paused) unwatch_fd(fd.get());
    fd.reset();
    flow.paused = false;
    if (j.done) buffer.close();
    return;
  }
  if (d == Drained::full && !flow.paused) {
    unwatch_fd(fd.get());
    flow.paused = true;
  } else if (d != Drained::full && flow.paused) {
    watch_fd(fd.get(), EPOLLIN, tag(err ? Tag::job_err : Tag::job_out, j.num));
    flow.paused = false;
  }
}

void Service::on_job_output(Job& j) {
  pull(j, false, false);
  pump_streams(j);
  settle_pending(j);
}

// --- streams --------------------------------------------------------------

Service::Answer Service::open_stream(Conn& c, Job& j, const OutputParams& p) {
  if (!c.passes_fds)
    return RpcError{rpc::kInvalidParams,
                    "invalid params: 'stream' needs a Unix socket connection (pmon serve --listen); "
                    "read without it"};
  if (p.stderr_since)
    return RpcError{rpc::kInvalidParams, "invalid params: 'stream' reads the job's output, not its stderr; "
                                         "read stderr with 'stderrSince' and no 'stream'"};
  if (c.streams >= kMaxStreams)
    return RpcError{rpc::kServerError, "too many streams on this connection (at most " +
                                           std::to_string(kMaxStreams) + "); read one to its end first"};
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return RpcError{rpc::kServerError, std::string("cannot make a pipe: ") + std::strerror(errno)};
  Fd r(fds[0]);  // the client's, blocking
  set_nonblocking(fds[1]);
  Stream s;
  s.conn = c.id;
  s.job = j.num;
  s.pipe = Fd(fds[1]);
  (void)::fcntl(s.pipe.get(), F_SETPIPE_SZ, kStreamPipe);  // as large as allowed
  const uint64_t first = j.buffer.first_kept();
  const bool truncated = p.since.value_or(0) < first;
  s.at = std::clamp(p.since.value_or(0), first, j.buffer.total());
  if (!p.follow) s.until = j.buffer.total();
  const uint64_t sid = next_stream_++;
  s.id = sid;
  Json res = {{"stream", true}, {"since", s.at}, {"truncated", truncated}};
  auto [it, _] = streams_.emplace(sid, std::move(s));
  j.streams.push_back(sid);
  ++c.streams;
  if (!pump(it->second, j)) end_stream(sid);
  return WithFd{std::move(res), std::move(r)};
}

void Service::pump_streams(Job& j) {
  for (size_t i = 0; i < j.streams.size();) {
    const uint64_t sid = j.streams[i];
    auto it = streams_.find(sid);
    if (it != streams_.end() && pump(it->second, j)) {
      ++i;
      continue;
    }
    end_stream(sid);  // takes it out of j.streams
  }
}

// Writes what the stream has to write; false once it is over.
bool Service::pump(Stream& s, Job& j) {
  const OutputBuffer& b = j.buffer;
  for (;;) {
    if (s.at < b.first_kept()) return false;  // dropped before it was written
    const uint64_t end = std::min(b.total(), s.until);
    if (s.at >= end) {
      if (s.until != std::numeric_limits<uint64_t>::max() || b.closed()) return false;
      break;
    }
    auto parts = b.bytes_from(s.at, static_cast<size_t>(std::min<uint64_t>(end - s.at, kReadBudget)));
    iovec iov[2] = {{const_cast<char*>(parts[0].data()), parts[0].size()},
                    {const_cast<char*>(parts[1].data()), parts[1].size()}};
    ssize_t n = ::writev(s.pipe.get(), iov, parts[1].empty() ? 1 : 2);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!s.watched) {
        watch_fd(s.pipe.get(), EPOLLOUT, tag(Tag::stream, s.id));
        s.watched = true;
      }
      return true;
    }
    if (n <= 0) return false;  // the reader closed its end (EPIPE)
    s.at += static_cast<uint64_t>(n);
    note_delivered(j, s.at, std::nullopt);
    if (static_cast<size_t>(n) < parts[0].size() + parts[1].size()) continue;  // (the next write says EAGAIN)
  }
  if (s.watched) {
    unwatch_fd(s.pipe.get());
    s.watched = false;
  }
  return true;
}

void Service::end_stream(uint64_t sid) {
  auto it = streams_.find(sid);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  if (s.watched) unwatch_fd(s.pipe.get());
  if (auto c = conns_.find(s.conn); c != conns_.end() && c->second.streams > 0) --c->second.streams;
  if (auto key = job_keys_.find(s.job); key != job_keys_.end())
    if (Job* j = find_job(key->second)) std::erase(j->streams, sid);
  streams_.erase(it);  // closes the pipe: the reader sees its end
}

void Service::on_job_stderr(Job& j) {
  if (j.err_buffer) pull(j, true, false);
  settle_pending(j);
}

// The job is over, every writer gone: what is left in its pipes is read to
// EOF (or, for an escapee of a weak boundary that holds one, to what is
// there); with backpressure what fits, the rest as readers make room.
void Service::drain_output(Job& j) {
  pull(j, false, true);
  if (!j.out) j.buffer.close();
  if (j.err_buffer) {
    pull(j, true, true);
    if (!j.err) j.err_buffer->close();
  }
}

void Service::on_job_stdin(Job& j) {
  while (!j.in_pending.empty() && j.in) {
    ssize_t n = ::write(j.in.get(), j.in_pending.data(), j.in_pending.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!j.in_watched) watch_fd(j.in.get(), EPOLLOUT, tag(Tag::job_in, j.num));
      j.in_watched = true;
      return;
    }
    if (n < 0) {  // the reader is gone (EPIPE): what was not taken is dropped
      j.in_pending.clear();
      j.in_eof = true;
      break;
    }
    j.in_pending.erase(0, static_cast<size_t>(n));
  }
  if (j.in_watched) unwatch_fd(j.in.get());
  j.in_watched = false;
  if (j.in_eof) j.in.reset();
}

void Service::on_main_exit(Job& j) {
  if (!j.main_watched) return;
  unwatch_fd(j.call->pidfd());
  j.main_watched = false;
  // (A stop that waits for its turn begins as it would have.)
  if (j.stopping() || j.done) return;
  note_owner_end(j);
  j.stop_queued = true;
  j.queued_why = Call::End::main_exited;
  j.queued_by.clear();
  stop_queue_.push_back({j.num, true});
}

// A job's main process ended, not by the service's hand: if the call it
// belongs to is ending or over (that call's stop reached this job's leaf
// inside its own), its report says so. Asked again when the report is made.
void Service::note_owner_end(Job& j) {
  if (!j.ended_by.empty()) return;
  bool ended = false;
  if (j.owner_job != 0) {
    auto key = job_keys_.find(j.owner_job);
    Job* o = key == job_keys_.end() ? nullptr : find_job(key->second);
    ended = !o || o->done || o->stopping();
  }
  if (!ended && j.owner_pidfd) ended = !sys::pidfd_alive(j.owner_pidfd.get());
  if (!ended && !j.owner_leaf.empty()) {
    // Nothing of that call is left in its leaf itself (its main process
    // and the rest are gone; ours are in a leaf below), or the leaf is gone.
    auto procs = sys::read_file(j.owner_leaf + "/cgroup.procs");
    ended = !procs || procs->find_first_not_of(" \n") == std::string::npos;
  }
  if (ended) j.ended_by = "owner call ended";
}

// The jobs asked for from inside job `owner_num` end with it.
void Service::stop_owned(uint64_t owner_num) {
  if (owned_jobs_ == 0) return;
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_)
    if (j->owner_job == owner_num && !j->done) ids.push_back(id);
  for (const std::string& id : ids)
    if (Job* j = find_job(id)) begin_stop(*j, Call::End::cancel, "owner call ended");
}

// A stop is asked for: it begins in its turn (run_stop_queue). One asked
// for again meanwhile is the same stop.
void Service::begin_stop(Job& j, Call::End why, const std::string& by) {
  if (j.done) return;
  if (j.stop_queued) {
    if (j.queued_why == Call::End::main_exited && !j.stop_after) j.stop_after.emplace(why, by);
    return;
  }
  if (j.call->finishing() && !j.call->waiting_for_tree()) return;
  j.stop_queued = true;
  j.queued_why = why;
  j.queued_by = by;
  stop_queue_.push_back({j.num, true});
}

// A queued stop begins. The end of a main process that exited on its own
// is taken the same way; a stop asked for while it waited is asked again.
void Service::start_stop(Job& j) {
  j.stop_queued = false;
  if (j.done) return;
  const Call::End why = j.queued_why;
  const std::string by = std::move(j.queued_by);
  j.queued_by.clear();
  if (why == Call::End::main_exited) {
    const std::string id = j.id;
    auto after = std::move(j.stop_after);
    j.stop_after.reset();
    if (!j.call->finishing()) after_finish_step(j, j.call->begin_finish(why));
    if (Job* still = find_job(id); still && after) begin_stop(*still, after->first, after->second);
    return;
  }
  if (j.call->waiting_for_tree()) {
    // waitTree: the main process is gone and its tree is waited for; an
    // owner's end stops the tree instead.
    if (j.ended_by.empty()) j.ended_by = by;
    drop_stop_watch(j);
    after_finish_step(j, j.call->resume_finish(true));
    return;
  }
  if (j.call->finishing()) return;
  if (j.ended_by.empty()) j.ended_by = by;
  if (j.main_watched) {
    unwatch_fd(j.call->pidfd());
    j.main_watched = false;
  }
  after_finish_step(j, j.call->begin_finish(why));
}

// A stop's watch fired, or its deadline passed: its next step waits for
// its turn, unwatched meanwhile.
void Service::queue_step(Job& j) {
  drop_stop_watch(j);
  j.rescan_at = kForever;
  if (j.step_queued) return;
  j.step_queued = true;
  stop_queue_.push_back({j.num, false});
}

// A slice of the queued stop work, in the order it was asked for.
void Service::run_stop_queue() {
  const int64_t until = sys::monotonic_ns() + kStopSliceNs;
  stop_slice_full_ = false;
  for (size_t taken = 0; !stop_queue_.empty() && taken < kStopBatch; ++taken) {
    if (taken > 0 && sys::monotonic_ns() >= until) {
      stop_slice_full_ = true;
      break;
    }
    const StopWork w = stop_queue_.front();
    stop_queue_.pop_front();
    auto key = job_keys_.find(w.job);
    Job* j = key == job_keys_.end() ? nullptr : find_job(key->second);
    if (!j) continue;
    if (w.begin) {
      if (j->stop_queued) start_stop(*j);
      continue;
    }
    if (!j->step_queued) continue;
    j->step_queued = false;
    if (!j->done && j->call->finishing()) after_finish_step(*j, j->call->resume_finish());
  }
}

// Before the stop takes a step, which may close the fd it was watching (a
// leaf given back closes its files, and the number may be reused at once):
// a watch of our epoll is dropped while its fd is surely the stop's.
void Service::drop_stop_watch(Job& j) {
  if (j.stop_fd >= 0) unwatch_fd(j.stop_fd);
  j.stop_fd = -1;
  if (j.stop_ep) unwatch_fd(j.stop_ep.get());
  j.stop_ep.reset();
}

// After begin_finish/resume_finish: the call is over, or its stop waits on
// a fresh watch until a fresh deadline.
void Service::after_finish_step(Job& j, bool over) {
  drop_stop_watch(j);  // (done by the callers that step a stop already watched)
  j.rescan_at = kForever;
  // A job that waits for its tree is not over: what was asked for from
  // inside it is part of that tree.
  if (!j.call->waiting_for_tree()) stop_owned(j.num);
  if (over) {
    job_over(j);
    return;
  }
  Watch w = j.call->finish_watch();
  if (w.rescan_ms >= 0) j.rescan_at = sys::monotonic_ns() + int64_t{w.rescan_ms} * 1'000'000;
  if (w.fds.size() == 1) {
    epoll_event ev{};
    ev.events = ((w.fds[0].events & POLLIN) ? EPOLLIN : 0u) | ((w.fds[0].events & POLLPRI) ? EPOLLPRI : 0u);
    ev.data.u64 = tag(Tag::job_stop, j.num);
    if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, w.fds[0].fd, &ev) == 0) {
      j.stop_fd = w.fds[0].fd;
      return;
    }
  }
  j.stop_ep = Fd(::epoll_create1(EPOLL_CLOEXEC));
  for (const pollfd& p : w.fds) {
    epoll_event ev{};
    ev.events = ((p.events & POLLIN) ? EPOLLIN : 0u) | ((p.events & POLLPRI) ? EPOLLPRI : 0u);
    (void)::epoll_ctl(j.stop_ep.get(), EPOLL_CTL_ADD, p.fd, &ev);
  }
  watch_fd(j.stop_ep.get(), EPOLLIN, tag(Tag::job_stop, j.num));
}

void Service::job_over(Job& j) {
  j.done = true;
  // (Kept, unwatched: the report may still look at whether it ended.)
  if (j.owner_pidfd) unwatch_fd(j.owner_pidfd.get());
  // Over on its own or stopped by a client: nothing for the call's pmon to
  // stop. Stopped because that call ended: kept for it to list (it may be
  // reading its records only now), removed with the job.
  if (j.ended_by != "owner call ended") remove_call_record(std::exchange(j.record, {}));
  const RunResult& r = j.call->result();
  if (!r.cleanup_verified) all_verified_ = false;
  drain_output(j);
  pump_streams(j);
  if (j.in_watched) unwatch_fd(j.in.get());
  j.in.reset();
  Json note = {{"terminalId", j.id},
               {"exitStatus", exit_status_json(r.exit_code, r.signal)},
               {"cleanupVerified", r.cleanup_verified}};
  if (j.session) note["sessionId"] = *j.session;
  // MCP has no such notification; its clients ask (wait, output, list).
  if (!opts_.mcp) send(j.creator, notification_line("terminal/exited", note));
  settle_pending(j);
  if (j.forget) erase_job(j.id);
  // A job killed by a signal nobody here sent, inside a call that may be
  // ending at this moment: its report is made when asked for (see report).
  else if (!(j.ended_by.empty() && r.signal && (j.owner_pidfd || !j.owner_leaf.empty()))) to_report_.push_back(j.id);
}

// A job that is over has the report it will have: made once its exit has
// been sent (while its client reads that), kept for terminal/report.
void Service::make_reports() {
  std::vector<std::string> ids = std::move(to_report_);
  to_report_.clear();
  for (const std::string& id : ids)
    if (Job* j = find_job(id); j && j->done && j->report.empty())
      j->report = report_of(*j).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Answers what is owed: exits once over, output once there is some, and
// any whose deadline has passed.
void Service::settle_pending(Job& j) {
  const int64_t now = sys::monotonic_ns();
  std::vector<std::pair<uint64_t, std::string>> out;
  std::map<uint64_t, size_t> adding;  // bytes of `out` per connection
  std::erase_if(j.pending, [&](Pending& p) {
    const bool due = now >= p.deadline;
    switch (p.kind) {
      case Pending::Kind::exit:
        if (j.done) {
          const RunResult& r = j.call->result();
          out.push_back({p.conn, reply_line(p, exit_status_json(r.exit_code, r.signal))});
        } else if (due) {
          Json res = exit_status_json(std::nullopt, std::nullopt);
          res["running"] = true;
          out.push_back({p.conn, reply_line(p, res)});
        } else {
          return false;
        }
        return true;
      case Pending::Kind::stopped:
        if (!j.done) return false;
        out.push_back({p.conn, reply_line(p, {{"cleanupVerified", j.call->result().cleanup_verified}})});
        return true;
      case Pending::Kind::output:
        if (!j.done && !due && !has_new_output(j, p.since, p.stderr_since)) return false;
        if (!j.done && !due && !p.tool && new_bytes(j, p.since, p.stderr_since) < kCoalesceBytes) {
          // A job writing flat out is read in large replies, not one per
          // wake of its pipe: the first new bytes wait a moment for more.
          if (p.hold_until == 0) p.hold_until = now + kCoalesceNs;
          if (now < p.hold_until) return false;
        }
        // A connection backed up with replies gets this one once they drain.
        if (auto c = conns_.find(p.conn); c != conns_.end() && backed_up(c->second, adding[p.conn])) return false;
        out.push_back({p.conn, p.tool ? reply_line(p, output_json(j, p.since, p.stderr_since, p.max_bytes))
                                      : output_line(p.id, j, p.since, p.stderr_since, p.max_bytes)});
        adding[p.conn] += out.back().second.size();
        return true;
      case Pending::Kind::port: {
        if (!j.done && now < p.next_scan) return false;
        if (!j.done) {
          // One look per scan interval, however many wait on this job.
          const int64_t slot = now / kPortScanNs;
          if (j.ports_slot != slot) {
            j.ports_seen = ports_of(j);
            j.ports_slot = slot;
          }
          for (const Json& l : j.ports_seen)
            if (!p.port || l["port"] == *p.port) {
              out.push_back({p.conn, reply_line(p, l)});
              return true;
            }
        }
        if (j.done) {
          out.push_back({p.conn, reply_error(p, {rpc::kServerError, "terminal '" + j.id +
                                                       "' ended before it listened on " + port_words(p.port)})});
          return true;
        }
        if (due) {
          out.push_back({p.conn, reply_error(p, {rpc::kServerError,
                                                   "terminal '" + j.id + "' did not listen on " + port_words(p.port) +
                                                       " within " + std::to_string(p.timeout_ms) + " ms"})});
          return true;
        }
        p.next_scan = (now / kPortScanNs + 1) * kPortScanNs;
        return false;
      }
      case Pending::Kind::run:
        // MCP run: the summary once over (then the job is forgotten), or
        // what it wrote so far once it goes on in the background.
        if (!j.done && !due) return false;
        out.push_back({p.conn, reply_line(p, run_summary(j))});
        if (j.done) j.forget = true;
        return true;
    }
    return false;
  });
  for (auto& [conn, line] : out) send(conn, std::move(line));
}

void Service::erase_job(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Job& j = *it->second;
  if (!j.done) return;  // forgotten once over
  remove_call_record(j.record);
  for (uint64_t sid : std::vector<uint64_t>(j.streams)) end_stream(sid);
  if (j.owner_job != 0) --owned_jobs_;
  job_keys_.erase(j.num);
  jobs_.erase(it);
}

Json Service::output_json(Job& j, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since,
                          size_t max) {
  max = reply_bytes(max);
  OutputBuffer::Read rd = j.buffer.read(since, max);
  std::optional<OutputBuffer::Read> er;
  if (j.err_buffer) er = j.err_buffer->read(stderr_since, max);
  Json res = output_result(rd, er ? &*er : nullptr, j.done ? exit_status_json(j.call->result().exit_code,
                                                                                j.call->result().signal)
                                                           : Json(nullptr));
  note_delivered(j, rd.next, er ? std::optional(er->next) : std::nullopt);
  return res;
}

// The same as a result line, written straight from the buffer's text.
std::string Service::output_line(const Json& id, Job& j, std::optional<uint64_t> since,
                                 std::optional<uint64_t> stderr_since, size_t max) {
  if (id.is_discarded()) return {};  // a notification's (on_line)
  max = reply_bytes(max);
  OutputBuffer::Read rd = j.buffer.read(since, std::move(text_spare_), max);
  std::optional<OutputBuffer::Read> er;
  if (j.err_buffer) er = j.err_buffer->read(stderr_since, max);
  std::string line = output_result_line(
      id, rd, er ? &*er : nullptr,
      j.done ? exit_status_json(j.call->result().exit_code, j.call->result().signal) : Json(nullptr),
      std::move(line_spare_));
  note_delivered(j, rd.next, er ? std::optional(er->next) : std::nullopt);
  if (rd.text.capacity() <= kSpareMax) text_spare_ = std::move(rd.text);
  return line;
}

// The bytes of each stream one output reply carries: what was asked
// (maxBytes), and no more than an eighth of the connections' share of the
// memory budget (a byte can be six in the reply, \u00XX).
size_t Service::reply_bytes(uint64_t asked) const {
  return static_cast<size_t>(std::min<uint64_t>(asked, std::max<size_t>(queue_share(opts_.memory_budget) / 8, 4096)));
}

// A request about to wait for its answer: let in with its share of the
// budget (about its bookkeeping, twice, for the vector it is kept in, and
// its id), or refused naming the limit it would pass.
std::optional<RpcError> Service::admit(Conn& c, Pending& w) {
  const size_t bytes = 2 * sizeof(Pending) + (w.id.is_string() ? w.id.get_ref<const std::string&>().size() : 0);
  RequestBudget::Over over{};
  w.ticket = waiting_.take(c.waiting, bytes, &over);
  if (w.ticket) return std::nullopt;
  if (over == RequestBudget::Over::per_connection)
    return RpcError{rpc::kServerError, "too many requests waiting for their answer on this connection: at most " +
                                           std::to_string(waiting_.per_connection()) +
                                           " at once; wait for some to be answered, or use another connection"};
  return RpcError{rpc::kServerError,
                  "the service's memory budget for requests waiting for their answer is used up (" +
                      std::to_string(waiting_.limit()) + " bytes, a sixteenth of --memory-budget " +
                      std::to_string(opts_.memory_budget >> 20) +
                      "M); wait for some to be answered, or start the service with a larger --memory-budget"};
}

// A job's buffers may grow to outputByteLimit each (stdout, and stderr
// apart): more than the budget's share for all output is refused.
std::optional<RpcError> Service::output_fits(const CreateParams& p) const {
  const uint64_t buffers = p.separate_stderr && !p.pty ? 2 : 1;
  const uint64_t share = output_budget_.limit();
  if (p.output_byte_limit * buffers <= share) return std::nullopt;
  return RpcError{rpc::kInvalidParams,
                  "invalid params: 'outputByteLimit' " + std::to_string(p.output_byte_limit) +
                      (buffers == 2 ? " (twice, with separateStderr)" : "") +
                      " does not fit the service's memory budget, which keeps " + std::to_string(share) +
                      " bytes for all jobs' output (--memory-budget " + std::to_string(opts_.memory_budget >> 20) +
                      "M); ask for at most " + std::to_string(share / buffers) +
                      " or start the service with a larger --memory-budget"};
}

// A read returned the bytes up to `next`: with backpressure, a paused pipe
// is read again once there is room.
void Service::note_delivered(Job& j, uint64_t out_next, std::optional<uint64_t> err_next) {
  j.out_flow.delivered = std::max(j.out_flow.delivered, out_next);
  if (err_next) j.err_flow.delivered = std::max(j.err_flow.delivered, *err_next);
  if (!j.backpressure) return;
  auto resume = [&](Fd& fd, const OutputBuffer& b, Flow& f, Tag t) {
    if (!fd || !f.paused || b.total() - f.delivered >= j.limit) return;
    watch_fd(fd.get(), EPOLLIN, tag(t, j.num));  // read in the next round of events
    f.paused = false;
  };
  resume(j.out, j.buffer, j.out_flow, Tag::job_out);
  if (j.err_buffer) resume(j.err, *j.err_buffer, j.err_flow, Tag::job_err);
}

// The section-4 report as a value: it goes out inside the reply as it is,
// no text in between (terminal/report is on every job's path).
Json Service::report_of(const Job& j) const {
  ReportContext ctx;
  ctx.passed_over = opts_.passed_over;
  ctx.weak = backend_.kind() == ConfineKind::pgroup;
  Json rep = report_object<Json>(j.call->result(), ctx);
  rep["job"] = {{"terminalId", j.id}, {"name", j.name.empty() ? Json(nullptr) : Json(j.name)},
                {"stoppedBy", j.ended_by.empty() ? Json(nullptr) : Json(j.ended_by)}};
  return rep;
}

// The TCP ports the job's processes listen on, each {port, address, v6, pid}.
// The command first while it runs: a boundary may leave it out of its
// members (pidns, whose main process is the status relay).
Json Service::ports_of(Job& j) {
  Json arr = Json::array();
  if (j.done) return arr;
  std::vector<pid_t> pids;
  if (j.main_watched) pids.push_back(j.call->command_pid());
  for (const sys::ProcStat& p : j.call->members())
    if (pids.empty() || p.pid != pids.front()) pids.push_back(p.pid);
  for (const ListeningPort& l : port_tables().listening_ports(pids))
    arr.push_back({{"port", l.port}, {"address", l.address}, {"v6", l.v6}, {"pid", l.pid}});
  return arr;
}

// The tables of this scan interval: every job looked at in it (the scan of
// all that have waiters, a terminal/list) shares one read of them. A socket
// that listens since is seen in the next interval.
PortTables& Service::port_tables() {
  const int64_t slot = sys::monotonic_ns() / kPortScanNs;
  if (!port_tables_ || port_tables_slot_ != slot) {
    port_tables_.emplace();
    port_tables_slot_ = slot;
  }
  return *port_tables_;
}

Json Service::job_json(Job& j) {
  Json o = {{"terminalId", j.id},
            {"name", j.name.empty() ? Json(nullptr) : Json(j.name)},
            {"command", j.command},
            {"pid", j.call->command_pid()},
            {"status", j.status()},
            {"started", iso_time(j.started)},
            {"keep", j.keep},
            {"pty", j.pty},
            {"sessionId", j.session ? Json(*j.session) : Json(nullptr)},
            {"ports", ports_of(j)}};
  if (j.done) {
    const RunResult& r = j.call->result();
    o["exitStatus"] = exit_status_json(r.exit_code, r.signal);
    o["cpuUsec"] = r.cpu_usec ? Json(*r.cpu_usec) : Json(nullptr);
    o["memoryPeakBytes"] = r.memory_peak_bytes ? Json(*r.memory_peak_bytes) : Json(nullptr);
    o["cleanupVerified"] = r.cleanup_verified;
  } else {
    o["exitStatus"] = nullptr;
    auto cpu = j.call->cpu_usec();
    o["cpuUsec"] = cpu ? Json(*cpu) : Json(nullptr);
    auto mem = j.call->memory_peak_bytes();
    o["memoryPeakBytes"] = mem ? Json(*mem) : Json(nullptr);
  }
  return o;
}

// --- deadlines --------------------------------------------------------------

void Service::arm_timer() {
  int64_t next = kForever;
  for (auto& [id, j] : jobs_) {
    // (Work queued for it is done without waiting.)
    if (!j->done && !j->stopping()) next = std::min(next, j->deadline);
    if (j->call->finishing() && !j->step_queued) next = std::min({next, j->call->finish_deadline(), j->rescan_at});
    for (const Pending& p : j->pending) {
      // (an output read for a connection backed up waits for its drain)
      if (p.kind == Pending::Kind::output) {
        auto c = conns_.find(p.conn);
        if (c != conns_.end() && backed_up(c->second)) continue;
      }
      next = std::min(next, p.kind == Pending::Kind::port ? std::min(p.deadline, p.next_scan)
                            : p.hold_until != 0              ? std::min(p.deadline, p.hold_until)
                                                             : p.deadline);
    }
  }
  // Disarmed (by us, or it fired: it is one-shot) and nothing due: as it is.
  if (next == kForever && armed_ == kForever) return;
  armed_ = next;
  itimerspec its{};
  if (next != kForever) {
    next = std::max<int64_t>(next, 1);
    its.it_value.tv_sec = next / 1'000'000'000;
    its.it_value.tv_nsec = next % 1'000'000'000;
  }
  (void)::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
}

void Service::on_time() {
  const int64_t now = sys::monotonic_ns();
  // Only the jobs with something due (this runs after every round of
  // events, with up to --max-jobs jobs).
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_) {
    const bool finishing = j->call->finishing() && !j->step_queued;
    if ((!j->done && !j->stopping() && now >= j->deadline) ||
        (finishing && (now >= j->call->finish_deadline() || now >= j->rescan_at)) || !j->pending.empty())
      ids.push_back(id);
  }
  for (const std::string& id : ids) {
    Job* j = find_job(id);
    if (!j) continue;
    if (!j->done && !j->stopping() && now >= j->deadline) begin_stop(*j, Call::End::timeout, "timeout");
    // A stop's deadline or rescan: its next step, in its turn.
    if (j->call->finishing() && !j->step_queued && (now >= j->call->finish_deadline() || now >= j->rescan_at))
      queue_step(*j);
    if (!j->pending.empty()) settle_pending(*j);
  }
}

// --- methods ----------------------------------------------------------------

Service::Answer Service::handle(Conn& c, const Request& r) {
  if (shutting_down_) return RpcError{rpc::kServerError, "the service is stopping"};
  switch (r.method) {
    case Method::create: return create(c, std::get<CreateParams>(r.params));
    case Method::output: return output(c, r.id, std::get<OutputParams>(r.params));
    case Method::wait_for_exit: return wait_for_exit(c, r.id, std::get<WaitForExitParams>(r.params));
    case Method::write: return write(std::get<WriteParams>(r.params));
    case Method::kill: return kill(c, r.id, std::get<TerminalParams>(r.params), false);
    case Method::release: return kill(c, r.id, std::get<TerminalParams>(r.params), true);
    case Method::list: return list(std::get<ListParams>(r.params));
    case Method::report: return report(r.id, std::get<TerminalParams>(r.params));
    case Method::session_close: return session_close(c, r.id, std::get<SessionCloseParams>(r.params));
    case Method::resize: return resize(std::get<ResizeParams>(r.params));
    case Method::wait_for_port: return wait_for_port(c, r.id, std::get<WaitForPortParams>(r.params));
  }
  return RpcError{rpc::kMethodNotFound, "unknown method"};
}

// A job that cannot start for want of fds (its pipes, pty, pidfd, leaf):
// said as such, with what to do. Any other errno: `what` and its words.
RpcError fd_error(const std::string& what, int err) {
  rlimit rl{};
  if (err == EMFILE && ::getrlimit(RLIMIT_NOFILE, &rl) == 0)
    return {rpc::kServerError, "cannot start the job: the service has no file descriptors left (its limit is " +
                                   std::to_string(rl.rlim_cur) +
                                   " open files); release some jobs, or start the service under a higher 'ulimit -Hn'"};
  if (err == ENFILE)
    return {rpc::kServerError,
            "cannot start the job: the system has no file descriptors left (fs.file-max); release some jobs"};
  return {rpc::kServerError, what + ": " + std::strerror(err)};
}

Service::Answer Service::create(Conn& c, const CreateParams& p) {
  if (jobs_.size() >= opts_.max_jobs)
    return RpcError{rpc::kServerError, "too many jobs (at most " + std::to_string(opts_.max_jobs) +
                                           "); release some first"};
  // Our ends (out_r, in_w) and the child's (out_w, in_r): two pipes, or a
  // pty whose master is both of ours and whose slave is all of the child's.
  Fd out_r, out_w, in_r, in_w;
  if (p.pty) {
    auto pair = sys::open_pty(p.pty->rows, p.pty->cols);
    if (!pair) return fd_error("cannot open a pseudo-terminal", pair.error().value());
    in_w = Fd(::fcntl(pair->master.get(), F_DUPFD_CLOEXEC, 0));
    if (!in_w) return fd_error("cannot open a pseudo-terminal", errno);
    out_r = std::move(pair->master);
    out_w = std::move(pair->slave);
  } else {
    int out_pipe[2], in_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fd_error("cannot make a pipe", errno);
    out_r = Fd(out_pipe[0]);
    out_w = Fd(out_pipe[1]);
    if (::pipe2(in_pipe, O_CLOEXEC) != 0) return fd_error("cannot make a pipe", errno);
    in_r = Fd(in_pipe[0]);
    in_w = Fd(in_pipe[1]);
  }
  Fd err_r, err_w;
  if (p.separate_stderr && !p.pty) {
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) return fd_error("cannot make a pipe", errno);
    err_r = Fd(err_pipe[0]);
    err_w = Fd(err_pipe[1]);
  }

  RunOptions ro;
  ro.spawn.argv.push_back(p.command);
  ro.spawn.argv.insert(ro.spawn.argv.end(), p.args.begin(), p.args.end());
  if (p.cwd) ro.spawn.cwd = *p.cwd;
  if (!p.env.empty() || p.clear_env) {
    std::vector<std::string> env;
    for (char** e = p.clear_env ? nullptr : environ; e && *e; ++e) {
      std::string_view kv(*e);
      std::string_view name = kv.substr(0, kv.find('='));
      if (std::none_of(p.env.begin(), p.env.end(), [&](const EnvVar& v) { return v.name == name; }))
        env.emplace_back(kv);
    }
    for (const EnvVar& v : p.env) env.push_back(v.name + "=" + v.value);
    ro.spawn.env = std::move(env);
  }
  if (p.pty) ro.spawn.pty_slave = out_w.get();
  else ro.spawn.stdio = {in_r.get(), out_w.get(), err_w ? err_w.get() : out_w.get()};
  ro.spawn.close_other_fds = true;
  ro.spawn.changed_signals = &changed_signals_;
  ro.spawn.start_on_this_cpu = true;
  if (nofile_raised_) ro.spawn.nofile = &job_nofile_;
  ro.stop = opts_.stop;
  if (p.kill_signal && !ro.stop.steps.empty() && ro.stop.steps[0].action == StopStep::Action::signal)
    ro.stop.steps[0].signal = *p.kill_signal;
  ro.wait_tree = p.wait_tree;
  if (p.timeout_ms) ro.timeout = std::chrono::milliseconds(*p.timeout_ms);
  ro.limits = p.limits;

  // A request from a process inside a pmon call (any backend) makes a job
  // of that call, kept or not: it ends when the call ends, its leaf is
  // made inside the call's leaf where there is one (so the call's stop and
  // report cover it), and the service is never a way out of a call.
  const PeerCall* from = nullptr;
  if (c.sock) {
    auto pc = peer_call_of(c);
    if (!pc)
      return RpcError{rpc::kServerError, "cannot tell which pmon call the request comes from: the process that "
                                         "connected has exited; connect from the process that creates the job"};
    from = *pc;
    if (from->call_over)
      return RpcError{rpc::kServerError, "the pmon call this request comes from has ended; a job started from "
                                         "inside a call ends with it"};
  }
  uint64_t owner_job = 0;
  if (from && from->service_child != 0)
    for (auto& [tid, oj] : jobs_)
      if (!oj->done && oj->call->pid() == from->service_child) {
        if (oj->stopping())
          return RpcError{rpc::kServerError, "terminal '" + tid + "', which this request comes from, is stopping; "
                                             "a job started from inside a job ends with it"};
        owner_job = oj->num;
      }
  if (from && !from->leaf.empty()) ro.inside_cgroup = from->leaf;

  const uint64_t n = next_job_++;
  if (p.output_backpressure && p.output_byte_limit == 0)
    return RpcError{rpc::kInvalidParams, "invalid params: 'outputBackpressure' needs an outputByteLimit of at least 1"};
  if (auto too_much = output_fits(p)) return *too_much;
  auto job = std::make_unique<Job>(static_cast<size_t>(p.output_byte_limit), &output_budget_);
  Job& j = *job;
  j.backpressure = p.output_backpressure;
  j.limit = static_cast<size_t>(p.output_byte_limit);
  if (err_r) j.err_buffer = std::make_unique<OutputBuffer>(static_cast<size_t>(p.output_byte_limit), &output_budget_);
  j.num = n;
  do j.id = random_terminal_id();
  while (jobs_.contains(j.id));
  j.name = p.name.value_or("");
  j.command = ro.spawn.argv;
  j.creator = c.id;
  j.owner = p.keep ? 0 : c.id;
  j.keep = p.keep;
  j.pty = p.pty.has_value();
  j.session = p.session_id;
  j.started = std::chrono::system_clock::now();
  j.call = std::make_unique<Call>(backend_, std::move(ro));
  if (auto s = j.call->start(); !s) {
    if (s.error().err == EMFILE || s.error().err == ENFILE) return fd_error(s.error().message, s.error().err);
    return RpcError{rpc::kServerError, s.error().message};
  }
  j.owner_job = owner_job;
  if (owner_job != 0) ++owned_jobs_;
  if (from && !from->leaf.empty() && j.call->cgroup() && j.call->cgroup()->starts_with(from->leaf + "/"))
    j.owner_leaf = from->leaf;
  if (from && from->supervisor) {
    j.owner_pidfd = Fd(::fcntl(from->supervisor.get(), F_DUPFD_CLOEXEC, 0));
    if (j.owner_pidfd) watch_fd(j.owner_pidfd.get(), EPOLLIN, tag(Tag::job_main, n | kOwnerWatch));
  }
  // A call whose boundary does not hold the job (pidns, subreaper, pgroup):
  // its pmon is told where it looks when it ends.
  if (from && from->call_pmon != 0 && j.owner_leaf.empty() && !opts_.socket_path.empty()) {
    CallRecord rec;
    rec.start_time = from->call_pmon_start;
    rec.socket = opts_.socket_path;
    rec.terminal_id = j.id;
    rec.job_pid = j.call->command_pid();
    if (auto st = sys::read_stat(rec.job_pid)) rec.job_start_time = st->start_time;
    for (const std::string& a : j.command) rec.command += (rec.command.empty() ? "" : " ") + a;
    if (auto w = write_call_record(from->call_pmon, rec)) {
      j.record = std::move(*w);
      j.record_for = from->call_pmon;
      j.record_for_start = from->call_pmon_start;
    }
  }
  if (p.timeout_ms) j.deadline = sys::monotonic_ns() + static_cast<int64_t>(*p.timeout_ms) * 1'000'000;
  // Our copies of the child's ends go, or EOF never comes.
  out_w.reset();
  err_w.reset();
  in_r.reset();
  set_nonblocking(out_r.get());
  set_nonblocking(in_w.get());
  j.out = std::move(out_r);
  j.in = std::move(in_w);
  job_keys_[n] = j.id;
  watch_fd(j.call->pidfd(), EPOLLIN, tag(Tag::job_main, n));
  j.main_watched = true;
  watch_fd(j.out.get(), EPOLLIN, tag(Tag::job_out, n));
  if (err_r) {
    set_nonblocking(err_r.get());
    j.err = std::move(err_r);
    watch_fd(j.err.get(), EPOLLIN, tag(Tag::job_err, n));
  }
  std::string id = j.id;
  jobs_.emplace(id, std::move(job));
  return Json{{"terminalId", id}};
}

// The kill comes from the pmon of the call the job was asked for from
// inside, which stops it as its call ends.
bool Service::asked_by_call_pmon(Conn& c, const Job& j) const {
  if (j.record_for == 0 || !c.sock) return false;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(c.sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != j.record_for) return false;
  auto st = sys::read_stat(cred.pid);
  return st && st->start_time == j.record_for_start;
}

// Who is on the other end of a socket connection, looked up on its first
// create and kept while it lasts (a peer's call does not change).
Result<const PeerCall*> Service::peer_call_of(Conn& c) {
  if (auto it = peer_calls_.find(c.id); it != peer_calls_.end()) return &it->second;
  if (!cgroup_mount_) {
    std::string why;
    auto loc = confine::locate_cgroup2(&why);
    cgroup_mount_ = loc ? loc->mount : std::string();
  }
  auto pc = peer_call(c.sock.get(), *cgroup_mount_);
  if (!pc) return std::unexpected(pc.error());
  return &peer_calls_.emplace(c.id, std::move(*pc)).first->second;
}

Service::Answer Service::output(Conn& c, const Json& id, const OutputParams& p) {
  Job* j = find_job(p.terminal_id);
  if (!j) return unknown_terminal(p.terminal_id);
  if (j->backpressure && j->done) {
    // What is left in the pipe of a job that is over is read first: a
    // reply with nothing new and an exit status means there is no more.
    pull(*j, false, false);
    if (j->err_buffer) pull(*j, true, false);
  }
  if (p.stream) {
    if (current_tool_) return RpcError{rpc::kInvalidParams, "invalid params: no 'stream' for a tool"};
    return open_stream(c, *j, p);
  }
  if (!p.wait_ms || j->done || has_new_output(*j, p.since, p.stderr_since)) {
    if (current_tool_) return output_json(*j, p.since, p.stderr_since, p.max_bytes);
    return Line{output_line(id, *j, p.since, p.stderr_since, p.max_bytes)};
  }
  Pending w;
  w.tool = current_tool_;
  w.kind = Pending::Kind::output;
  w.conn = c.id;
  w.id = id;
  w.since = p.since;
  w.stderr_since = p.stderr_since;
  w.max_bytes = p.max_bytes;
  w.deadline = sys::monotonic_ns() + static_cast<int64_t>(*p.wait_ms) * 1'000'000;
  if (auto e = admit(c, w)) return *e;
  j->pending.push_back(std::move(w));
  return std::monostate{};
}

Service::Answer Service::wait_for_exit(Conn& c, const Json& id, const WaitForExitParams& p) {
  Job* j = find_job(p.terminal_id);
  if (!j) return unknown_terminal(p.terminal_id);
  if (j->done) return exit_status_json(j->call->result().exit_code, j->call->result().signal);
  Pending w;
  w.tool = current_tool_;
  w.kind = Pending::Kind::exit;
  w.conn = c.id;
  w.id = id;
  if (p.timeout_ms) w.deadline = sys::monotonic_ns() + static_cast<int64_t>(*p.timeout_ms) * 1'000'000;
  if (auto e = admit(c, w)) return *e;
  j->pending.push_back(std::move(w));
  return std::monostate{};
}

Service::Answer Service::write(const WriteParams& p) {
  Job* j = find_job(p.terminal_id);
  if (!j) return unknown_terminal(p.terminal_id);
  if (!j->in || j->in_eof) return RpcError{rpc::kServerError, "terminal '" + p.terminal_id + "' has no open stdin"};
  if (j->in_pending.size() + p.data.size() > (size_t{8} << 20))
    return RpcError{rpc::kServerError, "terminal '" + p.terminal_id + "' is not reading its stdin; try again later"};
  j->in_pending += p.data;
  // A terminal's end of input is its EOF character; closing the master
  // would hang the terminal up instead.
  if (p.eof && j->pty) j->in_pending += '\x04';
  else if (p.eof) j->in_eof = true;
  on_job_stdin(*j);
  return Json::object();
}

Service::Answer Service::kill(Conn& c, const Json& id, const TerminalParams& p, bool release) {
  Job* j = find_job(p.terminal_id);
  if (!j) return unknown_terminal(p.terminal_id);
  if (j->done) {
    bool verified = j->call->result().cleanup_verified;
    if (release) j->forget = true, erase_job(p.terminal_id);
    return Json{{"cleanupVerified", verified}};
  }
  Pending w;
  w.tool = current_tool_;
  w.kind = Pending::Kind::stopped;
  w.conn = c.id;
  w.id = id;
  // Refused over the limits before anything is done: the job runs on.
  if (auto e = admit(c, w)) return *e;
  if (release) j->forget = true;
  j->pending.push_back(std::move(w));
  std::string tid = j->id;
  begin_stop(*j, Call::End::cancel, release ? "release" : asked_by_call_pmon(c, *j) ? "owner call ended" : "kill");
  // begin_stop may have ended it (and a release forgotten it) already.
  if (Job* still = find_job(tid)) {
    if (still->done) settle_pending(*still);
  }
  return std::monostate{};
}

Service::Answer Service::wait_for_port(Conn& c, const Json& id, const WaitForPortParams& p) {
  Job* j = find_job(p.terminal_id);
  if (!j) return unknown_terminal(p.terminal_id);
  Pending w;
  w.tool = current_tool_;
  w.kind = Pending::Kind::port;
  w.conn = c.id;
  w.id = id;
  w.port = p.port;
  w.timeout_ms = p.timeout_ms.value_or(30'000);
  w.deadline = sys::monotonic_ns() + static_cast<int64_t>(w.timeout_ms) * 1'000'000;
  if (auto e = admit(c, w)) return *e;
  j->pending.push_back(std::move(w));
  settle_pending(*j);  // answered at once when it already listens (or is over)
  return std::monostate{};
}

Service::Answer Service::resize(const ResizeParams& p) {
  Job* j = find_job(p.terminal_id);
  if (!j) return unknown_terminal(p.terminal_id);
  if (!j->pty) return RpcError{rpc::kServerError, "terminal '" + p.terminal_id + "' has no pseudo-terminal"};
  if (j->done || !j->in) return RpcError{rpc::kServerError, "terminal '" + p.terminal_id + "' has ended"};
  if (auto r = sys::resize_pty(j->in.get(), p.size.rows, p.size.cols); !r)
    return RpcError{rpc::kServerError, "cannot resize terminal '" + p.terminal_id + "': " + r.error().message()};
  return Json::object();
}

Service::Answer Service::list(const ListParams& p) {
  Json arr = Json::array();
  // In the order they were created (ids are random).
  for (auto& [num, id] : job_keys_)
    if (Job* j = find_job(id); j && (!p.session_id || j->session == p.session_id)) arr.push_back(job_json(*j));
  return Json{{"terminals", arr}};
}

Service::Answer Service::report(const Json& id, const TerminalParams& p) {
  Job* j = find_job(p.terminal_id);
  if (!j) return unknown_terminal(p.terminal_id);
  if (!j->done)
    return RpcError{rpc::kServerError, "terminal '" + p.terminal_id + "' is still running; its report is made when it ends"};
  // Killed by a signal the service did not send: by the call it belongs to?
  if (j->report.empty() && j->ended_by.empty() && j->call->result().signal) note_owner_end(*j);
  if (current_tool_) return report_of(*j);
  if (j->report.empty()) j->report = report_of(*j).dump(-1, ' ', false, Json::error_handler_t::replace);
  return Line{result_line_of_text(id, j->report)};
}

Service::Answer Service::session_close(Conn& c, const Json& id, const SessionCloseParams& p) {
  std::vector<std::string> ids;
  for (auto& [tid, j] : jobs_)
    if (j->session == p.session_id && j->creator == c.id) ids.push_back(tid);
  for (const std::string& tid : ids)
    if (Job* j = find_job(tid)) {
      j->forget = true;
      if (j->done) erase_job(tid);
      else begin_stop(*j, Call::End::cancel, "session closed");
    }
  (void)id;
  // Answered at once; the stops are verified as each job ends (its report).
  return Json{{"stopping", ids.size()}};
}

// --- MCP ----------------------------------------------------------------------

// What the engine says of a job, in MCP's words ("job 't1'").
std::string job_words(std::string message) {
  const std::string from = "terminal '";
  for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at))
    message.replace(at, from.size(), "job '");
  return message;
}

std::string Service::reply_line(const Pending& p, const Json& result) const {
  if (p.id.is_discarded()) return {};  // a notification's (on_line)
  if (!p.tool) return result_line(p.id, result);
  return result_line(p.id, mcp::tool_result(*p.tool, result));
}

std::string Service::reply_error(const Pending& p, const RpcError& e) const {
  if (p.id.is_discarded()) return {};
  if (!p.tool) return error_line(p.id, e);
  return result_line(p.id, mcp::tool_error(job_words(e.message)));
}

void Service::on_mcp_line(Conn& c, std::string_view line) {
  const uint64_t cid = c.id;
  auto parsed = mcp::parse_message(line);
  if (auto* bad = std::get_if<BadRequest>(&parsed)) {
    if (bad->answer) send(cid, error_line(bad->id, bad->error));
    return;
  }
  const mcp::Message& m = std::get<mcp::Message>(parsed);
  if (m.notification) {
    if (m.method == "notifications/cancelled" && m.params.contains("requestId"))
      cancel_request(cid, m.params["requestId"]);
    return;  // notifications/initialized and any other: nothing to answer
  }
  Answer a;
  if (m.method == "initialize") a = mcp::initialize_result(m.params);
  else if (m.method == "ping") a = Json::object();
  else if (m.method == "tools/list") a = mcp::tools_list();
  else if (m.method == "tools/call") {
    if (shutting_down_) {
      a = mcp::tool_error("pmon is stopping");
    } else {
      auto call = mcp::parse_tool_call(m.params);
      if (auto* err = std::get_if<mcp::CallError>(&call))
        a = err->protocol ? Answer(RpcError{rpc::kInvalidParams, err->message}) : Answer(mcp::tool_error(err->message));
      else
        a = tool_call(c, m.id, std::get<mcp::ToolCall>(call));
    }
  } else {
    a = RpcError{rpc::kMethodNotFound, "unknown method '" + m.method + "'"};
  }
  if (auto* res = std::get_if<Json>(&a)) send(cid, result_line(m.id, *res));
  else if (auto* err = std::get_if<RpcError>(&a)) send(cid, error_line(m.id, *err));
}

Service::Answer Service::tool_call(Conn& c, const Json& id, const mcp::ToolCall& call) {
  using mcp::Tool;
  Answer a;
  if (call.tool == Tool::run) return run_tool(c, id, std::get<mcp::RunArgs>(call.args));
  // Every answer the engine defers for this request is shaped as the tool's.
  current_tool_ = call.tool;
  switch (call.tool) {
    case Tool::run: break;
    case Tool::start: a = create(c, std::get<CreateParams>(call.args)); break;
    case Tool::output: a = output(c, id, std::get<OutputParams>(call.args)); break;
    case Tool::wait: a = wait_for_exit(c, id, std::get<WaitForExitParams>(call.args)); break;
    case Tool::write: {
      const WriteParams& w = std::get<WriteParams>(call.args);
      a = write(w);
      if (auto* res = std::get_if<Json>(&a)) (*res)["written"] = w.data.size();
      break;
    }
    case Tool::kill: a = kill(c, id, std::get<TerminalParams>(call.args), false); break;
    case Tool::list: a = list(std::get<ListParams>(call.args)); break;
    case Tool::wait_for_port: a = wait_for_port(c, id, std::get<WaitForPortParams>(call.args)); break;
  }
  current_tool_.reset();
  if (auto* res = std::get_if<Json>(&a)) return mcp::tool_result(call.tool, *res);
  if (auto* err = std::get_if<RpcError>(&a)) return mcp::tool_error(job_words(err->message));
  return std::monostate{};  // answered by settle_pending, shaped as the tool's
}

// run: a job whose answer is its summary when it ends, or, past
// background_after, what it wrote so far (it then goes on as a job).
Service::Answer Service::run_tool(Conn& c, const Json& id, const mcp::RunArgs& a) {
  Pending w;
  w.kind = Pending::Kind::run;
  w.conn = c.id;
  w.id = id;
  w.tool = mcp::Tool::run;
  // Over the limits nothing is started.
  if (auto e = admit(c, w)) return mcp::tool_error(e->message);
  Answer created = create(c, a.create);
  if (auto* err = std::get_if<RpcError>(&created)) return mcp::tool_error(err->message);
  Job* j = find_job(std::get<Json>(created)["terminalId"].get<std::string>());
  if (!j) return mcp::tool_error("the job ended before it could be watched");
  // Its stdin is closed: a command that reads it gets EOF, not a hang.
  j->in_eof = true;
  on_job_stdin(*j);
  if (a.background_after_ms)
    w.deadline = sys::monotonic_ns() + static_cast<int64_t>(*a.background_after_ms) * 1'000'000;
  j->pending.push_back(std::move(w));
  return std::monostate{};
}

Json Service::run_summary(Job& j) {
  // The newest bytes of a long output (a read is bounded; its end is what
  // tells most), said to be cut.
  const uint64_t max = reply_bytes(OutputParams::kDefaultMaxBytes);
  const uint64_t from = j.buffer.total() > max ? std::max(j.buffer.first_kept(), j.buffer.total() - max) : 0;
  Json o = output_json(j, from > j.buffer.first_kept() ? std::optional(from) : std::nullopt, std::nullopt);
  const bool cut = o["truncated"].get<bool>() || from > j.buffer.first_kept();
  Json s = {{"terminalId", j.id}, {"output", o["output"]}, {"truncated", cut}, {"running", !j.done}};
  if (!j.done) return s;
  Json rep = report_of(j);
  const RunResult& r = j.call->result();
  Json st = exit_status_json(r.exit_code, r.signal);
  s["exit_code"] = st["exitCode"];
  s["signal"] = st["signal"];
  s["timed_out"] = rep.value("timed_out", false);
  s["leftovers"] = rep.contains("leftovers") ? rep["leftovers"] : Json::array();
  s["cleanup_verified"] = r.cleanup_verified;
  s["duration_ms"] = rep.value("duration_ms", 0.0);
  s["oom_killed"] = rep.value("oom_killed", Json(nullptr));
  s["pids_max_hit"] = rep.value("pids_max_hit", Json(nullptr));
  return s;
}

// notifications/cancelled: the request is not answered; a run it was
// waiting for is stopped (the model no longer wants it).
void Service::cancel_request(uint64_t conn, const Json& id) {
  std::vector<std::string> stop;
  for (auto& [tid, j] : jobs_) {
    std::erase_if(j->pending, [&](const Pending& p) {
      if (p.conn != conn || p.id != id) return false;
      if (p.kind == Pending::Kind::run) stop.push_back(tid);
      return true;
    });
  }
  for (const std::string& tid : stop)
    if (Job* j = find_job(tid)) {
      j->forget = true;
      if (j->done) erase_job(tid);
      else begin_stop(*j, Call::End::cancel, "cancelled");
    }
}

}  // namespace

int serve(Backend& backend, const ServeOptions& opts) {
  Service s(backend, opts);
  return s.run();
}

}  // namespace pmon::serve
