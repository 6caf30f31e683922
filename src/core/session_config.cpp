// SPDX-License-Identifier: Apache-2.0
#include "core/session_config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/printable.h"
#include "core/toml.h"
#include "core/units.h"

namespace pmon {

namespace {

// A value or a file that is not right: one line naming where it comes from.
std::unexpected<Error> bad(std::string line) {
  return std::unexpected(Error::line(std::move(line), Errc::invalid_argument));
}

// The fields of one envelope as text, each with where it came from.
struct Fields {
  std::string profile, memory_max, memory_high, pids_max, cpu_max;
  std::string profile_from, memory_max_from, memory_high_from, pids_max_from, cpu_max_from;
  bool any() const {
    return !profile.empty() || !memory_max.empty() || !memory_high.empty() || !pids_max.empty() || !cpu_max.empty();
  }
};

// A [profiles.NAME] table of the file, as text.
struct FileProfile {
  std::string name, memory_max, memory_high, pids_max, cpu_max;
};

struct FileConfig {
  std::string path;
  Fields session;
  std::vector<FileProfile> profiles;
};

// A TOML value as the text a flag would carry: "4G", 512, 1.5.
std::expected<std::string, Error> text_of(const toml::node& n, const std::string& where) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) {
    if (i->get() < 0) return bad(where + ": must not be negative");
    return std::to_string(i->get());
  }
  if (auto d = n.as_floating_point()) {
    std::ostringstream o;
    o << d->get();
    return o.str();
  }
  return bad(where + ": must be a number or a string such as \"4G\"");
}

std::expected<void, Error> read_table(const toml::table& t, const std::string& where, std::string* profile,
                                            std::string& mmax, std::string& mhigh, std::string& pids,
                                            std::string& cpu) {
  for (auto&& [k, v] : t) {
    const std::string key(k.str());
    const std::string at = where + "." + key;
    std::string* to = nullptr;
    if (key == "memory_max") to = &mmax;
    else if (key == "memory_high") to = &mhigh;
    else if (key == "pids_max") to = &pids;
    else if (key == "cpu_max") to = &cpu;
    else if (key == "profile" && profile != nullptr) to = profile;
    if (to == nullptr)
      return bad(at + ": unknown key (use " + (profile ? "profile, " : "") +
                             "memory_max, memory_high, pids_max, cpu_max)");
    auto text = text_of(v, at);
    if (!text) return std::unexpected(text.error());
    *to = *text;
  }
  return {};
}

std::expected<FileConfig, Error> parse_file(const std::string& text, const std::string& path) {
  FileConfig c;
  c.path = path;
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return bad(path + ":" + std::to_string(where.line) + ": " + std::string(e.description()));
  }
  for (auto&& [k, v] : root) {
    const std::string key(k.str());
    if (key == "session") {
      const toml::table* t = v.as_table();
      if (t == nullptr) return bad(path + ": session must be a table ([session])");
      Fields& f = c.session;
      if (auto r = read_table(*t, path + ": session", &f.profile, f.memory_max, f.memory_high, f.pids_max, f.cpu_max);
          !r)
        return std::unexpected(r.error());
      for (std::string* from : {&f.profile_from, &f.memory_max_from, &f.memory_high_from, &f.pids_max_from,
                                &f.cpu_max_from})
        *from = path;
    } else if (key == "profiles") {
      const toml::table* t = v.as_table();
      if (t == nullptr) return bad(path + ": profiles must be tables ([profiles.NAME])");
      for (auto&& [pk, pv] : *t) {
        const toml::table* pt = pv.as_table();
        const std::string name(pk.str());
        if (pt == nullptr) return bad(path + ": profiles." + name + " must be a table");
        FileProfile p;
        p.name = name;
        if (auto r = read_table(*pt, path + ": profiles." + name, nullptr, p.memory_max, p.memory_high, p.pids_max,
                                p.cpu_max);
            !r)
          return std::unexpected(r.error());
        c.profiles.push_back(std::move(p));
      }
    } else {
      return bad(path + ": " + key + ": unknown table (use [session] and [profiles.NAME])");
    }
  }
  return c;
}

const char* real_getenv(const char* n) { return std::getenv(n); }

std::optional<std::string> read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream o;
  o << in.rdbuf();
  return o.str();
}

