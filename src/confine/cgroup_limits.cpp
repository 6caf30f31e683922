// SPDX-License-Identifier: Apache-2.0
#include "confine/cgroup_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <string_view>

#include "sys/proc.h"

namespace pmon::confine {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return std::string(s);
}

// "memory" in a cgroup.controllers or cgroup.subtree_control line.
bool has_word(std::string_view list, std::string_view word) {
  size_t pos = 0;
  while (pos < list.size()) {
    size_t end = list.find_first_of(" \n", pos);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(pos, end - pos) == word) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

std::string limit_words(const LimitRefusal& r, std::string_view whose) {
  std::string line = "cannot set the ";
  if (!whose.empty()) (line += whose) += ' ';
  line += r.limit + " limit: " + r.facts;
  if (!r.remedy.empty()) line += "; " + r.remedy;
  return line;
}

std::optional<LimitRefusal> ensure_controller(const ControllerSite& site, int leaf_dir, const char* controller,
                                              const char* file) {
  if (::faccessat(leaf_dir, file, F_OK, 0) == 0) return std::nullopt;
  const std::string& parent = site.base_path;
  const std::string fix = setting_token(Setting::set_cgroup_root) + " to an empty delegated cgroup where it is enabled, or " +
                          setting_token(Setting::without_limit);
  auto refused = [&](std::string facts, std::string remedy) {
    return LimitRefusal{controller, std::move(facts), std::move(remedy)};
  };
  std::lock_guard lock(*site.mu);
  auto available = sys::read_file_at(site.base_fd, "cgroup.controllers");
  if (!available || !has_word(*available, controller)) {
    std::string list = available ? trim(*available) : "unreadable";
    return refused(std::string("the ") + controller + " controller is not available in " + parent +
                       " (its cgroup.controllers: " + (list.empty() ? "none" : list) + ")",
                   "enable it in the cgroup.subtree_control of the cgroups above it (systemd: Delegate=yes), " + fix);
  }
  auto procs = sys::read_file_at(site.base_fd, "cgroup.procs");
  if (!procs || !trim(*procs).empty())
    return refused(std::string("the ") + controller + " controller is not enabled in " + parent +
                       "/cgroup.subtree_control, and pmon cannot enable it there: that cgroup holds processes" +
                       (site.base_is_pmons_own ? " (pmon itself)" : ""),
                   fix);
  std::string plus = "+";
  plus += controller;
  if (auto w = sys::write_file_at(site.base_fd, "cgroup.subtree_control", plus); !w)
    return refused(std::string("enabling the ") + controller + " controller in " + parent +
                       "/cgroup.subtree_control failed: " + w.error().message(),
                   fix);
  if (::faccessat(leaf_dir, file, F_OK, 0) != 0)
    return refused(std::string("the ") + controller + " controller is enabled in " + parent +
                       " but the leaf has no " + file,
                   fix);
  return std::nullopt;
}

std::optional<LimitRefusal> write_limits(const ControllerSite& site, int leaf_dir, const std::string& leaf_path,
                                         const Limits& limits, bool* memory) {
  auto write = [&](const char* file, const std::string& value, const char* what) -> std::optional<LimitRefusal> {
    if (auto w = sys::write_file_at(leaf_dir, file, value); !w)
      return LimitRefusal{what, "writing '" + value + "' to " + leaf_path + "/" + file + " failed: " + w.error().message(),
                          ""};
    return std::nullopt;
  };
  std::optional<LimitRefusal> err;
  if (limits.memory_max) {
    err = ensure_controller(site, leaf_dir, "memory", "memory.max");
    if (!err) err = write("memory.max", std::to_string(*limits.memory_max), "memory");
    // The whole call dies on an out-of-memory kill, not one process of it.
    if (!err) err = write("memory.oom.group", "1", "memory");
    if (!err) *memory = true;
  }
  if (!err && limits.memory_high) {
    err = ensure_controller(site, leaf_dir, "memory", "memory.high");
    if (!err) err = write("memory.high", std::to_string(*limits.memory_high), "memory");
    if (!err) *memory = true;
  }
  if (!err && limits.has_pids_max()) {
    err = ensure_controller(site, leaf_dir, "pids", "pids.max");
    if (!err) err = write("pids.max", std::to_string(*limits.pids_max), "pids");
  }
  if (!err && limits.cpu_max) {
    err = ensure_controller(site, leaf_dir, "cpu", "cpu.max");
    if (!err) err = write("cpu.max", cpu_max_line(*limits.cpu_max), "cpu");
  }
  return err;
}

std::expected<void, Error> write_default_pids(const ControllerSite& site, int leaf_dir, const std::string& leaf_path,
                                              uint64_t n) {
  // The facts alone: the fixes a refusal names are for a limit asked for.
  if (auto refused = ensure_controller(site, leaf_dir, "pids", "pids.max"))
    return std::unexpected(Error::line(std::move(refused->facts), Errc::unsupported));
  if (auto w = sys::write_file_at(leaf_dir, "pids.max", std::to_string(n)); !w)
    return std::unexpected(Error::failed(w.error().value(), "writing '" + std::to_string(n) + "' to " + leaf_path +
                                                                "/pids.max failed: " + w.error().message()));
  return {};
}

}  // namespace pmon::confine
