// SPDX-License-Identifier: Apache-2.0
// A job's output as files and views: its spools and its record beside
// them (jobs/spool.h), and the views of its output (jobs/output_view.h) as
// its spool, else its buffer, holds it. Here, so that neither of those
// files needs the job: each stays below it.
#include <cstring>

#include "jobs/job.h"
#include "jobs/output_view.h"
#include "jobs/spool.h"

namespace pmon::serve {

void open_spools(Job& j, uint64_t limit, SpoolDir& dir) {
  if (limit == 0) return;
  auto out = Spool::open(dir, j.id + ".out", limit);
  if (!out) {
    j.spool_error = render(out.error());
    return;
  }
  j.spool = std::move(*out);
  if (!j.err_buffer) return;
  auto err = Spool::open(dir, j.id + ".err", limit);
  if (err) j.err_spool = std::move(*err);
  else j.spool_error = render(err.error());
}

void write_job_record(Job& j, JobRecords& records) {
  if (!j.call) return;
  Json rec = {{"id", j.id}, {"name", j.name}, {"command", j.command},
              {"cgroup", j.call->cgroup() ? Json(*j.call->cgroup()) : Json(nullptr)}};
  j.recorded = records.add(j.id, rec.dump());
}

const std::string& spool_path(const Job& j, bool err) {
  static const std::string none;
  const Spool* s = (err ? j.err_spool : j.spool).get();
  return s && s->made() ? s->path() : none;
}

void add_spool_paths(Json& o, const Job& j) {
  const std::string& out = spool_path(j);
  o["spoolPath"] = out.empty() ? Json(nullptr) : Json(out);
  if (const std::string& err = spool_path(j, true); !err.empty()) o["stderrSpoolPath"] = err;
  std::string error = j.spool_error;
  if (error.empty() && j.spool && j.spool->error()) error = *j.spool->error();
  if (error.empty() && j.err_spool && j.err_spool->error()) error = *j.err_spool->error();
  if (!error.empty()) o["spoolError"] = error;
}

std::expected<ViewResult, Error> view_of(const Job& j, const ViewParams& v, size_t max) {
  return render_view(view_source(j), v, max);
}

ByteSource view_source(const Job& j) {
  ByteSource src;
  // (a spool without its file holds nothing: nothing written yet, or the
  // file could not be made and the buffer has what was)
  if (j.spool && j.spool->made()) {
    const Spool& s = *j.spool;
    src.from = s.first_held();
    src.end = s.total();
    src.lines_before = s.lines_before_held();
    src.read = [&s](uint64_t off, char* buf, size_t n) { return s.read_at(off, buf, n); };
  } else {
    const OutputBuffer& b = j.buffer;
    src.from = b.first_kept();
    src.end = b.total();
    src.read = [&b](uint64_t off, char* buf, size_t n) {
      auto parts = b.bytes_from(off, n);
      std::memcpy(buf, parts[0].data(), parts[0].size());
      std::memcpy(buf + parts[0].size(), parts[1].data(), parts[1].size());
      return parts[0].size() + parts[1].size();
    };
  }
  return src;
}

}  // namespace pmon::serve
