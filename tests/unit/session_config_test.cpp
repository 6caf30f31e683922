// SPDX-License-Identifier: Apache-2.0
// A session's envelope: read from the config file (envelope_from_toml),
// resolved from flags, environment and file (resolve_envelope), held against
// a call's limits (beyond_envelope); and the names of session cgroups
// (SessionKey).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "confine/error.h"
#include "confine/session.h"
#include "core/session_config.h"

namespace pmon {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;
constexpr uint64_t kMiB = 1ULL << 20;
const std::string kPath = "/etc/pmon/config.toml";  // only named, never read here

// The envelope a file gives, or the test fails with its error.
Envelope from_file(const std::string& text) {
  auto r = envelope_from_toml(text, kPath);
  EXPECT_TRUE(r) << text << "\n-> " << (r ? "" : r.error().text);
  if (!r || !*r) {
    ADD_FAILURE() << "no envelope from: " << text;
    return {};
  }
  return **r;
}

// The one line a file is refused with.
std::string refused(const std::string& text) {
  auto r = envelope_from_toml(text, kPath);
  EXPECT_FALSE(r) << "accepted: " << text;
  return r ? std::string() : r.error().text;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(EnvelopeFromToml, NothingSetIsNoEnvelope) {
  for (const char* text : {"", "# nothing\n", "[session]\n", "[profiles.ci]\nmemory_max = \"1G\"\n"}) {
    auto r = envelope_from_toml(text, kPath);
    ASSERT_TRUE(r) << text << ": " << r.error().text;
    EXPECT_FALSE(*r) << text;
  }
}

// A session's pids_max of 0 alone (-0 too) asks for no limit: an envelope
// set by the file that limits nothing, so that a call may ask for none.
TEST(EnvelopeFromToml, PidsMaxZeroAloneLimitsNothing) {
  for (const char* text : {"[session]\npids_max = 0\n", "[session]\npids_max = -0\n", "[session]\npids_max = \"0\"\n"}) {
    Envelope e = from_file(text);
    EXPECT_FALSE(e.limits.any()) << text;
    EXPECT_EQ(e.set_by, kPath) << text;
  }
}

TEST(EnvelopeFromToml, FieldsWithMemoryHighAtThreeQuarters) {
  Envelope e = from_file("[session]\nmemory_max = \"4G\"\npids_max = 512\ncpu_max = 1.5\n");
  EXPECT_EQ(e.limits.memory_max, 4 * kGiB);
  EXPECT_EQ(e.limits.memory_high, 3 * kGiB);
  EXPECT_EQ(e.limits.pids_max, 512u);
  EXPECT_EQ(e.limits.cpu_max, 1.5);
  EXPECT_EQ(e.profile, "");
  EXPECT_EQ(e.set_by, kPath);
  EXPECT_FALSE(e.asked);  // the file's is a default: skipped where it cannot be set
  // Bytes as a number; cores as a whole number.
  e = from_file("[session]\nmemory_max = 1073741824\ncpu_max = 2\n");
  EXPECT_EQ(e.limits.memory_max, kGiB);
  EXPECT_EQ(e.limits.memory_high, 768 * kMiB);
  EXPECT_EQ(e.limits.cpu_max, 2.0);
  EXPECT_FALSE(e.limits.pids_max);
  // memory.high alone: no memory.max made up for it.
  e = from_file("[session]\nmemory_high = \"1G\"\n");
  EXPECT_EQ(e.limits.memory_high, kGiB);
  EXPECT_FALSE(e.limits.memory_max);
}

TEST(EnvelopeFromToml, MemoryHighGivenIsKept) {
  Envelope e = from_file("[session]\nmemory_max = \"4G\"\nmemory_high = \"1G\"\n");
  EXPECT_EQ(e.limits.memory_max, 4 * kGiB);
  EXPECT_EQ(e.limits.memory_high, kGiB);
}

TEST(EnvelopeFromToml, MemoryHighAtOrAboveMemoryMaxIsRefused) {
  for (const char* high : {"4G", "5G", "4194305K"}) {
    const std::string err = refused(std::string("[session]\nmemory_max = \"4G\"\nmemory_high = \"") + high + "\"\n");
    EXPECT_EQ(err, kPath + ": memory_high must be below memory_max") << high;
  }
  // Against a profile's memory.max too.
  EXPECT_EQ(refused("[session]\nprofile = \"small\"\nmemory_high = \"2G\"\n"),
            kPath + ": memory_high must be below memory_max");
  // Just below is fine.
  Envelope e = from_file("[session]\nmemory_max = \"4G\"\nmemory_high = \"4194303K\"\n");
  EXPECT_EQ(e.limits.memory_high, 4 * kGiB - 1024);
}

TEST(EnvelopeFromToml, BuiltinProfiles) {
  struct Want {
    const char* name;
    uint64_t memory_max, pids_max;
    double cpu_max;
  };
  for (const Want& w : {Want{"small", 2 * kGiB, 512, 1.0}, Want{"standard", 8 * kGiB, 2048, 2.0},
                        Want{"large", 32 * kGiB, 8192, 8.0}}) {
    Envelope e = from_file(std::string("[session]\nprofile = \"") + w.name + "\"\n");
    EXPECT_EQ(e.profile, w.name);
    EXPECT_EQ(e.limits.memory_max, w.memory_max) << w.name;
    EXPECT_EQ(e.limits.memory_high, w.memory_max / 4 * 3) << w.name;
    EXPECT_EQ(e.limits.pids_max, w.pids_max) << w.name;
    EXPECT_EQ(e.limits.cpu_max, w.cpu_max) << w.name;
    EXPECT_EQ(e.set_by, kPath);
  }
  ASSERT_EQ(builtin_profiles().size(), 3u);
}

TEST(EnvelopeFromToml, FieldsBesideAProfileReplaceItsOwn) {
  Envelope e = from_file("[session]\nprofile = \"small\"\nmemory_max = \"1G\"\ncpu_max = 0.5\n");
  EXPECT_EQ(e.profile, "small");
  EXPECT_EQ(e.limits.memory_max, kGiB);
  EXPECT_EQ(e.limits.memory_high, 768 * kMiB);  // 3/4 of the field, not of the profile's
  EXPECT_EQ(e.limits.pids_max, 512u);           // the profile's
  EXPECT_EQ(e.limits.cpu_max, 0.5);
  e = from_file("[session]\nprofile = \"standard\"\nmemory_high = \"1G\"\n");
  EXPECT_EQ(e.limits.memory_max, 8 * kGiB);
  EXPECT_EQ(e.limits.memory_high, kGiB);
}

TEST(EnvelopeFromToml, FileProfiles) {
  const std::string profiles =
      "[profiles.ci]\nmemory_max = \"1G\"\npids_max = 100\n"
      "[profiles.big]\nmemory_max = \"64G\"\nmemory_high = \"60G\"\ncpu_max = 16\npids_max = 0\n";
  Envelope e = from_file(profiles + "[session]\nprofile = \"ci\"\n");
  EXPECT_EQ(e.profile, "ci");
  EXPECT_EQ(e.limits.memory_max, kGiB);
  EXPECT_EQ(e.limits.memory_high, 768 * kMiB);
  EXPECT_EQ(e.limits.pids_max, 100u);
  EXPECT_FALSE(e.limits.cpu_max);  // not in the profile: no default from elsewhere
  e = from_file(profiles + "[session]\nprofile = \"big\"\npids_max = 50\n");
  EXPECT_EQ(e.limits.memory_max, 64 * kGiB);
  EXPECT_EQ(e.limits.memory_high, 60 * kGiB);
  EXPECT_EQ(e.limits.cpu_max, 16.0);
  EXPECT_EQ(e.limits.pids_max, 50u);
  // The session table may come first.
  e = from_file("[session]\nprofile = \"ci\"\n" + profiles);
  EXPECT_EQ(e.limits.pids_max, 100u);
  // A file's profile of a built-in name is the file's, whole.
  e = from_file("[profiles.small]\nmemory_max = \"1G\"\n[session]\nprofile = \"small\"\n");
  EXPECT_EQ(e.limits.memory_max, kGiB);
  EXPECT_FALSE(e.limits.pids_max);
  EXPECT_FALSE(e.limits.cpu_max);
  // A profile's own memory_high at or above its memory_max.
  EXPECT_TRUE(has(refused("[profiles.x]\nmemory_max = \"1G\"\nmemory_high = \"1G\"\n[session]\nprofile = \"x\"\n"),
                  "memory_high must be below memory_max"));
}

TEST(EnvelopeFromToml, UnknownProfileNamesTheProfilesThereAre) {
  const std::string err = refused("[profiles.ci]\npids_max = 1\n[session]\nprofile = \"smal\"\n");
  EXPECT_EQ(err, kPath + ": unknown profile 'smal' (profiles: small, standard, large, ci)");
  // "none" belongs to the flags and the environment: the file leaves out [session] instead.
  EXPECT_TRUE(has(refused("[session]\nprofile = \"none\"\n"), "unknown profile 'none'"));
}

TEST(EnvelopeFromToml, UnknownKeysAndTablesNamed) {
  EXPECT_EQ(refused("[session]\nmemory_max = \"1G\"\nmemroy_high = \"1G\"\n"),
            kPath + ": session.memroy_high: unknown key (use profile, memory_max, memory_high, pids_max, cpu_max)");
  // A profile names no profile.
  EXPECT_EQ(refused("[profiles.ci]\nprofile = \"small\"\n"),
            kPath + ": profiles.ci.profile: unknown key (use memory_max, memory_high, pids_max, cpu_max)");
  EXPECT_EQ(refused("[sesion]\nmemory_max = \"1G\"\n"),
            kPath + ": sesion: unknown table (use [session] and [profiles.NAME])");
  EXPECT_TRUE(has(refused("memory_max = \"1G\"\n"), kPath + ": memory_max: unknown table"));
  EXPECT_TRUE(has(refused("[session.extra]\npids_max = 1\n"), kPath + ": session.extra: "));
  EXPECT_EQ(refused("session = 1\n"), kPath + ": session must be a table ([session])");
  EXPECT_EQ(refused("profiles = \"small\"\n"), kPath + ": profiles must be tables ([profiles.NAME])");
  EXPECT_EQ(refused("[profiles]\nci = 1\n"), kPath + ": profiles.ci must be a table");
}

TEST(EnvelopeFromToml, BadValuesNamedByFileAndKey) {
  auto one = [](const std::string& key, const std::string& value) {
    return refused("[session]\n" + key + " = " + value + "\n");
  };
  EXPECT_EQ(one("memory_max", "\"lots\""),
            kPath + ": memory_max: 'lots' is not a size (use bytes, or K, M or G for powers of 1024, e.g. 512M)");
  EXPECT_EQ(one("memory_max", "-1"), kPath + ": session.memory_max: must not be negative");
  EXPECT_EQ(one("memory_max", "0"), kPath + ": memory_max: '0' must be more than 0");
  EXPECT_TRUE(has(one("memory_max", "1.5"), kPath + ": memory_max: '1.5' is not a size"));
  EXPECT_EQ(one("memory_max", "true"), kPath + ": session.memory_max: must be a number or a string such as \"4G\"");
  EXPECT_TRUE(has(one("memory_max", "[1]"), kPath + ": session.memory_max: must be a number or a string"));
  EXPECT_TRUE(has(one("memory_high", "\"1X\""), kPath + ": memory_high: '1X' is not a size"));
  EXPECT_TRUE(has(one("pids_max", "\"many\""), kPath + ": pids_max: 'many' is not a whole number"));
  EXPECT_EQ(one("pids_max", "-3"), kPath + ": session.pids_max: must not be negative");
  EXPECT_TRUE(has(one("pids_max", "3000000000"), kPath + ": pids_max: '3000000000' is too large"));
  EXPECT_TRUE(has(one("cpu_max", "0"), kPath + ": cpu_max: '0' is out of range"));
  EXPECT_TRUE(has(one("cpu_max", "\"fast\""), kPath + ": cpu_max: 'fast' is not a number of cores"));
  EXPECT_TRUE(has(one("profile", "7"), kPath + ": unknown profile '7'"));
  EXPECT_TRUE(has(refused("[profiles.ci]\nmemory_max = \"1Q\"\n[session]\nprofile = \"ci\"\n"),
                  kPath + ": memory_max: '1Q' is not a size"));
  // pids_max 0: no pids limit.
  Envelope e = from_file("[session]\nmemory_max = \"1G\"\npids_max = 0\n");
  EXPECT_FALSE(e.limits.has_pids_max());
}

TEST(EnvelopeFromToml, RefusalIsOneLineWhateverTheFileHolds) {
  // A quoted key, a string value, a file name: the user's bytes, shown escaped.
  EXPECT_EQ(refused("[session]\n\"memory\\nmax\" = 1\n"),
            kPath + ": session.memory\\nmax: unknown key (use profile, memory_max, memory_high, pids_max, cpu_max)");
  EXPECT_EQ(refused("[session]\nmemory_max = \"1\\n\\u001b[2J\"\n"),
            kPath + ": memory_max: '1\\n\\x1B[2J' is not a size (use bytes, or K, M or G for powers of 1024, e.g. 512M)");
  EXPECT_EQ(refused("[session]\nprofile = \"a\\rb\"\n"),
            kPath + ": unknown profile 'a\\x0Db' (profiles: small, standard, large)");
  auto r = envelope_from_toml("[x]\n", "/etc/pmon\n/config.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().text, "/etc/pmon\\n/config.toml: x: unknown table (use [session] and [profiles.NAME])");
}

TEST(EnvelopeFromToml, BadTomlNamesFileAndLine) {
  for (const char* text : {"[session\nmemory_max = 1\n", "[session]\nmemory_max = \n", "[session]\n\nmemory_max 1\n",
                           "[session]\nmemory_max = 1\nmemory_max = 2\n", "[session]\n[session]\n",
                           "\xff\xfe[session]\n"}) {
    const std::string err = refused(text);
    EXPECT_TRUE(err.starts_with(kPath + ":")) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  EXPECT_TRUE(refused("[session]\n\nmemory_max 1\n").starts_with(kPath + ":3: ")) << refused("[session]\n\nmemory_max 1\n");
}

TEST(EnvelopeFromToml, NonAsciiWhereWhitespaceMayStand) {
  // Characters toml++'s whitespace table had no answer for (undefined
  // behaviour there): refused as not whitespace, in one line.
  for (const char* text : {"[session]\nmemory_max =\xef\xbb\x9f" "1\n", "[session]\nprofile = \"\"\"\\\n\xc2\xa7\"\"\"\n",
                           "[session]\xe3\x80\x81\n"}) {
    const std::string err = refused(text);
    EXPECT_TRUE(err.starts_with(kPath + ":")) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  // Whitespace it knows is still refused as TOML's whitespace is ASCII.
  EXPECT_TRUE(refused("[session]\nmemory_max =\xc2\xa0" "1\n").starts_with(kPath + ":2: "));
  // Non-ASCII in a comment is fine.
  EXPECT_EQ(from_file("# Größe \xc2\xa7 \xef\xbb\x9f\n[session]\npids_max = 5\n").limits.pids_max, 5u);
}

// resolve_envelope reads the environment through a function: this one
// answers from `fake_env`.
std::map<std::string, std::string> fake_env;
const char* fake_getenv(const char* name) {
  auto it = fake_env.find(name);
  return it == fake_env.end() ? nullptr : it->second.c_str();
}

class ResolveEnvelope : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pmon-session-config-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // No config file unless a test writes one: $XDG_CONFIG_HOME and $HOME
    // point into the empty directory. (/etc/pmon/config.toml is the host's.)
    fake_env = {{"XDG_CONFIG_HOME", dir_ + "/xdg"}, {"HOME", dir_ + "/home"}};
  }
  void TearDown() override {
    fake_env.clear();
    std::filesystem::remove_all(dir_);
  }
  // Writes `text` to the file at `rel` under the directory; its path.
  std::string write(const std::string& rel, const std::string& text) {
    const std::string path = dir_ + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }
  std::optional<Envelope> resolve(const EnvelopeAsk& flags = {}) {
    auto r = resolve_envelope(flags, fake_getenv);
    EXPECT_TRUE(r) << r.error().text;
    return r ? *r : std::nullopt;
  }
  std::string refused(const EnvelopeAsk& flags = {}) {
    auto r = resolve_envelope(flags, fake_getenv);
    EXPECT_FALSE(r);
    return r ? std::string() : r.error().text;
  }
  static bool host_has_config() { return ::access("/etc/pmon/config.toml", F_OK) == 0; }
  std::string dir_;
};

TEST_F(ResolveEnvelope, NothingSetIsNoEnvelope) {
  if (host_has_config()) GTEST_SKIP() << "this host has /etc/pmon/config.toml";
  EXPECT_FALSE(resolve());
  fake_env["PMON_SESSION_MEMORY_MAX"] = "";  // empty: not set
  EXPECT_FALSE(resolve());
}

TEST_F(ResolveEnvelope, FlagsAskForAnEnvelope) {
  EnvelopeAsk flags;
  flags.memory_max = "1G";
  auto e = resolve(flags);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->asked);
  EXPECT_EQ(e->limits.memory_max, kGiB);
  EXPECT_EQ(e->limits.memory_high, 768 * kMiB);
  EXPECT_EQ(e->set_by, "--session-memory-max");
  flags = {};
  flags.profile = "small";
  flags.pids_max = "64";
  e = resolve(flags);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->limits.pids_max, 64u);
  EXPECT_EQ(e->limits.memory_max, 2 * kGiB);
  EXPECT_EQ(e->set_by, "--session-profile and --session-pids-max");
  // The prefix of another front end's flags.
  flags = {};
  flags.cpu_max = "3";
  flags.flag_prefix = "--envelope-";
  e = resolve(flags);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->set_by, "--envelope-cpu-max");
}

