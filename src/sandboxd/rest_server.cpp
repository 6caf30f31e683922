// SPDX-License-Identifier: Apache-2.0
// The routes of pmon sandboxd's REST API (rest_server.h), on cpp-httplib.
// Every error is the spec's body {"code": ..., "message": ...}; no request
// reads more than a bounded amount into memory (a PUT streams to disk).
#include "sandboxd/rest_server.h"

#include <dirent.h>
#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace pmon::sandboxd {

namespace {

using nlohmann::json;

// Read and write sizes of a file transfer.
constexpr size_t kChunk = 64 * 1024;

const char* const kSensitiveMarkers[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CRED",
                                         "KEY",   "AUTH",   "BEARER",   "PRIVATE", "CERT"};

// A fixed set of worker threads and a bounded queue of accepted
// connections: when it is full the accept loop waits, so a flood of
// connections costs neither threads nor memory.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t queue) : max_queue_(queue) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mu_);
    room_.wait(lock, [&] { return jobs_.size() < max_queue_ || shutdown_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      shutdown_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      room_.notify_one();
      fn();
    }
  }
  const size_t max_queue_;
  std::mutex mu_;
  std::condition_variable ready_, room_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool shutdown_ = false;
};

void send_error(httplib::Response& res, int status, const char* code, const std::string& message) {
  res.status = status;
  res.set_content(json{{"code", code}, {"message", message}}.dump() + "\n", "application/json");
}

// A file operation's error in the spec's terms. `put`: a parent that is
// not a directory is the request's fault (400), not a missing path.
void send_fs_error(httplib::Response& res, std::error_code ec, bool put = false) {
  switch (ec.value()) {
    case EXDEV:
      return send_error(res, 403, "PERMISSION_DENIED", "path traversal outside sandbox root is forbidden");
    case EACCES:
    case EPERM:
    case EROFS:
      return send_error(res, 403, "PERMISSION_DENIED", "permission denied");
    case ENOENT:
      return send_error(res, 404, "NOT_FOUND", "path does not exist within the sandbox");
    case ENOTDIR:
      if (put) return send_error(res, 400, "INVALID_ARGUMENT", "a parent of the path is not a directory");
      return send_error(res, 404, "NOT_FOUND", "path does not exist within the sandbox");
    case ENOTEMPTY:
    case EEXIST:
      return send_error(res, 409, "CONFLICT", "directory is not empty; pass recursive=true to remove it");
    case EISDIR:
      return send_error(res, 400, "INVALID_ARGUMENT", "target path is a directory");
    case ENAMETOOLONG:
      return send_error(res, 400, "INVALID_ARGUMENT", "path too long");
    case ELOOP:
      return send_error(res, 400, "INVALID_ARGUMENT", "too many levels of symbolic links");
    case EINVAL:
      return send_error(res, 400, "INVALID_ARGUMENT", "not a regular file or directory");
    default:
      return send_error(res, 500, "INTERNAL", ec.message());
  }
}

std::string rfc3339(int64_t t) {
  const time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  (void)::gmtime_r(&tt, &tm);
  char buf[64];
  (void)std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string http_date(int64_t t) {
  static const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  (void)::gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
                kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

// The path after /v1/files/ (decoded by httplib; %2F is a '/').
std::string file_path(const httplib::Request& req) {
  std::string_view p = req.path;
  p.remove_prefix(std::strlen("/v1/files"));
  if (!p.empty() && p[0] == '/') p.remove_prefix(1);
  return std::string(p);
}

// Go's strconv.ParseBool, which the reference reads recursive= with.
std::optional<bool> parse_bool(const std::string& s) {
  if (s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "false" || s == "FALSE" || s == "False") return false;
  return std::nullopt;
}

std::optional<mode_t> parse_mode(const std::string& s) {
  if (s.size() != 4 || s[0] != '0') return std::nullopt;
  mode_t m = 0;
  for (size_t i = 1; i < 4; ++i) {
    if (s[i] < '0' || s[i] > '7') return std::nullopt;
    m = m * 8 + static_cast<mode_t>(s[i] - '0');
  }
  return m;
}

// Ends every connection of this process (its only sockets are the API's):
// a worker blocked reading a body that does not come, or waiting on an idle
// keep-alive connection, returns at once instead of after its timeout.
void shutdown_connections() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == ::dirfd(d)) continue;
    struct stat st {};
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening == 0)
      (void)::shutdown(fd, SHUT_RDWR);
  }
  (void)::closedir(d);
}

}  // namespace

std::map<std::string, std::string> metadata_env(char** environ, std::string_view prefix) {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(0, eq));
    if (!name.starts_with(prefix)) continue;
    std::string upper = name;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
    bool sensitive = false;
    for (const char* m : kSensitiveMarkers) sensitive = sensitive || upper.find(m) != std::string::npos;
    if (!sensitive) out[name] = std::string(kv.substr(eq + 1));
  }
  return out;
}

struct RestServer::Impl {
  const Root& root;
  RestOptions opts;
  json metadata;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  httplib::Server http;
  int port = 0;  // bound

