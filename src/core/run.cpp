// SPDX-License-Identifier: Apache-2.0
#include "core/run.h"

#include <limits>

#include "core/driver.h"

namespace pmon {

std::expected<RunResult, Error> run_call(Backend& backend, const RunOptions& opts) {
  Call call(backend, opts);
  if (auto s = call.start(); !s) return std::unexpected(s.error());
  Driver driver(call);
  return driver.finish(driver.wait_for_end(std::numeric_limits<int64_t>::max()));
}

}  // namespace pmon
