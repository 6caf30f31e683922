// SPDX-License-Identifier: Apache-2.0
// What a process's executable is, read from the executable itself: an ELF
// note (PT_NOTE) of a given owner and type. pmon's executable carries one
// (cli/main.cpp), so a pmon is known as one wherever it was installed, a
// copy or a version replaced while it runs included: not by its path or
// its inode.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

namespace pmon::sys {

// The note pmon's executable carries: owner "pmon", this type.
inline constexpr std::string_view kPmonNoteOwner = "pmon";
inline constexpr uint32_t kPmonNoteType = 0x706d6f6e;

// Whether the executable `pid` runs (/proc/<pid>/exe, also when it was
// removed or replaced since) has a note of `owner` and `type`. False when
// it cannot be read (not ours to look at, gone) or is not ELF64.
bool exe_has_note(pid_t pid, std::string_view owner, uint32_t type) noexcept;

}  // namespace pmon::sys
