// SPDX-License-Identifier: Apache-2.0
#include "jobs/output_view.h"

#include <re2/re2.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

#include "jobs/output_buffer.h"
#include "jobs/poller.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

// A grep reads this much at a time, and looks at the clock after each.
constexpr size_t kGrepChunk = size_t{64} << 10;
// A line longer than this is matched on its first this many bytes.
constexpr size_t kMaxGrepLine = size_t{1} << 20;
static_assert(GrepScan::kHeld == kGrepChunk + kMaxGrepLine);

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

std::string read_range(const ByteSource& src, uint64_t a, uint64_t b) {
  std::string s;
  if (b <= a) return s;
  s.resize(static_cast<size_t>(b - a));
  size_t got = 0;
  while (got < s.size()) {
    size_t n = src.read(a + got, s.data() + got, s.size() - got);
    if (n == 0) break;
    got += n;
  }
  s.resize(got);
  return s;
}

// How many bytes at the end of `s` are a character cut short (0-3).
size_t cut_character_at_end(std::string_view s) {
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t len = utf8_lead(c).len;
    return len > back ? back : 0;
  }
  return 0;
}

// How many continuation bytes `s` starts with (a character's rest; 0-3).
size_t cut_character_at_start(std::string_view s) {
  size_t k = 0;
  while (k < 3 && k < s.size() && is_continuation(s[k])) ++k;
  return k;
}

std::string shaped(std::string_view bytes, const ViewParams& v) {
  std::string text;
  text.reserve(bytes.size());
  append_sanitized_utf8(text, bytes, true);
  if (v.strip_ansi) text = strip_ansi(text);
  if (v.max_line_bytes) text = cap_lines(text, static_cast<size_t>(*v.max_line_bytes));
  return text;
}

uint64_t add_capped(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

}  // namespace

std::string strip_ansi(std::string_view s) {
  std::string plain;
  plain.reserve(s.size());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const char c = s[i];
    if (c != '\x1b') {
      plain += c;
      ++i;
      continue;
    }
    if (i + 1 >= n) break;  // a lone ESC at the end
    const char d = s[i + 1];
    if (d == '[') {  // CSI: parameters and intermediates, then a final byte
      size_t j = i + 2;
      while (j < n && !(s[j] >= 0x40 && s[j] <= 0x7E)) ++j;
      i = j < n ? j + 1 : n;
    } else if (d == ']' || d == 'P' || d == 'X' || d == '^' || d == '_') {
      // OSC, DCS, SOS, PM, APC: a string, ended by BEL or ST (ESC \)
      size_t j = i + 2;
      while (j < n && s[j] != '\x07' && !(s[j] == '\x1b' && j + 1 < n && s[j + 1] == '\\')) ++j;
      i = j >= n ? n : s[j] == '\x07' ? j + 1 : j + 2;
    } else {  // ESC, intermediates, a final byte: charsets, keypad modes, ...
      size_t j = i + 1;
      while (j < n && s[j] >= 0x20 && s[j] <= 0x2F) ++j;
      i = j < n ? j + 1 : n;
    }
  }
  std::string out;
  out.reserve(plain.size());
  for (size_t pos = 0; pos < plain.size();) {
    size_t nl = plain.find('\n', pos);
    const size_t end = nl == std::string::npos ? plain.size() : nl;
    std::string_view line(plain.data() + pos, end - pos);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (size_t r = line.rfind('\r'); r != std::string_view::npos) line.remove_prefix(r + 1);
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    pos = nl + 1;
  }
  return out;
}

std::string cap_lines(std::string_view s, size_t max) {
  std::string out;
  out.reserve(std::min(s.size(), s.size() / 2 + 4096));
  for (size_t pos = 0; pos < s.size();) {
    size_t nl = s.find('\n', pos);
    const size_t end = nl == std::string_view::npos ? s.size() : nl;
    std::string_view line = s.substr(pos, end - pos);
    if (line.size() > max) {
      size_t cut = max;
      while (cut > 0 && is_continuation(line[cut])) --cut;
      out += line.substr(0, cut);
      out += "[... " + std::to_string(line.size() - cut) + " bytes]";
    } else {
      out += line;
    }
    if (nl == std::string_view::npos) break;
    out += '\n';
    pos = nl + 1;
  }
  return out;
}

std::string left_out_line(uint64_t bytes) { return "[... " + std::to_string(bytes) + " bytes left out ...]"; }

std::string join_head_tail(std::string head, uint64_t left_out, std::string_view tail) {
  if (!head.empty() && head.back() != '\n') head += '\n';
  head += left_out_line(left_out);
  head += '\n';
  head += tail;
  return head;
}

namespace {

// The range [start, end) a view covers, with r.total, r.truncated, r.from
// and r.next set.
std::pair<uint64_t, uint64_t> range_of(const ByteSource& src, const ViewParams& v, ViewResult& r) {
  r.total = src.end;
  uint64_t start = v.offset.value_or(0);
  if (start < src.from) {
    r.truncated = true;
    start = src.from;
  }
  start = std::min(start, src.end);
  // (a range wholly rotated away is empty, at the oldest byte held)
  const uint64_t end =
      std::max(start, v.length ? std::min(src.end, add_capped(v.offset.value_or(0), *v.length)) : src.end);
  r.from = start;
  r.next = end;
  return {start, end};
}

}  // namespace

