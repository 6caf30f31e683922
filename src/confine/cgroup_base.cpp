// SPDX-License-Identifier: Apache-2.0
#include "confine/cgroup_base.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "confine/error.h"
#include "confine/systemd.h"

namespace pmon::confine {

// The lowest common ancestor of two relative cgroup paths.
std::string common_ancestor(const std::string& a, const std::string& b) {
  size_t i = 0, last = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '/') last = i;
    ++i;
  }
  if ((i == a.size() && (i == b.size() || b[i] == '/')) ||
      (i == b.size() && a[i] == '/'))
    last = i;
  std::string out = a.substr(0, last);
  return out.empty() ? "/" : out;
}

std::expected<LeafBase, Error> choose_leaf_base(const std::string& cgroup_root) {
  auto loc = locate_cgroup2();
  if (!loc) return std::unexpected(std::move(loc.error()));

  std::string base_rel = loc->own;
  // Our own cgroup is not ours to write: a systemd manager may hand us a
  // delegated scope (one D-Bus round trip per process). If not, say why.
  std::string systemd_note;
  const std::string own_checked = loc->own;  // its cgroup.procs is not checked twice
  const bool own_writable = ::access(loc->own_path.c_str(), W_OK) == 0 &&
                            ::access((loc->own_path + "/cgroup.procs").c_str(), W_OK) == 0;
  // Writable but systemd's (root in a service, a user in a unit of its user
  // manager): leaves there could get no controllers (the cgroup holds
  // processes), and systemd may move or remove them; a scope of our own is
  // asked for, and if none comes the leaves go there as before (noted in
  // -v and doctor).
  // This process moved itself into the supervisor cgroup of a scope it
  // asked for, for an earlier backend (the Python package holds one per
  // confine= value): the leaves go in that scope too, next to the first
  // backend's, not beside this process (where they could get no controller).
  const bool in_own_scope = cgroup_root.empty() && own_writable && loc->own.ends_with("/supervisor") &&
                            loc->own.ends_with("/" + scope_request_for_self().unit + "/supervisor");
  if (in_own_scope) base_rel = loc->own.substr(0, loc->own.size() - std::strlen("/supervisor"));
  std::optional<std::string> managers;
  if (cgroup_root.empty() && own_writable && !in_own_scope) managers = cgroup_owned_by_manager(*loc);
  std::string fallback_note;
  if (cgroup_root.empty() && (!own_writable || managers)) {
    std::string scope_rel;
    if (auto moved = systemd_delegate_self(*loc, &scope_rel)) {
      loc = std::move(*moved);
      base_rel = scope_rel;
    } else if (managers) {
      fallback_note = "; " + *managers + ", but systemd gave no delegated scope (" + moved.error().text +
                      "), so the leaves are made there";
    } else {
      systemd_note = "; asked systemd for a delegated scope: " + moved.error().text;
    }
  }
  if (!cgroup_root.empty()) {
    std::string r = cgroup_root;
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    if (r != loc->mount && r.rfind(loc->mount + "/", 0) != 0)
      return unsupported("the cgroup root " + cgroup_root + " (" + setting_token(Setting::cgroup_root) +
                             ") is not below the cgroup2 mount " + loc->mount);
    base_rel = r == loc->mount ? "/" : r.substr(loc->mount.size());
  }
  std::string base_path = base_rel == "/" ? loc->mount : loc->mount + base_rel;

  Fd base(::open(base_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base)
    return unsupported("cannot open cgroup " + base_path + ": " + std::strerror(errno));

  // CLONE_INTO_CGROUP needs write access to cgroup.procs of the common
  // ancestor of our cgroup and the leaf (the kernel's migration rule).
  std::string anc = common_ancestor(loc->own, base_rel);
  std::string anc_procs = (anc == "/" ? loc->mount : loc->mount + anc) + "/cgroup.procs";
  if (!(own_writable && anc == own_checked) && ::access(anc_procs.c_str(), W_OK) != 0)
    return unsupported(
        "cannot move processes under " + base_path + ": " + anc_procs + " is not writable (" +
        std::strerror(errno) + "); run pmon inside a delegated cgroup subtree or set " +
        setting_token(Setting::cgroup_root) + " to one that contains pmon's own cgroup" + systemd_note);

  return LeafBase{std::move(*loc), std::move(base_rel), std::move(base_path), std::move(base),
                  std::move(systemd_note), std::move(fallback_note)};
}

}  // namespace pmon::confine
