// SPDX-License-Identifier: Apache-2.0
// A job's whole output on disk: every byte its stream (and its stderr when
// kept apart) ever gave, appended to a file of the service's spool
// directory, beside the bounded buffer in memory. A spool holds at most
// its limit in its current file: a full file becomes NAME.1 (the older .1
// removed) and a new one begins, so at most twice the limit is on disk.
// Files are removed with the job (those of a job its client dropped, a
// closed session's, when the service has time), and when the service ends
// (it stops every job, kept ones too).
// Writes are plain write(2)s to a regular file; nothing is held in memory.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "confine/error.h"
#include "sys/fd.h"

namespace pmon::serve {

// How many '\n' bytes `bytes` holds. The spool counts all of every job's
// output as it is written: sixteen bytes are compared at once, several
// times as fast as std::count.
size_t count_newlines(std::string_view bytes) noexcept;

// The service's own directory of spools:
// <runtime dir>/spool/<pid>.<start time>.<random> (the runtime dir is the
// default socket's: $XDG_RUNTIME_DIR/pmon, /run/pmon for root,
// /tmp/pmon-UID), each level 0700, ours, no symlink. Made when the first
// spool is; removed (when empty) with this object. Beside each job's
// output it holds the running jobs' records (JobRecords), so that what a
// service that died leaves can be named.
class SpoolDir {
 public:
  SpoolDir() = default;
  ~SpoolDir();
  SpoolDir(const SpoolDir&) = delete;
  SpoolDir& operator=(const SpoolDir&) = delete;
  // The directory, made now if it is not yet; why not otherwise.
  std::expected<int, Error> ensure();
  const std::string& path() const { return path_; }

  // What services that died without removing their directory left (a
  // SIGKILL that took their crash guard too): each job of theirs whose
  // leaf is still there is stopped (its leaf killed, verified empty and
  // removed), and said in one line to `say` (its control characters
  // escaped, core/printable.h); then their directories are
  // removed. Only leaves named after the dead service (its pid and start
  // time) are touched. A service runs this as it starts, `pmon gc` too.
  // A runtime directory that is not ours (a symlink, another uid's, open
  // to others' writes) is not looked into, and said.
  static void sweep_dead(const std::function<void(const std::string&)>& say);

  // A file of this directory to be removed when the service has time
  // (tidy), or with the directory at the latest.
  void remove_later(std::string name) { doomed_.push_back(std::move(name)); }
  // Removes up to `max` of those; says whether any is still left.
  bool tidy(size_t max);

 private:
  static void sweep(int spool_parent, const std::function<void(const std::string&)>& say);

  Fd fd_;
  std::string path_;
  std::string parent_;  // <runtime dir>/spool
  std::string name_;
  std::vector<std::string> doomed_;  // remove_later()
};

class Spool {
 public:
  // The spool of file `name` in `dir` (the directory made now if it is not
  // yet), or an error. The file (0600, O_EXCL, O_NOFOLLOW) is made with the first
  // bytes written: a job that writes nothing has none.
  static std::expected<std::unique_ptr<Spool>, Error> open(SpoolDir& dir, const std::string& name,
                                                                  uint64_t limit);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Appends what the job wrote. A write that fails (a full disk) ends the
  // spool there: later bytes are not written, and `error` says why.
  void write(std::string_view bytes);
  // Up to `n` bytes from offset `off` (first_held() <= off < total()) as
  // written; fewer at the end of a file (read on from off + the count).
  size_t read_at(uint64_t off, char* buf, size_t n) const;
  // Up to `n` bytes from offset `off` into the pipe `pipe` by splice(2):
  // the pipe takes the file's pages, nothing is copied (the files are only
  // ever appended to and renamed, never written over). As write(2) to a
  // non-blocking pipe: the count, or -1 and errno (EAGAIN: it is full);
  // 0 when `off` is not held here.
  ssize_t splice_to(int pipe, uint64_t off, size_t n) const;

  uint64_t total() const { return total_; }            // bytes written since the job began
  uint64_t first_held() const { return old_ ? old_start_ : cur_start_; }
  uint64_t lines_before_held() const { return lines_dropped_; }  // newlines rotated away
  // Its files are removed when the service has time, not with this
  // object (a job whose client dropped it: nobody waits for its removal).
  void remove_later() { later_ = true; }
  uint64_t limit() const { return limit_; }
  uint64_t on_disk() const { return total_ - first_held(); }  // in its files now
  const std::string& path() const { return path_; }
  bool made() const { return cur_.valid() || old_.valid(); }  // it has a file
  const std::optional<std::string>& error() const { return error_; }

 private:
  Spool() = default;
  void rotate();
  void fail(const std::string& what);

  SpoolDir* owner_ = nullptr;  // outlives every spool
  int dir_ = -1;               // owner_'s
  bool later_ = false;
  bool begun_ = false;  // the first bytes came: the file was made (or tried)
  std::string name_;
  std::string path_;
  uint64_t limit_ = 0;
  Fd cur_;  // NAME, read and appended
  Fd old_;  // NAME.1, once rotated
  uint64_t cur_start_ = 0, old_start_ = 0, total_ = 0;
  uint64_t lines_cur_ = 0, lines_old_ = 0, lines_dropped_ = 0;
  std::optional<std::string> error_;
};

// The running jobs' records, one line each in the spool directory's
// jobs.log (0600, O_NOFOLLOW): a JSON object with the job's "id", "name",
// "command" and "cgroup" leaf, appended as the job starts, and {"ended":
// ID} appended as it ends. A file per job would cost a file's making and
// removal for every job. The log is written anew, the running jobs' lines
// only, once it has grown to four times their size (and 64 KiB); it is
// removed with this object. A service that finds a dead one's log reads it
// line by line, the last line possibly cut short by the death.
class JobRecords {
 public:
  explicit JobRecords(SpoolDir& dir) : dir_(dir) {}
  ~JobRecords();
  JobRecords(const JobRecords&) = delete;
  JobRecords& operator=(const JobRecords&) = delete;

  // Job `id`'s record (`line`: one JSON object, no newline). False when it
  // could not be written (the job runs without one: a dead service's leaves
  // are still pmon gc's).
  bool add(const std::string& id, std::string line);
  // The line that says job `id` ended waits for flush(), which the service
  // calls once a round before it sends its answers: the jobs a round ends
  // (a thousand at a session's close) are written in one go.
  void remove(const std::string& id);
  void flush();

  // The records a log holds of jobs that had not ended, in the order they
  // were added (a line that is no JSON object is passed over).
  static std::vector<nlohmann::json> running_in(std::string_view log);

 private:
  bool append(std::string_view text);
  bool rewrite();

  SpoolDir& dir_;
  Fd fd_;
  std::map<std::string, std::string> live_;  // id -> line
  std::string ended_;                         // "ended" lines not written yet
  uint64_t written_ = 0, live_bytes_ = 0;
};

}  // namespace pmon::serve