TEST_F(ResolveEnvelope, EnvironmentAsksForAnEnvelope) {
  fake_env["PMON_SESSION_PROFILE"] = "large";
  fake_env["PMON_SESSION_MEMORY_HIGH"] = "16G";
  auto e = resolve();
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->asked);
  EXPECT_EQ(e->profile, "large");
  EXPECT_EQ(e->limits.memory_max, 32 * kGiB);
  EXPECT_EQ(e->limits.memory_high, 16 * kGiB);
  EXPECT_EQ(e->set_by, "PMON_SESSION_PROFILE and PMON_SESSION_MEMORY_HIGH");
  fake_env.erase("PMON_SESSION_PROFILE");
  fake_env.erase("PMON_SESSION_MEMORY_HIGH");
  fake_env["PMON_SESSION_MEMORY_MAX"] = "8G";
  fake_env["PMON_SESSION_PIDS_MAX"] = "100";
  fake_env["PMON_SESSION_CPU_MAX"] = "0.25";
  e = resolve();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->limits.memory_max, 8 * kGiB);
  EXPECT_EQ(e->limits.pids_max, 100u);
  EXPECT_EQ(e->limits.cpu_max, 0.25);
}

TEST_F(ResolveEnvelope, FlagsOverEnvironmentOverFile) {
  const std::string file = write("pmon.toml", "[session]\nmemory_max = \"16G\"\npids_max = 1000\n");
  fake_env["PMON_CONFIG"] = file;
  // The file alone: the default, not asked for.
  auto e = resolve();
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->asked);
  EXPECT_EQ(e->limits.memory_max, 16 * kGiB);
  EXPECT_EQ(e->set_by, file);
  // The environment replaces the file's default whole (its pids_max too).
  fake_env["PMON_SESSION_MEMORY_MAX"] = "4G";
  e = resolve();
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->asked);
  EXPECT_EQ(e->limits.memory_max, 4 * kGiB);
  EXPECT_FALSE(e->limits.pids_max);
  EXPECT_EQ(e->set_by, "PMON_SESSION_MEMORY_MAX");
  // A flag over the variable of the same field; the other fields stay.
  fake_env["PMON_SESSION_CPU_MAX"] = "2";
  EnvelopeAsk flags;
  flags.memory_max = "2G";
  e = resolve(flags);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->limits.memory_max, 2 * kGiB);
  EXPECT_EQ(e->limits.memory_high, 1536 * kMiB);
  EXPECT_EQ(e->limits.cpu_max, 2.0);
  EXPECT_EQ(e->set_by, "--session-memory-max and PMON_SESSION_CPU_MAX");
  // A profile flag over a profile variable.
  fake_env["PMON_SESSION_PROFILE"] = "large";
  flags = {};
  flags.profile = "small";
  e = resolve(flags);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->profile, "small");
  EXPECT_EQ(e->limits.memory_max, 4 * kGiB);  // the variable's field over the profile's
  EXPECT_EQ(e->limits.pids_max, 512u);
}