// The config file that applies, or nullopt; one line if it cannot be read.
std::expected<std::optional<FileConfig>, Error> load_file(const char* (*env)(const char*)) {
  std::vector<std::string> paths;
  if (const char* p = env("PMON_CONFIG"); p != nullptr && *p != '\0') {
    auto text = read_whole(p);
    if (!text) return bad(std::string("PMON_CONFIG: cannot read ") + p);
    auto c = parse_file(*text, p);
    if (!c) return std::unexpected(c.error());
    return std::optional<FileConfig>(std::move(*c));
  }
  if (const char* x = env("XDG_CONFIG_HOME"); x != nullptr && *x == '/') paths.push_back(std::string(x) + "/pmon/config.toml");
  else if (const char* h = env("HOME"); h != nullptr && *h == '/') paths.push_back(std::string(h) + "/.config/pmon/config.toml");
  paths.push_back("/etc/pmon/config.toml");
  for (const std::string& p : paths) {
    auto text = read_whole(p);
    if (!text) continue;
    auto c = parse_file(*text, p);
    if (!c) return std::unexpected(c.error());
    return std::optional<FileConfig>(std::move(*c));
  }
  return std::optional<FileConfig>();
}

// Fills the unset fields of `f` from the profile it names.
std::expected<void, Error> apply_profile(Fields& f, const FileConfig* file) {
  if (f.profile.empty()) return {};
  auto fill = [&](std::string& field, std::string& from, const std::string& value) {
    if (field.empty() && !value.empty()) field = value, from = f.profile_from;
  };
  if (file != nullptr)
    for (const FileProfile& p : file->profiles)
      if (p.name == f.profile) {
        fill(f.memory_max, f.memory_max_from, p.memory_max);
        fill(f.memory_high, f.memory_high_from, p.memory_high);
        fill(f.pids_max, f.pids_max_from, p.pids_max);
        fill(f.cpu_max, f.cpu_max_from, p.cpu_max);
        return {};
      }
  for (const BuiltinProfile& b : builtin_profiles())
    if (f.profile == b.name) {
      fill(f.memory_max, f.memory_max_from, std::to_string(b.memory_max));
      fill(f.pids_max, f.pids_max_from, std::to_string(b.pids_max));
      std::ostringstream o;
      o << b.cpu_max;
      fill(f.cpu_max, f.cpu_max_from, o.str());
      return {};
    }
  std::string names;
  for (const BuiltinProfile& b : builtin_profiles()) names += std::string(names.empty() ? "" : ", ") + b.name;
  if (file != nullptr)
    for (const FileProfile& p : file->profiles) names += ", " + p.name;
  return bad(f.profile_from + ": unknown profile '" + f.profile + "' (profiles: " + names + ")");
}

// "--session-memory-max: ", "PMON_SESSION_PIDS_MAX: ", "FILE: memory_max: ".
std::string where(const std::string& from, const char* key) {
  if (from.starts_with("-") || from.starts_with("PMON_") || from.starts_with("session_")) return from + ": ";
  return from + ": " + key + ": ";
}

std::expected<Envelope, Error> build(Fields f, const FileConfig* file, bool asked) {
  if (auto r = apply_profile(f, file); !r) return std::unexpected(r.error());
  Envelope e;
  e.profile = f.profile;
  e.asked = asked;
  std::vector<std::string> froms;
  auto note_from = [&](const std::string& from) {
    if (!from.empty() && std::find(froms.begin(), froms.end(), from) == froms.end()) froms.push_back(from);
  };
  if (!f.memory_max.empty()) {
    auto v = parse_size(f.memory_max);
    if (!v) return bad(where(f.memory_max_from, "memory_max") + describe(v.error()));
    e.limits.memory_max = *v;
    note_from(f.memory_max_from);
  }
  if (!f.memory_high.empty()) {
    auto v = parse_size(f.memory_high);
    if (!v) return bad(where(f.memory_high_from, "memory_high") + describe(v.error()));
    e.limits.memory_high = *v;
    note_from(f.memory_high_from);
  } else if (e.limits.memory_max) {
    // Throttled well before it is killed (none for a memory.max too small
    // to have three quarters).
    if (*e.limits.memory_max >= 4) e.limits.memory_high = *e.limits.memory_max / 4 * 3;
  }
  if (e.limits.memory_max && e.limits.memory_high && *e.limits.memory_high >= *e.limits.memory_max)
    return bad(f.memory_high_from + ": memory_high must be below memory_max");
  if (!f.pids_max.empty()) {
    auto v = parse_pids(f.pids_max);
    if (!v) return bad(where(f.pids_max_from, "pids_max") + describe(v.error()));
    if (*v > 0) e.limits.pids_max = *v;
    note_from(f.pids_max_from);
  }
  if (!f.cpu_max.empty()) {
    auto v = parse_cores(f.cpu_max);
    if (!v) return bad(where(f.cpu_max_from, "cpu_max") + describe(v.error()));
    e.limits.cpu_max = *v;
    note_from(f.cpu_max_from);
  }
  note_from(f.profile_from);
  for (const std::string& from : froms) e.set_by += (e.set_by.empty() ? "" : " and ") + from;
  return e;
}

