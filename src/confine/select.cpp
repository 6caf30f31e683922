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
          return std::unexpected(
              Error::line("the pmon executable for the namespace's init was not found", Errc::no_init_exe));
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

namespace {

std::expected<Selection, Error> select_plain(const ConfineRequest& req);

}  // namespace

// With an envelope: the session's cgroup first, then the backend inside it.
std::expected<Selection, Error> select_backend(const ConfineRequest& req) {
  if (!req.envelope) return select_plain(req);
  const Envelope& env = *req.envelope;
  // A named session with no envelope anywhere: only its shared cgroup is at
  // stake, and the note says so (there is no configured envelope to name).
  const bool bare = !env.asked && !env.limits.any() && req.session && req.session->kind == SessionKey::Kind::named;
  const std::string whose = bare ? "the session " + req.session->name : "the session's envelope";
  auto head = [&](const std::string& why) {
    if (bare) return Error::line(whose + " " + why, Errc::confinement);
    return Error::line("the session's envelope (" + describe(env) + ", set by " + env.set_by + ") " + why,
                       Errc::confinement);
  };
  auto skip = [&](Error why) -> std::expected<Selection, Error> {
    if (env.asked) return std::unexpected(std::move(why));
    ConfineRequest plain = req;
    plain.envelope.reset();
    // A named session stays one shared cgroup without the envelope: its
    // calls are together as they would be with no config file at all.
    if (req.session && req.session->kind == SessionKey::Kind::named && env.limits.any()) {
      plain.envelope = Envelope{};
      plain.envelope->asked = false;
      plain.envelope->set_by = "the session";
    }
    auto sel = plain.envelope ? select_backend(plain) : select_plain(plain);
    const char* what = bare ? "the call runs outside its session: " : "the configured session envelope is not set: ";
    if (sel) sel->session_note = prefixed(what, std::move(why));
    return sel;
  };
  const bool cgroup_kind = !req.kind || *req.kind == ConfineKind::cgroup || (*req.kind == ConfineKind::pidns && req.isolate);
  if (!cgroup_kind)
    return skip(head("needs a cgroup of its own: use " + setting_token(Setting::confine_cgroup) + " or " +
                     setting_token(Setting::isolate) + ", not the " + std::string(to_string(*req.kind)) + " backend"));
  auto session = confine::SessionCgroup::open(req.cgroup_root, req.session.value_or(SessionKey::of_this_process()), env);
  if (!session) {
    Error e = std::move(session.error());
    if (!e.text.starts_with("the session's envelope")) e = prefixed(whose + ": ", std::move(e));
    return skip(std::move(e));
  }
  ConfineRequest inside = req;
  inside.envelope.reset();
  inside.cgroup_root = (*session)->path();
  if (!inside.kind && !inside.isolate) inside.kind = ConfineKind::cgroup;
  auto sel = select_plain(inside);
  if (!sel) return std::unexpected(prefixed("the session's cgroup " + (*session)->path() + ": ", std::move(sel.error())));
  sel->backend->hold_session(std::move(*session));
  return sel;
}

namespace {

std::expected<Selection, Error> select_plain(const ConfineRequest& req) {
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
    sel.passed_over_kinds.push_back(k);
  }
  if (sel.passed_over.empty()) return unsupported("no confinement backend works here: ");
  return std::unexpected(prefixed("no confinement backend works here: ", sel.passed_over.back()));
}

}  // namespace

}  // namespace pmon
