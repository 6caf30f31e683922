// SPDX-License-Identifier: Apache-2.0
#include "confine/error.h"

#include <cstring>

namespace pmon {

namespace {
// A byte no message of pmon's has, then the setting's number.
constexpr char kMark = '\x01';
}  // namespace

Error Error::system(int err, std::string_view what) {
  Error e;
  e.code = Errc::system;
  e.err = err;
  e.text = std::string(what) + ": " + std::strerror(err);
  return e;
}

int exit_status(const Error& e) noexcept {
  switch (e.code) {
    case Errc::not_found: return 127;
    case Errc::not_executable: return 126;
    default: return 125;
  }
}

std::string setting_token(Setting s) {
  return {kMark, static_cast<char>('0' + static_cast<int>(s))};
}

std::string render_text(std::string_view text, const SettingWords& words) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != kMark || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    switch (text[++i]) {
      case '0' + static_cast<int>(Setting::cgroup_root): out += words.cgroup_root; break;
      case '0' + static_cast<int>(Setting::confine_cgroup): out += words.confine_cgroup; break;
      case '0' + static_cast<int>(Setting::isolate): out += words.isolate; break;
      case '0' + static_cast<int>(Setting::memory_max): out += words.memory_max; break;
      case '0' + static_cast<int>(Setting::memory_high): out += words.memory_high; break;
      case '0' + static_cast<int>(Setting::pids_max): out += words.pids_max; break;
      case '0' + static_cast<int>(Setting::cpu_max): out += words.cpu_max; break;
      case '0' + static_cast<int>(Setting::set_cgroup_root): out += words.set_cgroup_root; break;
      case '0' + static_cast<int>(Setting::without_limit): out += words.without_limit; break;
      default: out += kMark, out += text[i];
    }
  }
  return out;
}

std::string render(const Error& e, const SettingWords& words) { return render_text(e.text, words); }

std::vector<std::string> render_all(const std::vector<Error>& errors, const SettingWords& words) {
  std::vector<std::string> out;
  out.reserve(errors.size());
  for (const Error& e : errors) out.push_back(render(e, words));
  return out;
}

}  // namespace pmon
