// SPDX-License-Identifier: Apache-2.0
// `pmon __nsinit`: PID 1 of a pidns call's namespace (confine/pidns.h),
// exec'd by spawn_in_pidns after the clone. A fresh image rather than the
// init loop run in the forked child: pmon may be multithreaded (the launcher
// thread, a library caller's threads), and only async-signal-safe code may
// run in the child of a multithreaded process; after exec the init is a
// single-threaded program of its own that may allocate, log and use libpmon.
//
// It blocks every signal and reads them from a signalfd, reaps every zombie
// of the namespace, forwards every signal pmon sends it to the whole
// namespace (kill(-1)), starts the command, reports the command's status to
// the status relay when it reaps it, and exits once the namespace holds
// nobody else. Stopping the leftovers is pmon's job (TERM via this init,
// then SIGKILL to it: the kernel kills the rest).
#pragma once

#include <string>
#include <vector>

namespace pmon {

// args: REPORT_FD STATUS_FD SYNC_FD PDEATHSIG NEW_SESSION PTY -- CMD [ARG...]
// PTY "1": our stdio is the call's pty, the command's controlling terminal.
int nsinit_main(const std::vector<std::string>& args);

}  // namespace pmon
