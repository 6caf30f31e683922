// SPDX-License-Identifier: Apache-2.0
// pmon doctor [--json]: what this host offers pmon, each mechanism probed
// for real where it can be (confine/host_probe.h), and which backend auto
// picks.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "confine/boundary.h"
#include "confine/host_probe.h"

namespace pmon::cli {

int doctor_main(const std::vector<std::string>& args) {
  CLI::App app{"Say what this host offers pmon, and which backend auto would pick.", "pmon doctor"};
  app.footer("\nExit 0 when a backend that a setsid() daemon cannot escape works here:\n"
             "cgroup, pidns or subreaper; 1 otherwise.");
  bool json = false;
  app.add_flag("--json", json, "one JSON object on stdout");
  if (!parse_options(app, args, "doctor")) return 0;

  const std::vector<confine::HostCheck> checks = confine::probe_host();

  // Which backends work, and what auto picks.
  nlohmann::json backends = nlohmann::json::object();
  bool e1_safe = false;  // a setsid() daemon cannot escape the backend (E1)
  for (ConfineKind k : {ConfineKind::cgroup, ConfineKind::pidns, ConfineKind::subreaper, ConfineKind::pgroup}) {
    ConfineRequest r;
    r.kind = k;
    auto s = select_backend(r);
    backends[std::string(to_string(k))] = {{"available", s.has_value()},
                                           {"detail", s ? s->backend->describe() : render(s.error())}};
    if (s && k != ConfineKind::pgroup) e1_safe = true;
  }
  auto sel = select_backend(ConfineRequest{});
  std::string pick = sel ? std::string(to_string(sel->backend->kind())) : std::string("none");
  std::vector<std::string> over = sel ? render_all(sel->passed_over) : std::vector<std::string>{render(sel.error())};
  std::string auto_detail = pick + (over.empty() ? std::string() : " (passed over: " + [&] {
    std::string s;
    for (const std::string& o : over) s += (s.empty() ? "" : "; ") + o;
    return s;
  }() + ")");

  if (json) {
    nlohmann::json cs = nlohmann::json::array();
    for (const confine::HostCheck& c : checks) cs.push_back({{"name", c.name}, {"ok", c.ok}, {"detail", render_text(c.detail)}});
    nlohmann::json out = {{"version", 1},
                          {"uid", ::geteuid()},
                          {"checks", cs},
                          {"backends", backends},
                          {"auto", {{"backend", sel ? nlohmann::json(pick) : nlohmann::json()}, {"passed_over", over}}},
                          {"ok", e1_safe}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    for (const confine::HostCheck& c : checks) std::printf("%-19s %-4s %s\n", c.name.c_str(), c.ok ? "yes" : "no", render_text(c.detail).c_str());
    for (const char* k : {"cgroup", "pidns", "subreaper", "pgroup"}) {
      const nlohmann::json& v = backends[k];
      std::printf("%-19s %-4s %s\n", (std::string("backend ") + k).c_str(), v["available"].get<bool>() ? "yes" : "no",
                  v["detail"].get<std::string>().c_str());
    }
    std::printf("%-19s %-4s %s\n", "auto", sel ? "yes" : "no", auto_detail.c_str());
    if (!e1_safe)
      std::printf("no backend that survives a setsid daemon (cgroup, pidns, subreaper) works here\n");
  }
  return e1_safe ? 0 : 1;
}

}  // namespace pmon::cli