TEST_F(ResolveEnvelope, FlagsAndEnvironmentUseTheFilesProfiles) {
  fake_env["PMON_CONFIG"] = write("c.toml", "[profiles.ci]\nmemory_max = \"3G\"\npids_max = 77\n");
  EnvelopeAsk flags;
  flags.profile = "ci";
  auto e = resolve(flags);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->asked);
  EXPECT_EQ(e->profile, "ci");
  EXPECT_EQ(e->limits.memory_max, 3 * kGiB);
  EXPECT_EQ(e->limits.pids_max, 77u);
  EXPECT_EQ(e->set_by, "--session-profile");
  fake_env["PMON_SESSION_PROFILE"] = "nope";
  EXPECT_EQ(refused(), "PMON_SESSION_PROFILE: unknown profile 'nope' (profiles: small, standard, large, ci)");
}

TEST_F(ResolveEnvelope, ProfileNoneTurnsTheDefaultOff) {
  fake_env["PMON_CONFIG"] = write("c.toml", "[session]\nprofile = \"small\"\n");
  ASSERT_TRUE(resolve());
  EnvelopeAsk flags;
  flags.profile = "none";
  EXPECT_FALSE(resolve(flags));
  fake_env["PMON_SESSION_PROFILE"] = "none";
  EXPECT_FALSE(resolve());
}

