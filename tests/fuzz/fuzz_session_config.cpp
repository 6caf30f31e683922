// SPDX-License-Identifier: Apache-2.0
// Fuzz target: a config file's text, read for the session envelope. Any
// bytes must give an envelope or one line naming the file, without a crash
// (deep nesting included); an envelope it gives holds what the kernel will
// be asked to set: memory.high below memory.max, each field in range, and
// something limited unless a pids_max of 0 asked for no limit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/session_config.h"
#include "core/toml.h"
#include "fuzz_check.h"

using namespace pmon;
using serve::fuzz::check;

namespace {

// Whether the text, read as TOML on its own, has a pids_max key in its
// [session] table or in a [profiles.NAME] table: the one way to an
// envelope that limits nothing (a pids_max of 0 is no limit).
bool has_pids_max(const std::string& text) {
  const auto in = [](const toml::node* n) {
    const toml::table* t = n != nullptr ? n->as_table() : nullptr;
    return t != nullptr && t->contains("pids_max");
  };
  try {
    const toml::table root = toml::parse(text);
    if (in(root.get("session"))) return true;
    if (const toml::table* profiles = root["profiles"].as_table())
      for (auto&& [name, p] : *profiles)
        if (in(&p)) return true;
  } catch (const toml::parse_error&) {
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "/etc/pmon/config.toml";
  auto r = envelope_from_toml(text, path);
  if (!r) {
    const std::string& line = r.error().text;
    check(line.starts_with(path + ":"), "a refusal that does not name the file");
    check(line.find('\n') == std::string::npos && line.find('\r') == std::string::npos, "a refusal that is not one line");
    return 0;
  }
  if (!*r) return 0;
  const Envelope& e = **r;
  const Limits& l = e.limits;
  check(!e.asked, "the file's envelope taken as asked for");
  check(e.set_by == path, "the file's envelope not set by the file");
  // An envelope that limits nothing comes only of a pids_max of 0 (none).
  check(l.any() || has_pids_max(text), "an envelope that sets nothing");
  if (l.memory_max) {
    check(*l.memory_max > 0, "memory.max 0");
    // (three quarters of it, or none for a memory.max too small to have them)
    check(l.memory_high.has_value() || *l.memory_max < 4, "memory.max without memory.high");
  }
  if (l.memory_max && l.memory_high) check(*l.memory_high < *l.memory_max, "memory.high at or above memory.max");
  if (l.pids_max) check(*l.pids_max > 0, "pids.max 0 kept as a limit");
  if (l.cpu_max) check(*l.cpu_max >= 0.01 && *l.cpu_max <= 100000, "cpu.max out of range");
  return 0;
}
