// SPDX-License-Identifier: Apache-2.0
// init_sigcatch LOG READY
// Logs each SIGTERM/SIGINT/SIGHUP/SIGUSR1 it receives to LOG, one name a
// line; creates READY once the handlers are in place; exits 0 after SIGTERM.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace {

int g_log = -1;
volatile sig_atomic_t g_term = 0;

void on_signal(int sig) {
  const char* name = sig == SIGTERM ? "TERM\n" : sig == SIGINT ? "INT\n" : sig == SIGHUP ? "HUP\n" : "USR1\n";
  (void)!::write(g_log, name, std::strlen(name));
  if (sig == SIGTERM) g_term = 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  g_log = ::open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (g_log < 0) return 2;
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) ::sigaction(s, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int r = ::open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (r < 0) return 2;
  ::close(r);
  while (!g_term) ::pause();
  return 0;
}
