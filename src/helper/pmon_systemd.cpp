// SPDX-License-Identifier: Apache-2.0
// pmon-systemd: talks to a systemd manager for the pmon executable, which
// is linked statically and so must not dlopen libsystemd (confine/systemd.h).
// Run by pmon only on the rare path where its own cgroup is not writable,
// and by `pmon doctor`; not meant to be run by hand.
//
//   pmon-systemd scope PID UNIT DESCRIPTION
//       starts the transient scope UNIT (Delegate=yes) holding PID, waits
//       until PID is in it, and prints the scope's cgroup path
//   pmon-systemd probe
//       prints which manager answers ("systemd 252 (user manager ...)")
//   pmon-systemd stop UNIT
//       asks the manager to stop the scope UNIT (pmon-<pid>-<start>.scope
//       only), for `pmon gc`
//
// One line on stdout either way: the answer (exit 0) or why not (exit 1).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "confine/systemd.h"

namespace {

int answer(const std::expected<std::string, pmon::Error>& r) {
  std::printf("%s\n", r ? r->c_str() : r.error().text.c_str());
  return r ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pmon::confine;
  const SystemdAccess* sd = in_process_sd_bus();
  std::string cmd = argc > 1 ? argv[1] : "";
  if (sd == nullptr) return answer(std::unexpected(pmon::Error::line("this pmon was built without libsystemd")));
  if (cmd == "probe" && argc == 2) return answer(sd->probe());
  if (cmd == "scope" && argc == 5) {
    char* end = nullptr;
    long pid = std::strtol(argv[2], &end, 10);
    if (end != argv[2] && *end == '\0' && pid > 0) {
      ScopeRequest req;
      req.pid = static_cast<pid_t>(pid);
      req.unit = argv[3];
      req.description = argv[4];
      return answer(sd->start_scope(req));
    }
  }
  if (cmd == "stop" && argc == 3) {
    pid_t pid = 0;
    uint64_t start = 0;
    if (!parse_scope_name(argv[2], &pid, &start))
      return answer(std::unexpected(pmon::Error::line(std::string(argv[2]) + " is not a scope pmon asks for")));
    return answer(sd->stop_scope(argv[2]));
  }
  std::fprintf(stderr,
               "usage: pmon-systemd scope PID UNIT DESCRIPTION | pmon-systemd probe | pmon-systemd stop UNIT"
               " (run by pmon, not by hand)\n");
  return 2;
}
