// SPDX-License-Identifier: Apache-2.0
// The one error type: a code and the facts, worded by each front end.
#include "confine/error.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "jobs/job_api.h"

namespace pmon {
namespace {

TEST(Error, TheStatusComesFromTheCode) {
  EXPECT_EQ(exit_status(Error::line("x", Errc::not_found)), 127);
  EXPECT_EQ(exit_status(Error::line("x", Errc::not_executable)), 126);
  EXPECT_EQ(exit_status(Error::line("x", Errc::confinement)), 125);
  EXPECT_EQ(exit_status(Error::system(EACCES, "open")), 125);
}

TEST(Error, ASystemFailureKeepsItsErrno) {
  const Error e = Error::system(ENOENT, "cannot open cgroup.procs");
  EXPECT_EQ(e.code, Errc::system);
  EXPECT_EQ(e.err, ENOENT);
  EXPECT_EQ(render(e), "cannot open cgroup.procs: No such file or directory");
}

TEST(Error, EachReaderGetsItsOwnWordForASetting) {
  const Error e = Error::line("set " + setting_token(Setting::cgroup_root) + " to a delegated cgroup, or use " +
                              setting_token(Setting::isolate) + " or " + setting_token(Setting::confine_cgroup));
  EXPECT_EQ(render(e), "set --cgroup-root to a delegated cgroup, or use --isolate or --confine cgroup");
  EXPECT_EQ(render(e, kPythonWords),
            "set cgroup_root= to a delegated cgroup, or use isolate=True or confine=\"cgroup\"");
  // A prefix keeps the facts.
  const Error p = prefixed("cgroup: ", e);
  EXPECT_EQ(render(p, kPythonWords).rfind("cgroup: set cgroup_root=", 0), 0u);
}

TEST(Error, TextWithoutTokensIsUnchanged) {
  const std::string odd = std::string("a path with \x01") + "9 and a trailing \x01";
  EXPECT_EQ(render_text(odd), odd);
  EXPECT_EQ(render_text(""), "");
}

TEST(Error, TheServiceNamesAJobInItsClientsWords) {
  Error e = Error::of(Errc::unknown_job, "t7");
  EXPECT_EQ(serve::words(e, "terminal"), "unknown terminal 't7'");
  EXPECT_EQ(serve::words(e, "job"), "unknown job 't7'");
  EXPECT_FALSE(serve::callers_fault(e));
  e = Error::of(Errc::did_not_listen, "t8");
  e.port = 8080;
  e.ms = 250;
  EXPECT_EQ(serve::words(e, "job"), "job 't8' did not listen on TCP port 8080 within 250 ms");
  const Error bad = Error::line("invalid params: 'x'", Errc::invalid_argument);
  EXPECT_TRUE(serve::callers_fault(bad));
  EXPECT_EQ(serve::words(bad, "terminal"), "invalid params: 'x'");
}

}  // namespace
}  // namespace pmon
