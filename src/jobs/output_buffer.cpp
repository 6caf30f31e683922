// SPDX-License-Identifier: Apache-2.0
#include "jobs/output_buffer.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace pmon::serve {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr size_t kFirstCapacity = 4096;
// The longest UTF-8 character: a smaller limit cannot keep every one whole.
constexpr size_t kMaxCharBytes = 4;

bool is_continuation(unsigned char c) noexcept { return (c & 0xC0) == 0x80; }

}  // namespace

size_t valid_utf8_prefix(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const auto [len, lo, hi] = utf8_lead(p[i]);
    if (len == 0 || i + len > s.size() || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (!is_continuation(p[i + k])) return i;
    i += len;
  }
  return i;
}

size_t append_sanitized_utf8(std::string& out, std::string_view in, bool final) {
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  size_t i = 0;
  size_t valid_from = 0;  // start of the run of valid bytes not yet copied
  auto flush = [&](size_t upto) { out.append(in.data() + valid_from, upto - valid_from); };
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      // ASCII, the common case, eight bytes at a time.
      for (uint64_t w; i + 8 <= n; i += 8) {
        std::memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ULL) break;
      }
      while (i < n && p[i] < 0x80) ++i;
      continue;
    }
    const auto [len, lo, hi] = utf8_lead(c);
    if (len == 0) {  // a stray continuation byte or a byte never valid
      flush(i);
      out += kReplacement;
      valid_from = ++i;
      continue;
    }
    size_t k = 1;
    while (k < len && i + k < n) {
      unsigned char b = p[i + k];
      bool ok = k == 1 ? (b >= lo && b <= hi) : is_continuation(b);
      if (!ok) break;
      ++k;
    }
    if (k == len) {
      i += len;
      continue;
    }
    if (i + k == n && !final) {  // cut short by the end of what we have
      flush(i);
      return i;
    }
    flush(i);
    out += kReplacement;  // the maximal subpart p[i, i+k) is invalid
    i += k;
    valid_from = i;
  }
  flush(n);
  return n;
}

OutputBuffer::OutputBuffer(size_t limit, MemoryBudget* budget) : limit_(limit), budget_(budget) {}

OutputBuffer::~OutputBuffer() {
  if (budget_) budget_->give(ring_.size());
}

std::array<std::span<const char>, 2> OutputBuffer::bytes_from(uint64_t from, size_t max) const noexcept {
  if (from < first_ || from >= total() || max == 0) return {};
  const size_t off = static_cast<size_t>(from - first_);
  const size_t n = std::min(size_ - off, max);
  const size_t cap = ring_.size();
  const size_t start = (head_ + off) % cap;
  const size_t first = std::min(n, cap - start);
  return {std::span<const char>(ring_.data() + start, first), std::span<const char>(ring_.data(), n - first)};
}

void OutputBuffer::reserve_for(size_t n) {
  size_t cap = ring_.size();
  if (size_ + n <= cap || cap == limit_) return;
  size_t want = std::min(limit_, std::max({2 * cap, size_ + n, kFirstCapacity}));
  // Past the service's budget, or out of memory, the storage stays as it
  // is: the oldest bytes are dropped instead (as at the limit).
  if (budget_) {
    want = cap + budget_->take(want - cap);
    if (want == cap) return;
  }
  std::vector<char> grown;
  try {
    grown.resize(want);
  } catch (const std::bad_alloc&) {
    if (budget_) budget_->give(want - cap);
    return;
  }
  // Growing linearises the ring: the kept bytes move to the front, once per
  // doubling, so appends stay amortised linear.
  if (size_ > 0) {  // (an empty ring has no storage to copy from)
    size_t first = std::min(size_, cap - head_);
    std::memcpy(grown.data(), ring_.data() + head_, first);
    std::memcpy(grown.data() + first, ring_.data(), size_ - first);
  }
  ring_ = std::move(grown);
  head_ = 0;
}

void OutputBuffer::drop_front(size_t n) noexcept {
  head_ = (head_ + n) % ring_.size();
  size_ -= n;
  first_ += n;
}

