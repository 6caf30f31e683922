// SPDX-License-Identifier: Apache-2.0
// Fuzz target: one line of pmon serve's JSON-RPC, as the service reads it.
// parse_request, then the reply lines that the result drives: the error
// for a bad request; for a good one, a result naming its id and carrying
// the strings of its params, and output_result_line, which must match
// result_line(output_result(...)) to the byte. Each reply is one line of
// JSON that names the request's id. The message's Json is checked against
// nlohmann's own parser: the same value, no deeper than kMaxDepth.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "fuzz_check.h"
#include "serve/protocol.h"

using namespace pmon::serve;

namespace {

// Every string of a request's params, in one array: what a reply may echo
// (terminal/list echoes command and args, errors name the terminal id).
Json strings_of(const Request& r) {
  Json s = Json::array();
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, CreateParams>) {
          s.push_back(p.command);
          for (const std::string& a : p.args) s.push_back(a);
          for (const EnvVar& e : p.env) s.push_back(e.name + "=" + e.value);
          if (p.cwd) s.push_back(*p.cwd);
          if (p.name) s.push_back(*p.name);
          if (p.session_id) s.push_back(*p.session_id);
          for (const std::string& a : p.args) fuzz::check(a.find('\0') == std::string::npos, "a NUL byte in args");
          fuzz::check(p.command.find('\0') == std::string::npos, "a NUL byte in command");
          if (p.cwd) fuzz::check(p.cwd->find('\0') == std::string::npos, "a NUL byte in cwd");
          for (const EnvVar& e : p.env)
            fuzz::check(!e.name.empty() && e.name.find_first_of(std::string_view("=\0", 2)) == std::string::npos &&
                            e.value.find('\0') == std::string::npos,
                        "a bad env entry");
        } else if constexpr (std::is_same_v<P, WriteParams>) {
          s.push_back(p.terminal_id);
          s.push_back(p.data);
        } else if constexpr (std::is_same_v<P, ListParams>) {
          if (p.session_id) s.push_back(*p.session_id);
        } else if constexpr (std::is_same_v<P, FindParams>) {
          if (p.name) s.push_back(*p.name);
          if (p.session_id) s.push_back(*p.session_id);
        } else if constexpr (std::is_same_v<P, SessionCloseParams>) {
          s.push_back(p.session_id);
        } else {
          s.push_back(p.terminal_id);
        }
      },
      r.params);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  fuzz::check_message_json(line);
  auto parsed = parse_request(line);
  if (auto* bad = std::get_if<BadRequest>(&parsed)) {
    fuzz::check(!bad->error.message.empty(), "an error without a message");
    fuzz::check(bad->id.is_null() || bad->id.is_string() || bad->id.is_number_integer(), "a bad id kept");
    fuzz::check_reply(error_line(bad->id, bad->error), bad->id);
    return 0;
  }
  const Request& r = std::get<Request>(parsed);
  fuzz::check(!r.notification || r.id.is_null(), "a notification with an id");
  const Json strings = strings_of(r);
  fuzz::check_reply(result_line(r.id, {{"strings", strings}}), r.id);
  fuzz::check_reply(error_line(r.id, {rpc::kServerError, strings.dump(-1, ' ', false, Json::error_handler_t::replace)}),
                    r.id);
  // The fast path of terminal/output, with the params' strings as output.
  OutputBuffer::Read out{strings.empty() ? std::string() : strings[0].get<std::string>(), size, size % 2 == 0};
  const OutputBuffer::Read err{strings.size() < 2 ? std::string() : strings[1].get<std::string>(), size / 2, false};
  const Json status = size % 3 == 0 ? Json(nullptr) : exit_status_json(static_cast<int>(size % 256), std::nullopt);
  for (const OutputBuffer::Read* e : {static_cast<const OutputBuffer::Read*>(nullptr), &err}) {
    const std::string fast = output_result_line(r.id, out, e, status);
    fuzz::check(fast == result_line(r.id, output_result(out, e, status)), "output_result_line differs from result_line");
    fuzz::check_reply(fast, r.id);
  }
  return 0;
}
