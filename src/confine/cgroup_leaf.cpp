// SPDX-License-Identifier: Apache-2.0
#include "confine/cgroup_leaf.h"

#include <fcntl.h>
#include <unistd.h>

#include "sys/result.h"

namespace pmon::confine {

std::optional<std::string> read_listing(CgroupLeaf& leaf) {
  if (!leaf.procs) leaf.procs = Fd(::openat(leaf.dir.get(), "cgroup.procs", O_RDONLY | O_CLOEXEC));
  if (!leaf.procs) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    // (pread at the text's length: offset 0 lists the leaf anew)
    ssize_t n = retry_eintr([&] { return ::pread(leaf.procs.get(), buf, sizeof buf, static_cast<off_t>(text.size())); });
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace pmon::confine