TEST_F(ResolveEnvelope, ProfileNoneBesideFields) {
  // The flag turns off the environment's envelope too.
  fake_env["PMON_SESSION_MEMORY_MAX"] = "8G";
  fake_env["PMON_SESSION_PIDS_MAX"] = "100";
  EnvelopeAsk flags;
  flags.profile = "none";
  EXPECT_FALSE(resolve(flags));
  // Fields of the flags beside it: which one is meant is not known.
  flags.cpu_max = "1";
  EXPECT_EQ(refused(flags),
            "--session-profile none asks for no envelope, but --session-cpu-max sets one; give one or the other");
  // The variable beside the environment's fields: the same.
  fake_env["PMON_SESSION_PROFILE"] = "none";
  EXPECT_EQ(refused(),
            "PMON_SESSION_PROFILE none asks for no envelope, but PMON_SESSION_MEMORY_MAX sets one; give one or the "
            "other");
  // The variable under a flag's field: the flags' envelope alone.
  fake_env.erase("PMON_SESSION_MEMORY_MAX");
  fake_env.erase("PMON_SESSION_PIDS_MAX");
  flags = {};
  flags.memory_max = "1G";
  auto e = resolve(flags);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->profile, "");
  EXPECT_EQ(e->limits.memory_max, kGiB);
  EXPECT_EQ(e->set_by, "--session-memory-max");
}