  std::atomic<bool> draining{false};
  std::atomic<bool> cancelled{false};
  std::mutex mu;
  std::condition_variable idle;
  int in_flight = 0;

  // A file request in flight: shared with a response's content provider,
  // which runs after the handler has returned.
  struct Busy {
    Impl& s;
    explicit Busy(Impl& impl) : s(impl) {
      std::lock_guard lock(s.mu);
      ++s.in_flight;
    }
    ~Busy() {
      std::lock_guard lock(s.mu);
      if (--s.in_flight == 0) s.idle.notify_all();
    }
  };

  Impl(const Root& r, RestOptions o, std::map<std::string, std::string> env)
      : root(r), opts(std::move(o)), metadata(json{{"env", std::move(env)}}) {
    routes();
  }

  // Starts a file request; nothing (and a 503) while shutting down. The
  // request counts as in flight until its Response is destroyed, which
  // httplib does after the response was written (its destructor calls the
  // releaser): so shutdown does not cut a reply that was not yet sent.
  std::shared_ptr<Busy> admit(httplib::Response& res) {
    auto busy = std::make_shared<Busy>(*this);
    res.content_provider_resource_releaser_ = [busy](bool) {};
    if (draining.load()) {
      send_error(res, 503, "UNAVAILABLE", "sandboxd is shutting down");
      return nullptr;
    }
    return busy;
  }

