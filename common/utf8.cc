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

namespace {

// Length of the printable character at s[i] (1..4), or 0 when its bytes must be escaped.
size_t printable_len(std::string_view s, size_t i) {
  const size_t n = seq_len(s, i);
  if (n == 0) return 0;
  const uint8_t c = static_cast<uint8_t>(s[i]);
  if (n == 1) return (c < 0x20 || c == 0x7F || c == '\\') ? 0 : 1;
  if (n == 2 && c == 0xC2 && static_cast<uint8_t>(s[i + 1]) <= 0x9F) return 0;  // C1 controls
  return n;
}

}  // namespace

std::string text_clean(std::string_view s, bool keep_lines) {
  auto control = [&](size_t i, size_t n) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (n == 1) return (c < 0x20 && !(keep_lines && (c == '\n' || c == '\t'))) || c == 0x7F;
    return n == 2 && c == 0xC2 && static_cast<uint8_t>(s[i + 1]) <= 0x9F;
  };
  bool clean = true;
  for (size_t i = 0; i < s.size() && clean;) {
    const size_t n = seq_len(s, i);
    if (n == 0 || control(i, n)) clean = false;
    i += n == 0 ? 1 : n;
  }
  if (clean) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const size_t n = seq_len(s, i);
    if (n == 0 || control(i, n)) {
      out += "\xEF\xBF\xBD";
      i += n == 0 ? 1 : n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string printable(std::string_view s) {
  if (is_printable(s)) return std::string(s);
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    size_t n = printable_len(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (s[i] == '\\') {
      out += "\\\\";
      ++i;
      continue;
    }
    n = seq_len(s, i);
    if (n == 0) n = 1;  // a byte that is not UTF-8
    for (size_t k = 0; k < n; ++k) {
      const uint8_t b = static_cast<uint8_t>(s[i + k]);
      out += "\\x";
      out += hex[b >> 4];
      out += hex[b & 15];
    }
    i += n;
  }
  return out;
}

bool is_printable(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = printable_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace scout
