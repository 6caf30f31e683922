// SPDX-License-Identifier: Apache-2.0
// JSON text at the speed of memcpy for the one thing that is big in pmon
// serve's messages: a job's output. The service writes an output string
// with append_json_string (no Json value, no copy of the text into one);
// a client reads replies with parse_json, which decodes long strings a
// run of plain bytes at a time. Everything else is nlohmann::json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pmon::serve {

// Appends `text` as a JSON string, quotes included: '"', '\\' and control
// characters escaped, every other byte as it is. `text` must be valid
// UTF-8 (an output buffer's read is); the result is what nlohmann's dump()
// makes of the same string.
void append_json_string(std::string& out, std::string_view text);
// How many bytes append_json_string adds for `text`.
size_t json_string_size(std::string_view text) noexcept;

// One JSON value (surrounding white space allowed), as Json::parse would
// give it; a discarded value when `text` is not JSON (nothing throws).
// Strings must be valid UTF-8, as JSON text must be.
nlohmann::json parse_json(std::string_view text);

// dump() as every line is written: invalid UTF-8 in a value never breaks it.
std::string dump_text(const nlohmann::json& j);

}  // namespace pmon::serve
