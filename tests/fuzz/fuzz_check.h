// SPDX-License-Identifier: Apache-2.0
// What both fuzz targets check of what they are given and what they make.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "serve/protocol.h"

namespace pmon::serve::fuzz {

// A broken promise: abort, which the fuzzer reports as a crash with its input.
inline void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

// How deep a value nests (a scalar: 0); recursion, as the values are bounded.
inline size_t depth_of(const Json& j) {
  size_t d = 0;
  if (j.is_structured())
    for (const Json& v : j) d = std::max(d, depth_of(v));
  return j.is_structured() ? d + 1 : 0;
}

// parse_message_json is nlohmann's parser with a depth limit: where the
// line nests no deeper than the limit, the same value (or both refuse it);
// past it a value no deeper than the limit, and the line is JSON.
inline void check_message_json(std::string_view line) {
  MessageJson m = parse_message_json(line);
  const bool json = Json::accept(line);  // (no value built: no recursion)
  check(json == !m.json.is_discarded(), "parse_message_json and nlohmann disagree on what is JSON");
  if (m.json.is_discarded()) return;
  check(depth_of(m.json) <= kMaxDepth, "a value deeper than kMaxDepth kept");
  if (m.too_deep) return;
  check(m.json == Json::parse(line), "parse_message_json differs from nlohmann's parse");
  // Copied, dumped and read back: the same value.
  Json copy = m.json;
  check(Json::parse(copy.dump()) == m.json, "a dump does not read back as the same value");
}

// A reply: one line (its only '\n' at the end) of JSON, a JSON-RPC 2.0
// object naming `id`.
inline void check_reply(const std::string& line, const Json& id) {
  check(!line.empty() && line.back() == '\n' && line.find('\n') == line.size() - 1, "a reply is not one line");
  Json j = Json::parse(line, nullptr, false);
  check(j.is_object(), "a reply is not a JSON object");
  check(j.value("jsonrpc", "") == "2.0", "a reply without jsonrpc 2.0");
  check(j.contains("id") && j["id"] == id, "a reply without the request's id");
  check(j.contains("result") != j.contains("error"), "a reply with both or neither of result and error");
}

}  // namespace pmon::serve::fuzz
