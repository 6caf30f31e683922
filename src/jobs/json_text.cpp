// SPDX-License-Identifier: Apache-2.0
#include "jobs/json_text.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "jobs/output_buffer.h"

namespace pmon::serve {

namespace {

using Json = nlohmann::json;

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHigh = 0x8080808080808080ULL;

uint64_t load8(const unsigned char* p) noexcept {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// Each a mask with the high bit set in the bytes of w that are zero,
// below 0x20, '"' or '\\'; a borrow can set it in a byte above one that
// is, never below, so the lowest bit set marks the first such byte.
constexpr uint64_t zero_bytes(uint64_t w) noexcept { return (w - kOnes) & ~w & kHigh; }
constexpr uint64_t special_bytes(uint64_t w) noexcept {
  return ((w - kOnes * 0x20) & ~w & kHigh) | zero_bytes(w ^ (kOnes * '"')) | zero_bytes(w ^ (kOnes * '\\'));
}

// How many plain bytes (none of the above) `p` starts with, 8 at a time;
// with `ascii_only`, a byte of 0x80 or more ends the run too.
size_t plain_run(const unsigned char* p, size_t n, bool ascii_only) noexcept {
  static_assert(std::endian::native == std::endian::little, "the first byte of a word is its lowest");
  const uint64_t high = ascii_only ? kHigh : 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = load8(p + i);
    uint64_t m = special_bytes(w) | (w & high);
    if (m != 0) return i + static_cast<size_t>(std::countr_zero(m) >> 3);
  }
  for (; i < n; ++i) {
    unsigned char c = p[i];
    if (c < 0x20 || c == '"' || c == '\\' || (ascii_only && c >= 0x80)) break;
  }
  return i;
}

constexpr char kHex[] = "0123456789abcdef";

// The length of the valid UTF-8 sequence `p` starts with (a lead byte of
// 0x80 or more), or 0.
size_t utf8_length(const unsigned char* p, size_t n) noexcept {
  const Utf8Lead lead = utf8_lead(p[0]);
  if (lead.len == 0 || lead.len > n) return 0;
  if (p[1] < lead.lo || p[1] > lead.hi) return 0;
  for (size_t k = 2; k < lead.len; ++k)
    if ((p[k] & 0xC0) != 0x80) return 0;
  return lead.len;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A recursive-descent reader of one JSON text into a Json value.
class Reader {
 public:
  explicit Reader(std::string_view text)
      : p_(reinterpret_cast<const unsigned char*>(text.data())), end_(p_ + text.size()) {}

  Json parse() {
    Json v;
    space();
    if (!value(v, 0)) return Json(Json::value_t::discarded);
    space();
    if (p_ != end_) return Json(Json::value_t::discarded);
    return v;
  }

 private:
  static constexpr int kMaxDepth = 512;

  void space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) return false;
    p_ += word.size();
    return true;
  }

  bool value(Json& out, int depth) {
    if (p_ == end_ || depth > kMaxDepth) return false;
    switch (*p_) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"': {
        std::string s;
        if (!string(s)) return false;
        out = std::move(s);
        return true;
      }
      case 't': return literal("true") ? (out = true, true) : false;
      case 'f': return literal("false") ? (out = false, true) : false;
      case 'n': return literal("null") ? (out = nullptr, true) : false;
      default: return number(out);
    }
  }

  bool object(Json& out, int depth) {
    ++p_;
    out = Json::object();
    space();
    if (p_ < end_ && *p_ == '}') return ++p_, true;
    for (;;) {
      space();
      std::string key;
      if (p_ == end_ || *p_ != '"' || !string(key)) return false;
      space();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      space();
      Json v;
      if (!value(v, depth + 1)) return false;
      out[key] = std::move(v);
      space();
      if (p_ == end_) return false;
      if (*p_ == '}') return ++p_, true;
      if (*p_ != ',') return false;
      ++p_;
    }
  }

  bool array(Json& out, int depth) {
    ++p_;
    out = Json::array();
    space();
    if (p_ < end_ && *p_ == ']') return ++p_, true;
    for (;;) {
      space();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.push_back(std::move(v));
      space();
      if (p_ == end_) return false;
      if (*p_ == ']') return ++p_, true;
      if (*p_ != ',') return false;
      ++p_;
    }
  }

  // The token's grammar is nlohmann's to check (it is short).
  bool number(Json& out) {
    const unsigned char* start = p_;
    while (p_ < end_ && ((*p_ >= '0' && *p_ <= '9') || *p_ == '-' || *p_ == '+' || *p_ == '.' || *p_ == 'e' ||
                         *p_ == 'E'))
      ++p_;
    if (p_ == start) return false;
    out = Json::parse(std::string_view(reinterpret_cast<const char*>(start), static_cast<size_t>(p_ - start)),
                      nullptr, false);
    return !out.is_discarded();
  }

  bool hex4(uint32_t& v) {
    if (end_ - p_ < 4) return false;
    v = 0;
    for (int k = 0; k < 4; ++k) {
      unsigned char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else return false;
    }
    return true;
  }

  bool escape(std::string& out) {
    if (p_ == end_) return false;
    unsigned char c = *p_++;
    switch (c) {
      case '"': out += '"'; return true;
      case '\\': out += '\\'; return true;
      case '/': out += '/'; return true;
      case 'b': out += '\b'; return true;
      case 'f': out += '\f'; return true;
      case 'n': out += '\n'; return true;
      case 'r': out += '\r'; return true;
      case 't': out += '\t'; return true;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate alone
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
          p_ += 2;
          if (!hex4(lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(out, cp);
        return true;
      }
      default: return false;
    }
  }

  // At the opening quote.
  bool string(std::string& out) {
    ++p_;
    for (bool first = true;; first = false) {
      size_t run = plain_run(p_, static_cast<size_t>(end_ - p_), true);
      // A long string (a job's output) is about as long as what is left.
      if (first && run >= 4096) out.reserve(static_cast<size_t>(end_ - p_));
      out.append(reinterpret_cast<const char*>(p_), run);
      p_ += run;
      if (p_ == end_) return false;
      unsigned char c = *p_;
      if (c == '"') return ++p_, true;
      if (c == '\\') {
        ++p_;
        if (!escape(out)) return false;
        continue;
      }
      if (c < 0x20) return false;  // a control character must be escaped
      size_t len = utf8_length(p_, static_cast<size_t>(end_ - p_));
      if (len == 0) return false;
      out.append(reinterpret_cast<const char*>(p_), len);
      p_ += len;
    }
  }

  const unsigned char* p_;
  const unsigned char* end_;
};

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  // Escapes make it longer: room for the common case, grown as needed.
  out.reserve(out.size() + n + n / 16 + 2);
  out += '"';
  size_t i = 0;
  while (i < n) {
    size_t run = plain_run(p + i, n - i, false);
    out.append(text.data() + i, run);
    i += run;
    if (i == n) break;
    unsigned char c = p[i++];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(u, 6);
      }
    }
  }
  out += '"';
}

size_t json_string_size(std::string_view text) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t size = 2, i = 0;
  while (i < n) {
    const size_t run = plain_run(p + i, n - i, false);
    size += run;
    i += run;
    if (i == n) break;
    const unsigned char c = p[i++];
    const bool short_escape = c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t';
    size += short_escape ? 2 : 6;
  }
  return size;
}

Json parse_json(std::string_view text) { return Reader(text).parse(); }

std::string dump_text(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace pmon::serve
