// SPDX-License-Identifier: Apache-2.0
#include "sys/exe_note.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sys/fd.h"

namespace pmon::sys {

namespace {

bool read_at(int fd, void* buf, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool note_in(const char* p, size_t size, std::string_view owner, uint32_t type) {
  auto align4 = [](size_t v) { return (v + 3) & ~size_t{3}; };
  size_t off = 0;
  while (off + sizeof(Elf64_Nhdr) <= size) {
    Elf64_Nhdr h;
    std::memcpy(&h, p + off, sizeof h);
    const size_t name_at = off + sizeof h;
    const size_t desc_at = name_at + align4(h.n_namesz);
    if (h.n_namesz > size || h.n_descsz > size || desc_at > size) return false;
    if (h.n_type == type && h.n_namesz == owner.size() + 1 &&
        std::memcmp(p + name_at, owner.data(), owner.size()) == 0 && p[name_at + owner.size()] == '\0')
      return true;
    off = desc_at + align4(h.n_descsz);
  }
  return false;
}

}  // namespace

bool exe_has_note(pid_t pid, std::string_view owner, uint32_t type) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/exe", pid);
  Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  Elf64_Ehdr eh;
  if (!read_at(fd.get(), &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
    return false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_at(fd.get(), &ph, sizeof ph, eh.e_phoff + uint64_t{i} * sizeof ph)) return false;
    if (ph.p_type != PT_NOTE || ph.p_filesz > 4096) continue;  // (pmon's notes are a few bytes)
    char buf[4096];
    if (read_at(fd.get(), buf, static_cast<size_t>(ph.p_filesz), ph.p_offset) &&
        note_in(buf, static_cast<size_t>(ph.p_filesz), owner, type))
      return true;
  }
  return false;
}

}  // namespace pmon::sys