TEST_F(ResolveEnvelope, ConfigFileWhereItIsLooked) {
  // $XDG_CONFIG_HOME/pmon, else ~/.config/pmon; $PMON_CONFIG over both.
  const std::string home = write("home/.config/pmon/config.toml", "[session]\npids_max = 1\n");
  if (!host_has_config()) {
    EXPECT_FALSE(resolve());  // $XDG_CONFIG_HOME is set: ~/.config is not looked in
  }
  fake_env.erase("XDG_CONFIG_HOME");
  auto e = resolve();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->set_by, home);
  fake_env["XDG_CONFIG_HOME"] = dir_ + "/xdg";
  const std::string xdg = write("xdg/pmon/config.toml", "[session]\npids_max = 2\n");
  e = resolve();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->set_by, xdg);
  EXPECT_EQ(e->limits.pids_max, 2u);
  fake_env["XDG_CONFIG_HOME"] = "relative/dir";  // not a path to go by
  e = resolve();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->set_by, home);
  fake_env["PMON_CONFIG"] = "";  // empty: not set
  e = resolve();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->set_by, home);
  const std::string named = write("named.toml", "[session]\npids_max = 3\n");
  fake_env["PMON_CONFIG"] = named;
  e = resolve();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->set_by, named);
  EXPECT_EQ(e->limits.pids_max, 3u);
}