// Every line held is counted (so line numbers are the job's), the lines
// that reach into [start, end) are matched.
struct GrepState {
  RE2 re;
  ViewParams v;
  size_t max = 0;
  uint64_t start = 0, end = 0;
  uint64_t off = 0;      // the next byte to read
  uint64_t line_no = 1;  // of the line being read
  uint64_t line_at = 0;  // where it began
  std::string line;
  uint64_t matches = 0;
  std::vector<char> chunk;
  GrepState(const std::string& pattern, const RE2::Options& o) : re(pattern, o) {}
};

GrepScan::GrepScan(GrepScan&&) noexcept = default;
GrepScan& GrepScan::operator=(GrepScan&&) noexcept = default;
GrepScan::~GrepScan() = default;

std::expected<GrepScan, Error> GrepScan::begin(const ByteSource& src, const ViewParams& v, size_t max) {
  RE2::Options o;
  o.set_log_errors(false);
  GrepScan g;
  g.s_ = std::make_unique<GrepState>(*v.grep, o);
  GrepState& s = *g.s_;
  if (!s.re.ok())
    return std::unexpected(Error::line("invalid params: 'grep' is not a valid regular expression: " + s.re.error(),
                                       Errc::invalid_argument));
  s.v = v;
  s.max = max;
  std::tie(s.start, s.end) = range_of(src, v, g.r_);
  s.off = s.line_at = src.from;
  s.line_no = src.lines_before + 1;
  s.chunk.resize(static_cast<size_t>(std::min<uint64_t>(kGrepChunk, std::max<uint64_t>(s.end - src.from, 1))));
  return g;
}

void GrepScan::finish_line(uint64_t line_end) {
  GrepState& s = *s_;
  if (line_end >= s.start) {
    std::string text;
    append_sanitized_utf8(text, s.line, true);
    if (s.v.strip_ansi) text = strip_ansi(text);
    if (RE2::PartialMatch(text, s.re)) {
      ++s.matches;
      // The lines that fit in max bytes, whole, up to the first that does
      // not; a first line that alone does not is cut to fit (with room for
      // the cut's marker).
      if (!r_.more) {
        const std::string no = std::to_string(s.line_no) + ":";
        std::string shown = s.v.max_line_bytes ? cap_lines(text, static_cast<size_t>(*s.v.max_line_bytes)) : text;
        if (r_.shown == 0 && no.size() + shown.size() + 1 > s.max && s.max > no.size() + 64)
          shown = cap_lines(text, s.max - no.size() - 64);
        r_.more = r_.text.size() + no.size() + shown.size() + 1 > s.max;
        if (!r_.more) {
          r_.text += no + shown + '\n';
          ++r_.shown;
        }
      }
    }
  }
  s.line.clear();
  ++s.line_no;
  s.line_at = line_end + 1;
}

bool GrepScan::step(const ByteSource& src, int64_t until) {
  GrepState& s = *s_;
  if (s.off < src.from) {  // rotated away since the last step: read on from what is held
    r_.truncated = true;
    s.off = s.line_at = src.from;
    s.line_no = src.lines_before + 1;
    s.line.clear();
  }
  while (s.off < s.end) {
    size_t n = src.read(s.off, s.chunk.data(), static_cast<size_t>(std::min<uint64_t>(s.chunk.size(), s.end - s.off)));
    if (n == 0) break;
    std::string_view c(s.chunk.data(), n);
    size_t pos = 0;
    while (pos < c.size()) {
      size_t nl = c.find('\n', pos);
      const size_t stop = nl == std::string_view::npos ? c.size() : nl;
      if (s.line.size() < kMaxGrepLine)
        s.line.append(c.substr(pos, std::min(stop - pos, kMaxGrepLine - s.line.size())));
      if (nl == std::string_view::npos) break;
      finish_line(s.off + nl);
      pos = nl + 1;
    }
    s.off += n;
    if (s.off < s.end && until != kForever && sys::monotonic_ns() >= until) return false;
  }
  if (s.line_at < s.end) finish_line(s.end);  // a last line without its newline
  s.off = s.line_at = s.end;
  r_.matches = s.matches;
  return true;
}

std::expected<ViewResult, Error> render_view(const ByteSource& src, const ViewParams& v, size_t max) {
  if (v.grep) {
    auto g = GrepScan::begin(src, v, max);
    if (!g) return std::unexpected(g.error());
    (void)g->step(src, kForever);
    return std::move(g->result());
  }
  ViewResult r;
  const auto [start, end] = range_of(src, v, r);
  const uint64_t len = end - start;
  const uint64_t h = v.head.value_or(0), t = v.tail.value_or(0);
  if ((v.head || v.tail) && add_capped(h, t) < len) {
    std::string head = read_range(src, start, start + h);
    std::string tail = read_range(src, end - t, end);
    const size_t head_cut = cut_character_at_end(head);
    head.resize(head.size() - head_cut);
    const size_t tail_cut = cut_character_at_start(tail);
    r.left_out = len - h - t + head_cut + tail_cut;
    r.text = join_head_tail(shaped(head, v), r.left_out, shaped(std::string_view(tail).substr(tail_cut), v));
    return r;
  }
  uint64_t n = std::min<uint64_t>(len, max);
  std::string bytes = read_range(src, start, start + n);
  if (n < len) {
    // (a character cut by the page's end is read next time, whole)
    const size_t cut = cut_character_at_end(bytes);
    if (cut < bytes.size()) bytes.resize(bytes.size() - cut);
    r.more = true;
  }
  r.next = start + bytes.size();
  r.text = shaped(bytes, v);
  return r;
}

}  // namespace pmon::serve
