#include "serve/output_buffer.h"

namespace pmon::serve {

namespace {

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the UTF-8 sequence that lead byte c starts; 0 if c cannot start one.
size_t sequence_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// True when s[i, i+n) is a well-formed sequence (no overlong form, no
// surrogate, nothing above U+10FFFF).
bool well_formed(std::string_view s, size_t i, size_t n) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  for (size_t k = 1; k < n; ++k)
    if (!continuation(b(k))) return false;
  if (n == 3 && b(0) == 0xE0 && b(1) < 0xA0) return false;
  if (n == 3 && b(0) == 0xED && b(1) > 0x9F) return false;
  if (n == 4 && b(0) == 0xF0 && b(1) < 0x90) return false;
  if (n == 4 && b(0) == 0xF4 && b(1) > 0x8F) return false;
  return true;
}

}  // namespace

OutputBuffer::OutputBuffer(size_t limit) : limit_(limit) {}

void OutputBuffer::append(std::string_view bytes) {
  if (bytes.size() >= limit_) {
    base_ += data_.size() + (bytes.size() - limit_);
    data_.assign(bytes.substr(bytes.size() - limit_));
  } else {
    data_.append(bytes);
    if (data_.size() > limit_) {
      size_t drop = data_.size() - limit_;
      data_.erase(0, drop);
      base_ += drop;
    }
  }
  // The kept bytes start on a character: continuation bytes cut from their
  // lead byte go too (at most three).
  size_t cut = 0;
  while (cut < data_.size() && cut < 3 && continuation(static_cast<unsigned char>(data_[cut]))) ++cut;
  if (cut > 0 && base_ > 0) {
    data_.erase(0, cut);
    base_ += cut;
  }
}

OutputBuffer::Read OutputBuffer::read(std::optional<uint64_t> since) const {
  Read r;
  uint64_t from = since.value_or(base_);
  if (from < base_) {
    r.truncated = true;
    from = base_;
  }
  if (!since && base_ > 0) r.truncated = true;
  if (from > total()) from = total();
  std::string_view s(data_);
  size_t i = static_cast<size_t>(from - base_);
  // Resume on a character boundary (a since inside one skips its tail).
  while (i < s.size() && i > 0 && continuation(static_cast<unsigned char>(s[i])) &&
         i - static_cast<size_t>(from - base_) < 3)
    ++i;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = sequence_length(c);
    if (n == 0) {
      r.text += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (i + n > s.size()) {
      // Incomplete at the end: wait for the rest, unless what is there
      // already cannot become a character.
      bool could = true;
      for (size_t k = i + 1; k < s.size(); ++k)
        if (!continuation(static_cast<unsigned char>(s[k]))) could = false;
      if (could) break;
      r.text += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (!well_formed(s, i, n)) {
      r.text += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    r.text.append(s.substr(i, n));
    i += n;
  }
  r.next = base_ + i;
  return r;
}

}  // namespace pmon::serve