TEST_F(ResolveEnvelope, BadConfigFileRefusedEvenBesideFlags) {
  fake_env["PMON_CONFIG"] = dir_ + "/missing.toml";
  EXPECT_EQ(refused(), "PMON_CONFIG: cannot read " + dir_ + "/missing.toml");
  const std::string bad = write("bad.toml", "[session]\nmemory_max = \"1G\"\nswap_max = \"1G\"\n");
  fake_env["PMON_CONFIG"] = bad;
  EnvelopeAsk flags;
  flags.memory_max = "1G";
  EXPECT_TRUE(refused(flags).starts_with(bad + ": session.swap_max: unknown key")) << refused(flags);
  // The one in the user's config directory, too.
  fake_env.erase("PMON_CONFIG");
  const std::string xdg = write("xdg/pmon/config.toml", "[session\n");
  EXPECT_TRUE(refused().starts_with(xdg + ":1: ")) << refused();
}

TEST_F(ResolveEnvelope, BadValuesNameTheFlagOrVariable) {
  EnvelopeAsk flags;
  flags.memory_max = "1X";
  EXPECT_TRUE(refused(flags).starts_with("--session-memory-max: '1X' is not a size")) << refused(flags);
  flags = {};
  fake_env["PMON_SESSION_PIDS_MAX"] = "-1";
  EXPECT_TRUE(refused(flags).starts_with("PMON_SESSION_PIDS_MAX: '-1' is not a whole number"));
  fake_env.erase("PMON_SESSION_PIDS_MAX");
  flags.cpu_max = "0";
  EXPECT_TRUE(refused(flags).starts_with("--session-cpu-max: '0' is out of range"));
  flags = {};
  flags.memory_max = "1G";
  fake_env["PMON_SESSION_MEMORY_HIGH"] = "1G";
  EXPECT_EQ(refused(flags), "PMON_SESSION_MEMORY_HIGH: memory_high must be below memory_max");
  flags.profile = "tiny";
  EXPECT_EQ(refused(flags), "--session-profile: unknown profile 'tiny' (profiles: small, standard, large)");
  // One line, whatever the variable holds.
  fake_env["PMON_SESSION_CPU_MAX"] = "1\n2";
  EXPECT_TRUE(refused().starts_with("PMON_SESSION_CPU_MAX: '1\\n2' is not a number of cores")) << refused();
}

// An envelope as the session holds it.
Envelope envelope(std::optional<uint64_t> mmax, std::optional<uint64_t> pids, std::optional<double> cpu,
                  const std::string& set_by = "--session-profile") {
  Envelope e;
  e.limits.memory_max = mmax;
  if (mmax) e.limits.memory_high = *mmax / 4 * 3;
  e.limits.pids_max = pids;
  e.limits.cpu_max = cpu;
  e.set_by = set_by;
  return e;
}