// After a cut the first kept byte may be inside a character whose lead byte
// is gone: its remaining continuation bytes (at most three) go too. Not
// under a limit too small for a whole character: there its first bytes have
// been read already (as U+FFFD, see read), and the rest reads so as well.
void OutputBuffer::skip_cut_character() noexcept {
  if (limit_ < kMaxCharBytes) return;
  for (int k = 0; k < 3 && size_ > 0; ++k) {
    if (!is_continuation(static_cast<unsigned char>(ring_[head_]))) return;
    drop_front(1);
  }
}

void OutputBuffer::write_tail(std::string_view bytes) noexcept {
  size_t cap = ring_.size();
  size_t at = (head_ + size_) % cap;
  size_t first = std::min(bytes.size(), cap - at);
  std::memcpy(ring_.data() + at, bytes.data(), first);
  std::memcpy(ring_.data(), bytes.data() + first, bytes.size() - first);
  size_ += bytes.size();
}

void OutputBuffer::append(std::string_view bytes) {
  if (bytes.empty()) return;
  reserve_for(bytes.size());
  const size_t cap = ring_.size();  // limit_, or less where the budget said so
  if (bytes.size() >= cap) {
    // Nothing kept so far survives: keep the newest cap bytes of these.
    const bool cut = size_ > 0 || bytes.size() > cap;
    first_ += size_ + (bytes.size() - cap);
    head_ = 0;
    size_ = 0;
    if (cap == 0) return;
    write_tail(bytes.substr(bytes.size() - cap));
    if (cut) skip_cut_character();
    return;
  }
  bool cut = size_ + bytes.size() > cap;
  if (cut) drop_front(size_ + bytes.size() - cap);
  write_tail(bytes);
  if (cut) skip_cut_character();
}

std::span<char> OutputBuffer::writable(size_t want) {
  const size_t cap = ring_.size();
  if (cap == 0 || want == 0) return {};
  if (size_ == cap) {
    if (cap < limit_) return {};  // grown by append(), by what comes
    return {ring_.data() + head_, std::min(want, cap - head_)};
  }
  size_t at = (head_ + size_) % cap;
  size_t free_run = std::min(cap - size_, cap - at);
  return {ring_.data() + at, std::min(want, free_run)};
}

void OutputBuffer::commit(size_t n) noexcept {
  if (n == 0) return;
  const size_t cap = ring_.size();
  bool cut = size_ + n > cap;
  // (writable() handed out room past the kept bytes only while there was
  // some; a full ring's room is its oldest bytes.)
  if (cut) drop_front(size_ + n - cap);
  size_ += n;
  if (cut) skip_cut_character();
}

OutputBuffer::Read OutputBuffer::read(std::optional<uint64_t> since, std::string storage, size_t max) const {
  Read r;
  r.text = std::move(storage);
  r.text.clear();
  const uint64_t end = total();
  r.truncated = since ? *since < first_ : first_ > 0;
  uint64_t start = std::min(std::max(since.value_or(first_), first_), end);
  size_t off = static_cast<size_t>(start - first_);
  size_t len = static_cast<size_t>(end - start);
  r.next = start;
  if (len == 0) return r;
  if (len > max) {
    // Cut at `max`, past the continuation bytes of a character cut there:
    // a read of a few bytes still moves on.
    size_t cut = max;
    for (int k = 0; k < 3 && cut < len; ++k, ++cut)
      if (!is_continuation(static_cast<unsigned char>(ring_[(head_ + off + cut) % ring_.size()]))) break;
    len = cut;
    r.more = len < static_cast<size_t>(end - start);
  }
  size_t at = (head_ + off) % ring_.size();
  size_t first = std::min(len, ring_.size() - at);
  std::string_view view(ring_.data() + at, first);
  std::string joined;
  if (first < len) {  // the range wraps: join its two pieces
    joined.reserve(len);
    joined.append(view);
    joined.append(ring_.data(), len - first);
    view = joined;
  }
  r.text.reserve(len);
  size_t used = append_sanitized_utf8(r.text, view, closed_ || r.more);
  // An incomplete character that fills the whole limit can never be
  // completed here (its next byte would cut it): it reads as U+FFFD now,
  // rather than hold back every later read (and, with outputBackpressure,
  // the job's writes, which wait for this read).
  if (used < len && len - used >= limit_) used += append_sanitized_utf8(r.text, view.substr(used), true);
  r.next = start + used;
  return r;
}

}  // namespace pmon::serve
