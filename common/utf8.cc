#include "common/utf8.h"

#include <cstdint>

namespace scout {
namespace {

// Length (1..4) of the well-formed sequence at s[i], or 0 if the bytes there are not one.
size_t seq_len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;  // bounds of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // > U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

size_t utf8_prefix_len(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s.size();
  size_t n = max_bytes;
  // Back up over continuation bytes to the lead byte of the character that straddles the cut.
  size_t k = n;
  while (k > 0 && n - k < 3 && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) --k;
  if (k < n && static_cast<uint8_t>(s[k]) >= 0xC0) return k;
  return n;
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = seq_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_clean(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    size_t n = seq_len(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace scout