TEST(BeyondEnvelope, LessOrTheSameIsAllowed) {
  const Envelope e = envelope(kGiB, 100, 2.0);
  EXPECT_EQ(beyond_envelope({}, e), "");
  Limits l;
  l.memory_max = kGiB;
  l.memory_high = 900 * kMiB;  // above the envelope's memory.high, within its memory.max
  l.pids_max = 100;
  l.cpu_max = 2.0;
  EXPECT_EQ(beyond_envelope(l, e), "");
  l.memory_max = 1;
  l.pids_max = 1;
  l.cpu_max = 0.01;
  EXPECT_EQ(beyond_envelope(l, e), "");
  // Where the envelope sets nothing, anything goes.
  Limits big;
  big.memory_max = 1ULL << 50;
  big.pids_max = 0;
  big.cpu_max = 1000;
  EXPECT_EQ(beyond_envelope(big, envelope(std::nullopt, std::nullopt, std::nullopt)), "");
  // An envelope's pids_max 0 is none.
  EXPECT_EQ(beyond_envelope(big, envelope(1ULL << 50, 0, 1000)), "");
}

TEST(BeyondEnvelope, EachFieldNamedWithTheEnvelopeAndWhereItWasSet) {
  const Envelope e = envelope(kGiB, 100, 2.0, "PMON_SESSION_PROFILE");
  const std::string tail =
      "; the envelope is memory.max 1 GiB, memory.high 768 MiB, pids.max 100, cpu.max 2 CPUs, set by "
      "PMON_SESSION_PROFILE; ask for less, or have the user raise the envelope there";
  Limits l;
  l.memory_max = 2 * kGiB;
  EXPECT_EQ(render_text(beyond_envelope(l, e)),
            "--memory-max 2 GiB is more than the session's envelope allows (memory.max 1 GiB)" + tail);
  EXPECT_TRUE(render_text(beyond_envelope(l, e), kPythonWords).starts_with("memory_max= 2 GiB is more than"));
  l = {};
  l.memory_high = kGiB + 1;
  EXPECT_EQ(render_text(beyond_envelope(l, e)),
            "--memory-high 1073741825 bytes is more than the session's envelope allows (memory.max 1 GiB)" + tail);
  l = {};
  l.pids_max = 101;
  EXPECT_EQ(render_text(beyond_envelope(l, e)),
            "--pids-max 101 is more than the session's envelope allows (pids.max 100)" + tail);
  l.pids_max = 0;  // no limit at all: more than any envelope's
  EXPECT_EQ(render_text(beyond_envelope(l, e)),
            "--pids-max 0 (no limit) is more than the session's envelope allows (pids.max 100)" + tail);
  l = {};
  l.cpu_max = 2.5;
  EXPECT_EQ(render_text(beyond_envelope(l, e)),
            "--cpu-max 2.5 CPUs is more than the session's envelope allows (cpu.max 2 CPUs)" + tail);
  // One line; where it was set, or "the session" when that is not known.
  Envelope unknown = envelope(std::nullopt, 10, 1.0, "");
  l = {};
  l.cpu_max = 1.5;
  const std::string line = beyond_envelope(l, unknown);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_TRUE(has(line, "; the envelope is pids.max 10, cpu.max 1 CPU, set by the session;")) << line;
}

TEST(DescribeEnvelope, InWords) {
  EXPECT_EQ(describe(Envelope{}), "no limits");
  EXPECT_EQ(describe(envelope(4 * kGiB, 512, 1.0)), "memory.max 4 GiB, memory.high 3 GiB, pids.max 512, cpu.max 1 CPU");
  EXPECT_EQ(describe(envelope(1536 * kMiB, std::nullopt, 0.5)), "memory.max 1536 MiB, memory.high 1152 MiB, cpu.max 0.5 CPUs");
  EXPECT_EQ(describe(envelope(1000, 0, std::nullopt)), "memory.max 1000 bytes, memory.high 750 bytes");
}

TEST(SessionKey, NamedRoundTrip) {
  for (const char* name : {"build-7", "a", "A.b_c-9", "..x", "-"}) {
    auto k = SessionKey::named_(name);
    ASSERT_TRUE(k) << name << ": " << k.error().text;
    EXPECT_EQ(k->kind, SessionKey::Kind::named);
    EXPECT_EQ(k->dir_name(), std::string("pmon-session-n-") + name);
    EXPECT_EQ(k->describe(), std::string("name ") + name);
    auto back = SessionKey::parse(k->dir_name());
    ASSERT_TRUE(back) << k->dir_name();
    EXPECT_EQ(back->kind, SessionKey::Kind::named);
    EXPECT_EQ(back->name, name);
  }
  const std::string longest(64, 'x');
  ASSERT_TRUE(SessionKey::named_(longest));
  EXPECT_EQ(SessionKey::parse("pmon-session-n-" + longest)->name, longest);
}