  void routes() {
    const size_t threads = opts.threads, queue = opts.queue;
    http.new_task_queue = [threads, queue] { return new BoundedPool(threads, queue); };
    http.set_keep_alive_timeout(static_cast<time_t>(opts.idle_timeout.count()));
    http.set_keep_alive_max_count(100);
    http.set_read_timeout(static_cast<time_t>(opts.io_timeout.count()));
    http.set_write_timeout(static_cast<time_t>(opts.io_timeout.count()));
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return pre_route(req, res);
    });
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      const char* code = res.status == 404 ? "NOT_FOUND" : res.status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
      send_error(res, res.status, code, res.status == 404 ? "no such endpoint" : "bad request");
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      send_error(res, 500, "INTERNAL", "internal error");
    });
    http.Get("/v1/health", [this](const httplib::Request&, httplib::Response& res) { health(res); });
    http.Get("/v1/metadata", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metadata.dump() + "\n", "application/json");
    });
    if (opts.reset)
      http.Post("/v1/reset", [this](const httplib::Request&, httplib::Response& res) {
        if (draining.load()) {
          send_error(res, 503, "UNAVAILABLE", "shutting down");
          return;
        }
        auto [status, body] = opts.reset();
        res.status = status;
        res.set_content(body, "application/json");
      });
    // GET also answers HEAD (httplib sends no body for it).
    http.Get("/v1/files(/.*)?", [this](const httplib::Request& req, httplib::Response& res) { get(req, res); });
    http.Delete("/v1/files(/.*)?",
                [this](const httplib::Request& req, httplib::Response& res) { remove(req, res); });
    http.Put("/v1/files(/.*)?", [this](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& reader) { put(req, res, reader); });
  }

  // Before any body is read: only PUT /v1/files/... may send a large one
  // (it streams to disk); any other body is read into memory by httplib,
  // so it is bounded here.
  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) {
    const bool streamed = req.method == "PUT" && req.path.starts_with("/v1/files");
    if (streamed) return httplib::Server::HandlerResponse::Unhandled;
    const bool chunked = req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos;
    const std::string len = req.get_header_value("Content-Length");
    size_t n = 0;
    for (char c : len) n = (c < '0' || c > '9' || n > opts.max_other_body) ? opts.max_other_body + 1 : n * 10 + (c - '0');
    if (chunked || n > opts.max_other_body) {
      res.set_header("Connection", "close");
      send_error(res, 413, "INVALID_ARGUMENT", "request body too large");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void health(httplib::Response& res) {
    if (draining.load()) return send_error(res, 503, "UNAVAILABLE", "sandboxd is shutting down");
    const auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
    json body{{"status", "ok"}, {"uptime_seconds", up.count()}};
    if (!opts.confinement.empty()) body["confinement"] = opts.confinement;
    res.set_content(body.dump() + "\n", "application/json");
  }

  void get(const httplib::Request& req, httplib::Response& res) {
    auto busy = admit(res);
    if (!busy) return;
    const std::string path = file_path(req);
    auto opened = open_path(root, path);
    if (!opened) return send_fs_error(res, opened.error());
    res.set_header("Last-Modified", http_date(opened->st.st_mtim.tv_sec));
    if (opened->directory()) {
      auto entries = list_directory(root, path, *opened);
      if (!entries) return send_fs_error(res, entries.error());
      json list = json::array();
      for (const Entry& e : *entries)
        list.push_back({{"name", e.name},
                        {"size", e.size},
                        {"type", e.directory ? "directory" : "file"},
                        {"modified_at", rfc3339(e.mtime)},
                        {"mode", mode_text(e.mode)}});
      const std::string shown = path.starts_with('/') ? path : "/" + path;
      res.set_content(json{{"path", shown}, {"entries", std::move(list)}}.dump() + "\n", "application/json");
      return;
    }
    // The file is read through the fd opened here: a PUT that renames a new
    // file over it meanwhile does not change what this response sends.
    auto fd = std::make_shared<Fd>(std::move(opened->fd));
    const size_t size = static_cast<size_t>(opened->st.st_size);
    res.set_content_provider(
        size, "application/octet-stream",
        [this, fd, busy](size_t offset, size_t length, httplib::DataSink& sink) {
          if (cancelled.load()) return false;
          char buf[kChunk];
          const ssize_t n = ::pread(fd->get(), buf, std::min(length, sizeof buf), static_cast<off_t>(offset));
          // Shorter than its length: the file was truncated in place; the
          // connection is dropped rather than sending less than promised.
          if (n <= 0) return false;
          return sink.write(buf, static_cast<size_t>(n));
        },
        [busy](bool) {});
  }

  void remove(const httplib::Request& req, httplib::Response& res) {
    auto busy = admit(res);
    if (!busy) return;
    bool recursive = false;
    if (req.has_param("recursive") && !req.get_param_value("recursive").empty()) {
      const std::string v = req.get_param_value("recursive");
      auto b = parse_bool(v);
      if (!b) return send_error(res, 400, "INVALID_ARGUMENT", "recursive \"" + v + "\" must be a boolean");
      recursive = *b;
    }
    if (std::error_code ec = remove_path(root, file_path(req), recursive)) {
      if (ec.value() == ENOTEMPTY && file_path(req).find_first_not_of("/.") == std::string::npos)
        return send_error(res, 409, "CONFLICT",
                          "cannot delete the sandbox root; pass recursive=true to clear its contents");
      return send_fs_error(res, ec);
    }
    res.status = 204;
  }

  void put(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    auto busy = admit(res);
    if (!busy) return res.set_header("Connection", "close");
    mode_t mode = 0644;
    if (req.has_param("mode") && !req.get_param_value("mode").empty()) {
      const std::string v = req.get_param_value("mode");
      auto m = parse_mode(v);
      if (!m) {
        res.set_header("Connection", "close");
        return send_error(res, 400, "INVALID_ARGUMENT", "mode \"" + v + "\" must match ^0[0-7]{3}$");
      }
      mode = *m;
    }
    auto writer = AtomicWriter::begin(root, file_path(req), mode);
    if (!writer) {
      // The body was not read: the connection cannot carry another request.
      res.set_header("Connection", "close");
      return send_fs_error(res, writer.error(), /*put=*/true);
    }
    std::error_code write_error;
    auto sink = [&](const char* data, size_t n) {
      if (cancelled.load()) return false;
      write_error = writer->write(data, n);
      return !write_error;
    };
    bool read_ok = false;
    bool multipart = req.is_multipart_form_data();
    bool file_seen = false;
    if (multipart) {
      // The first part named "file" is the content; other parts are skipped.
      bool in_file = false;
      read_ok = reader(
          [&](const httplib::MultipartFormData& part) {
            in_file = part.name == "file" && !file_seen;
            file_seen = file_seen || in_file;
            return true;
          },
          [&](const char* data, size_t n) { return !in_file || sink(data, n); });
    } else {
      read_ok = reader(sink);
    }
    if (write_error) {
      res.set_header("Connection", "close");
      return send_fs_error(res, write_error, /*put=*/true);
    }
    if (!read_ok) {
      res.set_header("Connection", "close");
      return send_error(res, 400, "INVALID_ARGUMENT",
                        multipart ? "invalid multipart body" : "the request body could not be read");
    }
    if (multipart && !file_seen)
      return send_error(res, 400, "INVALID_ARGUMENT", "multipart body is missing the required \"file\" part");
    if (std::error_code ec = writer->commit()) return send_fs_error(res, ec, /*put=*/true);
    res.status = 204;
  }
};

RestServer::RestServer(const Root& root, RestOptions opts, std::map<std::string, std::string> metadata)
    : impl_(std::make_unique<Impl>(root, std::move(opts), std::move(metadata))) {}

RestServer::~RestServer() = default;

bool RestServer::bind() {
  if (impl_->opts.port != 0) {
    if (!impl_->http.bind_to_port(impl_->opts.host, impl_->opts.port)) return false;
    impl_->port = impl_->opts.port;
    return true;
  }
  impl_->port = impl_->http.bind_to_any_port(impl_->opts.host);
  return impl_->port > 0;
}

int RestServer::port() const { return impl_->port; }

bool RestServer::listen() { return impl_->http.listen_after_bind(); }

void RestServer::begin_shutdown() { impl_->draining.store(true); }

bool RestServer::wait_idle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(impl_->mu);
  return impl_->idle.wait_until(lock, deadline, [&] { return impl_->in_flight == 0; });
}

void RestServer::stop() {
  impl_->cancelled.store(true);
  impl_->http.stop();
  shutdown_connections();
}

}  // namespace pmon::sandboxd