// The line for a refusal: keys, values and paths come from the user's file
// and environment, and may hold a newline or a terminal's control codes.
std::unexpected<Error> refusal(const std::string& line) { return bad(printable(line)); }
std::unexpected<Error> refusal(const Error& e) { return refusal(e.text); }

}  // namespace

const std::vector<BuiltinProfile>& builtin_profiles() {
  static const std::vector<BuiltinProfile> kProfiles{
      {"small", 2ULL << 30, 512, 1.0},
      {"standard", 8ULL << 30, 2048, 2.0},
      {"large", 32ULL << 30, 8192, 8.0},
  };
  return kProfiles;
}

std::expected<std::optional<Envelope>, Error> envelope_from_toml(const std::string& text,
                                                                       const std::string& path) {
  auto c = parse_file(text, path);
  if (!c) return refusal(c.error());
  if (!c->session.any()) return std::optional<Envelope>();
  auto e = build(c->session, &*c, false);
  if (!e) return refusal(e.error());
  return std::optional<Envelope>(std::move(*e));
}

std::expected<std::optional<Envelope>, Error> resolve_envelope(const EnvelopeAsk& flags,
                                                                     const char* (*env)(const char*),
                                                                     bool with_file) {
  if (env == nullptr) env = real_getenv;
  Fields f;
  const std::string& fp = flags.flag_prefix;
  auto take = [&](std::string& field, std::string& from, const std::string& flag_value, const char* flag,
                  const char* var) {
    if (!flag_value.empty()) {
      field = flag_value;
      from = fp + flag;
    } else if (const char* v = env(var); v != nullptr && *v != '\0') {
      field = v;
      from = var;
    }
  };
  take(f.profile, f.profile_from, flags.profile, "profile", "PMON_SESSION_PROFILE");
  take(f.memory_max, f.memory_max_from, flags.memory_max, "memory-max", "PMON_SESSION_MEMORY_MAX");
  take(f.memory_high, f.memory_high_from, flags.memory_high, "memory-high", "PMON_SESSION_MEMORY_HIGH");
  take(f.pids_max, f.pids_max_from, flags.pids_max, "pids-max", "PMON_SESSION_PIDS_MAX");
  take(f.cpu_max, f.cpu_max_from, flags.cpu_max, "cpu-max", "PMON_SESSION_CPU_MAX");
  std::expected<std::optional<FileConfig>, Error> file = std::optional<FileConfig>();
  if (with_file) file = load_file(env);
  if (!file) return refusal(file.error());
  const FileConfig* fc = *file ? &**file : nullptr;
  if (f.any()) {
    // "none" turns off what is weaker than it: the configured default, and
    // as a flag the environment's fields too. A field set as strongly beside
    // it contradicts it; one set more strongly makes the envelope alone.
    if (f.profile == "none") {
      const bool none_by_flag = !flags.profile.empty();
      struct Field {
        std::string* value;
        std::string* from;
        bool by_flag;
      };
      const Field fields[] = {{&f.memory_max, &f.memory_max_from, !flags.memory_max.empty()},
                              {&f.memory_high, &f.memory_high_from, !flags.memory_high.empty()},
                              {&f.pids_max, &f.pids_max_from, !flags.pids_max.empty()},
                              {&f.cpu_max, &f.cpu_max_from, !flags.cpu_max.empty()}};
      std::string beside;
      for (const Field& x : fields) {
        if (x.value->empty()) continue;
        if (none_by_flag && !x.by_flag) x.value->clear(), x.from->clear();
        else if (none_by_flag == x.by_flag && beside.empty()) beside = *x.from;
      }
      if (!beside.empty())
        return refusal(f.profile_from + " none asks for no envelope, but " + beside + " sets one; give one or the other");
      f.profile.clear();
      f.profile_from.clear();
      if (!f.any()) return std::optional<Envelope>();
    }
    auto e = build(f, fc, true);
    if (!e) return refusal(e.error());
    return std::optional<Envelope>(std::move(*e));
  }
  if (fc == nullptr || !fc->session.any()) return std::optional<Envelope>();
  auto e = build(fc->session, fc, false);
  if (!e) return refusal(e.error());
  return std::optional<Envelope>(std::move(*e));
}

}  // namespace pmon