TEST(SessionKey, BadNamesRefused) {
  for (const char* name : {"", ".", "..", "a/b", "a b", "a\nb", "é", "x*", "$HOME", "a\tb"}) {
    auto k = SessionKey::named_(name);
    ASSERT_FALSE(k) << name;
    EXPECT_TRUE(has(k.error().text, "is not a session name (use letters, digits, '.', '_' and '-', at most 64)"))
        << k.error().text;
    EXPECT_FALSE(SessionKey::parse(std::string("pmon-session-n-") + name)) << name;
  }
  EXPECT_FALSE(SessionKey::named_(std::string(65, 'x')));
  EXPECT_FALSE(SessionKey::parse("pmon-session-n-" + std::string(65, 'x')));
  // A long bad name is cut in the message.
  EXPECT_LT(SessionKey::named_(std::string(500, '/')).error().text.size(), 200u);
}

TEST(SessionKey, ProcessAndHarnessRoundTrip) {
  SessionKey k;
  k.kind = SessionKey::Kind::harness;
  k.pid = 1234;
  k.start = 5678;
  k.pid_ns = 4026531836;
  EXPECT_EQ(k.dir_name(), "pmon-session-h1234-5678-4026531836");
  EXPECT_EQ(k.describe(), "harness 1234");
  auto back = SessionKey::parse(k.dir_name());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, SessionKey::Kind::harness);
  EXPECT_EQ(back->pid, 1234);
  EXPECT_EQ(back->start, 5678u);
  EXPECT_EQ(back->pid_ns, 4026531836u);
  k.kind = SessionKey::Kind::process;
  k.pid = 4194304;  // the largest pid there is
  k.start = UINT64_MAX;
  k.pid_ns = 0;
  EXPECT_EQ(k.dir_name(), "pmon-session-p4194304-18446744073709551615-0");
  EXPECT_EQ(k.describe(), "pmon 4194304");
  back = SessionKey::parse(k.dir_name());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, SessionKey::Kind::process);
  EXPECT_EQ(back->pid, 4194304);
  EXPECT_EQ(back->start, UINT64_MAX);
  EXPECT_EQ(back->pid_ns, 0u);
}

TEST(SessionKey, ParseRefuses) {
  for (const char* name :
       {"", "pmon-session-", "pmon-session-p", "pmon-session-p0-1-2", "pmon-session-p4194305-1-2",
        "pmon-session-p1-2", "pmon-session-p1-2-3-4", "pmon-session-p1-2-3x", "pmon-session-p1-2-3 ",
        "pmon-session-p1--3", "pmon-session-p-1-2-3", "pmon-session-p+1-2-3", "pmon-session-p1-2-",
        "pmon-session-x1-2-3", "pmon-session-n1-2-3", "pmon-session-n-", "pmon-session-n-a/b",
        "pmon-session-p1-18446744073709551616-3", "pmon-session-p1-2-000000000000000000001",
        "pmon-1234-5678-4026531836-0", "session-p1-2-3", "xpmon-session-p1-2-3", "pmon-session-P1-2-3"}) {
    EXPECT_FALSE(SessionKey::parse(name)) << name;
  }
}

TEST(SessionKey, OfThisProcessAndOfAHarness) {
  const SessionKey me = SessionKey::of_this_process();
  EXPECT_EQ(me.kind, SessionKey::Kind::process);
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_GT(me.start, 0u);
  EXPECT_GT(me.pid_ns, 0u);
  auto back = SessionKey::parse(me.dir_name());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pid, me.pid);
  EXPECT_EQ(back->start, me.start);
  EXPECT_EQ(back->pid_ns, me.pid_ns);
  auto parent = SessionKey::of_harness(::getppid());
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent->kind, SessionKey::Kind::harness);
  EXPECT_EQ(parent->pid, ::getppid());
  EXPECT_EQ(parent->pid_ns, me.pid_ns);
  EXPECT_TRUE(parent->dir_name().starts_with("pmon-session-h" + std::to_string(::getppid()) + "-"));
  // The same harness, the same session: its name is stable.
  EXPECT_EQ(SessionKey::of_harness(::getppid())->dir_name(), parent->dir_name());
  EXPECT_FALSE(SessionKey::of_harness(0x7fffffff));
}


}  // namespace
}  // namespace pmon
