// SPDX-License-Identifier: Apache-2.0
// One call from start to end, blocking: the machine of core/call.h driven
// by core/driver.h until it is over.
#pragma once

#include <expected>

#include "core/call.h"
#include "core/result.h"

namespace pmon {

std::expected<RunResult, Error> run_call(Backend& backend, const RunOptions& opts);

}  // namespace pmon
