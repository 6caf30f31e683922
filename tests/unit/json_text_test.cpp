// SPDX-License-Identifier: Apache-2.0
// serve::append_json_string and serve::parse_json: the fast writer and
// reader of the output strings, held to what nlohmann::json makes of the
// same text.
#include "jobs/json_text.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "jobs/output_buffer.h"
#include "serve/protocol.h"

namespace pmon::serve {
namespace {

using Json = nlohmann::json;

std::string written(std::string_view s) {
  std::string out = "x";  // appends to what is there
  append_json_string(out, s);
  EXPECT_EQ(out[0], 'x');
  return out.substr(1);
}

std::string dumped(const std::string& s) { return Json(s).dump(); }

// Text with every kind of byte the writer treats apart, at every offset
// of its 8-byte steps, sanitized to valid UTF-8 as an output read is.
std::string random_text(std::mt19937& rng, size_t n) {
  static const std::string pieces[] = {"a", "Z", " ", "\n", "\t", "\r", "\"", "\\", "/", "\x01", "\x1f", "\x7f",
                                       "\b", "\f", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x99\x82", "\xFF",
                                       "0123456789abcdef", "plain text run "};
  std::string raw;
  while (raw.size() < n) raw += pieces[rng() % std::size(pieces)];
  std::string out;
  append_sanitized_utf8(out, raw, true);
  return out;
}

TEST(JsonText, WritesWhatDumpWrites) {
  for (std::string s : {std::string(), std::string("plain"), std::string("a\"b\\c/d"), std::string("\n\r\t\b\f"),
                        std::string("\x01\x02\x1f\x7f", 4), std::string("\0x", 2), std::string("\xE2\x82\xAC \xC3\xA9"),
                        std::string(1000, 'x') + "\n" + std::string(37, 'y') + "\"",
                        std::string("0123456789abcdef0123456789abcdef0123456789\"")})
    EXPECT_EQ(written(s), dumped(s)) << s;
}

TEST(JsonText, WritesRandomTextAsDumpDoes) {
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string s = random_text(rng, rng() % 700);
    ASSERT_EQ(written(s), dumped(s)) << i;
  }
}

TEST(JsonText, ReadsBackWhatItWrote) {
  std::mt19937 rng(11);
  for (int i = 0; i < 300; ++i) {
    std::string s = random_text(rng, rng() % 700);
    Json j = parse_json(written(s));
    ASSERT_TRUE(j.is_string()) << i;
    ASSERT_EQ(j.get<std::string>(), s) << i;
  }
}

TEST(JsonText, ReadsWhatNlohmannReads) {
  for (const char* text :
       {R"({"jsonrpc":"2.0","id":7,"result":{"output":"a\nb","truncated":false,"next":12345678901,"exitStatus":null}})",
        R"( [1, -2, 3.5, 1e3, -0.0, true, false, null, "x", {}, [], {"a": [ {"b": "c"} ]}] )",
        R"("\u00e9\u20ac\ud83d\ude42\/\b\f\n\r\t\"\\")", R"({"k": 1, "k": 2})", "18446744073709551615", "-9223372036854775808",
        "\"\xE2\x82\xAC\xC3\xA9\"", "{\"a\" :\t\"b\" \r\n}"}) {
    Json want = Json::parse(text);
    Json got = parse_json(text);
    EXPECT_EQ(got, want) << text;
    EXPECT_EQ(got.dump(), want.dump()) << text;  // the same types, too
  }
}

TEST(JsonText, RefusesWhatIsNotJson) {
  for (std::string text : {std::string(""), std::string("{"), std::string("[1,]"), std::string("{\"a\":}"),
                           std::string("\"open"), std::string("\"a\nb\""), std::string("\"\\x\""),
                           std::string("\"\\ud800\""), std::string("\"\\udc00x\""), std::string("\"\\u12\""),
                           std::string("01"), std::string("1 2"), std::string("tru"), std::string("nul"),
                           std::string("\"\xFF\""), std::string("\"\xE2\x82\""), std::string("\"\xC0\xAF\""),
                           std::string("{\"a\" 1}"), std::string("[1 2]"), std::string(600, '[')}) {
    EXPECT_TRUE(parse_json(text).is_discarded()) << text;
    EXPECT_TRUE(Json::parse(text, nullptr, false).is_discarded()) << text;  // nlohmann agrees
  }
}

// terminal/output's fast reply is the Json reply to the byte.
TEST(JsonText, OutputLineIsTheJsonReply) {
  std::mt19937 rng(3);
  for (int i = 0; i < 100; ++i) {
    OutputBuffer::Read out{random_text(rng, rng() % 2000), rng(), rng() % 2 == 0};
    OutputBuffer::Read err{random_text(rng, rng() % 200), rng(), rng() % 2 == 0};
    Json id = i % 2 ? Json(i) : Json("req-" + std::to_string(i));
    Json status = i % 3 ? Json(nullptr) : exit_status_json(i, std::nullopt);
    // While the job runs: whether it waits for input.
    std::optional<bool> waiting;
    if (status.is_null() && i % 4 != 0) waiting = i % 4 == 1;
    ASSERT_EQ(output_result_line(id, out, nullptr, status, waiting),
              result_line(id, output_result(out, nullptr, status, waiting)));
    ASSERT_EQ(output_result_line(id, out, &err, status, waiting, "reused storage"),
              result_line(id, output_result(out, &err, status, waiting)));
  }
}

}  // namespace
}  // namespace pmon::serve
