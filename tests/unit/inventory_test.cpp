// SPDX-License-Identifier: Apache-2.0
// Leaf names (pmon-<owner pid>-<owner start time>-<seq>), owner liveness by
// pid + start time, and the StartTransientUnit message pmon sends systemd
// (through the sd-bus table pmon dlopens).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confine/systemd.h"
#include "core/inventory.h"
#include "sys/proc.h"

namespace pmon {
namespace {

TEST(LeafName, Parses) {
  auto n = parse_leaf_name("pmon-1234-567890-3");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->owner_pid, 1234);
  EXPECT_EQ(n->owner_start, 567890u);
  EXPECT_EQ(n->seq, 3u);
}

TEST(LeafName, ParsesItsPidNamespace) {
  auto n = parse_leaf_name("pmon-1234-567890-4026531836-3");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->owner_pid, 1234);
  EXPECT_EQ(n->owner_start, 567890u);
  EXPECT_EQ(n->pid_namespace, 4026531836u);
  EXPECT_EQ(n->seq, 3u);
  EXPECT_FALSE(parse_leaf_name("pmon-1234-567890-3")->pid_namespace);  // an older pmon's
}

TEST(Owner, JudgedOnlyInItsOwnPidNamespace) {
  auto st = sys::read_stat(::getpid());
  auto ns = sys::self_pid_namespace();
  ASSERT_TRUE(st && ns);
  const pid_t me = ::getpid();
  EXPECT_EQ(judge_owner({me, st->start_time, *ns, 1}, *ns), Owner::alive);
  EXPECT_EQ(judge_owner({me, st->start_time + 1, *ns, 1}, *ns), Owner::gone);
  // Another namespace's pid means another process here: alive or not.
  EXPECT_EQ(judge_owner({me, st->start_time, *ns + 1, 1}, *ns), Owner::other_namespace);
  EXPECT_EQ(judge_owner({me, st->start_time + 1, *ns + 1, 1}, *ns), Owner::other_namespace);
  // An older pmon's name: alive when it is, never gone.
  EXPECT_EQ(judge_owner({me, st->start_time, std::nullopt, 1}, *ns), Owner::alive);
  EXPECT_EQ(judge_owner({me, st->start_time + 1, std::nullopt, 1}, *ns), Owner::unknown_namespace);
  // /proc not of our namespace: nothing is gone.
  EXPECT_EQ(judge_owner({me, st->start_time + 1, *ns, 1}, std::nullopt), Owner::unknown_namespace);
}

TEST(LeafName, RejectsOtherNames) {
  for (const char* s : {"pmon-test-deleg-12", "pmon-bench-1", "pmon-1-2", "pmon-1-2-3-4-5", "pmon-1-2-x", "pmon-1-2-x-4",
                        "pmon--2-3", "pmon-0-2-3", "pmon-1-2-", "xpmon-1-2-3", "pmon-1-2-3.scope",
                        "pmon-99999999-1-1", "pmon-1-+2-3", "supervisor", ""})
    EXPECT_FALSE(parse_leaf_name(s)) << s;
}

TEST(ScopeName, ParsesOnlyPmonsScopes) {
  pid_t pid = 0;
  uint64_t start = 0;
  ASSERT_TRUE(confine::parse_scope_name("pmon-1234-567890.scope", &pid, &start));
  EXPECT_EQ(pid, 1234);
  EXPECT_EQ(start, 567890u);
  for (const char* s : {"pmon-1234-567890-3", "pmon-1234.scope", "pmon-1234-567890-1.scope", "pmon-0-1.scope",
                        "pmon-99999999-1.scope", "pmon--1.scope", "pmon-1-.scope", "pmon-1-2.scope.d", "pmon-1-2.service",
                        "run-1-2.scope", "pmon-session-1-2.scope", "pmon-1-+2.scope", ""})
    EXPECT_FALSE(confine::parse_scope_name(s, &pid, &start)) << s;
  // The helper stops only such scopes.
  auto r = confine::stop_systemd_scope("ssh.service");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().text.find("not a scope pmon asks for"), std::string::npos) << r.error().text;
}

