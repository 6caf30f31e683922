#include "cli/confine_flags.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/cli.h"
#include "confine/pidns.h"

namespace pmon::cli {

void ConfineFlags::add_to(CLI::App& app) {
  app.add_option("--confine", confine, "auto|cgroup|pidns|subreaper|pgroup (default auto)");
  app.add_option("--cgroup-root", cgroup_root,
                 "delegated cgroup2 directory for the leaves (default: pmon's own cgroup)");
  app.add_flag("--isolate", isolate, "pid + cgroup namespaces: a hostile call cannot escape");
}

Selection ConfineFlags::select(const std::string& sub, bool quiet) const {
  auto sel = try_select(sub, quiet);
  if (!sel) die("confinement unavailable: " + sel.error());
  return std::move(*sel);
}

ConfineKind ConfineFlags::tried() const {
  if (isolate) return ConfineKind::pidns;
  return parse_confine_kind(confine).value_or(ConfineKind::cgroup);
}

std::expected<Selection, std::string> ConfineFlags::try_select(const std::string& sub, bool quiet) const {
  ConfineRequest req;
  req.cgroup_root = cgroup_root;
  if (confine != "auto") {
    auto k = parse_confine_kind(confine);
    if (!k) die(sub + ": --confine: unknown backend '" + confine + "' (use auto, cgroup, pidns, subreaper or pgroup)");
    req.kind = *k;
  }
  if (isolate && req.kind && *req.kind != ConfineKind::pidns)
    die(sub + ": --isolate is the cgroup and pidns backends together; it cannot be combined with --confine " +
        confine);
  // --isolate: a cgroup leaf inside PID, cgroup, mount and user namespaces.
  // Without the cgroup backend it fails closed: a PID namespace alone does
  // not stop a call from moving itself to another cgroup.
  auto isolated = [&]() -> std::expected<Selection, std::string> {
    PidnsOptions po;
    po.isolate = true;
    po.cgroup_root = cgroup_root;
    auto b = open_pidns_backend(po);
    if (!b) return std::unexpected("--isolate: " + b.error());
    Selection s;
    s.backend = std::move(*b);
    return s;
  };
  auto sel = isolate ? isolated() : select_backend(req);
  if (!sel) return sel;
  if (!quiet)
    for (const std::string& why : sel->passed_over)
      std::fprintf(stderr, "pmon: %s; falling back to %s\n", why.c_str(),
                   std::string(to_string(sel->backend->kind())).c_str());
  return sel;
}

}  // namespace pmon::cli
