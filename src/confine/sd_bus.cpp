// SPDX-License-Identifier: Apache-2.0
// Talking to a systemd manager in this process, through libsystemd's sd-bus,
// dlopen'ed on first use (systemd.h says who may).
#include <dlfcn.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "confine/systemd.h"
#include "sys/syscalls.h"

namespace pmon::confine {

#ifndef PMON_HAVE_SYSTEMD

int append_start_scope_args(sd_bus_message*, const ScopeRequest&) { return -ENOSYS; }
const SystemdAccess* in_process_sd_bus() { return nullptr; }
void use_in_process_sd_bus() {}

#else

std::expected<SdBus, Error> load_sd_bus(const char* soname) {
  void* lib = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    return std::unexpected(
        Error::line(std::string(soname) + " not found: " + (why != nullptr ? why : "dlopen failed")));
  }
  SdBus t;
  const char* missing = nullptr;
#define PMON_SD_BUS_RESOLVE(name)                                        \
  t.name = reinterpret_cast<decltype(t.name)>(::dlsym(lib, #name));      \
  if (t.name == nullptr && missing == nullptr) missing = #name;
  PMON_SD_BUS_FUNCTIONS(PMON_SD_BUS_RESOLVE)
#undef PMON_SD_BUS_RESOLVE
  if (missing != nullptr) {
    (void)::dlclose(lib);
    return std::unexpected(Error::line(std::string(soname) + " has no " + missing + " (too old a libsystemd)"));
  }
  return t;  // the library stays loaded for the life of the process
}

const std::expected<SdBus, Error>& sd_bus_api() {
  static const std::expected<SdBus, Error> loaded = load_sd_bus("libsystemd.so.0");
  return loaded;
}

namespace {

struct Bus {
  const SdBus& sd;
  sd_bus* bus = nullptr;
  explicit Bus(const SdBus& api) : sd(api) {}
  ~Bus() { sd.sd_bus_flush_close_unref(bus); }
};

std::string errstr(int r) { return std::strerror(r < 0 ? -r : r); }

// The manager for this user: root's is the system manager, anyone else's the
// user manager — over the bus, or else straight to its private socket (no
// dbus-daemon needed, as systemctl does).
int open_manager_bus(Bus& b, std::string* how) {
  const SdBus& sd = b.sd;
  bool root = ::geteuid() == 0;
  int r = root ? sd.sd_bus_open_system(&b.bus) : sd.sd_bus_open_user(&b.bus);
  if (r >= 0) {
    *how = root ? "the system bus" : "the session bus";
    return r;
  }
  std::string first = (root ? "sd_bus_open_system: " : "sd_bus_open_user: ") + errstr(r);
  std::string priv;
  if (root) {
    priv = "/run/systemd/private";
  } else if (const char* xdg = ::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg == '/') {
    priv = std::string(xdg) + "/systemd/private";
  }
  if (priv.empty() || ::access(priv.c_str(), F_OK) != 0) {
    *how = first + (priv.empty() ? "; XDG_RUNTIME_DIR is not set" : "; no " + priv);
    return r;
  }
  sd.sd_bus_flush_close_unref(b.bus);
  b.bus = nullptr;
  if ((r = sd.sd_bus_new(&b.bus)) < 0) return r;
  std::string addr = "unix:path=" + priv;
  if ((r = sd.sd_bus_set_address(b.bus, addr.c_str())) < 0 || (r = sd.sd_bus_start(b.bus)) < 0) {
    *how = first + "; " + priv + ": " + errstr(r);
    return r;
  }
  *how = priv;
  return 0;
}

struct JobWait {
  const SdBus* sd = nullptr;
  std::string job;
  bool done = false;
  std::string result;
};

int on_job_removed(sd_bus_message* m, void* userdata, sd_bus_error*) {
  auto* w = static_cast<JobWait*>(userdata);
  uint32_t id = 0;
  const char *path = nullptr, *unit = nullptr, *result = nullptr;
  if (w->sd->sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0) return 0;
  if (!w->job.empty() && w->job == path) {
    w->done = true;
    w->result = result;
  }
  return 0;
}

}  // namespace

int append_start_scope_args(sd_bus_message* m, const ScopeRequest& req) {
  const auto& api = sd_bus_api();
  if (!api) return -ENOSYS;
  const SdBus& sd = *api;
  int r;
  if ((r = sd.sd_bus_message_append(m, "ss", req.unit.c_str(), "fail")) < 0) return r;
  if ((r = sd.sd_bus_message_open_container(m, 'a', "(sv)")) < 0) return r;
  if ((r = sd.sd_bus_message_append(m, "(sv)", "Description", "s", req.description.c_str())) < 0) return r;
  if ((r = sd.sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, static_cast<uint32_t>(req.pid))) < 0) return r;
  if ((r = sd.sd_bus_message_append(m, "(sv)", "Delegate", "b", 1)) < 0) return r;
  // Gone from the manager's memory as soon as it is empty, even if it failed.
  if ((r = sd.sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed")) < 0) return r;
  if ((r = sd.sd_bus_message_close_container(m)) < 0) return r;
  return sd.sd_bus_message_append(m, "a(sa(sv))", 0);
}

namespace {

// The manager's bus (open_manager_bus), or the one line that says why not;
// *how says which way it was reached.
std::expected<std::unique_ptr<Bus>, Error> connect_manager(std::string* how) {
  const auto& api = sd_bus_api();
  if (!api) return std::unexpected(Error::line("no systemd manager reachable (" + api.error().text + ")"));
  auto b = std::make_unique<Bus>(*api);
  if (open_manager_bus(*b, how) < 0) return std::unexpected(Error::line("no systemd manager reachable (" + *how + ")"));
  return b;
}

std::expected<std::string, Error> probe_in_process() {
  std::string how;
  auto bus = connect_manager(&how);
  if (!bus) return std::unexpected(bus.error());
  Bus& b = **bus;
  const SdBus& sd = b.sd;
  // The string stays inside the reply (nothing for us to free: whose free()
  // would match libsystemd's malloc depends on how pmon was linked and on
  // any allocator preloaded into it).
  sd_bus_message* reply = nullptr;
  const char* version = nullptr;
  sd_bus_error err = SD_BUS_ERROR_NULL;
  int r = sd.sd_bus_get_property(b.bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                 "org.freedesktop.systemd1.Manager", "Version", &err, &reply, "s");
  if (r >= 0) r = sd.sd_bus_message_read(reply, "s", &version);
  if (r < 0) {
    std::string why = err.message != nullptr ? err.message : errstr(r);
    sd.sd_bus_error_free(&err);
    sd.sd_bus_message_unref(reply);
    return std::unexpected(Error::line("no systemd manager answers on " + how + " (" + why + ")"));
  }
  std::string out = std::string("systemd ") + version + " (" +
                    (::geteuid() == 0 ? "system manager" : "user manager of uid " + std::to_string(::geteuid())) +
                    ", via " + how + ")";
  sd.sd_bus_message_unref(reply);
  return out;
}

// Whether the process pinned by pidfd has ended (a zombie included).
bool ended(const Fd& pidfd) {
  pollfd p{pidfd.get(), POLLIN, 0};
  return retry_eintr([&] { return ::poll(&p, 1, 0); }) == 1;
}

// Asks the manager to stop `unit` (a start still queued is cancelled);
// the reason it refused, or empty.
std::string stop_unit(Bus& b, const std::string& unit) {
  const SdBus& sd = b.sd;
  sd_bus_error err = SD_BUS_ERROR_NULL;
  sd_bus_message* reply = nullptr;
  int r = sd.sd_bus_call_method(b.bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                "org.freedesktop.systemd1.Manager", "StopUnit", &err, &reply, "ss", unit.c_str(),
                                "replace");
  std::string why = r >= 0 ? "" : err.message != nullptr ? err.message : errstr(r);
  sd.sd_bus_error_free(&err);
  sd.sd_bus_message_unref(reply);
  return why;
}

std::expected<std::string, Error> start_scope_in_process(const ScopeRequest& req) {
  // The process to move, pinned. One that ends before the manager moves it
  // is not moved (the kernel skips a process that is exiting), yet the
  // scope starts, empty, and the manager, which waits to see it empty
  // out, keeps it for good: such a scope is stopped here.
  auto pin = sys::pidfd_open(req.pid);
  if (!pin)
    return std::unexpected(Error::line("cannot hold on to process " + std::to_string(req.pid) + " (pidfd_open: " +
                                       pin.error().message() + "); no scope is started for it"));
  std::string how;
  auto bus = connect_manager(&how);
  if (!bus) return std::unexpected(bus.error());
  Bus& b = **bus;
  const SdBus& sd = b.sd;

  JobWait wait;
  wait.sd = &sd;
  sd_bus_slot* slot = nullptr;
  int r = sd.sd_bus_match_signal(b.bus, &slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                              "org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed, &wait);
  if (r < 0) return std::unexpected(Error::line("systemd: cannot watch for the job: " + errstr(r)));
  // No Subscribe: the manager sends a job's signals to the client that
  // queued it (and everything to a private-socket client); subscribing would
  // only add every other unit's signals.
  sd_bus_error err = SD_BUS_ERROR_NULL;
  sd_bus_message* m = nullptr;
  sd_bus_message* reply = nullptr;
  r = sd.sd_bus_message_new_method_call(b.bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                     "org.freedesktop.systemd1.Manager", "StartTransientUnit");
  if (r >= 0) r = append_start_scope_args(m, req);
  if (r >= 0) r = sd.sd_bus_call(b.bus, m, 10'000'000, &err, &reply);
  sd.sd_bus_message_unref(m);
  if (r < 0) {
    std::string why = err.message != nullptr ? err.message : errstr(r);
    sd.sd_bus_error_free(&err);
    sd.sd_bus_slot_unref(slot);
    return std::unexpected(
        Error::line("systemd refused a delegated scope (StartTransientUnit " + req.unit + ": " + why + ")"));
  }
  const char* job = nullptr;
  if (sd.sd_bus_message_read(reply, "o", &job) >= 0 && job != nullptr) wait.job = job;
  sd.sd_bus_message_unref(reply);

  // Wait for the job (JobRemoved), or for us to show up in the scope.
  const int64_t deadline = sys::monotonic_ns() + 10'000'000'000LL;
  std::string own;
  bool moved = false;
  for (;;) {
    own = cgroup_of(req.pid);
    moved = own.size() > req.unit.size() && own.compare(own.size() - req.unit.size(), req.unit.size(), req.unit) == 0;
    if (wait.done && wait.result != "done") {
      sd.sd_bus_slot_unref(slot);
      // Most often the manager could not move us into the scope (a user
      // manager needs the system manager for a process outside its tree).
      return std::unexpected(Error::line("systemd could not start " + req.unit + " (job result '" + wait.result +
                             "'; the manager's log says why, e.g. it could not move pmon into it)"));
    }
    if (moved && (wait.done || wait.job.empty())) break;
    if (!moved && ended(*pin)) {
      sd.sd_bus_slot_unref(slot);
      std::string refused = stop_unit(b, req.unit);
      return std::unexpected(Error::line("process " + std::to_string(req.pid) + " ended before systemd moved it into " +
                                         req.unit + (refused.empty() ? "; the scope is stopped"
                                                                     : "; stopping the scope failed: " + refused)));
    }
    int64_t now = sys::monotonic_ns();
    if (now >= deadline) {
      sd.sd_bus_slot_unref(slot);
      return std::unexpected(Error::line("systemd: timed out waiting for " + req.unit));
    }
    r = sd.sd_bus_process(b.bus, nullptr);
    if (r < 0) {
      sd.sd_bus_slot_unref(slot);
      return std::unexpected(Error::line("systemd: lost the bus while waiting for " + req.unit + ": " + errstr(r)));
    }
    if (r == 0) (void)sd.sd_bus_wait(b.bus, static_cast<uint64_t>(std::min<int64_t>(deadline - now, 100'000'000) / 1000));
  }
  sd.sd_bus_slot_unref(slot);
  return own;
}

std::expected<std::string, Error> stop_scope_in_process(const std::string& unit) {
  std::string how;
  auto bus = connect_manager(&how);
  if (!bus) return std::unexpected(bus.error());
  if (std::string refused = stop_unit(**bus, unit); !refused.empty())
    return std::unexpected(Error::line("systemd did not stop " + unit + " (" + refused + ")"));
  return "stopping " + unit;
}

}  // namespace

const SystemdAccess* in_process_sd_bus() {
  static const SystemdAccess access{start_scope_in_process, probe_in_process, stop_scope_in_process};
  return &access;
}

void use_in_process_sd_bus() { detail::set_systemd_access(in_process_sd_bus()); }

#endif

}  // namespace pmon::confine
