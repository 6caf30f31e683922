// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the JSON a harness hands pmon hook-rewrite on stdin. Any
// bytes must be told apart without a crash (deep nesting included); what
// nlohmann does not accept as a JSON object is unreadable, and the line the
// call is blocked with is one non-empty line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "serve/harness.h"

using namespace pmon;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const HookHarness h = hook_harness(input);
  // (accept builds no value: no recursion on deep input)
  if (!serve::Json::accept(input)) serve::fuzz::check(h == HookHarness::unreadable, "non-JSON read as a hook's input");
  const std::string line = hook_refusal(h);
  serve::fuzz::check(!line.empty() && line.find('\n') == std::string::npos, "a refusal that is not one line");
  return 0;
}
