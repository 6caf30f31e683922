// SPDX-License-Identifier: Apache-2.0
// The files of pmon sandboxd: paths resolved beneath the sandbox root, and
// what the REST API does with them (stat, read, list, atomic write, remove).
// No HTTP here: the routes (rest_server.h) call these and word the errors.
//
// Every path is walked from an fd of the root, one component at a time,
// with O_NOFOLLOW: a symlink is read and its target walked the same way, so
// no component is ever looked up by a path string that could change between
// a check and its use. Errors are errno values:
//   EXDEV         the path leaves the root ("..", a symlink out, a NUL byte)
//   ENOENT        a component is missing
//   ENOTDIR       a component that must be a directory is not one
//   ENAMETOOLONG  the path, a component or the walk is too long
//   ELOOP         too many symlinks
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sys/fd.h"

namespace pmon::sandboxd {

// The sandbox root: an O_PATH fd of the directory and its canonical path
// (for absolute symlinks that point inside it).
class Root {
 public:
  // Opens `dir`, creating it and its parents (0755) when missing.
  static std::expected<Root, std::error_code> open(const std::string& dir);
  int fd() const noexcept { return fd_.get(); }
  const std::string& path() const noexcept { return path_; }

 private:
  Fd fd_;
  std::string path_;
};

// Where a path ends: the directory holding it (an O_PATH fd) and its name
// there. The root itself is {root, "."} with is_root set.
struct Location {
  Fd dir;
  std::string name;
  bool is_root = false;
};

enum class Follow { last, not_last };

// The longest path accepted, and the most directories a walk descends.
inline constexpr size_t kMaxPath = 4096;
inline constexpr size_t kMaxDepth = 256;

// Resolves `path` (relative to the root; a leading '/' or the root's own
// path in front are the same) beneath the root. Follow::last follows a
// symlink in the last component as well; make_parents creates missing
// directories (0755) on the way.
std::expected<Location, std::error_code> resolve(const Root& root, std::string_view path, Follow follow,
                                                 bool make_parents = false);

struct Entry {
  std::string name;
  bool directory = false;
  uint64_t size = 0;
  int64_t mtime = 0;  // seconds since the epoch
  mode_t mode = 0;    // permission bits
};

Entry entry_from_stat(std::string name, const struct stat& st);

// An open file or directory of the sandbox and what fstat said of it.
struct Opened {
  Fd fd;
  struct stat st {};
  bool directory() const noexcept { return S_ISDIR(st.st_mode); }
};

// Opens a path for reading (symlinks inside the root followed).
std::expected<Opened, std::error_code> open_path(const Root& root, std::string_view path);

// The entries of an open directory, sorted by name. A symlink is listed as
// what it points to; one that leaves the root, or points nowhere, is left
// out, as the reference does.
// `path` is the one `dir` was opened by (its symlinks are resolved from it).
std::expected<std::vector<Entry>, std::error_code> list_directory(const Root& root, std::string_view path,
                                                                  const Opened& dir);

// A write that replaces the file whole or not at all: the bytes go to a
// temporary file in the target's directory, which commit() fsyncs and
// renames over the target. Dropped before commit(), the temporary file is
// removed (a client that went away mid-upload leaves nothing).
class AtomicWriter {
 public:
  // Fails with EISDIR when the target is a directory.
  static std::expected<AtomicWriter, std::error_code> begin(const Root& root, std::string_view path, mode_t mode);
  AtomicWriter(AtomicWriter&&) noexcept = default;
  AtomicWriter& operator=(AtomicWriter&&) noexcept = delete;
  ~AtomicWriter();

  std::error_code write(const char* data, size_t n) noexcept;
  std::error_code commit() noexcept;

 private:
  AtomicWriter() = default;
  Fd dir_;
  Fd file_;
  std::string temp_;
  std::string name_;
  bool committed_ = false;
};

// Removes a file, a symlink (the link, not its target) or an empty
// directory; with `recursive` a whole tree. The root itself is never
// removed: recursive empties it, otherwise ENOTEMPTY. A symlink whose
// target leaves the root is refused (EXDEV), as the reference refuses it.
std::error_code remove_path(const Root& root, std::string_view path, bool recursive);

// "0644": the permission bits, in octal (as the reference prints them).
std::string mode_text(mode_t mode);

}  // namespace pmon::sandboxd
