// SPDX-License-Identifier: Apache-2.0
// The settings an error from confine/ or core/ may tell its reader to
// change, named in the reader's terms: a flag on the command line, a keyword
// argument in Python. Each front end says once, at its start, which words it
// uses (the command line's are the default); a message asks for the word of
// a setting and never spells a flag itself.
#pragma once

#include <string_view>

namespace pmon {

enum class Setting {
  cgroup_root,     // the delegated cgroup the leaves are made below
  confine_cgroup,  // the cgroup backend, asked for by name
  isolate,         // the PID namespace with a cgroup of its own inside it
};

struct SettingWords {
  std::string_view cgroup_root;
  std::string_view confine_cgroup;
  std::string_view isolate;
};

// pmon run, serve, mcp, supervise, init.
inline constexpr SettingWords kCommandLineWords{"--cgroup-root", "--confine cgroup", "--isolate"};

// Replaces the words for the whole process (the strings must outlive it).
void use_setting_words(const SettingWords& words) noexcept;
std::string_view setting_word(Setting s) noexcept;

}  // namespace pmon
