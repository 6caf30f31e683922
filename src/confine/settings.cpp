// SPDX-License-Identifier: Apache-2.0
#include "confine/settings.h"

#include <atomic>

namespace pmon {

namespace {
// Set once by a front end before any call starts; read by every thread.
std::atomic<const SettingWords*> g_words{&kCommandLineWords};
SettingWords g_custom;
}  // namespace

void use_setting_words(const SettingWords& words) noexcept {
  g_custom = words;
  g_words.store(&g_custom, std::memory_order_release);
}

std::string_view setting_word(Setting s) noexcept {
  const SettingWords& w = *g_words.load(std::memory_order_acquire);
  switch (s) {
    case Setting::cgroup_root: return w.cgroup_root;
    case Setting::confine_cgroup: return w.confine_cgroup;
    case Setting::isolate: return w.isolate;
  }
  return {};
}

}  // namespace pmon
