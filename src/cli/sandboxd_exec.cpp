// SPDX-License-Identifier: Apache-2.0
// pmon sandboxd: pmon-sandboxd started in pmon's place. It is a program of
// its own (it links gRPC and protobuf, which pmon, started once per tool
// call, does not set up), found next to pmon or in ../libexec/pmon/.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace pmon::cli {

int sandboxd_main(const std::vector<std::string>& args) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) die(std::string("sandboxd: cannot read /proc/self/exe: ") + std::strerror(errno));
  std::string dir(buf, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  for (const std::string& p : {dir + "/pmon-sandboxd", dir + "/../libexec/pmon/pmon-sandboxd"}) {
    if (::access(p.c_str(), X_OK) != 0) continue;
    std::vector<char*> argv;
    std::string name = "pmon-sandboxd";
    argv.push_back(name.data());
    std::vector<std::string> copy(args);
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(p.c_str(), argv.data());
    die("sandboxd: cannot start " + p + ": " + std::strerror(errno));
  }
  die("sandboxd: pmon-sandboxd is neither in " + dir + " nor in " + dir +
      "/../libexec/pmon: the release archives and the .deb do not carry it yet; build pmon from source with "
      "gRPC's development files (scripts/deps.sh installs them)");
}

}  // namespace pmon::cli
