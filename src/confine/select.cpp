// SPDX-License-Identifier: Apache-2.0
#include "confine/boundary.h"
#include "confine/pidns.h"

namespace pmon {

namespace {

std::expected<std::unique_ptr<Backend>, Error> open_kind(ConfineKind k, const ConfineRequest& req) {
  switch (k) {
    case ConfineKind::cgroup: return open_cgroup_backend(req.cgroup_root);
    case ConfineKind::pidns: {
      PidnsOptions po;
      po.isolate = req.isolate;
      po.cgroup_root = req.cgroup_root;
      if (req.init_exe) {
        if (req.init_exe->empty())
          return unsupported(std::string("the pmon executable for the namespace's init was not found"));
        po.init_exe = *req.init_exe;
      }
      return open_pidns_backend(po);
    }
    case ConfineKind::subreaper:
      if (req.in_library)
        return unsupported(std::string("not available in a library (it would make the host process a "
                                           "subreaper whose orphans nobody reaps)"));
      return open_subreaper_backend();
    case ConfineKind::pgroup: return open_pgroup_backend();
  }
  return unsupported(std::string("unknown backend"));
}

}  // namespace

std::expected<Selection, Error> select_backend(const ConfineRequest& req) {
  Selection sel;
  if (req.isolate) {
    if (req.kind && *req.kind != ConfineKind::pidns)
      return unsupported(std::string("isolation is the cgroup and pidns backends together, not ") +
                             std::string(to_string(*req.kind)));
    auto b = open_kind(ConfineKind::pidns, req);
    if (!b) return std::unexpected(b.error());
    sel.backend = std::move(*b);
    return sel;
  }
  if (req.kind) {
    auto b = open_kind(*req.kind, req);
    if (!b) return std::unexpected(prefixed(std::string(to_string(*req.kind)) + ": ", b.error()));
    sel.backend = std::move(*b);
    return sel;
  }
  // Strongest first (DESIGN §2).
  for (ConfineKind k : {ConfineKind::cgroup, ConfineKind::pidns, ConfineKind::subreaper, ConfineKind::pgroup}) {
    if (k == ConfineKind::subreaper && req.in_library) continue;
    auto b = open_kind(k, req);
    if (b) {
      sel.backend = std::move(*b);
      return sel;
    }
    // An explicit cgroup root asks for cgroup: a bad one is an error, not a
    // reason to fall back to something weaker.
    if (k == ConfineKind::cgroup && !req.cgroup_root.empty())
      return std::unexpected(prefixed("cgroup: ", b.error()));
    sel.passed_over.push_back(prefixed(std::string(to_string(k)) + ": ", std::move(b.error())));
  }
  if (sel.passed_over.empty()) return unsupported("no confinement backend works here: ");
  return std::unexpected(prefixed("no confinement backend works here: ", sel.passed_over.back()));
}

}  // namespace pmon