TEST(Owner, AliveOnlyWithTheSameStartTime) {
  auto st = sys::read_stat(::getpid());
  ASSERT_TRUE(st);
  EXPECT_TRUE(process_alive(::getpid(), st->start_time));
  EXPECT_FALSE(process_alive(::getpid(), st->start_time + 1));  // a recycled pid
  EXPECT_FALSE(process_alive(4194304, 1));
}

#ifdef PMON_HAVE_SYSTEMD
TEST(Systemd, StartTransientUnitMessage) {
  // A bus on one end of a socketpair: open enough to build messages, no
  // daemon needed, nothing is sent. Through the dlopen'ed table pmon uses.
  const auto& api = confine::sd_bus_api();
  ASSERT_TRUE(api) << api.error().text;
  const confine::SdBus& sd = *api;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  sd_bus* bus = nullptr;
  ASSERT_GE(sd.sd_bus_new(&bus), 0);
  ASSERT_GE(sd.sd_bus_set_fd(bus, sv[0], sv[0]), 0);
  ASSERT_GE(sd.sd_bus_start(bus), 0);
  sd_bus_message* m = nullptr;
  ASSERT_GE(sd.sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                              "org.freedesktop.systemd1.Manager", "StartTransientUnit"),
            0);
  confine::ScopeRequest req{"pmon-42-7.scope", 42, "pmon 42"};
  ASSERT_GE(confine::append_start_scope_args(m, req), 0);
  ASSERT_GE(sd.sd_bus_message_seal(m, 1, 0), 0);
  ASSERT_GE(sd.sd_bus_message_rewind(m, 1), 0);
  EXPECT_STREQ(sd.sd_bus_message_get_signature(m, 1), "ssa(sv)a(sa(sv))");

  const char *name = nullptr, *mode = nullptr;
  ASSERT_GE(sd.sd_bus_message_read(m, "ss", &name, &mode), 0);
  EXPECT_STREQ(name, "pmon-42-7.scope");
  EXPECT_STREQ(mode, "fail");
  ASSERT_GT(sd.sd_bus_message_enter_container(m, 'a', "(sv)"), 0);
  bool saw_pids = false, saw_delegate = false;
  while (sd.sd_bus_message_enter_container(m, 'r', "sv") > 0) {
    const char* key = nullptr;
    ASSERT_GE(sd.sd_bus_message_read(m, "s", &key), 0);
    std::string k = key;
    if (k == "PIDs") {
      ASSERT_GT(sd.sd_bus_message_enter_container(m, 'v', "au"), 0);
      ASSERT_GT(sd.sd_bus_message_enter_container(m, 'a', "u"), 0);
      uint32_t pid = 0;
      ASSERT_GT(sd.sd_bus_message_read(m, "u", &pid), 0);
      EXPECT_EQ(pid, 42u);
      EXPECT_EQ(sd.sd_bus_message_read(m, "u", &pid), 0);  // exactly one
      ASSERT_GE(sd.sd_bus_message_exit_container(m), 0);
      ASSERT_GE(sd.sd_bus_message_exit_container(m), 0);
      saw_pids = true;
    } else if (k == "Delegate") {
      int b = 0;
      ASSERT_GT(sd.sd_bus_message_read(m, "v", "b", &b), 0);
      EXPECT_TRUE(b);
      saw_delegate = true;
    } else {
      ASSERT_GE(sd.sd_bus_message_skip(m, "v"), 0);
    }
    ASSERT_GE(sd.sd_bus_message_exit_container(m), 0);
  }
  EXPECT_TRUE(saw_pids);
  EXPECT_TRUE(saw_delegate);
  sd.sd_bus_message_unref(m);
  sd.sd_bus_close_unref(bus);  // closes sv[0]
  ::close(sv[1]);
}

// Without libsystemd.so.0 pmon still runs; the reason ends up in the line
// that says why systemd could not be asked.
TEST(Systemd, MissingLibraryIsExplained) {
  auto t = confine::load_sd_bus("libpmon-no-such-library.so.0");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().text.rfind("libpmon-no-such-library.so.0 not found: ", 0), 0u) << t.error().text;
}
#endif

}  // namespace
}  // namespace pmon
